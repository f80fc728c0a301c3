/* `tony submit`: TonY's flags and config layers into one configuration, a
 * validated plan (or the --dry-run view of it), the chosen backend's client
 * half (backend/client.h) to check, stage and start it, then the one follow
 * loop of every backend until it ends. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/client.h"
#include "client/args.h"
#include "client/client.h"
#include "client/confargs.h"
#include "client/follow.h"
#include "client/report.h"
#include "common/fs.h"
#include "common/proc.h"
#include "common/jobjson.h"
#include "common/strv.h"
#include "common/taskenv.h"
#include "conf/conf.h"
#include "conf/keys.h"
#include "conf/keycheck.h"
#include "conf/plan.h"
#include "runtime/runtime.h"

static tony_opt submit_opts[] = {
    {"executes", NULL, true, false, "entry point or shell command of every task", false, {0}},
    {"task_params", NULL, true, false, "arguments appended to the command", false, {0}},
    {"src_dir", NULL, true, false, "source directory (zipped) or archive, unpacked in each task's work dir", false, {0}},
    {"python_venv", NULL, true, false, "zipped virtualenv, unpacked into venv/ in each task", false, {0}},
    {"python_binary_path", NULL, true, false, "interpreter; relative: inside venv/, else from here", false, {0}},
    {"shell_env", NULL, true, true, "K=V for the user's process (repeatable)", false, {0}},
    {"container_env", NULL, true, true, "K=V for the container (repeatable)", false, {0}},
    TONY_CONF_OPTS,
    {"sidecar_tensorboard_log_dir", NULL, true, false, "run a TensorBoard sidecar on this log dir", false, {0}},
    {"hdfs_classpath", NULL, true, false, "HDFS paths added to every container (yarn backend)", false, {0}},
    {"backend", NULL, true, false, "local, yarn or slurm (tony.application.backend)", false, {0}},
    {"dry-run", "dry_run", false, false, "print the resolved plan and run nothing", false, {0}},
    {"detach", NULL, false, false, "print the job id and return once the job started", false, {0}},
    {"help", "h", false, false, "show this help", false, {0}},
    {NULL, NULL, false, false, NULL, false, {0}},
};

static volatile sig_atomic_t interrupted = 0;
static void on_interrupt(int sig) {
    (void)sig;
    interrupted++;
}

/* A relative interpreter path with no venv to resolve it in (TonY's rule)
 * that names a file from where tony submit runs, and not one shipped in
 * --src_dir (unpacked in the task's work dir): the user meant this one, so
 * the task gets its absolute path (a task's work dir is elsewhere). NULL:
 * keep the path as written (a name on PATH, or a file of the src_dir). */
static char *interpreter_from_here(const char *py, const char *venv, const char *src_dir) {
    if (py[0] == '/' || venv || !strchr(py, '/') || access(py, X_OK) != 0) return NULL;
    if (src_dir) {
        char *shipped = tony_path_join(src_dir, py);
        bool in_src = access(shipped, F_OK) == 0;
        free(shipped);
        if (in_src) return NULL;
    }
    return tony_abspath(py);
}

/* TonY builds tony.containers.command as "[<interpreter> ]<executes>[ <params>]". */
static char *build_command(tony_opt *o, const char *py) {
    const char *exe = tony_args_value(o, "executes");
    if (!exe) return NULL;
    const char *venv = tony_args_value(o, "python_venv");
    const char *params = tony_args_value(o, "task_params");
    tony_buf b = {0};
    tony_buf_puts(&b, "");
    if (py) {
        if (py[0] != '/' && venv) tony_buf_printf(&b, "venv/%s ", py);
        else tony_buf_printf(&b, "%s ", py);
    }
    tony_buf_puts(&b, exe);
    if (params) tony_buf_printf(&b, " %s", params);
    return b.data;
}

static int apply_kv_list(tony_conf *c, tony_opt *o, const char *opt, const char *key, tony_error *err) {
    tony_opt *x = tony_args_get(o, opt);
    for (size_t i = 0; i < x->values.len; i++) {
        const char *kv = x->values.items[i];
        if (!strchr(kv, '=') || kv[0] == '=') return tony_err(err, "--%s %s: expected KEY=VALUE", opt, kv);
        tony_conf_set_cli(c, key, kv);
    }
    return 0;
}

