/* The executor's life is a straight line with one loop at the end, so it is
 * written as plain blocking code: the only things it waits on are its
 * coordinator (HTTP with timeouts) and its children (the user's command,
 * once or tony.<role>.nproc-per-node times). With in-place
 * restarts (tony.application.restart-mode) the line repeats: after its
 * process ended the coordinator may keep the container, and the executor
 * registers again for the next attempt with a fresh port. */
#include "executor/executor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "common/amapi.h"
#include "common/apiauth.h"
#include "common/clock.h"
#include "common/env.h"
#include "common/fs.h"
#include "common/http.h"
#include "common/lastwords.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/readtoken.h"
#include "common/strv.h"
#include "common/taskenv.h"
#include "executor/activity.h"
#include "executor/life.h"
#include "executor/metrics.h"
#include "executor/stacks.h"
#include "executor/logcap.h"
#include "executor/outscan.h"
#include "executor/reap.h"
#include "executor/reply.h"
#include "runtime/runtime.h"
#include "common/unpack.h"

#define REGISTER_TIMEOUT_MS 25000
#define CALL_TIMEOUT_MS 5000
/* The coordinator holds a watch up to 15 s (am/watch.h); a bit more. */
#define WATCH_TIMEOUT_MS 20000
/* Exit code when the command ran longer than the execution timeout, as
 * timeout(1) does. */
#define EXIT_TIMED_OUT 124

static volatile sig_atomic_t stop_signal = 0;
static void on_stop_signal(int sig) { stop_signal = sig; }

typedef struct executor {
    char *am_url;             /* changes when a new coordinator adopts the task: read through am_url_copy */
    pthread_mutex_t url_lock; /* am_url, for the watch thread */
    long long recovery_ms;    /* tony.am.recovery-timeout-ms; 0: a lost coordinator ends the task */
    int may_come_back;        /* -1: not asked yet; 1: a new coordinator may take the task back (may_come_back) */
    bool returning;           /* registered with a coordinator that replaced a lost one: says so (amapi.h) */
    const char *secret;
    char role[64];
    int index;
    int attempt;           /* the attempt it works for now */
    int container_attempt; /* the attempt its container was asked for in */
    int next_attempt;      /* -1, or the attempt the coordinator keeps this container for */
    char *next_log_dir;    /* that attempt's log dir, when the coordinator names one */
    long long heartbeat_ms;
    long long metrics_ms;
    int max_missed;
    tony_metrics_sampler *sampler;
    char *log_dir;         /* where the user's stdout/stderr go in this attempt */
    char *job_dir;         /* the job dir the first log dir lies in (local backend); NULL in a cluster's container */
    const char *host;
    int port_fd, tb_fd;
    int port, tb_port;
    long long credentials; /* the generation of the credentials installed (0: the container's own) */
    /* Whether the coordinator of the moment has signed an answer since the
     * last call that got none (a refusal, a timeout, an unsigned answer):
     * until it has, no task data goes to it (coordinator_verified). Main
     * thread and watch thread: written through set_verified. */
    atomic_bool verified;
} executor;

static long long now_ms(void) { return tony_now_ms(); }

/* Credentials the coordinator refreshed (a heartbeat's answer, read by
 * reply.c), installed where the task's processes read them; a failure is
 * said and tried again with the next heartbeat. */
static void install_credentials(executor *x, const tony_exec_answer *a) {
    tony_error err;
    if (a->why) tony_warn("%s", a->why);
    if (!a->credentials) return;
    if (tony_backend_task_update_credentials(a->credentials_data.data, a->credentials_data.len, &err))
        tony_warn("cannot install the refreshed credentials: %s", err.msg);
    else {
        x->credentials = a->credentials;
        tony_info("installed the job's refreshed credentials (generation %lld)", a->credentials);
    }
}

static const char *need_env(const char *name, tony_error *err) {
    const char *v = getenv(name);
    if (!v || !*v) tony_err(err, "%s is not set: `tony executor` runs only inside a container started by tony", name);
    return v;
}

/* Binds an ephemeral port and keeps it bound until the user's process starts,
 * so nothing else takes it in between (TonY issue #365). */
static int reserve_port(int *fd_out, int *port_out, tony_error *err) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return tony_err(err, "socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY), .sin_port = 0};
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &len)) {
        close(fd);
        return tony_err(err, "cannot reserve a port: %s", strerror(errno));
    }
    *fd_out = fd;
    *port_out = ntohs(a.sin_port);
    return 0;
}

static bool accepts(const struct sockaddr *a, socklen_t len) {
    int fd = socket(a->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    int rc = connect(fd, a, len);
    close(fd);
    return rc == 0;
}

/* Whether something accepts connections on the task's TB_PORT: the link is
 * shown only once TensorBoard (the sidecar, or whatever the chief starts)
 * really serves there. Loopback, then the host the task registered (where a
 * notebook's Jupyter listens, for a coordinator on another node): both are
 * this machine's own addresses, which answer at once, so this never blocks. */
static bool port_listening(const char *host, int port) {
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port), .sin6_addr = in6addr_loopback};
    if (accepts((const struct sockaddr *)&a4, sizeof a4) || accepts((const struct sockaddr *)&a6, sizeof a6)) return true;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    if (getaddrinfo(host, ps, &hints, &res) != 0) return false;
    bool up = false;
    for (const struct addrinfo *r = res; r && !up; r = r->ai_next) up = accepts(r->ai_addr, r->ai_addrlen);
    freeaddrinfo(res);
    return up;
}

static char *am_url_copy(const executor *x) {
    /* the lock is the one thing a reader changes */
    pthread_mutex_t *lock = (pthread_mutex_t *)&x->url_lock;
    pthread_mutex_lock(lock);
    char *u = tony_strdup(x->am_url);
    pthread_mutex_unlock(lock);
    return u;
}

/* The flag is the one thing a caller with a const executor changes, as
 * the url lock is. */
static void set_verified(const executor *x, bool v) { atomic_store((atomic_bool *)&x->verified, v); }

/* Calls that carry what the task is and does (its liveness and idleness,
 * its metrics and stacks, its pid, its end with its stderr's last lines):
 * sent only to a coordinator that proved it holds the job's secret since
 * the last call that got no signed answer. Registering is how contact
 * starts, and the watch's long poll carries nothing. */
static bool carries_task_data(const char *verb) {
    return strcmp(verb, AM_API_HEARTBEAT) == 0 || strcmp(verb, AM_API_METRICS) == 0 ||
           strcmp(verb, AM_API_STACKS) == 0 || strcmp(verb, AM_API_STARTED) == 0 ||
           strcmp(verb, AM_API_FINISHED) == 0;
}

