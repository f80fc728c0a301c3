/* Unit tests of the framework runtimes: the env each task gets (TF_CONFIG,
 * torchrun's set, DMLC_*, JAX_* and its Python cluster, the Rabit tracker), the common
 * vars, plan validation, lock-step rules and name lookup. Plans are built by
 * hand so that these tests do not depend on parsing a configuration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fs.h"
#include "common/strv.h"
#include "runtime/runtime.h"

/* ---- helpers ------------------------------------------------------------ */

#define MAXROLES 8

typedef struct fixture {
    tony_role roles[MAXROLES];
    tony_plan plan;
} fixture;

/* Adds a role; callers add them in name order, as tony_plan_from_conf sorts. */
static void add_role(fixture *f, const char *name, int instances, tony_role_kind kind) {
    tony_role *r = &f->roles[f->plan.nroles++];
    memset(r, 0, sizeof *r);
    r->name = (char *)name;
    r->instances = instances;
    r->kind = kind;
    r->command = (char *)"python train.py";
    f->plan.roles = f->roles;
}

static void init_plan(fixture *f, const char *framework, bool gang) {
    memset(f, 0, sizeof *f);
    f->plan.framework = (char *)framework;
    f->plan.gang = gang;
    f->plan.roles = f->roles;
}

static const tony_runtime *rt(const char *name) {
    const tony_runtime *r = tony_runtime_find(name);
    assert_non_null(r);
    return r;
}

/* Builds the env of role:index; asserts success. */
static void env_of(const char *framework, const tony_plan *plan, const json_t *spec, const char *role, int index,
                   tony_env *env) {
    tony_runtime_task t = {.plan = plan, .role = role, .index = index, .cluster_spec = spec};
    tony_error err = {{0}};
    int rc = tony_runtime_build_env(rt(framework), &t, env, &err);
    if (rc != 0) fail_msg("build_env %s:%d: %s", role, index, err.msg);
}

static void assert_env(const tony_env *env, const char *key, const char *want) {
    const char *got = tony_env_get(env, key);
    if (!want) {
        if (got) fail_msg("%s should be unset, is '%s'", key, got);
        return;
    }
    if (!got) fail_msg("%s unset, want '%s'", key, want);
    assert_string_equal(got, want);
}

static json_t *parse(const char *s) {
    json_error_t je;
    json_t *j = json_loads(s, 0, &je);
    if (!j) fail_msg("bad JSON '%s': %s", s, je.text);
    return j;
}

/* Parses TF_CONFIG and checks its task and the cluster's keys (want_keys is a
 * NULL-terminated list; the cluster must have exactly these). */
static json_t *check_tf_config(const tony_env *env, const char *type, int index, const char *const *want_keys) {
    const char *s = tony_env_get(env, "TF_CONFIG");
    assert_non_null(s);
    json_t *tf = parse(s);
    assert_null(json_object_get(tf, "environment"));
    json_t *task = json_object_get(tf, "task");
    assert_true(json_is_object(task));
    assert_string_equal(json_string_value(json_object_get(task, "type")), type);
    assert_true(json_is_integer(json_object_get(task, "index")));
    assert_int_equal(json_integer_value(json_object_get(task, "index")), index);
    json_t *cluster = json_object_get(tf, "cluster");
    assert_true(json_is_object(cluster));
    size_t n = 0;
    for (const char *const *k = want_keys; *k; k++, n++)
        if (!json_object_get(cluster, *k)) fail_msg("TF_CONFIG cluster lacks '%s': %s", *k, s);
    if (json_object_size(cluster) != n) fail_msg("TF_CONFIG cluster has extra roles: %s", s);
    return tf;
}

/* ---- tensorflow ---------------------------------------------------------- */

static void test_tf_ps_worker(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "tensorflow", true);
    add_role(&f, "ps", 1, TONY_ROLE_UNTRACKED);
    add_role(&f, "worker", 2, TONY_ROLE_TRACKED);
    json_t *spec = parse("{\"worker\":[\"h0:1000\",\"h1:1001\"],\"ps\":[\"h2:2222\"]}");

    tony_env env = {0};
    env_of("tensorflow", &f.plan, spec, "worker", 1, &env);
    json_t *tf = check_tf_config(&env, "worker", 1, (const char *const[]){"worker", "ps", NULL});
    json_t *workers = json_object_get(json_object_get(tf, "cluster"), "worker");
    assert_int_equal(json_array_size(workers), 2);
    assert_string_equal(json_string_value(json_array_get(workers, 0)), "h0:1000");
    assert_string_equal(json_string_value(json_array_get(workers, 1)), "h1:1001");
    assert_string_equal(json_string_value(json_array_get(json_object_get(json_object_get(tf, "cluster"), "ps"), 0)),
                        "h2:2222");
    json_decref(tf);
    assert_env(&env, "JOB_NAME", "worker");
    assert_env(&env, "TASK_INDEX", "1");
    assert_env(&env, "TASK_NUM", "2"); /* ps is untracked */
    assert_env(&env, "DISTRIBUTED_MODE", "GANG");
    assert_env(&env, "IS_CHIEF", NULL);
    /* CLUSTER_SPEC is the spec as is */
    json_t *cs = parse(tony_env_get(&env, "CLUSTER_SPEC"));
    assert_true(json_equal(cs, spec));
    json_decref(cs);
    tony_env_free(&env);

    tony_env env0 = {0};
    env_of("tensorflow", &f.plan, spec, "worker", 0, &env0);
    assert_env(&env0, "IS_CHIEF", "true");
    tony_env_free(&env0);

    tony_env envps = {0};
    env_of("tensorflow", &f.plan, spec, "ps", 0, &envps);
    json_decref(check_tf_config(&envps, "ps", 0, (const char *const[]){"worker", "ps", NULL}));
    assert_env(&envps, "IS_CHIEF", NULL);
    tony_env_free(&envps);
    json_decref(spec);
}

