/* Unit tests of the local backend's fit check, the one `tony submit`,
 * `--dry-run` and the coordinator share: vcores oversubscribe the CPUs
 * unless tony.local.vcores caps them, memory and GPUs are hard limits, and
 * every problem names the key to change. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/local/local.h"
#include "conf/conf.h"
#include "conf/plan.h"
#include "runtime/runtime.h"
#include "conf_pairs.h"

/* The fit of the plan the pairs make, on the given pool. */
static void fit_of(const tony_local_pool *pool, const char *const *kvs, tony_local_fit *fit) {
    tony_conf *c = conf_with(kvs);
    tony_conf_set_cli(c, "tony.containers.command", "sh -c true");
    tony_plan p;
    tony_error err = {{0}};
    if (tony_runtime_plan(c, &p, &err)) fail_msg("plan failed: %s", err.msg);
    tony_local_fit_plan(pool, &p, fit);
    tony_plan_free(&p);
    tony_conf_free(c);
}

#define FIT(pool, fit, ...) fit_of((pool), (const char *const[]){__VA_ARGS__, NULL}, (fit))

/* TonY's usual job: chief + ps + 2 workers of 2 vcores, 6 vcores at once. */
#define USUAL_JOB                                                                                                     \
    "tony.chief.instances=1", "tony.ps.instances=1", "tony.worker.instances=2", "tony.worker.vcores=2",               \
        "tony.chief.memory=1g", "tony.ps.memory=1g", "tony.worker.memory=1g"

static void test_uncapped_vcores_oversubscribe(void **state) {
    (void)state;
    tony_local_pool laptop = {.vcores = 2, .vcores_capped = false, .memory_mb = 8192, .gpus = 0};
    tony_local_fit fit;
    FIT(&laptop, &fit, USUAL_JOB);
    assert_int_equal(fit.problems.len, 0);
    assert_true(fit.oversubscribed);
    assert_int_equal(fit.peak_vcores, 6);
    char *notice = tony_local_fit_notice(&laptop, &fit);
    assert_contains(notice, "6 vcores at once");
    assert_contains(notice, "2 cores");
    assert_contains(notice, "tony.local.vcores");
    free(notice);
    tony_local_fit_free(&fit);
    tony_local_fit_free(&fit); /* freeing twice is harmless */
}

static void test_fitting_job_has_no_notice(void **state) {
    (void)state;
    tony_local_pool big = {.vcores = 16, .vcores_capped = false, .memory_mb = 65536, .gpus = 0};
    tony_local_fit fit;
    FIT(&big, &fit, USUAL_JOB);
    assert_int_equal(fit.problems.len, 0);
    assert_false(fit.oversubscribed);
    assert_null(tony_local_fit_notice(&big, &fit));
    tony_local_fit_free(&fit);
}

static void test_capped_vcores_refuse(void **state) {
    (void)state;
    tony_local_pool capped = {.vcores = 2, .vcores_capped = true, .memory_mb = 8192, .gpus = 0};
    tony_local_fit fit;
    FIT(&capped, &fit, USUAL_JOB);
    assert_int_equal(fit.problems.len, 1);
    assert_false(fit.oversubscribed);
    assert_contains(fit.problems.items[0], "6 vcores at once");
    assert_contains(fit.problems.items[0], "tony.local.vcores=2");
    assert_null(tony_local_fit_notice(&capped, &fit));
    tony_local_fit_free(&fit);
}

/* ps keeps running through the training stage: both must fit together. */
static void test_stages_add_up(void **state) {
    (void)state;
    tony_local_pool capped = {.vcores = 2, .vcores_capped = true, .memory_mb = 8192, .gpus = 0};
    tony_local_fit fit;
    FIT(&capped, &fit, "tony.ps.instances=1", "tony.chief.instances=1", "tony.chief.vcores=2",
        "tony.application.prepare-stage=ps", "tony.ps.memory=1g", "tony.chief.memory=1g");
    assert_int_equal(fit.peak_vcores, 3);
    assert_int_equal(fit.problems.len, 1);
    assert_contains(fit.problems.items[0], "3 vcores at once");
    tony_local_fit_free(&fit);
}

