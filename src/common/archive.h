/* Archives for staging: the src dir zipped on the client, archives unpacked
 * in each task's work dir (tony_src zip, venv.zip, '#archive' resources). */
#ifndef TONY_ARCHIVE_H
#define TONY_ARCHIVE_H

#include <stdbool.h>

#include "common/error.h"

/* True when the file starts with a zip, tar or gzip magic number (TonY's test
 * for "src_dir is already an archive"). */
bool tony_archive_is_archive(const char *path);
/* Zips the regular files under dir (paths relative to dir) into zip_path. */
int tony_archive_zip_dir(const char *dir, const char *zip_path, tony_error *err);
/* Unpacks a zip / tar / tar.gz into dir (created if missing), keeping file
 * modes; refuses entries that would land outside dir. */
int tony_archive_extract(const char *archive_path, const char *dir, tony_error *err);

#endif
