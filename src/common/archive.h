/* Archives for staging: the src dir zipped on the client, archives unpacked
 * in each task's work dir (tony_src zip, venv.zip, '#archive' resources). */
#ifndef TONY_ARCHIVE_H
#define TONY_ARCHIVE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

/* True when the file starts with a zip, tar or gzip magic number (TonY's test
 * for "src_dir is already an archive"). */
bool tony_archive_is_archive(const char *path);
/* Zips the regular files under dir (paths relative to dir) into zip_path. */
int tony_archive_zip_dir(const char *dir, const char *zip_path, tony_error *err);
/* One file for tony_archive_write_tgz: read from path, stored as name. */
typedef struct tony_archive_member {
    const char *path;
    const char *name;
} tony_archive_member;
/* Writes the files, modes kept and symlinks followed, as a gzip'ed tar. */
int tony_archive_write_tgz(const char *out, const tony_archive_member *members, size_t n, tony_error *err);
/* Unpacks a zip / tar / tar.gz into dir (created if missing), keeping file
 * modes; refuses entries that would land outside dir. */
int tony_archive_extract(const char *archive_path, const char *dir, tony_error *err);

#endif