static bool is_blank(const char *s) { return strspn(s, " \t\r\n") == strlen(s); }

/* The interpreter that runs TensorBoard: the job's own (--python_binary_path
 * or tony.python-exec-path, inside venv/ when relative and a venv ships),
 * which is where the user installed tensorboard; else python3. */
static char *sidecar_python(const tony_conf *c, tony_opt *o) {
    const char *py = tony_conf_get(c, TONY_KEY_PYTHON_EXEC_PATH);
    if (!py || !*py) return tony_strdup("python3");
    if (py[0] != '/' && tony_args_value(o, "python_venv")) return tony_sprintf("venv/%s", py);
    return tony_strdup(py);
}

/* TonY's sidecar TensorBoard (--sidecar_tensorboard_log_dir or
 * tony.application.tensorboard-log-dir): a `tensorboard` role the job's
 * result ignores, serving the log dir on the port its executor reserves. */
static int add_tensorboard_sidecar(tony_conf *c, tony_opt *o, tony_error *err) {
    const char *flag = tony_args_value(o, "sidecar_tensorboard_log_dir");
    if (flag) {
        if (is_blank(flag))
            return tony_err(err, "--sidecar_tensorboard_log_dir is empty; give the directory the job writes its "
                                 "TensorBoard summaries to (e.g. --sidecar_tensorboard_log_dir /tmp/tb/$USER/run1)");
        /* Tasks run in their own work dirs: a relative path means the
         * client's directory, which is where the user looked from. */
        char *dir = strstr(flag, "://") ? tony_strdup(flag) : tony_abspath(flag);
        tony_conf_set(c, TONY_KEY_APP_TENSORBOARD_LOG_DIR, dir, "--sidecar_tensorboard_log_dir");
        free(dir);
    }
    const char *dir = tony_conf_get(c, TONY_KEY_APP_TENSORBOARD_LOG_DIR);
    if (!dir || is_blank(dir)) return 0; /* blank means not given, as for every key */
    if (!tony_conf_get(c, TONY_KEY_TENSORBOARD_INSTANCES)) tony_conf_set(c, TONY_KEY_TENSORBOARD_INSTANCES, "1", "sidecar");
    const char *cur = tony_conf_get(c, TONY_KEY_APP_SIDECAR_JOBTYPES);
    tony_strv types = {0};
    tony_split_csv(cur, &types);
    if (!tony_strv_contains(&types, "tensorboard")) {
        char *v = tony_sprintf("%s%stensorboard", cur && *cur ? cur : "", cur && *cur ? "," : "");
        tony_conf_set(c, TONY_KEY_APP_SIDECAR_JOBTYPES, v, "sidecar");
        free(v);
    }
    tony_strv_free(&types);
    if (!tony_conf_get(c, TONY_KEY_TENSORBOARD_COMMAND)) {
        char *py = sidecar_python(c, o);
        /* on the task's registered host only (as the notebook's Jupyter), where
         * the coordinator's /tensorboard/ sends the browser: loopback on the
         * local backend, not every interface of the machine */
        char *v = tony_sprintf("%s -m tensorboard.main --logdir \"$" TASKENV_TB_LOG_DIR "\" --port \"$" TASKENV_TB_PORT
                               "\" --host \"${" TASKENV_NM_HOST ":-$(hostname)}\"",
                               py);
        tony_conf_set(c, TONY_KEY_TENSORBOARD_COMMAND, v, "sidecar");
        free(v);
        free(py);
    }
    return 0;
}

/* Whether files other than the src_dir reach the tasks' work dirs
 * (tony.containers.resources, tony.<type>.resources). */
static bool ships_resources(const tony_conf *c) {
    for (size_t i = 0; i < tony_conf_size(c); i++) {
        const char *k = tony_conf_key_at(c, i), *v = tony_conf_value_at(c, i);
        size_t n = strlen(k);
        if (n > 10 && strcmp(k + n - 10, ".resources") == 0 && v && !is_blank(v)) return true;
    }
    return false;
}

/* --executes naming a script (one word, run by an interpreter or a .py or
 * .sh) that a local --src_dir directory does not hold, when nothing else is
 * shipped: every task would fail at once, seconds or a queue's wait later,
 * so say it now. */
