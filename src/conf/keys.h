/* The one registry of every tony.* key: name (with <role> patterns), type,
 * default, one-line doc, the backends that honour it, and TonY's keys tony
 * accepts without acting on them (with why). Code reads a key through the
 * TONY_KEY_* name below, so each key's spelling exists once; keycheck,
 * `tony conf keys` and docs/keys.md all come from this table. */
#ifndef TONY_CONF_KEYS_H
#define TONY_CONF_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

/* ---- the names (one spelling per key) ---- */

/* Application */
#define TONY_KEY_YARN_QUEUE "tony.yarn.queue"
#define TONY_KEY_YARN_DIST_CACHE "tony.yarn.dist-cache"
#define TONY_KEY_YARN_MAX_APP_ATTEMPTS "tony.yarn.max-app-attempts"
#define TONY_KEY_APP_ID "tony.application.id"
#define TONY_KEY_APP_SHARED_DIR "tony.application.shared-dir"
#define TONY_KEY_APP_NAME "tony.application.name"
#define TONY_KEY_APP_TYPE "tony.application.type"
#define TONY_KEY_APP_TAGS "tony.application.tags"
#define TONY_KEY_APP_NODE_LABEL "tony.application.node-label"
#define TONY_KEY_APP_VIEW_ACLS "tony.application.view-acls"
#define TONY_KEY_APP_MODIFY_ACLS "tony.application.modify-acls"
#define TONY_KEY_APP_TIMEOUT "tony.application.timeout"
#define TONY_KEY_APP_MAX_EXCLUDED_NODES "tony.application.max-excluded-nodes"
#define TONY_KEY_APP_LOG_POLICIES "tony.application.log-policies"
#define TONY_KEY_APP_FRAMEWORK "tony.application.framework"
#define TONY_KEY_APP_DISTRIBUTED_MODE "tony.application.distributed-mode"
#define TONY_KEY_APP_UNTRACKED_JOBTYPES "tony.application.untracked.jobtypes"
#define TONY_KEY_APP_SIDECAR_JOBTYPES "tony.application.sidecar.jobtypes"
#define TONY_KEY_APP_STOP_ON_FAILURE_JOBTYPES "tony.application.stop-on-failure-jobtypes"
#define TONY_KEY_APP_FAIL_ON_WORKER_FAILURE "tony.application.fail-on-worker-failure-enabled"
#define TONY_KEY_APP_FAIL_FAST_LOCKSTEP "tony.application.fail-fast-lockstep"
#define TONY_KEY_APP_RESTART_POLICY "tony.application.restart-policy"
#define TONY_KEY_APP_RESTART_BACKOFF_MS "tony.application.restart-backoff-ms"
#define TONY_KEY_APP_RESTART_BACKOFF_MAX_MS "tony.application.restart-backoff-max-ms"
#define TONY_KEY_APP_RESTART_HEALTHY_MS "tony.application.restart-healthy-ms"
#define TONY_KEY_APP_RESTART_MODE "tony.application.restart-mode"
#define TONY_KEY_APP_ELASTIC_SETTLE_MS "tony.application.elastic-settle-ms"
#define TONY_KEY_APP_SIZING_MIN_RUN_MS "tony.application.sizing-min-run-ms"
#define TONY_KEY_APP_SECURITY_ENABLED "tony.application.security.enabled"
#define TONY_KEY_APP_PREPARE_STAGE "tony.application.prepare-stage"
#define TONY_KEY_APP_TRAINING_STAGE "tony.application.training-stage"
#define TONY_KEY_APP_TENSORBOARD_LOG_DIR "tony.application.tensorboard-log-dir"
#define TONY_KEY_NOTEBOOK_IDLE_TIMEOUT "tony.notebook.idle-timeout"
/* The role `tony notebook` runs its Jupyter server as (tony.notebook.*: its
 * memory, vcores and GPUs); the coordinator proxies the task of this role. */
#define TONY_NOTEBOOK_ROLE "notebook"
#define TONY_KEY_APP_BACKEND "tony.application.backend"
#define TONY_KEY_OTHER_NAMENODES "tony.other.namenodes"
#define TONY_KEY_PYTHON_EXEC_PATH "tony.python-exec-path"