/* POSTs body (taken) to <am>/v1/tasks/<role>/<index>/<verb>: one signed
 * call, whose outcome sets or clears the coordinator's verification. */
static int post(const executor *x, const char *am, const char *verb, json_t *body, long timeout_ms,
                tony_http_response *r, tony_error *err) {
    char *url = tony_sprintf("%s" AM_API_TASKS "%s/%d/%s", am, x->role, x->index, verb);
    json_object_set_new(body, AM_API_ATTEMPT, json_integer(x->attempt));
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    int rc = tony_http_call("POST", url, x->secret, s, timeout_ms, r, err);
    free(url);
    free(s);
    set_verified(x, rc == 0);
    return rc;
}

/* A heartbeat that says nothing of the task (the credentials' generation
 * only, so that the answer is a heartbeat's): what an executor sends to a
 * coordinator it has not verified, instead of a heartbeat, or before
 * another call that carries task data. A process that took over a dead
 * coordinator's port gets this and nothing more from the task. */
static json_t *probe_body(const executor *x) {
    return json_pack("{s:I}", TONY_HEARTBEAT_CREDENTIALS_HAVE, (json_int_t)x->credentials);
}

/* POSTs body to <am>/v1/tasks/<role>/<index>/<verb>; returns the parsed
 * answer or NULL (err says why). *status gets the HTTP status. A call
 * that carries task data to a coordinator not verified yet is preceded by
 * a probe (a heartbeat is replaced by one), and not made unless the probe
 * got a signed answer. */
static json_t *call_at(const executor *x, const char *am, const char *verb, json_t *body, long timeout_ms,
                       long *status, tony_error *err) {
    tony_http_response r;
    int rc;
    if (carries_task_data(verb) && !atomic_load(&x->verified)) {
        bool heartbeat = strcmp(verb, AM_API_HEARTBEAT) == 0;
        if (heartbeat) json_decref(body);
        rc = post(x, am, AM_API_HEARTBEAT, probe_body(x), timeout_ms, &r, err);
        if (rc == 0 && !heartbeat) {
            tony_http_response_free(&r);
            rc = post(x, am, verb, body, timeout_ms, &r, err);
        } else if (!heartbeat) {
            json_decref(body);
        }
    } else {
        rc = post(x, am, verb, body, timeout_ms, &r, err);
    }
    *status = r.status;
    /* An answer the job's coordinator did not sign (common/apiauth.h) is
     * no answer: nothing it says is done, and the call counts as failed,
     * so that the executor goes on looking for its coordinator. */
    if (rc && r.unsigned_answer) tony_warn("ignoring an unsigned answer to %s: %s", verb, err->msg);
    if (rc) return NULL;
    json_t *j = json_loads(r.body, 0, NULL);
    if (!j) tony_err(err, "the coordinator answered %s with HTTP %ld and no JSON", verb, r.status);
    const char *refused = json_string_value(json_object_get(j, TONY_APIAUTH_REFUSED));
    if (j && r.status == 403 && refused) {
        /* its clock corrected, and still refused: a failed call too */
        const char *why = json_string_value(json_object_get(j, AM_API_ERROR));
        tony_err(err, "the coordinator refused %s (%s): %s", verb, refused, why ? why : "?");
        json_decref(j);
        j = NULL;
    }
    tony_http_response_free(&r);
    return j;
}

/* The same to the coordinator of the moment. */
static json_t *call(const executor *x, const char *verb, json_t *body, long timeout_ms, long *status, tony_error *err) {
    char *am = am_url_copy(x);
    json_t *j = call_at(x, am, verb, body, timeout_ms, status, err);
    free(am);
    return j;
}

/* Calls verb (at am, or the coordinator of the moment when NULL) and
 * reads its answer into *a (reply.h; freed by the caller in every case).
 * Returns the answer's kind, or -1 (err says why) when none came or it
 * broke the contract: such an answer is said and taken for none. */
static int ask(const executor *x, const char *am, const char *verb, json_t *body, long timeout_ms,
               tony_exec_answer *a, long *status, tony_error *err) {
    json_t *j = am ? call_at(x, am, verb, body, timeout_ms, status, err) : call(x, verb, body, timeout_ms, status, err);
    tony_exec_held held = {.attempt = x->attempt, .credentials = x->credentials, .job_dir = x->job_dir};
    tony_exec_reply_read(verb, *status, j, &held, a);
    json_decref(j);
    if (!j) return -1;
    if (a->kind != EXEC_ANS_INVALID) return (int)a->kind;
    tony_err(err, "the coordinator's answer to %s is not one to act on: %s", verb, a->why);
    tony_warn("%s", err->msg);
    return -1;
}

/* Takes a "next" answer: the attempt to register for, and its log dir. */
static void take_next(executor *x, tony_exec_answer *a) {
    x->next_attempt = a->next_attempt;
    free(x->next_log_dir);
    x->next_log_dir = a->next_log_dir;
    a->next_log_dir = NULL;
}

/* Appends a line to the task's log file `name` in its log dir. */
static void log_mark(const executor *x, const char *name, const char *line) {
    char *path = tony_path_join(x->log_dir, name);
    FILE *f = fopen(path, "a");
    if (f) {
        fputs(line, f);
        fclose(f);
    }
    free(path);
}

/* Works for the attempt the coordinator named. Its output goes to that
 * attempt's own log dir where the coordinator names one (the job dir's
 * layout); in a container's log dir (YARN's, which its NodeManager serves)
 * the files go on, and a line marks where each attempt starts. */
static void move_to_next(executor *x) {
    tony_info("the coordinator keeps this container: registering for attempt %d", x->next_attempt);
    x->attempt = x->next_attempt;
    x->next_attempt = -1;
    tony_error err;
    if (x->next_log_dir && tony_mkdir_p(x->next_log_dir, 0700, &err) == 0) {
        free(x->log_dir);
        x->log_dir = x->next_log_dir;
        x->next_log_dir = NULL;
        return;
    }
    if (x->next_log_dir) tony_warn("%s; attempt %d's output goes on in %s", err.msg, x->attempt, x->log_dir);
    char *line = tony_sprintf("==== tony: attempt %d starts in this container ====\n", x->attempt);
    log_mark(x, "stdout", line);
    log_mark(x, "stderr", line);
    free(line);
}

/* What registering says: its kind (amapi.h's AM_API_REG_*), where the
 * task's port is, its logs, its container. */
