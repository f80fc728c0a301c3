/* The job plan: a validated, typed view of a merged configuration — every
 * role with its instances, resources, command and completion rules, and the
 * job-wide settings the coordinator needs. Built once by the client (for
 * validation and --dry-run) and again by the coordinator from tony-final.xml. */
#ifndef TONY_PLAN_H
#define TONY_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "common/env.h"
#include "common/error.h"
#include "common/strv.h"
#include "conf/conf.h"

typedef enum {
    TONY_ROLE_TRACKED,   /* the job waits for it; its result counts */
    TONY_ROLE_UNTRACKED, /* tony.application.untracked.jobtypes (ps): killed when tracked roles finish;
                            failing on its own fails the job at once */
    TONY_ROLE_SIDECAR,   /* tony.application.sidecar.jobtypes (tensorboard): killed at the end, failures ignored */
} tony_role_kind;

typedef enum { TONY_STAGE_PREPARE = 0, TONY_STAGE_TRAINING = 1 } tony_stage;

/* Which failed attempts may be retried (tony.<role>.restart-policy over
 * tony.application.restart-policy); am/policy.c applies it. */
typedef enum {
    TONY_RESTART_ON_FAILURE = 0, /* every failure (TonY's behaviour) */
    TONY_RESTART_NEVER,          /* none */
    TONY_RESTART_EXIT_CODE,      /* Kubeflow's rule: exit codes 1-127 are the script's own, permanent */
} tony_restart_policy;

/* "on-failure", "never", "exit-code". */
const char *tony_restart_policy_name(tony_restart_policy p);

/* The longest job type name: the coordinator's API paths and the
 * executors take no longer ones. */
#define TONY_ROLE_NAME_MAX 63

typedef struct tony_role {
    char *name;
    int instances;
    /* Elastic jobs: tony.<t>.min-instances, the fewest tasks the job trains
     * with (instances is the most); equal to instances when not elastic. */
    int min_instances;
    long long memory_mb;
    int vcores;
    int gpus;
    /* tony.<t>.nproc-per-node: the processes each task runs (torchrun's
     * --nproc_per_node), 1 or more; the runtime refuses more than 1 where
     * its framework has no meaning for it. */
    int nproc_per_node;
    char *command;         /* tony.<t>.command, else tony.containers.command; never NULL when instances > 0 */
    char *resources;       /* tony.<t>.resources joined with tony.containers.resources (raw list) */
    char *node_label;      /* tony.<t>.node-label or NULL */
    char *docker_image;    /* tony.docker.<t>.image / tony.docker.containers.image when docker is enabled */
    /* With docker enabled (backend/container.h runs them): */
    char *docker_mounts;   /* tony.docker.containers.mount: src:dst[:ro|rw], comma-separated, or NULL */
    char *docker_runtime;  /* tony.docker.runtime: podman or docker; NULL: the first found that works */
    char *docker_network;  /* tony.docker.network; NULL: the host's */
    tony_role_kind kind;
    bool stop_on_failure;  /* in tony.application.stop-on-failure-jobtypes */
    tony_stage stage;      /* roles of the training stage start after the prepare stage's tracked tasks end */
    tony_restart_policy restart_policy; /* tony.<t>.restart-policy, else the job's */
} tony_role;