/* Tasks */
#define TONY_KEY_TASK_MAX_TOTAL_PREFIX "tony.task.max-total-"
#define TONY_KEY_TASK_MAX_TOTAL_INSTANCES TONY_KEY_TASK_MAX_TOTAL_PREFIX "instances"
#define TONY_KEY_TASK_HEARTBEAT_INTERVAL_MS "tony.task.heartbeat-interval-ms"
#define TONY_KEY_TASK_MAX_MISSED_HEARTBEATS "tony.task.max-missed-heartbeats"
#define TONY_KEY_TASK_METRICS_INTERVAL_MS "tony.task.metrics-interval-ms"
#define TONY_KEY_TASK_GPU_METRICS_ENABLED "tony.task.gpu-metrics.enabled"
#define TONY_KEY_TASK_EXECUTION_TIMEOUT_MS "tony.task.executor.execution-timeout-ms"
#define TONY_KEY_TASK_LOG_MAX_SIZE "tony.task.log-max-size"
#define TONY_KEY_TASK_PROGRESS_TIMEOUT "tony.task.progress-timeout"
#define TONY_KEY_TASK_PY_SPY_PATH "tony.task.py-spy-path"
#define TONY_KEY_GPU_EXEC_PATH "tony.gpu-exec-path"

/* Coordinator (AM) */
#define TONY_KEY_AM_RETRY_COUNT "tony.am.retry-count"
#define TONY_KEY_AM_MEMORY "tony.am.memory"
#define TONY_KEY_AM_VCORES "tony.am.vcores"
#define TONY_KEY_AM_GPUS "tony.am.gpus"
#define TONY_KEY_AM_WAIT_CLIENT_STOP_SEC "tony.am.wait-client-signal-stop-timeout-sec"
#define TONY_KEY_AM_COMMAND "tony.am.command"
#define TONY_KEY_AM_RESOURCES "tony.am.resources"
#define TONY_KEY_AM_RECOVERY_TIMEOUT_MS "tony.am.recovery-timeout-ms"

/* Job types: printf formats taking the role (tony.<role>.memory) */
#define TONY_KEY_ROLE_INSTANCES_FMT "tony.%s.instances"
#define TONY_KEY_ROLE_MEMORY_FMT "tony.%s.memory"
#define TONY_KEY_ROLE_VCORES_FMT "tony.%s.vcores"
#define TONY_KEY_ROLE_GPUS_FMT "tony.%s.gpus"
#define TONY_KEY_ROLE_COMMAND_FMT "tony.%s.command"
#define TONY_KEY_ROLE_RESOURCES_FMT "tony.%s.resources"
#define TONY_KEY_ROLE_NODE_LABEL_FMT "tony.%s.node-label"
#define TONY_KEY_ROLE_RESTART_POLICY_FMT "tony.%s.restart-policy"
#define TONY_KEY_ROLE_MAX_INSTANCES_FMT "tony.%s.max-instances"
#define TONY_KEY_ROLE_MIN_INSTANCES_FMT "tony.%s.min-instances"
#define TONY_KEY_ROLE_NPROC_PER_NODE_FMT "tony.%s.nproc-per-node"
#define TONY_KEY_WORKER_TIMEOUT "tony.worker.timeout"
#define TONY_KEY_TENSORBOARD_INSTANCES "tony.tensorboard.instances"
#define TONY_KEY_TENSORBOARD_COMMAND "tony.tensorboard.command"

/* Containers */
#define TONY_KEY_CONTAINER_ALLOCATION_TIMEOUT "tony.container.allocation.timeout"
#define TONY_KEY_CONTAINER_REGISTRATION_TIMEOUT "tony.container.registration.timeout"
#define TONY_KEY_CONTAINERS_COMMAND "tony.containers.command"
#define TONY_KEY_CONTAINERS_RESOURCES "tony.containers.resources"
#define TONY_KEY_CONTAINERS_ENVS "tony.containers.envs"
#define TONY_KEY_EXECUTION_ENVS "tony.execution.envs"

/* Docker */
#define TONY_KEY_DOCKER_ENABLED "tony.docker.enabled"
#define TONY_KEY_DOCKER_CONTAINERS_IMAGE "tony.docker.containers.image"
#define TONY_KEY_DOCKER_ROLE_IMAGE_FMT "tony.docker.%s.image"
#define TONY_KEY_DOCKER_AM_IMAGE "tony.docker.am.image"
#define TONY_KEY_DOCKER_CONTAINERS_MOUNT "tony.docker.containers.mount"
#define TONY_KEY_DOCKER_RUNTIME "tony.docker.runtime"
#define TONY_KEY_DOCKER_NETWORK "tony.docker.network"