static void test_tf_chief_evaluator_tensorboard(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "tensorflow", true);
    add_role(&f, "chief", 1, TONY_ROLE_TRACKED);
    add_role(&f, "evaluator", 1, TONY_ROLE_TRACKED);
    add_role(&f, "notebook", 1, TONY_ROLE_SIDECAR);
    add_role(&f, "tensorboard", 1, TONY_ROLE_SIDECAR);
    add_role(&f, "worker", 2, TONY_ROLE_TRACKED);
    json_t *spec = parse("{\"chief\":[\"c:1\"],\"evaluator\":[\"e:2\"],\"notebook\":[\"n:3\"],"
                         "\"tensorboard\":[\"t:4\"],\"worker\":[\"w0:5\",\"w1:6\"]}");

    /* A chief exists: worker:0 is not the chief, and it does not see the
     * evaluator, the tensorboard or the other sidecar in its cluster. */
    tony_env w = {0};
    env_of("tensorflow", &f.plan, spec, "worker", 0, &w);
    json_decref(check_tf_config(&w, "worker", 0, (const char *const[]){"chief", "worker", NULL}));
    assert_env(&w, "IS_CHIEF", NULL);
    assert_env(&w, "TASK_NUM", "4");
    /* CLUSTER_SPEC keeps every role */
    json_t *cs = parse(tony_env_get(&w, "CLUSTER_SPEC"));
    assert_non_null(json_object_get(cs, "tensorboard"));
    assert_non_null(json_object_get(cs, "evaluator"));
    json_decref(cs);
    tony_env_free(&w);

    tony_env c = {0};
    env_of("tensorflow", &f.plan, spec, "chief", 0, &c);
    json_decref(check_tf_config(&c, "chief", 0, (const char *const[]){"chief", "worker", NULL}));
    assert_env(&c, "IS_CHIEF", "true");
    tony_env_free(&c);

    /* The evaluator sees itself. */
    tony_env e = {0};
    env_of("tensorflow", &f.plan, spec, "evaluator", 0, &e);
    json_decref(check_tf_config(&e, "evaluator", 0, (const char *const[]){"chief", "evaluator", "worker", NULL}));
    assert_env(&e, "IS_CHIEF", NULL);
    tony_env_free(&e);

    /* The tensorboard sidecar is not in its own TF_CONFIG cluster either. */
    tony_env t = {0};
    env_of("tensorflow", &f.plan, spec, "tensorboard", 0, &t);
    json_decref(check_tf_config(&t, "tensorboard", 0, (const char *const[]){"chief", "worker", NULL}));
    tony_env_free(&t);
    json_decref(spec);
}

/* Issue 26: the texts every task of one spec shares are made once (the
 * memo) and each task's env is byte for byte what it is without one; TF_CONFIG
 * is what json_dumps writes for {"cluster": ..., "task": {...}}. */
static void test_memo_same_env(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "tensorflow", true);
    add_role(&f, "chief", 1, TONY_ROLE_TRACKED);
    add_role(&f, "evaluator", 1, TONY_ROLE_TRACKED);
    add_role(&f, "tensorboard", 1, TONY_ROLE_SIDECAR);
    add_role(&f, "worker", 3, TONY_ROLE_TRACKED);
    json_t *spec = parse("{\"chief\":[\"c:1\"],\"evaluator\":[\"e:2\"],\"tensorboard\":[\"t:4\"],"
                         "\"worker\":[\"w0:5\",\"w\\\"1:6\",\"w2:7\"]}");
    const char *order[][2] = {{"worker", "2"}, {"evaluator", "0"}, {"chief", "0"}, {"worker", "0"},
                              {"tensorboard", "0"}, {"evaluator", "0"}, {"worker", "1"}};
    tony_runtime_memo memo = {0};
    for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
        const char *role = order[k][0];
        int index = atoi(order[k][1]);
        tony_env plain = {0}, memod = {0};
        env_of("tensorflow", &f.plan, spec, role, index, &plain);
        tony_runtime_task t = {.plan = &f.plan, .role = role, .index = index, .cluster_spec = spec, .memo = &memo};
        tony_error err = {{0}};
        assert_int_equal(tony_runtime_build_env(rt("tensorflow"), &t, &memod, &err), 0);
        assert_int_equal(plain.kv.len, memod.kv.len);
        for (size_t i = 0; i < plain.kv.len; i++) assert_string_equal(plain.kv.items[i], memod.kv.items[i]);
        /* the reference: jansson's own encoding of TF_CONFIG */
        bool eval = strcmp(role, "evaluator") == 0;
        json_t *cluster = json_object();
        const char *key;
        json_t *val;
        json_object_foreach(spec, key, val) {
            if (strcmp(key, "tensorboard") == 0 || (!eval && strcmp(key, "evaluator") == 0)) continue;
            json_object_set(cluster, key, val);
        }
        json_t *tf = json_pack("{s:o, s:{s:s, s:i}}", "cluster", cluster, "task", "type", role, "index", index);
        char *want = json_dumps(tf, JSON_COMPACT);
        assert_string_equal(tony_env_get(&memod, "TF_CONFIG"), want);
        free(want);
        json_decref(tf);
        tony_env_free(&plain);
        tony_env_free(&memod);
    }
    assert_non_null(memo.cluster_spec);
    assert_non_null(memo.framework[0]);
    assert_non_null(memo.framework[1]);
    tony_runtime_memo_clear(&memo);
    assert_null(memo.cluster_spec);
    json_decref(spec);
}

static void test_tf_fcfs_has_no_tf_config(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "tensorflow", false);
    add_role(&f, "worker", 3, TONY_ROLE_TRACKED);
    json_t *spec = parse("{\"worker\":[\"h0:1\"]}");
    tony_env env = {0};
    tony_env_set(&env, "TF_CONFIG", "stale");
    env_of("tensorflow", &f.plan, spec, "worker", 2, &env);
    assert_env(&env, "TF_CONFIG", NULL);
    assert_env(&env, "CLUSTER_SPEC", NULL);
    assert_env(&env, "DISTRIBUTED_MODE", "FCFS");
    assert_env(&env, "TASK_INDEX", "2");
    assert_env(&env, "TASK_NUM", "3");
    tony_env_free(&env);

    tony_env env2 = {0};
    env_of("tensorflow", &f.plan, NULL, "worker", 0, &env2);
    assert_env(&env2, "TF_CONFIG", NULL);
    assert_env(&env2, "IS_CHIEF", "true");
    tony_env_free(&env2);
    json_decref(spec);
}

/* ---- pytorch -------------------------------------------------------------- */

/* Asserts torchrun's per-process variables for a node of one process. */
static void assert_torchrun(const tony_env *env, int rank, int world, const char *role, int role_rank,
                            int role_world) {
    char b[32];
    snprintf(b, sizeof b, "%d", rank);
    assert_env(env, "RANK", b);
    assert_env(env, "GROUP_RANK", b);
    assert_env(env, "NODE_RANK", b);
    snprintf(b, sizeof b, "%d", world);
    assert_env(env, "WORLD_SIZE", b);
    assert_env(env, "WORLD", b);
    assert_env(env, "GROUP_WORLD_SIZE", b);
    assert_env(env, "LOCAL_RANK", "0");
    assert_env(env, "LOCAL_WORLD_SIZE", "1");
    assert_env(env, "ROLE_NAME", role);
    snprintf(b, sizeof b, "%d", role_rank);
    assert_env(env, "ROLE_RANK", b);
    snprintf(b, sizeof b, "%d", role_world);
    assert_env(env, "ROLE_WORLD_SIZE", b);
}

