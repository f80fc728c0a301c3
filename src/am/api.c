/* The coordinator's HTTP+JSON API (/v1). Executors register, heartbeat and
 * report; clients and the web UI read the job and ask to kill it. Every call
 * that changes state must carry the job's secret. Registration is a long
 * poll: the answer comes the moment the gang is complete. */
#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/time.h>
#include <time.h>

#include "am/am_internal.h"
#include "am/webui.h"
#include "common/fs.h"
#include "common/http.h"
#include "common/jobdir.h"
#include "common/log.h"
#include "common/sizing.h"
#include "common/strv.h"

long long am_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long am_wall_clock_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

long long am_wall_ms(const tony_am *am, long long mono_ms) {
    return mono_ms + am->wall_offset_ms;
}

static const char *reason_phrase(int code) {
    switch (code) {
    case 200: return "OK";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 421: return "Misdirected Request";
    default: return "Error";
    }
}

/* One line of text (JSON or words) as the whole answer, never cached. */
static void send_line(struct evhttp_request *req, int code, const char *type, const char *s) {
    struct evbuffer *buf = evbuffer_new();
    evbuffer_add(buf, s, strlen(s));
    evbuffer_add(buf, "\n", 1);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-store");
    evhttp_send_reply(req, code, reason_phrase(code), buf);
    evbuffer_free(buf);
}

static void send_json_text(struct evhttp_request *req, int code, const char *s) {
    send_line(req, code, "application/json", s);
}

static void reply_json(struct evhttp_request *req, int code, json_t *body) {
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    send_json_text(req, code, s);
    free(s);
}

void am_api_reply_json(struct evhttp_request *req, int code, json_t *body) { reply_json(req, code, body); }

static void reply_text(struct evhttp_request *req, int code, const char *text) {
    send_line(req, code, "text/plain; charset=utf-8", text);
}

static void reply_error(struct evhttp_request *req, int code, const char *msg) {
    reply_json(req, code, json_pack("{s:s}", "error", msg));
}

const char *am_final_status_name(am_final_status s) {
    switch (s) {
    case AM_FINAL_SUCCEEDED: return "SUCCEEDED";
    case AM_FINAL_FAILED: return "FAILED";
    case AM_FINAL_KILLED: return "KILLED";
    default: return "UNDEFINED";
    }
}

static json_t *run_json(int attempt, am_task_state state, int exit_status, bool started) {
    json_t *o = json_pack("{s:i,s:s,s:b}", "attempt", attempt, "state", am_task_state_name(state), "started", started);
    if (exit_status != TONY_EXIT_INVALID) {
        char meaning[160];
        json_object_set_new(o, "exit_status", json_integer(exit_status));
        json_object_set_new(o, "exit_meaning", json_string(tony_exit_status_meaning(exit_status, meaning, sizeof meaning)));
    }
    return o;
}

/* The attempts the task got a container in (earlier ones, then this one),
 * and how many times its process started: the job restarts as a whole,
 * so a task's restarts are the job's attempts it ran in. */
static void task_runs_json(const tony_am *am, const am_task *t, json_t *o) {
    json_t *runs = json_array();
    int starts = 0;
    for (size_t i = 0; i < t->nruns; i++) {
        const am_task_run *r = &t->runs[i];
        json_t *rj = run_json(r->attempt, r->state, r->exit_status, r->started);
        if (r->log_url) json_object_set_new(rj, "log_url", json_string(r->log_url));
        json_array_append_new(runs, rj);
        starts += r->started;
    }
    if (t->state != AM_TASK_NEW) {
        json_array_append_new(runs, run_json(am->job.attempt, t->state, t->exit_status, t->started_ms != 0));
        starts += t->started_ms != 0;
    }
    json_object_set_new(o, "starts", json_integer(starts));
    json_object_set_new(o, "runs", runs);
}

