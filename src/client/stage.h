/* Client-side staging for the local backend: a new job dir with the source
 * archive, the venv, every local resource and tony-final.xml, then the
 * coordinator started in its own session. (YARN's client stages to HDFS.) */
#ifndef TONY_STAGE_H
#define TONY_STAGE_H

#include "common/error.h"
#include "conf/conf.h"

typedef struct tony_stage_input {
    const char *src_dir;     /* --src_dir: a directory (zipped) or an archive (used as is); may be NULL */
    const char *python_venv; /* --python_venv zip; may be NULL */
} tony_stage_input;

/* Creates <root>/jobs/<app_id>, stages files into it, rewrites the resource
 * keys of conf to the staged paths and writes tony-final.xml and the secret.
 * Errors name the flag or key whose file is missing. */
int tony_stage_local_job(tony_conf *conf, const tony_stage_input *in, char **job_dir, char **app_id,
                         tony_error *err);
/* Starts `tony am <job_dir>` detached from this terminal's session. */
int tony_start_local_am(const char *job_dir, int *pid, tony_error *err);

#endif