static int check_entry_point(tony_opt *o, const tony_conf *c, tony_error *err) {
    const char *exe = tony_args_value(o, "executes"), *src = tony_args_value(o, "src_dir");
    if (!exe || !src || !tony_is_dir(src) || exe[0] == '/' || strpbrk(exe, " \t") || ships_resources(c)) return 0;
    size_t n = strlen(exe);
    bool script = tony_args_value(o, "python_binary_path") || (n > 3 && strcmp(exe + n - 3, ".py") == 0) ||
                  (n > 3 && strcmp(exe + n - 3, ".sh") == 0);
    if (!script) return 0;
    char *shipped = tony_path_join(src, exe);
    bool there = tony_file_exists(shipped);
    free(shipped);
    if (there) return 0;
    return tony_err(err, "--executes %s: no such file in --src_dir %s (each task runs it from its work dir, where "
                         "the src_dir is unpacked); give its path relative to %s", exe, src, src);
}

/* --python_binary_path as the tasks will run it, checked where it can be:
 * a path inside the --python_venv is the archive's (not looked into); an
 * absolute one, one from here or from --src_dir, or a name on PATH must
 * exist. Missing: refused where the tasks run on this machine, else said
 * (on a cluster it may exist only on its nodes). */
static int check_interpreter(tony_opt *o, const tony_conf *c, const tony_plan *plan, bool tasks_run_here,
                             tony_error *err) {
    const char *given = tony_args_value(o, "python_binary_path");
    const char *py = tony_conf_get(c, TONY_KEY_PYTHON_EXEC_PATH), *src = tony_args_value(o, "src_dir");
    if (!given || !py || !*py || tony_plan_in_images(plan)) return 0;
    if (py[0] != '/' && tony_args_value(o, "python_venv")) return 0;
    bool found;
    if (py[0] == '/') {
        found = access(py, X_OK) == 0;
    } else if (strchr(py, '/')) {
        /* not found from here (interpreter_from_here): the src_dir's */
        char *shipped = src && tony_is_dir(src) ? tony_path_join(src, py) : NULL;
        found = shipped && access(shipped, F_OK) == 0;
        free(shipped);
        if (!shipped && src) found = true; /* an archive: not looked into */
    } else {
        char *on_path = tony_proc_which(py);
        found = on_path != NULL;
        free(on_path);
    }
    if (found) return 0;
    const char *what = py[0] == '/' ? "no such executable" : strchr(py, '/') ? "no such file here or in --src_dir"
                                                                             : "not found on PATH";
    if (!tasks_run_here) {
        fprintf(stderr, "tony: warning: --python_binary_path %s: %s on this machine; the tasks need it on their "
                        "nodes\n", given, what);
        return 0;
    }
    return tony_err(err, "--python_binary_path %s: %s (the tasks run on this machine); give an interpreter that "
                         "exists, e.g. --python_binary_path python3, or one inside --python_venv (bin/python3)",
                    given, what);
}

/* --executes train.py with no interpreter: the task's shell looks for a
 * command named train.py on PATH, and every task fails with "command not
 * found" (a script with a #! line runs as ./train.py). */
static int check_python_script(tony_opt *o, tony_error *err) {
    const char *exe = tony_args_value(o, "executes");
    if (!exe || tony_args_value(o, "python_binary_path")) return 0;
    size_t n = strcspn(exe, " \t");
    if (n <= 3 || strncmp(exe + n - 3, ".py", 3) != 0 || memchr(exe, '/', n)) return 0;
    return tony_err(err, "--executes %s: no interpreter runs %.*s, so each task's shell would look for a command of "
                         "that name and fail; add --python_binary_path python3 (or bin/python3 inside "
                         "--python_venv), or run it as ./%.*s with a #! line",
                    exe, (int)n, exe, (int)n, exe);
}

/* --python_binary_path before a shell command (--executes 'sleep 25; echo
 * done'): the task runs `python sleep 25; echo done`, Python fails on a
 * script named sleep, and the job's result is the last command's. Said, not
 * refused: a script may be named as a command is. */