json_t *am_task_json(const tony_am *am, const am_task *t) {
    char meaning[160];
    json_t *o = json_pack("{s:s,s:i,s:s,s:i}", "role", t->role->name, "index", t->index, "state",
                          am_task_state_name(t->state), "attempt", am->job.attempt);
    if (t->host) {
        json_object_set_new(o, "host", json_string(t->host));
        json_object_set_new(o, "port", json_integer(t->port));
    }
    if (t->pid) json_object_set_new(o, "pid", json_integer(t->pid));
    if (t->exited || am_task_done(t)) {
        json_object_set_new(o, "exit_status", json_integer(t->exit_status));
        json_object_set_new(o, "exit_meaning",
                            json_string(tony_exit_status_meaning(t->exit_status, meaning, sizeof meaning)));
    }
    if (t->diagnostics) json_object_set_new(o, "diagnostics", json_string(t->diagnostics));
    json_object_set_new(o, "kind", json_string(tony_role_kind_name(t->role->kind)));
    task_runs_json(am, t, o);
    if (tony_plan_is_chief(&am->plan, t->role->name, t->index)) json_object_set_new(o, "chief", json_true());
    /* The executor says where its logs are (a container's log dir on its
     * node); before it registers, the local layout is the best guess. */
    char *dir = t->log_dir ? tony_strdup(t->log_dir)
                           : tony_jobdir_task_dir(am->job_dir, am->job.attempt, t->role->name, t->index);
    char *out = tony_sprintf("%s/stdout", dir), *err = tony_sprintf("%s/stderr", dir);
    if (t->container) json_object_set_new(o, "container", json_string(t->container));
    if (t->log_url) json_object_set_new(o, "log_url", json_string(t->log_url));
    json_object_set_new(o, "log_dir", json_string(dir));
    json_object_set_new(o, "stdout", json_string(out));
    json_object_set_new(o, "stderr", json_string(err));
    free(dir), free(out), free(err);
    if (t->registered_ms) json_object_set_new(o, "registered_ms", json_integer(am_wall_ms(am, t->registered_ms)));
    if (t->started_ms) json_object_set_new(o, "started_ms", json_integer(am_wall_ms(am, t->started_ms)));
    if (t->finished_ms) json_object_set_new(o, "finished_ms", json_integer(am_wall_ms(am, t->finished_ms)));
    json_object_set_new(o, "requested", am_record_requested_json(t));
    am_metrics *m = am_record_metrics(am, t);
    if (m) {
        json_object_set_new(o, "metrics", am_metrics_aggregates_json(m));
        json_object_set_new(o, "last_sample", am_metrics_last_json(m));
    }
    return o;
}

/* The task serving TensorBoard now: the one that reserved TB_PORT (the
 * sidecar, else the chief), running, with something listening there. */
static const am_task *serving_tensorboard(const tony_am *am) {
    for (size_t i = 0; i < am->job.ntasks; i++) {
        const am_task *t = &am->job.tasks[i];
        if (t->tb_port > 0 && t->host && t->state == AM_TASK_RUNNING && t->tb_listening) return t;
    }
    return NULL;
}

/* A single-node job's command as the job's one task, am:0, with a task's
 * log fields, so that readers (tony logs, the page) find its output where
 * they find any task's. */
static json_t *single_node_task_json(const tony_am *am) {
    const tony_am_place *at = &am->single;
    json_t *t = json_pack("{s:s,s:i,s:s,s:i,s:s}", "role", "am", "index", 0, "state",
                          am->done ? am_final_status_name(am->final_status) : "RUNNING", "attempt", 0, "host", am->host);
    if (am->single_exited) {
        char meaning[160];
        json_object_set_new(t, "exit_status", json_integer(am->single_exit_code));
        json_object_set_new(t, "exit_meaning",
                            json_string(tony_exit_status_meaning(am->single_exit_code, meaning, sizeof meaning)));
    }
    if (at->container) json_object_set_new(t, "container", json_string(at->container));
    if (at->log_url) json_object_set_new(t, "log_url", json_string(at->log_url));
    json_object_set_new(t, "log_dir", json_string(at->log_dir));
    json_object_set_new(t, "stdout", json_sprintf("%s/stdout", at->log_dir));
    json_object_set_new(t, "stderr", json_sprintf("%s/stderr", at->log_dir));
    return t;
}

json_t *am_job_json(const tony_am *am) {
    const char *state = am->done                         ? "FINISHED"
                        : am->plan.single_node           ? "RUNNING"
                        : am->job.attempt_over           ? "FINISHING"
                        : am_job_count_registered(&am->job) < am_job_count_requested(&am->job) ? "REGISTERING"
                                                                                              : "RUNNING";
    json_t *o = json_pack("{s:s,s:s,s:s,s:i,s:s,s:s,s:s,s:I}", "app_id", am->app_id, "state", state, "final_status",
                          am_final_status_name(am->final_status), "attempt", am->job.attempt, "backend",
                          am->backend ? am->backend->ops->name : "local", "framework", am->plan.framework, "job_dir",
                          am->job_dir, "started_ms", am_wall_ms(am, am->started_ms));
    json_object_set_new(o, "retries_left", json_integer(am->retries_left));
    json_object_set_new(o, "single_node", json_boolean(am->plan.single_node));
    if (am->url) json_object_set_new(o, "url", json_string(am->url));
    if (am->finished_ms) json_object_set_new(o, "finished_ms", json_integer(am_wall_ms(am, am->finished_ms)));
    const char *diag = am->diagnostics ? am->diagnostics : am->job.attempt_diagnostics;
    if (diag) json_object_set_new(o, "diagnostics", json_string(diag));
    if (am->status_error) json_object_set_new(o, "status_error", json_string(am->status_error));
    json_t *tasks = json_array();
    for (size_t i = 0; i < am->job.ntasks; i++) json_array_append_new(tasks, am_task_json(am, &am->job.tasks[i]));
    if (am->plan.single_node && am->single.log_dir) json_array_append_new(tasks, single_node_task_json(am));
    json_object_set_new(o, "tasks", tasks);
    const am_task *tb = serving_tensorboard(am);
    if (tb) {
        json_object_set_new(o, "tensorboard_url", json_sprintf("http://%s:%d/", tb->host, tb->tb_port));
        json_object_set_new(o, "tensorboard_task", json_sprintf("%s:%d", tb->role->name, tb->index));
    }
    /* Right-sizing once the job is over; the numbers are final then. */
    json_object_set_new(o, "advice", am->done ? tony_sizing_advice(tasks) : json_array());
    if (am->history) {
        /* Where a reader finds it: the HDFS copy on YARN, else the local dir. */
        char *where = am_history_where(am->history);
        const char *file = strrchr(am_history_file(am->history), '/');
        json_object_set_new(o, "history_dir", json_string(where));
        json_object_set_new(o, "history_file", json_sprintf("%s/%s", where, file ? file + 1 : am_history_file(am->history)));
        free(where);
    }
    return o;
}

