/* Reads a job history tree (see histdir.h). Each of a job's files is read
 * on its own: a corrupt .jhist still leaves the event log, the config and
 * the metrics to show, and every failure becomes a sentence in the job's
 * "problems" rather than an error. */
#include "client/histdir.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/client.h"
#include "common/fs.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "common/sizing.h"
#include "common/strv.h"
#include "conf/conf.h"
#include "conf/plan.h"
#include "runtime/runtime.h"
#include "conf/keys.h"

static tony_hist_job job_at(const tony_jhist_meta *m, const char *dir, const char *name, const char *tree) {
    return (tony_hist_job){*m, tony_strdup(dir), name ? tony_path_join(dir, name) : NULL, tony_strdup(tree)};
}

static void push(tony_hist_list *l, const tony_jhist_meta *m, const char *dir, const char *name, const char *tree) {
    if (l->len == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->items = tony_xrealloc(l->items, l->cap * sizeof *l->items);
    }
    l->items[l->len++] = job_at(m, dir, name, tree);
}

static void job_free(tony_hist_job *j) {
    free(j->dir);
    free(j->file);
    free(j->tree);
}

static tony_hist_job *find(tony_hist_list *l, const char *app_id) {
    for (size_t i = 0; i < l->len; i++)
        if (strcmp(l->items[i].meta.app_id, app_id) == 0) return &l->items[i];
    return NULL;
}

/* One file per coordinator; a job's newest start wins (TonY's rule for AM
 * retries), and a finished file over an in-progress one of the same start. */
static bool add_file(tony_hist_list *l, const char *dir, const char *name, const char *tree) {
    tony_jhist_meta m;
    if (!tony_jhist_parse_name(name, &m) || !tony_hist_valid_id(m.app_id)) return false;
    tony_hist_job *j = find(l, m.app_id);
    if (!j) {
        push(l, &m, dir, name, tree);
        return true;
    }
    if (j->file && (m.start_ms < j->meta.start_ms || (m.start_ms == j->meta.start_ms && m.in_progress))) return true;
    job_free(j);
    *j = job_at(&m, dir, name, tree);
    return true;
}

/* A job dir with no .jhist at all (its coordinator died before writing
 * one, or the file was removed) still shows, so its other files can be. */
static void add_bare_dir(tony_hist_list *l, const char *dir, const char *tree) {
    const char *name = tony_basename(dir);
    if (!tony_hist_valid_id(name) || find(l, name)) return;
    char *conf = tony_path_join(dir, TONY_JOBDIR_CONF), *log = tony_path_join(dir, TONY_JHIST_EVENTS_LOG);
    bool job_like = tony_file_exists(conf) || tony_file_exists(log);
    free(conf);
    free(log);
    if (!job_like) return;
    tony_jhist_meta m = {0};
    snprintf(m.app_id, sizeof m.app_id, "%s", name);
    snprintf(m.user, sizeof m.user, "?");
    snprintf(m.status, sizeof m.status, "UNKNOWN");
    push(l, &m, dir, NULL, tree);
}

/* finished/ is yyyy/mm/dd/<appId>/ deep, intermediate/ one level: depth 0
 * is a job's own dir. */
static void scan(tony_hist_list *l, const char *dir, int depth, const char *tree) {
    DIR *d = opendir(dir);
    if (!d) return;
    bool any = false;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char *p = tony_path_join(dir, de->d_name);
        if (tony_is_dir(p)) {
            if (depth > 0) scan(l, p, depth - 1, tree);
        } else if (add_file(l, dir, de->d_name, tree)) {
            any = true;
        }
        free(p);
    }
    closedir(d);
    if (depth == 0 && !any) add_bare_dir(l, dir, tree);
}

static int newest_first(const void *a, const void *b) {
    const tony_hist_job *x = a, *y = b;
    if (x->meta.start_ms != y->meta.start_ms) return x->meta.start_ms < y->meta.start_ms ? 1 : -1;
    return strcmp(y->meta.app_id, x->meta.app_id);
}

