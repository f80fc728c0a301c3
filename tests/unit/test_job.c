/* The coordinator's job state machine: TonY's final-status rules, our
 * lock-step rule, untracked/sidecar roles, heartbeats, registration timeout
 * and the prepare -> training stage order. Plans are built from real
 * configurations through tony_plan_from_conf. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "am/job.h"
#include "backend/backend.h"
#include "conf/conf.h"
#include "conf/plan.h"

typedef struct fixture {
    tony_conf *conf;
    tony_plan plan;
    am_job job;
} fixture;

/* kv: NULL-terminated "key=value" list over TonY's defaults. */
static fixture *make(const char *const *kv) {
    fixture *f = calloc(1, sizeof *f);
    f->conf = tony_conf_new();
    tony_conf_load_defaults(f->conf);
    tony_conf_set(f->conf, "tony.containers.command", "python train.py", "test");
    for (; *kv; kv++) {
        char *copy = strdup(*kv), *eq = strchr(copy, '=');
        *eq = '\0';
        tony_conf_set(f->conf, copy, eq + 1, "test");
        free(copy);
    }
    tony_error err;
    if (tony_plan_from_conf(f->conf, &f->plan, &err)) fail_msg("plan: %s", err.msg);
    am_job_init(&f->job, &f->plan);
    return f;
}

static void destroy(fixture *f) {
    am_job_free(&f->job);
    tony_plan_free(&f->plan);
    tony_conf_free(f->conf);
    free(f);
}

/* Every requested task registers at a fake address and starts. */
static void start_all(fixture *f, long long now) {
    for (size_t i = 0; i < f->job.ntasks; i++) {
        am_task *t = &f->job.tasks[i];
        if (!am_job_should_request(&f->job, t)) continue;
        t->state = AM_TASK_REQUESTED;
        t->requested_ms = now;
    }
    for (size_t i = 0; i < f->job.ntasks; i++) {
        am_task *t = &f->job.tasks[i];
        if (t->state != AM_TASK_REQUESTED) continue;
        t->host = strdup("127.0.0.1");
        t->port = 1000 + (int)i;
        t->state = AM_TASK_RUNNING;
        t->last_heartbeat_ms = now;
    }
}

static void exit_task(fixture *f, const char *role, int index, int status) {
    am_task *t = am_job_task(&f->job, role, index);
    assert_non_null(t);
    am_job_on_task_exit(&f->job, t, status, status ? "diag" : NULL, 100);
}

static const char *PS_WORKERS[] = {"tony.ps.instances=1", "tony.worker.instances=3", NULL};

static void test_all_workers_succeed(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    start_all(f, 0);
    assert_true(am_job_gang_ready(&f->job));
    exit_task(f, "worker", 0, 0);
    exit_task(f, "worker", 1, 0);
    assert_false(f->job.attempt_over);
    exit_task(f, "worker", 2, 0);
    /* ps is untracked: the attempt is over without it */
    assert_true(f->job.attempt_over);
    assert_int_equal(f->job.attempt_status, AM_FINAL_SUCCEEDED);
    exit_task(f, "ps", 0, TONY_EXIT_KILLED_BY_APPMASTER);
    assert_int_equal(am_job_task(&f->job, "ps", 0)->state, AM_TASK_FINISHED);
    destroy(f);
}

static void test_non_chief_failure_tolerated_with_ps(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    start_all(f, 0);
    exit_task(f, "worker", 2, 1);
    assert_false(f->job.attempt_over);
    exit_task(f, "worker", 0, 0);
    exit_task(f, "worker", 1, 0);
    assert_int_equal(f->job.attempt_status, AM_FINAL_SUCCEEDED);
    assert_non_null(strstr(f->job.attempt_diagnostics, "failedCnt=1"));
    destroy(f);
}

static void test_all_tracked_failed_fails(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    start_all(f, 0);
    exit_task(f, "worker", 1, 1);
    exit_task(f, "worker", 2, 1);
    assert_false(f->job.attempt_over);
    /* worker:0 is the chief here: its failure alone ends the attempt */
    exit_task(f, "worker", 0, 1);
    assert_int_equal(f->job.attempt_status, AM_FINAL_FAILED);
    assert_non_null(strstr(f->job.attempt_diagnostics, "Chief task [worker:0]"));
    destroy(f);
}

static void test_chief_role_is_chief(void **state) {
    (void)state;
    const char *kv[] = {"tony.chief.instances=1", "tony.worker.instances=2", "tony.ps.instances=1", NULL};
    fixture *f = make(kv);
    start_all(f, 0);
    exit_task(f, "worker", 0, 1); /* not the chief when a chief role exists */
    assert_false(f->job.attempt_over);
    exit_task(f, "chief", 0, 137);
    assert_true(f->job.attempt_over);
    assert_int_equal(f->job.attempt_status, AM_FINAL_FAILED);
    destroy(f);
}