/* GET /v1/job[?metrics=0], with an ETag over the body: a browser polling
 * every second gets a bodiless 304 while nothing changed, however many tasks
 * the job has. Every metrics sample changes a task's "metrics" and
 * "last_sample", so on a job of hundreds of tasks something changes every
 * second; metrics=0 leaves them out, and the page asks for them only as
 * often as executors sample. */
static void reply_job(tony_am *am, struct evhttp_request *req, const char *query) {
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    bool with_metrics = true;
    if (query && evhttp_parse_query_str(query, &q) == 0) {
        const char *m = evhttp_find_header(&q, "metrics");
        if (m && strcmp(m, "0") != 0 && strcmp(m, "1") != 0) {
            evhttp_clear_headers(&q);
            reply_error(req, 400, "metrics must be 0 (leave each task's metrics and last_sample out) or 1");
            return;
        }
        with_metrics = !m || strcmp(m, "1") == 0;
    }
    evhttp_clear_headers(&q);
    if (evhttp_find_header(in, "X-Tony-UI")) am->ui_seen_ms = am_now_ms();
    json_t *job = am_job_json(am);
    if (!with_metrics) {
        size_t i;
        json_t *t;
        json_array_foreach(json_object_get(job, "tasks"), i, t) {
            json_object_del(t, "metrics");
            json_object_del(t, "last_sample");
        }
    }
    char *s = json_dumps(job, JSON_COMPACT);
    json_decref(job);
    char etag[24];
    snprintf(etag, sizeof etag, "\"%016llx\"", (unsigned long long)tony_hash64(s, strlen(s)));
    evhttp_add_header(evhttp_request_get_output_headers(req), "ETag", etag);
    const char *inm = evhttp_find_header(in, "If-None-Match");
    if (inm && strcmp(inm, etag) == 0) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-store");
        evhttp_send_reply(req, 304, "Not Modified", NULL);
    } else {
        send_json_text(req, 200, s);
    }
    free(s);
}

static json_t *cluster_spec(const tony_am *am) {
    json_t *spec = json_object();
    for (size_t r = 0; r < am->plan.nroles; r++) {
        const tony_role *role = &am->plan.roles[r];
        json_t *arr = json_array();
        for (int i = 0; i < role->instances; i++) {
            const am_task *t = am_job_task((am_job *)&am->job, role->name, i);
            if (!t || !t->host) continue;
            json_array_append_new(arr, json_sprintf("%s:%d", t->host, t->port));
        }
        json_object_set_new(spec, role->name, arr);
    }
    return spec;
}

json_t *am_task_go_json(tony_am *am, const am_task *t, tony_error *err) {
    json_t *spec = cluster_spec(am);
    tony_env env = {0};
    tony_env_merge(&env, &am->plan.shell_env);
    tony_runtime_task rt = {&am->plan, t->role->name, t->index, am->plan.gang ? spec : NULL, NULL, 0};
    if (am->rendezvous) {
        rt.rendezvous_host = am->host;
        rt.rendezvous_port = am_rendezvous_port(am->rendezvous);
        json_t *scopes = am->runtime->rendezvous_scopes(spec);
        am_rendezvous_set_scopes(am->rendezvous, scopes);
        json_decref(scopes);
    }
    if (tony_runtime_build_env(am->runtime, &rt, &env, err)) {
        json_decref(spec);
        tony_env_free(&env);
        return NULL;
    }
    json_t *envj = json_object();
    for (size_t i = 0; i < env.kv.len; i++) {
        const char *kv = env.kv.items[i], *eq = strchr(kv, '=');
        char *k = strndup(kv, (size_t)(eq - kv));
        json_object_set_new(envj, k, json_string(eq + 1));
        free(k);
    }
    tony_env_free(&env);
    return json_pack("{s:s,s:s,s:o,s:o,s:I}", "status", "go", "command", t->role->command, "env", envj,
                     "cluster_spec", spec, "execution_timeout_ms", am->plan.execution_timeout_ms);
}