void tony_hist_dirs_from(const tony_conf *conf, const char *location_flag, const char *root, tony_jhist_dirs *out) {
    const char *loc = location_flag;
    tony_jhist_dirs_resolve(loc ? loc : tony_conf_get(conf, TONY_KEY_HISTORY_LOCATION),
                            loc ? NULL : tony_conf_get(conf, TONY_KEY_HISTORY_INTERMEDIATE),
                            loc ? NULL : tony_conf_get(conf, TONY_KEY_HISTORY_FINISHED), root, out);
}

void tony_hist_scan(const tony_jhist_dirs *d, tony_hist_list *out) {
    /* the trees' own paths may pass through links (a root on another disk) */
    const char *trees[2] = {d->finished, d->intermediate};
    for (int i = 0; i < 2; i++) {
        char *real = realpath(trees[i], NULL);
        if (real) scan(out, trees[i], i == 0 ? 4 : 1, real);
        free(real);
    }
    if (out->len) qsort(out->items, out->len, sizeof *out->items, newest_first);
}

void tony_hist_list_free(tony_hist_list *l) {
    for (size_t i = 0; i < l->len; i++) job_free(&l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

const tony_hist_job *tony_hist_find(const tony_hist_list *l, const char *app_id) {
    return find((tony_hist_list *)l, app_id);
}

char *tony_hist_lost_reason(const tony_hist_job *j, const char *root) {
    if (!j->meta.in_progress || !root) return NULL;
    char *jobs = tony_path_join(root, "jobs");
    char *dir = tony_path_join(jobs, j->meta.app_id);
    free(jobs);
    /* The job's record says whose it was, and that backend why it is lost. */
    char *reason = tony_is_dir(dir) ? tony_client_backend_of_job(dir)->lost_reason(dir, j->meta.app_id) : NULL;
    free(dir);
    return reason;
}

void tony_hist_note_lost(json_t *o, const tony_hist_job *j, const char *root) {
    char *reason = tony_hist_lost_reason(j, root);
    if (!reason) return;
    json_object_set_new(o, "status", json_string("LOST"));
    json_object_set_new(o, "lost", json_string(reason));
    json_t *problems = json_object_get(o, "problems");
    if (!json_is_array(problems)) json_object_set_new(o, "problems", problems = json_array());
    json_array_append_new(problems, json_sprintf("the job is not running: %s", reason));
    free(reason);
}

bool tony_hist_valid_id(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n >= sizeof ((tony_jhist_meta *)0)->app_id || s[0] == '.') return false;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == n;
}

bool tony_hist_valid_role(const char *s) {
    size_t n = s ? strlen(s) : 0;
    return n > 0 && n < 64 && strspn(s, "abcdefghijklmnopqrstuvwxyz") == n;
}

json_t *tony_hist_job_json(const tony_hist_job *j) {
    const tony_jhist_meta *m = &j->meta;
    bool ended = j->file && !m->in_progress;
    json_t *o = json_pack("{s:s,s:s,s:s,s:b,s:s?,s:s}", "app_id", m->app_id, "user", m->user, "status", m->status,
                          "in_progress", m->in_progress, "file", j->file, "dir", j->dir);
    json_object_set_new(o, "started_ms", m->start_ms > 0 ? json_integer(m->start_ms) : json_null());
    json_object_set_new(o, "finished_ms", ended ? json_integer(m->end_ms) : json_null());
    json_object_set_new(o, "duration_ms", ended ? json_integer(m->end_ms - m->start_ms) : json_null());
    return o;
}

/* One of j's files (path), opened as histdir.h says and read whole when it
 * has at most max bytes: 0, 1 when there is no such file, -1 when it is
 * refused or cannot be read (err). */
static int read_job_file(const tony_hist_job *j, const char *path, size_t max, const char *what, char **data,
                         size_t *len, tony_error *err) {
    int fd = -1;
    int rc = tony_open_within(j->tree ? j->tree : j->dir, path, &fd, err);
    if (rc) return rc;
    rc = tony_read_fd_capped(fd, path, max, what, data, len, err);
    close(fd);
    return rc;
}

static tony_conf *load_conf(const tony_hist_job *j, tony_error *err) {
    char *path = tony_path_join(j->dir, TONY_JOBDIR_CONF), *text = NULL;
    size_t len;
    tony_conf *c = NULL;
    int rc = read_job_file(j, path, TONY_CONF_FILE_MAX, "a job's configuration", &text, &len, err);
    if (rc == 1) {
        tony_err(err, "no %s in %s: the job's configuration is unknown", TONY_JOBDIR_CONF, j->dir);
    } else if (rc == 0) {
        c = tony_conf_new();
        if (tony_conf_load_text(c, path, text, len, err)) {
            tony_conf_free(c);
            c = NULL;
        }
    }
    free(text);
    free(path);
    return c;
}

/* A JSON file of j (NULL: none, or *problem says why). */
static json_t *load_json(const tony_hist_job *j, const char *path, size_t max, const char *what, bool *missing,
                         tony_error *err) {
    char *text = NULL;
    size_t len = 0;
    int rc = read_job_file(j, path, max, what, &text, &len, err);
    *missing = rc == 1;
    if (rc) return NULL;
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    free(text);
    if (!root) tony_err(err, "%s is not valid JSON (line %d: %s)", path, je.line, je.text);
    return root;
}

/* Roles straight from tony.<t>.instances (no validation: a job whose
 * config the plan would refuse today still ran once). */
static json_t *facts_of(const tony_conf *c) {
    json_t *roles = json_object();
    tony_strv types = {0};
    tony_conf_job_types(c, &types);
    long long total = 0;
    for (size_t i = 0; i < types.len; i++) {
        char *key = tony_sprintf(TONY_KEY_ROLE_INSTANCES_FMT, types.items[i]);
        long long n = 0;
        if (tony_conf_get_ll(c, key, 0, &n, NULL) == 0 && n > 0) {
            json_object_set_new(roles, types.items[i], json_integer(n));
            total += n;
        }
        free(key);
    }
    tony_strv_free(&types);
    const char *fw_source = tony_conf_get_source(c, TONY_KEY_APP_FRAMEWORK);
    return json_pack("{s:s?,s:s?,s:b,s:s?,s:o,s:I}", JOB_NAME, tony_conf_get(c, TONY_KEY_APP_NAME),
                     JOB_FRAMEWORK, tony_conf_get(c, TONY_KEY_APP_FRAMEWORK), JOB_FRAMEWORK_DEFAULT,
                     !fw_source || strcmp(fw_source, "default") == 0, "queue", tony_conf_get(c, TONY_KEY_YARN_QUEUE),
                     "roles", roles, "task_count", (json_int_t)total);
}

int tony_hist_conf_facts(const tony_hist_job *j, json_t **out, tony_error *err) {
    tony_conf *c = load_conf(j, err);
    *out = c ? facts_of(c) : NULL;
    tony_conf_free(c);
    return c ? 0 : -1;
}

static void problem(json_t *problems, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(json_t *problems, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    if (s) json_array_append_new(problems, json_string(s));
    free(s);
}

/* Each role's request: {"worker":{"memory_bytes","vcores","gpus"}}. */
static json_t *requests(const tony_conf *c, json_t *problems) {
    tony_plan p = {0};
    tony_error err;
    if (tony_runtime_plan(c, &p, &err)) {
        problem(problems, "%s: %s (requested resources unknown)", TONY_JOBDIR_CONF, err.msg);
        return NULL;
    }
    json_t *out = json_object();
    for (size_t r = 0; r < p.nroles; r++)
        json_object_set_new(out, p.roles[r].name,
                            json_pack("{s:I,s:i,s:i}", JOB_REQ_MEMORY_BYTES, (json_int_t)p.roles[r].memory_mb << 20,
                                      JOB_REQ_VCORES, p.roles[r].vcores, JOB_REQ_GPUS, p.roles[r].gpus));
    tony_plan_free(&p);
    return out;
}

/* events.jsonl: one object a line. A line cut short by a crash is skipped;
 * only a writer still at work may leave one at the end. */
static json_t *read_log(const tony_hist_job *j, json_t *problems) {
    char *path = tony_path_join(j->dir, TONY_JHIST_EVENTS_LOG), *text = NULL;
    size_t len, bad = 0, lines = 0;
    bool last_bad = false;
    json_t *out = NULL;
    tony_error err;
    int rc = read_job_file(j, path, TONY_HIST_EVENTS_MAX, "a job's event log", &text, &len, &err);
    if (rc == 1) {
        /* TonY's own history has none: not a problem */
    } else if (rc) {
        problem(problems, "%s", err.msg);
    } else {
        out = json_array();
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            json_t *ev = json_loads(line, 0, NULL);
            lines++;
            last_bad = !json_is_object(ev);
            if (!last_bad) json_array_append_new(out, ev);
            else json_decref(ev), bad++;
        }
        if (bad && !(bad == 1 && last_bad && j->meta.in_progress))
            problem(problems, "%s: %zu of %zu line(s) are not JSON objects and were skipped", path, bad, lines);
    }
    free(text);
    free(path);
    return out;
}

/* metrics.json: {"attempts":[{"attempt":N,"tasks":[..]}]} or NULL. */
static json_t *read_metrics(const tony_hist_job *j, json_t *problems) {
    char *path = tony_path_join(j->dir, TONY_JHIST_METRICS);
    bool missing;
    tony_error err;
    json_t *root = load_json(j, path, TONY_HIST_METRICS_MAX, "a job's metrics file", &missing, &err);
    if (missing) {
        if (!j->meta.in_progress && j->file)
            problem(problems, "no %s in %s: no per-task metric series to plot (written when a job ends, by tony "
                              "since its history portal)", TONY_JHIST_METRICS, j->dir);
    } else {
        if (!root) {
            problem(problems, "%s; no metric series", err.msg);
        } else if (!json_is_array(json_object_get(root, JOB_HIST_ATTEMPTS))) {
            problem(problems, "%s has no \"attempts\" list; no metric series", path);
            json_decref(root);
            root = NULL;
        }
    }
    free(path);
    return root;
}

/* "worker:1" into role and index; false for anything else. */
static bool split_task(const char *id, char *role, size_t n, int *index) {
    const char *colon = id ? strrchr(id, ':') : NULL;
    long long i;
    if (!colon || colon == id || (size_t)(colon - id) >= n || !tony_parse_ll(colon + 1, &i) || i < 0 || i > 1 << 20)
        return false;
    memcpy(role, id, (size_t)(colon - id));
    role[colon - id] = '\0';
    *index = (int)i;
    return true;
}

typedef struct taskset {
    json_t *list, *byid;
} taskset;

static json_t *task_get(taskset *ts, const char *role, int index) {
    char id[160];
    snprintf(id, sizeof id, "%s:%d", role, index);
    json_t *t = json_object_get(ts->byid, id);
    if (!t) {
        t = json_pack("{s:s,s:s,s:i,s:{}}", "task", id, JOB_TASK_ROLE, role, JOB_TASK_INDEX, index, JOB_TASK_METRICS);
        json_object_set_new(ts->byid, id, t);
        json_array_append(ts->list, t);
    }
    return t;
}

static void copy_keys(json_t *to, const json_t *from, const char *const *keys) {
    for (; *keys; keys++) {
        json_t *v = json_object_get(from, *keys);
        if (v && !json_is_null(v)) json_object_set(to, *keys, v);
    }
}

/* events.jsonl in order: each attempt's events replace the last one's. */
static void tasks_from_log(taskset *ts, const json_t *log) {
    static const char *const attempt_keys[] = {"exit_status", "exit_meaning", "diagnostics", "started_ms",
                                               "finished_ms", "host", "port", NULL};
    size_t i;
    json_t *ev;
    json_array_foreach(log, i, ev) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        char role[64];
        int index;
        if (!type || !split_task(json_string_value(json_object_get(ev, "task")), role, sizeof role, &index)) continue;
        json_t *t = task_get(ts, role, index), *at = json_object_get(ev, "attempt");
        json_t *when = json_object_get(ev, "t_ms");
        if (json_is_integer(at)) json_object_set(t, "attempt", at);
        if (strcmp(type, "TASK_REQUESTED") == 0) {
            for (const char *const *k = attempt_keys; *k; k++) json_object_del(t, *k);
            json_object_set_new(t, "status", json_string("REQUESTED"));
        } else if (strcmp(type, "TASK_REGISTERED") == 0) {
            static const char *const keys[] = {"host", "port", NULL};
            copy_keys(t, ev, keys);
            json_object_set_new(t, "status", json_string("REGISTERED"));
        } else if (strcmp(type, "TASK_STARTED") == 0) {
            json_object_set_new(t, "status", json_string("RUNNING"));
            if (when) json_object_set(t, "started_ms", when);
        } else if (strcmp(type, "TASK_FINISHED") == 0) {
            static const char *const keys[] = {"status", "exit_status", "exit_meaning", "diagnostics", NULL};
            copy_keys(t, ev, keys);
            if (when) json_object_set(t, "finished_ms", when);
            json_t *m = json_object_get(ev, "metrics");
            if (json_is_object(m)) json_object_update(json_object_get(t, "metrics"), m);
        }
    }
}