static void test_pytorch_env(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "pytorch", true);
    add_role(&f, "worker", 2, TONY_ROLE_TRACKED);
    /* Two tasks on one host: each is a node of one process, so both have
     * local rank 0 (Lightning's node-of-one-device model), not 0 and 1. */
    json_t *spec = parse("{\"worker\":[\"hostA:2000\",\"hostA:2001\"]}");
    for (int i = 0; i < 2; i++) {
        tony_env env = {0};
        env_of("pytorch", &f.plan, spec, "worker", i, &env);
        assert_torchrun(&env, i, 2, "worker", i, 2);
        assert_env(&env, "INIT_METHOD", "tcp://hostA:2000");
        assert_env(&env, "MASTER_ADDR", "hostA");
        assert_env(&env, "MASTER_PORT", "2000");
        assert_env(&env, "TORCHELASTIC_RESTART_COUNT", "0");
        assert_env(&env, "TORCHELASTIC_MAX_RESTARTS", "0");
        assert_env(&env, "TORCHELASTIC_RUN_ID", NULL); /* no job id given */
        assert_env(&env, "TF_CONFIG", NULL);
        tony_env_free(&env);
    }
    json_decref(spec);
}

/* A plan of several roles: the workers are ranks 0.. (worker 0 hosts the
 * store), the other tracked roles follow in plan order, each with its own
 * ROLE_RANK; an untracked ps is no torch process and gets no rank. */
static void test_pytorch_multi_role(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "pytorch", true);
    add_role(&f, "evaluator", 1, TONY_ROLE_TRACKED);
    add_role(&f, "ps", 1, TONY_ROLE_UNTRACKED);
    add_role(&f, "trainer", 2, TONY_ROLE_TRACKED);
    add_role(&f, "worker", 2, TONY_ROLE_TRACKED);
    json_t *spec = parse("{\"worker\":[\"hostA:2000\",\"hostB:3000\"],\"evaluator\":[\"hostC:1\"],"
                         "\"trainer\":[\"hostA:5\",\"hostA:6\"],\"ps\":[\"hostD:7\"]}");
    struct {
        const char *role;
        int index, rank, role_world;
    } want[] = {{"worker", 0, 0, 2}, {"worker", 1, 1, 2}, {"evaluator", 0, 2, 1}, {"trainer", 0, 3, 2},
                {"trainer", 1, 4, 2}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        tony_env env = {0};
        env_of("pytorch", &f.plan, spec, want[k].role, want[k].index, &env);
        assert_torchrun(&env, want[k].rank, 5, want[k].role, want[k].index, want[k].role_world);
        assert_env(&env, "MASTER_ADDR", "hostA");
        assert_env(&env, "MASTER_PORT", "2000");
        tony_env_free(&env);
    }
    tony_env env = {0};
    env_of("pytorch", &f.plan, spec, "ps", 0, &env);
    assert_env(&env, "RANK", NULL);
    assert_env(&env, "LOCAL_RANK", NULL);
    assert_env(&env, "MASTER_ADDR", NULL);
    assert_env(&env, "JOB_NAME", "ps");
    tony_env_free(&env);
    json_decref(spec);
}

/* A restart: the attempt is torch's restart count, tony.am.retry-count its
 * max_restarts, the job id its run id. */
static void test_pytorch_restart(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "pytorch", true);
    add_role(&f, "worker", 2, TONY_ROLE_TRACKED);
    f.plan.retry_count = 3;
    json_t *spec = parse("{\"worker\":[\"hostA:2000\",\"hostB:2001\"]}");
    for (int attempt = 0; attempt <= 3; attempt++) {
        tony_runtime_task t = {.plan = &f.plan, .role = "worker", .index = 1, .cluster_spec = spec,
                               .attempt = attempt, .run_id = "application_1_0002"};
        tony_env env = {0};
        tony_error err = {{0}};
        assert_int_equal(tony_runtime_build_env(rt("pytorch"), &t, &env, &err), 0);
        char b[16];
        snprintf(b, sizeof b, "%d", attempt);
        assert_env(&env, "TORCHELASTIC_RESTART_COUNT", b);
        assert_env(&env, "TORCHELASTIC_MAX_RESTARTS", "3");
        assert_env(&env, "TORCHELASTIC_RUN_ID", "application_1_0002");
        assert_torchrun(&env, 1, 2, "worker", 1, 2);
        tony_env_free(&env);
    }
    json_decref(spec);
}

/* Two processes per task (tony.<role>.nproc-per-node=2) in a plan of two
 * tracked roles, two tasks each, the second role with one process: RANK
 * and WORLD_SIZE count processes, GROUP_* and NODE_RANK tasks, ROLE_*
 * the role's processes; the executor's per-process step
 * (tony_runtime_process_env) gives local rank 1 the next rank. The
 * restart count follows the attempt. */
