/* The coordinator's HTTP API as a contract: its paths, the task verbs, the
 * JSON fields executors send and get back and the words of its answers.
 * The coordinator (am/api.c), the executor, the client and the backends
 * name them from here only, so that the two sides cannot drift apart.
 * Every call that changes state is signed with a key derived from the
 * job's secret, and its answer signed back (common/apiauth.h: the secret
 * itself never travels). */
#ifndef TONY_AMAPI_H
#define TONY_AMAPI_H

/* Paths (GET unless said). */
#define AM_API_JOB "/v1/job"             /* the job as JSON (?metrics=0: without each task's samples) */
/* GET /v1/job's query, each optional (none: the whole job, every task), all
 * from the client: */
#define AM_API_JOB_METRICS "metrics" /* 0: each task without its metrics and last_sample; 1 (default): with */
#define AM_API_JOB_OFFSET "offset"   /* the first task listed, in the job's order (plan order, then index); 0 */
#define AM_API_JOB_LIMIT "limit"     /* at most this many tasks listed (1..AM_API_JOB_LIMIT_MAX) */
#define AM_API_JOB_LIMIT_MAX 10000
#define AM_API_JOB_TASKS "tasks"     /* 0: no task listed, only their counts; 1 (default): listed */
/* Which tasks are listed (each: all when left out); offset and limit then
 * page the tasks it takes, in the job's order, and the answer counts them
 * (jobjson.h, JOB_TASKS_MATCHING). Neither goes with tasks=0. */
#define AM_API_JOB_STATE "state"     /* a comma list of task states (jobjson.h's JOB_TASK_STATE_*): FAILED,RUNNING */
#define AM_API_JOB_ROLE "role"       /* one role of the job: its tasks only */
#define AM_API_JOB_KILL "/v1/job/kill"   /* POST: the user kills the job */
#define AM_API_JOB_FINISH "/v1/job/finish" /* POST: the client read the final state */
#define AM_API_JOB_SCALE "/v1/job/scale" /* POST {role, instances}: `tony scale` (elastic jobs, docs/elastic.md) */
/* scale's body: the role and how many of its tasks the world is to have. */
#define AM_API_SCALE_ROLE "role"
#define AM_API_SCALE_INSTANCES "instances"
#define AM_API_EVENTS "/v1/events"       /* ?since=SEQ: the event log */
#define AM_API_TASKS "/v1/tasks/"        /* + <role>/<index>/<verb> */
#define AM_API_TENSORBOARD "/tensorboard" /* a redirect to the task serving TensorBoard */
#define AM_API_UI "/ui/"                 /* the web page's files */
#define AM_API_NOTEBOOK "/notebook"      /* `tony notebook`: its Jupyter server, proxied (am/notebook_proxy.h) */
/* Sent by the web page: the job is being watched (its coordinator lingers). */
#define AM_API_UI_HEADER "X-Tony-UI"

/* Reads: every GET carries the job's read token (common/readtoken.h), in
 * AM_API_TOKEN_HEADER or as "Authorization: Bearer T", or in the query as
 * ?AM_API_TOKEN_PARAM=T (the link tony prints); a link to the page moves
 * it into the URL's fragment (#AM_API_TOKEN_PARAM=T), which the page keeps
 * per origin. No cookie carries it: browsers send a host's cookies to every
 * port of the host, so to other users' servers on it. */
#define AM_API_TOKEN_HEADER "X-Tony-Token"
#define AM_API_TOKEN_PARAM "token"

/* The notebook (am/notebook_proxy.h): Jupyter serves under
 * AM_API_NOTEBOOK/<key>/, key = hex(HMAC-SHA256(read token,
 * AM_API_NOTEBOOK_PATH_LABEL)), which the task computes from its
 * TONY_READ_TOKEN (on no command line, where other users would read it).
 * A browser's way in is the cookie AM_API_NOTEBOOK_COOKIE (the read
 * token's HMAC over AM_API_NOTEBOOK_COOKIE_LABEL, not the token), sent only
 * under that secret folder, on whatever port. */