/* The .jhist: TonY's record of each task. With an event log beside it, it
 * only fills gaps; without one, it is all there is. */
static void tasks_from_jhist(taskset *ts, const json_t *events, bool have_log) {
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        json_t *e = json_object_get(ev, "event");
        const char *role = json_string_value(json_object_get(e, "taskType"));
        json_t *index = json_object_get(e, "taskIndex");
        if (!type || !role || !*role || strlen(role) >= 64 || !json_is_integer(index) || json_integer_value(index) < 0)
            continue;
        json_t *t = task_get(ts, role, (int)json_integer_value(index));
        if (strcmp(type, "TASK_STARTED") == 0) {
            const char *host = json_string_value(json_object_get(e, "host"));
            const char *container = json_string_value(json_object_get(e, "containerID"));
            if (host && *host && !json_object_get(t, "host")) json_object_set_new(t, "host", json_string(host));
            if (container) json_object_set_new(t, "container", json_string(container));
            if (!have_log) json_object_set_new(t, "status", json_string("RUNNING"));
        } else if (strcmp(type, "TASK_FINISHED") == 0) {
            json_t *metrics = json_object(), *mv;
            size_t k;
            json_array_foreach(json_object_get(e, "metrics"), k, mv) {
                const char *name = json_string_value(json_object_get(mv, "name"));
                if (name) json_object_set(metrics, name, json_object_get(mv, "value"));
            }
            if (have_log) {
                json_object_update_missing(json_object_get(t, "metrics"), metrics);
            } else {
                json_object_update(json_object_get(t, "metrics"), metrics);
                json_object_set(t, "status", json_object_get(e, "status"));
                const char *diag = json_string_value(json_object_get(e, "containerDiagnostic"));
                if (diag && strcmp(diag, "NA") != 0) json_object_set_new(t, "diagnostics", json_string(diag));
            }
            json_decref(metrics);
        }
    }
}

