/* `tony portal`: TonY's history portal in the one binary. Serves the web UI
 * (web/portal.html, embedded) and a JSON API over the history tree: the job
 * list, one job's events, config, tasks, metric series and local logs. Every
 * request rescans the tree (a readdir per directory), so new jobs show up
 * at once; what each job's tony-final.xml says is kept until it changes. A
 * tree on HDFS is read from its local cache (histcache.h), synced on a job
 * list request at most every PORTAL_SYNC_MS. */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/jobjson.h"
#include "common/webui.h"
#include "client/args.h"
#include "client/client.h"
#include "client/confargs.h"
#include "client/histcache.h"
#include "client/histdir.h"
#include "common/fs.h"
#include "common/httpreply.h"
#include "common/hostcheck.h"
#include "common/httpserver.h"
#include "common/jhist.h"
#include "common/jobdir.h"
#include "common/readtoken.h"
#include "common/strv.h"
#include "conf/conf.h"

/* The most of a log one answer carries: a longer log is shown from its
 * tail unless an offset is asked for. */
#define PORTAL_LOG_MAX (8 * 1024 * 1024)
/* The least time between two syncs of an HDFS tree's cache: a sync is a
 * few WebHDFS listings on the portal's one thread. */
#define PORTAL_SYNC_MS 3000
/* TonY's portal port (tony.https.port). */
#define PORTAL_DEFAULT_PORT 19886

typedef struct portal {
    struct event_base *base;
    tony_http_server *http;
    tony_hist_source src; /* src.scan: the local tree (or the HDFS tree's cache) */
    long long synced_ms;  /* the last sync of a remote tree */
    char *sync_problem;   /* why the last sync failed, NULL when it did not */
    char *root; /* the tony root: where the local backend kept the jobs' logs */
    /* tony-final.xml path -> {"mtime_ns","size","facts"|"error"}; rebuilt
     * on each scan so that it holds only jobs still there. */
    json_t *facts;
    /* Host header values it answers (DNS rebinding): its names with its
     * port; any IP address when it serves every interface. */
    tony_host_check hosts;
    /* Made up at start: every read of the history carries it (header, or
     * ?token=; the page keeps it per origin: common/readtoken.h), on
     * loopback too, where every local user reaches the portal. */
    char *token;
} portal;

