/* Runtime dispatch: the table of known frameworks, name lookup with "did you
 * mean", the env every task gets whatever the framework, and the helpers the
 * framework files use to read "host:port" entries out of a cluster spec. */
#include "runtime/runtime.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/proc.h"
#include "common/strv.h"
#include "common/taskenv.h"
#include "conf/keys.h"

extern const tony_runtime tony_runtime_tensorflow;
extern const tony_runtime tony_runtime_pytorch;
extern const tony_runtime tony_runtime_mxnet;
extern const tony_runtime tony_runtime_jax;
extern const tony_runtime tony_runtime_xgboost;
extern const tony_runtime tony_runtime_standalone;
extern const tony_runtime tony_runtime_generic;
extern const tony_runtime tony_runtime_horovod;

/* tensorflow first: it is TonY's default framework. Keep RUNTIME_NAMES below
 * in the same order (a unit test checks it). */
static const tony_runtime *const runtimes[] = {
    &tony_runtime_tensorflow, &tony_runtime_pytorch,    &tony_runtime_mxnet,   &tony_runtime_jax,
    &tony_runtime_xgboost,    &tony_runtime_standalone, &tony_runtime_generic, &tony_runtime_horovod,
};
#define NRUNTIMES (sizeof runtimes / sizeof runtimes[0])
#define RUNTIME_NAMES "tensorflow, pytorch, mxnet, jax, xgboost, standalone, generic, horovod"

const tony_runtime *tony_runtime_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < NRUNTIMES; i++)
        if (strcasecmp(runtimes[i]->name, name) == 0) return runtimes[i];
    return NULL;
}

const char *tony_runtime_suggest(const char *name) {
    if (!name) return NULL;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < NRUNTIMES; i++) {
        size_t d = tony_edit_distance(name, runtimes[i]->name);
        if (d < best_d) {
            best_d = d;
            best = runtimes[i]->name;
        }
    }
    return best;
}

const char *tony_runtime_names(void) { return RUNTIME_NAMES; }

/* The framework's half of a plan: conf (conf/plan.h) cannot know the
 * frameworks, which live in this layer. */
static int find_framework(const char *name, const tony_runtime **rt, tony_error *err) {
    *rt = tony_runtime_find(name);
    if (*rt) return 0;
    const char *near = tony_runtime_suggest(name);
    size_t len = strlen(name);
    /* close enough to be a typo ("tensorflw"), not an unrelated word ("foo") */
    if (near && tony_edit_distance(name, near) <= (len > 6 ? len / 3 : 2))
        return tony_err(err, "tony.application.framework: unknown framework '%s'; did you mean '%s'? Known: %s", name,
                        near, tony_runtime_names());
    return tony_err(err, "tony.application.framework: unknown framework '%s'. Known: %s", name, tony_runtime_names());
}

static int read_lockstep(const tony_conf *c, const tony_runtime *rt, tony_plan *p, tony_error *err) {
    const char *key = TONY_KEY_APP_FAIL_FAST_LOCKSTEP;
    const char *v = tony_conf_get(c, key);
    if (v && !v[strspn(v, " \t\r\n")]) v = NULL; /* blank means not given, as for every key */
    char *t = tony_strdup(v ? v : "auto");
    char *s = tony_trim(t);
    int rc = 0;
    if (strcasecmp(s, "auto") == 0)
        p->lockstep = rt->lockstep ? rt->lockstep(p) : false;
    else if (strcasecmp(s, "true") == 0)
        p->lockstep = true;
    else if (strcasecmp(s, "false") == 0)
        p->lockstep = false;
    else
        rc = tony_err(err, "%s must be auto, true or false, got '%s'", key, v);
    free(t);
    return rc;
}

/* Elastic plans the framework could not train with: its world cannot
 * change size, or a role it needs (the chief's: worker when no chief role;
 * the runtime's own) could drop to no task. */
