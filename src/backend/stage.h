/* Client-side staging, shared by every backend's client half: the job's
 * files (source archive, venv, every local resource) prepared TonY's way
 * and handed to a sink — the local job dir for the local backend, HDFS for
 * YARN — with the resource keys rewritten to where the sink put them. */
#ifndef TONY_STAGE_H
#define TONY_STAGE_H

#include <stdbool.h>

#include "common/error.h"
#include "conf/conf.h"
#include "conf/resource.h"

typedef struct tony_stage_input {
    const char *src_dir;     /* --src_dir: a directory (zipped) or an archive (used as is); may be NULL */
    const char *python_venv; /* --python_venv zip; may be NULL */
} tony_stage_input;

/* Where staged files go. put() gets a finished local file, the name to give
 * it inside the job's staging area ("res0/data.csv", "venv.zip") and its
 * name inside containers, and returns in *where the path or URI the job
 * reads it from. remote() decides what a resource given as a URI becomes
 * (or refuses it). */
typedef struct tony_stage_sink {
    void *ctx;
    int (*put)(void *ctx, const char *local, const char *dest, const char *container_name, bool job_file,
               bool archive, char **where, tony_error *err);
    int (*remote)(void *ctx, const char *key, const tony_resource *r, char **where, tony_error *err);
    /* Append the src and venv archives to tony.containers.resources (the
     * local backend localizes through that list; YARN through its manifest). */
    bool list_job_files;
} tony_stage_sink;

/* Stages the local files of every tony.<x>.resources key (dirs zipped and
 * marked #archive; the key rewritten to the sink's answers, TonY syntax
 * kept), the --src_dir (zipped into tmp_dir unless already an archive) and
 * the --python_venv; sets tony.application.id. Errors name the flag or key. */
int tony_stage_files(tony_conf *conf, const tony_stage_input *in, const char *app_id, const char *tmp_dir,
                     const tony_stage_sink *sink, tony_error *err);
/* A fresh random secret for the job's API, written 0600 to <job_dir>/secret. */
int tony_stage_write_secret(const char *job_dir, char **secret, tony_error *err);

#endif