static void test_fail_on_worker_failure(void **state) {
    (void)state;
    const char *kv[] = {"tony.ps.instances=1", "tony.worker.instances=3",
                        "tony.application.fail-on-worker-failure-enabled=true", NULL};
    fixture *f = make(kv);
    start_all(f, 0);
    exit_task(f, "worker", 2, 1);
    assert_true(f->job.attempt_over);
    assert_int_equal(f->job.attempt_status, AM_FINAL_FAILED);
    destroy(f);
}

static void test_stop_on_failure_role(void **state) {
    (void)state;
    const char *kv[] = {"tony.ps.instances=1", "tony.worker.instances=2", "tony.evaluator.instances=1",
                        "tony.application.stop-on-failure-jobtypes=evaluator", NULL};
    fixture *f = make(kv);
    start_all(f, 0);
    exit_task(f, "evaluator", 0, 2);
    assert_true(f->job.attempt_over);
    assert_non_null(strstr(f->job.attempt_diagnostics, "stop-on-failure"));
    destroy(f);
}

static void test_untracked_failure_fails_fast(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    start_all(f, 0);
    exit_task(f, "ps", 0, 1);
    assert_true(f->job.attempt_over);
    assert_non_null(strstr(f->job.attempt_diagnostics, "Untracked task [ps:0]"));
    destroy(f);
}

static void test_sidecar_failure_ignored(void **state) {
    (void)state;
    const char *kv[] = {"tony.ps.instances=1", "tony.worker.instances=1", "tony.tensorboard.instances=1", NULL};
    fixture *f = make(kv);
    start_all(f, 0);
    exit_task(f, "tensorboard", 0, 1);
    assert_false(f->job.attempt_over);
    exit_task(f, "worker", 0, 0);
    assert_int_equal(f->job.attempt_status, AM_FINAL_SUCCEEDED);
    destroy(f);
}

static void test_lockstep_failure_ends_attempt(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=3", "tony.application.framework=pytorch", NULL};
    fixture *f = make(kv);
    assert_true(f->plan.lockstep);
    start_all(f, 0);
    exit_task(f, "worker", 2, 137);
    assert_true(f->job.attempt_over);
    assert_non_null(strstr(f->job.attempt_diagnostics, "lock-step"));
    destroy(f);
}

static void test_tracked_task_stopped_counts_as_failure(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    start_all(f, 0);
    exit_task(f, "worker", 1, TONY_EXIT_KILLED_BY_APPMASTER);
    exit_task(f, "worker", 2, TONY_EXIT_KILLED_BY_APPMASTER);
    exit_task(f, "worker", 0, 0);
    /* TonY counts every non-zero exit: 2 of 3 failed, tolerated with a note */
    assert_int_equal(f->job.attempt_status, AM_FINAL_SUCCEEDED);
    assert_non_null(strstr(f->job.attempt_diagnostics, "failedCnt=2"));
    destroy(f);
}

static void test_gang_ignores_tasks_that_ended_unregistered(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=1", "tony.tensorboard.instances=1", NULL};
    fixture *f = make(kv);
    am_task *tb = am_job_task(&f->job, "tensorboard", 0), *w = am_job_task(&f->job, "worker", 0);
    tb->state = w->state = AM_TASK_REQUESTED;
    am_job_on_task_exit(&f->job, tb, TONY_EXIT_ABORTED, "localization failed", 1);
    assert_false(f->job.attempt_over); /* a sidecar: ignored */
    assert_false(am_job_gang_ready(&f->job));
    w->host = strdup("127.0.0.1");
    assert_true(am_job_gang_ready(&f->job));
    destroy(f);
}

static void test_tb_port_goes_to_the_sidecar_else_the_chief(void **state) {
    (void)state;
    const char *with_chief[] = {"tony.chief.instances=1", "tony.worker.instances=2", NULL};
    fixture *f = make(with_chief);
    assert_true(am_job_reserves_tb_port(&f->job, am_job_task(&f->job, "chief", 0)));
    assert_false(am_job_reserves_tb_port(&f->job, am_job_task(&f->job, "worker", 0)));
    destroy(f);
    const char *workers[] = {"tony.worker.instances=2", NULL};
    f = make(workers);
    assert_true(am_job_reserves_tb_port(&f->job, am_job_task(&f->job, "worker", 0)));
    assert_false(am_job_reserves_tb_port(&f->job, am_job_task(&f->job, "worker", 1)));
    destroy(f);
    const char *sidecar[] = {"tony.worker.instances=2", "tony.tensorboard.instances=1", NULL};
    f = make(sidecar);
    assert_true(am_job_reserves_tb_port(&f->job, am_job_task(&f->job, "tensorboard", 0)));
    assert_false(am_job_reserves_tb_port(&f->job, am_job_task(&f->job, "worker", 0)));
    destroy(f);
}

