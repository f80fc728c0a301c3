/* Right-sizing rules: a role that asked far more memory than it used gets a
 * concrete smaller value, one close to its limit a larger one, idle vcores
 * and idle or unmeasured GPUs are named, a well-sized role says so, and
 * roles never measured get nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/sizing.h"

#define MIB (1024LL * 1024)
#define GIB (1024 * MIB)

/* The shortest run that counts, and a task's process that ran 2 minutes. */
#define MIN_RUN_MS 60000
#define STARTED_MS 1700000000000LL
#define RAN_MS 120000

static json_t *task(const char *role, long long req_mem, int vcores, int gpus, double peak_mem, double max_cpu,
                    double avg_cpu, double avg_gpu) {
    return json_pack("{s:s,s:{s:I,s:i,s:i},s:I,s:I,s:{s:f,s:f,s:f,s:f}}", "role", role, "requested", "memory_bytes",
                     (json_int_t)req_mem, "vcores", vcores, "gpus", gpus, "started_ms", (json_int_t)STARTED_MS,
                     "finished_ms", (json_int_t)(STARTED_MS + RAN_MS), "metrics", "MAX_MEMORY_BYTES", peak_mem,
                     "MAX_CPU_PERCENT", max_cpu, "AVG_CPU_PERCENT", avg_cpu, "AVG_GPU_UTILIZATION", avg_gpu);
}

static json_t *only(json_t *advice, const char *role, const char *kind) {
    json_t *found = NULL, *a;
    size_t i;
    json_array_foreach(advice, i, a) {
        if (strcmp(json_string_value(json_object_get(a, "role")), role) == 0 &&
            strcmp(json_string_value(json_object_get(a, "kind")), kind) == 0) {
            assert_null(found);
            found = a;
        }
    }
    return found;
}

static void test_far_more_memory_than_used(void **state) {
    (void)state;
    json_t *tasks = json_array();
    json_array_append_new(tasks, task("worker", 8 * GIB, 1, 0, 104.0 * MIB, 90, 50, -1));
    json_array_append_new(tasks, task("worker", 8 * GIB, 1, 0, 80.0 * MIB, 90, 50, -1));
    json_t *adv = tony_sizing_advice(tasks, MIN_RUN_MS);
    json_t *a = only(adv, "worker", "memory");
    assert_non_null(a);
    assert_string_equal(json_string_value(json_object_get(a, "text")),
                        "worker: peak memory 104 MiB of 8 GiB requested (1%); try tony.worker.memory=512m");
    assert_string_equal(json_string_value(json_object_get(a, "key")), "tony.worker.memory");
    assert_string_equal(json_string_value(json_object_get(a, "value")), "512m");
    assert_int_equal(json_array_size(adv), 1);
    json_decref(adv);
    json_decref(tasks);
}

static void test_close_to_the_limit(void **state) {
    (void)state;
    json_t *tasks = json_array();
    json_array_append_new(tasks, task("ps", 2 * GIB, 1, 0, 1.9 * GIB, 50, 20, -1));
    json_t *adv = tony_sizing_advice(tasks, MIN_RUN_MS);
    json_t *a = only(adv, "ps", "memory");
    assert_non_null(a);
    assert_non_null(strstr(json_string_value(json_object_get(a, "text")), "close to the limit"));
    assert_string_equal(json_string_value(json_object_get(a, "value")), "3g");
    json_decref(adv);
    json_decref(tasks);
}