static void answer_waiter(tony_am *am, am_waiter *w) {
    tony_error err;
    if (am->job.attempt_over) {
        reply_json(w->req, 409, json_pack("{s:s,s:s}", "status", "ending", "error", "the attempt is ending"));
        return;
    }
    json_t *go = am_task_go_json(am, w->task, &err);
    if (!go) {
        am_job_end_attempt(&am->job, AM_FINAL_FAILED, "cannot build the env of %s:%d: %s", w->task->role->name,
                           w->task->index, err.msg);
        reply_error(w->req, 500, err.msg);
        am_advance(am);
        return;
    }
    reply_json(w->req, 200, go);
}

void am_api_release_waiters(tony_am *am, bool force) {
    if (!force && !am->job.attempt_over && am->plan.gang && !am_job_gang_ready(&am->job)) return;
    /* Detach the list first: answering may re-enter (am_advance). */
    am_waiter *ws = am->waiters;
    size_t n = am->nwaiters;
    am->waiters = NULL;
    am->nwaiters = am->capwaiters = 0;
    if (n && !am->job.attempt_over) tony_info("gang complete: %zu task(s) may start", n);
    for (size_t i = 0; i < n; i++) answer_waiter(am, &ws[i]);
    free(ws);
}

void am_api_expire_waiters(tony_am *am, long long now_ms) {
    for (size_t i = 0; i < am->nwaiters;) {
        if (am->waiters[i].deadline_ms > now_ms) {
            i++;
            continue;
        }
        reply_json(am->waiters[i].req, 200, json_pack("{s:s}", "status", "wait"));
        am->waiters[i] = am->waiters[--am->nwaiters];
    }
}

static void add_waiter(tony_am *am, struct evhttp_request *req, am_task *t) {
    /* One outstanding poll per task: a retried poll replaces the old one. */
    for (size_t i = 0; i < am->nwaiters; i++) {
        if (am->waiters[i].task != t) continue;
        reply_json(am->waiters[i].req, 200, json_pack("{s:s}", "status", "wait"));
        am->waiters[i].req = req;
        am->waiters[i].deadline_ms = am_now_ms() + AM_REGISTER_POLL_MS;
        return;
    }
    if (am->nwaiters == am->capwaiters) {
        am->capwaiters = am->capwaiters ? am->capwaiters * 2 : 16;
        am->waiters = tony_xrealloc(am->waiters, am->capwaiters * sizeof *am->waiters);
    }
    am->waiters[am->nwaiters++] = (am_waiter){req, t, am_now_ms() + AM_REGISTER_POLL_MS};
}

