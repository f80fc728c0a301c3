/* The YARN backend on the coordinator's side: inside the AM container it
 * registers with the ResourceManager, asks for one container per task (one
 * priority per role), starts `tony executor` in each through its
 * NodeManager, and turns completed containers into exit callbacks. The
 * wire work is in amrm.h / nm.h; the client side is in client/. */
#ifndef TONY_YARN_BACKEND_H
#define TONY_YARN_BACKEND_H

#include <event2/event.h>

#include "backend/backend.h"
#include "backend/history_mirror.h"
#include "conf/conf.h"

/* What the client stages beside tony-final.xml: every file the job's
 * containers localize, with the size and HDFS mtime YARN checks. */
#define TONY_YARN_MANIFEST "tony-manifest.json"
/* The self-contained tony (common/self.h, dist_cache.h) every container
 * localizes under this name, and the command that runs it there. */
#define TONY_YARN_DIST_LINK "tony-dist"
#define TONY_YARN_TONY_COMMAND "./" TONY_YARN_DIST_LINK "/bin/tony"
/* A manifest entry's "visibility": PRIVATE for the cached tony (each node
 * keeps it across the user's jobs), else APPLICATION. */
#define TONY_YARN_VISIBILITY_PRIVATE "PRIVATE"
/* The credentials secret (container_tokens) that carries the job's secret. */
#define TONY_YARN_SECRET_ALIAS "tony.job.secret"
/* The coordinator's last status.json (its tasks, their log links), copied
 * into its container's log dir as it exits: the work dir goes with the
 * container, the log dir stays (the NodeManager serves it), so that
 * `tony logs` finds the tasks of a job it never saw run (--detach). */
#define TONY_YARN_AM_STATUS_LOG "tony-status.json"
/* Env of the AM container: the RM's scheduler address, host:port. */
#define TONY_YARN_SCHEDULER_ENV "TONY_YARN_SCHEDULER_ADDRESS"

struct yarn_job_credentials;


/* Connects to the scheduler and registers the application master (o's
 * api_host and api_port as the AM's host and RPC port, where clients find
 * our API; tracking_url for the RM's proxy; backend_data: the AM
 * container's struct yarn_job_credentials, outliving the backend). */
tony_backend *tony_backend_yarn_new(const tony_backend_opts *o, tony_error *err);

/* `tony am --yarn`: the coordinator inside its AM container. What it starts
 * from, which tony_yarn_am_prepare reads (the job's secret from
 * container_tokens, written into the work dir) and main.c hands the
 * coordinator (am/am.h), so that this layer names no coordinator. */
typedef struct tony_yarn_am_start {
    char job_dir[4096];                     /* the container's work dir */
    char app_id[128];
    const char *host;                       /* NM_HOST */
    tony_am_history_mirror *history_mirror; /* HDFS, or NULL */
    struct yarn_job_credentials *credentials; /* the coordinator's backend_data */
} tony_yarn_am_start;

/* 0, or -1 having logged why (not in a YARN AM container, unreadable
 * tokens). */
int tony_yarn_am_prepare(tony_yarn_am_start *s);
/* After the coordinator returned. */
void tony_yarn_am_release(tony_yarn_am_start *s);

#endif