#define AM_API_NOTEBOOK_PATH_LABEL "tony notebook path v1"
#define AM_API_NOTEBOOK_COOKIE "tony_notebook"
#define AM_API_NOTEBOOK_COOKIE_LABEL "tony notebook cookie v1"

/* Task verbs: /v1/tasks/<role>/<index>/<verb>. */
#define AM_API_REGISTER "register"   /* POST, long poll: the answer comes when the gang is complete */
#define AM_API_HEARTBEAT "heartbeat" /* POST */
#define AM_API_STARTED "started"     /* POST: the user's process started */
#define AM_API_FINISHED "finished"   /* POST: it ended (the result is still the container's exit status) */
#define AM_API_METRICS "metrics"     /* POST: one sample; GET: the task's series */
#define AM_API_LOG "log"             /* GET ?stream=stdout|stderr&offset=N&attempt=A */
/* log's query (the attempt: AM_API_ATTEMPT) and its answer's fields (docs/api.md). */
#define AM_API_LOG_STREAM "stream"
#define AM_API_LOG_OFFSET "offset"
#define AM_API_LOG_DATA "data" /* the text from offset on */
#define AM_API_LOG_NEXT "next" /* the offset to ask for next */
#define AM_API_LOG_SIZE "size" /* the file's size now */
#define AM_API_STACKS "stacks"       /* POST: the task's stacks (hang diagnosis); GET ?attempt=A: them, as text */
#define AM_API_WATCH "watch"         /* POST, long poll: answered "stop" when the task must stop, else "wait" */

/* Fields of what an executor POSTs. */
#define AM_API_ATTEMPT "attempt"       /* every call: the attempt the executor belongs to */
#define AM_API_HOST "host"             /* register: where its port is */
#define AM_API_PORT "port"             /* register: the port reserved for the user's process */
#define AM_API_TB_PORT "tb_port"       /* register: TB_PORT, when it reserved one */
#define AM_API_LOG_DIR "log_dir"       /* register: where its stdout/stderr are, on its node */
#define AM_API_CONTAINER "container"   /* register: the cluster's container id */
#define AM_API_LOG_URL "log_url"       /* register: people's link to its logs (TONY_TASK_LOG_URL) */
#define AM_API_CONTAINER_ATTEMPT "container_attempt" /* register: the attempt its container was asked for in */
#define AM_API_ADOPT "adopt"         /* register: the executor of a lost coordinator comes back to its successor
                                        with its process running: that process's pid */
#define AM_API_RETURNING "returning" /* register, true: the executor of a lost coordinator, waiting at its gang
                                        barrier, comes back to its successor (a long poll as ever) */
/* register: which kind of registration this is. An executor from before
 * this field (none names it) is told by its fields as then: "adopt" set is
 * AM_API_REG_ADOPT, "returning" true AM_API_REG_RETURN, else
 * AM_API_REG_JOIN; the coordinator accepts that for one release. */
#define AM_API_REG_KIND "kind"
#define AM_API_REG_JOIN "join"     /* a task joins the attempt (a kept container's: the next one) */
#define AM_API_REG_ADOPT "adopt"   /* back from a lost coordinator, its process running (AM_API_ADOPT: its pid) */
#define AM_API_REG_RETURN "return" /* back from a lost coordinator, from its gang barrier */
#define AM_API_TENSORBOARD_UP "tensorboard" /* heartbeat: whether TB_PORT serves */
#define AM_API_PID "pid"               /* started */
#define AM_API_EXIT_CODE "exit_code"   /* finished */
/* The executor's own exit code when the task's command never ran for a
 * fault of the job's own (its --python_venv or --src_dir does not unpack,
 * its shell or command cannot be started): the coordinator tells it from a
 * user's exit code 122 by the task's never having said "started", names
 * the executor's error as the root cause (am/cause.h) and does not call
 * the node bad (am/exclusion.h). The error is also the task's stderr's
 * last line, where a backend's log reader finds it. */
