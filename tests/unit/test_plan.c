/* Unit tests of the job plan: roles and their kinds, chief selection, limits,
 * number validation, framework lookup, stages, single-node mode and the
 * lock-step setting, each checked through the error text a user would see. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf/conf.h"
#include "conf/plan.h"
#include "runtime/runtime.h"
#include "conf_pairs.h"

/* Builds a plan that must succeed. */
static void plan_ok(tony_conf *c, tony_plan *p) {
    tony_error err = {{0}};
    if (tony_runtime_plan(c, p, &err)) fail_msg("plan failed: %s", err.msg);
}

/* Builds a plan that must fail, and checks the message holds every needle. */
static void plan_fails(tony_conf *c, const char *const *needles) {
    tony_error err = {{0}};
    tony_plan p;
    if (tony_runtime_plan(c, &p, &err) == 0) {
        tony_plan_free(&p);
        fail_msg("plan unexpectedly succeeded (expected \"%s\")", needles[0]);
    }
    for (int i = 0; needles[i]; i++) assert_contains(err.msg, needles[i]);
    /* A failed build leaves nothing to free. */
    assert_int_equal(p.nroles, 0);
    assert_null(p.roles);
    tony_conf_free(c);
}

#define FAILS(c, ...) plan_fails((c), (const char *const[]){__VA_ARGS__, NULL})

static void test_roles(void **state) {
    (void)state;
    tony_conf *c = CONF("tony.containers.command=python train.py", "tony.worker.instances=2", "tony.ps.instances=1",
                        "tony.chief.instances=1", "tony.evaluator.instances=0", "tony.worker.memory=4g",
                        "tony.worker.vcores=3", "tony.worker.gpus=2", "tony.task.max-total-gpus=-1",
                        "tony.ps.command=python ps.py", "tony.worker.resources=w.zip#archive",
                        "tony.containers.resources=common.txt", "tony.worker.node-label=gpu",
                        "tony.execution.envs=A=1,B = 2", "tony.containers.envs=C=3",
                        "tony.application.tensorboard-log-dir=/tmp/tb", "tony.am.memory=1g");
    tony_plan p;
    plan_ok(c, &p);
    assert_int_equal(p.nroles, 3);
    assert_string_equal(p.roles[0].name, "chief");
    assert_string_equal(p.roles[1].name, "ps");
    assert_string_equal(p.roles[2].name, "worker");
    assert_null(tony_plan_role(&p, "evaluator"));
    assert_int_equal(tony_plan_total_instances(&p), 4);
    assert_false(p.single_node);
    assert_string_equal(p.framework, "tensorflow");
    assert_true(p.gang);
    assert_false(p.has_stages);

    const tony_role *w = tony_plan_role(&p, "worker");
    assert_non_null(w);
    assert_int_equal(w->instances, 2);
    assert_int_equal(w->memory_mb, 4096);
    assert_int_equal(w->vcores, 3);
    assert_int_equal(w->gpus, 2);
    assert_string_equal(w->command, "python train.py");
    assert_string_equal(w->resources, "w.zip#archive,common.txt");
    assert_string_equal(w->node_label, "gpu");
    assert_null(w->docker_image);
    assert_int_equal(w->stage, TONY_STAGE_TRAINING);

    const tony_role *ps = tony_plan_role(&p, "ps");
    assert_string_equal(ps->command, "python ps.py");
    assert_int_equal(ps->memory_mb, 2048);
    assert_int_equal(ps->vcores, 1);
    assert_int_equal(ps->gpus, 0);
    assert_string_equal(ps->resources, "common.txt");
    assert_null(ps->node_label);

    const tony_role *chief = tony_plan_role(&p, "chief");
    assert_int_equal(chief->memory_mb, 2048); /* the type-generic default */

    assert_string_equal(tony_env_get(&p.shell_env, "A"), "1");
    assert_string_equal(tony_env_get(&p.shell_env, "B"), "2");
    assert_string_equal(tony_env_get(&p.container_env, "C"), "3");
    assert_null(tony_env_get(&p.shell_env, "C"));
    assert_string_equal(p.tensorboard_log_dir, "/tmp/tb");
    assert_int_equal(p.am_memory_mb, 1024);
    assert_int_equal(p.am_vcores, 1);
    assert_int_equal(p.am_gpus, 0);
    assert_string_equal(p.am_command, "python train.py");
    assert_int_equal(p.heartbeat_interval_ms, 1000);
    assert_int_equal(p.max_missed_heartbeats, 25);
    assert_int_equal(p.metrics_interval_ms, 5000);
    assert_int_equal(p.retry_count, 0);
    assert_int_equal(p.app_timeout_ms, 0);
    assert_int_equal(p.execution_timeout_ms, 0);
    assert_true(p.registration_timeout_ms <= 0);
    assert_false(p.fail_on_worker_failure);
    tony_plan_free(&p);
    tony_plan_free(&p); /* freeing twice is harmless */
    tony_conf_free(c);
}