static void test_reset_keeps_each_tasks_runs(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.evaluator.instances=1", NULL};
    fixture *f = make(kv);
    start_all(f, 0);
    am_task *ev = am_job_task(&f->job, "evaluator", 0); /* got a container, but its process never started */
    am_job_task(&f->job, "worker", 0)->started_ms = 5;
    am_job_task(&f->job, "worker", 1)->started_ms = 5;
    /* each attempt's container has its own log link: the run keeps it */
    am_job_task(&f->job, "worker", 0)->log_url = tony_strdup("http://nm1:8042/node/containerlogs/c_1/u");
    exit_task(f, "worker", 0, 3);
    exit_task(f, "worker", 1, TONY_EXIT_KILLED_BY_APPMASTER);
    am_job_reset(&f->job, 1);
    am_task *w0 = am_job_task(&f->job, "worker", 0);
    assert_int_equal(w0->state, AM_TASK_NEW);
    assert_int_equal(w0->nruns, 1);
    assert_int_equal(w0->runs[0].attempt, 0);
    assert_int_equal(w0->runs[0].state, AM_TASK_FAILED);
    assert_int_equal(w0->runs[0].exit_status, 3);
    assert_true(w0->runs[0].started);
    assert_string_equal(w0->runs[0].log_url, "http://nm1:8042/node/containerlogs/c_1/u");
    assert_null(w0->log_url);
    assert_null(am_job_task(&f->job, "worker", 1)->runs[0].log_url);
    assert_int_equal(am_job_task(&f->job, "worker", 1)->runs[0].state, AM_TASK_FINISHED);
    assert_false(ev->runs[0].started);
    assert_int_equal(ev->runs[0].exit_status, TONY_EXIT_INVALID);
    /* attempt 1 runs worker:0 again; attempt 2 starts before the evaluator got a container */
    start_all(f, 10);
    ev->state = AM_TASK_NEW;
    exit_task(f, "worker", 0, 0);
    am_job_reset(&f->job, 2);
    assert_int_equal(w0->nruns, 2);
    assert_int_equal(w0->runs[1].attempt, 1);
    assert_int_equal(w0->runs[1].state, AM_TASK_SUCCEEDED);
    assert_int_equal(ev->nruns, 1);
    destroy(f); /* the runs are freed with the job (ASan checks) */
}

static void test_only_first_exit_counts(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    start_all(f, 0);
    exit_task(f, "worker", 1, 0);
    exit_task(f, "worker", 1, 1);
    assert_int_equal(am_job_task(&f->job, "worker", 1)->state, AM_TASK_SUCCEEDED);
    destroy(f);
}

static void test_exit_before_registration_fails(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    am_task *t = am_job_task(&f->job, "worker", 2);
    t->state = AM_TASK_REQUESTED;
    am_job_on_task_exit(&f->job, t, 1, "cannot unpack", 5);
    assert_true(f->job.attempt_over);
    assert_non_null(strstr(f->job.attempt_diagnostics, "before it registered"));
    destroy(f);
}

static void test_heartbeat_expiry(void **state) {
    (void)state;
    const char *kv[] = {"tony.ps.instances=1", "tony.worker.instances=2", "tony.task.heartbeat-interval-ms=100",
                        "tony.task.max-missed-heartbeats=5", NULL};
    fixture *f = make(kv);
    start_all(f, 1000);
    assert_null(am_job_check_heartbeats(&f->job, 1400)); /* within 5 x 100 ms */
    for (size_t i = 0; i < f->job.ntasks; i++) f->job.tasks[i].last_heartbeat_ms = 1400;
    am_job_task(&f->job, "worker", 1)->last_heartbeat_ms = 1000;
    am_task *t = am_job_check_heartbeats(&f->job, 1600);
    assert_non_null(t);
    assert_string_equal(t->role->name, "worker");
    assert_int_equal(t->index, 1);
    assert_true(f->job.attempt_over);
    assert_non_null(strstr(f->job.attempt_diagnostics, "missed [5] heartbeats"));
    destroy(f);
}

static void test_heartbeats_floor_of_three(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=1", "tony.task.heartbeat-interval-ms=100",
                        "tony.task.max-missed-heartbeats=1", NULL};
    fixture *f = make(kv);
    start_all(f, 0);
    assert_null(am_job_check_heartbeats(&f->job, 250)); /* TonY: interval x max(3, missed) */
    assert_non_null(am_job_check_heartbeats(&f->job, 301));
    destroy(f);
}

