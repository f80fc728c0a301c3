/* The local backend: containers are process sessions on this machine, drawn
 * from a pool of its vcores, memory and GPUs (tony.local.vcores / .memory /
 * .gpus override what is detected; vcores oversubscribe the CPUs unless
 * tony.local.vcores caps them), each with its own work dir under the job
 * dir, CUDA_VISIBLE_DEVICES from the GPU pool and a physical-memory limit
 * enforced like YARN's NodeManager does. */
#ifndef TONY_BACKEND_LOCAL_H
#define TONY_BACKEND_LOCAL_H

#include <stdbool.h>

#include "backend/backend.h"
#include "backend/container.h"
#include "common/reaper.h"
#include "common/strv.h"
#include "conf/conf.h"

typedef struct tony_local_pool {
    /* With vcores_capped (tony.local.vcores set) a hard limit; else this
     * machine's cores, which vcores may oversubscribe: like YARN, a vcore is
     * a scheduling unit, not a promise of a core. */
    int vcores;
    bool vcores_capped;
    long long memory_mb;
    int gpus;
} tony_local_pool;

/* The pool from conf, or detected from the machine (CPUs, MemTotal,
 * `nvidia-smi -L`). Errors name a malformed tony.local.* key. */
int tony_local_pool_from_conf(const tony_conf *c, tony_local_pool *pool, tony_error *err);

/* How a plan fits the pool. A gang start needs every task of a stage
 * running together, so a stage that cannot fit as a whole would wait
 * forever: such a job is refused before anything starts. */
typedef struct tony_local_fit {
    tony_strv problems;  /* what does not fit, a sentence each naming the key to change; empty: it fits */
    int peak_vcores;     /* the most vcores the job holds at once */
    bool oversubscribed; /* peak_vcores is above the machine's cores, which is allowed as they are not capped */
} tony_local_fit;

/* I/O-free, for the client (submit and --dry-run alike) and the coordinator. */
void tony_local_fit_plan(const tony_local_pool *pool, const tony_plan *plan, tony_local_fit *fit);
void tony_local_fit_free(tony_local_fit *fit);
/* The one-line notice for an oversubscribed fit (malloc'ed, no newline),
 * or NULL when the fit is not oversubscribed. */
char *tony_local_fit_notice(const tony_local_pool *pool, const tony_local_fit *fit);

tony_backend *tony_backend_local_new(const tony_backend_opts *o, tony_error *err);

/* Where a container's executor starts when not on this machine: through a
 * launcher that places it on a node of an allocation the cluster already
 * granted (Slurm's srun). The backend still runs each container as a child
 * process session (the launcher) with its work dir under the job dir, which
 * must be on a file system every node shares, and reads its logs there;
 * the launcher's cluster owns the resources, so there is no pool, no GPU
 * numbering and no memory watch here. A small vtable, so that such a backend
 * is its placement and nothing else. */
typedef struct tony_local_placement {
    const char *backend_name; /* the backend's name, as tony_backend_ops.name */
    void *ctx;
    /* The words put before the executor's argv to start l's container
     * (e.g. "srun ... --"), and any change to its env. */
    int (*wrap)(void *ctx, const tony_launch *l, tony_strv *prefix, tony_env *env, tony_error *err);
    /* Refuses a plan the allocation cannot run (check_plan's contract). */
    int (*check_plan)(void *ctx, const tony_plan *plan, tony_error *err);
    /* Frees ctx (and this placement, when it lives there) with the backend. */
    void (*free)(void *ctx);
    /* A stop sends stop_signal to the launcher, which must hand it to the
     * executor (who then stops its user process and ends); kill_signal,
     * stop_grace_ms later, makes the launcher end the container at once. */
    int stop_signal, kill_signal;
    long long stop_grace_ms;
    /* Roles with an image run their executor in it under the launcher
     * (launcher ... runtime run ... image tony executor) when this is set:
     * it adjusts the container to what the launcher's cluster already
     * enforces. NULL: no container is started (the roles run bare). */
    void (*image_run)(void *ctx, const tony_launch *l, tony_container_run *run);
    /* The job is decided (tony_backend_ops.finish): final_status is
     * SUCCEEDED, FAILED or KILLED. NULL: the launcher's cluster is told
     * nothing. */
    void (*finish)(void *ctx, const char *final_status);
} tony_local_placement;

/* A backend whose containers start through placement (the backend's from
 * here on: its free runs with the backend's). */
tony_backend *tony_backend_local_new_placed(struct event_base *base, tony_reaper *reaper, const char *job_dir,
                                            const tony_local_placement *placement, tony_error *err);

#endif
