/* The job JSON as a contract: the field names of what GET /v1/job answers
 * (common/amapi.h), which is also the job dir's status.json and, per task,
 * history's metrics.json, and the words of its states.
 *
 * Written by the coordinator (am/view.c, am/cause.c, am/metrics.c,
 * am/record.c; the state words by am/fsm.c and am/job.c's name tables) and
 * common/sizing.c; a backend's client may fill in what a lost coordinator
 * could not (backend/yarn/client_jobs.c). Read by the client (client/),
 * the backends' clients and the web page (web/app.js, web/plots.js: they
 * cannot include this, so scripts/check-jobjson, run by `make test-unit`,
 * fails when they read a field this header does not name). Every C writer
 * and reader names a field from here only, so that the sides cannot drift. */
#ifndef TONY_JOBJSON_H
#define TONY_JOBJSON_H

#include <jansson.h>
#include <stdbool.h>

/* The job. */
#define JOB_APP_ID "app_id"
#define JOB_STATE "state"               /* JOB_STATE_* */
#define JOB_FINAL_STATUS "final_status" /* JOB_FINAL_STATUS_*; UNDEFINED until the job is over */
#define JOB_ATTEMPT "attempt"           /* the attempt running now, from 0 */
#define JOB_BACKEND "backend"           /* local | yarn | slurm */
#define JOB_FRAMEWORK "framework"       /* lower-case runtime name, as it always was */
#define JOB_FRAMEWORK_DEFAULT "framework_default" /* true: tony.application.framework was not set; framework is its default */
#define JOB_NAME "name"                 /* tony.application.name: what YARN and Slurm show too */
#define JOB_DIR "job_dir"
#define JOB_STARTED_MS "started_ms"     /* wall-clock ms since the epoch, as every *_ms time here */
#define JOB_FINISHED_MS "finished_ms"
#define JOB_RETRIES_LEFT "retries_left"
#define JOB_SINGLE_NODE "single_node"   /* the command runs in the coordinator, as task JOB_SINGLE_NODE_ROLE:0 */
#define JOB_URL "url"                   /* the coordinator's API and web page */
#define JOB_DIAGNOSTICS "diagnostics"
#define JOB_STATUS_ERROR "status_error" /* why status.json could not be written */
#define JOB_HISTORY_ERROR "history_error" /* why the job's history stopped being written (a full disk) */
#define JOB_ROOT_CAUSE "root_cause"     /* {JOB_CAUSE_*}: the last failed attempt's first failure */
#define JOB_RESTART_AT_MS "restart_at_ms" /* in BACKOFF: when the next attempt starts */
#define JOB_TASKS "tasks"               /* [{JOB_TASK_*}] (GET /v1/job?offset=&limit=: a page of them) */
/* Only in an answer to GET /v1/job that asked for a page (offset, limit), some
 * tasks (state, role) or no task (tasks=0), for a job of thousands of tasks
 * (issue 26): */
#define JOB_TASKS_TOTAL "tasks_total"   /* how many tasks the job lists in all */
#define JOB_TASKS_MATCHING "tasks_matching" /* how many of them the query's state and role take (all of them
                                               without either): offset and limit page these */
#define JOB_TASK_COUNTS "task_counts"   /* {role: {state: n}} over every task (JOB_TASK_STATE's words) */
#define JOB_EXCLUDED_NODES "excluded_nodes" /* [{JOB_EXCL_*}] */
#define JOB_COORDINATOR_RESTARTED "coordinator_restarted" /* {JOB_COORD_*}: this coordinator replaced a lost one */
#define JOB_TENSORBOARD_URL "tensorboard_url"
#define JOB_TENSORBOARD_TASK "tensorboard_task" /* "role:index" of the task serving it */
#define JOB_TENSORBOARD_PROXY_URL "tensorboard_proxy_url" /* added by YARN's client: through the RM's proxy */
#define JOB_ADVICE "advice"             /* [{JOB_ADVICE_*}]: right-sizing, once the job is over */
#define JOB_ATTEMPTS "attempts"         /* [{JOB_ATT_*}]: the attempts that ended, oldest first */
#define JOB_WORLD "world"               /* elastic jobs only (docs/elastic.md): {JOB_WORLD_*} */
#define JOB_HISTORY_DIR "history_dir"
#define JOB_HISTORY_FILE "history_file"

