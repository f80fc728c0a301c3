/* The coordinator (TonY's ApplicationMaster): one per job, a single-threaded
 * libevent loop that owns the job state machine, asks the backend for
 * containers, serves the HTTP API to executors, clients and the web UI, and
 * restarts the whole job from its checkpoints when an attempt fails. */
#ifndef TONY_AM_H
#define TONY_AM_H

#include <stdbool.h>

#include "backend/history_mirror.h" /* tony_am_history_mirror: a backend's, handed in */
#include "common/error.h"
#include "common/strv.h"

struct event_base;

typedef struct tony_am_options {
    const char *job_dir; /* holds tony-final.xml and the secret */
    const char *app_id;  /* NULL: the job dir's name */
    const char *host;    /* the name executors reach us at; NULL: 127.0.0.1 */
    bool yarn;           /* in a YARN AM container: the yarn backend */
    const char *backend; /* otherwise the backend's name; NULL: local */
    bool listen_all;     /* executors on other nodes call: listen on every address */
    const tony_am_history_mirror *history_mirror; /* NULL: history on local/shared disk only */
    void *backend_data; /* for the backend (tony_backend_opts), or NULL */
} tony_am_options;

/* Runs the coordinator of the job in o->job_dir. Returns the process exit
 * code: 0 when the job SUCCEEDED. */
int tony_am_main(const tony_am_options *o);

#endif