/* metrics.json: the coordinator's own final word on each task of each
 * attempt, and which attempts have a series to plot. */
static void tasks_from_metrics(taskset *ts, const json_t *metrics) {
    static const char *const keys[] = {JOB_TASK_HOST,        JOB_TASK_PORT,        JOB_TASK_CONTAINER,
                                       JOB_TASK_LOG_DIR,     JOB_TASK_KIND,        JOB_TASK_CHIEF,
                                       JOB_TASK_STARTED_MS,  JOB_TASK_FINISHED_MS, JOB_TASK_EXIT_STATUS,
                                       JOB_TASK_EXIT_MEANING, JOB_TASK_DIAGNOSTICS, JOB_TASK_STOPPED_BY, NULL};
    size_t i, k;
    json_t *a, *mt;
    json_array_foreach(json_object_get(metrics, JOB_HIST_ATTEMPTS), i, a) {
        json_t *attempt = json_object_get(a, JOB_HIST_ATTEMPT);
        if (!json_is_integer(attempt)) continue;
        json_array_foreach(json_object_get(a, JOB_HIST_TASKS), k, mt) {
            const char *role = json_string_value(json_object_get(mt, JOB_TASK_ROLE));
            json_t *index = json_object_get(mt, JOB_TASK_INDEX);
            if (!tony_hist_valid_role(role) || !json_is_integer(index) || json_integer_value(index) < 0) continue;
            json_t *t = task_get(ts, role, (int)json_integer_value(index));
            json_t *series = json_object_get(json_object_get(mt, JOB_TASK_SERIES), JOB_SAMPLE_T_MS);
            if (json_array_size(series)) {
                json_t *sa = json_object_get(t, "series_attempts");
                if (!sa) json_object_set_new(t, "series_attempts", sa = json_array());
                json_array_append(sa, attempt);
            }
            /* an attempt the event log saw start after this file was written keeps its own word */
            json_t *seen = json_object_get(t, JOB_TASK_ATTEMPT);
            if (json_is_integer(seen) && json_integer_value(seen) > json_integer_value(attempt)) continue;
            json_object_set(t, JOB_TASK_ATTEMPT, attempt);
            json_object_del(t, JOB_TASK_STOPPED_BY); /* an earlier attempt's reason is not this one's */
            copy_keys(t, mt, keys);
            const char *state = json_string_value(json_object_get(mt, JOB_TASK_STATE));
            if (state && !json_object_get(t, "status")) json_object_set_new(t, "status", json_string(state));
            json_t *agg = json_object_get(mt, JOB_TASK_METRICS);
            if (json_is_object(agg)) json_object_update_missing(json_object_get(t, JOB_TASK_METRICS), agg);
        }
    }
}

