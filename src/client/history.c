/* `tony history`: past jobs from the history tree TonY's portal reads
 * (finished/yyyy/mm/dd/<appId>/ and intermediate/<appId>/), newest first,
 * and one job's events, per-task metrics and right-sizing advice. Works
 * from the files alone: no coordinator, no job dir needed. */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/args.h"
#include "client/client.h"
#include "common/fs.h"
#include "common/jhist.h"
#include "common/jobdir.h"
#include "common/sizing.h"
#include "common/strv.h"
#include "conf/conf.h"
#include "conf/plan.h"

typedef struct hist_job {
    tony_jhist_meta meta;
    char *dir, *file;
} hist_job;

typedef struct hist_list {
    hist_job *items;
    size_t len, cap;
} hist_list;

static void list_free(hist_list *l) {
    for (size_t i = 0; i < l->len; i++) free(l->items[i].dir), free(l->items[i].file);
    free(l->items);
}

/* One file per coordinator; a job's newest start wins (TonY's rule for AM
 * retries), and a finished file over an in-progress one of the same start. */
static void add_file(hist_list *l, const char *dir, const char *name) {
    tony_jhist_meta m;
    if (!tony_jhist_parse_name(name, &m)) return;
    for (size_t i = 0; i < l->len; i++) {
        hist_job *j = &l->items[i];
        if (strcmp(j->meta.app_id, m.app_id) != 0) continue;
        if (m.start_ms < j->meta.start_ms || (m.start_ms == j->meta.start_ms && m.in_progress)) return;
        free(j->dir), free(j->file);
        *j = (hist_job){m, tony_strdup(dir), tony_path_join(dir, name)};
        return;
    }
    if (l->len == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->items = tony_xrealloc(l->items, l->cap * sizeof *l->items);
    }
    l->items[l->len++] = (hist_job){m, tony_strdup(dir), tony_path_join(dir, name)};
}

/* finished/ is yyyy/mm/dd/<appId>/ deep, intermediate/ one level. */
static void scan(hist_list *l, const char *dir, int depth) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char *p = tony_path_join(dir, de->d_name);
        if (tony_is_dir(p)) {
            if (depth > 0) scan(l, p, depth - 1);
        } else {
            add_file(l, dir, de->d_name);
        }
        free(p);
    }
    closedir(d);
}

static int newest_first(const void *a, const void *b) {
    const hist_job *x = a, *y = b;
    if (x->meta.start_ms != y->meta.start_ms) return x->meta.start_ms < y->meta.start_ms ? 1 : -1;
    return strcmp(y->meta.app_id, x->meta.app_id);
}

static const char *when(long long ms, char *buf, size_t n) {
    if (ms <= 0) return "-";
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
}

static const char *duration(long long ms, char *buf, size_t n) {
    if (ms < 0) return "-";
    long long s = ms / 1000;
    if (s < 60) snprintf(buf, n, "%.1fs", (double)ms / 1000);
    else if (s < 3600) snprintf(buf, n, "%lldm %02llds", s / 60, s % 60);
    else snprintf(buf, n, "%lldh %02lldm", s / 3600, s % 3600 / 60);
    return buf;
}

static json_t *job_json(const hist_job *j) {
    const tony_jhist_meta *m = &j->meta;
    json_t *o = json_pack("{s:s,s:s,s:I,s:s,s:s,s:s}", "app_id", m->app_id, "user", m->user, "started_ms",
                          (json_int_t)m->start_ms, "status", m->status, "file", j->file, "dir", j->dir);
    json_object_set_new(o, "finished_ms", m->in_progress ? json_null() : json_integer(m->end_ms));
    json_object_set_new(o, "duration_ms", m->in_progress ? json_null() : json_integer(m->end_ms - m->start_ms));
    return o;
}

/* The role's request from the tony-final.xml kept beside the history file. */
static json_t *requests(const char *dir) {
    char *path = tony_path_join(dir, TONY_JOBDIR_CONF);
    tony_conf *c = tony_conf_new();
    tony_plan p = {0};
    tony_error err;
    json_t *out = NULL;
    if (tony_conf_load_file(c, path, &err) == 0 && tony_plan_from_conf(c, &p, &err) == 0) {
        out = json_object();
        for (size_t r = 0; r < p.nroles; r++)
            json_object_set_new(out, p.roles[r].name,
                                json_pack("{s:I,s:i,s:i}", "memory_bytes", (json_int_t)p.roles[r].memory_mb << 20,
                                          "vcores", p.roles[r].vcores, "gpus", p.roles[r].gpus));
        tony_plan_free(&p);
    }
    tony_conf_free(c);
    free(path);
    return out;
}