static int check_elastic(const tony_runtime *rt, const tony_plan *p, tony_error *err) {
    if (!p->elastic) return 0;
    for (size_t i = 0; i < p->nroles; i++) {
        const tony_role *r = &p->roles[i];
        if (r->min_instances == r->instances) continue;
        if (rt->fixed_world)
            return tony_err(err, "tony.%s.min-instances (%d) makes the job elastic, but the %s framework cannot change "
                                 "its world size: %s. Unset tony.%s.min-instances (see docs/elastic.md)",
                            r->name, r->min_instances, rt->name, rt->fixed_world, r->name);
        bool needed = r->min_instances < 1 && tony_plan_is_chief(p, r->name, 0);
        for (const char *const *n = rt->elastic_needs; n && *n && !needed; n++)
            needed = r->min_instances < 1 && strcmp(*n, r->name) == 0;
        if (needed)
            return tony_err(err, "tony.%s.min-instances is 0, but the %s framework cannot train without a %s task "
                                 "(%s): set it to 1 or more (see docs/elastic.md)",
                            r->name, rt->name, r->name,
                            tony_plan_is_chief(p, r->name, 0) ? "the chief's role" : "its framework needs the role");
    }
    return 0;
}

/* Several processes per task mean something only to a framework whose
 * launcher runs them (torchrun's --nproc_per_node). */
static int check_nproc(const tony_runtime *rt, const tony_plan *p, tony_error *err) {
    if (rt->processes_per_task) return 0;
    for (size_t i = 0; i < p->nroles; i++) {
        const tony_role *r = &p->roles[i];
        if (r->nproc_per_node > 1)
            return tony_err(err, "tony.%s.nproc-per-node is %d, but the %s framework runs one process per task "
                                 "(only pytorch's tasks run several, as torchrun's --nproc_per_node): unset "
                                 "tony.%s.nproc-per-node, or run more tasks (tony.%s.instances)",
                            r->name, r->nproc_per_node, rt->name, r->name, r->name);
    }
    return 0;
}

int tony_runtime_plan(const tony_conf *c, tony_plan *out, tony_error *err) {
    if (tony_plan_from_conf(c, out, err)) return -1;
    const tony_runtime *rt = NULL;
    if (find_framework(out->framework, &rt, err)) goto fail;
    free(out->framework);
    out->framework = tony_strdup(rt->name);
    /* A single-node job runs one command in the coordinator: there is no
     * cluster for a framework's rules (a pytorch worker role, ...) to apply to. */
    if (!out->single_node && check_nproc(rt, out, err)) goto fail;
    if (!out->single_node && rt->validate && rt->validate(out, err)) goto fail;
    if (read_lockstep(c, rt, out, err)) goto fail;
    if (!out->single_node && check_elastic(rt, out, err)) goto fail;
    return 0;
fail:
    tony_plan_free(out);
    return -1;
}

/* Linux's MAX_ARG_STRLEN: execve() refuses (E2BIG) any one argument or
 * environment string, its NUL included, longer than 32 pages (128 KiB with
 * 4 KiB pages; the kernel's figure follows its page size, so ask it). */
static size_t env_string_max(void) {
    long page = sysconf(_SC_PAGESIZE);
    return (size_t)(page > 0 ? page : 4096) * 32;
}

static int tasks_in_plan(const tony_plan *plan) {
    int n = 0;
    for (size_t r = 0; r < plan->nroles; r++) n += plan->roles[r].instances > 0 ? plan->roles[r].instances : 0;
    return n;
}

static const char *role_command(const tony_plan *plan, const char *role) {
    for (size_t r = 0; r < plan->nroles; r++)
        if (strcmp(plan->roles[r].name, role) == 0) return plan->roles[r].command;
    return NULL;
}

/* What a variable sent by file still costs in the env of the exec: its
 * name and its file's path in TONY_ENV_FILES (the work dir's path is not
 * known here: YARN's container dirs run to ~150 bytes), once more for the
 * boot dir put on PYTHONPATH. */
#define BY_FILE_COST 192

static bool over_string_max(const char *kv, size_t smax) { return strlen(kv) + 1 > smax; }

