/* The coordinator's HTTP+JSON API (/v1). Executors register, heartbeat and
 * report; clients and the web UI read the job and ask to kill it. Every call
 * that changes state must be signed with a key derived from the job's secret
 * (common/apiauth.h), and its answer is signed back. Registration is a long
 * poll: the answer comes the moment the gang is complete. Every route is a
 * row of the table `routes` near the end (api_routes.h): routing, the
 * 404/405 answers and docs/api.md's route list come from it. */
#include <event2/buffer.h>
#include <event2/dns.h>
#include <event2/keyvalq_struct.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/time.h>
#include <time.h>

#include "am/api.h"

#include "am/api_routes.h"
#include "am/logfetch.h"
#include "am/notebook_proxy.h"
#include "am/record.h"
#include "am/reply.h"
#include "am/stacks.h"
#include "am/taskenv.h"
#include "am/view.h"
#include "am/watch.h"
#include "common/clock.h"
#include "common/webui.h"
#include "common/amapi.h"
#include "common/apiauth.h"
#include "common/fs.h"
#include "common/hostcheck.h"
#include "common/httpserver.h"
#include "common/httpreply.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "common/log.h"
#include "common/readtoken.h"
#include "common/strv.h"
#include "conf/logpolicy.h"

/* An executor's held registration poll. */
typedef struct am_waiter {
    struct evhttp_request *req;
    am_task *task;
    long long deadline_ms;
    /* In-place restarts: the registration of a kept container's executor
     * for the next attempt, held until that attempt starts; NULL for a
     * poll at the barrier of this one. */
    json_t *early;
} am_waiter;

/* What the "go" answers of one world share, built once (go_cache below). */
typedef struct am_go_cache am_go_cache;

/* The most bytes of "go" answers queued in the coordinator at once: the
 * gang's answers go out a few at a time, the next as earlier ones are
 * written out (issue 26). Each lists the whole cluster (~18 bytes a task of
 * the job, once: task_go_text), so a gang's answers together are quadratic
 * in its tasks: 71 MB at 2,000 tasks (228 MB when each listed it three
 * times, all queued at once before, and the allocator kept that peak).
 * 16 MiB keeps ~140 answers of three times the spec in flight at 2,000
 * tasks, enough that the gang formed as fast as with every answer queued at
 * once; 8 MiB made it slower (bench/REPORT.md, "Scale: the gang's answers in
 * bounded batches"); ~90 answers of the spec once at 10,000 tasks. At least
 * one answer is always in flight, whatever its size. */
#define AM_GO_QUEUED_MAX (16u << 20)

/* A "go" answer in flight: its bytes count against AM_GO_QUEUED_MAX until
 * the HTTP server says it left (go_sent). */
typedef struct go_flight {
    struct go_flight *prev, *next;
    tony_am *am;
    size_t bytes;
} go_flight;

/* The API's part of the handle (am_internal.h): written here only. */
struct am_api {
    tony_http_server *http;
    tony_host_check hosts;            /* Host headers the API answers (DNS rebinding) */
    tony_read_gate reads;             /* GETs need the job's read token (common/readtoken.h) */
    tony_apiauth_replay *auth_replay; /* signed calls seen, per sender (common/apiauth.h) */
    tony_apiauth_key auth_key;        /* derived from the job's secret once (api_gate): an HMAC each call
                                         was 5 % of the coordinator's CPU at steady state (issue 26) */
    long long ui_seen_ms;             /* the web UI last polled the job (0: never) */
    am_waiter *waiters;               /* executors waiting for the gang (long-poll) */
    size_t nwaiters, capwaiters;
    /* each task's held polls by its place in the job, [2k] at the barrier,
     * [2k+1] early: its place in waiters plus 1 (0: none), so that a
     * renewed poll finds the one it replaces without a walk (issue 26) */
    size_t *waiter_slot;
    am_go_cache *go;        /* what every task's "go" answer shares in this world (issue 26) */
    /* the gang's released polls not answered yet, oldest first: answered
     * from [rel_head] on as the answers in flight leave (pump_release) */
    am_waiter *rel;
    size_t rel_head, rel_n, rel_cap;
    size_t *rel_slot;        /* each task's place in rel plus 1 (0: none), as waiter_slot */
    go_flight *flights;      /* "go" answers queued and not yet written out */
    size_t flight_bytes;     /* ... their bytes */
    struct event *pump_ev;   /* runs pump_release from the loop */
    struct evdns_base *dns; /* the notebook proxy's lookups of task hosts (made on first use) */
};

static bool query_uint(const char *v, long long max, long long *out);
#define JOB_QUERY_STR_(x) #x
#define JOB_QUERY_STR(x) JOB_QUERY_STR_(x)

/* What GET /v1/job's query asks for (amapi.h, AM_API_JOB_*); 0, or -1 with
 * why not (a 400). */
typedef struct job_query {
    bool metrics, paged;
    long long offset, limit;
    am_job_filter filter;
} job_query;

static int read_job_query(const tony_am *am, const char *query, job_query *jq, tony_error *err) {
    *jq = (job_query){.metrics = true, .limit = AM_API_JOB_LIMIT_MAX};
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    if (!query || evhttp_parse_query_str(query, &q) != 0) return 0;
    const char *bad = NULL;
    const char *m = evhttp_find_header(&q, AM_API_JOB_METRICS), *off = evhttp_find_header(&q, AM_API_JOB_OFFSET),
               *lim = evhttp_find_header(&q, AM_API_JOB_LIMIT), *tasks = evhttp_find_header(&q, AM_API_JOB_TASKS),
               *state = evhttp_find_header(&q, AM_API_JOB_STATE), *role = evhttp_find_header(&q, AM_API_JOB_ROLE);
    bool none = tasks && strcmp(tasks, "0") == 0;
    if (m && strcmp(m, "0") != 0 && strcmp(m, "1") != 0)
        bad = AM_API_JOB_METRICS " must be 0 (leave each task's metrics and last_sample out) or 1";
    else if (tasks && !none && strcmp(tasks, "1") != 0)
        bad = AM_API_JOB_TASKS " must be 0 (no task listed: their total and counts by role and state) or 1";
    else if (off && !query_uint(off, LLONG_MAX / 2, &jq->offset))
        bad = AM_API_JOB_OFFSET " must be the place of the first task to list (0 or more)";
    else if (lim && (!query_uint(lim, AM_API_JOB_LIMIT_MAX, &jq->limit) || jq->limit < 1))
        bad = AM_API_JOB_LIMIT " must be how many tasks to list at most, 1 to " JOB_QUERY_STR(AM_API_JOB_LIMIT_MAX);
    else if (none && (off || lim))
        bad = AM_API_JOB_TASKS "=0 lists no task: leave " AM_API_JOB_OFFSET " and " AM_API_JOB_LIMIT " out";
    /* tasks=0 counts every state of every role already (task_counts) */
    else if (none && (state || role))
        bad = AM_API_JOB_TASKS "=0 lists no task to filter: leave " AM_API_JOB_STATE " and " AM_API_JOB_ROLE
                               " out (its task_counts count the tasks of each role in each state)";
    int rc = bad ? tony_err(err, "%s", bad) : am_job_filter_parse(am, state, role, &jq->filter, err);
    jq->metrics = !m || strcmp(m, "1") == 0;
    jq->paged = off || lim || tasks || state || role;
    if (none) jq->limit = 0;
    evhttp_clear_headers(&q);
    return rc;
}

/* GET /v1/job[?metrics=0][&offset=&limit=][&state=&role= | &tasks=0], with an ETag over
 * the body: a browser polling every second gets a bodiless 304 while
 * nothing changed, however many tasks the job has. Every metrics sample
 * changes a task's "metrics" and "last_sample", so on a job of hundreds of
 * tasks something changes every second; metrics=0 leaves them out, and the
 * page asks for them only as often as executors sample. A job of thousands
 * lists a page of its tasks, or none, with their counts (issue 26: 10,000
 * tasks are ~10 MB listed whole), and pages those in some states (its 3
 * failed tasks among 5,000, in one answer). */