static void warn_shell_after_interpreter(tony_opt *o) {
    const char *exe = tony_args_value(o, "executes"), *py = tony_args_value(o, "python_binary_path");
    const char *src = tony_args_value(o, "src_dir");
    if (!exe || !py || exe[0] == '-') return;
    size_t n = strcspn(exe, " \t;&|");
    if (n == 0 || memchr(exe, '/', n) || (n > 3 && strncmp(exe + n - 3, ".py", 3) == 0)) return;
    char *first = tony_sprintf("%.*s", (int)n, exe);
    char *shipped = src && tony_is_dir(src) ? tony_path_join(src, first) : NULL;
    bool a_file = tony_file_exists(first) || (shipped && tony_file_exists(shipped));
    char *command = a_file ? NULL : tony_proc_which(first);
    bool shell = strpbrk(exe, ";&|") != NULL;
    if (command || (shell && !a_file))
        fprintf(stderr, "tony: warning: --executes '%s' %s, yet --python_binary_path %s runs it: each task runs "
                        "`%s %s`; drop --python_binary_path to run a shell command, or name the Python script\n",
                exe, command ? "starts with a command on PATH" : "is a shell command line", py, py, exe);
    free(first), free(shipped), free(command);
}

static int build_conf(tony_opt *o, tony_conf *c, tony_error *err) {
    if (tony_confargs_load(o, c, err) || check_entry_point(o, c, err) || check_python_script(o, err)) return -1;
    warn_shell_after_interpreter(o);
    const char *py = tony_args_value(o, "python_binary_path");
    char *here = py ? interpreter_from_here(py, tony_args_value(o, "python_venv"), tony_args_value(o, "src_dir")) : NULL;
    if (here) py = here;
    char *cmd = build_command(o, py);
    if (cmd) tony_conf_set(c, TONY_KEY_CONTAINERS_COMMAND, cmd, "--executes");
    free(cmd);
    if (py) tony_conf_set(c, TONY_KEY_PYTHON_EXEC_PATH, py, "--python_binary_path");
    free(here);
    if (apply_kv_list(c, o, "shell_env", TONY_KEY_EXECUTION_ENVS, err)) return -1;
    if (apply_kv_list(c, o, "container_env", TONY_KEY_CONTAINERS_ENVS, err)) return -1;
    if (add_tensorboard_sidecar(c, o, err)) return -1;
    return 0;
}

/* A misspelled tony.* key is refused before anything runs; one close to no
 * key is named, as it may be a resource of TonY's tony.<type>.<resource>. */
static int check_keys(tony_conf *c, tony_error *err) {
    tony_strv older = {0};
    tony_conf_take_older_names(c, &older);
    for (size_t i = 0; i < older.len; i++) fprintf(stderr, "tony: note: %s\n", older.items[i]);
    tony_strv_free(&older);
    tony_strv unknown = {0};
    int rc = tony_conf_check_keys(c, &unknown, err);
    for (size_t i = 0; rc == 0 && i < unknown.len; i++)
        fprintf(stderr, "tony: note: %s (from %s) is no key tony reads; it is passed on as given\n",
                unknown.items[i], tony_conf_get_source(c, unknown.items[i]));
    tony_strv_free(&unknown);
    tony_strv idle = {0};
    if (rc == 0) tony_conf_idle_role_keys(c, &idle);
    for (size_t i = 0; i < idle.len; i++) fprintf(stderr, "tony: warning: %s\n", idle.items[i]);
    tony_strv_free(&idle);
    return rc;
}

/* --backend, else tony.application.backend, else the one configured on this
 * machine (backend/client.h); says why. NULL: no backend has that name. */
static const tony_client_backend_ops *choose_backend(tony_opt *o, const tony_conf *c, const char **name, char *why,
                                                     size_t n) {
    const char *b = tony_args_value(o, "backend");
    if (b) {
        snprintf(why, n, "--backend %s", b);
    } else if ((b = tony_conf_get(c, TONY_KEY_APP_BACKEND)) && *b) {
        snprintf(why, n, TONY_KEY_APP_BACKEND "=%s", b);
    } else {
        const tony_client_backend_ops *ops = tony_client_backend_choose(why, n);
        *name = ops->name;
        return ops;
    }
    *name = b;
    return tony_client_backend_find(b);
}

/* --dry-run's output grows linearly with the task count (10^4 tasks used to
 * print 3.6 GB in 39 s: every task's env holds the whole cluster spec).
 * Each role's first DRY_RUN_TASKS instances and its last one are shown
 * (the others are set up the same way, with their own index), and a value
 * longer than DRY_RUN_VALUE_MAX (TF_CONFIG and the like, as long as the
 * cluster spec) is printed whole once per role: a later task's shows only
 * where it differs from the first one's. */
