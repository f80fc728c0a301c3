/* The coordinator (TonY's ApplicationMaster): one per job, a single-threaded
 * libevent loop that owns the job state machine, asks the backend for
 * containers, serves the HTTP API to executors, clients and the web UI, and
 * restarts the whole job from its checkpoints when an attempt fails. */
#ifndef TONY_AM_H
#define TONY_AM_H

#include <stdbool.h>

#include "common/error.h"
#include "common/strv.h"

/* Where a coordinator on a cluster copies its job history (the yarn
 * backend fills it: HDFS over WebHDFS). The coordinator keeps TonY's layout
 * on its own disk and copies it at a few moments: when the job starts, when
 * an attempt ends and at the end. Each call blocks the coordinator's loop,
 * so an implementation keeps its time limits to seconds. Paths are
 * absolute on the mirror's file system. */
typedef struct tony_am_history_mirror {
    void *ctx;
    const char *authority; /* the hdfs://AUTHORITY it writes (fs.defaultFS's) */
    int (*mkdirs)(void *ctx, const char *dir, tony_error *err);
    int (*put)(void *ctx, const char *local_file, const char *path, tony_error *err); /* overwrites */
    int (*list)(void *ctx, const char *dir, tony_strv *names, tony_error *err);      /* none when missing */
    int (*rename)(void *ctx, const char *from, const char *to, tony_error *err);
    int (*remove)(void *ctx, const char *path, tony_error *err); /* recursive */
} tony_am_history_mirror;

typedef struct tony_am_options {
    const char *job_dir; /* holds tony-final.xml and the secret */
    const char *app_id;  /* NULL: the job dir's name */
    const char *host;    /* the name executors reach us at; NULL: 127.0.0.1 */
    bool yarn;           /* in a YARN AM container: the yarn backend */
    const tony_am_history_mirror *history_mirror; /* NULL: history on local/shared disk only */
} tony_am_options;

/* Runs the coordinator of the job in o->job_dir. Returns the process exit
 * code: 0 when the job SUCCEEDED. */
int tony_am_main(const tony_am_options *o);

#endif
