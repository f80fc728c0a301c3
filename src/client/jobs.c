/* The verbs on existing jobs: status, kill, logs, list. They read the live
 * coordinator when it runs and the job dir's status.json after it exited. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/args.h"
#include "client/client.h"
#include "client/confargs.h"
#include "client/report.h"
#include "client/yarn_client.h"
#include "common/amapi.h"
#include "common/fs.h"
#include "common/http.h"
#include "common/jobdir.h"
#include "common/strv.h"

/* How long `tony kill` waits for the coordinator to take the request before
 * it signals it instead. */
#define KILL_ASK_MS 5000

static json_t *load_job(const char *job_dir, bool *live) { return tony_jobdir_load_state(job_dir, live); }

/* Parses the verb's flags, builds its configuration as submit does and
 * finds the job dir under the tony root. 1: --help was shown. */
static int resolve(int argc, char **argv, tony_opt *opts, const char *usage, tony_conf *conf, char **job_dir,
                   tony_error *err) {
    tony_strv pos = {0};
    int rc = tony_args_parse(argc, argv, opts, &pos, err);
    if (rc == 0 && tony_args_get(opts, "help")->seen) {
        tony_args_usage(usage, opts);
        tony_strv_free(&pos);
        return 1;
    }
    if (rc == 0 && pos.len != 1) rc = tony_err(err, "%s", usage);
    if (rc == 0) rc = tony_confargs_load(opts, conf, err);
    if (rc == 0) {
        char *root = tony_confargs_root(opts, conf);
        rc = tony_jobdir_find(root, pos.items[0], job_dir, err);
        free(root);
    }
    tony_strv_free(&pos);
    return rc;
}

/* --root wins over tony.local.root, which wins over $TONY_HOME. */
#define COMMON_OPTS                                                                                     \
    {"root", NULL, true, false, "jobs root (default tony.local.root, else $TONY_HOME or ~/.tony)", false, \
     {0}},                                                                                              \
    TONY_CONF_OPTS,                                                                                     \
    {"help", "h", false, false, "show this help", false, {0}}

int tony_cmd_status(int argc, char **argv) {
    tony_opt opts[] = {{"json", NULL, false, false, "print the job as JSON", false, {0}}, COMMON_OPTS,
                       {NULL, NULL, false, false, NULL, false, {0}}};
    tony_error err;
    char *job_dir = NULL;
    tony_conf *conf = tony_conf_new();
    int rc = resolve(argc, argv, opts, "usage: tony status JOB_ID [--json] [--conf K=V] [--conf_file FILE]", conf,
                     &job_dir, &err);
    if (rc) {
        tony_args_free(opts);
        tony_conf_free(conf);
        if (rc > 0) return TONY_EXIT_OK;
        fprintf(stderr, "tony: error: %s\n", err.msg);
        return TONY_EXIT_USAGE;
    }
    if (tony_yarn_is_job(job_dir)) {
        int yc = tony_yarn_status(job_dir, tony_args_get(opts, "json")->seen, conf);
        free(job_dir);
        tony_args_free(opts);
        tony_conf_free(conf);
        return yc;
    }
    bool live;
    json_t *job = load_job(job_dir, &live);
    int code = TONY_EXIT_OK;
    if (!job) {
        fprintf(stderr, "tony: error: no state for %s yet (see %s/%s)\n", job_dir, job_dir, TONY_JOBDIR_AM_LOG);
        code = TONY_EXIT_UNAVAILABLE;
    } else if (tony_args_get(opts, "json")->seen) {
        json_dumpf(job, stdout, JSON_INDENT(2));
        printf("\n");
    } else {
        const char *state = json_string_value(json_object_get(job, "state"));
        printf("job %s: %s%s (attempt %lld)\n", json_string_value(json_object_get(job, "app_id")), state,
               live ? "" : (strcmp(state, "FINISHED") ? " (coordinator not running)" : ""),
               (long long)json_integer_value(json_object_get(job, "attempt")));
        const char *url = json_string_value(json_object_get(job, "url"));
        if (live && url) printf("web page: %s/\n", url);
        char *g = tony_report_grouped(job);
        if (*g) printf("%s\n", g);
        free(g);
        tony_report_tasks(stdout, job);
        if (strcmp(state, "FINISHED") == 0) tony_report_final(stdout, job);
    }
    json_decref(job);
    free(job_dir);
    tony_args_free(opts);
    tony_conf_free(conf);
    return code;
}

