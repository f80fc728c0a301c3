/* Turns a merged configuration into a validated job plan. All of TonY's
 * configuration rules live here, so the client can reject a bad job before
 * staging anything and the coordinator sees exactly what the client checked. */
#include "conf/plan.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/jobjson.h"
#include "common/strv.h"
#include "conf/logpolicy.h"
#include "conf/resource.h"
#include "conf/keys.h"

/* Unset and blank both mean "not given", as with the typed getters. */
static const char *get_str(const tony_conf *c, const char *key) {
    const char *v = tony_conf_get(c, key);
    if (!v) return NULL;
    for (const char *p = v; *p; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') return v;
    return NULL;
}

static char *dup_str(const tony_conf *c, const char *key) { return tony_strdup(get_str(c, key)); }

static int get_nonneg_ll(const tony_conf *c, const char *key, long long def, long long *out, tony_error *err) {
    if (tony_conf_get_ll(c, key, def, out, err)) return -1;
    if (*out < 0) return tony_err(err, "%s must be a non-negative integer, got '%s'", key, tony_conf_get(c, key));
    return 0;
}

static int get_nonneg_int(const tony_conf *c, const char *key, long long def, int *out, tony_error *err) {
    long long v;
    if (get_nonneg_ll(c, key, def, &v, err)) return -1;
    if (v > INT_MAX) return tony_err(err, "%s is too large, got '%s'", key, tony_conf_get(c, key));
    *out = (int)v;
    return 0;
}

static int get_role_ll(const tony_conf *c, const char *role, const char *what, long long def, long long *out,
                       tony_error *err) {
    char *key = tony_sprintf("tony.%s.%s", role, what);
    int rc = get_nonneg_ll(c, key, def, out, err);
    free(key);
    return rc;
}

static int get_role_int(const tony_conf *c, const char *role, const char *what, long long def, int *out,
                        tony_error *err) {
    char *key = tony_sprintf("tony.%s.%s", role, what);
    int rc = get_nonneg_int(c, key, def, out, err);
    free(key);
    return rc;
}

static const char *get_role_str(const tony_conf *c, const char *role, const char *what) {
    char *key = tony_sprintf("tony.%s.%s", role, what);
    const char *v = get_str(c, key);
    free(key);
    return v;
}

/* A bad entry is cheaper to report now, naming the key, than when staging. */
static int check_resources(const tony_conf *c, const char *key, tony_error *err) {
    tony_resource_list l = {0};
    int rc = tony_resource_parse_list(tony_conf_get(c, key), &l, err);
    tony_resource_list_free(&l);
    if (rc) return tony_err_wrap(err, "%s", key);
    return 0;
}

/* r's image and how to run it (docker enabled): key's image (a role's
 * tony.docker.<t>.image, or tony.docker.am.image), else
 * tony.docker.containers.image. */
static void read_image(const tony_conf *c, const char *key, tony_role *r) {
    const char *img = get_str(c, key);
    if (!img) img = get_str(c, TONY_KEY_DOCKER_CONTAINERS_IMAGE);
    r->docker_image = tony_strdup(img);
    r->docker_mounts = dup_str(c, TONY_KEY_DOCKER_CONTAINERS_MOUNT);
    r->docker_runtime = dup_str(c, TONY_KEY_DOCKER_RUNTIME);
    r->docker_network = dup_str(c, TONY_KEY_DOCKER_NETWORK);
}

static int build_role(const tony_conf *c, const char *name, int instances, bool docker, tony_role *r,
                      tony_error *err) {
    r->name = tony_strdup(name);
    r->instances = instances;
    char *key = tony_sprintf(TONY_KEY_ROLE_MEMORY_FMT, name);
    int rc = tony_conf_get_memory_mb(c, key, "2g", &r->memory_mb, err);
    /* no container, process or scheduler runs in 0 bytes: a job asked for
     * with it would fail at its first allocation or its first page */
    if (rc == 0 && r->memory_mb <= 0)
        rc = tony_err(err, "%s must be more than 0 (the memory of each %s task, e.g. 2g), got '%s'", key, name,
                      tony_conf_get(c, key));
    free(key);
    if (rc) return -1;
    if (get_role_int(c, name, "vcores", 1, &r->vcores, err)) return -1;
    if (get_role_int(c, name, "gpus", 0, &r->gpus, err)) return -1;
    key = tony_sprintf(TONY_KEY_ROLE_NPROC_PER_NODE_FMT, name);
    rc = get_nonneg_int(c, key, 1, &r->nproc_per_node, err);
    if (rc == 0 && r->nproc_per_node < 1)
        rc = tony_err(err, "%s must be 1 or more (the processes each %s task runs), got 0", key, name);
    free(key);
    if (rc) return -1;

    const char *cmd = get_role_str(c, name, "command");
    if (!cmd) cmd = get_str(c, TONY_KEY_CONTAINERS_COMMAND);
    if (!cmd)
        return tony_err(err, "job type '%s' has %d instance(s) but no command: set tony.%s.command or "
                             "tony.containers.command, or pass --executes", name, instances, name);
    r->command = tony_strdup(cmd);

    key = tony_sprintf(TONY_KEY_ROLE_RESOURCES_FMT, name);
    rc = check_resources(c, key, err);
    free(key);
    if (rc) return -1;
    const char *own = get_role_str(c, name, "resources"), *all = get_str(c, TONY_KEY_CONTAINERS_RESOURCES);
    if (own && all)
        r->resources = tony_sprintf("%s,%s", own, all);
    else
        r->resources = tony_strdup(own ? own : all);

    r->node_label = tony_strdup(get_role_str(c, name, "node-label"));

    if (docker) {
        char *ikey = tony_sprintf(TONY_KEY_DOCKER_ROLE_IMAGE_FMT, name);
        read_image(c, ikey, r);
        free(ikey);
    }

    tony_strv list = {0};
    tony_conf_get_list(c, TONY_KEY_APP_SIDECAR_JOBTYPES, &list);
    bool sidecar = tony_strv_contains(&list, name);
    tony_strv_free(&list);
    tony_conf_get_list(c, TONY_KEY_APP_UNTRACKED_JOBTYPES, &list);
    bool untracked = tony_strv_contains(&list, name);
    tony_strv_free(&list);
    r->kind = sidecar ? TONY_ROLE_SIDECAR : untracked ? TONY_ROLE_UNTRACKED : TONY_ROLE_TRACKED;
    tony_conf_get_list(c, TONY_KEY_APP_STOP_ON_FAILURE_JOBTYPES, &list);
    r->stop_on_failure = tony_strv_contains(&list, name);
    tony_strv_free(&list);
    r->stage = TONY_STAGE_TRAINING;

    key = tony_sprintf(TONY_KEY_ROLE_MIN_INSTANCES_FMT, name);
    rc = get_nonneg_int(c, key, instances, &r->min_instances, err);
    if (rc == 0 && r->min_instances > instances)
        rc = tony_err(err, "%s (%d) is above tony.%s.instances (%d), the most tasks the job type runs: lower it, or "
                           "raise the instances", key, r->min_instances, name, instances);
    free(key);
    if (rc) return rc;

    long long max;
    key = tony_sprintf(TONY_KEY_ROLE_MAX_INSTANCES_FMT, name);
    rc = tony_conf_get_ll(c, key, -1, &max, err);
    if (rc == 0 && max >= 0 && instances > max)
        rc = tony_err(err, "tony.%s.instances (%d) exceeds the maximum allowed of %lld (%s)", name, instances, max,
                      key);
    free(key);
    return rc;
}

static int build_roles(const tony_conf *c, tony_plan *p, tony_error *err) {
    tony_strv types = {0};
    tony_conf_job_types(c, &types); /* sorted, so roles come out sorted */
    long long total = 0;
    bool docker = false;
    int rc = tony_conf_get_bool(c, TONY_KEY_DOCKER_ENABLED, false, &docker, err);
    p->roles = tony_xcalloc(types.len ? types.len : 1, sizeof(tony_role));
    for (size_t i = 0; i < types.len && rc == 0; i++) {
        int instances = 0;
        rc = get_role_int(c, types.items[i], "instances", 0, &instances, err);
        if (rc || instances == 0) continue;
        total += instances;
        if (total > INT_MAX) {
            rc = tony_err(err, "the job types' instances add up to more than %d (tony.%s.instances)", INT_MAX,
                          types.items[i]);
            break;
        }
        rc = build_role(c, types.items[i], instances, docker, &p->roles[p->nroles], err);
        p->nroles++; /* counted even on failure so that tony_plan_free frees it */
    }
    p->am_image.name = tony_strdup(JOB_SINGLE_NODE_ROLE);
    if (rc == 0 && docker) read_image(c, TONY_KEY_DOCKER_AM_IMAGE, &p->am_image);
    /* docker on and no image anywhere: every task would run bare, which the
     * switch did not ask for (a role without one among roles with one runs
     * bare on purpose) */
    bool any_image = p->am_image.docker_image != NULL;
    for (size_t i = 0; i < p->nroles; i++) any_image = any_image || p->roles[i].docker_image;
    if (rc == 0 && docker && !any_image)
        rc = tony_err(err, TONY_KEY_DOCKER_ENABLED " is true but no image is set: set " TONY_KEY_DOCKER_CONTAINERS_IMAGE
                           " (every job type's), tony.docker.<job type>.image or " TONY_KEY_DOCKER_AM_IMAGE
                           ", or " TONY_KEY_DOCKER_ENABLED "=false");
    tony_strv_free(&types);
    return rc;
}

/* The amount of one resource a role asks for per instance, for the
 * tony.task.max-total-<res> limits. */
static int role_amount(const tony_conf *c, const tony_role *r, const char *res, long long *out, tony_error *err) {
    if (strcmp(res, "memory") == 0) *out = r->memory_mb;
    else if (strcmp(res, "vcores") == 0) *out = r->vcores;
    else if (strcmp(res, "gpus") == 0) *out = r->gpus;
    else return get_role_ll(c, r->name, res, 0, out, err);
    return 0;
}

static int check_limits(const tony_conf *c, const tony_plan *p, tony_error *err) {
    long long max;
    if (tony_conf_get_ll(c, TONY_KEY_TASK_MAX_TOTAL_INSTANCES, -1, &max, err)) return -1;
    int total = tony_plan_total_instances(p);
    /* A plain sum: TonY also squares the instances here through a regex
     * accident, which nobody can have meant. */
    if (max >= 0 && total > max)
        return tony_err(err, "Total number of instances (%d) requested exceeds maximum allowed of %lld "
                             "(tony.task.max-total-instances)", total, max);

    static const char prefix[] = TONY_KEY_TASK_MAX_TOTAL_PREFIX;
    for (size_t i = 0; i < tony_conf_size(c); i++) {
        const char *key = tony_conf_key_at(c, i);
        if (strncmp(key, prefix, sizeof prefix - 1) != 0) continue;
        const char *res = key + sizeof prefix - 1;
        bool ok = *res != '\0';
        for (const char *q = res; *q; q++)
            if (*q < 'a' || *q > 'z') ok = false;
        if (!ok || strcmp(res, "instances") == 0) continue;
        if (strcmp(res, "memory") == 0) {
            const char *v = get_str(c, key);
            if (!v) continue;
            /* -1 is the usual "no limit"; anything else must be a size. */
            long long neg;
            if (tony_parse_ll(v, &neg) && neg < 0) continue;
            if (tony_conf_get_memory_mb(c, key, NULL, &max, err)) return -1;
        } else if (tony_conf_get_ll(c, key, -1, &max, err)) {
            return -1;
        }
        if (max < 0) continue;
        long long sum = 0;
        for (size_t j = 0; j < p->nroles; j++) {
            long long amount;
            if (role_amount(c, &p->roles[j], res, &amount, err)) return -1;
            long long part;
            if (__builtin_mul_overflow(amount, (long long)p->roles[j].instances, &part) ||
                __builtin_add_overflow(sum, part, &sum))
                sum = LLONG_MAX; /* absurd requests still exceed any limit */
        }
        if (sum > max)
            return tony_err(err, "Total amount of %s (%lld) requested exceeds maximum allowed of %lld (%s)", res, sum,
                            max, key);
    }
    return 0;
}

static tony_role *find_role(tony_plan *p, const char *name) {
    for (size_t i = 0; i < p->nroles; i++)
        if (strcmp(p->roles[i].name, name) == 0) return &p->roles[i];
    return NULL;
}

#define PREPARE_KEY TONY_KEY_APP_PREPARE_STAGE
#define TRAINING_KEY TONY_KEY_APP_TRAINING_STAGE

/* Job types listed in a stage but without instances are tolerated (a user
 * may turn a type off with instances=0 and keep the stage lists); a name that
 * is no job type at all is a typo worth stopping for. */
static int check_stage_names(const tony_strv *stage, const char *key, tony_plan *p, const tony_strv *types,
                             tony_error *err) {
    for (size_t i = 0; i < stage->len; i++) {
        if (find_role(p, stage->items[i]) || tony_strv_contains(types, stage->items[i])) continue;
        char *known = tony_strv_join(types, ", ");
        tony_err(err, "%s: '%s' is not a job type (job types: %s); every job type in %s and %s must have a "
                      "tony.<type>.instances key", key, stage->items[i], *known ? known : "none", PREPARE_KEY,
                 TRAINING_KEY);
        free(known);
        return -1;
    }
    return 0;
}

static int build_stages(const tony_conf *c, tony_plan *p, tony_error *err) {
    tony_strv prepare = {0}, training = {0}, types = {0};
    tony_conf_get_list(c, PREPARE_KEY, &prepare);
    tony_conf_get_list(c, TRAINING_KEY, &training);
    int rc = 0;
    if (prepare.len == 0 && training.len == 0) goto out;
    p->has_stages = true;
    tony_conf_job_types(c, &types);
    if (check_stage_names(&prepare, PREPARE_KEY, p, &types, err) ||
        check_stage_names(&training, TRAINING_KEY, p, &types, err)) {
        rc = -1;
        goto out;
    }
    /* Only one list given: the other stage is every remaining role. */
    tony_strv *missing = prepare.len == 0 ? &prepare : training.len == 0 ? &training : NULL;
    const tony_strv *given = missing == &prepare ? &training : &prepare;
    if (missing)
        for (size_t i = 0; i < p->nroles; i++)
            if (!tony_strv_contains(given, p->roles[i].name)) tony_strv_push(missing, p->roles[i].name);
    for (size_t i = 0; i < p->nroles; i++) {
        tony_role *r = &p->roles[i];
        bool in_prep = tony_strv_contains(&prepare, r->name), in_train = tony_strv_contains(&training, r->name);
        if (in_prep && in_train) {
            rc = tony_err(err, "job type '%s' is in both %s and %s; put it in exactly one", r->name, PREPARE_KEY,
                          TRAINING_KEY);
            goto out;
        }
        if (!in_prep && !in_train) {
            rc = tony_err(err, "job type '%s' is in neither %s nor %s; every job type with instances must be in "
                               "exactly one", r->name, PREPARE_KEY, TRAINING_KEY);
            goto out;
        }
        r->stage = in_prep ? TONY_STAGE_PREPARE : TONY_STAGE_TRAINING;
    }
out:
    tony_strv_free(&prepare);
    tony_strv_free(&training);
    tony_strv_free(&types);
    return rc;
}

static int parse_env(const tony_conf *c, const char *key, tony_env *env, tony_error *err) {
    tony_strv list = {0};
    tony_conf_get_list(c, key, &list);
    int rc = 0;
    for (size_t i = 0; i < list.len && rc == 0; i++)
        if (tony_env_set_kv(env, list.items[i]))
            rc = tony_err(err, "%s: entry '%s' has no variable name; entries are NAME=VALUE", key, list.items[i]);
    tony_strv_free(&list);
    return rc;
}

/* The framework as named (trimmed; TonY's default tensorflow): whether it
 * is one tony knows is the runtime layer's to say (tony_runtime_plan). */
static char *framework_name(const tony_conf *c) {
    const char *name = get_str(c, TONY_KEY_APP_FRAMEWORK);
    char *t = tony_strdup(name ? name : "tensorflow");
    char *trimmed = tony_strdup(tony_trim(t));
    free(t);
    return trimmed;
}


const char *tony_restart_policy_name(tony_restart_policy p) {
    switch (p) {
    case TONY_RESTART_NEVER: return "never";
    case TONY_RESTART_EXIT_CODE: return "exit-code";
    case TONY_RESTART_ON_FAILURE: break;
    }
    return "on-failure";
}

/* One restart-policy key; unset keeps *out (the job's, for a role). */
static int read_policy_key(const tony_conf *c, const char *key, tony_restart_policy *out, tony_error *err) {
    const char *v = get_str(c, key);
    if (!v) return 0;
    char *t = tony_strdup(v);
    char *s = tony_trim(t);
    int rc = 0;
    if (strcasecmp(s, "on-failure") == 0) *out = TONY_RESTART_ON_FAILURE;
    else if (strcasecmp(s, "never") == 0) *out = TONY_RESTART_NEVER;
    else if (strcasecmp(s, "exit-code") == 0) *out = TONY_RESTART_EXIT_CODE;
    else rc = tony_err(err, "%s must be on-failure, never or exit-code, got '%s'", key, v);
    free(t);
    return rc;
}

/* The restart policies (the job's, then each role's over it) and the
 * backoff between attempts; tony.am.retry-count stays the budget. */
static int read_restart(const tony_conf *c, tony_plan *p, tony_error *err) {
    p->restart_policy = TONY_RESTART_ON_FAILURE;
    if (read_policy_key(c, TONY_KEY_APP_RESTART_POLICY, &p->restart_policy, err)) return -1;
    for (size_t i = 0; i < p->nroles; i++) {
        tony_role *r = &p->roles[i];
        r->restart_policy = p->restart_policy;
        char *key = tony_sprintf(TONY_KEY_ROLE_RESTART_POLICY_FMT, r->name);
        int rc = read_policy_key(c, key, &r->restart_policy, err);
        free(key);
        if (rc) return -1;
    }
    if (get_nonneg_ll(c, TONY_KEY_APP_RESTART_BACKOFF_MS, 1000, &p->restart_backoff_ms, err)) return -1;
    if (get_nonneg_ll(c, TONY_KEY_APP_SIZING_MIN_RUN_MS, 60000, &p->sizing_min_run_ms, err)) return -1;
    if (get_nonneg_ll(c, TONY_KEY_APP_RESTART_BACKOFF_MAX_MS, 60000, &p->restart_backoff_max_ms, err))
        return -1;
    if (get_nonneg_ll(c, TONY_KEY_APP_RESTART_HEALTHY_MS, 60000, &p->restart_healthy_ms, err)) return -1;
    return 0;
}

/* Bad-node exclusion's cap and the log policies (conf/logpolicy.h): a
 * regex that does not compile is refused here, at submit, not in a task. */
static int read_node_policies(const tony_conf *c, tony_plan *p, tony_error *err) {
    p->max_excluded_nodes = -1;
    const char *max = tony_conf_get(c, TONY_KEY_APP_MAX_EXCLUDED_NODES);
    if (max && *max && get_nonneg_int(c, TONY_KEY_APP_MAX_EXCLUDED_NODES, 0, &p->max_excluded_nodes, err))
        return -1;
    tony_logpolicies lp;
    if (tony_logpolicies_parse(tony_logpolicies_value(c), &lp, err)) return -1;
    tony_logpolicies_free(&lp);
    p->log_policies = tony_strdup(tony_logpolicies_value(c));
    return 0;
}

/* Elastic jobs: a role may train with fewer than its instances. Without a
 * gang there is no shared world to shrink (FCFS tasks run on their own). */
static int read_elastic(const tony_conf *c, tony_plan *p, tony_error *err) {
    if (get_nonneg_ll(c, TONY_KEY_APP_ELASTIC_SETTLE_MS, 5000, &p->elastic_settle_ms, err)) return -1;
    const tony_role *elastic = NULL;
    for (size_t i = 0; i < p->nroles && !elastic; i++)
        if (p->roles[i].min_instances < p->roles[i].instances) elastic = &p->roles[i];
    p->elastic = elastic != NULL;
    if (elastic && !p->gang)
        return tony_err(err, "tony.%s.min-instances (%d) makes the job elastic, which needs "
                             "tony.application.distributed-mode GANG (FCFS tasks share no world to resize): unset it "
                             "or use GANG", elastic->name, elastic->min_instances);
    return 0;
}

static int read_restart_mode(const tony_conf *c, tony_plan *p, tony_error *err) {
    const char *key = TONY_KEY_APP_RESTART_MODE;
    const char *v = get_str(c, key);
    char *t = tony_strdup(v ? v : "in-place");
    char *s = tony_trim(t);
    int rc = 0;
    if (strcasecmp(s, "in-place") == 0) p->restart_in_place = true;
    else if (strcasecmp(s, "reallocate") == 0) p->restart_in_place = false;
    else rc = tony_err(err, "%s must be in-place or reallocate, got '%s'", key, v);
    free(t);
    return rc;
}

static int read_settings(const tony_conf *c, tony_plan *p, tony_error *err) {
    const char *mode = get_str(c, TONY_KEY_APP_DISTRIBUTED_MODE);
    char *m = tony_strdup(mode ? mode : "GANG");
    char *ms = tony_trim(m);
    int bad_mode = 0;
    if (strcasecmp(ms, "GANG") == 0)
        p->gang = true;
    else if (strcasecmp(ms, "FCFS") == 0)
        p->gang = false;
    else
        bad_mode = 1;
    free(m);
    if (bad_mode)
        return tony_err(err, "tony.application.distributed-mode must be GANG or FCFS, got '%s'", mode);

    if (tony_conf_get_bool(c, TONY_KEY_APP_FAIL_ON_WORKER_FAILURE, false, &p->fail_on_worker_failure,
                           err))
        return -1;
    if (get_nonneg_int(c, TONY_KEY_AM_RETRY_COUNT, 0, &p->retry_count, err)) return -1;
    if (read_restart_mode(c, p, err)) return -1;
    if (read_elastic(c, p, err)) return -1;

    if (tony_conf_get_ll(c, TONY_KEY_TASK_HEARTBEAT_INTERVAL_MS, 1000, &p->heartbeat_interval_ms, err)) return -1;
    if (p->heartbeat_interval_ms <= 0)
        return tony_err(err, "tony.task.heartbeat-interval-ms must be a positive number of milliseconds, got '%s'",
                        tony_conf_get(c, TONY_KEY_TASK_HEARTBEAT_INTERVAL_MS));
    long long missed;
    if (tony_conf_get_ll(c, TONY_KEY_TASK_MAX_MISSED_HEARTBEATS, 25, &missed, err)) return -1;
    if (missed < 1 || missed > INT_MAX)
        return tony_err(err, "tony.task.max-missed-heartbeats must be an integer of at least 1, got '%s'",
                        tony_conf_get(c, TONY_KEY_TASK_MAX_MISSED_HEARTBEATS));
    p->max_missed_heartbeats = (int)missed;
    if (tony_conf_get_ll(c, TONY_KEY_AM_RECOVERY_TIMEOUT_MS, 300000, &p->am_recovery_ms, err)) return -1;
    if (p->am_recovery_ms < 0)
        return tony_err(err, "tony.am.recovery-timeout-ms must be 0 (off) or a number of milliseconds, got '%s'",
                        tony_conf_get(c, TONY_KEY_AM_RECOVERY_TIMEOUT_MS));
    if (tony_conf_get_ll(c, TONY_KEY_TASK_METRICS_INTERVAL_MS, 5000, &p->metrics_interval_ms, err)) return -1;
    if (p->metrics_interval_ms <= 0)
        return tony_err(err, "tony.task.metrics-interval-ms must be a positive number of milliseconds, got '%s'",
                        tony_conf_get(c, TONY_KEY_TASK_METRICS_INTERVAL_MS));

    /* the cap on each task's stdout and stderr (executor/logcap.h) */
    if (tony_conf_get_memory_mb(c, TONY_KEY_TASK_LOG_MAX_SIZE, "1g", &p->log_max_mb, err)) return -1;

    /* hang diagnosis (am/hang.h) */
    if (tony_conf_get_duration_ms(c, TONY_KEY_TASK_PROGRESS_TIMEOUT, 0, &p->progress_timeout_ms, err)) return -1;
    /* executors look at the output once per heartbeat: a shorter timeout would find healthy tasks hung */
    if (p->progress_timeout_ms > 0 && p->progress_timeout_ms < 2 * p->heartbeat_interval_ms)
        return tony_err(err,
                        "tony.task.progress-timeout (%lld ms) must be at least twice tony.task.heartbeat-interval-ms "
                        "(%lld ms): executors look at the tasks' output once per heartbeat",
                        p->progress_timeout_ms, p->heartbeat_interval_ms);

    if (get_nonneg_ll(c, TONY_KEY_APP_TIMEOUT, 0, &p->app_timeout_ms, err)) return -1;
    if (read_node_policies(c, p, err)) return -1;

    long long exec;
    if (tony_conf_get_ll(c, TONY_KEY_TASK_EXECUTION_TIMEOUT_MS, 0, &exec, err)) return -1;
    if (exec > 0)
        p->execution_timeout_ms = exec;
    else if (get_nonneg_ll(c, TONY_KEY_WORKER_TIMEOUT, 0, &p->execution_timeout_ms, err))
        return -1;

    long long reg;
    if (tony_conf_get_ll(c, TONY_KEY_CONTAINER_REGISTRATION_TIMEOUT, -1, &reg, err)) return -1;
    if (reg > 0)
        p->registration_timeout_ms = reg;
    else if (tony_conf_get_ll(c, TONY_KEY_CONTAINER_ALLOCATION_TIMEOUT, -1, &p->registration_timeout_ms, err))
        return -1;

    if (tony_conf_get_memory_mb(c, TONY_KEY_AM_MEMORY, "2g", &p->am_memory_mb, err)) return -1;
    if (p->am_memory_mb <= 0)
        return tony_err(err, TONY_KEY_AM_MEMORY " must be more than 0 (the coordinator's memory, e.g. 2g), got '%s'",
                        tony_conf_get(c, TONY_KEY_AM_MEMORY));
    if (get_nonneg_int(c, TONY_KEY_AM_VCORES, 1, &p->am_vcores, err)) return -1;
    if (get_nonneg_int(c, TONY_KEY_AM_GPUS, 0, &p->am_gpus, err)) return -1;
    if (check_resources(c, TONY_KEY_AM_RESOURCES, err) || check_resources(c, TONY_KEY_CONTAINERS_RESOURCES, err))
        return -1;

    const char *am = get_str(c, TONY_KEY_AM_COMMAND);
    if (!am) am = get_str(c, TONY_KEY_CONTAINERS_COMMAND);
    p->am_command = tony_strdup(am);

    if (parse_env(c, TONY_KEY_EXECUTION_ENVS, &p->shell_env, err)) return -1;
    if (parse_env(c, TONY_KEY_CONTAINERS_ENVS, &p->container_env, err)) return -1;
    p->tensorboard_log_dir = dup_str(c, TONY_KEY_APP_TENSORBOARD_LOG_DIR);
    return 0;
}

/* What would fail later, in the coordinator or an executor, refused here:
 * keys and values that tony-final.xml cannot carry (not UTF-8, control
 * characters), and job type names longer than the API's paths take. */
static int check_text(const tony_conf *c, tony_error *err) {
    static const char prefix[] = "tony.", suffix[] = ".instances";
    for (size_t i = 0; i < tony_conf_size(c); i++) {
        const char *key = tony_conf_key_at(c, i), *value = tony_conf_value_at(c, i);
        const char *source = tony_conf_get_source(c, key);
        long at = tony_text_bad_byte(key);
        const char *bad = at >= 0 ? key : (at = tony_text_bad_byte(value)) >= 0 ? value : NULL;
        if (bad) {
            char *shown = tony_utf8_sanitize(key, strlen(key), &(size_t){0});
            int rc = tony_err(err, "%s%s%s%s: its %s is not UTF-8 text (byte %ld is 0x%02x); give it as UTF-8, without "
                                   "control characters",
                              shown, source && *source ? " (from " : "", source && *source ? source : "",
                              source && *source ? ")" : "", bad == key ? "name" : "value", at + 1,
                              (unsigned char)bad[at]);
            free(shown);
            return rc;
        }
        size_t n = strlen(key), p = sizeof prefix - 1, s = sizeof suffix - 1;
        if (n > p + s + TONY_ROLE_NAME_MAX && strncmp(key, prefix, p) == 0 && strcmp(key + n - s, suffix) == 0 &&
            strspn(key + p, "abcdefghijklmnopqrstuvwxyz") == n - p - s)
            return tony_err(err, "%s: a job type's name is at most %d characters; this one has %zu", key,
                            TONY_ROLE_NAME_MAX, n - p - s);
    }
    return 0;
}

int tony_plan_from_conf(const tony_conf *c, tony_plan *out, tony_error *err) {
    memset(out, 0, sizeof *out);
    if (check_text(c, err)) goto fail;
    out->framework = framework_name(c);
    if (build_roles(c, out, err)) goto fail;
    out->single_node = out->nroles == 0;
    if (read_settings(c, out, err)) goto fail;
    if (read_restart(c, out, err)) goto fail;
    if (out->single_node && !out->am_command) {
        tony_err(err, "no command to run: pass --executes or set tony.containers.command");
        goto fail;
    }
    if (check_limits(c, out, err)) goto fail;
    if (build_stages(c, out, err)) goto fail;
    return 0;
fail:
    tony_plan_free(out);
    return -1;
}

static void role_free(tony_role *r) {
    free(r->name);
    free(r->command);
    free(r->resources);
    free(r->node_label);
    free(r->docker_image);
    free(r->docker_mounts);
    free(r->docker_runtime);
    free(r->docker_network);
}

void tony_plan_free(tony_plan *p) {
    if (!p) return;
    for (size_t i = 0; i < p->nroles; i++) role_free(&p->roles[i]);
    role_free(&p->am_image);
    free(p->roles);
    free(p->framework);
    free(p->am_command);
    tony_env_free(&p->shell_env);
    tony_env_free(&p->container_env);
    free(p->tensorboard_log_dir);
    free(p->log_policies);
    memset(p, 0, sizeof *p);
}

const tony_role *tony_plan_role(const tony_plan *p, const char *name) {
    for (size_t i = 0; i < p->nroles; i++)
        if (strcmp(p->roles[i].name, name) == 0) return &p->roles[i];
    return NULL;
}

int tony_plan_total_instances(const tony_plan *p) {
    int n = 0;
    for (size_t i = 0; i < p->nroles; i++) n += p->roles[i].instances;
    return n;
}

int tony_plan_tracked_tasks(const tony_plan *p) {
    int n = 0;
    for (size_t i = 0; i < p->nroles; i++)
        if (p->roles[i].kind == TONY_ROLE_TRACKED) n += p->roles[i].instances;
    return n;
}

bool tony_plan_is_chief(const tony_plan *p, const char *role, int index) {
    if (tony_plan_role(p, "chief")) return strcmp(role, "chief") == 0;
    return strcmp(role, "worker") == 0 && index == 0;
}

const char *tony_role_kind_name(tony_role_kind k) {
    switch (k) {
    case TONY_ROLE_TRACKED: return "tracked";
    case TONY_ROLE_UNTRACKED: return "untracked";
    case TONY_ROLE_SIDECAR: return "sidecar";
    }
    return "tracked";
}

bool tony_plan_in_images(const tony_plan *p) {
    if (p->single_node) return p->am_image.docker_image != NULL;
    for (size_t i = 0; i < p->nroles; i++)
        if (p->roles[i].docker_image) return true;
    return false;
}