static void test_pytorch_nproc(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "pytorch", true);
    add_role(&f, "trainer", 2, TONY_ROLE_TRACKED);
    add_role(&f, "worker", 2, TONY_ROLE_TRACKED);
    f.roles[1].nproc_per_node = 2;
    f.plan.retry_count = 2;
    json_t *spec = parse("{\"worker\":[\"hostA:2000\",\"hostA:2001\"],\"trainer\":[\"hostB:5\",\"hostB:6\"]}");
    /* world: worker:0 ranks 0,1; worker:1 ranks 2,3; trainer:0 rank 4; trainer:1 rank 5 */
    struct {
        const char *role;
        int index, local, rank, node, role_rank, role_world, nproc;
    } want[] = {{"worker", 0, 0, 0, 0, 0, 4, 2},  {"worker", 0, 1, 1, 0, 1, 4, 2}, {"worker", 1, 0, 2, 1, 2, 4, 2},
                {"worker", 1, 1, 3, 1, 3, 4, 2},  {"trainer", 0, 0, 4, 2, 0, 2, 1}, {"trainer", 1, 0, 5, 3, 1, 2, 1}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        tony_runtime_task t = {.plan = &f.plan, .role = want[k].role, .index = want[k].index, .cluster_spec = spec,
                               .attempt = 1, .run_id = "application_1_0003"};
        tony_env env = {0};
        tony_error err = {{0}};
        assert_int_equal(tony_runtime_build_env(rt("pytorch"), &t, &env, &err), 0);
        assert_int_equal(tony_runtime_nproc(&env), want[k].nproc);
        tony_runtime_process_env(&env, want[k].local);
        char b[16];
#define WANT(name, v) (snprintf(b, sizeof b, "%d", (v)), assert_env(&env, name, b))
        WANT("RANK", want[k].rank);
        WANT("LOCAL_RANK", want[k].local);
        WANT("LOCAL_WORLD_SIZE", want[k].nproc);
        WANT("WORLD_SIZE", 6);
        WANT("WORLD", 6);
        WANT("GROUP_RANK", want[k].node);
        WANT("NODE_RANK", want[k].node);
        WANT("GROUP_WORLD_SIZE", 4);
        WANT("ROLE_RANK", want[k].role_rank);
        WANT("ROLE_WORLD_SIZE", want[k].role_world);
        WANT("TORCHELASTIC_RESTART_COUNT", 1);
        WANT("TORCHELASTIC_MAX_RESTARTS", 2);
#undef WANT
        assert_env(&env, "ROLE_NAME", want[k].role);
        assert_env(&env, "MASTER_ADDR", "hostA");
        assert_env(&env, "MASTER_PORT", "2000");
        assert_env(&env, "TORCHELASTIC_RUN_ID", "application_1_0003");
        tony_env_free(&env);
    }
    json_decref(spec);
}

/* Every task's env says how many processes it runs, whatever the user's
 * envs say; a task of no torch world keeps its variables as they are. */
static void test_nproc_env_is_tonys(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "tensorflow", true);
    add_role(&f, "worker", 1, TONY_ROLE_TRACKED);
    json_t *spec = parse("{\"worker\":[\"h:1\"]}");
    tony_env env = {0};
    tony_env_set(&env, TONY_RUNTIME_NPROC_ENV, "8"); /* the user's own, from tony.execution.envs */
    tony_env_set(&env, "RANK", "5");
    env_of("tensorflow", &f.plan, spec, "worker", 0, &env);
    assert_env(&env, TONY_RUNTIME_NPROC_ENV, "1");
    assert_int_equal(tony_runtime_nproc(&env), 1);
    tony_runtime_process_env(&env, 1);
    assert_env(&env, "RANK", "5");
    assert_env(&env, "LOCAL_RANK", NULL);
    tony_env_free(&env);
    /* an older coordinator's env, without the variable, or a bad one: 1 */
    tony_env none = {0};
    assert_int_equal(tony_runtime_nproc(&none), 1);
    tony_env_set(&none, TONY_RUNTIME_NPROC_ENV, "two");
    assert_int_equal(tony_runtime_nproc(&none), 1);
    tony_env_free(&none);
    json_decref(spec);
}

static void test_pytorch_validate_and_missing_worker(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "pytorch", true);
    add_role(&f, "trainer", 2, TONY_ROLE_TRACKED);
    tony_error err = {{0}};
    assert_int_equal(rt("pytorch")->validate(&f.plan, &err), -1);
    assert_non_null(strstr(err.msg, "tony.worker.instances"));

    /* worker 0 is rank 0: an untracked worker could not host the store */
    init_plan(&f, "pytorch", true);
    add_role(&f, "worker", 1, TONY_ROLE_UNTRACKED);
    assert_int_equal(rt("pytorch")->validate(&f.plan, &err), -1);
    assert_non_null(strstr(err.msg, "untracked.jobtypes"));

    init_plan(&f, "pytorch", true);
    add_role(&f, "worker", 1, TONY_ROLE_TRACKED);
    assert_int_equal(rt("pytorch")->validate(&f.plan, &err), 0);

    /* GANG with a spec that lacks worker 0: an error naming the runtime. */
    json_t *spec = parse("{\"ps\":[\"h:1\"]}");
    tony_runtime_task t = {.plan = &f.plan, .role = "worker", .index = 0, .cluster_spec = spec};
    tony_env env = {0};
    assert_int_equal(tony_runtime_build_env(rt("pytorch"), &t, &env, &err), -1);
    assert_non_null(strstr(err.msg, "pytorch"));
    assert_non_null(strstr(err.msg, "worker:0"));
    tony_env_free(&env);
    json_decref(spec);
}

/* ---- mxnet ---------------------------------------------------------------- */

static void test_mxnet_env(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "mxnet", true);
    add_role(&f, "scheduler", 1, TONY_ROLE_TRACKED);
    add_role(&f, "server", 2, TONY_ROLE_TRACKED);
    add_role(&f, "worker", 3, TONY_ROLE_TRACKED);
    json_t *spec = parse("{\"scheduler\":[\"localhost:9000\"],\"server\":[\"a:1\",\"b:2\"],"
                         "\"worker\":[\"c:3\",\"d:4\",\"e:5\"]}");
    tony_env env = {0};
    env_of("mxnet", &f.plan, spec, "server", 1, &env);
    assert_env(&env, "DMLC_ROLE", "server");
    /* resolved to an IP (IPv4 preferred) */
    assert_env(&env, "DMLC_PS_ROOT_URI", "127.0.0.1");
    assert_env(&env, "DMLC_PS_ROOT_PORT", "9000");
    assert_env(&env, "DMLC_LOCAL", "0");
    assert_env(&env, "DMLC_NUM_SERVER", "2");
    assert_env(&env, "DMLC_NUM_WORKER", "3");
    tony_env_free(&env);
    json_decref(spec);

    tony_error err = {{0}};
    assert_int_equal(rt("mxnet")->validate(&f.plan, &err), 0);
    f.roles[0].instances = 2;
    assert_int_equal(rt("mxnet")->validate(&f.plan, &err), -1);
    assert_non_null(strstr(err.msg, "tony.scheduler.instances"));
    init_plan(&f, "mxnet", true);
    add_role(&f, "worker", 3, TONY_ROLE_TRACKED);
    assert_int_equal(rt("mxnet")->validate(&f.plan, &err), -1);
    assert_non_null(strstr(err.msg, "tony.scheduler.instances"));

    /* An unresolvable scheduler host is an error naming it. */
    init_plan(&f, "mxnet", true);
    add_role(&f, "scheduler", 1, TONY_ROLE_TRACKED);
    spec = parse("{\"scheduler\":[\"no-such-host.invalid:9000\"]}");
    tony_runtime_task t = {.plan = &f.plan, .role = "scheduler", .index = 0, .cluster_spec = spec};
    tony_env env2 = {0};
    assert_int_equal(tony_runtime_build_env(rt("mxnet"), &t, &env2, &err), -1);
    assert_non_null(strstr(err.msg, "no-such-host.invalid"));
    tony_env_free(&env2);
    json_decref(spec);
}

