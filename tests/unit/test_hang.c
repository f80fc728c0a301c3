/* Hang diagnosis (tony.task.progress-timeout) through the state machine,
 * with no HTTP, process or clock: idle time per task (from its start, then
 * from its executor's reports), which roles are watched, the stacks asked
 * of every running task through heartbeat answers, the attempt failing
 * once they are in or the wait is over, the restart budget applying as to
 * any failure, and nothing at all when the key is unset. The duration
 * forms the key takes are checked here too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "am/hang.h"
#include "fsm_fixture.h"

/* A job of kv (NULL-terminated "key=value" list) whose every task
 * registered and started its user process at t = 0. */
static fixture *running_job(const char *const *kv) {
    const char *all[64] = {"tony.application.framework=pytorch"}; /* kv may say otherwise */
    size_t n = 1;
    for (; *kv && n + 1 < sizeof all / sizeof *all; kv++) all[n++] = *kv;
    fixture *h = make(all);
    am_fsm_start(&h->fsm, 0, &h->out);
    am_job *j = &h->fsm.job;
    for (size_t i = 0; i < j->ntasks; i++) {
        am_registration r = {.host = "127.0.0.1", .port = 2000 + (int)i};
        am_fsm_registered(&h->fsm, &j->tasks[i], &r, 0, &h->out);
    }
    for (size_t i = 0; i < j->ntasks; i++) am_fsm_started(&h->fsm, &j->tasks[i], 100 + (int)i, 0);
    assert_int_equal(h->fsm.state, AM_JOB_RUNNING);
    return h;
}

/* Every live executor heartbeats at now, saying how idle its task is. */
static void beat(fixture *h, long long now, long long idle_ms) {
    am_job *j = &h->fsm.job;
    for (size_t i = 0; i < j->ntasks; i++) {
        bool tb;
        am_fsm_heartbeat(&h->fsm, &j->tasks[i], -1, now, &tb);
        am_fsm_progress(&h->fsm, &j->tasks[i], idle_ms, now);
    }
}

static int tick(fixture *h, long long now, am_action_kind kind) {
    am_fsm_tick(&h->fsm, now, fresh(h));
    return count(h, kind);
}

static const char *WORKERS_5S[] = {"tony.worker.instances=2", "tony.task.progress-timeout=5s", NULL};

static void test_disabled_when_unset(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", NULL};
    fixture *h = running_job(kv);
    assert_int_equal(h->plan.progress_timeout_ms, 0);
    /* hours of silence: heartbeats keep coming, nothing is hung */
    for (long long now = 1000; now <= 3 * 3600 * 1000; now += 600000) {
        beat(h, now, now);
        assert_int_equal(tick(h, now, AM_ACT_HANG), 0);
        assert_false(am_fsm_wants_stacks(&h->fsm, task(h, "worker", 0)));
    }
    assert_false(h->fsm.job.attempt_over);
    destroy(h);
}

static void test_idle_from_start_then_from_reports(void **state) {
    (void)state;
    fixture *h = running_job(WORKERS_5S);
    am_task *w0 = task(h, "worker", 0);
    /* no report yet: counted from the start */
    assert_int_equal(am_hang_idle_ms(w0, 3000), 3000);
    /* the executor said 200 ms at 4000: 1200 ms later it is 1400 */
    am_fsm_progress(&h->fsm, w0, 200, 4000);
    assert_int_equal(am_hang_idle_ms(w0, 5200), 1400);
    /* a task that ended is not watched */
    am_fsm_result_reported(&h->fsm, task(h, "worker", 1), 0, false, 5200, &h->out);
    assert_int_equal(am_hang_idle_ms(task(h, "worker", 1), 5200), -1);
    destroy(h);
}

static void test_output_keeps_a_task_alive(void **state) {
    (void)state;
    fixture *h = running_job(WORKERS_5S);
    /* tasks that write (or touch the progress file) every 2 s: never hung */
    for (long long now = 1000; now <= 60000; now += 1000) {
        beat(h, now, now % 2000);
        assert_int_equal(tick(h, now, AM_ACT_HANG), 0);
    }
    destroy(h);
}

