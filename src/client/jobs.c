/* The verbs on existing jobs: status, kill, logs, list, on any backend: the
 * job's record says whose it is (backend/client.h), that backend looks, the
 * verb shows what it found the same way everywhere. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/client.h"
#include "client/args.h"
#include "client/client.h"
#include "client/confargs.h"
#include "client/report.h"
#include "common/fs.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "common/strv.h"
#include "conf/keys.h"

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
    const tony_client_backend_ops *ops = tony_client_backend_of_job(job_dir);
    tony_client_state st = {0};
    int code = ops->state(job_dir, conf, &st);
    if (!st.job && !st.extra) {
        /* the backend said why there is nothing */
    } else if (tony_args_get(opts, "json")->seen) {
        json_t *out = st.job ? json_deep_copy(st.job) : json_object();
        if (st.extra) json_object_update(out, st.extra);
        json_dumpf(out, stdout, JSON_INDENT(2));
        printf("\n");
        json_decref(out);
    } else {
        if (st.headline) fputs(st.headline, stdout);
        if (st.job) {
            tony_report_name(stdout, st.job);
            tony_report_cause(stdout, st.job);
            char *g = tony_report_grouped(st.job);
            if (*g) printf("%s\n", g);
            free(g);
            tony_report_tasks(stdout, st.job);
            tony_client_backend_print_log_links(ops, stdout, st.job, tony_basename(job_dir), false);
            if (tony_job_is_finished(st.job)) tony_report_final(stdout, st.job);
        }
    }
    if (st.final) tony_client_backend_cleanup(ops, job_dir, true);
    json_decref(st.job);
    json_decref(st.extra);
    free(st.headline);
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
    json_t *job = NULL;
    int code = tony_client_backend_of_job(job_dir)->kill(job_dir, conf, &job);
    if (job) tony_report_final(stdout, job);
    json_decref(job);
    tony_conf_free(conf);
    free(job_dir);
    return code;
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
    if (code == 0) {
        char *norm = want ? tony_sprintf("%s:%d", role, index) : NULL;
        tony_client_logs_opts lo = {.task = norm, .follow = follow, .am = tony_args_get(opts, "am")->seen,
                                    .attempt = (int)attempt, .stacks = stacks};
        code = tony_client_backend_of_job(job_dir)->logs(job_dir, &lo, conf);
        free(norm);
    }
    free(job_dir);
    tony_args_free(opts);
    tony_conf_free(conf);
    return code;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A job's name and framework as its configuration says (the job dir's
 * TONY_JOBDIR_CONF, written at submit on every backend); NULLs when it
 * cannot be read. */
static void conf_facts(const char *dir, char **name, char **framework, bool *fw_default) {
    *name = *framework = NULL;
    *fw_default = false;
    char *path = tony_path_join(dir, TONY_JOBDIR_CONF);
    tony_conf *c = tony_conf_new();
    tony_error err;
    if (tony_file_exists(path) && tony_conf_load_file(c, path, &err) == 0) {
        const char *n = tony_conf_get(c, TONY_KEY_APP_NAME), *f = tony_conf_get(c, TONY_KEY_APP_FRAMEWORK);
        const char *src = tony_conf_get_source(c, TONY_KEY_APP_FRAMEWORK);
        *name = n ? tony_strdup(n) : NULL;
        *framework = f ? tony_strdup(f) : NULL;
        *fw_default = !src || strcmp(src, "default") == 0;
    }
    tony_conf_free(c);
    free(path);
}

int tony_cmd_list(int argc, char **argv) {
    tony_opt opts[] = {{"json", NULL, false, false, "print the jobs as JSON", false, {0}}, COMMON_OPTS,
                       {NULL, NULL, false, false, NULL, false, {0}}};
    const char *usage = "usage: tony list [--json] [--root DIR] [--conf K=V] [--conf_file FILE]";
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
    if (!d && (errno == EACCES || errno == EPERM)) {
        /* another user's root: theirs to list, not an empty one */
        fprintf(stderr, "tony: error: permission denied: cannot list %s (another user's jobs)\n", jobs);
        tony_strv_free(&pos);
        free(root);
        free(jobs);
        tony_args_free(opts);
        return TONY_EXIT_USAGE;
    }
    /* Another user's jobs/ (one they made first, open to all) lists what
     * they put there: said, not shown as this user's jobs. */
    if (d && tony_fs_check_own_dir(jobs, "the jobs directory", &err)) {
        fprintf(stderr, "tony: error: %s\n", err.msg);
        closedir(d);
        tony_strv_free(&pos);
        free(root);
        free(jobs);
        tony_args_free(opts);
        return TONY_EXIT_USAGE;
    }
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (de->d_name[0] != '.') tony_strv_push(&ids, de->d_name);
    if (d) closedir(d);
    if (ids.len) qsort(ids.items, ids.len, sizeof *ids.items, cmp_str);
    bool as_json = tony_args_get(opts, "json")->seen;
    json_t *rows = json_array();
    if (!as_json)
        printf("%-32s %-7s %-10s %-10s %-22s %s\n", "JOB", "BACKEND", "STATE", "STATUS", "FRAMEWORK", "NAME");
    for (size_t i = 0; i < ids.len; i++) {
        char *dir = tony_path_join(jobs, ids.items[i]);
        const tony_client_backend_ops *ops = tony_client_backend_of_job(dir);
        tony_client_row row;
        memset(&row, 0, sizeof row);
        ops->list_row(dir, &row);
        char *name, *framework;
        bool fw_default;
        conf_facts(dir, &name, &framework, &fw_default);
        /* the backend's word (the coordinator's) where it has one */
        const char *fw = row.framework[0] ? row.framework : framework;
        if (as_json) {
            json_array_append_new(rows, json_pack("{s:s,s:s,s:s,s:s,s:s?,s:b,s:s?,s:s}", JOB_APP_ID, ids.items[i],
                                                  JOB_BACKEND, ops->name, JOB_STATE, row.state, JOB_FINAL_STATUS,
                                                  row.final_status, JOB_FRAMEWORK, fw, JOB_FRAMEWORK_DEFAULT,
                                                  fw_default, JOB_NAME, name, JOB_DIR, dir));
        } else {
            char *shown = tony_report_framework(fw, fw_default);
            printf("%-32s %-7s %-10s %-10s %-22s %s\n", ids.items[i], ops->name, row.state, row.final_status, shown,
                   name ? name : "-");
            free(shown);
        }
        free(name);
        free(framework);
        free(dir);
    }
    if (as_json) {
        json_t *o = json_pack("{s:s,s:o}", "root", root, "jobs", rows);
        json_dumpf(o, stdout, JSON_INDENT(2));
        printf("\n");
        json_decref(o);
    } else {
        json_decref(rows);
    }
    tony_strv_free(&ids);
    tony_strv_free(&pos);
    free(root);
    free(jobs);
    tony_args_free(opts);
    return TONY_EXIT_OK;
}