/* ---- jax ------------------------------------------------------------------ */

static void test_jax_env(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "jax", true);
    add_role(&f, "chief", 1, TONY_ROLE_TRACKED);
    add_role(&f, "evaluator", 1, TONY_ROLE_TRACKED);
    add_role(&f, "ps", 1, TONY_ROLE_UNTRACKED);
    add_role(&f, "worker", 2, TONY_ROLE_TRACKED);
    json_t *spec = parse("{\"chief\":[\"c:7000\"],\"evaluator\":[\"e:1\"],\"ps\":[\"p:1\"],"
                         "\"worker\":[\"w0:8000\",\"w1:8001\"]}");
    struct {
        const char *role;
        int index;
        const char *pid;
    } cases[] = {{"chief", 0, "0"}, {"evaluator", 0, "1"}, {"worker", 0, "2"}, {"worker", 1, "3"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tony_env env = {0};
        tony_env_set(&env, "JAX_LOCAL_DEVICE_IDS", "0");
        env_of("jax", &f.plan, spec, cases[i].role, cases[i].index, &env);
        assert_env(&env, "JAX_COORDINATOR_ADDRESS", "c:7000");
        assert_env(&env, "JAX_NUM_PROCESSES", "4");
        assert_env(&env, "JAX_PROCESS_ID", cases[i].pid);
        assert_env(&env, "JAX_LOCAL_DEVICE_IDS", NULL);
        tony_env_free(&env);
    }
    /* ps is not a JAX process */
    tony_env ps = {0};
    env_of("jax", &f.plan, spec, "ps", 0, &ps);
    assert_env(&ps, "JAX_PROCESS_ID", NULL);
    tony_env_free(&ps);
    json_decref(spec);

    /* No chief: worker 0 coordinates and is process 0, even when a role that
     * sorts before "worker" exists. */
    init_plan(&f, "jax", true);
    add_role(&f, "aux", 1, TONY_ROLE_TRACKED);
    add_role(&f, "worker", 2, TONY_ROLE_TRACKED);
    spec = parse("{\"aux\":[\"a:1\"],\"worker\":[\"w0:8000\",\"w1:8001\"]}");
    tony_env w0 = {0}, aux = {0};
    env_of("jax", &f.plan, spec, "worker", 0, &w0);
    env_of("jax", &f.plan, spec, "aux", 0, &aux);
    assert_env(&w0, "JAX_COORDINATOR_ADDRESS", "w0:8000");
    assert_env(&w0, "JAX_PROCESS_ID", "0");
    assert_env(&aux, "JAX_PROCESS_ID", "2");
    assert_env(&aux, "JAX_NUM_PROCESSES", "3");
    tony_env_free(&w0);
    tony_env_free(&aux);
    json_decref(spec);
}

/* The executor's Python files: none for a task that is no JAX process;
 * for one, tony's cluster, the hook that imports it and the sitecustomize
 * that imports the hook at start, first on PYTHONPATH before what the task
 * already had. */
static void test_jax_python_files(void **state) {
    (void)state;
    char tmpl[] = "/tmp/test_runtime_py.XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    char *dir = tony_path_join(tmpl, "py");
    tony_error err = {{0}};
    tony_env env = {0};
    tony_env_set(&env, "PYTHONPATH", "/mine");
    assert_int_equal(tony_runtime_prepare_env(dir, &env, &err), 0);
    assert_false(tony_file_exists(dir));
    assert_env(&env, "PYTHONPATH", "/mine");
    assert_env(&env, "TONY_ENV_FILES", NULL);

    tony_env_set(&env, "JAX_PROCESS_ID", "1");
    assert_int_equal(tony_runtime_prepare_env(dir, &env, &err), 0);
    char *want = tony_sprintf("%s:/mine", dir);
    assert_env(&env, "PYTHONPATH", want);
    assert_env(&env, "TONY_ENV_FILES", NULL); /* nothing too long */
    char *site = tony_path_join(dir, "sitecustomize.py"), *cluster = tony_path_join(dir, "tony_jax_cluster.py");
    char *hook = tony_path_join(dir, "tony_jax_hook.py");
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(tony_read_file(cluster, &text, &len, &err), 0);
    assert_non_null(strstr(text, "class TonyCluster(clusters.ClusterEnv)"));
    assert_non_null(strstr(text, "os.environ[\"JAX_NUM_PROCESSES\"]"));
    free(text);
    assert_int_equal(tony_read_file(hook, &text, &len, &err), 0);
    assert_non_null(strstr(text, "import tony_jax_cluster"));
    free(text);
    /* the hook is imported at start, the cluster only by the hook */
    assert_int_equal(tony_read_file(site, &text, &len, &err), 0);
    assert_non_null(strstr(text, "_TONY_AT_START = (\"tony_jax_hook\", )"));
    assert_non_null(strstr(text, "_tony_next_sitecustomize()"));
    free(text);

    /* a dir that cannot be made: an error naming what is lost */
    tony_env_unset(&env, "PYTHONPATH");
    char *bad = tony_path_join(site, "sub"); /* under a regular file */
    assert_int_equal(tony_runtime_prepare_env(bad, &env, &err), -1);
    assert_non_null(strstr(err.msg, "the jax runtime's Python start-up"));
    tony_rm_rf(tmpl, &err);
    free(bad);
    free(site);
    free(cluster);
    free(hook);
    free(want);
    free(dir);
    tony_env_free(&env);
}

/* ---- xgboost -------------------------------------------------------------- */

static void test_xgboost_env(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "xgboost", true);
    add_role(&f, "worker", 2, TONY_ROLE_TRACKED);
    json_t *spec = parse("{\"worker\":[\"w0:9091\",\"w1:9092\"]}");
    tony_env e0 = {0}, e1 = {0};
    env_of("xgboost", &f.plan, spec, "worker", 0, &e0);
    env_of("xgboost", &f.plan, spec, "worker", 1, &e1);
    assert_env(&e0, "TONY_XGBOOST_TRACKER", "1");
    assert_env(&e1, "TONY_XGBOOST_TRACKER", NULL);
    for (int i = 0; i < 2; i++) {
        tony_env *e = i ? &e1 : &e0;
        assert_env(e, "DMLC_TRACKER_URI", "w0");
        assert_env(e, "DMLC_TRACKER_PORT", "9091");
        assert_env(e, "DMLC_NUM_WORKER", "2");
        assert_env(e, "DMLC_TASK_ID", i ? "1" : "0");
    }
    tony_env_free(&e0);
    tony_env_free(&e1);
    json_decref(spec);
}

