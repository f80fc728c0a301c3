/* What every task does first in its work dir, as TonY's executors do: unzip
 * the job's source archive (tony_src_<appId>.zip) into the work dir and the
 * venv archive (venv.zip) into ./venv. Shared by the executor, the
 * coordinator (a single-node job's command) and the client's staging, which
 * names the archives. */
#ifndef TONY_UNPACK_H
#define TONY_UNPACK_H

#include "common/error.h"

#define TONY_VENV_ARCHIVE "venv.zip"
#define TONY_VENV_DIR "venv"

/* The name the client stages the source archive under. malloc'ed. */
char *tony_src_archive_name(const char *app_id);
int tony_unpack_job_files(const char *work_dir, const char *app_id, tony_error *err);

#endif