static void reply_error(struct evhttp_request *req, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reply_error(struct evhttp_request *req, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tony_http_reply_error(req, code, msg);
}

/* The job's tony-final.xml facts, from the cache while the file is the
 * same (mtime and size). */
static json_t *facts_for(portal *p, json_t *fresh, const tony_hist_job *j) {
    char *path = tony_path_join(j->dir, TONY_JOBDIR_CONF);
    struct stat st;
    json_int_t mtime = -1, size = -1;
    if (stat(path, &st) == 0) {
        mtime = (json_int_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        size = (json_int_t)st.st_size;
    }
    json_t *e = json_object_get(p->facts, path);
    if (!e || json_integer_value(json_object_get(e, "mtime_ns")) != mtime ||
        json_integer_value(json_object_get(e, "size")) != size) {
        json_t *facts;
        tony_error err;
        e = tony_hist_conf_facts(j, &facts, &err)
                ? json_pack("{s:I,s:I,s:s}", "mtime_ns", mtime, "size", size, "error", err.msg)
                : json_pack("{s:I,s:I,s:o}", "mtime_ns", mtime, "size", size, "facts", facts);
    } else {
        json_incref(e);
    }
    json_object_set_new(fresh, path, e);
    free(path);
    return e;
}

/* A remote tree's cache brought up to date, unless it was moments ago; a
 * failure leaves the cache as it was and is reported with the list. */
static void sync_remote(portal *p) {
    if (!tony_hist_source_remote(&p->src) || tony_wall_ms() - p->synced_ms < PORTAL_SYNC_MS) return;
    tony_error err;
    free(p->sync_problem);
    p->sync_problem = NULL;
    if (tony_hist_source_refresh(&p->src, NULL, &err))
        p->sync_problem = tony_sprintf("showing the copy from the last good sync: %s", err.msg);
    p->synced_ms = tony_wall_ms();
}

/* GET /v1/jobs */
static void serve_jobs(portal *p, struct evhttp_request *req) {
    tony_hist_list l = {0};
    sync_remote(p);
    const tony_jhist_dirs *d = &p->src.scan;
    tony_hist_scan(d, &l);
    json_t *jobs = json_array(), *fresh = json_object();
    for (size_t i = 0; i < l.len; i++) {
        const tony_hist_job *j = &l.items[i];
        json_t *o = tony_hist_job_json(j), *problems = json_array();
        json_t *e = facts_for(p, fresh, j);
        json_t *facts = json_object_get(e, "facts");
        if (facts) json_object_update(o, facts);
        else json_array_append(problems, json_object_get(e, "error"));
        if (!j->file)
            json_array_append_new(problems, json_sprintf("no .jhist file in %s", j->dir));
        json_object_set_new(o, "problems", problems);
        tony_hist_note_lost(o, j, p->root);
        json_array_append_new(jobs, o);
    }
    json_decref(p->facts);
    p->facts = fresh;
    json_t *body = json_pack("{s:s,s:s,s:s,s:I,s:o}", "location", p->src.shown, "finished", p->src.shown_finished,
                             "intermediate", p->src.shown_intermediate, "scanned_ms", (json_int_t)tony_wall_ms(), "jobs", jobs);
    if (tony_hist_source_remote(&p->src))
        json_object_set_new(body, "cache", json_pack("{s:s,s:I}", "dir", d->location, "synced_ms", (json_int_t)p->synced_ms));
    json_t *problems = json_array();
    if (p->sync_problem) json_array_append_new(problems, json_string(p->sync_problem));
    else if (!tony_is_dir(d->finished) && !tony_is_dir(d->intermediate))
        json_array_append_new(problems, json_sprintf("neither %s nor %s exists: no job has written history here yet",
                                                     p->src.shown_finished, p->src.shown_intermediate));
    json_object_set_new(body, "problems", problems);
    tony_http_reply_json(req, 200, body);
    tony_hist_list_free(&l);
}

/* A recorded log dir is served from only when it is plainly this job's:
 * absolute, no "." or ".." parts, the app id one of its parts. History
 * files are data anyone with write access to the tree could have made. */
static bool plausible_log_dir(const char *dir, const char *app_id) {
    if (!dir || dir[0] != '/') return false;
    bool has_id = false;
    char *copy = tony_strdup(dir), *save = NULL;
    bool ok = true;
    for (char *part = strtok_r(copy, "/", &save); part && ok; part = strtok_r(NULL, "/", &save)) {
        if (strcmp(part, ".") == 0 || strcmp(part, "..") == 0) ok = false;
        if (strcmp(part, app_id) == 0) has_id = true;
    }
    free(copy);
    return ok && has_id;
}

/* The dir the tony root keeps a job's local files in: the root as the user
 * named it (resolved: it is theirs), then jobs/<id> taken as is. */
static char *local_job_dir(const portal *p, const char *app_id) {
    char *root = realpath(p->root, NULL);
    char *dir = tony_sprintf("%s/jobs/%s", root ? root : p->root, app_id);
    free(root);
    return dir;
}

/* A task's stream of one attempt on this machine, opened (*fd, and *path
 * for messages): the local backend's layout under our tony root first, then
 * the log dir the executor reported for the attempt history recorded.
 * Either way the file must lie in that dir itself, not behind a symlink.
 * Returns 0, 1 when this machine has no such log, -1 when one is there but
 * refused (err says why). */
static int open_task_log(const portal *p, const char *app_id, const json_t *task, int attempt, const char *stream,
                         int *fd, char **path, tony_error *err) {
    char *jd = local_job_dir(p, app_id);
    char *dir = tony_jobdir_task_dir(jd, attempt, json_string_value(json_object_get(task, JOB_TASK_ROLE)),
                                     (int)json_integer_value(json_object_get(task, JOB_TASK_INDEX)));
    *path = tony_path_join(dir, stream);
    free(dir);
    int rc = tony_open_within(jd, *path, fd, err);
    free(jd);
    if (rc <= 0) return rc;
    free(*path);
    *path = NULL;
    const char *rec = json_string_value(json_object_get(task, JOB_TASK_LOG_DIR));
    json_t *at = json_object_get(task, JOB_TASK_ATTEMPT);
    if (!json_is_integer(at) || json_integer_value(at) != attempt || !plausible_log_dir(rec, app_id)) return 1;
    *path = tony_path_join(rec, stream);
    rc = tony_open_within(rec, *path, fd, err);
    if (rc == 1) {
        free(*path);
        *path = NULL;
    }
    return rc;
}

static char *task_base_url(const char *app_id, const json_t *task) {
    return tony_sprintf("v1/jobs/%s/tasks/%s/%lld", app_id, json_string_value(json_object_get(task, JOB_TASK_ROLE)),
                        (long long)json_integer_value(json_object_get(task, JOB_TASK_INDEX)));
}

/* Each task's logs this machine has, every attempt: [{"attempt","stream",
 * "bytes","url"}]; and for a job's coordinator, its am.log. */
static void add_log_links(const portal *p, json_t *job) {
    const char *app_id = json_string_value(json_object_get(job, "app_id"));
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(job, "tasks"), i, t) {
        if (!tony_hist_valid_role(json_string_value(json_object_get(t, JOB_TASK_ROLE)))) continue;
        json_t *links = json_array();
        json_int_t last = json_integer_value(json_object_get(t, JOB_TASK_ATTEMPT));
        char *base = task_base_url(app_id, t);
        for (json_int_t a = 0; a <= last && a < 100; a++) {
            for (int s = 0; s < 2; s++) {
                const char *stream = s ? "stderr" : "stdout";
                char *path = NULL;
                int fd = -1;
                tony_error err;
                struct stat st;
                if (open_task_log(p, app_id, t, (int)a, stream, &fd, &path, &err) == 0 && fstat(fd, &st) == 0) {
                    char *url = tony_sprintf("%s/log?stream=%s&attempt=%lld", base, stream, (long long)a);
                    json_array_append_new(links, json_pack("{s:I,s:s,s:I,s:s}", "attempt", a, "stream", stream,
                                                           "bytes", (json_int_t)st.st_size, "url", url));
                    free(url);
                }
                if (fd >= 0) close(fd);
                free(path);
            }
        }
        free(base);
        json_object_set_new(t, "logs", links);
    }
}

/* The job's coordinator log in the local layout (as open_task_log). */
static int open_am_log(const portal *p, const char *app_id, int *fd, char **path, tony_error *err) {
    char *jd = local_job_dir(p, app_id);
    *path = tony_path_join(jd, TONY_JOBDIR_AM_LOG);
    int rc = tony_open_within(jd, *path, fd, err);
    free(jd);
    return rc;
}

static int lookup(portal *p, struct evhttp_request *req, const char *app_id, tony_hist_list *l,
                  const tony_hist_job **j) {
    if (!tony_hist_valid_id(app_id)) {
        reply_error(req, 400, "not an app id: use letters, digits, '_', '-' and '.' (e.g. application_1_0001)");
        return -1;
    }
    tony_hist_scan(&p->src.scan, l);
    *j = tony_hist_find(l, app_id);
    if (!*j) {
        reply_error(req, 404, "no job %s in the history under %s or %s", app_id, p->src.shown_finished,
                    p->src.shown_intermediate);
        return -1;
    }
    return 0;
}

static void serve_job(portal *p, struct evhttp_request *req, const char *app_id) {
    tony_hist_list l = {0};
    const tony_hist_job *j;
    if (lookup(p, req, app_id, &l, &j) == 0) {
        json_t *o = tony_hist_job_detail(j, TONY_HIST_WITH_CONFIG);
        tony_hist_note_lost(o, j, p->root);
        add_log_links(p, o);
        int fd;
        char *am_log = NULL;
        tony_error err;
        if (open_am_log(p, app_id, &fd, &am_log, &err) == 0) {
            json_object_set_new(o, "am_log", json_sprintf("v1/jobs/%s/am.log", app_id));
            close(fd);
        }
        free(am_log);
        tony_http_reply_json(req, 200, o);
    }
    tony_hist_list_free(&l);
}

/* A query's non-negative integer (at most max); def when absent. */
static int query_int(struct evkeyvalq *q, const char *name, long long def, long long max, long long *out) {
    const char *v = evhttp_find_header(q, name);
    *out = def;
    if (!v) return 0;
    if (!*v || strlen(v) > 18 || strspn(v, "0123456789") != strlen(v) || !tony_parse_ll(v, out) || *out > max)
        return -1;
    return 0;
}

/* The open file fd (path: its name for messages) as text, from offset or,
 * with tail, its last PORTAL_LOG_MAX bytes. Closes fd. */
static void send_text_file(struct evhttp_request *req, int fd, const char *path, long long offset, bool tail) {
    tony_buf data = {0};
    long long size = 0;
    tony_error err;
    if (tony_read_range_fd(fd, path, tail ? 0 : offset, 0, &data, &size, &err)) {
        close(fd);
        reply_error(req, 500, "%s", err.msg);
        return;
    }
    long long from = offset;
    if (tail && size > PORTAL_LOG_MAX) from = size - PORTAL_LOG_MAX;
    else if (tail) from = 0;
    struct evbuffer *buf = evbuffer_new();
    if (tail && from > 0)
        evbuffer_add_printf(buf, "[tony portal: the last %d MiB of %lld bytes; add &offset=0 for the start]\n",
                            PORTAL_LOG_MAX >> 20, size);
    if (from < size && tony_read_range_fd(fd, path, from, PORTAL_LOG_MAX, &data, &size, &err) == 0 && data.len)
        evbuffer_add(buf, data.data, data.len);
    close(fd);
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    /* text, never HTML: a log's bytes must not become a page */
    evhttp_add_header(out, "Content-Type", "text/plain; charset=utf-8");
    evhttp_add_header(out, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(out, "Cache-Control", "no-store");
    evhttp_send_reply(req, 200, "OK", buf);
    evbuffer_free(buf);
    tony_buf_free(&data);
}

/* /v1/jobs/<id>/tasks/<role>/<index>/{metrics,log} */
static void serve_task(portal *p, struct evhttp_request *req, const char *app_id, const char *role,
                       const char *index_s, const char *verb, struct evkeyvalq *q) {
    long long index;
    if (!tony_hist_valid_role(role) || strlen(index_s) > 7 || strspn(index_s, "0123456789") != strlen(index_s) ||
        !tony_parse_ll(index_s, &index)) {
        reply_error(req, 400, "expected /v1/jobs/<appId>/tasks/<role>/<index>/<metrics|log>: role [a-z]+, index a number");
        return;
    }
    bool metrics = strcmp(verb, "metrics") == 0;
    if (!metrics && strcmp(verb, "log") != 0) {
        reply_error(req, 404, "unknown task path '%s'; expected metrics or log", verb);
        return;
    }
    long long attempt;
    if (query_int(q, "attempt", -1, 1000000, &attempt)) {
        reply_error(req, 400, "attempt must be a number >= 0");
        return;
    }
    tony_hist_list l = {0};
    const tony_hist_job *j;
    if (lookup(p, req, app_id, &l, &j)) {
        tony_hist_list_free(&l);
        return;
    }
    tony_error err;
    if (metrics) {
        json_t *s = tony_hist_task_series(j, role, (int)index, (int)attempt, &err);
        if (s) tony_http_reply_json(req, 200, s);
        else reply_error(req, 404, "%s", err.msg);
        tony_hist_list_free(&l);
        return;
    }
    const char *stream = evhttp_find_header(q, "stream");
    long long offset;
    if (!stream) stream = "stdout";
    if (strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0) {
        reply_error(req, 400, "stream must be stdout or stderr");
    } else if (query_int(q, "offset", -1, 1LL << 50, &offset)) {
        reply_error(req, 400, "offset must be a byte offset >= 0");
    } else {
        json_t *o = tony_hist_job_detail(j, 0), *t, *task = NULL;
        size_t i;
        json_array_foreach(json_object_get(o, "tasks"), i, t) {
            if (strcmp(json_string_value(json_object_get(t, JOB_TASK_ROLE)), role) == 0 &&
                json_integer_value(json_object_get(t, JOB_TASK_INDEX)) == index)
                task = t;
        }
        if (attempt < 0) attempt = json_integer_value(json_object_get(task, JOB_TASK_ATTEMPT));
        char *path = NULL;
        int fd, rc = task ? open_task_log(p, app_id, task, (int)attempt, stream, &fd, &path, &err) : 1;
        if (!task) reply_error(req, 404, "job %s has no task %s:%lld", app_id, role, index);
        else if (rc < 0) reply_error(req, 403, "%s", err.msg);
        else if (rc > 0)
            reply_error(req, 404, "no %s of %s:%lld (attempt %lld) on this machine: the local backend keeps logs under "
                        "%s/jobs/%s/attempts/; YARN's are in the container's log dir on its node (yarn logs -applicationId %s)",
                        stream, role, index, attempt, p->root, app_id, app_id);
        else send_text_file(req, fd, path, offset < 0 ? 0 : offset, offset < 0);
        free(path);
        json_decref(o);
    }
    tony_hist_list_free(&l);
}

static void serve_am_log(portal *p, struct evhttp_request *req, const char *app_id, struct evkeyvalq *q) {
    tony_hist_list l = {0};
    const tony_hist_job *j;
    long long offset;
    if (query_int(q, "offset", -1, 1LL << 50, &offset)) reply_error(req, 400, "offset must be a byte offset >= 0");
    else if (lookup(p, req, app_id, &l, &j) == 0) {
        char *path = NULL;
        int fd;
        tony_error err;
        int rc = open_am_log(p, app_id, &fd, &path, &err);
        if (rc < 0) reply_error(req, 403, "%s", err.msg);
        else if (rc > 0) reply_error(req, 404, "no coordinator log of %s on this machine (%s)", app_id, path);
        else send_text_file(req, fd, path, offset < 0 ? 0 : offset, offset < 0);
        free(path);
    }
    tony_hist_list_free(&l);
}

/* TonY's portal addresses (/jobs/<id>, /config/<id>, /logs/<id>), which its
 * clients print through tony.portal.url, lead to the job's page. */
static void redirect_tony_path(struct evhttp_request *req, const char *app_id) {
    if (!tony_hist_valid_id(app_id)) {
        reply_error(req, 400, "not an app id");
        return;
    }
    char *loc = tony_sprintf("../#/jobs/%s", app_id);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Location", loc);
    evhttp_send_reply(req, 302, tony_http_reason(302), NULL);
    free(loc);
}

/* Splits path (after a prefix) at '/' into at most max parts. */
static size_t split_path(char *path, char **parts, size_t max) {
    size_t n = 0;
    char *save = NULL;
    for (char *s = strtok_r(path, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
        if (n == max) return max + 1;
        parts[n++] = s;
    }
    return n;
}

static void route_jobs(portal *p, struct evhttp_request *req, const char *rest, struct evkeyvalq *q) {
    char *copy = tony_strdup(rest), *parts[6];
    size_t n = split_path(copy, parts, 5);
    if (n == 0) serve_jobs(p, req);
    else if (n == 1) serve_job(p, req, parts[0]);
    else if (n == 2 && strcmp(parts[1], "am.log") == 0) {
        if (!tony_hist_valid_id(parts[0])) reply_error(req, 400, "not an app id");
        else serve_am_log(p, req, parts[0], q);
    } else if (n == 5 && strcmp(parts[1], "tasks") == 0) {
        if (!tony_hist_valid_id(parts[0])) reply_error(req, 400, "not an app id");
        else serve_task(p, req, parts[0], parts[2], parts[3], parts[4], q);
    } else if (n >= 1 && !tony_hist_valid_id(parts[0])) {
        reply_error(req, 400, "not an app id: use letters, digits, '_', '-' and '.'");
    } else {
        reply_error(req, 404, "unknown path; expected v1/jobs, v1/jobs/<appId>, v1/jobs/<appId>/am.log or "
                              "v1/jobs/<appId>/tasks/<role>/<index>/<metrics|log>");
    }
    free(copy);
}

/* The page's own files: the same for every portal, served to anyone. */
static bool portal_page(const char *path) { return strcmp(path, "/") == 0 || strncmp(path, "/ui/", 4) == 0; }

/* TonY's links to a job (tony.portal.url): they only send the browser on to
 * the page, which asks for what it shows with the token it holds. */
static bool tony_link(const char *path) {
    return strncmp(path, "/jobs/", 6) == 0 || strncmp(path, "/config/", 8) == 0 || strncmp(path, "/logs/", 6) == 0;
}

/* A request without the token gets a 401 that says where the token is;
 * the link the portal printed (?token=T) sends the browser on to the page
 * with the token in the URL's fragment, not in its address nor in any
 * cookie (common/readtoken.h). */
static bool token_ok(portal *p, struct evhttp_request *req, const char *path, struct evkeyvalq *q) {
    tony_read_gate g = {.token = p->token, .page = portal_page};
    tony_read_verdict v = tony_link(path) ? TONY_READ_ALLOWED : tony_read_check(&g, req, path, q);
    if (v == TONY_READ_REFUSED)
        reply_error(req, 401,
                    "this portal takes its access token: open the link `tony portal` printed (…/?token=…), or send "
                    "the token as 'Authorization: Bearer TOKEN' or in the X-Tony-Token header");
    return v == TONY_READ_ALLOWED;
}

static void handle(struct evhttp_request *req, void *arg) {
    portal *p = arg;
    const char *host = evhttp_find_header(evhttp_request_get_input_headers(req), "Host");
    if (!tony_host_check_ok(&p->hosts, host)) {
        char *names = tony_host_check_describe(&p->hosts);
        reply_error(req, 421,
                    "this portal answers requests for %s on port %d, not for Host '%.200s' (a web page of another "
                    "site may be trying to read it through DNS rebinding); to reach it under that name, start it "
                    "with --host NAME",
                    names, p->hosts.port, host);
        free(names);
        return;
    }
    struct evhttp_uri *uri = evhttp_uri_parse(evhttp_request_get_uri(req));
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    if (!path || (query && evhttp_parse_query_str(query, &q))) {
        reply_error(req, 400, "malformed request URI");
    } else if (!token_ok(p, req, path, &q)) {
        /* answered */
    } else if (evhttp_request_get_command(req) != EVHTTP_REQ_GET && evhttp_request_get_command(req) != EVHTTP_REQ_HEAD) {
        reply_error(req, 405, "the portal only answers GET");
    } else if (strcmp(path, "/") == 0 || strncmp(path, "/ui/", 4) == 0) {
        const am_webui_file *f = am_webui_find(path[1] ? path + 4 : "portal.html");
        if (f) am_webui_reply(req, f);
        else reply_error(req, 404, "no such file in the web UI");
    } else if (strcmp(path, "/v1/jobs") == 0 || strncmp(path, "/v1/jobs/", 9) == 0) {
        route_jobs(p, req, path + 8, &q);
    } else if (tony_link(path)) {
        redirect_tony_path(req, strchr(path + 1, '/') + 1);
    } else {
        reply_error(req, 404, "unknown path; the portal's page is / and its API v1/jobs");
    }
    evhttp_clear_headers(&q);
    if (uri) evhttp_uri_free(uri);
}

/* A listening socket on host:port, with an error that says what to do. */
static int listen_on(const char *host, int port, evutil_socket_t *fd, int *bound_port, tony_error *err) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc) return tony_err(err, "--host %s: cannot resolve it: %s", host, gai_strerror(rc));
    int s = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
    int one = 1;
    if (s >= 0) setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (s < 0 || bind(s, res->ai_addr, res->ai_addrlen) || listen(s, 128)) {
        int e = errno;
        if (s >= 0) close(s);
        freeaddrinfo(res);
        if (e == EADDRINUSE)
            return tony_err(err, "cannot listen on %s:%d: the port is in use (another portal?); pick another with "
                                 "--port, or --port 0 for any free one", host, port);
        if (e == EADDRNOTAVAIL) return tony_err(err, "--host %s is not an address of this machine", host);
        if (e == EACCES)
            return tony_err(err, "cannot listen on %s:%d: permission denied (ports below 1024 need privileges)",
                            host, port);
        return tony_err(err, "cannot listen on %s:%d: %s", host, port, strerror(e));
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    getsockname(s, (struct sockaddr *)&ss, &len);
    *bound_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    evutil_make_socket_nonblocking(s);
    *fd = s;
    return 0;
}

static void on_signal(evutil_socket_t sig, short what, void *arg) {
    (void)sig, (void)what;
    event_base_loopbreak(arg);
}

static int serve(portal *p, const char *host, int port) {
    tony_error err;
    evutil_socket_t fd = -1;
    int bound = 0;
    if (listen_on(host, port, &fd, &bound, &err)) {
        fprintf(stderr, "tony: error: %s\n", err.msg);
        return TONY_EXIT_USAGE;
    }
    p->base = event_base_new();
    tony_http_server_opts o = {.what = "the portal",
                               .max_body = 1 << 16,
                               .allowed_methods = EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                                  EVHTTP_REQ_DELETE,
                               .handler = handle,
                               .arg = p};
    p->http = tony_http_server_new(p->base, &o);
    if (tony_http_server_adopt(p->http, fd, &err)) {
        fprintf(stderr, "tony: error: %s\n", err.msg);
        evutil_closesocket(fd);
        tony_http_server_free(p->http);
        event_base_free(p->base);
        return TONY_EXIT_UNAVAILABLE;
    }
    struct event *sigint = evsignal_new(p->base, SIGINT, on_signal, p->base);
    struct event *sigterm = evsignal_new(p->base, SIGTERM, on_signal, p->base);
    evsignal_add(sigint, NULL);
    evsignal_add(sigterm, NULL);
    signal(SIGPIPE, SIG_IGN);
    char shown[256];
    bool every_interface = strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0;
    tony_host_check_init(&p->hosts, bound, every_interface);
    if (every_interface) {
        char *name = tony_host_check_add_this_host(&p->hosts);
        snprintf(shown, sizeof shown, "%s", name ? name : "localhost");
        free(name);
    } else {
        snprintf(shown, sizeof shown, strchr(host, ':') ? "[%s]" : "%s", host);
        tony_host_check_add(&p->hosts, host);
    }
    printf("tony: portal at http://%s:%d/?token=%s (history under %s)\n", shown, bound, p->token, p->src.shown);
    fflush(stdout);
    event_base_dispatch(p->base);
    event_free(sigint);
    event_free(sigterm);
    tony_http_server_free(p->http);
    event_base_free(p->base);
    return TONY_EXIT_OK;
}

int tony_cmd_portal(int argc, char **argv) {
    tony_opt opts[] = {
        {"location", NULL, true, false,
         "history root: a directory, hdfs://NAMENODE/path or webhdfs://NAMENODE:HTTP_PORT/path (default "
         "tony.history.location, else <tony root>/history)",
         false, {0}},
        {"port", NULL, true, false, "port to listen on (default 19886, TonY's; 0: any free port)", false, {0}},
        {"host", NULL, true, false, "address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)", false,
         {0}},
        {"token", NULL, false, false,
         "require an access token, made up now: the printed link carries it (always on; the flag is kept for "
         "scripts that pass it)",
         false, {0}},
        {"root", NULL, true, false,
         "tony root whose jobs/ holds local logs (default tony.local.root, else $TONY_HOME or ~/.tony)", false, {0}},
        TONY_CONF_OPTS,
        {"help", "h", false, false, "show this help", false, {0}},
        {NULL, NULL, false, false, NULL, false, {0}}};
    const char *usage = "usage: tony portal [--location DIR|hdfs://NAMENODE/DIR] [--port N] [--host ADDR] [--token] [--conf K=V] "
                        "[--conf_file FILE]";
    tony_strv pos = {0};
    tony_error err;
    tony_conf *conf = tony_conf_new();
    portal p = {0};
    int code = TONY_EXIT_USAGE;
    long long port = PORTAL_DEFAULT_PORT;
    const char *port_s = NULL;
    if (tony_args_parse(argc, argv, opts, &pos, &err) || (pos.len && tony_err(&err, "unexpected '%s'; %s", pos.items[0], usage))) {
        fprintf(stderr, "tony: error: %s\n", err.msg);
        goto out;
    }
    if (tony_args_get(opts, "help")->seen) {
        tony_args_usage(usage, opts);
        code = TONY_EXIT_OK;
        goto out;
    }
    port_s = tony_args_value(opts, "port");
    if (port_s && (!*port_s || strspn(port_s, "0123456789") != strlen(port_s) || strlen(port_s) > 5 ||
                   !tony_parse_ll(port_s, &port) || port > 65535)) {
        fprintf(stderr, "tony: error: --port %s: expected a port number 0-65535 (0: any free port)\n", port_s);
        goto out;
    }
    const char *host = tony_args_value(opts, "host");
    if (host && !*host) {
        fprintf(stderr, "tony: error: --host is empty; give an address such as 127.0.0.1 or 0.0.0.0\n");
        goto out;
    }
    if (tony_confargs_load(opts, conf, &err)) {
        fprintf(stderr, "tony: error: %s\n", err.msg);
        goto out;
    }
    const char *loc = tony_args_value(opts, "location");
    p.root = tony_confargs_root(opts, conf);
    if (tony_hist_source_open(&p.src, conf, loc, p.root, &err) || tony_hist_source_refresh(&p.src, NULL, &err)) {
        fprintf(stderr, "tony: error: %s\n", err.msg);
        if (p.src.unreachable) code = TONY_EXIT_UNAVAILABLE;
        goto out;
    }
    p.synced_ms = tony_wall_ms();
    const char *where = p.src.scan.location;
    if (!tony_hist_source_remote(&p.src) && !tony_is_dir(where)) {
        fprintf(stderr, "tony: error: %s%s: no such directory; give the history root with --location (a directory, "
                        "hdfs://NAMENODE/path or webhdfs://NAMENODE:HTTP_PORT/path; jobs write it under "
                        "tony.history.location, by default <tony root>/history)\n",
                loc ? "--location " : "history location ", where);
        goto out;
    }
    if (!tony_hist_source_remote(&p.src) && access(where, R_OK | X_OK)) {
        fprintf(stderr, "tony: error: cannot read the history location %s: %s\n", where, strerror(errno));
        goto out;
    }
    /* Every local user reaches a portal on loopback as well: a token always */
    {
        unsigned char raw[16];
        if (RAND_bytes(raw, sizeof raw) != 1) {
            fprintf(stderr, "tony: error: --token: OpenSSL could not produce random bytes\n");
            goto out;
        }
        p.token = tony_xmalloc(2 * sizeof raw + 1);
        for (size_t i = 0; i < sizeof raw; i++) sprintf(p.token + 2 * i, "%02x", raw[i]);
    }
    p.facts = json_object();
    code = serve(&p, host ? host : "127.0.0.1", (int)port);
out:
    json_decref(p.facts);
    tony_host_check_free(&p.hosts);
    free(p.token);
    free(p.root);
    tony_hist_source_free(&p.src);
    free(p.sync_problem);
    tony_conf_free(conf);
    tony_strv_free(&pos);
    tony_args_free(opts);
    return code;
}
