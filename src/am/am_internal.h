/* What the coordinator's own files (am.c, api.c) share; nothing outside am/
 * includes this. */
#ifndef TONY_AM_INTERNAL_H
#define TONY_AM_INTERNAL_H

#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>

#include "am/events.h"
#include "am/history.h"
#include "am/job.h"
#include "am/metrics.h"
#include "am/rendezvous.h"
#include "backend/backend.h"
#include "common/hostcheck.h"
#include "common/httpserver.h"
#include "common/reaper.h"
#include "conf/conf.h"
#include "conf/plan.h"
#include "runtime/runtime.h"

/* The longest an executor's registration poll is held before "wait". */
#define AM_REGISTER_POLL_MS 15000
/* The most bytes of a task's log one GET .../log answers with. */
#define AM_LOG_CHUNK (64 * 1024)

typedef struct am_waiter {
    struct evhttp_request *req;
    am_task *task;
    long long deadline_ms;
} am_waiter;

/* A log read by the backend in flight, with its client (logfetch.c). */
typedef struct am_logfetch am_logfetch;

typedef struct tony_am {
    struct event_base *base;
    tony_http_server *http;
    tony_host_check hosts; /* Host headers the API answers (DNS rebinding) */
    tony_reaper *reaper;
    tony_conf *conf;
    tony_plan plan;
    const tony_runtime *runtime;
    am_job job;
    tony_backend *backend;
    am_rendezvous *rendezvous; /* frameworks that rendezvous through us (Horovod) */
    char *job_dir;
    char *app_id;
    char *secret;
    char *self_exe;
    char *host; /* address executors reach us at */
    int port;
    char *url;
    long long started_ms, finished_ms;
    long long wall_offset_ms; /* wall clock minus monotonic clock, at start */
    long long ui_seen_ms;     /* the web UI last polled the job (0: never) */
    int retries_left;
    bool killed;          /* by the user: no restart */
    bool timed_out;       /* tony.application.timeout: no restart */
    bool done;            /* final status decided */
    am_final_status final_status;
    char *diagnostics;
    am_waiter *waiters;   /* executors waiting for the gang (long-poll) */
    size_t nwaiters, capwaiters;
    struct event *tick;
    struct event *exit_timer;
    struct event *sigterm, *sigint;
    /* Single-node mode: the user's command runs in the coordinator. */
    int single_pid;       /* while it runs */
    bool single_exited;
    int single_exit_code; /* once it exited: 0..255, 128+signal */
    tony_am_place single; /* where it runs and logs (empty before it starts) */
    char *shared_dir;     /* TONY_JOB_DIR for tasks; NULL when none is shared */
    bool on_cluster;      /* in a cluster's container (YARN), not on the user's machine */
    bool status_dirty;
    char *status_error;   /* why status.json could not be written (a full disk); NULL when it was */
    /* What the job did, for people (record.c): the event log, the history
     * files, and each task's metrics in this attempt (indexed like
     * job.tasks). */
    am_events *events;
    am_history *history;
    const tony_am_history_mirror *history_mirror; /* the backend's (HDFS), or NULL */
    tony_jhist_dirs history_remote;               /* the mirror's dirs, when used */
    am_metrics **metrics;
    size_t nmetrics;
    am_logfetch *logfetches; /* log reads by the backend in flight */
} tony_am;

/* Deadlines run on a monotonic clock, immune to clock steps; am_wall_ms
 * turns one of its readings into wall-clock ms for people. */
long long am_now_ms(void);
long long am_wall_clock_ms(void);
/* One offset, taken at start, so that a time reads the same in every answer
 * (the job's ETag depends on it). */
long long am_wall_ms(const tony_am *am, long long mono_ms);
/* The job as JSON: what GET /v1/job returns and status.json holds. */
json_t *am_job_json(const tony_am *am);
/* One task of it (the job JSON's "tasks" entries). */
json_t *am_task_json(const tony_am *am, const am_task *t);
/* Listens on bind_host, any free port; am->url names am->host. */
int am_api_start(tony_am *am, const char *bind_host, tony_error *err);
/* Answers every waiting executor whose gang is ready (or whose attempt ended). */
void am_api_release_waiters(tony_am *am, bool force);
void am_api_expire_waiters(tony_am *am, long long now_ms);
/* The body of a "go" answer for task t: command, env, timeout. */
json_t *am_task_go_json(tony_am *am, const am_task *t, tony_error *err);

/* Answers req with body (reference stolen). */
void am_api_reply_json(struct evhttp_request *req, int code, json_t *body);
/* One answer of GET .../log: n bytes of data at offset of a file of size. */
json_t *am_api_log_chunk_json(const char *role, int index, int attempt, const char *stream, long long offset,
                              const char *data, size_t n, long long size, bool exists);
/* 0 when the backend can read a task's log from log_url (what its executor
 * reported), else why not. */
int am_backend_reads_log_url(const tony_am *am, const char *log_url, tony_error *err);
/* Answers GET .../log for a task whose output the backend reads (log_url
 * passed am_backend_reads_log_url) without blocking the loop. */
void am_logfetch_start(tony_am *am, struct evhttp_request *req, const char *log_url, const char *role, int index,
                       int attempt, const char *stream, long long offset);
/* Drops the reads in flight, unanswered (before the backend and the HTTP
 * server go). */
void am_logfetch_free_all(tony_am *am);

/* Called by the API when something happened. */
void am_on_kill_request(tony_am *am);
void am_on_client_finished(tony_am *am);
void am_advance(tony_am *am);
const char *am_final_status_name(am_final_status s);

/* Recording (record.c): hooks the loop and the API call as things happen;
 * each writes the event log, the history file and the metrics. Failing to
 * record never disturbs the job. */
void am_record_start(tony_am *am);
void am_record_attempt(tony_am *am);
void am_record_task_requested(tony_am *am, const am_task *t);
void am_record_task_registered(tony_am *am, const am_task *t);
void am_record_task_started(tony_am *am, const am_task *t);
void am_record_task_exit(tony_am *am, const am_task *t);
void am_record_heartbeat_missed(tony_am *am, const am_task *t);
void am_record_restart(tony_am *am);
void am_record_kill(tony_am *am);
void am_record_finish(tony_am *am);
void am_record_free(tony_am *am);
/* The task's metrics in the current attempt. */
am_metrics *am_record_metrics(const tony_am *am, const am_task *t);
/* The executor's env for metrics: the interval, and nvidia-smi for tasks
 * with GPUs when tony.task.gpu-metrics.enabled. */
void am_record_task_env(const tony_am *am, const am_task *t, tony_env *env);
/* A task's requested resources: {"memory_bytes","vcores","gpus"}. */
json_t *am_record_requested_json(const am_task *t);

#endif