/* events.jsonl beside the history file: our fuller event log. */
static json_t *read_log(const char *dir) {
    char *path = tony_path_join(dir, "events.jsonl"), *text = NULL;
    size_t len;
    json_t *out = NULL;
    if (tony_read_file(path, &text, &len, NULL) == 0) {
        out = json_array();
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            json_t *ev = json_loads(line, 0, NULL);
            if (json_is_object(ev)) json_array_append_new(out, ev);
            else json_decref(ev); /* a line cut short by a crash */
        }
    }
    free(text);
    free(path);
    return out;
}

/* Per task (role:index, the last attempt's word wins): status and metrics
 * from TASK_FINISHED, our CPU figures from the event log, the request. */
static json_t *tasks_from(const json_t *events, const json_t *log, const json_t *req) {
    json_t *tasks = json_array(), *byid = json_object();
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        if (strcmp(json_string_value(json_object_get(ev, "type")), "TASK_FINISHED") != 0) continue;
        json_t *e = json_object_get(ev, "event");
        const char *role = json_string_value(json_object_get(e, "taskType"));
        int index = (int)json_integer_value(json_object_get(e, "taskIndex"));
        char id[160];
        snprintf(id, sizeof id, "%s:%d", role ? role : "?", index);
        json_t *metrics = json_object();
        size_t k;
        json_t *mv;
        json_array_foreach(json_object_get(e, "metrics"), k, mv) {
            const char *name = json_string_value(json_object_get(mv, "name"));
            if (name) json_object_set(metrics, name, json_object_get(mv, "value"));
        }
        json_t *t = json_pack("{s:s,s:s,s:i,s:O,s:o}", "task", id, "role", role ? role : "?", "index", index, "status",
                              json_object_get(e, "status"), "metrics", metrics);
        json_t *r = req ? json_object_get(req, role ? role : "") : NULL;
        if (r) json_object_set(t, "requested", r);
        json_t *old = json_object_get(byid, id);
        if (old) {
            json_object_update(old, t);
            json_decref(t);
        } else {
            json_object_set_new(byid, id, t);
            json_array_append(tasks, t);
        }
    }
    json_array_foreach(log, i, ev) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        const char *id = json_string_value(json_object_get(ev, "task"));
        json_t *t = id ? json_object_get(byid, id) : NULL;
        json_t *m = json_object_get(ev, "metrics");
        if (!t || !type || strcmp(type, "TASK_FINISHED") != 0 || !json_is_object(m)) continue;
        json_object_update_missing(json_object_get(t, "metrics"), m);
    }
    json_decref(byid);
    return tasks;
}

static void print_event(const json_t *ev) {
    char b[64];
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *e = json_object_get(ev, "event");
    long long ts = json_integer_value(json_object_get(ev, "timestamp"));
    printf("  %s  %-20s ", when(ts, b, sizeof b), type ? type : "?");
    if (json_object_get(e, "taskType"))
        printf("%s:%lld", json_string_value(json_object_get(e, "taskType")),
               (long long)json_integer_value(json_object_get(e, "taskIndex")));
    const char *host = json_string_value(json_object_get(e, "host"));
    const char *status = json_string_value(json_object_get(e, "status"));
    if (type && strcmp(type, "APPLICATION_INITED") == 0)
        printf("%lld task(s), coordinator on %s", (long long)json_integer_value(json_object_get(e, "numTasks")),
               host ? host : "?");
    else if (host) printf(" on %s", host);
    if (status) printf(" %s", status);
    if (type && strcmp(type, "APPLICATION_FINISHED") == 0)
        printf("%lld finished, %lld failed", (long long)json_integer_value(json_object_get(e, "finishedTasks")),
               (long long)json_integer_value(json_object_get(e, "failedTasks")));
    printf("\n");
}