static json_t *registration(const executor *x, const char *kind) {
    json_t *body = json_pack("{s:s,s:s,s:i}", AM_API_REG_KIND, kind, AM_API_HOST, x->host, AM_API_PORT, x->port);
    /* As TonY's registerTensorBoardUrl: the coordinator shows the link. */
    if (x->tb_port > 0) json_object_set_new(body, AM_API_TB_PORT, json_integer(x->tb_port));
    json_object_set_new(body, AM_API_LOG_DIR, json_string(x->log_dir));
    json_object_set_new(body, AM_API_CONTAINER_ATTEMPT, json_integer(x->container_attempt));
    const char *container = getenv(TASKENV_CONTAINER_ID);
    if (container && *container) json_object_set_new(body, AM_API_CONTAINER, json_string(container));
    /* Where people (and the coordinator) read this task's output while
     * and after it runs, when the backend has such a place (a YARN
     * NodeManager's web UI). */
    const char *link = getenv(TASKENV_TASK_LOG_URL);
    if (link && *link) json_object_set_new(body, AM_API_LOG_URL, json_string(link));
    return body;
}

static bool may_come_back(executor *x);

/* Coordinator loss at the gang barrier: the coordinator the job's
 * coordinator file names now, when it is another than the one this
 * executor registers with, becomes the one it registers with. */
static bool follow_named_coordinator(executor *x) {
    char *url = NULL, *old = am_url_copy(x);
    tony_error err;
    int rc = tony_backend_task_find_coordinator(&url, &err);
    bool moved = rc == 0 && strcmp(url, old) != 0;
    if (rc < 0) tony_info("looking for the next coordinator: %s", err.msg);
    if (moved) {
        tony_warn("the job's coordinator is now at %s (it replaces %s): registering there", url, old);
        pthread_mutex_lock(&x->url_lock);
        free(x->am_url);
        x->am_url = url;
        url = NULL;
        pthread_mutex_unlock(&x->url_lock);
    }
    free(url);
    free(old);
    return moved;
}

/* Polls registration until the gang is complete. Returns the "go" answer.
 * Should the coordinator be lost meanwhile (calls failing where the
 * backend can start another, tony.am.recovery-timeout-ms), the executor
 * looks for its successor and registers there as "returning" (the same
 * port, so the cluster spec is the one the lost coordinator would have
 * handed out). */
static int register_task(executor *x, tony_exec_answer *go, tony_error *err) {
    exec_life life;
    exec_life_init(&life, x->recovery_ms, x->max_missed + 1);
    while (!stop_signal) {
        long status;
        json_t *body = registration(x, x->returning ? AM_API_REG_RETURN : AM_API_REG_JOIN);
        /* for a coordinator from before AM_API_REG_KIND */
        if (x->returning) json_object_set_new(body, AM_API_RETURNING, json_true());
        tony_exec_answer a;
        int kind = ask(x, NULL, AM_API_REGISTER, body, REGISTER_TIMEOUT_MS, &a, &status, err);
        if (kind < 0) {
            tony_exec_answer_free(&a);
            exec_act act;
            exec_life_call_failed(&life, now_ms(), may_come_back(x), &act);
            if (act.lost)
                tony_warn("the coordinator does not answer (%s): waiting at the gang barrier for its successor, "
                          "up to %lld s (tony.am.recovery-timeout-ms)", err->msg, x->recovery_ms / 1000);
            if (act.exit && act.why == EXEC_WHY_NO_SUCCESSOR)
                return tony_err(err, "no coordinator took this task back within %lld s (tony.am.recovery-timeout-ms)",
                                x->recovery_ms / 1000);
            if (act.exit) return tony_err_wrap(err, "cannot register with the coordinator at %s", x->am_url);
            if (act.search && follow_named_coordinator(x)) {
                exec_life_found(&life, EXEC_FOUND_MOVED, now_ms(), &act);
                x->returning = true;
                continue;
            }
            tony_sleep_ms(x->heartbeat_ms);
            continue;
        }
        exec_life_answered(&life);
        if (kind == EXEC_ANS_GO) {
            *go = a;
            return 0;
        }
        if (kind == EXEC_ANS_NEXT) {
            /* the attempt ended at the barrier; the container is kept */
            take_next(x, &a);
            move_to_next(x);
        } else if (kind != EXEC_ANS_WAIT) {
            tony_err(err, "the coordinator refused registration (HTTP %ld): %s", status, a.error ? a.error : "?");
            tony_exec_answer_free(&a);
            return -1;
        }
        tony_exec_answer_free(&a);
    }
    tony_err(err, "stopped by signal %d while waiting for the gang", (int)stop_signal);
    return -1;
}

/* Measures the task and tells the coordinator; a lost sample is not worth
 * more than a debug line (the next one comes soon). */
static void send_metrics(const executor *x) {
    tony_sample s;
    tony_metrics_sampler_take(x->sampler, &s);
    long status;
    tony_error err;
    json_t *ans = call(x, AM_API_METRICS, tony_sample_to_json(&s), CALL_TIMEOUT_MS, &status, &err);
    if (!ans) tony_debug("metrics not sent: %s", err.msg);
    json_decref(ans);
}

/* The user's processes get their own group, unless the backend says its
 * container is killed through the container's group (YARN's NodeManager
 * signals that group only): a process that left it would outlive it. */
static bool share_container_group(void) { return getenv(TASKENV_SHARE_PROCESS_GROUP) != NULL; }

/* The user's processes: one, or tony.<role>.nproc-per-node of them, local
 * rank i in pid[i]. Each leads a process group of its own (tony_proc_spawn
 * makes every child a leader; none can join another's group), so a signal
 * to the task goes to each group: one stop path still reaches them all. */
typedef struct task_procs {
    pid_t *pid;
    bool *live; /* not reaped yet */
    int n;
} task_procs;

static void kill_group(const task_procs *p, int sig) {
    if (share_container_group()) {
        tony_proc_kill_group_but_me(getpgrp(), sig);
        return;
    }
    for (int i = 0; i < p->n; i++)
        if (p->pid[i] > 0) kill(-p->pid[i], sig);
}

/* TORCHELASTIC_ERROR_FILE in the log dir, unless the user set their own:
 * torch's @record writes the exception there. The last attempt's file is
 * removed so that it is never taken for this one's. */