static void test_cpu_and_gpu(void **state) {
    (void)state;
    json_t *tasks = json_array();
    json_array_append_new(tasks, task("worker", 4 * GIB, 8, 2, 2.5 * GIB, 130, 80, 4));
    json_array_append_new(tasks, task("chief", 4 * GIB, 2, 1, 2.5 * GIB, 200, 195, -1));
    json_t *adv = tony_sizing_advice(tasks, MIN_RUN_MS);
    json_t *cpu = only(adv, "worker", "cpu");
    assert_non_null(cpu);
    assert_string_equal(json_string_value(json_object_get(cpu, "value")), "2");
    assert_non_null(strstr(json_string_value(json_object_get(cpu, "text")), "of 8 vcores"));
    json_t *gpu = only(adv, "worker", "gpu");
    assert_non_null(gpu);
    assert_non_null(strstr(json_string_value(json_object_get(gpu, "text")), "4% busy"));
    assert_null(only(adv, "worker", "memory")); /* 62% of the request: fine */
    json_t *busy = only(adv, "chief", "cpu");
    assert_non_null(busy);
    assert_string_equal(json_string_value(json_object_get(busy, "value")), "4");
    assert_non_null(strstr(json_string_value(json_object_get(only(adv, "chief", "gpu"), "text")), "not measured"));
    json_decref(adv);
    json_decref(tasks);
}

static void test_right_sized_and_unmeasured(void **state) {
    (void)state;
    json_t *tasks = json_array();
    json_array_append_new(tasks, task("worker", 1 * GIB, 1, 0, 600.0 * MIB, 95, 60, -1));
    json_array_append_new(tasks, task("evaluator", 1 * GIB, 1, 0, -1, -1, -1, -1)); /* never sampled */
    json_t *adv = tony_sizing_advice(tasks, MIN_RUN_MS);
    assert_int_equal(json_array_size(adv), 1);
    json_t *ok = only(adv, "worker", "ok");
    assert_non_null(ok);
    assert_non_null(strstr(json_string_value(json_object_get(ok, "text")), "right-sized"));
    assert_null(json_object_get(ok, "key"));
    json_decref(adv);
    json_decref(tasks);
    adv = tony_sizing_advice(NULL, MIN_RUN_MS);
    assert_int_equal(json_array_size(adv), 0);
    json_decref(adv);
}

/* A task whose process never started (exit 127: no interpreter), or ran a
 * few seconds, under-measures what the role needs: no advice from it. A
 * role with one long run is sized from that run only. */
static void test_no_advice_from_tasks_that_never_ran_or_ran_briefly(void **state) {
    (void)state;
    json_t *tasks = json_array();
    json_t *never = task("chief", 2 * GIB, 1, 0, 15.0 * MIB, 1, 1, -1);
    json_object_del(never, "started_ms");
    json_array_append_new(tasks, never);
    json_t *brief = task("worker", 2 * GIB, 1, 0, 21.0 * MIB, 90, 50, -1);
    json_object_set_new(brief, "finished_ms", json_integer(STARTED_MS + 4000));
    json_array_append_new(tasks, brief);
    json_t *adv = tony_sizing_advice(tasks, MIN_RUN_MS);
    assert_int_equal(json_array_size(adv), 0);
    json_decref(adv);
    /* a second worker that ran long enough: its peak, not the brief one's */
    json_array_append_new(tasks, task("worker", 2 * GIB, 1, 0, 700.0 * MIB, 90, 50, -1));
    adv = tony_sizing_advice(tasks, MIN_RUN_MS);
    assert_int_equal(json_array_size(adv), 1);
    assert_non_null(strstr(json_string_value(json_object_get(only(adv, "worker", "ok"), "text")), "700 MiB"));
    json_decref(adv);
    /* a job that lowers the threshold (tony.application.sizing-min-run-ms):
     * the brief run counts, a process that never started still does not */
    adv = tony_sizing_advice(tasks, 0);
    assert_int_equal(json_array_size(adv), 1);
    assert_non_null(only(adv, "worker", "ok"));
    json_decref(adv);
    json_decref(tasks);
}