static const char *metric_text(const json_t *metrics, const char *name, bool bytes, char *buf, size_t n) {
    json_t *v = json_object_get(metrics, name);
    double x = json_is_number(v) ? json_number_value(v) : -1;
    if (x < 0) return "-";
    if (bytes) return tony_sizing_bytes(x, buf, n);
    snprintf(buf, n, "%.0f%%", x);
    return buf;
}

static void print_job(const json_t *o) {
    char b1[64], b2[64], b3[64], b4[64], b5[64];
    printf("job %s: %s, user %s, started %s, ended %s, took %s\n", json_string_value(json_object_get(o, "app_id")),
           json_string_value(json_object_get(o, "status")), json_string_value(json_object_get(o, "user")),
           when(json_integer_value(json_object_get(o, "started_ms")), b1, sizeof b1),
           when(json_integer_value(json_object_get(o, "finished_ms")), b2, sizeof b2),
           duration(json_is_integer(json_object_get(o, "duration_ms")) ? json_integer_value(json_object_get(o, "duration_ms")) : -1,
                    b3, sizeof b3));
    printf("history: %s\n\nevents:\n", json_string_value(json_object_get(o, "file")));
    json_t *log = json_object_get(o, "log");
    size_t i;
    json_t *ev;
    if (json_array_size(log)) {
        json_array_foreach(log, i, ev)
            printf("  %s  %-20s %s\n", when(json_integer_value(json_object_get(ev, "t_ms")), b1, sizeof b1),
                   json_string_value(json_object_get(ev, "type")), json_string_value(json_object_get(ev, "text")));
    } else {
        json_array_foreach(json_object_get(o, "events"), i, ev) print_event(ev);
    }
    json_t *tasks = json_object_get(o, "tasks");
    if (json_array_size(tasks)) {
        printf("\ntasks:\n  %-16s %-10s %-10s %-10s %-8s %-8s %-8s\n", "TASK", "STATUS", "PEAK MEM", "AVG MEM", "AVG CPU",
               "AVG GPU", "MAX GPU");
        json_array_foreach(tasks, i, ev) {
            json_t *m = json_object_get(ev, "metrics");
            printf("  %-16s %-10s %-10s %-10s %-8s %-8s %-8s\n", json_string_value(json_object_get(ev, "task")),
                   json_string_value(json_object_get(ev, "status")),
                   metric_text(m, "MAX_MEMORY_BYTES", true, b1, sizeof b1),
                   metric_text(m, "AVG_MEMORY_BYTES", true, b2, sizeof b2),
                   metric_text(m, "AVG_CPU_PERCENT", false, b3, sizeof b3),
                   metric_text(m, "AVG_GPU_UTILIZATION", false, b4, sizeof b4),
                   metric_text(m, "MAX_GPU_UTILIZATION", false, b5, sizeof b5));
        }
    }
    json_t *advice = json_object_get(o, "advice");
    if (json_array_size(advice)) {
        printf("\nright-sizing:\n");
        json_array_foreach(advice, i, ev) printf("  %s\n", json_string_value(json_object_get(ev, "text")));
    }
}

static int show_job(const hist_job *j, bool as_json) {
    json_t *events;
    tony_error err;
    if (tony_jhist_read(j->file, &events, &err)) {
        fprintf(stderr, "tony: error: %s\n", err.msg);
        return TONY_EXIT_UNAVAILABLE;
    }
    json_t *o = job_json(j);
    json_t *log = read_log(j->dir), *req = requests(j->dir);
    json_t *tasks = tasks_from(events, log, req);
    json_object_set_new(o, "events", events);
    json_object_set_new(o, "log", log ? log : json_array());
    json_object_set_new(o, "advice", tony_sizing_advice(tasks));
    json_object_set_new(o, "tasks", tasks);
    json_decref(req);
    if (as_json) {
        json_dumpf(o, stdout, JSON_INDENT(2));
        printf("\n");
    } else {
        print_job(o);
    }
    json_decref(o);
    return TONY_EXIT_OK;
}