/* A task. */
#define JOB_TASK_ROLE "role"
#define JOB_TASK_INDEX "index"
#define JOB_TASK_STATE "state"          /* JOB_TASK_STATE_*; a single-node job's task: JOB_FINAL_STATUS_* once over */
#define JOB_TASK_ATTEMPT "attempt"
#define JOB_TASK_HOST "host"
#define JOB_TASK_PORT "port"
#define JOB_TASK_PID "pid"
#define JOB_TASK_NODE "node"            /* where its container ran, once it ended */
#define JOB_TASK_CONTAINER_ATTEMPT "container_attempt"
#define JOB_TASK_EXIT_STATUS "exit_status"
#define JOB_TASK_EXIT_MEANING "exit_meaning"
#define JOB_TASK_DIAGNOSTICS "diagnostics"
#define JOB_TASK_KIND "kind"            /* tracked | untracked | sidecar (conf/plan.h) */
#define JOB_TASK_STARTS "starts"        /* how many times its process started */
#define JOB_TASK_RUNS "runs"            /* [{JOB_RUN_*}]: the attempts it ran in */
#define JOB_TASK_CHIEF "chief"
#define JOB_TASK_CONTAINER "container"
#define JOB_TASK_LOG_URL "log_url"
#define JOB_TASK_LOG_DIR "log_dir"
#define JOB_TASK_STDOUT "stdout"
#define JOB_TASK_STDERR "stderr"
#define JOB_TASK_REGISTERED_MS "registered_ms"
#define JOB_TASK_STARTED_MS "started_ms"
#define JOB_TASK_FINISHED_MS "finished_ms"
#define JOB_TASK_REQUESTED "requested"  /* {JOB_REQ_*} */
#define JOB_TASK_STOPPED_BY "stopped_by" /* FINISHED: stopped because this "role:index" failed first in the attempt */
#define JOB_TASK_STACKS "stacks"        /* the API path of its stacks, once a hang diagnosis collected them */
#define JOB_TASK_METRICS "metrics"      /* {JOB_METRIC_*: number} */
#define JOB_TASK_LAST_SAMPLE "last_sample" /* {JOB_SAMPLE_*: value} or null */
#define JOB_TASK_SERIES "series"        /* metrics.json only: {JOB_SAMPLE_*: [values]} */
#define JOB_TASK_OUT "out"              /* elastic jobs: true while the task is out of the world */

/* An elastic job's world: its version (TONY_WORLD_VERSION), its size and
 * each role's count in it, bounds and the size `tony scale` asked for. */
#define JOB_WORLD_VERSION "version"
#define JOB_WORLD_SIZE "size"
#define JOB_WORLD_ROLES "roles"         /* {role: {JOB_WORLD_ROLE_*}} */
#define JOB_WORLD_ROLE_IN "in"
#define JOB_WORLD_ROLE_MIN "min"
#define JOB_WORLD_ROLE_MAX "max"
#define JOB_WORLD_ROLE_TARGET "target"
/* An attempt that ended (JOB_ATTEMPTS; metrics.json's attempts carry
 * JOB_ATT_END too): its number and how it ended (JOB_END_*). */
#define JOB_ATT_ATTEMPT "attempt"
#define JOB_ATT_END "end"
/* The role of a single-node job's one task. */
#define JOB_SINGLE_NODE_ROLE "am"

/* One attempt a task ran in. */
#define JOB_RUN_ATTEMPT "attempt"
#define JOB_RUN_STATE "state"           /* JOB_TASK_STATE_* */
#define JOB_RUN_STARTED "started"
#define JOB_RUN_EXIT_STATUS "exit_status"
#define JOB_RUN_EXIT_MEANING "exit_meaning"
#define JOB_RUN_LOG_URL "log_url"

/* A task's request. */
#define JOB_REQ_MEMORY_BYTES "memory_bytes"
#define JOB_REQ_VCORES "vcores"
#define JOB_REQ_GPUS "gpus"

/* The root cause (am/cause.h). */
#define JOB_CAUSE_TASK "task"           /* "role:index" */
#define JOB_CAUSE_ATTEMPT "attempt"
#define JOB_CAUSE_EXIT_STATUS "exit_status"
#define JOB_CAUSE_EXIT_MEANING "exit_meaning"
#define JOB_CAUSE_HOST "host"
#define JOB_CAUSE_ERROR "error"         /* torch's error file */
#define JOB_CAUSE_STDERR_TAIL "stderr_tail"
#define JOB_CAUSE_DIAGNOSTICS "diagnostics"
/* false when the task's command never ran (its executor's setup, its
 * container's start failed): then the cause is the executor's, not the
 * script's; left out when it ran. */
#define JOB_CAUSE_COMMAND_STARTED "command_started"
#define JOB_CAUSE_EXECUTOR_LOG "executor_log"      /* then: the end of its executor.log, when read */
#define JOB_CAUSE_EXECUTOR_LOG_PATH "executor_log_path" /* and where all of it is */
#define JOB_CAUSE_TEXT "text"           /* all of it, for people */
/* How that text starts: history keeps it only inside the job's last words
 * (the APPLICATION_FINISHED event), where readers find it by this. */
#define JOB_CAUSE_TEXT_PREFIX "Root cause: "

/* An excluded node (am/exclusion.h). */
#define JOB_EXCL_NODE "node"
#define JOB_EXCL_TASK "task"
#define JOB_EXCL_REASON "reason"
#define JOB_EXCL_ATTEMPT "attempt"
#define JOB_EXCL_TIME_MS "time_ms"
#define JOB_EXCL_EXCLUDED "excluded"    /* false: bad, but the cap kept it in use */
#define JOB_EXCL_REFUSED "refused"      /* why it was not excluded */

/* coordinator_restarted. */
#define JOB_COORD_WAITING "waiting"     /* still waiting for tasks to come back */
#define JOB_COORD_ADOPTED "adopted"     /* how many came back */

