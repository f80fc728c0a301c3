/* The backend seam: the only code that knows where containers come from (this
 * machine, YARN, later Slurm). The coordinator asks a backend to run a task's
 * executor in a container with some resources and an env, to stop it, and is
 * told when a container ends with its exit status and diagnostics. The client
 * side (staging, starting the coordinator, kill) lives in client/ and is
 * chosen by the same name. */
#ifndef TONY_BACKEND_H
#define TONY_BACKEND_H

#include <event2/event.h>
#include <stdbool.h>

#include "common/env.h"
#include "common/error.h"
#include "conf/plan.h"

/* YARN's container exit statuses, kept so that diagnostics read the same on
 * every backend (yarn-wire.md, ContainerExitStatus). */
enum {
    TONY_EXIT_SUCCESS = 0,
    TONY_EXIT_INVALID = -1000,
    TONY_EXIT_ABORTED = -100,
    TONY_EXIT_DISKS_FAILED = -101,
    TONY_EXIT_PREEMPTED = -102,
    TONY_EXIT_KILLED_EXCEEDED_VMEM = -103,
    TONY_EXIT_KILLED_EXCEEDED_PMEM = -104,
    TONY_EXIT_KILLED_BY_APPMASTER = -105,
    TONY_EXIT_KILLED_BY_RESOURCEMANAGER = -106,
    TONY_EXIT_KILLED_AFTER_APP_COMPLETION = -107,
    TONY_EXIT_KILLED_BY_CONTAINER_SCHEDULER = -108,
    TONY_EXIT_KILLED_FOR_EXCESS_LOGS = -109,
};

/* A sentence explaining a container exit status ("killed for exceeding its
 * physical memory limit", "exit code 1", "killed by signal 9 (SIGKILL)"). */
const char *tony_exit_status_meaning(int exit_status, char *buf, size_t buflen);

/* One container request: run `argv` (the executor) for role:index. */
typedef struct tony_launch {
    const char *role;
    int index;
    int attempt;
    long long memory_mb;
    int vcores;
    int gpus;
    const char *node_label;
    const char *resources;   /* localizable resources, TonY syntax, staged paths */
    const tony_env *env;     /* container env */
    char *const *argv;       /* the command run in the container */
} tony_launch;

typedef struct tony_backend tony_backend;

/* Called from the event loop when a container of ours ended. host is where it
 * ran (NULL if it never started); log_dir where its stdout/stderr are. */
typedef void (*tony_backend_exit_cb)(void *ctx, const char *role, int index, int attempt, int exit_status,
                                     const char *diagnostics);

typedef struct tony_backend_ops {
    const char *name;
    /* Refuses, at once, a plan that can never run here (more memory, vcores
     * or GPUs than the cluster or machine has). */
    int (*check_plan)(tony_backend *b, const tony_plan *plan, tony_error *err);
    /* Asks for a container and starts argv in it when granted; may queue
     * until resources free up. The outcome arrives through the exit cb. */
    int (*launch)(tony_backend *b, const tony_launch *l, tony_error *err);
    /* Stops role:index of attempt (or drops its queued request); it ends with
     * TONY_EXIT_KILLED_BY_APPMASTER through the exit cb. */
    void (*stop)(tony_backend *b, const char *role, int index, int attempt);
    /* Containers asked for and not yet ended (queued ones included). */
    int (*active)(const tony_backend *b);
    /* The job is decided: final_status is SUCCEEDED, FAILED or KILLED. A
     * cluster backend tells its resource manager (YARN unregisters the
     * application); NULL where there is no one to tell. */
    void (*finish)(tony_backend *b, const char *final_status, const char *diagnostics, const char *url);
    /* Kills whatever is left, synchronously; used at the very end. */
    void (*shutdown)(tony_backend *b);
    void (*free)(tony_backend *b);
} tony_backend_ops;

struct tony_backend {
    const tony_backend_ops *ops;
    tony_backend_exit_cb on_exit;
    void *cb_ctx;
};

#endif