static void test_docker(void **state) {
    (void)state;
    tony_conf *c = CONF("tony.containers.command=x", "tony.worker.instances=1", "tony.ps.instances=1",
                        "tony.docker.enabled=true", "tony.docker.containers.image=base:1",
                        "tony.docker.worker.image=gpu:2");
    tony_plan p;
    plan_ok(c, &p);
    assert_string_equal(tony_plan_role(&p, "worker")->docker_image, "gpu:2");
    assert_string_equal(tony_plan_role(&p, "ps")->docker_image, "base:1");
    tony_plan_free(&p);
    tony_conf_set(c, "tony.docker.enabled", "false", "t");
    plan_ok(c, &p);
    assert_null(tony_plan_role(&p, "worker")->docker_image);
    tony_plan_free(&p);
    tony_conf_free(c);
}

static void test_kinds(void **state) {
    (void)state;
    tony_conf *c = CONF("tony.containers.command=x", "tony.worker.instances=3", "tony.ps.instances=2",
                        "tony.tensorboard.instances=1", "tony.evaluator.instances=1");
    tony_plan p;
    plan_ok(c, &p);
    assert_int_equal(tony_plan_role(&p, "worker")->kind, TONY_ROLE_TRACKED);
    assert_int_equal(tony_plan_role(&p, "evaluator")->kind, TONY_ROLE_TRACKED);
    assert_int_equal(tony_plan_role(&p, "ps")->kind, TONY_ROLE_UNTRACKED);
    assert_int_equal(tony_plan_role(&p, "tensorboard")->kind, TONY_ROLE_SIDECAR);
    assert_true(tony_plan_role(&p, "ps")->stop_on_failure);
    assert_false(tony_plan_role(&p, "worker")->stop_on_failure);
    assert_int_equal(tony_plan_tracked_tasks(&p), 4);
    assert_int_equal(tony_plan_total_instances(&p), 7);
    assert_string_equal(tony_role_kind_name(TONY_ROLE_TRACKED), "tracked");
    assert_string_equal(tony_role_kind_name(TONY_ROLE_UNTRACKED), "untracked");
    assert_string_equal(tony_role_kind_name(TONY_ROLE_SIDECAR), "sidecar");
    tony_plan_free(&p);

    /* Sidecar wins over untracked; the lists are configurable. */
    tony_conf_set(c, "tony.application.untracked.jobtypes", "evaluator, tensorboard", "t");
    tony_conf_set(c, "tony.application.stop-on-failure-jobtypes", "worker", "t");
    tony_conf_set(c, "tony.application.fail-on-worker-failure-enabled", "true", "t");
    plan_ok(c, &p);
    assert_int_equal(tony_plan_role(&p, "ps")->kind, TONY_ROLE_TRACKED);
    assert_int_equal(tony_plan_role(&p, "evaluator")->kind, TONY_ROLE_UNTRACKED);
    assert_int_equal(tony_plan_role(&p, "tensorboard")->kind, TONY_ROLE_SIDECAR);
    assert_true(tony_plan_role(&p, "worker")->stop_on_failure);
    assert_false(tony_plan_role(&p, "ps")->stop_on_failure);
    assert_true(p.fail_on_worker_failure);
    tony_plan_free(&p);
    tony_conf_free(c);
}

