/* What every task does first in its work dir, as TonY's executors do: unzip
 * the job's source archive (tony_src_<appId>.zip) into the work dir and the
 * venv archive (venv.zip) into ./venv. */
#ifndef TONY_UNPACK_H
#define TONY_UNPACK_H

#include "common/error.h"
#include "common/jobdir.h" /* the archives' names: TONY_VENV_ARCHIVE, tony_src_archive_name */

int tony_unpack_job_files(const char *work_dir, const char *app_id, tony_error *err);

#endif