/* The env a task would be exec'd with, its strings over MAX_ARG_STRLEN
 * sent by file (tony_runtime_prepare_env): what stays, its pointers and the
 * command's "bash -c <command>" (or "/bin/sh -c", proc.h) together under ARG_MAX (the executor's own
 * inherited env comes on top, so this is a lower bound); and the
 * container's own env, with which the backend execs the executor before
 * anything could be moved, every string under MAX_ARG_STRLEN. Catches at
 * submit, with placeholders, and in the coordinator, with the real hosts,
 * what would otherwise be every task's exec failing with "Argument list too
 * long". */
static int check_exec_env(const tony_runtime_task *task, const tony_env *env, tony_error *err) {
    size_t smax = env_string_max(), total = 0, moved = 0;
    const tony_env *container = &task->plan->container_env;
    for (size_t k = 0; k < container->kv.len; k++) {
        const char *kv = container->kv.items[k];
        if (!over_string_max(kv, smax)) continue;
        return tony_err(err,
                        "%.*s (" TONY_KEY_CONTAINERS_ENVS ") would be %zu bytes in the env of %s:%d's container, over "
                        "Linux's limit of %zu bytes for one environment string (MAX_ARG_STRLEN): the container's start "
                        "would fail with 'Argument list too long'. Set it in " TONY_KEY_EXECUTION_ENVS
                        " instead, whose values over the limit reach the task by file (see docs/frameworks.md, "
                        "\"Job size\")",
                        (int)strcspn(kv, "="), kv, strlen(kv) + 1, task->role, task->index, smax);
    }
    for (size_t k = 0; k < env->kv.len; k++) {
        const char *kv = env->kv.items[k];
        if (over_string_max(kv, smax)) {
            moved++;
            total += strcspn(kv, "=") + BY_FILE_COST;
        } else {
            total += strlen(kv) + 1 + sizeof(char *);
        }
    }
    if (moved) total += sizeof TASKENV_ENV_FILES + sizeof(char *) + BY_FILE_COST;
    const char *cmd = role_command(task->plan, task->role);
    total += 5 * sizeof(char *) + sizeof TONY_PROC_POSIX_SHELL + sizeof "-c" + (cmd ? strlen(cmd) + 1 : 0);
    long amax = sysconf(_SC_ARG_MAX);
    if (amax > 0 && total > (size_t)amax)
        return tony_err(err,
                        "the env and command of %s:%d would be %zu bytes for this job's %d tasks, over this machine's "
                        "ARG_MAX of %ld bytes (sysconf; a quarter of the stack limit): every task's start would fail "
                        "with 'Argument list too long'. Shorten " TONY_KEY_EXECUTION_ENVS " (a value over %zu bytes "
                        "reaches the task by file and does not count here) or run fewer tasks in one job (see "
                        "docs/frameworks.md, \"Job size\")",
                        task->role, task->index, total, tasks_in_plan(task->plan), amax, smax);
    return 0;
}

int tony_runtime_build_env(const tony_runtime *rt, const tony_runtime_task *task, tony_env *env, tony_error *err) {
    const tony_plan *plan = task->plan;
    tony_env_set(env, TASKENV_JOB_NAME, task->role);
    tony_env_setf(env, TASKENV_TASK_INDEX, "%d", task->index);
    tony_env_setf(env, TASKENV_TASK_NUM, "%d", tony_plan_tracked_tasks(plan));
    /* TonY sets IS_CHIEF only on the chief; scripts test for its presence as
     * often as for "true", so the others must not carry it at all. */
    if (tony_plan_is_chief(plan, task->role, task->index))
        tony_env_set(env, TASKENV_IS_CHIEF, "true");
    else
        tony_env_unset(env, TASKENV_IS_CHIEF);
    tony_env_set(env, TASKENV_DISTRIBUTED_MODE, plan->gang ? "GANG" : "FCFS");
    const tony_role *role = tony_plan_role(plan, task->role);
    tony_env_setf(env, TONY_RUNTIME_NPROC_ENV, "%d", role && role->nproc_per_node > 1 ? role->nproc_per_node : 1);
    /* FCFS tasks are independent (batch inference, TonY #501): a partial spec
     * would only mislead them, so they get none. */
    if (plan->gang && task->cluster_spec) {
        char *js = task->memo && task->memo->cluster_spec ? NULL : json_dumps(task->cluster_spec, JSON_COMPACT);
        if (!js && !(task->memo && task->memo->cluster_spec))
            return tony_err(err, "cannot encode the cluster spec of %s:%d as JSON", task->role, task->index);
        if (js && task->memo) {
            task->memo->cluster_spec = js;
            js = NULL;
        }
        tony_env_set(env, TASKENV_CLUSTER_SPEC, js ? js : task->memo->cluster_spec);
        free(js);
    } else {
        tony_env_unset(env, TASKENV_CLUSTER_SPEC);
    }
    if (rt && rt->task_env && rt->task_env(task, env, err) < 0)
        return tony_err_wrap(err, "%s runtime, task %s:%d", rt->name, task->role, task->index);
    return check_exec_env(task, env, err);
}

