/* The task environment as a contract: every variable a task's container or
 * its user process gets from tony, each with its one writer, named from
 * here by the writer and by every reader (the executor, the backends, the
 * client's --dry-run). The frameworks' own variables (TF_CONFIG,
 * MASTER_ADDR, DMLC_*, ...) are the runtime seam's (runtime/) and not
 * listed here. TonY's names are kept as they are. */
#ifndef TONY_TASKENV_H
#define TONY_TASKENV_H

/* TonY's task identity, in the user's process. Writer: the runtime
 * (tony_runtime_build_env, in the coordinator's "go" answer). */
#define TASKENV_JOB_NAME "JOB_NAME"                 /* the role */
#define TASKENV_TASK_INDEX "TASK_INDEX"
#define TASKENV_TASK_NUM "TASK_NUM"                 /* tracked tasks in the job */
#define TASKENV_IS_CHIEF "IS_CHIEF"                 /* "true" on the chief only; absent elsewhere */
#define TASKENV_DISTRIBUTED_MODE "DISTRIBUTED_MODE" /* GANG or FCFS */
#define TASKENV_CLUSTER_SPEC "CLUSTER_SPEC"         /* role -> ["host:port"], GANG only */

/* The job and its coordinator, in the container. Writer: the coordinator
 * (am/taskenv.c). */
#define TASKENV_JOB_ID "JOB_ID"                     /* the application id (also lowercase "appid", as TonY) */
#define TASKENV_APPID "appid"
#define TASKENV_SESSION_ID "SESSION_ID"             /* the attempt number */
#define TASKENV_NUM_AM_RETRIES "NUM_AM_RETRIES"     /* from the second attempt on */
#define TASKENV_ATTEMPT_NUMBER "ATTEMPT_NUMBER"     /* always 0 (TonY's task attempt) */
#define TASKENV_AM_HOST "AM_HOST"
#define TASKENV_AM_PORT "AM_PORT"
#define TASKENV_JOB_DIR "TONY_JOB_DIR"              /* a dir every task sees, when there is one */
#define TASKENV_TB_LOG_DIR "TB_LOG_DIR"             /* --sidecar_tensorboard_log_dir */
#define TASKENV_PREPROCESSING_JOB "PREPROCESSING_JOB" /* single-node command: "true" */

/* For the executor only (it removes the secret from its user's process).
 * Writer: the coordinator (am/taskenv.c). */
#define TASKENV_AM_URL "TONY_AM_URL"
#define TASKENV_BACKEND "TONY_BACKEND"              /* the coordinator's backend (tony_backend_ops.name), whose
                                                        task side the executor asks (backend/task.h) */
