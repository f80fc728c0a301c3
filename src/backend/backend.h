/* The backend seam: the only code that knows where containers come from (this
 * machine, YARN, later Slurm). The coordinator asks a backend to run a task's
 * executor in a container with some resources and an env, to stop it, and is
 * told when a container ends with its exit status and diagnostics. The client
 * side (staging, starting the coordinator, kill) is client.h's and the
 * executor's (inside a task's container) task.h's, each chosen by the same
 * name. */
#ifndef TONY_BACKEND_H
#define TONY_BACKEND_H

#include <event2/event.h>
#include <stdbool.h>

#include "backend/task.h" /* the executor's side (tony_backend_task_*) */
#include "common/env.h"
#include "common/error.h"
#include "common/reaper.h"
#include "common/strv.h"
#include "conf/conf.h"
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
/* The same, saying whose verdict an exit code is, for a failure's root cause:
 * "exit code 1 (the script's own error)", "exit code 127 (the command was
 * not found)"; other statuses as tony_exit_status_meaning. */
const char *tony_exit_status_explain(int exit_status, char *buf, size_t buflen);

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

/* Where a single-node job's command runs: in the coordinator's own
 * container, with a task's layout (its cwd holds the job's files, its
 * stdout and stderr go to a log dir beside the coordinator's log). */
typedef struct tony_am_place {
    char *work_dir;   /* the command's cwd (and HOME); the archives are unpacked there */
    char *log_dir;    /* its stdout and stderr */
    char *log_url;    /* people's link to log_dir (a YARN NodeManager's page), or NULL */
    char *container;  /* the coordinator's container id, or NULL */
    bool share_group; /* the command stays in the container's process group, the
                         only one its killer signals (YARN's NodeManager) */
} tony_am_place;

void tony_am_place_free(tony_am_place *p);

/* Called from the event loop when a container of ours ended. node is the
 * node it ran on, as the backend names nodes (and exclude_node takes them),
 * or NULL when it never got one. */
typedef void (*tony_backend_exit_cb)(void *ctx, const char *role, int index, int attempt, int exit_status,
                                     const char *diagnostics, const char *node);

/* Reading a task's output where the coordinator cannot open it as a file
 * (on a YARN node: through its NodeManager), without blocking the loop. */
typedef struct tony_log_request {
    const char *url;    /* the task's log link, as its executor reported it */
    const char *who;    /* "worker:0", for messages */
    const char *stream; /* "stdout" or "stderr" */
    long long offset;
    long long max;      /* the most bytes to return */
} tony_log_request;

/* Up to max bytes of the log from offset. */
typedef struct tony_log_chunk {
    const char *data;   /* valid during the callback only */
    size_t n;
    long long offset;
    long long size;     /* the file's length when it was read: more follows while offset + n < size */
    bool exists;        /* false: nothing written to it yet (size 0) */
} tony_log_chunk;

/* Called once per read that was not cancelled, from the loop (never from
 * within read_log): code 200 with a chunk, or an HTTP-like code (400: the
 * offset is past the end; 502: the node is unreachable or its answer
 * unusable) with a message for people and no chunk. */
typedef void (*tony_log_cb)(void *ctx, int code, const char *msg, const tony_log_chunk *chunk);

/* A read in flight, owned by the backend; the callback ends it. */
typedef struct tony_log_read tony_log_read;

/* What a coordinator that replaced a lost one learns from its backend
 * (ops->previous). */
typedef struct tony_backend_previous {
    int containers;           /* task containers of the lost coordinator still running (0: none) */
    long long submitted_wall_ms; /* when the job was submitted (wall clock), 0 if not known: the job's
                                    elapsed time and tony.application.timeout count from it */
} tony_backend_previous;