int tony_runtime_nproc(const tony_env *env) {
    long long n;
    const char *v = tony_env_get(env, TONY_RUNTIME_NPROC_ENV);
    return v && tony_parse_ll(v, &n) && n >= 1 && n <= INT_MAX ? (int)n : 1;
}

void tony_runtime_memo_clear(tony_runtime_memo *m) {
    free(m->cluster_spec);
    for (size_t i = 0; i < sizeof m->framework / sizeof *m->framework; i++) free(m->framework[i]);
    memset(m, 0, sizeof *m);
}

json_t *tony_runtime_placeholder_spec(const tony_plan *plan) {
    json_t *spec = json_object();
    int port = 20000;
    for (size_t r = 0; r < plan->nroles; r++) {
        json_t *arr = json_array();
        for (int i = 0; i < plan->roles[r].instances; i++)
            json_array_append_new(arr, json_sprintf(TONY_RUNTIME_PLACEHOLDER_HOST ":%d", port++));
        json_object_set_new(spec, plan->roles[r].name, arr);
    }
    return spec;
}

int tony_runtime_check_exec(const tony_plan *plan, tony_strv *by_file, tony_error *err) {
    /* a single-node job's command runs in the coordinator, with no cluster */
    if (plan->single_node) return 0;
    const tony_runtime *rt = tony_runtime_find(plan->framework);
    json_t *spec = plan->gang ? tony_runtime_placeholder_spec(plan) : NULL;
    int rc = 0;
    for (size_t r = 0; r < plan->nroles && rc == 0; r++) {
        const tony_role *role = &plan->roles[r];
        if (role->instances <= 0) continue;
        tony_env env = {0};
        tony_env_merge(&env, &plan->container_env);
        tony_env_merge(&env, &plan->shell_env);
        tony_runtime_task t = {.plan = plan, .role = role->name, .index = role->instances - 1, .cluster_spec = spec,
                               .rendezvous_host = TONY_RUNTIME_PLACEHOLDER_HOST,
                               .rendezvous_port = TONY_RUNTIME_PLACEHOLDER_RDZV_PORT};
        rc = tony_runtime_build_env(rt, &t, &env, err);
        for (size_t k = 0; rc == 0 && by_file && k < env.kv.len; k++) {
            const char *kv = env.kv.items[k];
            if (!over_string_max(kv, env_string_max())) continue;
            char *key = strndup(kv, strcspn(kv, "="));
            if (!tony_strv_contains(by_file, key)) tony_strv_push(by_file, key);
            free(key);
        }
        tony_env_free(&env);
    }
    json_decref(spec);
    return rc;
}

/* A variable's file is named after it when the name is a plain one. */
static bool plain_name(const char *key) {
    return *key && strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == strlen(key);
}

/* Writes each of keys' values to <dir>/env/, removes it from env and lists
 * it in TONY_ENV_FILES, whose entries ':' separates. */