static void reply_job(tony_am *am, struct evhttp_request *req, const char *query) {
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    job_query jq;
    tony_error err;
    if (read_job_query(am, query, &jq, &err)) {
        am_reply_error(req, 400, err.msg);
        return;
    }
    bool with_metrics = jq.metrics;
    if (evhttp_find_header(in, AM_API_UI_HEADER)) am->api->ui_seen_ms = am_now_ms();
    json_t *job = jq.paged ? am_job_json_page(am, (size_t)jq.offset, (size_t)jq.limit, &jq.filter) : am_job_json(am);
    if (!with_metrics) {
        size_t i;
        json_t *t;
        json_array_foreach(json_object_get(job, JOB_TASKS), i, t) {
            json_object_del(t, JOB_TASK_METRICS);
            json_object_del(t, JOB_TASK_LAST_SAMPLE);
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
        am_reply_json_text(req, 200, s);
    }
    free(s);
}

static json_t *cluster_spec(const tony_am *am) {
    json_t *spec = json_object();
    for (size_t r = 0; r < am->plan.nroles; r++) {
        const tony_role *role = &am->plan.roles[r];
        json_t *arr = json_array();
        for (int i = 0; i < role->instances; i++) {
            const am_task *t = am_job_task((am_job *)&am->fsm.job, role->name, i);
            if (!t || !t->host) continue;
            json_array_append_new(arr, json_sprintf("%s:%d", t->host, t->port));
        }
        json_object_set_new(spec, role->name, arr);
    }
    return spec;
}

/* What every "go" answer of one world shares (issue 26: building the
 * cluster spec, and the env values that list the cluster, for each task was
 * O(N) each, O(N²) per gang). Valid while the attempt, the world's version
 * and the set of registered hosts are those it was built for. */
struct am_go_cache {
    int attempt, world_version, hosts_version;
    json_t *spec;            /* the cluster spec */
    char *spec_text;         /* ... as compact JSON, the answer's cluster_spec */
    tony_runtime_memo memo;  /* the runtime's texts (CLUSTER_SPEC, TF_CONFIG's cluster) */
    /* what is kept of long env values, by key (go_slot): their JSON
     * strings, since the same for every task is escaped once (a value that
     * differs per task stops being kept after its second miss); and where
     * the value held the spec's text in the last answer, looked at there
     * first, since memmem sets up a search for the whole spec (~180 KB at
     * 10,000 tasks) on every call (42 % of the gang's CPU at 6,000 tasks) */
    struct go_big {
        char *key, *raw, *esc;
        size_t len, esc_len;
        int misses;
        size_t spec_at; /* the spec's place in the last value plus 1 (0: none seen) */
    } big[8];
    bool verified;           /* the first answer of this world was checked against json_dumps */
    bool fallback;           /* ... and differed: json_dumps for every answer (never expected) */
};

static void go_cache_clear(am_go_cache *c) {
    json_decref(c->spec);
    free(c->spec_text);
    tony_runtime_memo_clear(&c->memo);
    for (size_t i = 0; i < sizeof c->big / sizeof *c->big; i++) {
        free(c->big[i].key);
        free(c->big[i].raw);
        free(c->big[i].esc);
    }
    bool fallback = c->fallback;
    memset(c, 0, sizeof *c);
    c->fallback = fallback;
}

static void go_cache_free(tony_am *am) {
    if (!am->api->go) return;
    go_cache_clear(am->api->go);
    free(am->api->go);
    am->api->go = NULL;
}

/* The cache for the world as it is now: built anew when it changed. */
static am_go_cache *go_cache(tony_am *am) {
    const am_job *j = &am->fsm.job;
    am_go_cache *c = am->api->go;
    if (c && c->spec && c->attempt == j->attempt && c->world_version == am->fsm.world_version &&
        c->hosts_version == j->hosts_version)
        return c;
    if (!c) c = am->api->go = tony_xcalloc(1, sizeof *c);
    go_cache_clear(c);
    c->attempt = j->attempt;
    c->world_version = am->fsm.world_version;
    c->hosts_version = j->hosts_version;
    c->spec = cluster_spec(am);
    c->spec_text = json_dumps(c->spec, JSON_COMPACT);
    if (am->rendezvous) {
        json_t *scopes = am->runtime->rendezvous_scopes(c->spec);
        am_rendezvous_set_scopes(am->rendezvous, scopes);
        json_decref(scopes);
    }
    return c;
}

/* s[0..n) as a JSON string, as json_dumps writes it, appended to b; false
 * (nothing appended) when s is not UTF-8, which jansson refuses. Printable
 * ASCII, all a cluster spec is made of, is escaped here in one pass
 * (jansson's escaping goes a code point at a time); the rest by jansson. */
static bool append_json_string(tony_buf *b, const char *s, size_t n) {
    size_t quotes = 0, i;
    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch > 0x7e) break;
        quotes += ch == '"' || ch == '\\';
    }
    if (i < n) {
        json_t *j = json_stringn(s, n);
        char *js = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        json_decref(j);
        if (!js) return false;
        tony_buf_puts(b, js);
        free(js);
        return true;
    }
    char *out = tony_xmalloc(n + quotes + 2), *o = out;
    *o++ = '"';
    for (i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\') *o++ = '\\';
        *o++ = s[i];
    }
    *o++ = '"';
    tony_buf_append(b, out, (size_t)(o - out));
    free(out);
    return true;
}

/* A long env value (the cluster listed): the same as the key's last one
 * (CLUSTER_SPEC, for every task) is copied from its escaped text. */
/* Env values from this size on have a slot in the go cache (go_slot): under
 * it, escaping or searching a value anew costs less than keeping it. */
#define GO_BIG_MIN 4096

/* The slot of c kept for the env key key[0..klen), taken when new; NULL
 * when every slot holds another key. */
static struct go_big *go_slot(am_go_cache *c, const char *key, size_t klen) {
    for (size_t i = 0; i < sizeof c->big / sizeof *c->big; i++) {
        struct go_big *e = &c->big[i];
        if (!e->key) {
            e->key = strndup(key, klen);
            return e;
        }
        if (strlen(e->key) == klen && strncmp(e->key, key, klen) == 0) return e;
    }
    return NULL;
}

static bool append_env_value(am_go_cache *c, tony_buf *b, const char *key, size_t klen, const char *v) {
    size_t n = strlen(v);
    if (n < GO_BIG_MIN) return append_json_string(b, v, n);
    struct go_big *g = go_slot(c, key, klen);
    if (g && g->raw && g->len == n && memcmp(g->raw, v, n) == 0) {
        tony_buf_append(b, g->esc, g->esc_len);
        return true;
    }
    size_t at = b->len;
    if (!append_json_string(b, v, n)) return false;
    if (!g || g->misses >= 2) return true;
    g->misses += g->raw != NULL;
    free(g->raw);
    free(g->esc);
    g->raw = g->esc = NULL;
    if (g->misses >= 2) return true;
    g->raw = tony_strdup(v);
    g->len = n;
    g->esc_len = b->len - at;
    g->esc = tony_xmalloc(g->esc_len + 1);
    memcpy(g->esc, b->data + at, g->esc_len);
    g->esc[g->esc_len] = '\0';
    return true;
}

/* A "go" answer's env: what the task's executor runs its process with. */
/* memo: the world's texts, or NULL to make them anew. */
static int task_go_env(tony_am *am, const am_task *t, json_t *spec, tony_runtime_memo *memo, tony_env *env,
                       tony_error *err) {
    tony_env_merge(env, &am->plan.shell_env);
    /* the container's env names the attempt it was asked for in; a kept
     * one runs this attempt's process */
    am_task_attempt_env(am, env);
    /* elastic jobs: the world's counts and t's rank in it (taskenv.h) */
    tony_plan world;
    int index;
    am_task_world(am, t, &world, &index);
    tony_runtime_task rt = {.plan = &world, .role = t->role->name, .index = index,
                            .cluster_spec = am->plan.gang ? spec : NULL, .attempt = am->fsm.job.attempt,
                            .run_id = am->id.app_id, .memo = memo};
    if (am->rendezvous) {
        rt.rendezvous_host = am->id.host;
        rt.rendezvous_port = am_rendezvous_port(am->rendezvous);
    }
    int built = tony_runtime_build_env(am->runtime, &rt, env, err);
    am_task_world_free(&world);
    return built;
}

/* Where the spec's compact text spec[0..slen) lies in the env value
 * v[0..n): such a value goes in the answer as the text around it, and the
 * executor splices the spec back (amapi.h, AM_API_ENV): the answer carries
 * the spec once, not in CLUSTER_SPEC and TF_CONFIG again (issue 26: ~18
 * bytes a task of the job each time, in every task's answer). Every value
 * that holds it is spliced, short or long, so that every job's executors
 * take this path, not only the large jobs'. NULL: sent whole. */
static const char *spec_in(const char *v, size_t n, const char *spec, size_t slen) {
    return spec && slen > 2 ? memmem(v, n, spec, slen) : NULL;
}

/* spec_in for the value of key in a "go" answer written from c: looked for
 * first where the last answer's value of key held it. */
static const char *spec_in_hinted(am_go_cache *c, const char *key, size_t klen, const char *v, size_t n, size_t slen) {
    if (!c->spec_text || slen <= 2 || n < slen) return NULL;
    struct go_big *g = n >= GO_BIG_MIN ? go_slot(c, key, klen) : NULL;
    if (g && g->spec_at && g->spec_at - 1 + slen <= n && memcmp(v + g->spec_at - 1, c->spec_text, slen) == 0)
        return v + g->spec_at - 1;
    const char *at = spec_in(v, n, c->spec_text, slen);
    if (g) g->spec_at = at ? (size_t)(at - v) + 1 : 0;
    return at;
}

/* The "go" answer's text, written out from the world's cache: the bytes
 * json_dumps(task_go_json(...), JSON_COMPACT) writes, without building
 * and encoding N entries per task. NULL: the env cannot be built (err),
 * or a value is no UTF-8 (*other: answer with task_go_json). */
static char *task_go_text(tony_am *am, const am_task *t, am_go_cache *c, bool *other, tony_error *err) {
    *other = false;
    tony_env env = {0};
    if (task_go_env(am, t, c->spec, &c->memo, &env, err)) {
        tony_env_free(&env);
        return NULL;
    }
    tony_buf b = {0};
    bool ok = true;
    tony_buf_puts(&b, "{\"" AM_API_STATUS "\":\"" AM_API_GO "\",\"" AM_API_COMMAND "\":");
    ok = append_json_string(&b, t->role->command, strlen(t->role->command));
    tony_buf_puts(&b, ",\"" AM_API_ENV "\":{");
    bool first = true, spliced = false;
    size_t slen = c->spec_text ? strlen(c->spec_text) : 0;
    for (size_t i = 0; ok && i < env.kv.len; i++) {
        const char *kv = env.kv.items[i], *eq = strchr(kv, '='), *v = eq + 1;
        if (!first) tony_buf_puts(&b, ",");
        first = false;
        ok = append_json_string(&b, kv, (size_t)(eq - kv));
        if (ok) tony_buf_puts(&b, ":");
        size_t n = strlen(v);
        const char *at = spec_in_hinted(c, kv, (size_t)(eq - kv), v, n, slen);
        if (at) {
            spliced = true;
            tony_buf_puts(&b, "[");
            ok = ok && append_json_string(&b, v, (size_t)(at - v));
            tony_buf_puts(&b, ",");
            ok = ok && append_json_string(&b, at + slen, n - (size_t)(at - v) - slen);
            tony_buf_puts(&b, "]");
            continue;
        }
        /* (task_go_json drops a key whose value is no UTF-8: the reference answers) */
        ok = ok && append_env_value(c, &b, kv, (size_t)(eq - kv), v);
    }
    tony_buf_puts(&b, "},\"" AM_API_CLUSTER_SPEC "\":");
    tony_buf_puts(&b, c->spec_text ? c->spec_text : "{}");
    tony_buf_printf(&b, ",\"" AM_API_EXECUTION_TIMEOUT_MS "\":%lld,\"" AM_API_LOG_POLICIES "\":",
                    (long long)am->plan.execution_timeout_ms);
    const char *lp = am->plan.log_policies ? am->plan.log_policies : "";
    ok = ok && append_json_string(&b, lp, strlen(lp));
    if (spliced) tony_buf_printf(&b, ",\"" AM_API_CLUSTER_SPEC_BYTES "\":%zu", slen);
    tony_buf_puts(&b, "}");
    tony_env_free(&env);
    if (!ok || !c->spec_text) {
        tony_buf_free(&b);
        *other = true;
        return NULL;
    }
    return b.data;
}

/* The body of a "go" answer for task t: command, env, timeout (the
 * reference task_go_text writes the same bytes of, faster). */