static void set_error_file(const executor *x, tony_env *env) {
    if (tony_env_get(env, TASKENV_TORCHELASTIC_ERROR_FILE) || getenv(TASKENV_TORCHELASTIC_ERROR_FILE)) return;
    char *path = tony_path_join(x->log_dir, TONY_TORCH_ERROR_FILE);
    unlink(path);
    tony_env_set(env, TASKENV_TORCHELASTIC_ERROR_FILE, path);
    free(path);
}

/* The failed process's last words for its root cause: the tail of its
 * stderr and torch's error file (the coordinator shows them). */
static void add_last_words(const executor *x, json_t *fin) {
    char *errp = tony_path_join(x->log_dir, "stderr");
    const char *own = getenv(TASKENV_TORCHELASTIC_ERROR_FILE);
    char *errfile = own && *own ? tony_strdup(own) : tony_path_join(x->log_dir, TONY_TORCH_ERROR_FILE);
    char *tail = tony_lastwords_tail(errp, TONY_LASTWORDS_LINES, TONY_LASTWORDS_BYTES);
    char *report = tony_lastwords_torch_error(errfile, TONY_LASTWORDS_LINES, TONY_LASTWORDS_BYTES);
    if (tail) json_object_set_new(fin, AM_API_STDERR_TAIL, json_string(tail));
    if (report) json_object_set_new(fin, AM_API_ERROR_REPORT, json_string(report));
    free(tail);
    free(report);
    free(errfile);
    free(errp);
}

/* Hang diagnosis (am/hang.h): the coordinator asked for the stacks of every
 * process of the task; they go to it once per attempt. */
static void send_stacks(const executor *x, const task_procs *procs) {
    tony_info("the coordinator diagnoses a hang: dumping the stacks of the task's processes");
    /* no heartbeats meanwhile: the dump ends well before the coordinator
     * would take the silence for a lost executor (fsm.c) */
    long long expiry = x->heartbeat_ms * (x->max_missed < 3 ? 3 : x->max_missed);
    long long budget = expiry / 2 < TONY_STACKS_BUDGET_MS ? expiry / 2 : TONY_STACKS_BUDGET_MS;
    char *text =
        tony_stacks_dump(procs->pid, (size_t)procs->n, share_container_group(), getenv(TASKENV_PY_SPY), budget);
    long status;
    tony_error err;
    json_t *ans = call(x, AM_API_STACKS, json_pack("{s:s}", AM_API_STACKS_TEXT, text), CALL_TIMEOUT_MS, &status, &err);
    if (!ans || status != 200) tony_warn("the stacks did not reach the coordinator: %s", ans ? "refused" : err.msg);
    json_decref(ans);
    free(text);
}

/* The log policies the coordinator sent with "go", compiled; a value it
 * accepted at submit compiles here too (the same code), so a failure is
 * only said. */
static tony_outscan *start_outscan(const tony_exec_answer *go, tony_logpolicies *lp, const char *out,
                                   const char *errp) {
    tony_error err;
    if (tony_logpolicies_parse(go->log_policies, lp, &err)) {
        tony_warn("log policies off: %s", err.msg);
        return NULL;
    }
    if (lp->len == 0) return NULL;
    tony_outscan *s = tony_outscan_new(lp);
    tony_outscan_add_file(s, out, "stdout");
    tony_outscan_add_file(s, errp, "stderr");
    return s;
}

/* The first line each policy matched, for the coordinator. */
static json_t *outscan_matches(const tony_outscan *s, const tony_logpolicies *lp) {
    json_t *a = json_array();
    for (size_t i = 0; s && i < lp->len; i++) {
        const tony_outscan_match *m = tony_outscan_matched(s, i);
        if (!m) continue;
        json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:s}", AM_API_MATCH_POLICY, lp->items[i].text,
                                           AM_API_MATCH_ACTION, tony_logpolicy_action_name(lp->items[i].action),
                                           AM_API_MATCH_STREAM, m->stream, AM_API_MATCH_LINE, m->line));
    }
    return a;
}

/* The watch: a thread keeps a long poll open with the coordinator, which
 * answers "stop" the moment the attempt ends, so that the process is
 * stopped then, not at the next heartbeat (an in-place restart waits for
 * it). Heartbeats still say the same, should the watch fail. */
typedef struct watch {
    const executor *x;
    pthread_t thread;
    atomic_bool stop;  /* the coordinator said stop */
    atomic_bool quit;  /* the process ended: poll no more */
    atomic_bool ended; /* the thread is done (a coordinator lost: a new one gets a new watch) */
} watch;

static void *watch_main(void *arg) {
    watch *w = arg;
    while (!atomic_load(&w->quit)) {
        long status;
        tony_error err;
        json_t *ans = call(w->x, AM_API_WATCH, json_object(), WATCH_TIMEOUT_MS, &status, &err);
        /* not ask(): the credentials it would read change in the main thread */
        tony_exec_held held = {.attempt = w->x->attempt};
        tony_exec_answer a;
        tony_exec_kind kind = tony_exec_reply_read(AM_API_WATCH, status, ans, &held, &a);
        if (ans && kind == EXEC_ANS_INVALID) tony_warn("ignoring the coordinator's answer to %s: %s", AM_API_WATCH, a.why);
        tony_exec_answer_free(&a);
        json_decref(ans);
        bool stop = kind == EXEC_ANS_STOP || kind == EXEC_ANS_STALE, wait = kind == EXEC_ANS_WAIT;
        if (stop) {
            atomic_store(&w->stop, true);
            break;
        }
        /* anything else (an old coordinator, a failed call): heartbeats do */
        if (!wait) break;
    }
    atomic_store(&w->ended, true);
    return NULL;
}

/* ---- Coordinator loss: the task keeps running while the executor looks
 * for the next coordinator (backend.h, tony_backend_task_find_coordinator)
 * and comes back to it. */

/* One look: a coordinator other than the lost one is named, and takes the
 * task back with its process (pid) running. */
