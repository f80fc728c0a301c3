/* The local backend: containers are process sessions on this machine, drawn
 * from a pool of its vcores, memory and GPUs (tony.local.vcores / .memory /
 * .gpus override what is detected), each with its own work dir under the job
 * dir, CUDA_VISIBLE_DEVICES from the GPU pool and a physical-memory limit
 * enforced like YARN's NodeManager does. */
#ifndef TONY_BACKEND_LOCAL_H
#define TONY_BACKEND_LOCAL_H

#include "backend/backend.h"
#include "common/reaper.h"
#include "conf/conf.h"

typedef struct tony_local_pool {
    int vcores;
    long long memory_mb;
    int gpus;
} tony_local_pool;

/* The pool from conf, or detected from the machine (CPUs, MemTotal,
 * `nvidia-smi -L`). Errors name a malformed tony.local.* key. */
int tony_local_pool_from_conf(const tony_conf *c, tony_local_pool *pool, tony_error *err);
/* Rejects a plan whose stages cannot fit the pool at once (gang start needs
 * every task of a stage running together). */
int tony_local_check_plan(const tony_local_pool *pool, const tony_plan *plan, tony_error *err);

tony_backend *tony_backend_local_new(struct event_base *base, tony_reaper *reaper, const char *job_dir,
                                     const tony_conf *conf, tony_error *err);

#endif