#define DRY_RUN_TASKS 16
#define DRY_RUN_VALUE_MAX 1024

/* kv ("K=V") of task `id`, against ref (the env of the role's first task
 * shown, `ref_id`; NULL for that task itself). */
static void print_env_line(const char *kv, const tony_env *ref, const char *ref_id) {
    if (tony_str_starts_with(kv, TASKENV_SECRET "=")) return;
    const char *eq = strchr(kv, '=');
    size_t vlen = eq ? strlen(eq + 1) : 0;
    if (!ref || !eq || vlen <= DRY_RUN_VALUE_MAX) {
        printf("      %s\n", kv);
        return;
    }
    char *key = strndup(kv, (size_t)(eq - kv));
    const char *v = eq + 1, *r = tony_env_get(ref, key);
    size_t rlen = r ? strlen(r) : 0, pre = 0, suf = 0;
    while (pre < vlen && pre < rlen && v[pre] == r[pre]) pre++;
    while (suf < vlen - pre && suf < rlen - pre && v[vlen - 1 - suf] == r[rlen - 1 - suf]) suf++;
    size_t mid = vlen - pre - suf;
    if (r && vlen == rlen && mid == 0)
        printf("      %s=(the same %zu bytes as %s's)\n", key, vlen, ref_id);
    else if (!r || mid > DRY_RUN_VALUE_MAX)
        printf("      %s=(%zu bytes, not shown: it differs from %s's too much to print for every task)\n", key, vlen,
               ref_id);
    else
        printf("      %s=[the first %zu bytes of %s's]%.*s[its last %zu bytes]\n", key, pre, ref_id, (int)mid, v + pre,
               suf);
    free(key);
}

static void print_task_env(const tony_plan *p, const tony_runtime *rt, const tony_role *role, int i, json_t *spec,
                           tony_env *first) {
    tony_env env = {0};
    tony_env_merge(&env, &p->container_env);
    tony_env_merge(&env, &p->shell_env);
    tony_runtime_task t = {.plan = p, .role = role->name, .index = i, .cluster_spec = p->gang ? spec : NULL,
                           .rendezvous_host = TONY_RUNTIME_PLACEHOLDER_HOST,
                           .rendezvous_port = TONY_RUNTIME_PLACEHOLDER_RDZV_PORT};
    tony_error err;
    char ref_id[96];
    snprintf(ref_id, sizeof ref_id, "%s:0", role->name);
    printf("    %s:%d env%s:\n", role->name, i, tony_plan_is_chief(p, role->name, i) ? " (chief)" : "");
    if (tony_runtime_build_env(rt, &t, &env, &err)) printf("      (cannot build: %s)\n", err.msg);
    for (size_t k = 0; k < env.kv.len; k++) print_env_line(env.kv.items[k], i == 0 ? NULL : first, ref_id);
    if (i == 0) *first = env;
    else tony_env_free(&env);
}

/* about: what the backend runs it on (its check_plan's line), or NULL. The
 * whole plan is printed even when it does not fit: seeing it is how the
 * user finds what to change. */