static json_t *task_go_json(tony_am *am, const am_task *t, tony_error *err) {
    /* the world's texts made anew: the reference shares nothing */
    json_t *spec = cluster_spec(am);
    tony_env env = {0};
    int built = task_go_env(am, t, spec, NULL, &env, err);
    if (built) {
        json_decref(spec);
        tony_env_free(&env);
        return NULL;
    }
    char *spec_text = json_dumps(spec, JSON_COMPACT);
    size_t slen = spec_text ? strlen(spec_text) : 0;
    bool spliced = false;
    json_t *envj = json_object();
    for (size_t i = 0; i < env.kv.len; i++) {
        const char *kv = env.kv.items[i], *eq = strchr(kv, '='), *v = eq + 1;
        char *k = strndup(kv, (size_t)(eq - kv));
        size_t n = strlen(v);
        const char *at = spec_in(v, n, spec_text, slen);
        json_t *val = at ? NULL : json_string(v);
        if (at) {
            json_t *pre = json_stringn(v, (size_t)(at - v)), *post = json_stringn(at + slen, n - (size_t)(at - v) - slen);
            if (pre && post) {
                val = json_pack("[o,o]", pre, post); /* (steals both) */
            } else {
                json_decref(pre);
                json_decref(post);
                val = NULL; /* no UTF-8: dropped, as a whole value would be */
            }
            spliced = spliced || val;
        }
        json_object_set_new(envj, k, val);
        free(k);
    }
    free(spec_text);
    tony_env_free(&env);
    json_t *go = json_pack("{s:s,s:s,s:o,s:o,s:I,s:s}", AM_API_STATUS, AM_API_GO, AM_API_COMMAND, t->role->command,
                           AM_API_ENV, envj, AM_API_CLUSTER_SPEC, spec, AM_API_EXECUTION_TIMEOUT_MS,
                           am->plan.execution_timeout_ms, AM_API_LOG_POLICIES,
                           am->plan.log_policies ? am->plan.log_policies : "");
    if (go && spliced) json_object_set_new(go, AM_API_CLUSTER_SPEC_BYTES, json_integer((json_int_t)slen));
    return go;
}

/* "next": the executor's container is kept; it registers for attempt
 * `next`. Where the job dir holds the tasks' logs per attempt (the local
 * backend), that attempt's output goes to its own dir there; in a
 * cluster's container it goes on in the container's files. */
static json_t *next_json(const tony_am *am, const am_task *t, int next) {
    json_t *o = json_pack("{s:s,s:i}", AM_API_STATUS, AM_API_NEXT, AM_API_NEXT_ATTEMPT, next);
    if (!am->id.on_cluster) {
        char *dir = tony_jobdir_task_dir(am->id.job_dir, next, t->role->name, t->index);
        json_object_set_new(o, AM_API_NEXT_LOG_DIR, json_string(dir));
        free(dir);
    }
    return o;
}

/* The go answer for t, as text (task_go_text; once per world checked
 * against json_dumps, the reference); NULL: its env cannot be built (err). */
static char *go_answer(tony_am *am, const am_task *t, tony_error *err) {
    am_go_cache *c = go_cache(am);
    bool other = c->fallback;
    char *text = other ? NULL : task_go_text(am, t, c, &other, err);
    if (!text && !other) return NULL;
    if (text && c->verified) return text;
    json_t *go = task_go_json(am, t, err);
    char *ref = go ? json_dumps(go, JSON_COMPACT) : NULL;
    json_decref(go);
    if (!go) {
        free(text);
        return NULL;
    }
    if (!ref) ref = tony_strdup("{\"" AM_API_ERROR "\":\"the server could not encode its answer\"}");
    if (text && !c->verified) {
        c->verified = true;
        if (strcmp(text, ref) != 0) {
            tony_warn("the \"go\" answer written from the world's cache differs from its JSON encoding; "
                      "encoding each answer in full from now on");
            c->fallback = true;
        }
    }
    free(text);
    return ref;
}

static void pump_release(tony_am *am);

static void on_pump(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    pump_release(arg);
}

/* The server says a "go" answer left (written out, or its connection
 * closed): the next ones may go, from the loop (this runs inside evhttp). */
static void go_sent(void *arg, bool written) {
    (void)written;
    go_flight *f = arg;
    am_api *a = f->am->api;
    a->flight_bytes -= f->bytes;
    if (f->prev) f->prev->next = f->next;
    else a->flights = f->next;
    if (f->next) f->next->prev = f->prev;
    if (a->rel_head < a->rel_n && a->pump_ev) event_active(a->pump_ev, 0, 0);
    free(f);
}

/* Counts the "go" answer about to be sent to req in flight, until the
 * server says it left; one the server cannot follow (no server: the
 * request fuzzer) is not counted. */
static void go_in_flight(tony_am *am, struct evhttp_request *req, size_t bytes) {
    am_api *a = am->api;
    /* counted as the memory it holds: libevent keeps a body added at once
     * in one chunk of the next power of two (evbuffer_chain_new), so an
     * answer of 36 KiB (2,000 tasks, the spec once) holds 64 KiB; by its
     * bytes, twice as many answers were in flight as the bound meant, and
     * the peak grew by 9 MiB (bench/REPORT.md, "Scale: the spec once per
     * answer") */
    size_t held = 1024;
    while (held < bytes + 64 && held < SIZE_MAX / 2) held <<= 1;
    bytes = held;
    go_flight *f = tony_xcalloc(1, sizeof *f);
    *f = (go_flight){.next = a->flights, .am = am, .bytes = bytes};
    if (tony_http_server_when_sent(a->http, req, go_sent, f)) {
        free(f);
        return;
    }
    if (a->flights) a->flights->prev = f;
    a->flights = f;
    a->flight_bytes += bytes;
}

static void answer_waiter(tony_am *am, am_waiter *w) {
    tony_error err;
    am_fsm_poll_answered(&am->fsm, w->task, am_now_ms());
    if (am->fsm.job.attempt_over && am_fsm_keeps_container(&am->fsm, w->task)) {
        am_reply_json(w->req, 200, next_json(am, w->task, am->fsm.job.attempt + 1));
        return;
    }
    if (am->fsm.job.attempt_over || am->fsm.state == AM_JOB_DONE) {
        am_reply_json(w->req, 409, json_pack("{s:s,s:s}", AM_API_STATUS, AM_API_ENDING, AM_API_ERROR, "the attempt is ending"));
        return;
    }
    char *go = go_answer(am, w->task, &err);
    if (!go) {
        char *why = tony_sprintf("cannot build the env of %s:%d: %s", w->task->role->name, w->task->index, err.msg);
        am_fsm_fail_permanently(&am->fsm, why, am_now_ms(), &am->pending);
        free(why);
        am_reply_error(w->req, 500, err.msg);
        am_kick(am);
        return;
    }
    am_fsm_released(&am->fsm, w->task);
    go_in_flight(am, w->req, strlen(go));
    am_reply_json_text(w->req, 200, go);
    free(go);
}

/* Where t's held poll (early: its early registration) is in am->api->waiters,
 * plus 1; 0: none. */
static size_t *waiter_slot(tony_am *am, const am_task *t, bool early) {
    if (!am->api->waiter_slot) am->api->waiter_slot = tony_xcalloc(2 * am->fsm.job.ntasks + 2, sizeof *am->api->waiter_slot);
    return &am->api->waiter_slot[2 * (size_t)(t - am->fsm.job.tasks) + early];
}

static void push_waiter(tony_am *am, am_waiter w) {
    if (am->api->nwaiters == am->api->capwaiters) {
        am->api->capwaiters = am->api->capwaiters ? am->api->capwaiters * 2 : 16;
        am->api->waiters = tony_xrealloc(am->api->waiters, am->api->capwaiters * sizeof *am->api->waiters);
    }
    *waiter_slot(am, w.task, w.early != NULL) = am->api->nwaiters + 1;
    am->api->waiters[am->api->nwaiters++] = w;
}

/* Takes waiter i out of the list (the last one takes its place). */
static void drop_waiter(tony_am *am, size_t i) {
    am_waiter *w = &am->api->waiters[i];
    *waiter_slot(am, w->task, w->early != NULL) = 0;
    if (i + 1 < am->api->nwaiters) {
        *w = am->api->waiters[am->api->nwaiters - 1];
        *waiter_slot(am, w->task, w->early != NULL) = i + 1;
    }
    am->api->nwaiters--;
}

/* Detaches the whole list (answering may add waiters back): its count in *n. */
static am_waiter *detach_waiters(tony_am *am, size_t *n) {
    am_waiter *ws = am->api->waiters;
    *n = am->api->nwaiters;
    for (size_t i = 0; i < *n; i++) *waiter_slot(am, ws[i].task, ws[i].early != NULL) = 0;
    am->api->waiters = NULL;
    am->api->nwaiters = am->api->capwaiters = 0;
    return ws;
}

/* Where t's released poll is in am->api->rel, plus 1; 0: none. */
static size_t *rel_slot(tony_am *am, const am_task *t) {
    if (!am->api->rel_slot) am->api->rel_slot = tony_xcalloc(am->fsm.job.ntasks + 1, sizeof *am->api->rel_slot);
    return &am->api->rel_slot[t - am->fsm.job.tasks];
}

/* The gang's released polls are answered in order, at most
 * AM_GO_QUEUED_MAX bytes of "go" in flight: what is queued waits until
 * answers in flight leave. An answer that is no "go" (the attempt ended
 * meanwhile: "next" or "ending", as answer_waiter says) is small and goes
 * at once, so an attempt that ends mid-release answers the rest now. */
static void pump_release(tony_am *am) {
    am_api *a = am->api;
    while (a->rel_head < a->rel_n) {
        bool go = !am->fsm.job.attempt_over && am->fsm.state != AM_JOB_DONE;
        if (go && a->flights && a->flight_bytes >= AM_GO_QUEUED_MAX) return; /* go_sent pumps again */
        am_waiter w = a->rel[a->rel_head++];
        *rel_slot(am, w.task) = 0;
        answer_waiter(am, &w);
    }
    a->rel_head = a->rel_n = 0;
}

/* Queues w's answer, released (pump_release answers it). */
static void release_later(tony_am *am, am_waiter w) {
    am_api *a = am->api;
    if (a->rel_head && a->rel_n == a->rel_cap) { /* room at the front: the answered ones' */
        memmove(a->rel, a->rel + a->rel_head, (a->rel_n - a->rel_head) * sizeof *a->rel);
        a->rel_n -= a->rel_head;
        a->rel_head = 0;
        for (size_t i = 0; i < a->rel_n; i++) *rel_slot(am, a->rel[i].task) = i + 1;
    }
    if (a->rel_n == a->rel_cap) {
        a->rel_cap = a->rel_cap ? a->rel_cap * 2 : 16;
        a->rel = tony_xrealloc(a->rel, a->rel_cap * sizeof *a->rel);
    }
    *rel_slot(am, w.task) = a->rel_n + 1;
    a->rel[a->rel_n++] = w;
}