typedef struct tony_plan {
    tony_role *roles; /* roles with instances > 0, sorted by name */
    size_t nroles;
    char *framework;  /* lower-case runtime name, e.g. "tensorflow" */
    bool gang;        /* tony.application.distributed-mode GANG (else FCFS) */
    bool single_node; /* no instances at all: the command runs in the coordinator */
    bool has_stages;  /* prepare/training stages configured */
    bool fail_on_worker_failure;
    /* One failed tracked task ends the attempt at once: workers that train in
     * lock-step (DDP, Horovod, TF collective all-reduce) cannot survive a lost
     * peer. From tony.application.fail-fast-lockstep (auto|true|false);
     * "auto" asks the framework runtime. */
    bool lockstep;
    int retry_count;                    /* tony.am.retry-count */
    tony_restart_policy restart_policy; /* tony.application.restart-policy */
    long long sizing_min_run_ms;        /* tony.application.sizing-min-run-ms: the shortest run right-sizing uses */
    long long restart_backoff_ms;       /* tony.application.restart-backoff-ms: the first wait, doubled after */
    long long restart_backoff_max_ms;   /* tony.application.restart-backoff-max-ms: the longest wait */
    long long restart_healthy_ms;       /* tony.application.restart-healthy-ms: a shorter failed attempt is a crash */
    /* tony.application.restart-mode: in-place (default) keeps healthy
     * containers across a restart and starts the user processes in them
     * again; reallocate tears every container down and asks anew. */
    bool restart_in_place;
    /* Elastic jobs (am/fsm.h): some role's min_instances is below its
     * instances; the job waits tony.application.elastic-settle-ms for
     * missing tasks before it trains with fewer. */
    bool elastic;
    long long elastic_settle_ms;
    long long heartbeat_interval_ms;    /* tony.task.heartbeat-interval-ms */
    int max_missed_heartbeats;          /* tony.task.max-missed-heartbeats */
    long long am_recovery_ms;           /* tony.am.recovery-timeout-ms: tasks outlive a lost coordinator this long; 0 = off */
    long long app_timeout_ms;           /* tony.application.timeout, 0 = none */
    long long execution_timeout_ms;     /* tony.task.executor.execution-timeout-ms or tony.worker.timeout, 0 = none */
    long long registration_timeout_ms;  /* tony.container.registration.timeout or tony.container.allocation.timeout, <=0 = none */
    long long metrics_interval_ms;      /* tony.task.metrics-interval-ms */
    long long progress_timeout_ms;      /* tony.task.progress-timeout (am/hang.h), 0 = off */
    long long log_max_mb;               /* tony.task.log-max-size: a task's stdout/stderr cap, 0 = none */
    char *am_command;                   /* single-node / preprocess command: tony.am.command or tony.containers.command */
    /* The coordinator's image, named "am" (JOB_SINGLE_NODE_ROLE): with docker
     * enabled, tony.docker.am.image, else tony.docker.containers.image, and
     * the docker_* settings as a role's; docker_image NULL otherwise. A
     * single-node job's command runs in it (local backend). */
    tony_role am_image;
    long long am_memory_mb;
    int am_vcores;
    int am_gpus;
    tony_env shell_env;                 /* tony.execution.envs: the user process's env */
    tony_env container_env;             /* tony.containers.envs: executor (container) env */
    char *tensorboard_log_dir;          /* tony.application.tensorboard-log-dir or NULL */
    int max_excluded_nodes;             /* tony.application.max-excluded-nodes; -1: fewer than half the cluster */
    char *log_policies;                 /* tony.application.log-policies (checked; conf/logpolicy.h) */
} tony_plan;

/* Reads and validates c. Every error names the key and says what to do:
 * non-numeric or negative numbers, tony.task.max-total-* and
 * tony.<t>.max-instances limits, a role without a command, stages that do
 * not cover the roles. The framework's own rules (known, its checks, its
 * lock-step) are a layer up: tony_runtime_plan (runtime/runtime.h) is this
 * plus them, what every job's plan comes from; framework is as named. */
int tony_plan_from_conf(const tony_conf *c, tony_plan *out, tony_error *err);
void tony_plan_free(tony_plan *p);

const tony_role *tony_plan_role(const tony_plan *p, const char *name); /* NULL if absent */
int tony_plan_total_instances(const tony_plan *p);
/* Whether a task (or the single-node command) runs in an image, where
 * paths and programs are the image's, not this machine's. */
bool tony_plan_in_images(const tony_plan *p);
/* Tasks the job waits for (tracked roles' instances): TonY's TASK_NUM. */
int tony_plan_tracked_tasks(const tony_plan *p);
/* chief:* when a "chief" role exists, else worker:0. */
bool tony_plan_is_chief(const tony_plan *p, const char *role, int index);
const char *tony_role_kind_name(tony_role_kind k); /* "tracked" | "untracked" | "sidecar" */

#endif