/* History and Kerberos */
#define TONY_KEY_HISTORY_LOCATION "tony.history.location"
#define TONY_KEY_HISTORY_INTERMEDIATE "tony.history.intermediate"
#define TONY_KEY_HISTORY_FINISHED "tony.history.finished"
#define TONY_KEY_HISTORY_FINISHED_TZ "tony.history.finished-dir-timezone"
#define TONY_KEY_KEYTAB_USER "tony.keytab.user"
#define TONY_KEY_KEYTAB_LOCATION "tony.keytab.location"
#define TONY_KEY_KEYTAB_REFRESH_TOKENS "tony.keytab.refresh-tokens"

/* Local and Slurm backends */
#define TONY_KEY_LOCAL_ROOT "tony.local.root"
#define TONY_KEY_LOCAL_VCORES "tony.local.vcores"
#define TONY_KEY_LOCAL_MEMORY "tony.local.memory"
#define TONY_KEY_LOCAL_GPUS "tony.local.gpus"
#define TONY_KEY_SLURM_ACCOUNT "tony.slurm.account"
#define TONY_KEY_SLURM_PARTITION "tony.slurm.partition"
#define TONY_KEY_SLURM_ROLE_PARTITION_FMT "tony.slurm.%s.partition"
#define TONY_KEY_SLURM_STAGING_DIR "tony.slurm.staging-dir"

/* ---- the registry ---- */

typedef enum tony_key_type {
    TONY_KEY_STRING,   /* any text */
    TONY_KEY_LIST,     /* comma list */
    TONY_KEY_INT,      /* an integer */
    TONY_KEY_BOOL,     /* true or false, any case */
    TONY_KEY_SIZE,     /* memory: MB, or a number with m or g (512m, 2g) */
    TONY_KEY_MS,       /* milliseconds, a plain integer */
    TONY_KEY_DURATION, /* milliseconds, or a number with ms, s, m or h (30m) */
    TONY_KEY_SECONDS,  /* seconds, a plain integer */
} tony_key_type;

/* Backends that honour a key (a bit set). */
enum { TONY_KEY_LOCAL = 1, TONY_KEY_YARN = 2, TONY_KEY_SLURM = 4, TONY_KEY_ALL_BACKENDS = 7 };

typedef struct tony_key {
    /* The key, or a pattern: <role> stands for a job type ([a-z]+); another
     * <...> for one dotted segment, or anything when it ends the name. */
    const char *name;
    tony_key_type type;
    /* NULL: unset by default (the reader decides, e.g. auto-detects). */
    const char *value;
    unsigned backends;
    const char *doc;
    /* NULL: tony acts on the key. Else TonY's key, accepted so that a TonY
     * config loads, and why tony does not act on it. */
    const char *why_not;
} tony_key;

/* The table, in the order a reader would want to see it; *n gets its size. */
const tony_key *tony_keys(size_t *n);
/* The entry for name: an exact entry first, else the first pattern that
 * matches; NULL when tony knows no such key. */
const tony_key *tony_key_find(const char *name);
/* Whether name is the key (or matches the pattern) k->name. */
bool tony_key_matches(const tony_key *k, const char *name);
/* Whether k->name is a pattern (holds a <...>). */
bool tony_key_is_pattern(const tony_key *k);
/* "int", "size", "duration"... as `tony conf keys` and errors say it. */
const char *tony_key_type_name(tony_key_type t);
/* What a value of type t looks like, for an error ("an integer (e.g. 4)"). */
const char *tony_key_type_form(tony_key_type t);
/* Backends as "local,yarn,slurm" (a static string). */
const char *tony_key_backends_text(unsigned backends);
/* 0 when value is of k's type (blank means "the default", always fine);
 * else -1 and an error naming key, value, where it came from (source, may
 * be NULL) and the type. */
int tony_key_check_value(const tony_key *k, const char *key, const char *value, const char *source, tony_error *err);

/* tony.application.name when the user set none: the framework's name and
 * "Application" (TonY's TensorFlowApplication for tensorflow, PyTorchApplication
 * for pytorch), so that a job is not named after a framework it does not use.
 * framework: a runtime's name, any case. Freed by the caller. */
char *tony_conf_default_app_name(const char *framework);

#endif