static void test_chief(void **state) {
    (void)state;
    tony_conf *c = CONF("tony.containers.command=x", "tony.worker.instances=2", "tony.ps.instances=1");
    tony_plan p;
    plan_ok(c, &p);
    assert_true(tony_plan_is_chief(&p, "worker", 0));
    assert_false(tony_plan_is_chief(&p, "worker", 1));
    assert_false(tony_plan_is_chief(&p, "ps", 0));
    tony_plan_free(&p);

    tony_conf_set(c, "tony.chief.instances", "2", "t");
    plan_ok(c, &p);
    assert_true(tony_plan_is_chief(&p, "chief", 0));
    assert_true(tony_plan_is_chief(&p, "chief", 1));
    assert_false(tony_plan_is_chief(&p, "worker", 0));
    tony_plan_free(&p);

    /* A chief type with no instances is no chief. */
    tony_conf_set(c, "tony.chief.instances", "0", "t");
    plan_ok(c, &p);
    assert_true(tony_plan_is_chief(&p, "worker", 0));
    tony_plan_free(&p);
    tony_conf_free(c);
}

static void test_limits(void **state) {
    (void)state;
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=2", "tony.worker.gpus=2",
               "tony.task.max-total-gpus=2"),
          "Total amount of gpus (4) requested exceeds maximum allowed of 2 (tony.task.max-total-gpus)");
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=3", "tony.ps.instances=1",
               "tony.task.max-total-instances=3"),
          "Total number of instances (4) requested exceeds maximum allowed of 3 (tony.task.max-total-instances)");
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=5", "tony.worker.max-instances=4"),
          "tony.worker.instances (5)", "tony.worker.max-instances");
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=3", "tony.task.max-total-memory=4g"),
          "Total amount of memory (6144) requested exceeds maximum allowed of 4096 (tony.task.max-total-memory)");
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=3", "tony.worker.vcores=2", "tony.ps.instances=1",
               "tony.task.max-total-vcores=6"),
          "Total amount of vcores (7) requested exceeds maximum allowed of 6 (tony.task.max-total-vcores)");
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=1", "tony.task.max-total-gpus=two"),
          "tony.task.max-total-gpus", "'two'");

    /* At the limit is fine, and instances are summed, not squared. */
    tony_conf *c = CONF("tony.containers.command=x", "tony.worker.instances=3", "tony.task.max-total-instances=3",
                        "tony.worker.gpus=1", "tony.task.max-total-gpus=3", "tony.task.max-total-memory=6g",
                        "tony.worker.max-instances=3", "tony.ps.max-instances=0");
    tony_plan p;
    plan_ok(c, &p);
    tony_plan_free(&p);
    /* -1 means no limit. */
    tony_conf_set(c, "tony.task.max-total-memory", "-1", "t");
    tony_conf_set(c, "tony.task.max-total-instances", "-1", "t");
    tony_conf_set(c, "tony.worker.instances", "30", "t");
    tony_conf_set(c, "tony.task.max-total-gpus", "-1", "t");
    tony_conf_set(c, "tony.worker.max-instances", "-1", "t");
    plan_ok(c, &p);
    tony_plan_free(&p);
    tony_conf_free(c);
}