static json_t *read_body(struct evhttp_request *req) {
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(in);
    if (n > 1 << 20) return NULL;
    char *s = tony_xmalloc(n + 1);
    evbuffer_remove(in, s, n);
    s[n] = '\0';
    json_t *j = json_loads(n ? s : "{}", 0, NULL);
    free(s);
    if (j && !json_is_object(j)) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static bool secret_ok(tony_am *am, struct evhttp_request *req) {
    const char *s = evhttp_find_header(evhttp_request_get_input_headers(req), TONY_SECRET_HEADER);
    if (!s || strlen(s) != strlen(am->secret)) return false;
    /* constant-time compare: the secret guards every state change */
    unsigned char diff = 0;
    for (size_t i = 0; s[i]; i++) diff |= (unsigned char)(s[i] ^ am->secret[i]);
    return diff == 0;
}

/* A task's log dir for attempt, or NULL when the job has no such task: the
 * path is built from validated numbers and a role of the plan, or is the
 * one its executor reported, never from the request's text. In the
 * current attempt a reported dir that is on this disk wins (a YARN
 * container on this node); else the job dir's layout (the local backend). */
static char *task_log_dir(const tony_am *am, const char *role, int index, int attempt) {
    if (am->plan.single_node) {
        if (strcmp(role, "am") != 0 || index != 0 || !am->single.log_dir) return NULL;
        return tony_strdup(am->single.log_dir);
    }
    const am_task *t = am_job_task((am_job *)&am->job, role, index);
    if (!t) return NULL;
    if (attempt == am->job.attempt && t->log_dir && tony_is_dir(t->log_dir)) return tony_strdup(t->log_dir);
    return tony_jobdir_task_dir(am->job_dir, attempt, role, index);
}

json_t *am_api_log_chunk_json(const char *role, int index, int attempt, const char *stream, long long offset,
                              const char *data, size_t n, long long size, bool exists) {
    /* Output cut mid-character waits for its next bytes; what is not
     * UTF-8 at all is shown as U+FFFD rather than refused. */
    size_t used;
    char *text = tony_utf8_sanitize(data, n, &used);
    json_t *o = json_pack("{s:s,s:i,s:i,s:s,s:I,s:I,s:I,s:s}", "role", role, "index", index, "attempt", attempt,
                          "stream", stream, "offset", offset, "next", offset + (long long)used, "size", size, "data",
                          text);
    json_object_set_new(o, "exists", json_boolean(exists));
    free(text);
    return o;
}

/* Parses a query value as a non-negative integer no larger than max. */
static bool query_uint(const char *v, long long max, long long *out) {
    if (!v || !*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 18) return false;
    if (!tony_parse_ll(v, out)) return false;
    return *out <= max;
}

/* GET /v1/tasks/<role>/<index>/log?stream=stdout|stderr&offset=N&attempt=A:
 * up to AM_LOG_CHUNK bytes of the task's output from offset, as text, and
 * the offset to ask for next. The web UI tails a task with it. */
static void handle_log(tony_am *am, struct evhttp_request *req, const char *role, int index) {
    struct evkeyvalq q;
    const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    /* A %00 would be decoded into the C string and cut it short unseen. */
    if ((query && strstr(query, "%00")) || evhttp_parse_query_str(query ? query : "", &q) != 0) {
        reply_error(req, 400, "malformed query string");
        return;
    }
    const char *stream = "stdout", *bad = NULL;
    long long offset = 0, attempt = am->job.attempt;
    for (struct evkeyval *kv = q.tqh_first; kv && !bad; kv = kv->next.tqe_next) {
        if (strcmp(kv->key, "stream") == 0) {
            if (strcmp(kv->value, "stdout") != 0 && strcmp(kv->value, "stderr") != 0)
                bad = "stream must be stdout or stderr";
            else stream = kv->value[3] == 'o' ? "stdout" : "stderr";
        } else if (strcmp(kv->key, "offset") == 0) {
            if (!query_uint(kv->value, LLONG_MAX / 2, &offset)) bad = "offset must be a byte offset (0 or more)";
        } else if (strcmp(kv->key, "attempt") == 0) {
            if (!query_uint(kv->value, am->job.attempt, &attempt))
                bad = "attempt must be a number from 0 to the job's current attempt";
        } else {
            bad = "unknown parameter; use stream, offset and attempt";
        }
    }
    /* A task whose backend reads its output (on YARN: from its node's
     * NodeManager, wherever that node is). */
    const am_task *rt = bad || am->plan.single_node ? NULL : am_job_task(&am->job, role, index);
    const char *link = !rt ? NULL : attempt == am->job.attempt ? rt->log_url : NULL;
    for (size_t i = 0; rt && !link && i < rt->nruns; i++)
        if (rt->runs[i].attempt == attempt) link = rt->runs[i].log_url; /* an earlier attempt's container */
    if (link) {
        am_logfetch_start(am, req, link, role, index, (int)attempt, stream, offset);
        evhttp_clear_headers(&q);
        return;
    }
    char *dir = bad ? NULL : task_log_dir(am, role, index, (int)attempt);
    if (bad || !dir) {
        reply_error(req, bad ? 400 : 404, bad ? bad : "no such task in this job");
        evhttp_clear_headers(&q);
        return;
    }
    char *path = tony_path_join(dir, stream);
    tony_buf data = {0};
    long long size = 0;
    tony_error err;
    int rc = tony_read_range(path, offset, AM_LOG_CHUNK, &data, &size, &err);
    if (rc == 0 && offset > size) {
        reply_error(req, 400, "offset is past the end of the log");
    } else if (rc == 0) {
        reply_json(req, 200, am_api_log_chunk_json(role, index, (int)attempt, stream, offset, data.data, data.len, size,
                                                   tony_file_exists(path)));
    } else {
        reply_error(req, 500, err.msg);
    }
    tony_buf_free(&data);
    free(path);
    free(dir);
    evhttp_clear_headers(&q);
}


/* A heartbeat's answer carries the task's credentials when the backend has
 * newer ones than the executor says it holds (backend.h, task_credentials). */
static void add_newer_credentials(tony_am *am, const json_t *body, json_t *answer) {
    if (!am->backend || !am->backend->ops->task_credentials) return;
    long long have = json_integer_value(json_object_get(body, TONY_HEARTBEAT_CREDENTIALS_HAVE));
    tony_buf creds = {0};
    long long g = am->backend->ops->task_credentials(am->backend, have, &creds);
    if (g > 0) {
        char *b64 = tony_base64_encode(creds.data, creds.len, false);
        json_object_set_new(answer, TONY_HEARTBEAT_CREDENTIALS,
                            json_pack("{s:I, s:s}", TONY_HEARTBEAT_CREDENTIALS_GENERATION, (json_int_t)g,
                                      TONY_HEARTBEAT_CREDENTIALS_DATA, b64));
        free(b64);
    }
    tony_buf_free(&creds);
}

static bool known_verb(const char *verb) {
    static const char *const verbs[] = {"log", "metrics", "register", "heartbeat", "started", "finished"};
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++)
        if (strcmp(verb, verbs[i]) == 0) return true;
    return false;
}