static void dry_run(const tony_plan *p, const char *backend, const char *about) {
    const tony_runtime *rt = tony_runtime_find(p->framework);
    printf("Plan (dry run; nothing was started)\n");
    printf("  backend:    %s\n", backend);
    if (about) printf("  machine:    %s\n", about);
    printf("  framework:  %s\n  mode:       %s%s\n", p->framework,
           p->single_node ? "single node (the command runs in the coordinator)" : (p->gang ? "GANG" : "FCFS"),
           p->lockstep ? ", lock-step: one failed worker ends the attempt" : "");
    printf("  restarts:   %d (tony.am.retry-count), policy %s, the first at once; backoff %lld ms doubling up to "
           "%lld ms from the 2nd failure in a row of attempts under %lld ms\n",
           p->retry_count, tony_restart_policy_name(p->restart_policy), p->restart_backoff_ms, p->restart_backoff_max_ms,
           p->restart_healthy_ms);
    printf("  heartbeat:  every %lld ms, expires after %d missed\n", p->heartbeat_interval_ms, p->max_missed_heartbeats);
    if (p->single_node) {
        printf("  command:    %s\n", p->am_command);
        return;
    }
    /* Addresses are placeholders: real ones exist once executors register. */
    json_t *spec = tony_runtime_placeholder_spec(p);
    for (size_t r = 0; r < p->nroles; r++) {
        const tony_role *role = &p->roles[r];
        printf("\n  role %s: %d instance(s), memory %lldm, vcores %d, gpus %d, %s, %s stage%s%s\n", role->name,
               role->instances, role->memory_mb, role->vcores, role->gpus, tony_role_kind_name(role->kind),
               role->stage == TONY_STAGE_PREPARE ? "prepare" : "training", role->stop_on_failure ? ", stop-on-failure" : "",
               role->node_label ? ", node label " : "");
        if (role->restart_policy != p->restart_policy)
            printf("    restart policy: %s (tony.%s.restart-policy)\n", tony_restart_policy_name(role->restart_policy),
                   role->name);
        if (role->node_label) printf("%s", role->node_label);
        printf("    command:   %s\n", role->command);
        if (role->resources && *role->resources) printf("    resources: %s\n", role->resources);
        tony_env first = {0};
        for (int i = 0; i < role->instances; i++) {
            if (i == DRY_RUN_TASKS && role->instances > DRY_RUN_TASKS + 1) {
                int skipped = role->instances - 1 - DRY_RUN_TASKS;
                printf("    (%s:%d to %s:%d, %d task(s), not shown: set up as these, each with its own index)\n",
                       role->name, i, role->name, role->instances - 2, skipped);
                i = role->instances - 1;
            }
            print_task_env(p, rt, role, i, spec, &first);
        }
        tony_env_free(&first);
    }
    printf("\n  (host:port values are placeholders; real ones are assigned when executors register)\n");
    json_decref(spec);
}

static void follow_say(void *ctx, FILE *stream, const char *fmt, va_list ap) {
    tony_follow_vsay(ctx, stream, fmt, ap);
}

/* Follows a submitted job to its end, on any backend: the backend's looks
 * at it (poll) drawn as TonY-style grouped status lines, Ctrl-C handed to
 * the backend to kill the job, the finished job's tasks and final line.
 * Returns the exit code; err, when set, says why it stopped following. */
static int follow(tony_client_job *j, tony_error *err) {
    const tony_client_backend_ops *ops = j->ops;
    tony_follow *f = tony_follow_new(stdout);
    tony_client_out out = {follow_say, f};
    bool reported = false;
    int code = TONY_EXIT_JOB_FAILED;
    for (;;) {
        if (interrupted && ops->interrupt(j, (int)interrupted, &out)) break;
        tony_client_poll p = {0};
        ops->poll(j, &out, &p, err);
        if (p.job) {
            if (!reported) tony_follow_output(f, j->job_dir, p.job, tony_job_is_finished(p.job));
            tony_follow_update(f, p.job);
            if (!reported && tony_job_is_finished(p.job)) {
                reported = true;
                tony_follow_leave(f);
                tony_report_tasks(stdout, p.job);
                tony_report_final(stdout, p.job);
                tony_report_advice(stdout, p.job);
                tony_client_backend_job_finished(j, p.job);
            }
            json_decref(p.job);
        }
        if (p.done) {
            code = p.code;
            if (p.final) tony_client_backend_cleanup(ops, j->job_dir, false);
            break;
        }
        tony_sleep_ms(p.next_ms);
    }
    tony_follow_free(f);
    return code;
}

/* A job the user did not name is named after its framework (conf/keys.h),
 * before any backend reads the name: YARN's application, Slurm's job, the
 * coordinator and history then all say the same. Still marked a default. */
static void name_after_framework(tony_conf *c, const tony_plan *plan) {
    const char *src = tony_conf_get_source(c, TONY_KEY_APP_NAME);
    if (src && strcmp(src, "default") != 0) return;
    char *name = tony_conf_default_app_name(plan->framework);
    tony_conf_set(c, TONY_KEY_APP_NAME, name, "default");
    free(name);
}

int tony_cmd_submit(int argc, char **argv) { return tony_submit_run(argc, argv, NULL); }