static void add_waiter(tony_am *am, struct evhttp_request *req, am_task *t, json_t *early) {
    /* A poll renewed while its task's "go" waits its turn (the executor gave
     * up on the old one) takes the old one's place in the queue. */
    size_t queued = early ? 0 : *rel_slot(am, t);
    if (queued) {
        am_waiter *w = &am->api->rel[queued - 1];
        am_reply_json(w->req, 200, json_pack("{s:s}", AM_API_STATUS, AM_API_WAIT));
        w->req = req;
        return;
    }
    /* One outstanding poll per task: a retried poll replaces the old one,
     * found by the task's slot, not a walk over every waiter (issue 26). */
    size_t slot = *waiter_slot(am, t, early != NULL);
    if (slot) {
        am_waiter *w = &am->api->waiters[slot - 1];
        am_reply_json(w->req, 200, json_pack("{s:s}", AM_API_STATUS, AM_API_WAIT));
        json_decref(w->early);
        w->req = req;
        w->early = early;
        w->deadline_ms = am_now_ms() + AM_REGISTER_POLL_MS;
        return;
    }
    push_waiter(am, (am_waiter){req, t, am_now_ms() + AM_REGISTER_POLL_MS, early});
}

void am_api_release_waiters(tony_am *am) {
    /* Detach the list first: answering may add waiters back. */
    size_t n;
    am_waiter *ws = detach_waiters(am, &n);
    size_t early = 0;
    for (size_t i = 0; i < n; i++) early += ws[i].early != NULL;
    if (n > early && !am->fsm.job.attempt_over) tony_info("gang complete: %zu task(s) may start", n - early);
    /* an attempt that ends stops its running tasks through their watches */
    am_watch_release(am);
    for (size_t i = 0; i < n; i++) {
        am_waiter *w = &ws[i];
        bool joining = w->task->out && !am->fsm.job.attempt_over && am->fsm.state != AM_JOB_DONE;
        if (!w->early && !joining) {
            release_later(am, *w);
        } else if (am->fsm.state == AM_JOB_DONE ||
                   (am->fsm.job.attempt_over && !am_fsm_keeps_container(&am->fsm, w->task))) {
            /* no next attempt for it: the kept executor exits */
            if (!w->early) am_fsm_poll_answered(&am->fsm, w->task, am_now_ms());
            am_reply_json(w->req, 409,
                          json_pack("{s:s,s:s}", AM_API_STATUS, AM_API_ENDING, AM_API_ERROR, "no next attempt"));
            json_decref(w->early);
        } else {
            /* kept: a kept executor for the next attempt, or one out of the
             * world waiting to join it (fsm.h, growing back) */
            push_waiter(am, *w);
        }
    }
    free(ws);
    if (!am->api->pump_ev && am->base) am->api->pump_ev = event_new(am->base, -1, 0, on_pump, am);
    pump_release(am);
}

void am_api_expire_waiters(tony_am *am, long long now_ms) {
    am_watch_expire(am, now_ms);
    for (size_t i = 0; i < am->api->nwaiters;) {
        if (am->api->waiters[i].deadline_ms > now_ms) {
            i++;
            continue;
        }
        am_waiter *w = &am->api->waiters[i];
        if (!w->early) am_fsm_poll_answered(&am->fsm, w->task, now_ms);
        am_reply_json(w->req, 200, json_pack("{s:s}", AM_API_STATUS, AM_API_WAIT));
        json_decref(w->early);
        drop_waiter(am, i);
    }
}

static void register_task(tony_am *am, struct evhttp_request *req, am_task *t, json_t *body, long long now);

void am_api_admit_early(tony_am *am) {
    size_t n;
    am_waiter *ws = detach_waiters(am, &n);
    for (size_t i = 0; i < n; i++) {
        am_waiter *w = &ws[i];
        if (!w->early) {
            add_waiter(am, w->req, w->task, NULL);
            continue;
        }
        /* Only the container the task kept: one that was stopped meanwhile
         * (and is asked for anew) has no place in this attempt. */
        const am_task *t = w->task;
        json_t *ca = json_object_get(w->early, AM_API_CONTAINER_ATTEMPT);
        if (t->state == AM_TASK_REQUESTED && !t->host && json_is_integer(ca) &&
            json_integer_value(ca) == t->container_attempt) {
            register_task(am, w->req, w->task, w->early, am_now_ms());
        } else {
            am_reply_json(w->req, 409, json_pack("{s:s,s:s}", AM_API_STATUS, AM_API_ENDING, AM_API_ERROR,
                                                 "this container is not kept for the next attempt"));
            json_decref(w->early);
        }
    }
    free(ws);
}

void am_api_free(tony_am *am) {
    am_watch_free(am);
    am_api *a = am->api;
    if (!a) return;
    for (size_t i = 0; i < a->nwaiters; i++) json_decref(a->waiters[i].early);
    go_cache_free(am);
    free(a->waiters);
    free(a->waiter_slot);
    free(a->rel);
    free(a->rel_slot);
    /* the server tells of no answer leaving while it is freed */
    tony_http_server_free(a->http);
    for (go_flight *f = a->flights, *next; f; f = next) {
        next = f->next;
        free(f);
    }
    if (a->pump_ev) event_free(a->pump_ev);
    tony_host_check_free(&a->hosts);
    if (a->dns) evdns_base_free(a->dns, 0);
    tony_apiauth_replay_free(a->auth_replay);
    free(a);
    am->api = NULL;
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

/* The replay cache's sender of a call (apiauth.h): 0 for the job's
 * clients (kill, finish) and calls naming no task of the job, 1 + the
 * task's place in the job for its executor. */
static size_t auth_sender(const tony_am *am, const am_task *t) {
    return t ? 1 + (size_t)(t - am->fsm.job.tasks) : 0;
}

/* Whether a state-changing call proves the job's key (common/apiauth.h):
 * a MAC over its method, Host, target, timestamp, nonce and body, within
 * the window of this coordinator's clock, not seen before from its sender.
 * Its answer, whatever it is and whenever it comes (a long poll), is
 * signed for it once the MAC is good. A refusal is a 403 saying why; one
 * about the caller's clock or a replay is signed and carries this
 * coordinator's time (and the sender's floor), so that a genuine caller
 * whose clock is off corrects it and tries again (common/http.c). */
static bool authentic(tony_am *am, struct evhttp_request *req, size_t sender) {
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    struct evbuffer *body = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(body);
    const tony_apiauth_key key = am->api->auth_key;
    tony_apiauth_claim c;
    long long now = tony_wall_ms();
    tony_apiauth_verdict v =
        tony_apiauth_verify(&key, evhttp_find_header(in, TONY_APIAUTH_HEADER), "POST", evhttp_find_header(in, "Host"),
                            evhttp_request_get_uri(req), n ? evbuffer_pullup(body, -1) : NULL, n, now, &c);
    if (!am->api->auth_replay) am->api->auth_replay = tony_apiauth_replay_new();
    if (v == TONY_APIAUTH_OK && !tony_apiauth_replay_check(am->api->auth_replay, sender, &c)) v = TONY_APIAUTH_BAD_REPLAY;
    if (v == TONY_APIAUTH_OK || v == TONY_APIAUTH_BAD_CLOCK || v == TONY_APIAUTH_BAD_REPLAY)
        tony_http_reply_sign(req, &key, c.nonce_hex);
    if (v == TONY_APIAUTH_OK) return true;
    const char *why =
        v == TONY_APIAUTH_BAD_CLOCK    ? "the call's timestamp is too far from the coordinator's clock"
        : v == TONY_APIAUTH_BAD_REPLAY ? "this call was made before (a replay)"
        : v == TONY_APIAUTH_BAD_WRONG  ? "wrong " TONY_APIAUTH_HEADER ": it is not signed with the job's key"
                                       : "missing or malformed " TONY_APIAUTH_HEADER
                                         ": state changes must be signed with the job's key";
    json_t *o = json_pack("{s:s,s:s}", AM_API_ERROR, why, TONY_APIAUTH_REFUSED, tony_apiauth_verdict_word(v));
    if (v == TONY_APIAUTH_BAD_CLOCK || v == TONY_APIAUTH_BAD_REPLAY) {
        json_object_set_new(o, TONY_APIAUTH_NOW_MS, json_integer(now));
        json_object_set_new(o, TONY_APIAUTH_FLOOR_MS, json_integer(tony_apiauth_replay_floor(am->api->auth_replay, sender)));
    }
    /* only calls that hold the key are logged: a stranger cannot fill the log */
    if (v == TONY_APIAUTH_BAD_CLOCK || v == TONY_APIAUTH_BAD_REPLAY)
        tony_warn("refused a call to %s: %s", evhttp_request_get_uri(req), why);
    am_reply_json(req, 403, o);
    return false;
}

/* A task's log dir for attempt, or NULL when the job has no such task: the
 * path is built from validated numbers and a role of the plan, or is the
 * one its executor reported, never from the request's text. In the
 * current attempt a reported dir that is on this disk wins (a YARN
 * container on this node); else the job dir's layout (the local backend). */
static char *task_log_dir(const tony_am *am, const char *role, int index, int attempt) {
    if (am->plan.single_node) {
        if (strcmp(role, "am") != 0 || index != 0 || !am->single.place.log_dir) return NULL;
        return tony_strdup(am->single.place.log_dir);
    }
    const am_task *t = am_job_task((am_job *)&am->fsm.job, role, index);
    if (!t) return NULL;
    if (attempt == am->fsm.job.attempt && t->log_dir && tony_is_dir(t->log_dir)) return tony_strdup(t->log_dir);
    return tony_jobdir_task_dir(am->id.job_dir, attempt, role, index);
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
        am_reply_error(req, 400, "malformed query string");
        return;
    }
    const char *stream = "stdout", *bad = NULL;
    long long offset = 0, attempt = am->fsm.job.attempt;
    for (struct evkeyval *kv = q.tqh_first; kv && !bad; kv = kv->next.tqe_next) {
        if (strcmp(kv->key, AM_API_LOG_STREAM) == 0) {
            if (strcmp(kv->value, "stdout") != 0 && strcmp(kv->value, "stderr") != 0)
                bad = "stream must be stdout or stderr";
            else stream = kv->value[3] == 'o' ? "stdout" : "stderr";
        } else if (strcmp(kv->key, AM_API_LOG_OFFSET) == 0) {
            if (!query_uint(kv->value, LLONG_MAX / 2, &offset)) bad = "offset must be a byte offset (0 or more)";
        } else if (strcmp(kv->key, AM_API_ATTEMPT) == 0) {
            if (!query_uint(kv->value, am->fsm.job.attempt, &attempt))
                bad = "attempt must be a number from 0 to the job's current attempt";
        } else if (strcmp(kv->key, AM_API_TOKEN_PARAM) != 0) { /* the read token was checked already */
            bad = "unknown parameter; use stream, offset and attempt";
        }
    }
    /* A task whose backend reads its output (on YARN: from its node's
     * NodeManager, wherever that node is). */
    const am_task *rt = bad || am->plan.single_node ? NULL : am_job_task(&am->fsm.job, role, index);
    const char *link = !rt ? NULL : attempt == am->fsm.job.attempt ? rt->log_url : NULL;
    for (size_t i = 0; rt && !link && i < rt->nruns; i++)
        if (rt->runs[i].attempt == attempt) link = rt->runs[i].log_url; /* an earlier attempt's container */
    if (link) {
        am_logfetch_start(am, req, link, role, index, (int)attempt, stream, offset);
        evhttp_clear_headers(&q);
        return;
    }
    char *dir = bad ? NULL : task_log_dir(am, role, index, (int)attempt);
    if (bad || !dir) {
        am_reply_error(req, bad ? 400 : 404, bad ? bad : "no such task in this job");
        evhttp_clear_headers(&q);
        return;
    }
    char *path = tony_path_join(dir, stream);
    tony_buf data = {0};
    long long size = 0;
    tony_error err;
    int rc = tony_read_range(path, offset, AM_LOG_CHUNK, &data, &size, &err);
    if (rc == 0 && offset > size) {
        am_reply_error(req, 400, "offset is past the end of the log");
    } else if (rc == 0) {
        am_reply_json(req, 200, am_log_chunk_json(role, index, (int)attempt, stream, offset, data.data, data.len, size,
                                                   tony_file_exists(path)));
    } else {
        am_reply_error(req, 500, err.msg);
    }
    tony_buf_free(&data);
    free(path);
    free(dir);
    evhttp_clear_headers(&q);
}