typedef struct tony_backend_ops {
    const char *name;
    /* The client reads the job dir the coordinator writes (both on this
     * machine): a client that missed the end finds the final state in
     * status.json, so the coordinator need not wait for one to ask. */
    bool shares_job_dir;
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
    /* Log links: 0 when link (what an executor reported as its log's
     * place, TONY_TASK_LOG_URL) is one read_log can read, else why not.
     * NULL, with read_log and cancel_log, where the coordinator opens its
     * tasks' log files itself (the local backend). */
    int (*check_log_url)(const tony_backend *b, const char *link, tony_error *err);
    /* Starts reading r (link checked above); *out names the read until its
     * callback runs. Fails at once, without a callback, when it cannot
     * even ask. */
    int (*read_log)(tony_backend *b, const tony_log_request *r, tony_log_cb cb, void *ctx, tony_log_read **out,
                    tony_error *err);
    /* Drops a read whose callback has not run yet; it never will. */
    void (*cancel_log)(tony_backend *b, tony_log_read *read);
    /* Prepares the place of a single-node job's command (see
     * tony_am_place); resources (TonY syntax, staged paths) are what every
     * container gets, put there unless the backend already did. */
    int (*prepare_am_command)(tony_backend *b, const char *resources, tony_am_place *out, tony_error *err);
    /* The single-node command in the coordinator's image (plan.am_image;
     * the local backend): appends to out the runtime's command line that
     * runs cmd in a container of it at place, passing env's names (the
     * runtime must get env), and returns 1; 0, out untouched, when cmd runs
     * as it is. NULL: always as it is. */
    int (*am_command_argv)(tony_backend *b, const tony_am_place *place, const tony_env *env, char *const *cmd,
                           tony_strv *out);
    /* That command's runtime process ended (wait_status): what may be left
     * of its container goes. NULL where nothing can be. */
    void (*am_command_ended)(tony_backend *b, int wait_status);
    /* Credentials a running task's executor should hold now, when they
     * changed after its container started (YARN: the job's token storage
     * after the coordinator refreshed its delegation tokens from a
     * keytab). When the backend's generation is newer than have (what the
     * executor says it holds; 0 at its start), appends them to out (bytes
     * for tony_backend_task_update_credentials) and returns the
     * generation; else returns 0. NULL where they never change. */
    long long (*task_credentials)(tony_backend *b, long long have, tony_buf *out);
    /* Bad-node exclusion (am/exclusion.h): keeps every container asked for
     * from now on off node (a name the exit cb gave), for the rest of the
     * job; containers running there are left alone. Never fails: a cluster
     * backend sends it with its next request (YARN: the allocate call's
     * blacklist additions). NULL where no node can be avoided (the local
     * backend: one machine). */
    void (*exclude_node)(tony_backend *b, const char *node);
    /* How many nodes the cluster has now (0: not known yet), which caps
     * exclusion. NULL: one (this machine). */
    int (*cluster_nodes)(const tony_backend *b);
    /* Coordinator loss (am/fsm.h's am_fsm_recover): what the backend knows
     * of the coordinator this one replaces (YARN: the RM hands its task
     * containers to the next AM attempt when the application keeps them).
     * NULL where a coordinator is never replaced. */
    void (*previous)(const tony_backend *b, tony_backend_previous *out);
    /* Takes one of them as role:index's container, asked for in attempt,
     * as the task's executor that came back names it (its id); an error
     * when it is none of them. Its end then comes through the exit cb. */
    int (*adopt)(tony_backend *b, const char *role, int index, int attempt, const char *container, tony_error *err);
    /* The recovery is over: the previous containers no task claimed are
     * stopped (their executors did not come back). */
    void (*adopt_end)(tony_backend *b);
    /* Kills whatever is left, synchronously; used at the very end. */
    void (*shutdown)(tony_backend *b);
    /* Also drops log reads still in flight, without their callbacks. */
    void (*free)(tony_backend *b);
} tony_backend_ops;

struct tony_backend {
    const tony_backend_ops *ops;
    tony_backend_exit_cb on_exit;
    void *cb_ctx;
};

/* What the coordinator gives a backend to start from. */
typedef struct tony_backend_opts {
    struct event_base *base;
    tony_reaper *reaper;      /* children of this process (the local backend's containers) */
    const char *job_dir;      /* the job's dir (local) or the AM container's work dir (yarn) */
    const tony_conf *conf;
    const char *api_host;     /* where the coordinator's API listens; a cluster backend */
    int api_port;             /* registers it there for clients to find */
    const char *tracking_url; /* the web UI, for a cluster's proxy */
    void *backend_data;       /* what the backend's own entry point handed the coordinator
                                 for it (YARN: the job's credentials), or NULL */
} tony_backend_opts;