static void test_memory_is_a_hard_limit(void **state) {
    (void)state;
    tony_local_pool laptop = {.vcores = 2, .vcores_capped = false, .memory_mb = 8192, .gpus = 0};
    tony_local_fit fit;
    /* one task above the machine: named by its own key, the total not repeated */
    FIT(&laptop, &fit, "tony.worker.instances=2", "tony.worker.memory=100g");
    assert_int_equal(fit.problems.len, 1);
    assert_contains(fit.problems.items[0], "tony.worker.memory=102400m");
    assert_contains(fit.problems.items[0], "8192m");
    tony_local_fit_free(&fit);
    /* each task fits, all of them at once do not */
    FIT(&laptop, &fit, "tony.worker.instances=3", "tony.worker.memory=3g");
    assert_int_equal(fit.problems.len, 1);
    assert_contains(fit.problems.items[0], "9216m of memory at once");
    assert_contains(fit.problems.items[0], "tony.<role>.memory");
    assert_contains(fit.problems.items[0], "tony.local.memory");
    tony_local_fit_free(&fit);
}

static void test_gpus_are_a_hard_limit(void **state) {
    (void)state;
    tony_local_pool none = {.vcores = 2, .vcores_capped = false, .memory_mb = 8192, .gpus = 0};
    tony_local_fit fit;
    FIT(&none, &fit, "tony.worker.instances=1", "tony.worker.gpus=1", "tony.worker.memory=1g");
    assert_int_equal(fit.problems.len, 1);
    assert_contains(fit.problems.items[0], "no GPU");
    assert_contains(fit.problems.items[0], "tony.worker.gpus=0");
    tony_local_fit_free(&fit);
    tony_local_pool two = {.vcores = 2, .vcores_capped = false, .memory_mb = 8192, .gpus = 2};
    FIT(&two, &fit, "tony.worker.instances=3", "tony.worker.gpus=1", "tony.worker.memory=1g");
    assert_int_equal(fit.problems.len, 1);
    assert_contains(fit.problems.items[0], "3 GPUs at once");
    tony_local_fit_free(&fit);
}

/* --dry-run lists everything that does not fit, not just the first. */
static void test_every_problem_is_named(void **state) {
    (void)state;
    tony_local_pool capped = {.vcores = 1, .vcores_capped = true, .memory_mb = 4096, .gpus = 0};
    tony_local_fit fit;
    FIT(&capped, &fit, "tony.worker.instances=2", "tony.worker.memory=5g", "tony.worker.gpus=1");
    assert_int_equal(fit.problems.len, 3);
    assert_contains(fit.problems.items[0], "tony.worker.gpus");
    assert_contains(fit.problems.items[1], "tony.worker.memory");
    assert_contains(fit.problems.items[2], "tony.local.vcores");
    tony_local_fit_free(&fit);
}

/* Only a tony.local.vcores that is set caps; blank means not given. */
static void test_pool_cap_comes_from_the_key(void **state) {
    (void)state;
    const char *values[] = {NULL, "", " ", "3"};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
        tony_conf *c = CONF("tony.local.memory=4g", "tony.local.gpus=0");
        if (values[i]) tony_conf_set(c, "tony.local.vcores", values[i], "test");
        tony_local_pool pool;
        tony_error err = {{0}};
        assert_int_equal(tony_local_pool_from_conf(c, &pool, &err), 0);
        assert_int_equal(pool.vcores_capped, i == 3);
        if (i == 3) assert_int_equal(pool.vcores, 3);
        assert_true(pool.vcores > 0);
        assert_int_equal(pool.memory_mb, 4096);
        tony_conf_free(c);
    }
    tony_conf *c = CONF("tony.local.vcores=0");
    tony_local_pool pool;
    tony_error err = {{0}};
    assert_int_equal(tony_local_pool_from_conf(c, &pool, &err), -1);
    assert_contains(err.msg, "tony.local.vcores");
    tony_conf_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uncapped_vcores_oversubscribe), cmocka_unit_test(test_fitting_job_has_no_notice),
        cmocka_unit_test(test_capped_vcores_refuse),          cmocka_unit_test(test_stages_add_up),
        cmocka_unit_test(test_memory_is_a_hard_limit),        cmocka_unit_test(test_gpus_are_a_hard_limit),
        cmocka_unit_test(test_every_problem_is_named),        cmocka_unit_test(test_pool_cap_comes_from_the_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