static exec_found come_back(executor *x, pid_t pid) {
    char *url = NULL, *old = am_url_copy(x);
    tony_error err;
    int rc = tony_backend_task_find_coordinator(&url, &err);
    exec_found res = EXEC_FOUND_NONE;
    if (rc < 0) tony_info("looking for the next coordinator: %s", err.msg);
    if (rc == 0 && strcmp(url, old) != 0) {
        json_t *body = registration(x, AM_API_REG_ADOPT);
        json_object_set_new(body, AM_API_ADOPT, json_integer(pid));
        long status;
        tony_exec_answer a;
        int kind = ask(x, url, AM_API_REGISTER, body, CALL_TIMEOUT_MS, &a, &status, &err);
        /* the lost coordinator was restarting the attempt: on to the next one */
        bool adopted = kind == EXEC_ANS_ADOPTED, next = kind == EXEC_ANS_NEXT;
        if (next) take_next(x, &a);
        if (adopted || next) {
            if (adopted) tony_warn("the coordinator at %s took this task back (its process runs on); it replaces %s", url, old);
            else tony_warn("the coordinator at %s (it replaces %s) goes on with attempt %d: stopping this one's process",
                           url, old, x->next_attempt);
            pthread_mutex_lock(&x->url_lock);
            free(x->am_url);
            x->am_url = url;
            url = NULL;
            pthread_mutex_unlock(&x->url_lock);
            x->returning = true;
            res = adopted ? EXEC_FOUND_ADOPTED : EXEC_FOUND_NEXT;
        } else if (kind == EXEC_ANS_REFUSED && status == 409) {
            tony_error_log("the coordinator at %s does not take this task back: %s", url, a.error ? a.error : "?");
            res = EXEC_FOUND_REFUSED;
        } else {
            tony_info("the coordinator at %s does not answer yet: %s", url, kind >= 0 ? "an unknown answer" : err.msg);
        }
        tony_exec_answer_free(&a);
    }
    free(url);
    free(old);
    return res;
}

/* Where the coordinator may come back (the backend can start another one,
 * and tony.am.recovery-timeout-ms allows it); asked once. */
static bool may_come_back(executor *x) {
    if (x->may_come_back < 0) {
        char *url = NULL;
        tony_error err;
        x->may_come_back = x->recovery_ms > 0 && tony_backend_task_find_coordinator(&url, &err) != 1;
        free(url);
    }
    return x->may_come_back == 1;
}

/* The process ended while its coordinator does not answer: its end is
 * reported to that one should it answer again, else to the next one once
 * that took the task back, for tony.am.recovery-timeout-ms at the most.
 * The answer, or NULL. */
static json_t *report_end_elsewhere(executor *x, pid_t pid, json_t *fin, long *status) {
    tony_warn("the coordinator does not answer: the task's end waits for it or its successor, up to %lld s "
              "(tony.am.recovery-timeout-ms)", x->recovery_ms / 1000);
    long long until = now_ms() + x->recovery_ms;
    while (!stop_signal && now_ms() < until) {
        exec_found back = come_back(x, pid);
        if (back == EXEC_FOUND_REFUSED || back == EXEC_FOUND_NEXT) return NULL; /* NEXT: x->next_attempt says where */
        tony_error err;
        json_incref(fin);
        json_t *ans = call(x, AM_API_FINISHED, fin, CALL_TIMEOUT_MS, status, &err);
        if (ans) return ans;
        tony_sleep_ms(EXEC_LIFE_SEARCH_EVERY_MS);
    }
    if (!stop_signal) tony_error_log("no coordinator heard of the task's end within %lld s", x->recovery_ms / 1000);
    return NULL;
}

static void start_watch(watch *w, bool *watching) {
    atomic_store(&w->ended, false);
    *watching = pthread_create(&w->thread, NULL, watch_main, w) == 0;
    if (!*watching) tony_warn("cannot start the watch thread; the coordinator's stop comes with heartbeats only");
}

/* One heartbeat: how the task is, and the answer acted on (refreshed
 * credentials, a hang's stacks). Returns the answer's kind (a stop is the
 * caller's), or -1 when the coordinator did not answer (herr says why). */
static int heartbeat(executor *x, const task_procs *procs, tony_activity *activity, long long now,
                     bool *stacks_sent, tony_error *herr) {
    json_t *hb = json_object();
    if (x->tb_port > 0) json_object_set_new(hb, AM_API_TENSORBOARD_UP, json_boolean(port_listening(x->host, x->tb_port)));
    json_object_set_new(hb, TONY_HEARTBEAT_CREDENTIALS_HAVE, json_integer(x->credentials));
    json_object_set_new(hb, AM_API_IDLE_MS, json_integer(tony_activity_idle_ms(activity, now)));
    long status;
    tony_exec_answer a;
    int kind = ask(x, NULL, AM_API_HEARTBEAT, hb, CALL_TIMEOUT_MS, &a, &status, herr);
    if (kind == EXEC_ANS_OK) install_credentials(x, &a);
    if (kind == EXEC_ANS_OK && a.dump_stacks && !*stacks_sent) {
        send_stacks(x, procs);
        *stacks_sent = true;
    }
    tony_exec_answer_free(&a);
    return kind;
}

/* The answer to "finished": "next" keeps the container for an in-place
 * restart (x->next_attempt); anything else, exit. */
static void after_finished(executor *x, const json_t *ans, long status) {
    tony_exec_held held = {.attempt = x->attempt, .credentials = x->credentials, .job_dir = x->job_dir};
    tony_exec_answer a;
    tony_exec_kind kind = tony_exec_reply_read(AM_API_FINISHED, status, ans, &held, &a);
    if (kind == EXEC_ANS_NEXT) take_next(x, &a);
    else if (kind == EXEC_ANS_INVALID) tony_warn("ignoring the coordinator's answer to %s: %s; exiting", AM_API_FINISHED, a.why);
    tony_exec_answer_free(&a);
}

/* Runs the user's command and watches it; returns its exit code. */
/* How many processes the kernel killed for the memory limit of the cgroup
 * this process is in (cgroup v1's memory.oom_control, v2's
 * memory.events, as a container sees its own); -1 when unknown. */
static long long cgroup_oom_kills(void) {
    static const char *const files[] = {"/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char *text = NULL;
        if (tony_read_file(files[i], &text, NULL, NULL)) continue;
        const char *line = strstr(text, "oom_kill ");
        long long n = line ? strtoll(line + strlen("oom_kill "), NULL, 10) : -1;
        free(text);
        if (n >= 0) return n;
    }
    return -1;
}

/* In an image (TASKENV_IN_IMAGE) the task's memory limit is its
 * container's, enforced by the kernel: the user process it kills ends by
 * SIGKILL without a word. The executor says why in the task's stderr,
 * where its last words (the job's root cause) and `tony logs` show it. */
static void note_out_of_memory(const executor *x, int wait_status, const char *errp) {
    if (!getenv(TASKENV_IN_IMAGE) || !WIFSIGNALED(wait_status) || WTERMSIG(wait_status) != SIGKILL) return;
    if (cgroup_oom_kills() <= 0) return;
    const char *mb = getenv(TASKENV_CONTAINER_MEMORY_MB);
    FILE *f = fopen(errp, "a");
    if (!f) return;
    fprintf(f, "tony: %s:%d ran out of memory: the kernel killed it at its container's limit of %s MB; raise "
               "tony.%s.memory if the task needs more\n",
            x->role, x->index, mb ? mb : "?", x->role);
    fclose(f);
}