static void test_bad_numbers(void **state) {
    (void)state;
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=-1"),
          "tony.worker.instances must be a non-negative integer, got '-1'");
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=two"), "tony.worker.instances", "'two'");
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=1", "tony.worker.vcores=-2"),
          "tony.worker.vcores must be a non-negative integer, got '-2'");
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=1", "tony.worker.gpus=1.5"), "tony.worker.gpus",
          "'1.5'");
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=1", "tony.worker.memory=-1g"),
          "tony.worker.memory", "'-1g'");
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=1", "tony.worker.memory=2k"),
          "tony.worker.memory", "'2k'");
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=99999999999"), "tony.worker.instances");
    FAILS(CONF("tony.containers.command=x", "tony.am.memory=lots"), "tony.am.memory", "'lots'");
    FAILS(CONF("tony.containers.command=x", "tony.am.retry-count=-1"), "tony.am.retry-count", "'-1'");
    FAILS(CONF("tony.containers.command=x", "tony.task.heartbeat-interval-ms=0"), "tony.task.heartbeat-interval-ms",
          "'0'");
    FAILS(CONF("tony.containers.command=x", "tony.task.max-missed-heartbeats=0"), "tony.task.max-missed-heartbeats",
          "'0'");
    FAILS(CONF("tony.containers.command=x", "tony.application.timeout=soon"), "tony.application.timeout", "'soon'");
    FAILS(CONF("tony.containers.command=x", "tony.am.recovery-timeout-ms=-5"), "tony.am.recovery-timeout-ms",
          "0 (off)", "'-5'");
    FAILS(CONF("tony.containers.command=x", "tony.am.recovery-timeout-ms=later"), "tony.am.recovery-timeout-ms",
          "'later'");
    FAILS(CONF("tony.containers.command=x", "tony.docker.enabled=maybe"), "tony.docker.enabled", "'maybe'");
    FAILS(CONF("tony.containers.command=x", "tony.application.distributed-mode=ALL"),
          "tony.application.distributed-mode", "GANG", "FCFS", "'ALL'");
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=1", "tony.worker.resources=a::b::c"),
          "tony.worker.resources", "'a::b::c'");
    FAILS(CONF("tony.containers.command=x", "tony.execution.envs==oops"), "tony.execution.envs", "'=oops'");

    /* Instances of a type that is off (0) still have to be numbers, but its
     * other keys are not read. */
    tony_conf *c = CONF("tony.containers.command=x", "tony.worker.instances=1", "tony.ps.instances=0",
                        "tony.ps.memory=junk", "tony.application.distributed-mode=fcfs");
    tony_plan p;
    plan_ok(c, &p);
    assert_false(p.gang);
    tony_plan_free(&p);
    tony_conf_free(c);
}

static void test_framework(void **state) {
    (void)state;
    FAILS(CONF("tony.containers.command=x", "tony.application.framework=tensorflw"),
          "tony.application.framework: unknown framework 'tensorflw'; did you mean 'tensorflow'? Known: ",
          "pytorch");
    /* No "did you mean" for a name nothing like a framework. */
    FAILS(CONF("tony.containers.command=x", "tony.application.framework=foo"),
          "tony.application.framework: unknown framework 'foo'. Known: tensorflow");
    tony_conf *c = CONF("tony.containers.command=x", "tony.worker.instances=2", "tony.application.framework=PyTorch");
    tony_plan p;
    plan_ok(c, &p);
    assert_string_equal(p.framework, "pytorch");
    tony_plan_free(&p);
    tony_conf_free(c);
    /* The runtime's own rules apply: standalone runs exactly one task. */
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=2", "tony.application.framework=standalone"),
          "standalone");
}