int tony_cmd_kill(int argc, char **argv) {
    tony_opt opts[] = {COMMON_OPTS, {NULL, NULL, false, false, NULL, false, {0}}};
    tony_error err;
    char *job_dir = NULL;
    tony_conf *conf = tony_conf_new();
    int rc = resolve(argc, argv, opts, "usage: tony kill JOB_ID [--conf K=V] [--conf_file FILE]", conf, &job_dir, &err);
    tony_args_free(opts);
    if (rc) {
        tony_conf_free(conf);
        if (rc > 0) return TONY_EXIT_OK;
        fprintf(stderr, "tony: error: %s\n", err.msg);
        return TONY_EXIT_USAGE;
    }
    if (tony_yarn_is_job(job_dir)) {
        int yc = tony_yarn_kill(job_dir, conf);
        free(job_dir);
        tony_conf_free(conf);
        return yc;
    }
    /* A local job's coordinator has its own conf; nothing more is read here. */
    tony_conf_free(conf);
    char *url = NULL, *secret = NULL;
    int pid = 0, code = TONY_EXIT_OK;
    /* A pid in am.json that another process took since is not ours to
     * signal: the coordinator runs only if it is the process that wrote it. */
    if (tony_jobdir_am_url(job_dir, &url, &pid, &err) || !tony_jobdir_am_running(job_dir, NULL)) {
        bool live;
        json_t *job = load_job(job_dir, &live);
        const char *state = job ? json_string_value(json_object_get(job, "state")) : NULL;
        if (job && state && strcmp(state, "FINISHED") != 0)
            fprintf(stderr, "tony: the job's coordinator%s is not running (killed or crashed before the job ended; "
                            "see %s/%s): nothing to kill\n",
                    pid > 0 ? " (the process am.json names)" : "", job_dir, TONY_JOBDIR_AM_LOG);
        if (job) {
            tony_report_final(stdout, job);
        } else {
            fprintf(stderr, "tony: error: the job's coordinator is not running and left no status; see %s/%s\n",
                    job_dir, TONY_JOBDIR_AM_LOG);
            code = TONY_EXIT_UNAVAILABLE;
        }
        json_decref(job);
    } else if (tony_jobdir_secret(job_dir, &secret, &err)) {
        fprintf(stderr, "tony: error: %s\n", err.msg);
        code = TONY_EXIT_UNAVAILABLE;
    } else {
        char *u = tony_sprintf("%s" AM_API_JOB_KILL, url);
        tony_http_response r;
        bool asked = tony_http_call("POST", u, secret, "{}", KILL_ASK_MS, &r, &err) == 0;
        if (asked) {
            tony_http_response_free(&r);
        } else if (tony_jobdir_signal_am(job_dir, SIGTERM) == 0) {
            /* A coordinator too busy to answer (thousands of processes on
             * two cores do that) still takes its signal: SIGTERM is a kill
             * request to it, the same path as the API's. */
            fprintf(stderr, "tony: the coordinator (pid %d) did not take the kill request (%s); sent it SIGTERM\n",
                    pid, err.msg);
            asked = true;
        } else {
            fprintf(stderr, "tony: error: %s; and the coordinator (pid %d) cannot be signalled: %s\n", err.msg, pid,
                    strerror(errno));
            code = TONY_EXIT_UNAVAILABLE;
        }
        if (asked) {
            /* Wait until every task is down so "killed" means nothing runs. */
            json_t *job = NULL;
            for (int i = 0; i < 600; i++) {
                bool live;
                json_decref(job);
                job = load_job(job_dir, &live);
                const char *state = job ? json_string_value(json_object_get(job, "state")) : NULL;
                if (state && strcmp(state, "FINISHED") == 0) break;
                tony_sleep_ms(100);
            }
            if (job) tony_report_final(stdout, job);
            json_decref(job);
            /* We are the client that saw the end: the coordinator may go. */
            tony_jobdir_post(url, job_dir, AM_API_JOB_FINISH);
        }
        free(u);
    }
    free(url);
    free(secret);
    free(job_dir);
    return code;
}

static bool job_finished(const char *job_dir) {
    bool live;
    json_t *job = load_job(job_dir, &live);
    const char *state = job ? json_string_value(json_object_get(job, "state")) : NULL;
    bool done = state && strcmp(state, "FINISHED") == 0;
    json_decref(job);
    return done;
}

/* Prints what the task writes as it writes it, until the job is over and
 * the file has no more to give. */