/* /v1/tasks/<role>/<index>/<verb> */
static void handle_task(tony_am *am, struct evhttp_request *req, const char *rest) {
    char role[64], verb[32];
    int index, consumed = 0;
    if (sscanf(rest, "%63[a-z]/%d/%31[a-z]%n", role, &index, verb, &consumed) != 3 || rest[consumed]) {
        reply_error(req, 404,
                    "unknown path; expected /v1/tasks/<role>/<index>/<log|metrics|register|heartbeat|started|finished>");
        return;
    }
    if (!known_verb(verb)) {
        reply_error(req, 404, "unknown task verb; expected log, metrics, register, heartbeat, started or finished");
        return;
    }
    if (strcmp(verb, "log") == 0) {
        if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) reply_error(req, 405, "use GET");
        else handle_log(am, req, role, index);
        return;
    }
    if (strcmp(verb, "metrics") == 0 && evhttp_request_get_command(req) == EVHTTP_REQ_GET) {
        const am_task *mt = am_job_task(&am->job, role, index);
        am_metrics *m = mt ? am_record_metrics(am, mt) : NULL;
        if (!m) {
            reply_error(req, 404, "no such task in this job");
            return;
        }
        json_t *o = am_metrics_series_json(m);
        json_object_set_new(o, "role", json_string(role));
        json_object_set_new(o, "index", json_integer(index));
        json_object_set_new(o, "attempt", json_integer(am->job.attempt));
        reply_json(req, 200, o);
        return;
    }
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        reply_error(req, 405, "use POST");
        return;
    }
    if (!secret_ok(am, req)) {
        reply_error(req, 403, "missing or wrong " TONY_SECRET_HEADER);
        return;
    }
    am_task *t = am_job_task(&am->job, role, index);
    if (!t) {
        reply_error(req, 404, "no such task in this job");
        return;
    }
    json_t *body = read_body(req);
    if (!body) {
        reply_error(req, 400, "the body must be a JSON object");
        return;
    }
    json_t *attempt_j = json_object_get(body, "attempt");
    if (!json_is_integer(attempt_j)) {
        json_decref(body);
        reply_error(req, 400, "\"attempt\" (integer) is required");
        return;
    }
    if (json_integer_value(attempt_j) != am->job.attempt || am->done) {
        json_decref(body);
        reply_json(req, 409, json_pack("{s:s,s:s}", "status", "stale", "error", "this attempt is over"));
        return;
    }
    long long now = am_now_ms();
    if (strcmp(verb, "register") == 0) {
        const char *host = json_string_value(json_object_get(body, "host"));
        json_int_t port = json_integer_value(json_object_get(body, "port"));
        json_t *tb = json_object_get(body, "tb_port");
        json_int_t tb_port = json_integer_value(tb);
        if (!host || !*host || port <= 0 || port > 65535 || (tb && (!json_is_integer(tb) || tb_port <= 0 || tb_port > 65535))) {
            json_decref(body);
            reply_error(req, 400, "register needs \"host\" (string) and \"port\" (1-65535); \"tb_port\", if given, 1-65535");
            return;
        }
        if (am->job.attempt_over) {
            json_decref(body);
            reply_json(req, 409, json_pack("{s:s}", "status", "ending"));
            return;
        }
        if (!t->host) {
            t->host = tony_strdup(host);
            t->port = (int)port;
            t->tb_port = (int)tb_port;
            const char *log_dir = json_string_value(json_object_get(body, "log_dir"));
            const char *container = json_string_value(json_object_get(body, "container"));
            const char *log_url = json_string_value(json_object_get(body, "log_url"));
            if (log_dir && *log_dir) t->log_dir = tony_strdup(log_dir);
            if (container && *container) t->container = tony_strdup(container);
            /* Kept only when the backend can read the log from it. */
            tony_error lerr;
            if (log_url && am_backend_reads_log_url(am, log_url, &lerr) == 0) t->log_url = tony_strdup(log_url);
            else if (log_url)
                tony_warn("%s:%d reported a log link the coordinator cannot read from: %s", role, index, lerr.msg);
            t->registered_ms = now;
            t->state = AM_TASK_REGISTERED;
            am->status_dirty = true;
            tony_info("registered %s:%d at %s:%d (%d of %d)", role, index, host, (int)port,
                      am_job_count_registered(&am->job), am_job_count_requested(&am->job));
            am_record_task_registered(am, t);
        }
        t->last_heartbeat_ms = now;
        json_decref(body);
        add_waiter(am, req, t);
        if (!am->plan.gang) am_api_release_waiters(am, true);
        else am_api_release_waiters(am, false);
        return;
    }
    json_t *answer = json_pack("{s:s}", "status", "ok");
    if (strcmp(verb, "heartbeat") == 0) {
        t->last_heartbeat_ms = now;
        add_newer_credentials(am, body, answer);
        /* As TonY's registerTensorBoardUrl, but only once the port serves. */
        json_t *tb = json_object_get(body, "tensorboard");
        if (json_is_boolean(tb) && t->tb_port > 0 && json_is_true(tb) != t->tb_listening) {
            t->tb_listening = json_is_true(tb);
            am->status_dirty = true;
            tony_info("%s:%d: TensorBoard %s on port %d", role, index, t->tb_listening ? "serves" : "no longer serves",
                      t->tb_port);
        }
    } else if (strcmp(verb, "started") == 0) {
        t->pid = (int)json_integer_value(json_object_get(body, "pid"));
        t->started_ms = now;
        t->last_heartbeat_ms = now;
        if (!am_task_done(t)) t->state = AM_TASK_RUNNING;
        am->status_dirty = true;
        am_record_task_started(am, t);
    } else if (strcmp(verb, "metrics") == 0) {
        tony_sample sample;
        tony_error err;
        if (tony_sample_from_json(body, &sample, &err)) {
            json_decref(body);
            json_decref(answer);
            reply_error(req, 400, err.msg);
            return;
        }
        am_metrics *m = am_record_metrics(am, t);
        if (m) am_metrics_add(m, &sample);
        /* A sample is a sign of life too. status.json is not rewritten for
         * it (live readers ask /v1/job); the final one carries the totals. */
        t->last_heartbeat_ms = now;
    } else if (strcmp(verb, "finished") == 0) {
        /* Only stops heartbeat monitoring: the result is the container's
         * exit status, as in TonY. A timeout is worth saying in words. */
        t->result_reported = true;
        if (json_is_true(json_object_get(body, "timed_out"))) {
            free(t->diagnostics);
            t->diagnostics = tony_sprintf("The command ran longer than its execution timeout of %lld ms "
                                          "(tony.task.executor.execution-timeout-ms / tony.worker.timeout) and was killed.",
                                          am->plan.execution_timeout_ms);
        }
    } else {
        json_decref(body);
        json_decref(answer);
        reply_error(req, 404, "unknown task verb");
        return;
    }
    json_decref(body);
    reply_json(req, 200, answer);
}