/* The one stop path: what the state machine (life.h) decided, said in the
 * log and done to the user's process group. detail: why the last call
 * failed, for the log. */
static void carry_out(const executor *x, const exec_life *life, const task_procs *procs, const exec_act *a,
                      const char *detail) {
    if (a->lost)
        tony_warn("the coordinator does not answer (%s): the task runs on while its next coordinator is looked for, "
                  "up to %lld s (tony.am.recovery-timeout-ms)", detail ? detail : "?", x->recovery_ms / 1000);
    if (!a->signal) return;
    switch (a->why) {
    case EXEC_WHY_COORDINATOR: tony_warn("the coordinator says this attempt is ending; stopping"); break;
    case EXEC_WHY_STALE: tony_warn("the coordinator says this attempt is over; stopping"); break;
    case EXEC_WHY_SIGNAL: tony_info("signal %d: stopping the user's process group", (int)stop_signal); break;
    case EXEC_WHY_TIMEOUT:
        tony_error_log("the command ran longer than its execution timeout (%lld ms); killing it", life->timeout_ms);
        break;
    case EXEC_WHY_MISSED:
        tony_error_log("%d heartbeats in a row failed (%s); stopping the task", life->failed, detail ? detail : "?");
        break;
    case EXEC_WHY_NO_SUCCESSOR:
        tony_error_log("no coordinator took this task back within %lld s; stopping the task", x->recovery_ms / 1000);
        break;
    case EXEC_WHY_SIBLING:
        tony_error_log("a process of the task failed (exit code %d); stopping its %d other process(es)", life->code,
                       life->nproc - life->ended);
        break;
    default: /* the grace's end; come_back said the rest */
        break;
    }
    kill_group(procs, a->signal);
}

/* Starts the task's processes: local rank i gets the task's env made its
 * own (runtime.h), all of them the task's stdout and stderr (appended, so
 * that none overwrites another's lines, as torchrun's workers share its
 * output). On a failure the ones started are killed and reaped. */
static int spawn_all(const tony_env *all, char *const argv[], const char *out, const char *errp, task_procs *p,
                     tony_error *err) {
    for (int i = 0; i < p->n; i++) {
        tony_env own = {0};
        tony_env_merge(&own, all);
        tony_runtime_process_env(&own, i);
        /* On this machine (the local backend) the logs are private; a YARN
         * container's log dir is read by its NodeManager. */
        tony_spawn s = {.argv = argv, .envp = own.kv.items, .stdout_path = out, .stderr_path = errp,
                        .keep_group = share_container_group(), .private_output = getenv(TASKENV_PRIVATE_LOGS) != NULL,
                        .die_with_parent = true};
        int rc = tony_proc_spawn(&s, &p->pid[i], err);
        tony_env_free(&own);
        if (rc == 0) {
            p->live[i] = true;
            continue;
        }
        if (p->n > 1) tony_err_wrap(err, "local rank %d of %d", i, p->n);
        p->n = i; /* the ones started */
        kill_group(p, SIGKILL);
        for (int k = 0; k < i; k++) waitpid(p->pid[k], NULL, 0);
        return -1;
    }
    return 0;
}