/* ---- standalone / generic ------------------------------------------------- */

static void test_standalone_validate(void **state) {
    (void)state;
    fixture f;
    tony_error err = {{0}};
    init_plan(&f, "standalone", true);
    add_role(&f, "worker", 1, TONY_ROLE_TRACKED);
    assert_int_equal(rt("standalone")->validate(&f.plan, &err), 0);

    init_plan(&f, "standalone", true);
    add_role(&f, "ps", 1, TONY_ROLE_UNTRACKED);
    add_role(&f, "worker", 2, TONY_ROLE_TRACKED);
    assert_int_equal(rt("standalone")->validate(&f.plan, &err), -1);
    assert_true(tony_str_starts_with(err.msg, "standalone framework runs exactly one task; found 3 instances ("));
    assert_non_null(strstr(err.msg, "tony.worker.instances=2"));
    assert_non_null(strstr(err.msg, "tony.ps.instances=1"));
    assert_true(tony_str_ends_with(err.msg, "Use another framework or set the instances to 1"));

    /* No extra env. */
    init_plan(&f, "standalone", true);
    add_role(&f, "worker", 1, TONY_ROLE_TRACKED);
    json_t *spec = parse("{\"worker\":[\"h:1\"]}");
    tony_env env = {0};
    env_of("standalone", &f.plan, spec, "worker", 0, &env);
    assert_env(&env, "TF_CONFIG", NULL);
    assert_env(&env, "INIT_METHOD", NULL);
    assert_env(&env, "JOB_NAME", "worker");
    tony_env_free(&env);

    tony_env g = {0};
    env_of("generic", &f.plan, spec, "worker", 0, &g);
    assert_env(&g, "TF_CONFIG", NULL);
    assert_env(&g, "IS_CHIEF", "true");
    assert_env(&g, "TASK_NUM", "1");
    assert_non_null(tony_env_get(&g, "CLUSTER_SPEC"));
    tony_env_free(&g);
    json_decref(spec);
}

/* ---- lock-step, lookup ---------------------------------------------------- */

static void test_lockstep(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "tensorflow", true);
    add_role(&f, "worker", 2, TONY_ROLE_TRACKED);
    assert_true(rt("tensorflow")->lockstep(&f.plan));
    assert_true(rt("pytorch")->lockstep(&f.plan));
    assert_true(rt("jax")->lockstep(&f.plan));
    assert_true(rt("xgboost")->lockstep(&f.plan));
    assert_false(rt("mxnet")->lockstep(&f.plan));
    assert_false(rt("generic")->lockstep(&f.plan));
    assert_false(rt("standalone")->lockstep(&f.plan));
    init_plan(&f, "tensorflow", true);
    add_role(&f, "ps", 1, TONY_ROLE_UNTRACKED);
    add_role(&f, "worker", 2, TONY_ROLE_TRACKED);
    assert_false(rt("tensorflow")->lockstep(&f.plan));
}

/* Two hosts, three workers: host a has workers 0 and 2, host b has worker 1. */
static void test_horovod_placement_and_scopes(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "horovod", true);
    add_role(&f, "worker", 3, TONY_ROLE_TRACKED);
    json_t *spec = json_pack("{s:[s,s,s]}", "worker", "a:1", "b:2", "a:3");
    const tony_runtime *h = rt("horovod");
    assert_true(h->lockstep(&f.plan));
    tony_env env = {0};
    tony_runtime_task t = {.plan = &f.plan, .role = "worker", .index = 2, .cluster_spec = spec,
                           .rendezvous_host = "coord", .rendezvous_port = 4242};
    tony_error err;
    assert_int_equal(h->task_env(&t, &env, &err), 0);
    assert_string_equal(tony_env_get(&env, "HOROVOD_RANK"), "2");
    assert_string_equal(tony_env_get(&env, "HOROVOD_SIZE"), "3");
    assert_string_equal(tony_env_get(&env, "HOROVOD_LOCAL_RANK"), "1");
    assert_string_equal(tony_env_get(&env, "HOROVOD_LOCAL_SIZE"), "2");
    /* local rank 1 exists on host a only */
    assert_string_equal(tony_env_get(&env, "HOROVOD_CROSS_RANK"), "0");
    assert_string_equal(tony_env_get(&env, "HOROVOD_CROSS_SIZE"), "1");
    assert_string_equal(tony_env_get(&env, "HOROVOD_HOSTNAME"), "a");
    assert_string_equal(tony_env_get(&env, "HOROVOD_GLOO_RENDEZVOUS_ADDR"), "coord");
    assert_string_equal(tony_env_get(&env, "HOROVOD_GLOO_RENDEZVOUS_PORT"), "4242");
    assert_string_equal(tony_env_get(&env, "HOROVOD_CONTROLLER"), "gloo");
    tony_env_free(&env);
    t.index = 1; /* host b, local rank 0, second host with a local rank 0 */
    assert_int_equal(h->task_env(&t, &env, &err), 0);
    assert_string_equal(tony_env_get(&env, "HOROVOD_CROSS_RANK"), "1");
    assert_string_equal(tony_env_get(&env, "HOROVOD_CROSS_SIZE"), "2");
    tony_env_free(&env);
    json_t *scopes = h->rendezvous_scopes(spec);
    assert_int_equal(json_integer_value(json_object_get(scopes, "global")), 3);
    assert_int_equal(json_integer_value(json_object_get(scopes, "local_a")), 2);
    assert_int_equal(json_integer_value(json_object_get(scopes, "local_b")), 1);
    assert_int_equal(json_integer_value(json_object_get(scopes, "cross_0")), 2);
    assert_int_equal(json_integer_value(json_object_get(scopes, "cross_1")), 1);
    json_decref(scopes);
    json_decref(spec);
    f.plan.gang = false;
    assert_int_not_equal(h->validate(&f.plan, &err), 0);
    assert_non_null(strstr(err.msg, "GANG"));
}