static void test_one_idle_task_is_a_hang(void **state) {
    (void)state;
    fixture *h = running_job(WORKERS_5S);
    am_task *w0 = task(h, "worker", 0), *w1 = task(h, "worker", 1);
    for (long long now = 1000; now <= 4000; now += 1000) {
        am_fsm_progress(&h->fsm, w0, 0, now);  /* busy */
        am_fsm_progress(&h->fsm, w1, now, now); /* silent since its start */
        assert_int_equal(tick(h, now, AM_ACT_HANG), 0);
        assert_false(am_fsm_wants_stacks(&h->fsm, w0));
    }
    am_fsm_progress(&h->fsm, w0, 0, 5000);
    am_fsm_progress(&h->fsm, w1, 5000, 5000);
    assert_int_equal(tick(h, 5000, AM_ACT_HANG), 1);
    assert_ptr_equal(h->out.items[0].task, w1);
    assert_true(h->fsm.hang.active);
    assert_int_equal(h->fsm.hang.idle_ms, 5000);
    /* before tearing down: every running task's executor is asked for its stacks */
    assert_false(h->fsm.job.attempt_over);
    assert_true(am_fsm_wants_stacks(&h->fsm, w0));
    assert_true(am_fsm_wants_stacks(&h->fsm, w1));
    /* found once: later ticks do not find it again */
    assert_int_equal(tick(h, 5500, AM_ACT_HANG), 0);
    am_fsm_stacks_in(&h->fsm, w1, 5600, &h->out);
    assert_false(h->fsm.job.attempt_over);
    assert_false(am_fsm_wants_stacks(&h->fsm, w1)); /* in already */
    h->out.len = 0;
    am_fsm_stacks_in(&h->fsm, w0, 5700, &h->out);
    /* all in: the attempt fails, naming the hung task, and is torn down */
    assert_true(h->fsm.job.attempt_over);
    assert_int_equal(h->fsm.job.attempt_status, AM_FINAL_FAILED);
    assert_non_null(strstr(h->fsm.job.attempt_diagnostics, "hung: no output or progress from worker:1 for 5.0 s"));
    assert_non_null(strstr(h->fsm.job.attempt_diagnostics, "stacks of 2 of 2 running task(s)"));
    assert_non_null(strstr(w1->diagnostics, "tony.task.progress-timeout is 5.0 s"));
    assert_int_equal(h->fsm.state, AM_JOB_FINISHING);
    assert_false(am_fsm_wants_stacks(&h->fsm, w0));
    destroy(h);
}

static void test_wait_for_stacks_is_bounded(void **state) {
    (void)state;
    fixture *h = running_job(WORKERS_5S);
    beat(h, 6000, 6000);
    assert_int_equal(tick(h, 6000, AM_ACT_HANG), 1);
    am_fsm_stacks_in(&h->fsm, task(h, "worker", 0), 6500, &h->out);
    /* worker:1's executor never answers: heartbeats keep it alive, the wait ends */
    long long wait = am_hang_stacks_wait_ms(&h->plan);
    assert_true(wait >= 10000);
    bool tb;
    am_fsm_heartbeat(&h->fsm, task(h, "worker", 1), -1, 6000 + wait - 1, &tb);
    tick(h, 6000 + wait - 1, AM_ACT_HANG);
    assert_false(h->fsm.job.attempt_over);
    tick(h, 6000 + wait, AM_ACT_HANG);
    assert_true(h->fsm.job.attempt_over);
    assert_non_null(strstr(h->fsm.job.attempt_diagnostics, "stacks of 1 of 2 running task(s)"));
    destroy(h);
}

static void test_restart_policy_applies(void **state) {
    (void)state;
    /* no backoff (policy.h): the restart comes with the last exit */
    const char *kv[] = {"tony.worker.instances=2", "tony.task.progress-timeout=2000", "tony.am.retry-count=1",
                        "tony.application.restart-backoff-ms=0", NULL};
    fixture *h = running_job(kv);
    beat(h, 2000, 2000);
    assert_int_equal(tick(h, 2000, AM_ACT_HANG), 1);
    am_fsm_stacks_in(&h->fsm, task(h, "worker", 0), 2100, &h->out);
    am_fsm_stacks_in(&h->fsm, task(h, "worker", 1), 2100, &h->out);
    assert_true(h->fsm.job.attempt_over);
    /* the stopped containers end: the normal failure path restarts */
    h->out.len = 0;
    am_fsm_exited(&h->fsm, task(h, "worker", 0), 143, NULL, 2200, &h->out);
    am_fsm_exited(&h->fsm, task(h, "worker", 1), 143, NULL, 2200, &h->out);
    bool restart = false;
    for (size_t i = 0; i < h->out.len; i++) restart |= h->out.items[i].kind == AM_ACT_RESTART;
    assert_true(restart);
    h->out.len = 0;
    am_fsm_next_attempt(&h->fsm, 3000, &h->out);
    /* the new attempt watches afresh: nothing is idle or asked */
    assert_false(am_fsm_wants_stacks(&h->fsm, task(h, "worker", 0)));
    assert_false(task(h, "worker", 0)->stacks_in);
    assert_int_equal(tick(h, 3500, AM_ACT_HANG), 0);
    destroy(h);
}