/* Why no TensorBoard serves now, in words for whoever followed the link. */
static char *why_no_tensorboard(const tony_am *am) {
    const am_task *t = NULL;
    for (size_t i = 0; i < am->job.ntasks && !t; i++)
        if (am_job_reserves_tb_port(&am->job, &am->job.tasks[i])) t = &am->job.tasks[i];
    if (!t)
        return tony_sprintf("Job %s runs no TensorBoard: no task of it reserves TB_PORT. Submit it with "
                            "--sidecar_tensorboard_log_dir DIR, or have the chief start TensorBoard on $TB_PORT.",
                            am->app_id);
    const char *dir = am->plan.tensorboard_log_dir;
    if (am->done)
        return tony_sprintf("Job %s has ended: no TensorBoard serves for it any more (TB_PORT was %s:%d's).%s%s",
                            am->app_id, t->role->name,
                            t->index, dir ? " To look at its summaries now: tensorboard --logdir " : "", dir ? dir : "");
    if (am_task_done(t))
        return tony_sprintf("Job %s: %s:%d, which served TensorBoard, is no longer running (%s); its log tells why: "
                            "tony logs %s --task %s:%d",
                            am->app_id, t->role->name, t->index, am_task_state_name(t->state), am->app_id,
                            t->role->name, t->index);
    if (t->state != AM_TASK_RUNNING)
        return tony_sprintf("Job %s: %s:%d, which serves TensorBoard, has not started yet (%s); try again shortly.",
                            am->app_id, t->role->name, t->index, am_task_state_name(t->state));
    return tony_sprintf("Job %s: %s:%d runs, but nothing serves on its TB_PORT (%d) yet. %s", am->app_id,
                        t->role->name, t->index, t->tb_port,
                        t->role->kind == TONY_ROLE_SIDECAR ? "TensorBoard takes a few seconds to start; try again shortly."
                                                           : "Without a sidecar, the job's own code must start "
                                                             "TensorBoard on $TB_PORT (or use "
                                                             "--sidecar_tensorboard_log_dir).");
}

/* GET /tensorboard[/<path>]: the way from the job's tracking URL (this
 * API's root, also behind YARN's proxy) to its TensorBoard. */
static void serve_tensorboard(tony_am *am, struct evhttp_request *req, const char *rest, const char *query) {
    const am_task *t = serving_tensorboard(am);
    if (!t) {
        char *why = why_no_tensorboard(am);
        reply_text(req, 404, why);
        free(why);
        return;
    }
    if (*rest == '/') rest++;
    char *to = tony_sprintf("http://%s:%d/%s%s%s", t->host, t->tb_port, rest, query && *query ? "?" : "",
                            query && *query ? query : "");
    evhttp_add_header(evhttp_request_get_output_headers(req), "Location", to);
    char *text = tony_sprintf("TensorBoard of %s:%d is at %s", t->role->name, t->index, to);
    reply_text(req, 302, text);
    free(text);
    free(to);
}