static void test_find_suggest_names(void **state) {
    (void)state;
    assert_ptr_equal(tony_runtime_find("TensorFlow"), tony_runtime_find("tensorflow"));
    assert_string_equal(tony_runtime_find("PYTORCH")->name, "pytorch");
    assert_string_equal(tony_runtime_find("Horovod")->name, "horovod");
    assert_null(tony_runtime_find("caffe"));
    assert_null(tony_runtime_find(NULL));
    assert_string_equal(tony_runtime_suggest("tensorflw"), "tensorflow");
    assert_string_equal(tony_runtime_suggest("pytorh"), "pytorch");
    assert_string_equal(tony_runtime_suggest("MXNET2"), "mxnet");
    assert_string_equal(tony_runtime_suggest("xgb00st"), "xgboost");

    /* every listed name is found, and carries that name */
    tony_strv names = {0};
    tony_split_csv(tony_runtime_names(), &names);
    assert_int_equal(names.len, 8);
    for (size_t i = 0; i < names.len; i++) {
        const tony_runtime *r = tony_runtime_find(names.items[i]);
        assert_non_null(r);
        assert_string_equal(r->name, names.items[i]);
        assert_non_null(r->lockstep);
    }
    tony_strv_free(&names);
}

/* ---- the exec limits (MAX_ARG_STRLEN, ARG_MAX) ------------------------- */

static void assert_contains(const char *hay, const char *needle) {
    if (!strstr(hay, needle)) fail_msg("'%s' lacks '%s'", hay, needle);
}

static size_t string_max(void) { return (size_t)sysconf(_SC_PAGESIZE) * 32; }

/* TF_CONFIG and CLUSTER_SPEC list every task: past a few thousand tasks
 * they pass the kernel's 32 pages. The submit-time check accepts the plan
 * and names them as the variables that will reach the tasks by file. */
static void test_exec_limit_big_plan_by_file(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "tensorflow", true);
    add_role(&f, "worker", 100, TONY_ROLE_TRACKED);
    tony_error err = {{0}};
    tony_strv by_file = {0};
    if (tony_runtime_check_exec(&f.plan, &by_file, &err)) fail_msg("100 workers refused: %s", err.msg);
    assert_int_equal(by_file.len, 0);

    /* 7,200 loopback entries fit (TF_CONFIG ~ 129.6 KB), 10,000 do not */
    f.roles[0].instances = 7200;
    if (tony_runtime_check_exec(&f.plan, &by_file, &err)) fail_msg("7200 workers refused: %s", err.msg);
    assert_int_equal(by_file.len, 0);
    f.roles[0].instances = 10000;
    if (tony_runtime_check_exec(&f.plan, &by_file, &err)) fail_msg("10000 workers refused: %s", err.msg);
    assert_int_equal(by_file.len, 2);
    assert_string_equal(by_file.items[0], "CLUSTER_SPEC");
    assert_string_equal(by_file.items[1], "TF_CONFIG");
    tony_strv_free(&by_file);

    /* FCFS tasks get no cluster spec: nothing grows with the count */
    f.plan.gang = false;
    if (tony_runtime_check_exec(&f.plan, &by_file, &err)) fail_msg("FCFS refused: %s", err.msg);
    assert_int_equal(by_file.len, 0);
}

/* What the executor does with a 10,000-worker TensorFlow task's env: no
 * string over the limit is left, each long one is in its own 0600 file
 * with the exact value, TONY_ENV_FILES lists them (a name that is no plain
 * one gets a file name of its own), and tony's sitecustomize, which sets
 * them in os.environ, is first on PYTHONPATH. */
static void test_prepare_env_sends_long_strings_by_file(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "tensorflow", true);
    add_role(&f, "worker", 10000, TONY_ROLE_TRACKED);
    json_t *spec = tony_runtime_placeholder_spec(&f.plan);
    tony_env env = {0};
    size_t smax = string_max();
    char *odd = malloc(smax + 1);
    memset(odd, 'o', smax);
    odd[smax] = '\0';
    tony_env_set(&env, "MY.ODD", odd);
    tony_env_set(&env, "SMALL", "1");
    env_of("tensorflow", &f.plan, spec, "worker", 9999, &env);
    char *tf = tony_strdup(tony_env_get(&env, "TF_CONFIG")), *cs = tony_strdup(tony_env_get(&env, "CLUSTER_SPEC"));
    assert_true(strlen(tf) > smax);

    char tmpl[] = "/tmp/test_runtime_env.XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    char *dir = tony_path_join(tmpl, "boot");
    tony_error err = {{0}};
    if (tony_runtime_prepare_env(dir, &env, &err)) fail_msg("prepare_env: %s", err.msg);
    for (size_t k = 0; k < env.kv.len; k++)
        if (strlen(env.kv.items[k]) + 1 > smax) fail_msg("%.40s... is still over the limit", env.kv.items[k]);
    assert_env(&env, "TF_CONFIG", NULL);
    assert_env(&env, "CLUSTER_SPEC", NULL);
    assert_env(&env, "MY.ODD", NULL);
    assert_env(&env, "SMALL", "1");
    assert_env(&env, "TASK_INDEX", "9999");
    char *want =
        tony_sprintf("MY.ODD=%s/env/var0:CLUSTER_SPEC=%s/env/CLUSTER_SPEC:TF_CONFIG=%s/env/TF_CONFIG", dir, dir, dir);
    assert_env(&env, "TONY_ENV_FILES", want);
    assert_env(&env, "PYTHONPATH", dir);

    const char *files[] = {"TF_CONFIG", "CLUSTER_SPEC", "var0"};
    const char *values[] = {tf, cs, odd};
    for (int i = 0; i < 3; i++) {
        char *path = tony_sprintf("%s/env/%s", dir, files[i]), *text = NULL;
        size_t len = 0;
        assert_int_equal(tony_read_file(path, &text, &len, &err), 0);
        assert_int_equal(len, strlen(values[i]));
        assert_memory_equal(text, values[i], len);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        free(text);
        free(path);
    }
    char *site = tony_path_join(dir, "sitecustomize.py"), *text = NULL;
    size_t len = 0;
    assert_int_equal(tony_read_file(site, &text, &len, &err), 0);
    assert_non_null(strstr(text, "_TONY_AT_START = ()"));
    assert_non_null(strstr(text, "\"TONY_ENV_FILES\""));
    free(text);
    free(site);

    tony_rm_rf(tmpl, &err);
    free(want);
    free(dir);
    free(tf);
    free(cs);
    free(odd);
    tony_env_free(&env);
    json_decref(spec);
}

/* The coordinator builds each task's env with the real hosts through the
 * same function: with cluster-length host names 5,000 workers pass the
 * limit, and the env is built all the same (the executor moves TF_CONFIG). */