/* A heartbeat's answer carries the task's credentials when the backend has
 * newer ones than the executor says it holds (backend.h, task_credentials). */
static void add_newer_credentials(tony_am *am, const json_t *body, json_t *answer) {
    if (!am->backend) return;
    long long have = json_integer_value(json_object_get(body, TONY_HEARTBEAT_CREDENTIALS_HAVE));
    tony_buf creds = {0};
    long long g = tony_backend_newer_credentials(am->backend, have, &creds);
    if (g > 0) {
        char *b64 = tony_base64_encode(creds.data, creds.len, false);
        json_object_set_new(answer, TONY_HEARTBEAT_CREDENTIALS,
                            json_pack("{s:I, s:s}", TONY_HEARTBEAT_CREDENTIALS_GENERATION, (json_int_t)g,
                                      TONY_HEARTBEAT_CREDENTIALS_DATA, b64));
        free(b64);
    }
    tony_buf_free(&creds);
}

/* POST register: host:port (and more) of a task's executor, held until the
 * state machine releases the gang. Takes body. */
/* What a register body says (its strings stay body's), or -1 having
 * answered 400. */
static int read_registration(tony_am *am, struct evhttp_request *req, const am_task *t, json_t *body,
                             am_registration *r) {
    const char *host = json_string_value(json_object_get(body, AM_API_HOST));
    json_int_t port = json_integer_value(json_object_get(body, AM_API_PORT));
    json_t *tb = json_object_get(body, AM_API_TB_PORT);
    json_int_t tb_port = json_integer_value(tb);
    if (!host || !*host || port <= 0 || port > 65535 || (tb && (!json_is_integer(tb) || tb_port <= 0 || tb_port > 65535))) {
        am_reply_error(req, 400, "register needs \"host\" (string) and \"port\" (1-65535); \"tb_port\", if given, 1-65535");
        return -1;
    }
    const char *log_url = json_string_value(json_object_get(body, AM_API_LOG_URL));
    /* Kept only when the backend can read the log from it. */
    tony_error lerr;
    if (log_url && !t->host && am_backend_reads_log_url(am, log_url, &lerr) != 0) {
        tony_warn("%s:%d reported a log link the coordinator cannot read from: %s", t->role->name, t->index, lerr.msg);
        log_url = NULL;
    }
    *r = (am_registration){.host = host,
                           .port = (int)port,
                           .tb_port = (int)tb_port,
                           .log_dir = json_string_value(json_object_get(body, AM_API_LOG_DIR)),
                           .container = json_string_value(json_object_get(body, AM_API_CONTAINER)),
                           .log_url = log_url};
    return 0;
}

/* A task back from a lost coordinator for an attempt that one had begun to
 * restart (fsm.h, am_fsm_superseded): answered "next", the attempt the
 * tasks are back for. True when answered. */
static bool superseded(tony_am *am, struct evhttp_request *req, const am_task *t, int attempt) {
    if (!am_fsm_superseded(&am->fsm, attempt)) return false;
    tony_info("%s:%d came back for attempt %d, which the lost coordinator was restarting: on to attempt %d",
              t->role->name, t->index, attempt, am->fsm.job.attempt);
    am_reply_json(req, 200, next_json(am, t, am->fsm.job.attempt));
    return true;
}

/* What an executor coming back to this coordinator (adopt_task,
 * rejoin_task) registers and for which attempts; true when already
 * answered (400, or "next": superseded), body dropped. */
static bool comeback_answered(tony_am *am, struct evhttp_request *req, am_task *t, json_t *body,
                              am_registration *r, int *attempt, int *container_attempt) {
    if (read_registration(am, req, t, body, r)) {
        json_decref(body);
        return true;
    }
    *attempt = (int)json_integer_value(json_object_get(body, AM_API_ATTEMPT));
    *container_attempt = (int)json_integer_value(json_object_get(body, AM_API_CONTAINER_ATTEMPT));
    if (superseded(am, req, t, *attempt)) {
        json_decref(body);
        return true;
    }
    return false;
}

/* The backend's side of a task coming back: the container it names, one
 * the backend handed back, becomes t's. NULL, or why not. */
static const char *claim_container(tony_am *am, const am_task *t, const am_registration *r, int container_attempt,
                                   tony_error *err) {
    if (tony_backend_adopt(am->backend, t->role->name, t->index, container_attempt, r->container, err))
        return err->msg;
    return NULL;
}

/* POST register with "adopt": the executor of a lost coordinator comes
 * back with its process running (fsm.h, am_fsm_adopted), in a container
 * the backend handed back; answered at once, "adopted" or 409 (its
 * executor then stops its process). Takes body. */
static void adopt_task(tony_am *am, struct evhttp_request *req, am_task *t, json_t *body, long long now) {
    am_registration r;
    int attempt, container_attempt;
    if (comeback_answered(am, req, t, body, &r, &attempt, &container_attempt)) return;
    int pid = (int)json_integer_value(json_object_get(body, AM_API_ADOPT));
    tony_error err;
    const char *why = NULL;
    if (!am->fsm.recovering || t->host) why = "this coordinator takes no task back now";
    else if (pid <= 0) why = "\"" AM_API_ADOPT "\" must be the pid of the task's running process";
    else why = claim_container(am, t, &r, container_attempt, &err);
    if (!why && am_fsm_adopted(&am->fsm, t, &r, attempt, container_attempt, pid, now, &am->pending) != AM_REG_NEW)
        why = "it works for another attempt than the tasks that came back first";
    if (why) {
        tony_warn("%s:%d cannot come back: %s", t->role->name, t->index, why);
        am_reply_json(req, 409, json_pack("{s:s,s:s}", AM_API_STATUS, AM_API_STOP, AM_API_ERROR, why));
    } else {
        tony_info("%s:%d came back at %s:%d, pid %d running, attempt %d", t->role->name, t->index, t->host, t->port,
                  pid, attempt);
        am->status_dirty = true;
        am_record_task_adopted(am, t);
        am_reply_json(req, 200, json_pack("{s:s}", AM_API_STATUS, AM_API_ADOPTED));
        am_kick(am);
    }
    json_decref(body);
}

/* POST register with "returning": the executor of a lost coordinator that
 * was waiting at its gang barrier comes back (fsm.h, am_fsm_rejoined):
 * held like any registration until the gang goes, or 409. Takes body. */
static void rejoin_task(tony_am *am, struct evhttp_request *req, am_task *t, json_t *body, long long now) {
    am_registration r;
    int attempt, container_attempt;
    if (comeback_answered(am, req, t, body, &r, &attempt, &container_attempt)) return;
    tony_error err;
    const char *why = NULL;
    am_reg_result res = AM_REG_ENDING;
    if (!t->host) why = claim_container(am, t, &r, container_attempt, &err);
    if (!why && (res = am_fsm_rejoined(&am->fsm, t, &r, attempt, container_attempt, now, &am->pending)) == AM_REG_ENDING)
        why = "it waits for another attempt than the tasks that came back first";
    json_decref(body);
    if (why) {
        tony_warn("%s:%d cannot come back: %s", t->role->name, t->index, why);
        am_reply_json(req, 409, json_pack("{s:s,s:s}", AM_API_STATUS, AM_API_ENDING, AM_API_ERROR, why));
        return;
    }
    if (res == AM_REG_NEW) {
        tony_info("%s:%d came back at %s:%d, waiting at the gang barrier, attempt %d", t->role->name, t->index,
                  t->host, t->port, attempt);
        am->status_dirty = true;
        am_record_task_adopted(am, t);
    }
    add_waiter(am, req, t, NULL);
    am_kick(am);
}

static void register_task(tony_am *am, struct evhttp_request *req, am_task *t, json_t *body, long long now) {
    const char *role = t->role->name;
    int index = t->index;
    am_registration r;
    if (read_registration(am, req, t, body, &r)) {
        json_decref(body);
        return;
    }
    am_reg_result res = am_fsm_registered(&am->fsm, t, &r, now, &am->pending);
    json_decref(body);
    if (res == AM_REG_ENDING && am->fsm.job.attempt_over && am_fsm_keeps_container(&am->fsm, t)) {
        am_reply_json(req, 200, next_json(am, t, am->fsm.job.attempt + 1));
        return;
    }
    if (res == AM_REG_ENDING) {
        am_reply_json(req, 409, json_pack("{s:s}", AM_API_STATUS, AM_API_ENDING));
        return;
    }
    if (res == AM_REG_NEW) {
        am->status_dirty = true;
        tony_info("registered %s:%d at %s:%d (%d of %d)", role, index, t->host, t->port,
                  am_job_count_registered(&am->fsm.job), am_job_count_requested(&am->fsm.job));
        am_record_task_registered(am, t);
    }
    /* answered when the state machine releases the gang */
    add_waiter(am, req, t, NULL);
    am_kick(am);
}