static void print_list(const hist_list *l, const tony_jhist_dirs *d) {
    if (!l->len) {
        printf("no jobs in history under %s\n", d->location);
        return;
    }
    printf("%-32s %-12s %-19s  %-19s  %-9s %s\n", "APP ID", "USER", "STARTED", "COMPLETED", "DURATION", "STATUS");
    for (size_t i = 0; i < l->len; i++) {
        const tony_jhist_meta *m = &l->items[i].meta;
        char b1[64], b2[64], b3[64];
        printf("%-32s %-12s %-19s  %-19s  %-9s %s\n", m->app_id, m->user, when(m->start_ms, b1, sizeof b1),
               m->in_progress ? "-" : when(m->end_ms, b2, sizeof b2),
               m->in_progress ? "-" : duration(m->end_ms - m->start_ms, b3, sizeof b3), m->status);
    }
}

int tony_cmd_history(int argc, char **argv) {
    tony_opt opts[] = {{"json", NULL, false, false, "print JSON", false, {0}},
                       {"location", NULL, true, false, "history root (default tony.history.location, else <tony root>/history)",
                        false, {0}},
                       {"root", NULL, true, false, "tony root (default $TONY_HOME or ~/.tony)", false, {0}},
                       {"help", "h", false, false, "show this help", false, {0}},
                       {NULL, NULL, false, false, NULL, false, {0}}};
    const char *usage = "usage: tony history [APP_ID] [--json] [--location DIR]";
    tony_strv pos = {0};
    tony_error err;
    tony_conf *conf = tony_conf_new();
    int code = TONY_EXIT_OK;
    if (tony_args_parse(argc, argv, opts, &pos, &err) || (pos.len > 1 && tony_err(&err, "%s", usage)) ||
        tony_conf_load_layers(conf, NULL, &err)) {
        fprintf(stderr, "tony: error: %s\n", err.msg);
        code = TONY_EXIT_USAGE;
        goto out;
    }
    if (tony_args_get(opts, "help")->seen) {
        tony_args_usage(usage, opts);
        goto out;
    }
    /* --location replaces the whole tree, as tony.history.location does */
    const char *loc = tony_args_value(opts, "location");
    const char *root_opt = tony_args_value(opts, "root");
    char *root = tony_jobs_root(root_opt ? root_opt : tony_conf_get(conf, "tony.local.root"));
    tony_jhist_dirs d;
    tony_jhist_dirs_resolve(loc ? loc : tony_conf_get(conf, "tony.history.location"),
                            loc ? NULL : tony_conf_get(conf, "tony.history.intermediate"),
                            loc ? NULL : tony_conf_get(conf, "tony.history.finished"), root, &d);
    free(root);
    if (loc && !tony_is_dir(loc)) {
        fprintf(stderr, "tony: error: --location %s: no such directory\n", loc);
        code = TONY_EXIT_USAGE;
        tony_jhist_dirs_free(&d);
        goto out;
    }
    hist_list l = {0};
    scan(&l, d.finished, 4);
    scan(&l, d.intermediate, 1);
    if (l.len) qsort(l.items, l.len, sizeof *l.items, newest_first);
    bool as_json = tony_args_get(opts, "json")->seen;
    if (pos.len == 1) {
        const hist_job *found = NULL;
        for (size_t i = 0; i < l.len && !found; i++)
            if (strcmp(l.items[i].meta.app_id, pos.items[0]) == 0) found = &l.items[i];
        if (found) {
            code = show_job(found, as_json);
        } else {
            fprintf(stderr, "tony: error: no job %s in the history under %s or %s (see tony.history.location, "
                            "--location)\n", pos.items[0], d.finished, d.intermediate);
            code = TONY_EXIT_USAGE;
        }
    } else if (as_json) {
        json_t *jobs = json_array();
        for (size_t i = 0; i < l.len; i++) json_array_append_new(jobs, job_json(&l.items[i]));
        json_t *o = json_pack("{s:s,s:s,s:s,s:o}", "location", d.location, "intermediate", d.intermediate, "finished",
                              d.finished, "jobs", jobs);
        json_dumpf(o, stdout, JSON_INDENT(2));
        printf("\n");
        json_decref(o);
    } else {
        print_list(&l, &d);
    }
    list_free(&l);
    tony_jhist_dirs_free(&d);
out:
    tony_conf_free(conf);
    tony_strv_free(&pos);
    tony_args_free(opts);
    return code;
}