static int run_user_process(executor *x, const tony_exec_answer *go, tony_error *err) {
    const char *command = go->command; /* never empty (reply.c) */
    tony_env env = {0};
    tony_env_merge(&env, &go->env);
    if (x->tb_port > 0) tony_env_setf(&env, TASKENV_TB_PORT, "%d", x->tb_port);
    set_error_file(x, &env);
    /* values too long for exec, sent by file, and the framework's Python
     * files (jax's cluster), in the container's own dir (runtime.h) */
    char *pydir = tony_abspath(".tony-python");
    tony_error pyerr;
    if (tony_runtime_prepare_env(pydir, &env, &pyerr)) tony_warn("%s; going on without it", pyerr.msg);
    free(pydir);
    /* hang diagnosis: a file the task may touch to show progress without output */
    char *progress = tony_abspath(".tony-progress");
    tony_env_set(&env, TASKENV_PROGRESS_FILE, progress);
    tony_env_setf(&env, TASKENV_ATTEMPT, "%d", x->attempt);
    /* The read token is the user's process's (a notebook's token, its own
     * job's reads), derived here from the secret rather than sent: a
     * scheduler writes a container's env where others read it (YARN's
     * launch_container.sh, served by the NodeManager; Slurm's launch RPC). */
    char *read_token = tony_read_token(x->secret);
    tony_env_set(&env, TASKENV_READ_TOKEN, read_token);
    free(read_token);
    /* The user's process must not see the job's secret, and YARN's
     * MALLOC_ARENA_MAX slows TensorFlow down (TonY #346). */
    tony_env all = {0};
    tony_env_build_envp(&env, &all.kv);
    tony_env_free(&env);
    tony_env_unset(&all, TASKENV_SECRET);
    tony_env_unset(&all, "MALLOC_ARENA_MAX");
    tony_backend_task_user_env(&all);
    char *out = tony_sprintf("%s/stdout", x->log_dir), *errp = tony_sprintf("%s/stderr", x->log_dir);
    /* bash where there is one, as TonY runs commands; else /bin/sh, all
     * that an image or a bare host needs (docs/images.md) */
    const char *shell = tony_proc_command_shell();
    if (strcmp(shell, "bash") != 0) tony_info("bash is not on PATH here: the command runs with %s", shell);
    char *argv[] = {(char *)shell, "-c", (char *)command, NULL};
    task_procs procs = {.n = tony_runtime_nproc(&all)};
    procs.pid = tony_xcalloc((size_t)procs.n, sizeof *procs.pid);
    procs.live = tony_xcalloc((size_t)procs.n, sizeof *procs.live);
    int rc = spawn_all(&all, argv, out, errp, &procs, err);
    pid_t pid = procs.pid[0]; /* local rank 0: the task's pid for the coordinator (started, adoption) */
    /* The children have their copies until exec closes them; the ports are
     * free for the user's processes from here on. */
    close(x->port_fd);
    if (x->tb_fd >= 0) close(x->tb_fd);
    x->port_fd = x->tb_fd = -1;
    tony_env_free(&all);
    tony_logpolicies policies = {0};
    tony_outscan *scan = rc ? NULL : start_outscan(go, &policies, out, errp);
    if (rc) {
        free(out), free(errp), free(progress);
        free(procs.pid), free(procs.live);
        return -1;
    }
    if (procs.n == 1) tony_info("started `%s` with %s as pid %d", command, shell, (int)pid);
    else tony_info("started %d processes of `%s` with %s (tony.%s.nproc-per-node), local rank 0 as pid %d", procs.n,
                   command, shell, x->role, (int)pid);
    tony_logcaps caps;
    tony_logcaps_start(&caps, out, errp, getenv(TASKENV_LOG_MAX_SIZE));

    long status;
    tony_error herr;
    json_decref(call(x, AM_API_STARTED, json_pack("{s:i}", AM_API_PID, (int)pid), CALL_TIMEOUT_MS, &status, &herr));
    /* A first sample at once, so that even a short task has one (the
     * sampler counts every descendant of the executor: all the processes). */
    tony_metrics_sampler_set_group(x->sampler, pid);
    send_metrics(x);
    const char *watched[] = {out, errp, progress};
    tony_activity activity;
    tony_activity_init(&activity, watched, 3, now_ms());
    bool stacks_sent = false;
    watch wt = {.x = x};
    bool watching;
    start_watch(&wt, &watching);

    exec_life life;
    exec_life_init(&life, x->recovery_ms, x->max_missed);
    long long start = now_ms(), next_hb = start + x->heartbeat_ms, next_metrics = start + x->metrics_ms;
    exec_life_started(&life, procs.n, go->timeout_ms, start);
    int wait_status = 0, code = -1;
    exec_act act;
    for (;;) {
        tony_reap_orphans(procs.pid, (size_t)procs.n);
        long long now = now_ms();
        for (int i = 0; i < procs.n; i++) {
            int st = 0;
            if (!procs.live[i] || waitpid(procs.pid[i], &st, WNOHANG) != procs.pid[i]) continue;
            procs.live[i] = false;
            int c = tony_proc_exit_code(st);
            if (procs.n > 1) tony_info("local rank %d (pid %d) exited with code %d", i, (int)procs.pid[i], c);
            exec_life_exited(&life, c, now, &act);
            if (act.failure) wait_status = st; /* the task's end is this one's */
            carry_out(x, &life, &procs, &act, NULL);
        }
        if (exec_life_done(&life)) break;
        if (watching && atomic_load(&wt.stop)) {
            exec_life_stop(&life, EXEC_WHY_COORDINATOR, now, &act);
            carry_out(x, &life, &procs, &act, NULL);
        }
        if (stop_signal) {
            exec_life_stop(&life, EXEC_WHY_SIGNAL, now, &act);
            carry_out(x, &life, &procs, &act, NULL);
        }
        exec_life_tick(&life, now, watching && atomic_load(&wt.ended), &act);
        carry_out(x, &life, &procs, &act, NULL);
        /* the watch on the lost coordinator ended (its call failed or timed
         * out): a new one on the coordinator that took the task back */
        if (act.rewatch) {
            pthread_join(wt.thread, NULL);
            start_watch(&wt, &watching);
        }
        if (now >= next_hb) {
            next_hb = now + x->heartbeat_ms;
            int kind = heartbeat(x, &procs, &activity, now, &stacks_sent, &herr);
            if (kind == EXEC_ANS_STOP || kind == EXEC_ANS_STALE) {
                /* "stop": the coordinator is finishing; "stale": a newer attempt runs */
                exec_life_stop(&life, kind == EXEC_ANS_STOP ? EXEC_WHY_COORDINATOR : EXEC_WHY_STALE, now, &act);
                carry_out(x, &life, &procs, &act, NULL);
            }
            if (kind >= 0) {
                exec_life_answered(&life);
            } else {
                /* Coordinator loss: where another may take the task back,
                 * the process runs on, for a bounded time, while it is
                 * looked for; elsewhere a coordinator that is gone must not
                 * leave the process running unwatched. */
                exec_life_call_failed(&life, now, may_come_back(x), &act);
                carry_out(x, &life, &procs, &act, herr.msg);
                if (act.search) {
                    exec_life_found(&life, come_back(x, pid), now, &act);
                    carry_out(x, &life, &procs, &act, NULL);
                }
            }
        }
        if (scan) tony_outscan_poll(scan, 0);
        tony_logcaps_poll(&caps);
        if (now >= next_metrics && !exec_life_stopping(&life)) {
            send_metrics(x);
            next_metrics = now_ms() + x->metrics_ms;
        }
        tony_sleep_ms(50);
    }
    bool timed_out = life.timed_out;
    kill_group(&procs, SIGKILL); /* leftovers of the user's groups */
    /* and what escaped them (reap.h); briefly when the backend stops the
     * container, whose own grace (3 s locally) is running out */
    int left = tony_reap_descendants(stop_signal ? EXEC_LIFE_GRACE_MS / 4 : EXEC_LIFE_GRACE_MS);
    if (left) tony_info("ended %d process(es) the task left behind", left);
    free(procs.pid), free(procs.live);
    tony_activity_free(&activity);
    if (!timed_out) note_out_of_memory(x, wait_status, errp);
    free(out), free(errp), free(progress);
    code = timed_out ? EXIT_TIMED_OUT : life.code;
    tony_info("user process exited with code %d", code);
    /* what the process wrote last (the traceback) is read before the report */
    if (scan) tony_outscan_poll(scan, 1);
    tony_logcaps_poll(&caps);
    tony_logcaps_free(&caps);
    json_t *fin = json_pack("{s:i,s:b,s:o}", AM_API_EXIT_CODE, code, AM_API_TIMED_OUT, timed_out, AM_API_LOG_MATCHES,
                            outscan_matches(scan, &policies));
    /* its peak memory, now that all of it is reaped (the samples were seconds apart) */
    const char *peak_from;
    long long peak = tony_metrics_sampler_peak(x->sampler, &peak_from);
    if (peak >= 0) json_object_set_new(fin, AM_API_PEAK_MEMORY_BYTES, json_integer(peak));
    tony_info("peak memory %lld MiB, from %s", peak < 0 ? 0 : peak >> 20, peak_from);
    if (code != 0) add_last_words(x, fin);
    json_incref(fin);
    json_t *ans = call(x, AM_API_FINISHED, fin, CALL_TIMEOUT_MS, &status, &herr);
    if (!ans && !stop_signal && may_come_back(x)) ans = report_end_elsewhere(x, pid, fin, &status);
    json_decref(fin);
    /* The coordinator answers the watch once it has the result (one that
     * is gone refuses it at once; one that hangs lets it time out). */
    atomic_store(&wt.quit, true);
    if (watching) pthread_join(wt.thread, NULL);
    if (ans && !stop_signal) after_finished(x, ans, status);
    json_decref(ans);
    tony_outscan_free(scan);
    tony_logpolicies_free(&policies);
    return code;
}

