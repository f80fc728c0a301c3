/* The AM's side of YARN's ContainerManagementProtocol: start, stop and query
 * containers on NodeManagers. A pool keeps one authenticated connection per
 * node, using the NMToken the RM handed out for that node (via yarn_amrm).
 * Launch contexts are plain C.
 *
 * Two ways to call, never mixed on one pool:
 * - synchronous (yarn_nm_start...): the caller's thread blocks, up to the
 *   timeout per call; for a single-threaded program (tests/yarn/am_probe.c);
 * - asynchronous (yarn_nm_start_async...): from the event loop's thread; the
 *   call runs on the pool's tony_workq with the node as its lane, so calls
 *   to different nodes run in parallel, calls to one node keep their order
 *   (a stop submitted after a start runs after it), a node that hangs holds
 *   one worker thread and nothing else, and the reply comes back on the loop.
 *   Each node's connection belongs to whichever worker runs that node's
 *   current call; the job carries copies of the container and the launch
 *   context, so nothing the caller owns is read from another thread. */
#ifndef TONY_YARN_NM_H
#define TONY_YARN_NM_H

#include <stddef.h>

#include "backend/yarn/amrm.h"
#include "common/env.h"
#include "common/error.h"
#include "common/workq.h"

typedef enum { YARN_LR_ARCHIVE = 1, YARN_LR_FILE = 2, YARN_LR_PATTERN = 3 } yarn_lr_type;
typedef enum { YARN_LR_PUBLIC = 1, YARN_LR_PRIVATE = 2, YARN_LR_APPLICATION = 3 } yarn_lr_visibility;

/* A file the NM downloads into the container's work dir as `name`. */
typedef struct yarn_local_resource {
    const char *name;
    const char *uri;     /* full URI, e.g. hdfs://nn:8020/user/u/.tony/app/x.zip */
    long long size;      /* bytes (bookkeeping) */
    long long timestamp; /* must equal the file's modification time in ms, or localization fails */
    yarn_lr_type type;   /* ARCHIVE is unpacked into a directory named `name` */
    yarn_lr_visibility visibility;
} yarn_local_resource;

typedef struct yarn_launch_ctx {
    const yarn_local_resource *resources;
    size_t n_resources;
    const tony_env *env; /* may be NULL */
    /* run with bash -c by the NM; <LOG_DIR> expands to the container's log dir */
    const char *command;
    const void *tokens; /* optional HDTS blob (yarn_credentials_write) */
    size_t tokens_len;
} yarn_launch_ctx;

typedef enum { YARN_CSTATE_NEW = 1, YARN_CSTATE_RUNNING = 2, YARN_CSTATE_COMPLETE = 3 } yarn_container_state;

typedef struct yarn_container_status {
    yarn_container_state state;
    int exit_status; /* -1000 while running */
    char *diagnostics;
} yarn_container_status;
void yarn_container_status_free(yarn_container_status *s); /* frees the fields */

typedef struct yarn_nm_pool yarn_nm_pool;

/* NMTokens are looked up in am (a thread-safe lookup) when a connection
 * opens; am must outlive the pool. q runs the async calls (NULL: synchronous
 * use only). */
yarn_nm_pool *yarn_nm_pool_new(yarn_amrm *am, tony_workq *q);
/* Once no async call is pending (q drained or freed). */
void yarn_nm_pool_free(yarn_nm_pool *p);
/* Before the first call. */
void yarn_nm_pool_set_timeout(yarn_nm_pool *p, int timeout_ms);

/* The NM's own refusal (bad token, localization setup...) is an error with
 * its message. */
int yarn_nm_start(yarn_nm_pool *p, const yarn_container *c, const yarn_launch_ctx *ctx, tony_error *err);
int yarn_nm_stop(yarn_nm_pool *p, const yarn_container *c, tony_error *err);
int yarn_nm_status(yarn_nm_pool *p, const yarn_container *c, yarn_container_status *out, tony_error *err);

/* What an async call got, handed to its done callback on the loop thread
 * (valid during the callback only). */
typedef struct yarn_nm_reply {
    char container_id[YARN_ID_MAX];
    char node[300];               /* the container's NodeManager, host:port */
    bool ran;                     /* false: cancelled before it ran (shutdown) */
    int rc;                       /* 0, or -1 with err */
    tony_error err;
    yarn_container_status status; /* yarn_nm_status_async with rc 0 */
} yarn_nm_reply;
typedef void (*yarn_nm_done_fn)(void *arg, const yarn_nm_reply *r);

void yarn_nm_start_async(yarn_nm_pool *p, const yarn_container *c, const yarn_launch_ctx *ctx, yarn_nm_done_fn done,
                         void *arg);
void yarn_nm_stop_async(yarn_nm_pool *p, const yarn_container *c, yarn_nm_done_fn done, void *arg);
void yarn_nm_status_async(yarn_nm_pool *p, const yarn_container *c, yarn_nm_done_fn done, void *arg);

/* The end, from the loop's thread once the loop no longer dispatches:
 * stops the n containers, every node at once, and waits for the answers
 * bound_ms in all, however many containers a node has or how long its
 * earlier calls take. Then the calls still out are abandoned, and with
 * them every call of the pool from now on (a hung node's connection gives
 * up at once). silent gets the nodes that did not answer in time
 * ("host:port", once each), failed the errors of the stops that did not
 * succeed. Other jobs of the pool's workq that finish meanwhile get their
 * done calls on this thread. */
void yarn_nm_stop_all(yarn_nm_pool *p, const yarn_container *const *cs, size_t n, int bound_ms, tony_strv *silent,
                      tony_strv *failed);

#endif