/* The log policies the executor saw match (conf/logpolicy.h): they count
 * when the task fails. */
static void log_matched(tony_am *am, am_task *t, const json_t *matches) {
    size_t i;
    const json_t *m;
    json_array_foreach(matches, i, m) {
        const char *policy = json_string_value(json_object_get(m, AM_API_MATCH_POLICY));
        const char *action = json_string_value(json_object_get(m, AM_API_MATCH_ACTION));
        const char *stream = json_string_value(json_object_get(m, AM_API_MATCH_STREAM));
        const char *line = json_string_value(json_object_get(m, AM_API_MATCH_LINE));
        tony_logpolicy_action a;
        if (!policy || !action || !line || !tony_logpolicy_action_parse(action, &a)) continue;
        tony_info("%s:%d: log policy '%s' matched: %s", t->role->name, t->index, policy, line);
        am_fsm_log_matched(&am->fsm, t, a == TONY_LOGPOLICY_FAIL, policy, stream ? stream : "output", line);
    }
}

/* <role>/<index>/<verb>: a role of [a-z] (63 at most), an index of decimal
 * digits only (no sign, no space) and a verb of [a-z] (31 at most). An
 * index beyond an int is no task (*in_range false), never another one
 * (sscanf's %d took 4294967296 for 0). */
static bool parse_task_path(const char *rest, char role[64], int *index, bool *in_range, char verb[32]) {
    size_t n = strspn(rest, "abcdefghijklmnopqrstuvwxyz");
    if (n == 0 || n > 63 || rest[n] != '/') return false;
    memcpy(role, rest, n);
    role[n] = '\0';
    rest += n + 1;
    n = strspn(rest, "0123456789");
    if (n == 0 || rest[n] != '/') return false;
    long long v = 0;
    *in_range = true;
    for (size_t i = 0; i < n; i++) {
        v = v * 10 + (rest[i] - '0');
        if (v > INT_MAX) {
            *in_range = false;
            v = 0;
            break;
        }
    }
    *index = (int)v;
    rest += n + 1;
    n = strspn(rest, "abcdefghijklmnopqrstuvwxyz");
    if (n == 0 || n > 31 || rest[n]) return false;
    memcpy(verb, rest, n);
    verb[n] = '\0';
    return true;
}

/* What routing found for a request (api_routes.h), handed to its route's
 * handler. */
struct am_call {
    tony_am *am;
    struct evhttp_request *req;
    const char *path, *query;
    /* task routes: /v1/tasks/<role>/<index>/<verb> */
    char role[64];
    int index;
    /* AM_WHO_EXECUTOR: the task (one of the job's), the body (the
     * handler's to drop) and the attempt it names */
    am_task *task;
    json_t *body;
    int attempt;
    long long now;
};

/* Answers 200 with answer (taken) and drops the call's body. */
static void reply_done(am_call *c, json_t *answer) {
    json_decref(c->body);
    am_reply_json(c->req, 200, answer);
}

static json_t *ok_json(void) { return json_pack("{s:s}", AM_API_STATUS, AM_API_OK); }

/* GET metrics: the task's sampled series. */
static void on_metrics_get(am_call *c) {
    const am_task *mt = am_job_task(&c->am->fsm.job, c->role, c->index);
    am_metrics *m = mt ? am_task_metrics(c->am, mt) : NULL;
    if (!m) {
        am_reply_error(c->req, 404, "no such task in this job");
        return;
    }
    json_t *o = am_metrics_series_json(m);
    json_object_set_new(o, "role", json_string(c->role));
    json_object_set_new(o, "index", json_integer(c->index));
    json_object_set_new(o, AM_API_ATTEMPT, json_integer(c->am->fsm.job.attempt));
    am_reply_json(c->req, 200, o);
}

static void on_log(am_call *c) { handle_log(c->am, c->req, c->role, c->index); }
static void on_stacks_get(am_call *c) { am_stacks_get(c->am, c->req, c->role, c->index); }

/* A kept container's executor, early for the next attempt: held until it
 * starts (am_api_admit_early) or the job ends; refused at once when there
 * is no next attempt for it. */
static void register_early(am_call *c) {
    if (!am_fsm_keeps_container(&c->am->fsm, c->task)) {
        json_decref(c->body);
        am_reply_json(c->req, 409, json_pack("{s:s,s:s}", AM_API_STATUS, AM_API_ENDING, AM_API_ERROR,
                                             "no next attempt for this container"));
        return;
    }
    add_waiter(c->am, c->req, c->task, c->body);
}

/* Whether the call names an attempt that is over; then answered 409. */
static bool stale(am_call *c) {
    if (c->attempt == c->am->fsm.job.attempt && c->am->fsm.state != AM_JOB_DONE) return false;
    json_decref(c->body);
    am_reply_json(c->req, 409, json_pack("{s:s,s:s}", AM_API_STATUS, AM_API_STALE, AM_API_ERROR, "this attempt is over"));
    return true;
}

/* POST register, by its kind: a task joining (held until the gang goes),
 * or an executor of a lost coordinator coming back with its process
 * running (adopt) or from the barrier (return: while this coordinator
 * recovers; after, it joins as any). */
static void on_register(am_call *c) {
    const char *kind = am_route_registration_kind(c->body);
    if (!kind) {
        json_decref(c->body);
        am_reply_error(c->req, 400,
                       "\"" AM_API_REG_KIND "\" must be \"" AM_API_REG_JOIN "\", \"" AM_API_REG_ADOPT
                       "\" or \"" AM_API_REG_RETURN "\"");
        return;
    }
    if (strcmp(kind, AM_API_REG_ADOPT) == 0) adopt_task(c->am, c->req, c->task, c->body, c->now);
    else if (strcmp(kind, AM_API_REG_RETURN) == 0 && c->am->fsm.recovering)
        rejoin_task(c->am, c->req, c->task, c->body, c->now);
    else if (c->attempt == c->am->fsm.job.attempt + 1) register_early(c);
    else if (!stale(c)) register_task(c->am, c->req, c->task, c->body, c->now);
}

/* POST watch: held until the task must stop (am/watch.h). */
static void on_watch(am_call *c) {
    json_decref(c->body);
    am_watch_add(c->am, c->req, c->task);
}

static void on_heartbeat(am_call *c) {
    tony_am *am = c->am;
    am_task *t = c->task;
    json_t *tb = json_object_get(c->body, AM_API_TENSORBOARD_UP);
    bool tb_changed;
    am_hb_answer hb = am_fsm_heartbeat(&am->fsm, t, json_is_boolean(tb) ? json_is_true(tb) : -1, c->now, &tb_changed);
    if (tb_changed) {
        am->status_dirty = true;
        tony_info("%s:%d: TensorBoard %s on port %d", c->role, c->index,
                  t->tb_listening ? "serves" : "no longer serves", t->tb_port);
    }
    if (hb == AM_HB_STOP) {
        /* The executor stops its task: the end does not hang on the
         * backend's stop alone (issue 11 #1). */
        json_decref(c->body);
        am_reply_json(c->req, 409, json_pack("{s:s,s:s}", AM_API_STATUS, AM_API_STOP, AM_API_ERROR,
                                             "the attempt is ending: stop the task"));
        return;
    }
    json_t *answer = ok_json();
    add_newer_credentials(am, c->body, answer);
    /* hang diagnosis (am/hang.h): how idle the task is; whether to dump its stacks */
    json_t *idle = json_object_get(c->body, AM_API_IDLE_MS);
    if (json_is_integer(idle)) am_fsm_progress(&am->fsm, t, json_integer_value(idle), c->now);
    if (am_fsm_wants_stacks(&am->fsm, t)) json_object_set_new(answer, AM_API_DUMP_STACKS, json_true());
    reply_done(c, answer);
}

static void on_stacks_post(am_call *c) {
    am_stacks_post(c->am, c->req, c->task, c->body);
    json_decref(c->body);
}

static void on_started(am_call *c) {
    am_fsm_started(&c->am->fsm, c->task, (int)json_integer_value(json_object_get(c->body, AM_API_PID)), c->now);
    c->am->status_dirty = true;
    am_record_task_started(c->am, c->task);
    reply_done(c, ok_json());
}

static void on_metrics_post(am_call *c) {
    tony_sample sample;
    tony_error err;
    if (tony_sample_from_json(c->body, &sample, &err)) {
        json_decref(c->body);
        am_reply_error(c->req, 400, err.msg);
        return;
    }
    am_metrics *m = am_task_metrics(c->am, c->task);
    if (m) am_metrics_add(m, &sample);
    /* A sample is a sign of life too. status.json is not rewritten for
     * it (live readers ask /v1/job); the final one carries the totals. */
    am_fsm_alive(&c->am->fsm, c->task, c->now);
    reply_done(c, ok_json());
}

/* Reallocating, this only stops heartbeat monitoring (the result is the
 * container's exit status, as in TonY); in place it is the task's end, and
 * the answer says whether its executor stays. */
static void on_finished(am_call *c) {
    tony_am *am = c->am;
    am_task *t = c->task;
    json_t *body = c->body;
    json_t *code = json_object_get(body, AM_API_EXIT_CODE);
    bool was_done = am_task_done(t);
    /* its last words (root cause, cause.h) and log policy matches come first */
    am_fsm_task_output(&am->fsm, t, json_string_value(json_object_get(body, AM_API_STDERR_TAIL)),
                       json_string_value(json_object_get(body, AM_API_ERROR_REPORT)));
    log_matched(am, t, json_object_get(body, AM_API_LOG_MATCHES));
    json_t *peak = json_object_get(body, AM_API_PEAK_MEMORY_BYTES);
    am_metrics *m = am_task_metrics(am, t);
    if (m && json_is_integer(peak)) am_metrics_set_peak(m, json_integer_value(peak));
    am_fsm_result_reported(&am->fsm, t, json_is_integer(code) ? (int)json_integer_value(code) : 1,
                           json_is_true(json_object_get(body, AM_API_TIMED_OUT)), c->now, &am->pending);
    if (!was_done && am_task_done(t)) {
        am->status_dirty = true;
        am_record_task_exit(am, t);
    }
    json_t *answer = am_fsm_keeps_container(&am->fsm, t) ? next_json(am, t, am->fsm.job.attempt + 1) : ok_json();
    am_watch_release_task(am, t); /* its own watch ends with it */
    am_kick(am);
    reply_done(c, answer);
}