static json_t *build_tasks(const json_t *events, const json_t *log, const json_t *metrics, const json_t *req) {
    taskset ts = {json_array(), json_object()};
    tasks_from_log(&ts, log);
    tasks_from_jhist(&ts, events, json_array_size(log) > 0);
    tasks_from_metrics(&ts, metrics);
    size_t i;
    json_t *t;
    json_array_foreach(ts.list, i, t) {
        json_t *r = req ? json_object_get(req, json_string_value(json_object_get(t, JOB_TASK_ROLE))) : NULL;
        if (r) json_object_set(t, JOB_TASK_REQUESTED, r);
        json_t *es = json_object_get(t, JOB_TASK_EXIT_STATUS);
        if (json_is_integer(es) && !json_object_get(t, JOB_TASK_EXIT_MEANING)) {
            char meaning[160];
            json_object_set_new(t, JOB_TASK_EXIT_MEANING,
                                json_string(tony_exit_status_meaning((int)json_integer_value(es), meaning, sizeof meaning)));
        }
        if (!json_object_get(t, "status")) json_object_set_new(t, "status", json_string("UNKNOWN"));
    }
    json_decref(ts.byid);
    return ts.list;
}

static json_t *config_json(const tony_conf *c) {
    json_t *out = json_array();
    for (size_t i = 0; i < tony_conf_size(c); i++) {
        const char *key = tony_conf_key_at(c, i);
        json_array_append_new(out, json_pack("{s:s,s:s,s:s?}", "key", key, "value", tony_conf_value_at(c, i), "source",
                                             tony_conf_get_source(c, key)));
    }
    return out;
}