/* Every backend's constructor: ready to launch, or NULL and err. */
typedef tony_backend *(*tony_backend_new_fn)(const tony_backend_opts *o, tony_error *err);

/* A backend's line in the table backend.c picks from by name. */
typedef struct tony_backend_entry {
    const char *name;
    tony_backend_new_fn create;
} tony_backend_entry;

/* The table, *n entries (for tests and messages). */
const tony_backend_entry *tony_backend_table(size_t *n);

/* The backend called name ("local", "yarn", "slurm"), ready to launch; a
 * cluster backend has registered with its resource manager. An unknown
 * name is an error listing the known ones. */
tony_backend *tony_backend_new(const char *name, const tony_backend_opts *o, tony_error *err);

/* What callers use instead of b->ops: each wrapper holds the policy for an
 * op a backend may leave NULL (said at each), so no caller checks for one. */
const char *tony_backend_name(const tony_backend *b);
bool tony_backend_shares_job_dir(const tony_backend *b);
int tony_backend_check_plan(tony_backend *b, const tony_plan *plan, tony_error *err);
int tony_backend_launch(tony_backend *b, const tony_launch *l, tony_error *err);
void tony_backend_stop(tony_backend *b, const char *role, int index, int attempt);
int tony_backend_active(const tony_backend *b);
/* NULL finish: nothing to tell. */
void tony_backend_finish(tony_backend *b, const char *final_status, const char *diagnostics, const char *url);
/* Whether the backend reads logs itself (check_log_url and read_log set). */
bool tony_backend_reads_logs(const tony_backend *b);
/* NULL check_log_url or read_log: an error saying this backend reads no
 * log link (the coordinator opens its tasks' files itself). */
int tony_backend_check_log_url(const tony_backend *b, const char *link, tony_error *err);
int tony_backend_read_log(tony_backend *b, const tony_log_request *r, tony_log_cb cb, void *ctx,
                          tony_log_read **out, tony_error *err);
void tony_backend_cancel_log(tony_backend *b, tony_log_read *read);
/* NULL prepare_am_command: an error saying the backend cannot run a
 * single-node job's command. */
int tony_backend_prepare_am_command(tony_backend *b, const char *resources, tony_am_place *out, tony_error *err);
/* NULL am_command_argv: 0, the command runs as it is. */
int tony_backend_am_command_argv(tony_backend *b, const tony_am_place *place, const tony_env *env, char *const *cmd,
                                 tony_strv *out);
/* NULL am_command_ended: nothing (no container can be left). */
void tony_backend_am_command_ended(tony_backend *b, int wait_status);
/* NULL task_credentials: 0 (they never change). */
long long tony_backend_newer_credentials(tony_backend *b, long long have, tony_buf *out);
/* NULL exclude_node: nothing (no node can be avoided). */
void tony_backend_exclude_node(tony_backend *b, const char *node);
/* NULL cluster_nodes: 1 (this machine). */
int tony_backend_cluster_nodes(const tony_backend *b);
/* NULL previous: *out zeroed (no coordinator is ever replaced). */
void tony_backend_previous_of(const tony_backend *b, tony_backend_previous *out);
/* NULL adopt: an error saying this backend hands no container back. */
int tony_backend_adopt(tony_backend *b, const char *role, int index, int attempt, const char *container,
                       tony_error *err);
/* NULL adopt_end: nothing. */
void tony_backend_adopt_end(tony_backend *b);
void tony_backend_shutdown(tony_backend *b);
void tony_backend_free(tony_backend *b);

/* The heartbeat's fields that carry a task's credentials (task_credentials
 * above; the executor installs them with
 * tony_backend_task_update_credentials): the executor sends the generation
 * it holds; an answer with newer ones carries the generation and
 * the bytes in base64. */
#define TONY_HEARTBEAT_CREDENTIALS_HAVE "credentials_generation"
#define TONY_HEARTBEAT_CREDENTIALS "credentials"
#define TONY_HEARTBEAT_CREDENTIALS_GENERATION "generation"
#define TONY_HEARTBEAT_CREDENTIALS_DATA "data"

#endif
