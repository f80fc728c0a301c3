/* `tony history`: past jobs from the history tree TonY's portal reads
 * (finished/yyyy/mm/dd/<appId>/ and intermediate/<appId>/), newest first,
 * and one job's events, per-task metrics and right-sizing advice. Works
 * from the files alone: no coordinator, no job dir needed; a tree on HDFS
 * is read through the local cache (histcache.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/args.h"
#include "client/client.h"
#include "client/confargs.h"
#include "client/histcache.h"
#include "client/histdir.h"
#include "client/report.h"
#include "common/fs.h"
#include "common/jhist.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "common/sizing.h"
#include "common/strv.h"
#include "conf/conf.h"

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

static void print_job(const json_t *o, const tony_hist_source *src) {
    char b1[64], b2[64], b3[64], b4[64], b5[64];
    printf("job %s: %s, user %s, started %s, ended %s, took %s\n", json_string_value(json_object_get(o, "app_id")),
           json_string_value(json_object_get(o, "status")), json_string_value(json_object_get(o, "user")),
           when(json_integer_value(json_object_get(o, "started_ms")), b1, sizeof b1),
           when(json_integer_value(json_object_get(o, "finished_ms")), b2, sizeof b2),
           duration(json_is_integer(json_object_get(o, "duration_ms")) ? json_integer_value(json_object_get(o, "duration_ms")) : -1,
                    b3, sizeof b3));
    const char *name = json_string_value(json_object_get(o, JOB_NAME));
    if (name) {
        char *fw = tony_report_framework(json_string_value(json_object_get(o, JOB_FRAMEWORK)),
                                         json_is_true(json_object_get(o, JOB_FRAMEWORK_DEFAULT)));
        printf("name: %s, framework: %s\n", name, fw);
        free(fw);
    }
    const char *cause = json_string_value(json_object_get(json_object_get(o, JOB_ROOT_CAUSE), JOB_CAUSE_TEXT));
    if (cause) printf("%s\n", cause);
    const char *file = json_string_value(json_object_get(o, "file"));
    char *shown = tony_hist_source_shown_path(src, file ? file : json_string_value(json_object_get(o, "dir")));
    printf("history: %s\n\nevents:\n", shown);
    free(shown);
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
            json_t *m = json_object_get(ev, JOB_TASK_METRICS);
            printf("  %-16s %-10s %-10s %-10s %-8s %-8s %-8s\n", json_string_value(json_object_get(ev, "task")),
                   json_string_value(json_object_get(ev, "status")),
                   /* the kernel's peak where the executor reported one (never below the samples') */
                   metric_text(m, json_integer_value(json_object_get(m, JOB_METRIC_PEAK_MEMORY_BYTES)) > 0
                                      ? JOB_METRIC_PEAK_MEMORY_BYTES : JOB_METRIC_MAX_MEMORY_BYTES,
                               true, b1, sizeof b1),
                   metric_text(m, JOB_METRIC_AVG_MEMORY_BYTES, true, b2, sizeof b2),
                   metric_text(m, JOB_METRIC_AVG_CPU_PERCENT, false, b3, sizeof b3),
                   metric_text(m, JOB_METRIC_AVG_GPU_UTILIZATION, false, b4, sizeof b4),
                   metric_text(m, JOB_METRIC_MAX_GPU_UTILIZATION, false, b5, sizeof b5));
        }
    }
    json_t *advice = json_object_get(o, JOB_ADVICE);
    if (json_array_size(advice)) {
        printf("\nright-sizing:\n");
        json_array_foreach(advice, i, ev) printf("  %s\n", json_string_value(json_object_get(ev, JOB_ADVICE_TEXT)));
    }
}

/* Prints what the files hold; says on stderr what they lack. Exit 3 when
 * there is nothing to show at all. */