#define TASKENV_SECRET "TONY_SECRET"                /* unless the backend delivers it otherwise */
#define TASKENV_SECRET_JOB_DIR "TONY_SECRET_JOB_DIR" /* local in an image, and Slurm: the job dir whose secret
                                                        file holds it (an env var shows in the runtime's inspect,
                                                        and travels in Slurm's launch RPC) */
#define TASKENV_TASK_ID "TONY_TASK_ID"              /* <role>:<index> */
#define TASKENV_ATTEMPT "TONY_ATTEMPT"
/* Elastic jobs: the world's version, one more at each change of its
 * members (docs/elastic.md); only in elastic jobs. */
#define TASKENV_WORLD_VERSION "TONY_WORLD_VERSION"
#define TASKENV_HEARTBEAT_INTERVAL_MS "TONY_HEARTBEAT_INTERVAL_MS"
#define TASKENV_MAX_MISSED_HEARTBEATS "TONY_MAX_MISSED_HEARTBEATS"
#define TASKENV_AM_RECOVERY_MS "TONY_AM_RECOVERY_MS" /* tony.am.recovery-timeout-ms: how long a task whose
                                                        coordinator is lost looks for the next one */
#define TASKENV_METRICS_INTERVAL_MS "TONY_METRICS_INTERVAL_MS"
#define TASKENV_GPU_METRICS_SMI "TONY_GPU_METRICS_SMI" /* nvidia-smi's path, for tasks with GPUs */
#define TASKENV_RESERVE_TB_PORT "TONY_RESERVE_TB_PORT" /* "1": reserve TB_PORT */
#define TASKENV_PY_SPY "TONY_PY_SPY"                /* tony.task.py-spy-path, with tony.task.progress-timeout */
#define TASKENV_LOG_MAX_SIZE "TONY_LOG_MAX_SIZE"    /* tony.task.log-max-size in bytes; 0: no cap */

/* Where the container runs. Writer: the backend (backend/local, backend/yarn;
 * YARN's NodeManager writes CONTAINER_ID and NM_HOST itself). */
#define TASKENV_LOG_DIR "TONY_LOG_DIR"              /* where the user's stdout/stderr go */
#define TASKENV_PRIVATE_LOGS "TONY_PRIVATE_LOGS"    /* "1": make them 0600 */
#define TASKENV_SHARE_PROCESS_GROUP "TONY_SHARE_PROCESS_GROUP" /* "1": stay in the container's process group */
#define TASKENV_TASK_LOG_URL "TONY_TASK_LOG_URL"    /* people's link to the logs */
#define TASKENV_CONTAINER_MEMORY_MB "TONY_CONTAINER_MEMORY_MB"
#define TASKENV_IN_IMAGE "TONY_IN_IMAGE"           /* the image the container runs (backend/container.h):
                                                        its memory limit is the kernel's, in its cgroup */
#define TASKENV_NM_HOST "NM_HOST"                   /* the node's name, where the task's port is */
#define TASKENV_CONTAINER_ID "CONTAINER_ID"
#define TASKENV_CUDA_VISIBLE_DEVICES "CUDA_VISIBLE_DEVICES"
#define TASKENV_NVIDIA_VISIBLE_DEVICES "NVIDIA_VISIBLE_DEVICES"
/* YARN's Docker runtime, on the launch context of the coordinator's and each
 * task's container with tony.docker.enabled (backend/yarn/docker.h; the
 * client writes the coordinator's). Read by YARN's NodeManager, not tony. */
#define TASKENV_DOCKER_RUNTIME "YARN_CONTAINER_RUNTIME_TYPE"          /* "docker" */
#define TASKENV_DOCKER_IMAGE "YARN_CONTAINER_RUNTIME_DOCKER_IMAGE"
#define TASKENV_DOCKER_MOUNTS "YARN_CONTAINER_RUNTIME_DOCKER_MOUNTS"  /* SRC:DST:ro|rw,... */
#define TASKENV_DOCKER_NETWORK "YARN_CONTAINER_RUNTIME_DOCKER_CONTAINER_NETWORK"

/* In the user's process. Writer: the executor. */
/* The job's read token (common/readtoken.h), which the executor derives
 * from the secret: the user's code may read its own job from TONY_AM_URL
 * with it (a notebook's token). Never in a container's env. */
#define TASKENV_READ_TOKEN "TONY_READ_TOKEN"
#define TASKENV_TB_PORT "TB_PORT"                   /* the TensorBoard port it reserved */
/* Where torch's @record writes the exception that ended the process (its
 * log dir's torchelastic_error.json, removed before each start): the
 * failure's root cause. */
#define TASKENV_TORCHELASTIC_ERROR_FILE "TORCHELASTIC_ERROR_FILE"
#define TASKENV_PROGRESS_FILE "TONY_PROGRESS_FILE"  /* a file the task may touch to show progress (am/hang.h) */
/* The variables whose "KEY=VALUE" is over Linux's limit for one environment
 * string (MAX_ARG_STRLEN), which no exec could pass: each is in a file of
 * the task's work dir instead, listed here as "KEY=/path:KEY2=/path".
 * tony's sitecustomize sets them in a Python process's os.environ
 * (runtime/pyboot.h); other programs read the file. */
#define TASKENV_ENV_FILES "TONY_ENV_FILES"

#endif