static void test_stages(void **state) {
    (void)state;
    tony_conf *c = CONF("tony.containers.command=x", "tony.worker.instances=2", "tony.ps.instances=1",
                        "tony.dbloader.instances=1", "tony.application.prepare-stage=dbloader");
    tony_plan p;
    plan_ok(c, &p);
    assert_true(p.has_stages);
    assert_int_equal(tony_plan_role(&p, "dbloader")->stage, TONY_STAGE_PREPARE);
    assert_int_equal(tony_plan_role(&p, "worker")->stage, TONY_STAGE_TRAINING);
    assert_int_equal(tony_plan_role(&p, "ps")->stage, TONY_STAGE_TRAINING);
    tony_plan_free(&p);

    /* Only the training stage given: the rest is the prepare stage. */
    tony_conf_unset(c, "tony.application.prepare-stage");
    tony_conf_set(c, "tony.application.training-stage", "worker,ps", "t");
    plan_ok(c, &p);
    assert_int_equal(tony_plan_role(&p, "dbloader")->stage, TONY_STAGE_PREPARE);
    assert_int_equal(tony_plan_role(&p, "worker")->stage, TONY_STAGE_TRAINING);
    assert_int_equal(tony_plan_role(&p, "ps")->stage, TONY_STAGE_TRAINING);
    tony_plan_free(&p);

    /* Both given and covering everything; a type switched off may stay listed. */
    tony_conf_set(c, "tony.application.prepare-stage", "dbloader, evaluator", "t");
    tony_conf_set(c, "tony.evaluator.instances", "0", "t");
    plan_ok(c, &p);
    assert_int_equal(tony_plan_role(&p, "dbloader")->stage, TONY_STAGE_PREPARE);
    assert_int_equal(tony_plan_role(&p, "ps")->stage, TONY_STAGE_TRAINING);
    tony_plan_free(&p);
    tony_conf_free(c);

    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=2", "tony.dbloader.instances=1",
               "tony.application.prepare-stage=dbloadr"),
          "tony.application.prepare-stage", "'dbloadr' is not a job type", "dbloader, worker");
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=2", "tony.dbloader.instances=1",
               "tony.application.prepare-stage=dbloader,worker", "tony.application.training-stage=worker"),
          "'worker' is in both", "tony.application.prepare-stage", "tony.application.training-stage");
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=2", "tony.dbloader.instances=1",
               "tony.ps.instances=1", "tony.application.prepare-stage=dbloader",
               "tony.application.training-stage=worker"),
          "'ps' is in neither", "tony.application.prepare-stage", "tony.application.training-stage");
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=2", "tony.application.training-stage=worker,chief"),
          "tony.application.training-stage", "'chief' is not a job type");
}

static void test_single_node(void **state) {
    (void)state;
    tony_conf *c = CONF("tony.containers.command=python notebook.py", "tony.worker.instances=0");
    tony_plan p;
    plan_ok(c, &p);
    assert_true(p.single_node);
    assert_int_equal(p.nroles, 0);
    assert_int_equal(tony_plan_total_instances(&p), 0);
    assert_string_equal(p.am_command, "python notebook.py");
    tony_plan_free(&p);
    tony_conf_set(c, "tony.am.command", "python am.py", "t");
    plan_ok(c, &p);
    assert_string_equal(p.am_command, "python am.py");
    tony_plan_free(&p);
    tony_conf_free(c);

    FAILS(CONF("tony.application.name=x"), "no command to run: pass --executes or set tony.containers.command");
    FAILS(CONF("tony.worker.instances=2", "tony.ps.instances=1", "tony.ps.command=python ps.py"),
          "tony.worker.command", "--executes");
}

static void test_lockstep(void **state) {
    (void)state;
    tony_conf *c = CONF("tony.containers.command=x", "tony.worker.instances=2");
    tony_plan p;
    plan_ok(c, &p);
    assert_true(p.lockstep); /* TF without ps: collective all-reduce */
    tony_plan_free(&p);
    tony_conf_set(c, "tony.ps.instances", "1", "t");
    plan_ok(c, &p);
    assert_false(p.lockstep); /* parameter servers tolerate a lost worker */
    tony_plan_free(&p);
    tony_conf_set(c, "tony.application.fail-fast-lockstep", "TRUE", "t");
    plan_ok(c, &p);
    assert_true(p.lockstep);
    tony_plan_free(&p);
    tony_conf_set(c, "tony.ps.instances", "0", "t");
    tony_conf_set(c, "tony.application.fail-fast-lockstep", "false", "t");
    plan_ok(c, &p);
    assert_false(p.lockstep);
    tony_plan_free(&p);
    tony_conf_set(c, "tony.application.fail-fast-lockstep", "sometimes", "t");
    FAILS(c, "tony.application.fail-fast-lockstep", "auto, true or false", "'sometimes'");
}