static int show_job(const tony_hist_job *j, bool as_json, const tony_hist_source *src, const char *root) {
    json_t *o = tony_hist_job_detail(j, 0);
    tony_hist_note_lost(o, j, root);
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(o, "problems"), i, p) fprintf(stderr, "tony: warning: %s\n", json_string_value(p));
    bool empty = !json_array_size(json_object_get(o, "events")) && !json_array_size(json_object_get(o, "log"));
    if (empty) {
        char *shown = tony_hist_source_shown_path(src, j->dir);
        fprintf(stderr, "tony: error: job %s: no events could be read from %s\n", j->meta.app_id, shown);
        free(shown);
    } else if (as_json) {
        json_dumpf(o, stdout, JSON_INDENT(2));
        printf("\n");
    } else {
        print_job(o, src);
    }
    json_decref(o);
    return empty ? TONY_EXIT_UNAVAILABLE : TONY_EXIT_OK;
}

static void print_list(const tony_hist_list *l, const char *location, const char *root) {
    if (!l->len) {
        printf("no jobs in history under %s\n", location);
        return;
    }
    /* STATUS stays last: scripts read it as the line's last word */
    printf("%-32s %-12s %-19s  %-19s  %-9s %-22s %s\n", "APP ID", "USER", "STARTED", "COMPLETED", "DURATION", "NAME",
           "STATUS");
    for (size_t i = 0; i < l->len; i++) {
        const tony_jhist_meta *m = &l->items[i].meta;
        char b1[64], b2[64], b3[64];
        char *lost = tony_hist_lost_reason(&l->items[i], root);
        json_t *facts = NULL;
        tony_error ignored; /* a job without its configuration: no name to show */
        const char *name = tony_hist_conf_facts(&l->items[i], &facts, &ignored) == 0
                               ? json_string_value(json_object_get(facts, JOB_NAME)) : NULL;
        printf("%-32s %-12s %-19s  %-19s  %-9s %-22s %s\n", m->app_id, m->user, when(m->start_ms, b1, sizeof b1),
               m->end_ms <= 0 ? "-" : when(m->end_ms, b2, sizeof b2),
               m->end_ms <= 0 ? "-" : duration(m->end_ms - m->start_ms, b3, sizeof b3), name ? name : "-",
               lost ? "LOST" : m->status);
        json_decref(facts);
        if (lost) printf("  %s\n", lost);
        free(lost);
    }
}

/* A coordinator refused by a shared location (a folder another user made
 * at the job's name, am/history.h) writes the job's history to its
 * owner's own, <tony root>/history: said when the job is there. */
static void own_location_hint(const char *app_id, const tony_jhist_dirs *looked, const char *root) {
    tony_jhist_dirs own = {0};
    tony_jhist_dirs_resolve(NULL, NULL, NULL, root, &own);
    if (strcmp(own.intermediate, looked->intermediate) != 0) {
        tony_hist_list l = {0};
        tony_hist_scan(&own, &l);
        if (tony_hist_find(&l, app_id))
            fprintf(stderr, "tony: %s's history is in your own location %s (its coordinator could not write it "
                            "where it was configured; its am.log says why): tony history %s --location %s\n",
                    app_id, own.location, app_id, own.location);
        tony_hist_list_free(&l);
    }
    tony_jhist_dirs_free(&own);
}