/* Why no TensorBoard serves now, in words for whoever followed the link. */
static char *why_no_tensorboard(const tony_am *am) {
    const am_task *t = NULL;
    for (size_t i = 0; i < am->fsm.job.ntasks && !t; i++)
        if (am_job_reserves_tb_port(&am->fsm.job, &am->fsm.job.tasks[i])) t = &am->fsm.job.tasks[i];
    if (!t)
        return tony_sprintf("Job %s runs no TensorBoard: no task of it reserves TB_PORT. Submit it with "
                            "--sidecar_tensorboard_log_dir DIR, or have the chief start TensorBoard on $TB_PORT.",
                            am->id.app_id);
    const char *dir = am->plan.tensorboard_log_dir;
    if ((am->fsm.state == AM_JOB_DONE))
        return tony_sprintf("Job %s has ended: no TensorBoard serves for it any more (TB_PORT was %s:%d's).%s%s",
                            am->id.app_id, t->role->name,
                            t->index, dir ? " To look at its summaries now: tensorboard --logdir " : "", dir ? dir : "");
    if (am_task_done(t))
        return tony_sprintf("Job %s: %s:%d, which served TensorBoard, is no longer running (%s); its log tells why: "
                            "tony logs %s --task %s:%d",
                            am->id.app_id, t->role->name, t->index, am_task_state_name(t->state), am->id.app_id,
                            t->role->name, t->index);
    if (t->state != AM_TASK_RUNNING)
        return tony_sprintf("Job %s: %s:%d, which serves TensorBoard, has not started yet (%s); try again shortly.",
                            am->id.app_id, t->role->name, t->index, am_task_state_name(t->state));
    return tony_sprintf("Job %s: %s:%d runs, but nothing serves on its TB_PORT (%d) yet. %s", am->id.app_id,
                        t->role->name, t->index, t->tb_port,
                        t->role->kind == TONY_ROLE_SIDECAR ? "TensorBoard takes a few seconds to start; try again shortly."
                                                           : "Without a sidecar, the job's own code must start "
                                                             "TensorBoard on $TB_PORT (or use "
                                                             "--sidecar_tensorboard_log_dir).");
}

/* GET /tensorboard[/<path>]: the way from the job's tracking URL (this
 * API's root, also behind YARN's proxy) to its TensorBoard. */
static void serve_tensorboard(tony_am *am, struct evhttp_request *req, const char *rest, const char *query) {
    const am_task *t = am_view_tensorboard_task(am);
    if (!t) {
        char *why = why_no_tensorboard(am);
        am_reply_text(req, 404, why);
        free(why);
        return;
    }
    if (*rest == '/') rest++;
    /* the read token is ours: TensorBoard does not get it */
    char *passed = tony_read_query_without_token(query);
    char *to = tony_sprintf("http://%s:%d/%s%s%s", t->host, t->tb_port, rest, *passed ? "?" : "", passed);
    free(passed);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Location", to);
    char *text = tony_sprintf("TensorBoard of %s:%d is at %s", t->role->name, t->index, to);
    am_reply_text(req, 302, text);
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
            am_reply_error(req, 400, "since must be an event seq number >= 0 (the \"next\" of the last answer)");
            return;
        }
    }
    evhttp_clear_headers(&q);
    am_reply_json(req, 200, am_record_events_json(am, since));
}

/* The web page's own files (the same for every job, compiled in: they hold
 * nothing of it) are served to anyone; a link to them carrying the token
 * sends the browser on with the token in the URL's fragment, where the
 * page's script takes it (common/readtoken.h). Elsewhere (the API, the
 * TensorBoard redirect) ?token= is taken as is. */
static bool page_path(const char *path) {
    return strcmp(path, "/") == 0 || strncmp(path, AM_API_UI, strlen(AM_API_UI)) == 0;
}