/* The task's command never ran, for a fault of the job's own (amapi.h,
 * AM_EXEC_EXIT_NOT_STARTED): said as the last line of its stderr too,
 * where the coordinator reads a task's last words on every backend, and
 * `tony logs` shows them. */
static void say_not_started(const executor *x, const char *why) {
    if (!x->log_dir) return;
    char *path = tony_path_join(x->log_dir, "stderr");
    /* private as the user's process would have made it (proc.h) */
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, getenv(TASKENV_PRIVATE_LOGS) ? 0600 : 0644);
    if (fd >= 0) {
        dprintf(fd, "tony: %s:%d could not start its command: %s (see executor.log)\n", x->role, x->index, why);
        close(fd);
    }
    free(path);
}

int tony_executor_main(void) {
    tony_error err = {{0}};
    executor x = {.port_fd = -1, .tb_fd = -1, .next_attempt = -1, .may_come_back = -1, .url_lock = PTHREAD_MUTEX_INITIALIZER};
    const char *task = getenv(TASKENV_TASK_ID);
    char who[128];
    snprintf(who, sizeof who, "executor %s", task ? task : "?");
    tony_log_init(who, NULL);
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    /* What Slurm's srun forwards to its task when asked to stop it (it ends
     * the step outright on SIGTERM): the same request. */
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (tony_reap_become_subreaper()) tony_warn("not a subreaper: processes the task detaches may outlive it");

    int code = -1;
    bool not_started = false; /* a failure of the job's own inputs before the command ran */
    const char *attempt, *log_dir;
    char *secret = NULL;
    if (!getenv(TASKENV_SECRET) && tony_backend_task_secret(&secret, &err)) goto fail;
    x.secret = secret;
    const char *am_url;
    if (!(am_url = need_env(TASKENV_AM_URL, &err)) || (!x.secret && !(x.secret = need_env(TASKENV_SECRET, &err))) ||
        !need_env(TASKENV_TASK_ID, &err) || !(attempt = need_env(TASKENV_ATTEMPT, &err)) ||
        !(log_dir = need_env(TASKENV_LOG_DIR, &err)))
        goto fail;
    x.log_dir = tony_strdup(log_dir);
    x.am_url = tony_strdup(am_url);
    if (sscanf(task, "%63[a-z]:%d", x.role, &x.index) != 2) {
        tony_err(&err, TASKENV_TASK_ID "=%s is not <role>:<index>", task);
        goto fail;
    }
    x.attempt = x.container_attempt = atoi(attempt);
    /* where the coordinator may name later attempts' log dirs (reply.h) */
    x.job_dir = tony_exec_job_dir_of(log_dir, x.attempt, x.role, x.index);
    long long v;
    x.heartbeat_ms = tony_parse_ll(getenv(TASKENV_HEARTBEAT_INTERVAL_MS), &v) && v > 0 ? v : 1000;
    x.max_missed = tony_parse_ll(getenv(TASKENV_MAX_MISSED_HEARTBEATS), &v) && v > 0 ? (int)v : 25;
    x.metrics_ms = tony_parse_ll(getenv(TASKENV_METRICS_INTERVAL_MS), &v) && v > 0 ? v : 5000;
    x.recovery_ms = tony_parse_ll(getenv(TASKENV_AM_RECOVERY_MS), &v) && v > 0 ? v : 0;
    /* TONY_GPU_METRICS_SMI is set only for tasks that asked for GPUs with
     * tony.task.gpu-metrics.enabled. */
    x.sampler = tony_metrics_sampler_new(getpid(), getenv(TASKENV_CUDA_VISIBLE_DEVICES), getenv(TASKENV_GPU_METRICS_SMI));
    /* A backend that does not say where the task is (Slurm's steps land on
     * a node srun picks) leaves it to the node's own name. */
    char node[256] = "127.0.0.1";
    if (!getenv(TASKENV_NM_HOST) && gethostname(node, sizeof node - 1) != 0) snprintf(node, sizeof node, "127.0.0.1");
    x.host = getenv(TASKENV_NM_HOST) ? getenv(TASKENV_NM_HOST) : node;

    const char *app_id = getenv(TASKENV_JOB_ID);
    if (app_id && tony_unpack_job_files(".", app_id, &err)) {
        not_started = true;
        goto fail;
    }
    for (;;) {
        /* a fresh port every attempt: the last one's process had it */
        if (reserve_port(&x.port_fd, &x.port, &err)) goto fail;
        if (getenv(TASKENV_RESERVE_TB_PORT) && reserve_port(&x.tb_fd, &x.tb_port, &err)) goto fail;
        tony_info("reserved port %d%s; registering with %s for attempt %d", x.port,
                  x.tb_port ? " and a TensorBoard port" : "", x.am_url, x.attempt);
        tony_exec_answer go;
        if (register_task(&x, &go, &err)) {
            /* a kept container whose next attempt never came: the job is over */
            if (code >= 0 && !stop_signal) {
                tony_info("no next attempt for this container (%s); exiting with the last exit code", err.msg);
                break;
            }
            goto fail;
        }
        code = run_user_process(&x, &go, &err);
        tony_exec_answer_free(&go);
        if (code < 0) {
            not_started = true; /* its processes could not be started */
            goto fail;
        }
        if (x.next_attempt < 0) break;
        move_to_next(&x);
    }
    if (x.port_fd >= 0) close(x.port_fd);
    if (x.tb_fd >= 0) close(x.tb_fd);
    tony_metrics_sampler_free(x.sampler);
    free(secret);
    free(x.log_dir);
    free(x.next_log_dir);
    free(x.job_dir);
    free(x.am_url);
    return code;
fail:
    tony_error_log("%s", err.msg);
    if (not_started && !stop_signal) {
        say_not_started(&x, err.msg);
        code = AM_EXEC_EXIT_NOT_STARTED;
    } else {
        code = stop_signal ? 128 + (int)stop_signal : 1;
    }
    tony_metrics_sampler_free(x.sampler);
    free(secret);
    free(x.log_dir);
    free(x.next_log_dir);
    free(x.job_dir);
    free(x.am_url);
    if (x.port_fd >= 0) close(x.port_fd);
    if (x.tb_fd >= 0) close(x.tb_fd);
    return code;
}