static void test_barrier_waiters_not_expired(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.task.heartbeat-interval-ms=100",
                        "tony.task.max-missed-heartbeats=5", NULL};
    fixture *f = make(kv);
    f->job.barrier_poll_ms = 20000;
    start_all(f, 0);
    /* worker:0 registered and waits in its long poll for a slow peer */
    am_job_task(&f->job, "worker", 0)->state = AM_TASK_REGISTERED;
    am_job_task(&f->job, "worker", 1)->last_heartbeat_ms = 5000;
    assert_null(am_job_check_heartbeats(&f->job, 5000));
    assert_non_null(am_job_check_heartbeats(&f->job, 20600));
    destroy(f);
}

static void test_registration_timeout(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.container.registration.timeout=1000", NULL};
    fixture *f = make(kv);
    for (size_t i = 0; i < f->job.ntasks; i++) {
        f->job.tasks[i].state = AM_TASK_REQUESTED;
        f->job.tasks[i].requested_ms = 0;
    }
    assert_null(am_job_check_registration(&f->job, 900));
    assert_non_null(am_job_check_registration(&f->job, 1100));
    assert_non_null(strstr(f->job.attempt_diagnostics, "registration timeout"));
    destroy(f);
}

static void test_stages_order_requests(void **state) {
    (void)state;
    const char *kv[] = {"tony.prep.instances=1", "tony.worker.instances=2", "tony.ps.instances=1",
                        "tony.application.prepare-stage=prep,ps", NULL};
    fixture *f = make(kv);
    assert_true(f->plan.has_stages);
    am_task *prep = am_job_task(&f->job, "prep", 0), *w = am_job_task(&f->job, "worker", 0),
            *ps = am_job_task(&f->job, "ps", 0);
    assert_true(am_job_should_request(&f->job, prep));
    assert_true(am_job_should_request(&f->job, ps));
    assert_false(am_job_should_request(&f->job, w));
    start_all(f, 0);
    assert_int_equal(am_job_count_requested(&f->job), 2);
    /* the training stage waits for the tracked prepare tasks only (ps is untracked) */
    exit_task(f, "prep", 0, 0);
    assert_false(f->job.attempt_over);
    assert_true(am_job_should_request(&f->job, w));
    start_all(f, 10);
    assert_true(am_job_gang_ready(&f->job));
    exit_task(f, "worker", 0, 0);
    exit_task(f, "worker", 1, 0);
    assert_int_equal(f->job.attempt_status, AM_FINAL_SUCCEEDED);
    destroy(f);
}

static void test_reset_clears_attempt(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    start_all(f, 0);
    exit_task(f, "ps", 0, 1);
    assert_true(f->job.attempt_over);
    am_job_reset(&f->job, 1);
    assert_int_equal(f->job.attempt, 1);
    assert_false(f->job.attempt_over);
    assert_null(f->job.attempt_diagnostics);
    for (size_t i = 0; i < f->job.ntasks; i++) {
        assert_int_equal(f->job.tasks[i].state, AM_TASK_NEW);
        assert_null(f->job.tasks[i].host);
    }
    destroy(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_workers_succeed),
        cmocka_unit_test(test_non_chief_failure_tolerated_with_ps),
        cmocka_unit_test(test_all_tracked_failed_fails),
        cmocka_unit_test(test_chief_role_is_chief),
        cmocka_unit_test(test_fail_on_worker_failure),
        cmocka_unit_test(test_stop_on_failure_role),
        cmocka_unit_test(test_untracked_failure_fails_fast),
        cmocka_unit_test(test_sidecar_failure_ignored),
        cmocka_unit_test(test_tb_port_goes_to_the_sidecar_else_the_chief),
        cmocka_unit_test(test_reset_keeps_each_tasks_runs),
        cmocka_unit_test(test_lockstep_failure_ends_attempt),
        cmocka_unit_test(test_tracked_task_stopped_counts_as_failure),
        cmocka_unit_test(test_gang_ignores_tasks_that_ended_unregistered),
        cmocka_unit_test(test_only_first_exit_counts),
        cmocka_unit_test(test_exit_before_registration_fails),
        cmocka_unit_test(test_heartbeat_expiry),
        cmocka_unit_test(test_heartbeats_floor_of_three),
        cmocka_unit_test(test_barrier_waiters_not_expired),
        cmocka_unit_test(test_registration_timeout),
        cmocka_unit_test(test_stages_order_requests),
        cmocka_unit_test(test_reset_clears_attempt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