int tony_cmd_history(int argc, char **argv) {
    tony_opt opts[] = {{"json", NULL, false, false, "print JSON", false, {0}},
                       {"location", NULL, true, false, "history root: a directory, hdfs://NAMENODE/path or webhdfs://NAMENODE:HTTP_PORT/path "
                        "(default tony.history.location, else <tony root>/history)",
                        false, {0}},
                       {"root", NULL, true, false, "tony root (default tony.local.root, else $TONY_HOME or ~/.tony)",
                        false, {0}},
                       TONY_CONF_OPTS,
                       {"help", "h", false, false, "show this help", false, {0}},
                       {NULL, NULL, false, false, NULL, false, {0}}};
    const char *usage = "usage: tony history [APP_ID] [--json] [--location DIR|hdfs://NAMENODE/DIR] [--conf K=V] "
                        "[--conf_file FILE]";
    tony_strv pos = {0};
    tony_error err;
    tony_conf *conf = tony_conf_new();
    char *root = NULL; /* where local jobs' dirs tell whether a job still runs */
    int code = TONY_EXIT_OK;
    if (tony_args_parse(argc, argv, opts, &pos, &err)) {
        fprintf(stderr, "tony: error: %s\n", err.msg);
        code = TONY_EXIT_USAGE;
        goto out;
    }
    if (tony_args_get(opts, "help")->seen) {
        tony_args_usage(usage, opts);
        goto out;
    }
    if ((pos.len > 1 && tony_err(&err, "%s", usage)) || tony_confargs_load(opts, conf, &err)) {
        fprintf(stderr, "tony: error: %s\n", err.msg);
        code = TONY_EXIT_USAGE;
        goto out;
    }
    const char *loc = tony_args_value(opts, "location");
    root = tony_confargs_root(opts, conf);
    tony_hist_source src;
    tony_hist_sync_stats sync;
    int rc = tony_hist_source_open(&src, conf, loc, root, &err);
    if (rc == 0) rc = tony_hist_source_refresh(&src, &sync, &err);
    if (rc) {
        fprintf(stderr, "tony: error: %s\n", err.msg);
        code = src.unreachable ? TONY_EXIT_UNAVAILABLE : TONY_EXIT_USAGE;
        tony_hist_source_free(&src);
        goto out;
    }
    if (loc && !tony_hist_source_remote(&src) && !tony_is_dir(loc)) {
        fprintf(stderr, "tony: error: --location %s: no such directory (HDFS: hdfs://NAMENODE/path or "
                        "webhdfs://NAMENODE:HTTP_PORT/path)\n", loc);
        code = TONY_EXIT_USAGE;
        tony_hist_source_free(&src);
        goto out;
    }
    const tony_jhist_dirs *d = &src.scan;
    tony_hist_list l = {0};
    tony_hist_scan(d, &l);
    bool as_json = tony_args_get(opts, "json")->seen;
    if (pos.len == 1) {
        const tony_hist_job *found = tony_hist_find(&l, pos.items[0]);
        if (found) {
            code = show_job(found, as_json, &src, root);
            /* a folder there with no history: maybe another user's plant */
            if (code != TONY_EXIT_OK) own_location_hint(pos.items[0], d, root);
        } else {
            fprintf(stderr, "tony: error: no job %s in the history under %s or %s (see tony.history.location, "
                            "--location)\n", pos.items[0], src.shown_finished, src.shown_intermediate);
            own_location_hint(pos.items[0], d, root);
            code = TONY_EXIT_USAGE;
        }
    } else if (as_json) {
        json_t *jobs = json_array();
        for (size_t i = 0; i < l.len; i++) {
            json_t *o = tony_hist_job_json(&l.items[i]), *facts = NULL;
            tony_error ignored; /* no configuration: no name */
            if (tony_hist_conf_facts(&l.items[i], &facts, &ignored) == 0) {
                json_t *keep = json_pack("{s:O?,s:O?,s:O?}", JOB_NAME, json_object_get(facts, JOB_NAME), JOB_FRAMEWORK,
                                         json_object_get(facts, JOB_FRAMEWORK), JOB_FRAMEWORK_DEFAULT,
                                         json_object_get(facts, JOB_FRAMEWORK_DEFAULT));
                json_object_update(o, keep);
                json_decref(keep);
                json_decref(facts);
            }
            tony_hist_note_lost(o, &l.items[i], root);
            json_array_append_new(jobs, o);
        }
        json_t *o = json_pack("{s:s,s:s,s:s,s:o}", "location", src.shown, "intermediate", src.shown_intermediate,
                              "finished", src.shown_finished, "jobs", jobs);
        if (tony_hist_source_remote(&src))
            json_object_set_new(o, "cache", json_pack("{s:s,s:i,s:i,s:i}", "dir", d->location, "listed", sync.listed,
                                                      "downloaded", sync.downloaded, "removed", sync.removed));
        json_dumpf(o, stdout, JSON_INDENT(2));
        printf("\n");
        json_decref(o);
    } else {
        print_list(&l, src.shown, root);
    }
    tony_hist_list_free(&l);
    tony_hist_source_free(&src);
out:
    free(root);
    tony_conf_free(conf);
    tony_strv_free(&pos);
    tony_args_free(opts);
    return code;
}