int tony_submit_run(int argc, char **argv, const tony_submit_hooks *hooks) {
    static const tony_submit_hooks none = {0};
    if (!hooks) hooks = &none;
    tony_strv positional = {0};
    tony_error err = {{0}};
    tony_conf *conf = NULL;
    tony_plan plan = {0};
    bool have_plan = false;
    int code = TONY_EXIT_USAGE;
    if (tony_args_parse(argc, argv, submit_opts, &positional, &err)) goto fail;
    if (tony_args_get(submit_opts, "help")->seen) {
        tony_args_usage("usage: tony submit [options]", submit_opts);
        code = TONY_EXIT_OK;
        goto out;
    }
    if (positional.len) {
        tony_err(&err, "unexpected argument '%s' (quote the command: --executes \"python train.py\")", positional.items[0]);
        goto fail;
    }
    conf = tony_conf_new();
    if (build_conf(submit_opts, conf, &err) || check_keys(conf, &err)) goto fail;
    char why[512];
    const char *backend = NULL;
    const tony_client_backend_ops *ops = choose_backend(submit_opts, conf, &backend, why, sizeof why);
    if (!ops) {
        tony_err(&err, "unknown backend '%s' (%s); use %s", backend, why, tony_client_backend_names());
        goto fail;
    }
    fprintf(stderr, "tony: using the %s backend (%s)\n", backend, why);
    if (tony_runtime_plan(conf, &plan, &err)) goto fail;
    have_plan = true;
    name_after_framework(conf, &plan);
    bool dry = tony_args_get(submit_opts, "dry-run")->seen;
    char *about = NULL;
    /* A job that cannot fit is bad input for this place: exit 2, for a real
     * submit and --dry-run alike. */
    int fits = tony_client_backend_check_plan(ops, conf, &plan, &about, &err);
    if (!fits) fits = check_interpreter(submit_opts, conf, &plan, ops->tasks_run_here, &err);
    if (!fits && hooks->check) fits = hooks->check(&plan, ops->tasks_run_here, hooks->ctx, &err);
    /* and one whose tasks' env could not even be exec'd (runtime.h) */
    tony_strv by_file = {0};
    if (!fits) fits = tony_runtime_check_exec(&plan, &by_file, &err);
    if (!fits && by_file.len) {
        char *names = tony_strv_join(&by_file, ", ");
        fprintf(stderr, "tony: note: %s will reach each task by file: %s over Linux's limit for one environment "
                        "string (MAX_ARG_STRLEN). Python processes find %s in os.environ as usual; other programs "
                        "read the file named in " TASKENV_ENV_FILES " (docs/frameworks.md, \"Job size\")\n",
                names, by_file.len > 1 ? "each is" : "it is", by_file.len > 1 ? "them" : "it");
        free(names);
    }
    tony_strv_free(&by_file);
    if (dry) dry_run(&plan, backend, about);
    free(about);
    if (fits) goto fail;
    if (dry) {
        code = TONY_EXIT_OK;
        goto out;
    }
    if (tony_args_value(submit_opts, "hdfs_classpath"))
        fprintf(stderr, "tony: warning: --hdfs_classpath is not supported on the %s backend yet; ignored\n", backend);
    struct sigaction sa = {.sa_handler = on_interrupt};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    tony_stage_input in = {tony_args_value(submit_opts, "src_dir"), tony_args_value(submit_opts, "python_venv")};
    bool detach = tony_args_get(submit_opts, "detach")->seen;
    tony_client_submission sub = {conf, &plan, &in, detach, &interrupted};
    tony_client_job *job = NULL;
    err.msg[0] = '\0';
    code = ops->submit(&sub, &job, &err);
    if (code == TONY_EXIT_OK && detach) code = tony_client_backend_wait_started(job, &err);
    if (code == TONY_EXIT_OK && hooks->started) hooks->started(job, hooks->ctx);
    if (code == TONY_EXIT_OK && detach)
        printf("tony: follow it with `tony status %s`, stop it with `tony kill %s`\n", job->id, job->id);
    else if (code == TONY_EXIT_OK)
        code = follow(job, &err);
    if (job) ops->release(job);
    if (code != TONY_EXIT_OK && err.msg[0]) goto fail_code;
    goto out;
fail:
    code = TONY_EXIT_USAGE;
fail_code:
    fprintf(stderr, "tony: error: %s\n", err.msg);
out:
    if (have_plan) tony_plan_free(&plan);
    tony_conf_free(conf);
    tony_strv_free(&positional);
    tony_args_free(submit_opts);
    return code;
}