#define AM_EXEC_EXIT_NOT_STARTED 122
#define AM_API_TIMED_OUT "timed_out"   /* finished: killed for its execution timeout */
#define AM_API_PEAK_MEMORY_BYTES "peak_memory_bytes" /* finished: the run's peak memory as the kernel counted it
                                                   (its cgroup's, or its largest process's), or its largest sample */
#define AM_API_STDERR_TAIL "stderr_tail" /* finished, on failure: the last lines of its stderr */
#define AM_API_ERROR_REPORT "error_report" /* finished, on failure: torch's error file (TORCHELASTIC_ERROR_FILE) */
#define AM_API_IDLE_MS "idle_ms"       /* heartbeat: ms since the user process last wrote output or touched
                                          TONY_PROGRESS_FILE (am/hang.h) */
#define AM_API_STACKS_TEXT "stacks"    /* stacks: what the dump printed, every process of the task */
#define AM_API_LOG_MATCHES "log_matches" /* finished: the log policies that matched, [{policy, action, stream, line}] */
#define AM_API_MATCH_POLICY "policy"   /* the policy as written ("fail:CUDA out of memory") */
#define AM_API_MATCH_ACTION "action"   /* "fail" | "exclude-node" */
#define AM_API_MATCH_STREAM "stream"   /* "stdout" | "stderr" */
#define AM_API_MATCH_LINE "line"       /* the first line it matched (cut to 512 bytes) */

/* Fields of the coordinator's answers. */
#define AM_API_STATUS "status"
#define AM_API_ERROR "error"
#define AM_API_COMMAND "command"             /* go: the user's command */
/* go: the framework's variables, name -> value: a string, or [prefix, suffix]
 * for a value that is prefix + cluster_spec's compact JSON text + suffix
 * (CLUSTER_SPEC, TF_CONFIG: the spec once per answer, not three times; the
 * executor splices it back; an executor from before reads such a value as
 * no text and refuses the answer). */
#define AM_API_ENV "env"
#define AM_API_CLUSTER_SPEC "cluster_spec"   /* go: role -> ["host:port", ...] */
/* go, when a value of env is spliced: the bytes of cluster_spec's compact
 * JSON text (json_dumps, JSON_COMPACT); an executor that reads the spec back
 * to another length refuses the answer rather than run with another env */
#define AM_API_CLUSTER_SPEC_BYTES "cluster_spec_bytes"
#define AM_API_EXECUTION_TIMEOUT_MS "execution_timeout_ms" /* go */
#define AM_API_DUMP_STACKS "dump_stacks"   /* heartbeat, true: a hang is diagnosed; send the stacks */
#define AM_API_LOG_POLICIES "log_policies"   /* go: tony.application.log-policies (conf/logpolicy.h) */
#define AM_API_NEXT_ATTEMPT "attempt"        /* next: the attempt to register for */
#define AM_API_NEXT_LOG_DIR "log_dir"        /* next: where that attempt's stdout/stderr go, when not the container's */

/* Words of "status". */
#define AM_API_GO "go"         /* register: the gang is complete, start the user's process */
#define AM_API_WAIT "wait"     /* register: poll again */
#define AM_API_OK "ok"
#define AM_API_ADOPTED "adopted" /* register with "adopt": taken back; heartbeats go on here */
#define AM_API_STALE "stale"   /* 409: the call names an attempt that is over */
#define AM_API_ENDING "ending" /* 409, register: the attempt is ending, no new task joins */
#define AM_API_STOP "stop"     /* 409, heartbeat; 200, watch: the attempt is ending, stop the task */
/* finished, register: the container is kept for an in-place restart; its
 * executor registers for the attempt named (a long poll, held until that
 * attempt starts) instead of exiting. Any other answer to finished: exit. */
#define AM_API_NEXT "next"

#endif