static void test_timeouts(void **state) {
    (void)state;
    tony_conf *c = CONF("tony.containers.command=x", "tony.worker.instances=1", "tony.worker.timeout=5000",
                        "tony.container.allocation.timeout=7000", "tony.application.timeout=60000",
                        "tony.am.retry-count=2");
    tony_plan p;
    plan_ok(c, &p);
    assert_int_equal(p.execution_timeout_ms, 5000);
    assert_int_equal(p.registration_timeout_ms, 7000);
    assert_int_equal(p.app_timeout_ms, 60000);
    assert_int_equal(p.retry_count, 2);
    tony_plan_free(&p);
    tony_conf_set(c, "tony.task.executor.execution-timeout-ms", "9000", "t");
    tony_conf_set(c, "tony.container.registration.timeout", "3000", "t");
    plan_ok(c, &p);
    assert_int_equal(p.execution_timeout_ms, 9000);
    assert_int_equal(p.registration_timeout_ms, 3000);
    tony_plan_free(&p);
    tony_conf_free(c);
}

/* tony.<role>.nproc-per-node: 1 by default, 1 or more, and only where the
 * framework runs several processes per task (pytorch), on tracked roles,
 * and no more than the task's GPUs when it has any. */
static void test_nproc_per_node(void **state) {
    (void)state;
    tony_conf *c = CONF("tony.containers.command=python t.py", "tony.application.framework=pytorch",
                        "tony.worker.instances=2", "tony.worker.nproc-per-node=4", "tony.evaluator.instances=1");
    tony_plan p;
    plan_ok(c, &p);
    assert_int_equal(tony_plan_role(&p, "worker")->nproc_per_node, 4);
    assert_int_equal(tony_plan_role(&p, "evaluator")->nproc_per_node, 1);
    tony_plan_free(&p);
    tony_conf_free(c);

    FAILS(CONF("tony.containers.command=x", "tony.application.framework=pytorch", "tony.worker.instances=1",
               "tony.worker.nproc-per-node=0"),
          "tony.worker.nproc-per-node", "1 or more");
    FAILS(CONF("tony.containers.command=x", "tony.worker.instances=1", "tony.worker.nproc-per-node=2"),
          "tony.worker.nproc-per-node is 2", "tensorflow", "pytorch");
    FAILS(CONF("tony.containers.command=x", "tony.application.framework=jax", "tony.worker.instances=1",
               "tony.worker.nproc-per-node=2"),
          "tony.worker.nproc-per-node", "jax");
    FAILS(CONF("tony.containers.command=x", "tony.application.framework=pytorch", "tony.worker.instances=1",
               "tony.ps.instances=1", "tony.ps.nproc-per-node=2"),
          "tony.ps.nproc-per-node is 2", "untracked");
    FAILS(CONF("tony.containers.command=x", "tony.application.framework=pytorch", "tony.worker.instances=1",
               "tony.worker.gpus=1", "tony.worker.nproc-per-node=2", "tony.task.max-total-gpus=-1"),
          "tony.worker.nproc-per-node (2) is more than tony.worker.gpus (1)");
    c = CONF("tony.containers.command=x", "tony.application.framework=pytorch", "tony.worker.instances=1",
             "tony.worker.gpus=2", "tony.worker.nproc-per-node=2", "tony.task.max-total-gpus=-1");
    plan_ok(c, &p);
    tony_plan_free(&p);
    tony_conf_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roles),       cmocka_unit_test(test_docker),      cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_chief),       cmocka_unit_test(test_limits),      cmocka_unit_test(test_bad_numbers),
        cmocka_unit_test(test_framework),   cmocka_unit_test(test_stages),      cmocka_unit_test(test_single_node),
        cmocka_unit_test(test_lockstep),    cmocka_unit_test(test_timeouts),    cmocka_unit_test(test_nproc_per_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