/* GET /v1/events?since=<seq>: the events after seq, oldest first. */
static void serve_events(tony_am *am, struct evhttp_request *req, const char *query) {
    long long since = 0;
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    if (query && evhttp_parse_query_str(query, &q) == 0) {
        const char *s = evhttp_find_header(&q, "since");
        if (s && (!tony_parse_ll(s, &since) || since < 0)) {
            evhttp_clear_headers(&q);
            reply_error(req, 400, "since must be an event seq number >= 0 (the \"next\" of the last answer)");
            return;
        }
    }
    evhttp_clear_headers(&q);
    if (!am->events) reply_json(req, 200, json_pack("{s:[],s:I}", "events", "next", (json_int_t)since));
    else reply_json(req, 200, am_events_since_json(am->events, since, AM_EVENTS_PAGE));
}

/* A web page of another site that rebinds its name to this machine must not
 * read the job's config and logs through the user's browser: only the
 * coordinator's own names (the one in its URL, executors, clients and
 * YARN's web proxy use) and addresses are answered. */
static bool host_ok(tony_am *am, struct evhttp_request *req) {
    const char *host = evhttp_find_header(evhttp_request_get_input_headers(req), "Host");
    if (tony_host_check_ok(&am->hosts, host)) return true;
    char *names = tony_host_check_describe(&am->hosts);
    char *msg = tony_sprintf("this coordinator answers requests for %s on port %d, not for Host '%.200s' (a web page "
                             "of another site may be trying to read it through DNS rebinding); use %s",
                             names, am->hosts.port, host, am->url);
    reply_error(req, 421, msg);
    free(msg);
    free(names);
    return false;
}

static void handle(struct evhttp_request *req, void *arg) {
    tony_am *am = arg;
    if (!host_ok(am, req)) return;
    const char *uri = evhttp_request_get_uri(req);
    struct evhttp_uri *parsed = evhttp_uri_parse(uri);
    const char *path = parsed ? evhttp_uri_get_path(parsed) : NULL;
    if (!path) {
        reply_error(req, 400, "malformed request URI");
    } else if (strncmp(path, "/v1/tasks/", 10) == 0) {
        handle_task(am, req, path + 10);
    } else if (strcmp(path, "/v1/events") == 0) {
        if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) reply_error(req, 405, "use GET");
        else serve_events(am, req, evhttp_uri_get_query(parsed));
    } else if (strcmp(path, "/tensorboard") == 0 || strncmp(path, "/tensorboard/", 13) == 0) {
        if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) reply_error(req, 405, "use GET");
        else serve_tensorboard(am, req, path + 12, evhttp_uri_get_query(parsed));
    } else if (strcmp(path, "/v1/job") == 0) {
        if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) reply_error(req, 405, "use GET");
        else reply_job(am, req, evhttp_uri_get_query(parsed));
    } else if (strcmp(path, "/") == 0 || strncmp(path, "/ui/", 4) == 0) {
        const am_webui_file *f = am_webui_find(path[1] ? path + 4 : "index.html");
        if (!f) reply_error(req, 404, "no such file in the web UI");
        else if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) reply_error(req, 405, "use GET");
        else am_webui_reply(req, f);
    } else if (strcmp(path, "/v1/job/kill") == 0 || strcmp(path, "/v1/job/finish") == 0) {
        if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) reply_error(req, 405, "use POST");
        else if (!secret_ok(am, req)) reply_error(req, 403, "missing or wrong " TONY_SECRET_HEADER);
        else {
            bool kill = strcmp(path, "/v1/job/kill") == 0;
            reply_json(req, 200, json_pack("{s:s}", "status", "ok"));
            if (kill) am_on_kill_request(am);
            else am_on_client_finished(am);
        }
    } else {
        reply_error(req, 404, "unknown path; see /v1/job");
    }
    if (parsed) evhttp_uri_free(parsed);
}

int am_api_start(tony_am *am, const char *bind_host, tony_error *err) {
    tony_http_server_opts o = {.what = "the coordinator API",
                               .max_body = 1 << 20,
                               .allowed_methods = EVHTTP_REQ_GET | EVHTTP_REQ_POST,
                               .handler = handle,
                               .arg = am};
    am->http = tony_http_server_new(am->base, &o);
    if (tony_http_server_listen(am->http, bind_host, 0, &am->port, err)) return -1;
    am->url = tony_sprintf("http://%s:%d", am->host, am->port);
    tony_host_check_init_job_server(&am->hosts, am->port, am->host);
    return 0;
}