static void test_sizes_for_people(void **state) {
    (void)state;
    char b[32];
    assert_string_equal(tony_sizing_bytes(104.0 * MIB, b, sizeof b), "104 MiB");
    assert_string_equal(tony_sizing_bytes(8.0 * GIB, b, sizeof b), "8 GiB");
    assert_string_equal(tony_sizing_bytes(1.5 * GIB, b, sizeof b), "1.5 GiB");
    tony_sizing_memory_value(100.0 * MIB, b, sizeof b);
    assert_string_equal(b, "512m");
    tony_sizing_memory_value(500.0 * MIB, b, sizeof b);
    assert_string_equal(b, "1g");
    tony_sizing_memory_value(3.0 * GIB, b, sizeof b);
    assert_string_equal(b, "5g");
}

/* The kernel's peak (PEAK_MEMORY_BYTES) over the samples' max: the advice
 * comes from it, and its value is never below it plus the headroom. */
static void test_kernel_peak_over_samples(void **state) {
    (void)state;
    json_t *tasks = json_array();
    json_t *t = task("worker", 8 * GIB, 1, 0, 21.0 * MIB, 90, 50, -1);
    json_object_set_new(json_object_get(t, "metrics"), "PEAK_MEMORY_BYTES", json_integer(2 * GIB));
    json_array_append_new(tasks, t);
    json_t *adv = tony_sizing_advice(tasks, MIN_RUN_MS);
    json_t *a = only(adv, "worker", "memory");
    assert_non_null(a);
    assert_string_equal(json_string_value(json_object_get(a, "text")),
                        "worker: peak memory 2 GiB of 8 GiB requested (25%); try tony.worker.memory=3g");
    json_decref(adv);
    /* every peak: the value holds it with the headroom */
    for (double peak = 1.0 * MIB; peak < 64.0 * GIB; peak *= 1.7) {
        char v[32];
        tony_sizing_memory_value(peak, v, sizeof v);
        double bytes = atof(v) * (strchr(v, 'g') ? GIB : MIB);
        assert_true(bytes >= peak * TONY_SIZING_HEADROOM);
    }
    json_decref(tasks);
}

/* Bash's 126/127 (the command could not run) and a process that never
 * started: no advice, even where every run counts (min_run_ms 0). */
static void test_no_advice_for_a_failed_start(void **state) {
    (void)state;
    json_t *tasks = json_array();
    json_t *t = task("chief", 2 * GIB, 1, 0, 15.0 * MIB, 1, 1, -1);
    json_object_set_new(t, "exit_status", json_integer(127));
    json_array_append_new(tasks, t);
    t = task("worker", 2 * GIB, 1, 0, 15.0 * MIB, 1, 1, -1);
    json_object_set_new(t, "exit_status", json_integer(126));
    json_array_append_new(tasks, t);
    t = task("ps", 2 * GIB, 1, 0, 15.0 * MIB, 1, 1, -1);
    json_object_set_new(t, "starts", json_integer(0));
    json_array_append_new(tasks, t);
    json_t *adv = tony_sizing_advice(tasks, 0);
    assert_int_equal(json_array_size(adv), 0);
    json_decref(adv);
    /* a script's own failure (exit 1) after a real run still sizes it */
    t = task("evaluator", 2 * GIB, 1, 0, 15.0 * MIB, 1, 1, -1);
    json_object_set_new(t, "exit_status", json_integer(1));
    json_array_append_new(tasks, t);
    adv = tony_sizing_advice(tasks, 0);
    assert_int_equal(json_array_size(adv), 1);
    assert_non_null(only(adv, "evaluator", "memory"));
    json_decref(adv);
    json_decref(tasks);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_far_more_memory_than_used), cmocka_unit_test(test_close_to_the_limit),
        cmocka_unit_test(test_cpu_and_gpu), cmocka_unit_test(test_right_sized_and_unmeasured),
        cmocka_unit_test(test_no_advice_from_tasks_that_never_ran_or_ran_briefly),
        cmocka_unit_test(test_sizes_for_people), cmocka_unit_test(test_kernel_peak_over_samples),
        cmocka_unit_test(test_no_advice_for_a_failed_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