static int move_to_files(const char *dir, const tony_strv *keys, tony_env *env, tony_error *err) {
    if (strchr(dir, ':'))
        return tony_err(err, "the task's dir %s has a ':', which separates " TASKENV_ENV_FILES "'s entries", dir);
    char *edir = tony_path_join(dir, "env");
    int rc = tony_mkdir_p(edir, 0700, err);
    tony_strv list = {0};
    for (size_t i = 0; rc == 0 && i < keys->len; i++) {
        const char *key = keys->items[i];
        if (strchr(key, ':')) {
            rc = tony_err(err, "the variable's name %s has a ':', which separates " TASKENV_ENV_FILES "'s entries",
                          key);
            break;
        }
        char *name = plain_name(key) ? tony_strdup(key) : tony_sprintf("var%zu", i);
        char *path = tony_path_join(edir, name);
        const char *v = tony_env_get(env, key);
        rc = tony_write_file(path, v, strlen(v), 0600, err);
        if (rc == 0) tony_strv_pushf(&list, "%s=%s", key, path);
        free(path);
        free(name);
    }
    if (rc == 0) {
        for (size_t i = 0; i < keys->len; i++) tony_env_unset(env, keys->items[i]);
        char *joined = tony_strv_join(&list, ":");
        tony_env_set(env, TASKENV_ENV_FILES, joined);
        free(joined);
    }
    tony_strv_free(&list);
    free(edir);
    return rc;
}

int tony_runtime_prepare_env(const char *dir, tony_env *env, tony_error *err) {
    size_t smax = env_string_max();
    tony_strv keys = {0};
    for (size_t k = 0; k < env->kv.len; k++) {
        if (!over_string_max(env->kv.items[k], smax)) continue;
        char *key = strndup(env->kv.items[k], strcspn(env->kv.items[k], "="));
        tony_strv_push(&keys, key);
        free(key);
    }
    char *names = tony_strv_join(&keys, ", ");
    int rc = keys.len ? move_to_files(dir, &keys, env, err) : 0;
    /* a task is one framework's: the first runtime with modules for it */
    const tony_runtime *rt = NULL;
    const tony_pyboot_module *mods = NULL;
    size_t nmods = 0;
    for (size_t i = 0; rc == 0 && i < NRUNTIMES && nmods == 0; i++)
        if (runtimes[i]->python_modules && (nmods = runtimes[i]->python_modules(env, &mods)) > 0) rt = runtimes[i];
    if (rc == 0 && (keys.len || nmods)) rc = tony_pyboot_write(dir, mods, nmods, env, err);
    if (rc && keys.len)
        tony_err_wrap(err, "%s, over Linux's limit of %zu bytes for one environment string, cannot reach the task by "
                           "file: its start will fail with 'Argument list too long'", names, smax);
    else if (rc)
        tony_err_wrap(err, "the %s runtime's Python start-up (tony's sitecustomize)", rt ? rt->name : "?");
    free(names);
    tony_strv_free(&keys);
    return rc;
}

int tony_cluster_spec_count(const json_t *spec, const char *role) {
    if (!spec || !role) return 0;
    const json_t *list = json_object_get(spec, role);
    return json_is_array(list) ? (int)json_array_size(list) : 0;
}

int tony_cluster_spec_addr(const json_t *spec, const char *role, int index, char **host, int *port) {
    if (!spec || !role || index < 0) return -1;
    const json_t *list = json_object_get(spec, role);
    if (!json_is_array(list)) return -1;
    const char *s = json_string_value(json_array_get(list, (size_t)index));
    if (!s) return -1;
    /* Split at the last ':' so that a bracketed IPv6 "[::1]:80" also works. */
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s) return -1;
    long long p;
    if (!tony_parse_ll(colon + 1, &p) || p < 0 || p > 65535) return -1;
    const char *h = s;
    size_t hl = (size_t)(colon - s);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    /* TonY renders a registered task whose host it does not know as "null:0";
     * handing "null" to a framework as an address would only fail later. */
    if (hl == 0 || (hl == 4 && strncmp(h, "null", 4) == 0 && p == 0)) return -1;
    if (host) {
        *host = tony_xmalloc(hl + 1);
        memcpy(*host, h, hl);
        (*host)[hl] = '\0';
    }
    if (port) *port = (int)p;
    return 0;
}