static int read_jhist(const tony_hist_job *j, json_t **events, tony_error *err) {
    char *data = NULL;
    size_t len = 0;
    *events = NULL;
    int rc = read_job_file(j, j->file, TONY_HIST_JHIST_MAX, "a job's history file", &data, &len, err);
    if (rc == 1) rc = tony_err(err, "%s is gone", j->file);
    if (rc == 0) rc = tony_jhist_decode(j->file, data, len, events, err);
    else tony_err_wrap(err, "cannot read the history file");
    free(data);
    return rc;
}

/* The root cause of a failed job, as its last words (the log's last
 * APPLICATION_FINISHED) tell it: {JOB_CAUSE_TEXT}, or NULL. */
static json_t *root_cause_of(const json_t *log) {
    for (size_t i = json_array_size(log); i-- > 0;) {
        const json_t *ev = json_array_get(log, i);
        const char *type = json_string_value(json_object_get(ev, "type"));
        if (!type || strcmp(type, "APPLICATION_FINISHED") != 0) continue;
        const char *text = json_string_value(json_object_get(ev, "text"));
        const char *at = text ? strstr(text, JOB_CAUSE_TEXT_PREFIX) : NULL;
        return at ? json_pack("{s:s}", JOB_CAUSE_TEXT, at) : NULL;
    }
    return NULL;
}