static void follow_file(const char *job_dir, const char *path) {
    FILE *f = NULL;
    char buf[8192];
    for (;;) {
        if (!f) f = fopen(path, "r");
        size_t n = 0;
        if (f) {
            while ((n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, stdout);
            clearerr(f);
            fflush(stdout);
        }
        if (job_finished(job_dir)) {
            if (f) {
                while ((n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, stdout);
                fclose(f);
            }
            fflush(stdout);
            return;
        }
        tony_sleep_ms(250);
    }
}

static void cat_file(const char *title, const char *path) {
    char *data = NULL;
    size_t len = 0;
    printf("==> %s (%s) <==\n", title, path);
    if (tony_read_file(path, &data, &len, NULL) == 0) {
        fwrite(data, 1, len, stdout);
        if (len && data[len - 1] != '\n') printf("\n");
    } else {
        printf("(no such file yet)\n");
    }
    free(data);
}

int tony_cmd_logs(int argc, char **argv) {
    tony_opt opts[] = {{"task", NULL, true, false, "ROLE:INDEX, e.g. worker:1 (default: all tasks)", false, {0}},
                       {"attempt", NULL, true, false, "attempt number (default: the last)", false, {0}},
                       {"am", NULL, false, false, "show the coordinator's log", false, {0}},
                       {"stacks", NULL, false, false,
                        "only the stacks a hang diagnosis collected (tony.task.progress-timeout)", false, {0}},
                       {"follow", "f", false, false, "with --task: print its stdout as it grows, until the job ends", false, {0}},
                       COMMON_OPTS,
                       {NULL, NULL, false, false, NULL, false, {0}}};
    tony_error err;
    char *job_dir = NULL;
    tony_conf *conf = tony_conf_new();
    int rc = resolve(argc, argv, opts,
                     "usage: tony logs JOB_ID [--task worker:1 [-f]] [--attempt N] [--am] [--stacks] [--conf K=V] "
                     "[--conf_file FILE]",
                     conf, &job_dir, &err);
    if (rc) {
        tony_args_free(opts);
        tony_conf_free(conf);
        if (rc > 0) return TONY_EXIT_OK;
        fprintf(stderr, "tony: error: %s\n", err.msg);
        return TONY_EXIT_USAGE;
    }
    int code = TONY_EXIT_OK;
    long long attempt = -1;
    const char *a = tony_args_value(opts, "attempt");
    if (a && (!tony_parse_ll(a, &attempt) || attempt < 0 || attempt > 1000000)) {
        fprintf(stderr, "tony: error: --attempt %s: expected a number >= 0\n", a);
        code = TONY_EXIT_USAGE;
    }
    const char *want = tony_args_value(opts, "task");
    char role[64] = "", tail[2];
    int index = -1;
    if (code == 0 && want && (sscanf(want, "%63[a-z]:%d%1s", role, &index, tail) != 2 || index < 0)) {
        fprintf(stderr, "tony: error: --task %s: expected ROLE:INDEX such as worker:1\n", want);
        code = TONY_EXIT_USAGE;
    }
    bool follow = tony_args_get(opts, "follow")->seen, stacks = tony_args_get(opts, "stacks")->seen;
    if (code == 0 && follow && !want) {
        fprintf(stderr, "tony: error: --follow needs --task ROLE:INDEX\n");
        code = TONY_EXIT_USAGE;
    }
    if (code == 0 && follow && stacks) {
        fprintf(stderr, "tony: error: --stacks and --follow do not go together: stacks are written once\n");
        code = TONY_EXIT_USAGE;
    }
    if (code == 0 && tony_yarn_is_job(job_dir)) {
        char *norm = want ? tony_sprintf("%s:%d", role, index) : NULL;
        tony_yarn_logs_opts yo = {.task = norm, .follow = follow, .am = tony_args_get(opts, "am")->seen,
                                  .attempt = (int)attempt, .stacks = stacks};
        code = tony_yarn_logs(job_dir, &yo, conf);
        free(norm);
        free(job_dir);
        tony_args_free(opts);
        tony_conf_free(conf);
        return code;
    }
    if (code == 0 && tony_args_get(opts, "am")->seen) {
        char *p = tony_path_join(job_dir, TONY_JOBDIR_AM_LOG);
        cat_file("coordinator", p);
        free(p);
    }
    bool live;
    json_t *job = load_job(job_dir, &live);
    if (attempt < 0) attempt = job ? json_integer_value(json_object_get(job, "attempt")) : 0;
    bool found = false;
    int nstacks = 0;
    size_t i;
    json_t *t;
    json_array_foreach(job ? json_object_get(job, "tasks") : NULL, i, t) {
        if (code) break;
        const char *r = json_string_value(json_object_get(t, "role"));
        int idx = (int)json_integer_value(json_object_get(t, "index"));
        if (want && (strcmp(r, role) != 0 || idx != index)) continue;
        found = true;
        char *dir = strcmp(r, "am") == 0 ? tony_jobdir_am_dir(job_dir)
                                         : tony_jobdir_task_dir(job_dir, (int)attempt, r, idx);
        char *title = tony_sprintf("%s:%d", r, idx);
        char *out = tony_path_join(dir, "stdout"), *er = tony_path_join(dir, "stderr");
        char *t1 = tony_sprintf("%s stdout", title), *t2 = tony_sprintf("%s stderr", title);
        /* a hang diagnosis' stacks, with the task's output when there are some */
        char *sf = tony_jobdir_stacks_file(job_dir, (int)attempt, r, idx), *t3 = tony_sprintf("%s stacks", title);
        bool has_stacks = tony_file_exists(sf);
        nstacks += has_stacks;
        if (follow) {
            follow_file(job_dir, out);
        } else if (!stacks) {
            cat_file(t1, out);
            cat_file(t2, er);
        }
        if (has_stacks && !follow) cat_file(t3, sf);
        free(dir), free(title), free(out), free(er), free(t1), free(t2), free(sf), free(t3);
    }
    if (code == 0 && want && !found) {
        fprintf(stderr, "tony: error: no task %s in this job\n", want);
        code = TONY_EXIT_USAGE;
    }
    if (code == 0 && stacks && nstacks == 0) {
        fprintf(stderr, "tony: no stacks in attempt %lld%s: they are collected when tony.task.progress-timeout "
                        "finds the attempt hung\n", attempt, want ? " for that task" : "");
        code = TONY_EXIT_JOB_FAILED;
    }
    json_decref(job);
    free(job_dir);
    tony_args_free(opts);
    tony_conf_free(conf);
    return code;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int tony_cmd_list(int argc, char **argv) {
    tony_opt opts[] = {COMMON_OPTS, {NULL, NULL, false, false, NULL, false, {0}}};
    const char *usage = "usage: tony list [--root DIR] [--conf K=V] [--conf_file FILE]";
    tony_strv pos = {0};
    tony_error err;
    tony_conf *conf = tony_conf_new();
    int rc = tony_args_parse(argc, argv, opts, &pos, &err);
    if (rc == 0 && tony_args_get(opts, "help")->seen) {
        tony_args_usage(usage, opts);
    } else if (rc == 0 && pos.len) {
        rc = tony_err(&err, "unexpected '%s'; %s", pos.items[0], usage);
    } else if (rc == 0) {
        rc = tony_confargs_load(opts, conf, &err);
    }
    if (rc || tony_args_get(opts, "help")->seen) {
        if (rc) fprintf(stderr, "tony: error: %s\n", err.msg);
        tony_args_free(opts);
        tony_strv_free(&pos);
        tony_conf_free(conf);
        return rc ? TONY_EXIT_USAGE : TONY_EXIT_OK;
    }
    char *root = tony_confargs_root(opts, conf);
    tony_conf_free(conf);
    char *jobs = tony_path_join(root, "jobs");
    tony_strv ids = {0};
    DIR *d = opendir(jobs);
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (de->d_name[0] != '.') tony_strv_push(&ids, de->d_name);
    if (d) closedir(d);
    if (ids.len) qsort(ids.items, ids.len, sizeof *ids.items, cmp_str);
    printf("%-32s %-7s %-10s %-10s %s\n", "JOB", "BACKEND", "STATE", "STATUS", "FRAMEWORK");
    for (size_t i = 0; i < ids.len; i++) {
        char *dir = tony_path_join(jobs, ids.items[i]);
        if (tony_yarn_is_job(dir)) {
            /* The RM's state as last seen; `tony status` refreshes it. */
            char state[32], final[32];
            tony_yarn_list_state(dir, state, sizeof state, final, sizeof final);
            json_t *job = tony_jobdir_read_json(dir, TONY_JOBDIR_STATUS);
            const char *fw = job ? json_string_value(json_object_get(job, "framework")) : "";
            printf("%-32s %-7s %-10s %-10s %s\n", ids.items[i], "yarn", state, final, fw ? fw : "");
            json_decref(job);
            free(dir);
            continue;
        }
        bool live;
        json_t *job = load_job(dir, &live);
        const char *state = job ? json_string_value(json_object_get(job, "state")) : "STAGED";
        const char *fs = job ? json_string_value(json_object_get(job, "final_status")) : "";
        const char *fw = job ? json_string_value(json_object_get(job, "framework")) : "";
        printf("%-32s %-7s %-10s %-10s %s\n", ids.items[i], "local", state ? state : "?", fs ? fs : "", fw ? fw : "");
        json_decref(job);
        free(dir);
    }
    tony_strv_free(&ids);
    tony_strv_free(&pos);
    free(root);
    free(jobs);
    tony_args_free(opts);
    return TONY_EXIT_OK;
}
