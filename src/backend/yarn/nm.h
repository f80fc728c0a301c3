/* The AM's side of YARN's ContainerManagementProtocol: start, stop and query
 * containers on NodeManagers. A pool keeps one authenticated connection per
 * node, using the NMToken the RM handed out for that node (via yarn_amrm).
 * Launch contexts are plain C. One pool is used by one thread at a time. */
#ifndef TONY_YARN_NM_H
#define TONY_YARN_NM_H

#include <stddef.h>

#include "backend/yarn/amrm.h"
#include "common/env.h"
#include "common/error.h"

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

/* NMTokens are looked up in am at connect time; am must outlive the pool. */
yarn_nm_pool *yarn_nm_pool_new(yarn_amrm *am);
void yarn_nm_pool_free(yarn_nm_pool *p);
void yarn_nm_pool_set_timeout(yarn_nm_pool *p, int timeout_ms);

/* The NM's own refusal (bad token, localization setup...) is an error with
 * its message. */
int yarn_nm_start(yarn_nm_pool *p, const yarn_container *c, const yarn_launch_ctx *ctx, tony_error *err);
int yarn_nm_stop(yarn_nm_pool *p, const yarn_container *c, tony_error *err);
int yarn_nm_status(yarn_nm_pool *p, const yarn_container *c, yarn_container_status *out, tony_error *err);

#endif