static void test_only_tracked_roles_are_watched(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=1", "tony.ps.instances=1", "tony.application.framework=tensorflow",
                        "tony.task.progress-timeout=2s", NULL};
    fixture *h = running_job(kv);
    am_fsm_progress(&h->fsm, task(h, "worker", 0), 0, 10000);
    am_fsm_progress(&h->fsm, task(h, "ps", 0), 10000, 10000);
    /* a parameter server is silent by nature */
    assert_int_equal(am_hang_idle_ms(task(h, "ps", 0), 10000), -1);
    assert_int_equal(tick(h, 10000, AM_ACT_HANG), 0);
    /* but once a worker hangs, the ps's stacks are wanted too */
    am_fsm_progress(&h->fsm, task(h, "worker", 0), 2500, 10500);
    assert_int_equal(tick(h, 10500, AM_ACT_HANG), 1);
    assert_true(am_fsm_wants_stacks(&h->fsm, task(h, "ps", 0)));
    int wanted, in;
    am_hang_count_stacks(&h->fsm.job, &wanted, &in);
    assert_int_equal(wanted, 2);
    assert_int_equal(in, 0);
    destroy(h);
}

static void test_other_failure_during_collection(void **state) {
    (void)state;
    fixture *h = running_job(WORKERS_5S);
    beat(h, 5000, 5000);
    assert_int_equal(tick(h, 5000, AM_ACT_HANG), 1);
    /* a rank dies meanwhile: its failure ends the attempt, not the hang */
    am_fsm_exited(&h->fsm, task(h, "worker", 1), 1, "boom", 5100, &h->out);
    assert_true(h->fsm.job.attempt_over);
    assert_null(strstr(h->fsm.job.attempt_diagnostics, "hung"));
    assert_false(am_fsm_wants_stacks(&h->fsm, task(h, "worker", 0)));
    destroy(h);
}

static void test_durations(void **state) {
    (void)state;
    long long ms;
    assert_true(tony_parse_duration_ms("300000", &ms) && ms == 300000);
    assert_true(tony_parse_duration_ms("500ms", &ms) && ms == 500);
    assert_true(tony_parse_duration_ms(" 30s ", &ms) && ms == 30000);
    assert_true(tony_parse_duration_ms("5m", &ms) && ms == 300000);
    assert_true(tony_parse_duration_ms("2H", &ms) && ms == 7200000);
    assert_false(tony_parse_duration_ms("-5s", &ms));
    assert_false(tony_parse_duration_ms("5 min", &ms));
    assert_false(tony_parse_duration_ms("s", &ms));
    assert_false(tony_parse_duration_ms("1.5s", &ms));
    tony_conf *c = tony_conf_new();
    tony_conf_set(c, "tony.task.progress-timeout", "soon", "test");
    tony_error err;
    assert_int_equal(tony_conf_get_duration_ms(c, "tony.task.progress-timeout", 0, &ms, &err), -1);
    assert_non_null(strstr(err.msg, "tony.task.progress-timeout must be a duration"));
    assert_non_null(strstr(err.msg, "'soon'"));
    /* output is looked at once per heartbeat: a shorter timeout would find healthy tasks hung */
    tony_conf_load_defaults(c);
    tony_conf_set(c, "tony.containers.command", "python train.py", "test");
    tony_conf_set(c, "tony.worker.instances", "1", "test");
    tony_conf_set(c, "tony.task.progress-timeout", "1500ms", "test");
    tony_plan plan;
    assert_int_equal(tony_runtime_plan(c, &plan, &err), -1);
    assert_non_null(strstr(err.msg, "tony.task.progress-timeout (1500 ms) must be at least twice "
                                    "tony.task.heartbeat-interval-ms (1000 ms)"));
    tony_conf_set(c, "tony.task.progress-timeout", "2s", "test");
    assert_int_equal(tony_runtime_plan(c, &plan, &err), 0);
    assert_int_equal(plan.progress_timeout_ms, 2000);
    tony_plan_free(&plan);
    tony_conf_free(c);
    char buf[32];
    am_hang_format_ms(850, buf, sizeof buf);
    assert_string_equal(buf, "850 ms");
    am_hang_format_ms(125000, buf, sizeof buf);
    assert_string_equal(buf, "2 min 5 s");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_disabled_when_unset),
        cmocka_unit_test(test_idle_from_start_then_from_reports),
        cmocka_unit_test(test_output_keeps_a_task_alive),
        cmocka_unit_test(test_one_idle_task_is_a_hang),
        cmocka_unit_test(test_wait_for_stacks_is_bounded),
        cmocka_unit_test(test_restart_policy_applies),
        cmocka_unit_test(test_only_tracked_roles_are_watched),
        cmocka_unit_test(test_other_failure_during_collection),
        cmocka_unit_test(test_durations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