/* A right-sizing advice (common/sizing.h). */
#define JOB_ADVICE_ROLE "role"
#define JOB_ADVICE_KIND "kind"          /* memory | cpu | gpu | ok */
#define JOB_ADVICE_TEXT "text"
#define JOB_ADVICE_KEY "key"            /* the conf key to change, with */
#define JOB_ADVICE_VALUE "value"

/* A metric sample (last_sample), or a series of them (series). */
#define JOB_SAMPLE_T_MS "t_ms"
#define JOB_SAMPLE_RSS_BYTES "rss_bytes"
#define JOB_SAMPLE_CPU_PERCENT "cpu_percent"
#define JOB_SAMPLE_GPU_UTIL_PERCENT "gpu_util_percent"
#define JOB_SAMPLE_GPU_MEM_BYTES "gpu_mem_bytes"

/* A task's aggregates (metrics): TonY's metric names, also in .jhist. */
#define JOB_METRIC_MAX_MEMORY_BYTES "MAX_MEMORY_BYTES"
#define JOB_METRIC_AVG_MEMORY_BYTES "AVG_MEMORY_BYTES"
#define JOB_METRIC_MAX_GPU_UTILIZATION "MAX_GPU_UTILIZATION"
#define JOB_METRIC_AVG_GPU_UTILIZATION "AVG_GPU_UTILIZATION"
#define JOB_METRIC_MAX_GPU_FB_MEMORY_USAGE "MAX_GPU_FB_MEMORY_USAGE"
#define JOB_METRIC_AVG_GPU_FB_MEMORY_USAGE "AVG_GPU_FB_MEMORY_USAGE"
#define JOB_METRIC_MAX_GPU_MAIN_MEMORY_USAGE "MAX_GPU_MAIN_MEMORY_USAGE"
#define JOB_METRIC_AVG_GPU_MAIN_MEMORY_USAGE "AVG_GPU_MAIN_MEMORY_USAGE"
#define JOB_METRIC_MAX_CPU_PERCENT "MAX_CPU_PERCENT"
#define JOB_METRIC_AVG_CPU_PERCENT "AVG_CPU_PERCENT"
/* Ours, not in .jhist: the task's peak memory as the kernel counted it at its
 * end (its cgroup's, or its largest process's), never below
 * MAX_MEMORY_BYTES (which samples seconds apart under-measure); -1 before
 * that. What right-sizing sizes memory from. */
#define JOB_METRIC_PEAK_MEMORY_BYTES "PEAK_MEMORY_BYTES"

/* History's metrics.json (common/jhist.h's TONY_JHIST_METRICS): each
 * attempt's tasks as above, with their series. */
#define JOB_HIST_APP_ID "app_id"
#define JOB_HIST_COORDINATOR_STARTED_MS "coordinator_started_ms"
#define JOB_HIST_ATTEMPTS "attempts"
#define JOB_HIST_ATTEMPT "attempt"
#define JOB_HIST_INTERVAL_MS "interval_ms"
#define JOB_HIST_TASKS "tasks"

/* Words of the job's "state" (TonY has none: tony's own). */
#define JOB_STATE_NEW "NEW"
#define JOB_STATE_REGISTERING "REGISTERING"
#define JOB_STATE_RUNNING "RUNNING"
#define JOB_STATE_FINISHING "FINISHING"
#define JOB_STATE_BACKOFF "BACKOFF"     /* waiting to restart */
#define JOB_STATE_FINISHED "FINISHED"   /* over: final_status says how */
#define JOB_STATE_LOST "LOST"           /* said by clients only: its coordinator is gone and never finished it */

/* Words of "final_status" (YARN's FinalApplicationStatus). */
#define JOB_FINAL_STATUS_SUCCEEDED "SUCCEEDED"
#define JOB_FINAL_STATUS_FAILED "FAILED"
#define JOB_FINAL_STATUS_KILLED "KILLED"
#define JOB_FINAL_STATUS_UNDEFINED "UNDEFINED"

/* Words of an attempt's "end" (am/fsm.h's am_attempt_end). */
#define JOB_END_SUCCEEDED "SUCCEEDED"
#define JOB_END_FAILED "FAILED"
#define JOB_END_KILLED "KILLED"
#define JOB_END_RESIZED "RESIZED" /* an elastic world's membership changed: its tasks restarted in place */

/* Words of a task's "state" (TonY's TaskStatus). */
#define JOB_TASK_STATE_NEW "NEW"
#define JOB_TASK_STATE_READY "READY"
#define JOB_TASK_STATE_RUNNING "RUNNING"
#define JOB_TASK_STATE_SUCCEEDED "SUCCEEDED"
#define JOB_TASK_STATE_FAILED "FAILED"
#define JOB_TASK_STATE_FINISHED "FINISHED" /* stopped, neither succeeded nor failed */

/* Whether a job JSON says the job is over (state FINISHED); false for NULL. */
bool tony_job_is_finished(const json_t *job);
/* Whether it says the job succeeded (final_status SUCCEEDED). */
bool tony_job_succeeded(const json_t *job);

#endif