static bool tensorboard_path(const char *path) {
    size_t n = strlen(AM_API_TENSORBOARD);
    return strncmp(path, AM_API_TENSORBOARD, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Every GET reads the job (its config, logs, events): only with the read
 * token. 0 when the request may go on; else it is answered. The redirect to
 * a TensorBoard that serves is the exception: it tells no more than that
 * TensorBoard, which takes no credential, and the page's assets behind
 * YARN's proxy (which passes no cookie or header of ours on) come through
 * it; why none serves is the job's, and needs the token. */
static int reads_allowed(tony_am *am, struct evhttp_request *req, const char *path, const char *query) {
    /* the notebook's proxy checks every method itself (am/notebook_proxy.h) */
    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET || am_notebook_path(path)) return 0;
    if (tensorboard_path(path) && am_view_tensorboard_task(am)) return 0;
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    /* a malformed query carries no token; its handler says what is wrong */
    if (query && evhttp_parse_query_str(query, &q)) evhttp_clear_headers(&q);
    tony_read_verdict v = tony_read_check(&am->api->reads, req, path, &q);
    evhttp_clear_headers(&q);
    if (v == TONY_READ_REFUSED)
        am_reply_error(req, 403,
                       "reading this job needs its read token: open the URL `tony submit` printed (.../?" AM_API_TOKEN_PARAM
                       "=...), use `tony status`/`tony logs` as the job's owner, or pass the job's read token in "
                       "the " AM_API_TOKEN_HEADER " header");
    return v == TONY_READ_ALLOWED ? 0 : -1;
}

/* A web page of another site that rebinds its name to this machine must not
 * read the job's config and logs through the user's browser: only the
 * coordinator's own names (the one in its URL, executors, clients and
 * YARN's web proxy use) and addresses are answered. */
static bool host_ok(tony_am *am, struct evhttp_request *req) {
    const char *host = evhttp_find_header(evhttp_request_get_input_headers(req), "Host");
    if (tony_host_check_ok(&am->api->hosts, host)) return true;
    char *names = tony_host_check_describe(&am->api->hosts);
    char *msg = tony_sprintf("this coordinator answers requests for %s on port %d, not for Host '%.200s' (a web page "
                             "of another site may be trying to read it through DNS rebinding); use %s",
                             names, am->api->hosts.port, host, am->id.url);
    am_reply_error(req, 421, msg);
    free(msg);
    free(names);
    return false;
}

static void on_ui(am_call *c) {
    const am_webui_file *f = am_webui_find(c->path[1] ? c->path + strlen(AM_API_UI) : "index.html");
    if (!f) am_reply_error(c->req, 404, "no such file in the web UI");
    else am_webui_reply(c->req, f);
}

static void on_job(am_call *c) { reply_job(c->am, c->req, c->query); }
static void on_events(am_call *c) { serve_events(c->am, c->req, c->query); }
static void on_tensorboard(am_call *c) {
    serve_tensorboard(c->am, c->req, c->path + strlen(AM_API_TENSORBOARD), c->query);
}

/* POST kill, finish: the job's client. */
static void on_kill(am_call *c) {
    am_reply_json(c->req, 200, ok_json());
    tony_info("kill requested");
    am_record_kill(c->am);
    am_fsm_kill(&c->am->fsm, am_now_ms(), &c->am->pending);
    am_kick(c->am);
}

/* POST scale: the job's client resizes a role of an elastic job (fsm.h,
 * am_fsm_scale): 200 once the target is set, 400 for the user's mistake
 * (not elastic, no such role, out of bounds), 409 when the job cannot
 * take it now; the error says which. */
static void on_scale(am_call *c) {
    tony_am *am = c->am;
    json_t *body = read_body(c->req);
    const char *role = body ? json_string_value(json_object_get(body, AM_API_SCALE_ROLE)) : NULL;
    json_t *n = body ? json_object_get(body, AM_API_SCALE_INSTANCES) : NULL;
    if (!role || !json_is_integer(n) || json_integer_value(n) < 0 || json_integer_value(n) > INT_MAX) {
        json_decref(body);
        am_reply_error(c->req, 400, "the body must be {\"" AM_API_SCALE_ROLE "\": ROLE, \"" AM_API_SCALE_INSTANCES
                                    "\": N}");
        return;
    }
    tony_error err;
    am_scale_result r = am_fsm_scale(&am->fsm, role, (int)json_integer_value(n), am_now_ms(), &am->pending, &err);
    if (r == AM_SCALE_OK) {
        tony_info("scale requested: %s=%lld", role, (long long)json_integer_value(n));
        am_reply_json(c->req, 200, ok_json());
        am->status_dirty = true;
        am_kick(am);
    } else {
        am_reply_error(c->req, r == AM_SCALE_BAD ? 400 : 409, err.msg);
    }
    json_decref(body);
}

static void on_finish(am_call *c) {
    am_reply_json(c->req, 200, ok_json());
    c->am->client_finished = true;
    am_kick(c->am);
}

/* The notebook's Jupyter, proxied (notebook_proxy.h checks who may pass,
 * for every method, itself). */
static void on_notebook(am_call *c) {
    tony_am *am = c->am;
    am_api *a = am->api;
    if (!a->dns) a->dns = evdns_base_new(am->base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
    am_notebook_proxy(&(am_notebook_ctx){am->base, a->dns, a->reads.token, &am->fsm.job, am->id.app_id, am->id.host,
                                         am->fsm.state == AM_JOB_DONE},
                      c->req);
}

/* The fields of an executor's call: "attempt", always, first. */
#define BODY(...) AM_API_ATTEMPT ", " __VA_ARGS__

/* The API: docs/api.md's route list is this table (test_api_routes). */
static const am_route routes[] = {
    {AM_MATCH_EXACT, "/", AM_METHOD_GET, AM_WHO_ANYONE, false, NULL,
     "the web page (`index.html`; `?token=T`: `302` to `./#token=T`, where the page takes it)", on_ui},
    {AM_MATCH_FILES, AM_API_UI, AM_METHOD_GET, AM_WHO_ANYONE, false, NULL,
     "the page's files: `app.js`, `token.js`, `plots.js`, `style.css`, `index.html`", on_ui},
    {AM_MATCH_EXACT, AM_API_JOB, AM_METHOD_GET, AM_WHO_READER, false, NULL,
     "the job and its tasks (below; `?offset=&limit=`: a page of them, `?state=FAILED,RUNNING&role=`: those in "
     "these states and of this role, `?tasks=0`: their counts only); also in `<job dir>/status.json`",
     on_job},
    {AM_MATCH_EXACT, AM_API_EVENTS, AM_METHOD_GET, AM_WHO_READER, false, NULL,
     "`?since=<seq>`: the job's event log from a sequence number on", on_events},
    {AM_MATCH_SUBTREE, AM_API_TENSORBOARD, AM_METHOD_GET, AM_WHO_READER, false, NULL,
     "`302` to the job's TensorBoard (below), or `404` with why, as text", on_tensorboard},
    {AM_MATCH_SUBTREE, AM_API_NOTEBOOK, AM_METHOD_ANY, AM_WHO_NOTEBOOK, false, NULL,
     "the notebook's Jupyter server (`tony notebook`), proxied with its WebSockets, under a secret folder (below); "
     "any method, each checked",
     on_notebook},
    {AM_MATCH_EXACT, AM_API_JOB_KILL, AM_METHOD_POST, AM_WHO_CLIENT, false, NULL, "kill the job", on_kill},
    {AM_MATCH_EXACT, AM_API_JOB_SCALE, AM_METHOD_POST, AM_WHO_CLIENT, false,
     AM_API_SCALE_ROLE ", " AM_API_SCALE_INSTANCES,
     "`tony scale`: the role's tasks in an elastic job's world (within its min-instances..instances); 400 or 409 "
     "with why",
     on_scale},
    {AM_MATCH_EXACT, AM_API_JOB_FINISH, AM_METHOD_POST, AM_WHO_CLIENT, false, NULL,
     "the client is done reading the final state", on_finish},
    {AM_MATCH_TASK, AM_API_LOG, AM_METHOD_GET, AM_WHO_READER, false, NULL,
     "a chunk of a task's stdout or stderr (below)", on_log},
    {AM_MATCH_TASK, AM_API_METRICS, AM_METHOD_GET, AM_WHO_READER, false, NULL,
     "the task's sampled RSS, CPU and GPU series", on_metrics_get},
    {AM_MATCH_TASK, AM_API_STACKS, AM_METHOD_GET, AM_WHO_READER, false, NULL,
     "`?attempt=A`: the stacks of a hung task's processes, as text", on_stacks_get},
    {AM_MATCH_TASK, AM_API_REGISTER, AM_METHOD_POST, AM_WHO_EXECUTOR, true,
     BODY(AM_API_REG_KIND ", " AM_API_HOST ", " AM_API_PORT ", " AM_API_TB_PORT "?, " AM_API_LOG_DIR ", "
          AM_API_CONTAINER_ATTEMPT ", " AM_API_CONTAINER "?, " AM_API_LOG_URL "?, " AM_API_ADOPT "?"),
     "long poll: `" AM_API_GO "` once the gang is complete, `" AM_API_WAIT "`, `" AM_API_NEXT "` or `" AM_API_ENDING
     "`",
     on_register},
    {AM_MATCH_TASK, AM_API_WATCH, AM_METHOD_POST, AM_WHO_EXECUTOR, false, AM_API_ATTEMPT,
     "long poll: `" AM_API_STOP "` when the task must stop, else `" AM_API_WAIT "`", on_watch},
    {AM_MATCH_TASK, AM_API_HEARTBEAT, AM_METHOD_POST, AM_WHO_EXECUTOR, false,
     BODY(AM_API_TENSORBOARD_UP "?, " AM_API_IDLE_MS "?, " TONY_HEARTBEAT_CREDENTIALS_HAVE),
     "`" AM_API_OK "` (refreshed credentials, `" AM_API_DUMP_STACKS "`), or 409 `" AM_API_STOP "`", on_heartbeat},
    {AM_MATCH_TASK, AM_API_STARTED, AM_METHOD_POST, AM_WHO_EXECUTOR, false, BODY(AM_API_PID),
     "the user's process started", on_started},
    {AM_MATCH_TASK, AM_API_METRICS, AM_METHOD_POST, AM_WHO_EXECUTOR, false, BODY("a sample's fields (common/sample.h)"),
     "one metrics sample", on_metrics_post},
    {AM_MATCH_TASK, AM_API_STACKS, AM_METHOD_POST, AM_WHO_EXECUTOR, false, BODY(AM_API_STACKS_TEXT),
     "the task's stacks (hang diagnosis)", on_stacks_post},
    {AM_MATCH_TASK, AM_API_FINISHED, AM_METHOD_POST, AM_WHO_EXECUTOR, false,
     BODY(AM_API_EXIT_CODE ", " AM_API_TIMED_OUT ", " AM_API_LOG_MATCHES ", " AM_API_PEAK_MEMORY_BYTES "?, "
          AM_API_STDERR_TAIL "?, " AM_API_ERROR_REPORT "?"),
     "the process ended: `" AM_API_OK "`, or `" AM_API_NEXT "` (the container is kept)", on_finished},
};
#define NROUTES (sizeof routes / sizeof *routes)

const am_route *am_api_routes(size_t *n) {
    *n = NROUTES;
    return routes;
}

/* The task calls' prelude: the signature, a task of the job, a JSON body
 * with "attempt", an attempt not over (unless the route takes any).
 * False when the call is answered. */
static bool executor_call(am_call *c, const am_route *r) {
    c->task = am_job_task(&c->am->fsm.job, c->role, c->index);
    if (!authentic(c->am, c->req, auth_sender(c->am, c->task))) return false;
    if (!c->task) {
        am_reply_error(c->req, 404, "no such task in this job");
        return false;
    }
    if (!(c->body = read_body(c->req))) {
        am_reply_error(c->req, 400, "the body must be a JSON object");
        return false;
    }
    json_t *attempt = json_object_get(c->body, AM_API_ATTEMPT);
    if (!json_is_integer(attempt)) {
        json_decref(c->body);
        am_reply_error(c->req, 400, "\"" AM_API_ATTEMPT "\" (integer) is required");
        return false;
    }
    c->attempt = (int)json_integer_value(attempt);
    c->now = am_now_ms();
    return r->any_attempt || !stale(c);
}

/* Routes c (its path, and for a task call its verb) through the table:
 * 404 when no route has the path, 405 naming the methods when none has
 * the method, else who may call is checked and the handler runs. */
static void route(am_call *c, const char *verb) {
    enum evhttp_cmd_type cmd = evhttp_request_get_command(c->req);
    am_method method = cmd == EVHTTP_REQ_GET ? AM_METHOD_GET : cmd == EVHTTP_REQ_POST ? AM_METHOD_POST : AM_METHOD_OTHER;
    const am_route *r = NULL;
    am_route_verdict v = am_route_find(routes, NROUTES, c->path, verb, method, &r);
    if (v == AM_ROUTE_NO_PATH && verb) {
        char *verbs = am_route_verbs(routes, NROUTES, ", ", " or ");
        char *msg = tony_sprintf("unknown task verb; expected %s", verbs);
        am_reply_error(c->req, 404, msg);
        free(msg);
        free(verbs);
        return;
    }
    if (v == AM_ROUTE_NO_PATH) {
        am_reply_error(c->req, 404, "unknown path; see " AM_API_JOB);
        return;
    }
    if (v == AM_ROUTE_NO_METHOD) {
        char *msg = tony_sprintf("use %s", am_route_methods(routes, NROUTES, c->path, verb));
        am_reply_error(c->req, 405, msg);
        free(msg);
        return;
    }
    if (r->who == AM_WHO_CLIENT && !authentic(c->am, c->req, auth_sender(c->am, NULL))) return;
    if (r->who == AM_WHO_EXECUTOR && !executor_call(c, r)) return;
    r->fn(c);
}

/* /v1/tasks/<role>/<index>/<verb> */
static void route_task(am_call *c, const char *rest) {
    char verb[32];
    bool in_range;
    if (!parse_task_path(rest, c->role, &c->index, &in_range, verb)) {
        char *verbs = am_route_verbs(routes, NROUTES, "|", "|");
        char *msg = tony_sprintf("unknown path; expected " AM_API_TASKS "<role>/<index>/<%s>", verbs);
        am_reply_error(c->req, 404, msg);
        free(msg);
        free(verbs);
    } else if (!in_range) {
        am_reply_error(c->req, 404, "no such task in this job");
    } else {
        route(c, verb);
    }
}

void am_api_handle(struct evhttp_request *req, void *arg) {
    tony_am *am = arg;
    if (!host_ok(am, req)) return;
    const char *uri = evhttp_request_get_uri(req);
    struct evhttp_uri *parsed = evhttp_uri_parse(uri);
    am_call c = {.am = am, .req = req, .path = parsed ? evhttp_uri_get_path(parsed) : NULL};
    c.query = parsed ? evhttp_uri_get_query(parsed) : NULL;
    if (!c.path) am_reply_error(req, 400, "malformed request URI");
    else if (reads_allowed(am, req, c.path, c.query)) { /* answered */
    } else if (strncmp(c.path, AM_API_TASKS, strlen(AM_API_TASKS)) == 0) route_task(&c, c.path + strlen(AM_API_TASKS));
    else route(&c, NULL);
    if (parsed) evhttp_uri_free(parsed);
}

/* The read gate and the Host check of a coordinator at am->id.host:am->id.port. */
static void api_gate(tony_am *am) {
    am_api *a = am->api;
    a->reads = (tony_read_gate){am->id.read_token, page_path};
    tony_host_check_init_job_server(&a->hosts, am->id.port, am->id.host);
    tony_apiauth_key_from_secret(am->id.secret, &a->auth_key);
}

void am_api_init(tony_am *am) {
    am->api = tony_xcalloc(1, sizeof *am->api);
    api_gate(am);
}

long long am_api_ui_seen_ms(const tony_am *am) { return am->api ? am->api->ui_seen_ms : 0; }

int am_api_start(tony_am *am, const char *bind_host, tony_error *err) {
    tony_http_server_opts o = {.what = "the coordinator API",
                               .max_body = 1 << 20,
                               .allowed_methods = EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH |
                                                  EVHTTP_REQ_DELETE, /* Jupyter's REST API, proxied */
                               .handler = am_api_handle,
                               .arg = am};
    am->api = tony_xcalloc(1, sizeof *am->api);
    am->api->http = tony_http_server_new(am->base, &o);
    if (tony_http_server_listen(am->api->http, bind_host, 0, &am->id.port, err)) return -1;
    am->id.url = tony_sprintf("http://%s:%d", am->id.host, am->id.port);
    api_gate(am);
    return 0;
}