json_t *tony_hist_job_detail(const tony_hist_job *j, int flags) {
    json_t *o = tony_hist_job_json(j), *problems = json_array(), *events = NULL;
    tony_error err;
    if (!j->file)
        problem(problems, "no .jhist file in %s: the coordinator never wrote its history, or the file was removed",
                j->dir);
    else if (read_jhist(j, &events, &err))
        problem(problems, "%s", err.msg);
    if (!events) events = json_array();
    json_t *log = read_log(j, problems);
    tony_conf *conf = load_conf(j, &err);
    json_t *req = NULL;
    if (!conf) problem(problems, "%s", err.msg);
    else {
        json_t *facts = facts_of(conf);
        json_object_update(o, facts);
        json_decref(facts);
        req = requests(conf, problems);
    }
    json_t *metrics = read_metrics(j, problems);
    json_t *tasks = build_tasks(events, log, metrics, req);
    json_object_set_new(o, "events", events);
    json_t *cause = root_cause_of(log);
    if (cause) json_object_set_new(o, JOB_ROOT_CAUSE, cause);
    json_object_set_new(o, "log", log ? log : json_array());
    /* the job's own threshold (its tony-final.xml), else the default's */
    long long min_run_ms = 60000;
    tony_error ignored;
    if (conf) tony_conf_get_ll(conf, TONY_KEY_APP_SIZING_MIN_RUN_MS, min_run_ms, &min_run_ms, &ignored);
    json_object_set_new(o, "advice", tony_sizing_advice(tasks, min_run_ms));
    json_object_set_new(o, "tasks", tasks);
    json_object_set_new(o, "has_metrics", json_boolean(metrics != NULL));
    if (flags & TONY_HIST_WITH_CONFIG) json_object_set_new(o, "config", conf ? config_json(conf) : json_array());
    json_object_set_new(o, "problems", problems);
    json_decref(metrics);
    json_decref(req);
    tony_conf_free(conf);
    return o;
}

json_t *tony_hist_task_series(const tony_hist_job *j, const char *role, int index, int attempt, tony_error *err) {
    char *path = tony_path_join(j->dir, TONY_JHIST_METRICS);
    bool missing;
    tony_error lerr;
    json_t *root = load_json(j, path, TONY_HIST_METRICS_MAX, "a job's metrics file", &missing, &lerr), *found = NULL;
    json_t *attempts = json_object_get(root, JOB_HIST_ATTEMPTS);
    for (size_t i = json_array_size(attempts); i-- > 0 && !found;) {
        json_t *a = json_array_get(attempts, i), *at = json_object_get(a, JOB_HIST_ATTEMPT), *t;
        size_t k;
        if (!json_is_integer(at) || (attempt >= 0 && json_integer_value(at) != attempt)) continue;
        json_array_foreach(json_object_get(a, JOB_HIST_TASKS), k, t) {
            json_t *s = json_object_get(t, JOB_TASK_SERIES);
            const char *r = json_string_value(json_object_get(t, JOB_TASK_ROLE));
            if (r && strcmp(r, role) == 0 && json_integer_value(json_object_get(t, JOB_TASK_INDEX)) == index &&
                json_array_size(json_object_get(s, JOB_SAMPLE_T_MS))) {
                found = json_deep_copy(s);
                json_object_set_new(found, JOB_TASK_ROLE, json_string(role));
                json_object_set_new(found, JOB_TASK_INDEX, json_integer(index));
                json_object_set(found, JOB_TASK_ATTEMPT, at);
                break;
            }
        }
    }
    if (!found) {
        if (!root && missing) tony_err(err, "no metric series for this job: %s is missing", path);
        else if (!root) tony_err(err, "no metric series for this job: %s", lerr.msg);
        else tony_err(err, "no metric series for %s:%d%s in %s", role, index, attempt >= 0 ? " in that attempt" : "", path);
    }
    json_decref(root);
    free(path);
    return found;
}