static void test_exec_limit_real_hosts(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "tensorflow", true);
    add_role(&f, "worker", 5000, TONY_ROLE_TRACKED);
    json_t *spec = json_object(), *arr = json_array();
    for (int i = 0; i < 5000; i++) json_array_append_new(arr, json_sprintf("node%04d.rack42.dc1.example.com:40000", i));
    json_object_set_new(spec, "worker", arr);
    tony_env env = {0};
    tony_runtime_task t = {.plan = &f.plan, .role = "worker", .index = 7, .cluster_spec = spec};
    tony_error err = {{0}};
    if (tony_runtime_build_env(rt("tensorflow"), &t, &env, &err)) fail_msg("5000 workers refused: %s", err.msg);
    assert_true(strlen(tony_env_get(&env, "TF_CONFIG")) > string_max());
    tony_env_free(&env);
    json_decref(spec);
}

/* A user's own variable over the limit: through tony.execution.envs (go's
 * env) it goes by file; through tony.containers.envs the container itself
 * would be exec'd with it, so the plan is refused naming the key. */
static void test_exec_limit_user_variable(void **state) {
    (void)state;
    fixture f;
    init_plan(&f, "generic", true);
    add_role(&f, "worker", 1, TONY_ROLE_TRACKED);
    size_t n = string_max();
    char *big = malloc(n + 1);
    memset(big, 'x', n);
    big[n] = '\0';
    tony_env_set(&f.plan.shell_env, "BIG", big);
    tony_error err = {{0}};
    tony_strv by_file = {0};
    if (tony_runtime_check_exec(&f.plan, &by_file, &err)) fail_msg("refused: %s", err.msg);
    assert_int_equal(by_file.len, 1);
    assert_string_equal(by_file.items[0], "BIG");
    tony_strv_free(&by_file);

    tony_env_set(&f.plan.container_env, "BIG", big);
    assert_int_equal(tony_runtime_check_exec(&f.plan, &by_file, &err), -1);
    char want[160];
    snprintf(want, sizeof want, "BIG (tony.containers.envs) would be %zu bytes in the env of worker:0's container",
             n + 5);
    assert_contains(err.msg, want);
    assert_contains(err.msg, "MAX_ARG_STRLEN");
    assert_contains(err.msg, "Set it in tony.execution.envs instead");
    tony_strv_free(&by_file);
    tony_env_free(&f.plan.shell_env);
    tony_env_free(&f.plan.container_env);
    free(big);
}

/* Every string under 32 pages, but together over ARG_MAX: the user's own
 * tony.execution.envs, too big to exec with the command. */
static void test_exec_limit_arg_max(void **state) {
    (void)state;
    long amax = sysconf(_SC_ARG_MAX);
    if (amax <= 0 || amax > 64L * 1024 * 1024) skip();
    fixture f;
    init_plan(&f, "generic", true);
    add_role(&f, "worker", 2, TONY_ROLE_TRACKED);
    size_t vlen = 100000;
    char *big = malloc(vlen + 1);
    memset(big, 'x', vlen);
    big[vlen] = '\0';
    for (long i = 0; i <= amax / (long)vlen; i++) {
        char key[32];
        snprintf(key, sizeof key, "BIG_%ld", i);
        tony_env_set(&f.plan.shell_env, key, big);
    }
    free(big);
    tony_error err = {{0}};
    assert_int_equal(tony_runtime_check_exec(&f.plan, NULL, &err), -1);
    assert_contains(err.msg, "ARG_MAX");
    assert_contains(err.msg, "tony.execution.envs");
    tony_env_free(&f.plan.shell_env);
}

static void test_cluster_spec_helpers(void **state) {
    (void)state;
    json_t *spec = parse("{\"worker\":[\"h0:10\",\"[::1]:20\",\"null:0\",\"bad\",\"h4:99999\"],\"ps\":[]}");
    char *host = NULL;
    int port = 0;
    assert_int_equal(tony_cluster_spec_count(spec, "worker"), 5);
    assert_int_equal(tony_cluster_spec_count(spec, "ps"), 0);
    assert_int_equal(tony_cluster_spec_count(spec, "chief"), 0);
    assert_int_equal(tony_cluster_spec_count(NULL, "worker"), 0);
    assert_int_equal(tony_cluster_spec_addr(spec, "worker", 0, &host, &port), 0);
    assert_string_equal(host, "h0");
    assert_int_equal(port, 10);
    free(host);
    assert_int_equal(tony_cluster_spec_addr(spec, "worker", 1, &host, &port), 0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 20);
    free(host);
    host = NULL;
    assert_int_equal(tony_cluster_spec_addr(spec, "worker", 2, &host, &port), -1);
    assert_int_equal(tony_cluster_spec_addr(spec, "worker", 3, &host, &port), -1);
    assert_int_equal(tony_cluster_spec_addr(spec, "worker", 4, &host, &port), -1);
    assert_int_equal(tony_cluster_spec_addr(spec, "worker", 5, &host, &port), -1);
    assert_int_equal(tony_cluster_spec_addr(spec, "worker", -1, &host, &port), -1);
    assert_int_equal(tony_cluster_spec_addr(spec, "ps", 0, &host, &port), -1);
    assert_int_equal(tony_cluster_spec_addr(NULL, "ps", 0, &host, &port), -1);
    assert_null(host);
    json_decref(spec);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tf_ps_worker),
        cmocka_unit_test(test_tf_chief_evaluator_tensorboard),
        cmocka_unit_test(test_tf_fcfs_has_no_tf_config),
        cmocka_unit_test(test_memo_same_env),
        cmocka_unit_test(test_pytorch_env),
        cmocka_unit_test(test_pytorch_multi_role),
        cmocka_unit_test(test_pytorch_restart),
        cmocka_unit_test(test_pytorch_nproc),
        cmocka_unit_test(test_nproc_env_is_tonys),
        cmocka_unit_test(test_pytorch_validate_and_missing_worker),
        cmocka_unit_test(test_mxnet_env),
        cmocka_unit_test(test_jax_env),
        cmocka_unit_test(test_jax_python_files),
        cmocka_unit_test(test_xgboost_env),
        cmocka_unit_test(test_standalone_validate),
        cmocka_unit_test(test_lockstep),
        cmocka_unit_test(test_horovod_placement_and_scopes),
        cmocka_unit_test(test_find_suggest_names),
        cmocka_unit_test(test_cluster_spec_helpers),
        cmocka_unit_test(test_exec_limit_big_plan_by_file),
        cmocka_unit_test(test_prepare_env_sends_long_strings_by_file),
        cmocka_unit_test(test_exec_limit_real_hosts),
        cmocka_unit_test(test_exec_limit_user_variable),
        cmocka_unit_test(test_exec_limit_arg_max),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
