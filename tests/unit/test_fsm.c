/* The coordinator's state machine driven through whole event sequences,
 * with no HTTP, process or clock: TonY's final-status rules, our lock-step
 * rule, untracked/sidecar roles, restarts within the retry budget,
 * heartbeats, the registration and application timeouts, kill, the prepare
 * -> training stage order, stops tried again, and executors told to stop
 * themselves; in-place restarts that keep healthy containers; a coordinator
 * that replaces a lost one adopting the running tasks. Plans are built
 * from real configurations through tony_runtime_plan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "am/cause.h"
#include "backend/backend.h"
#include "common/amapi.h"
#include "common/jobjson.h"
#include "fsm_fixture.h"

static bool stops(const fixture *f, const char *role, int index) {
    for (size_t i = 0; i < f->out.len; i++) {
        const am_action *a = &f->out.items[i];
        if (a->kind == AM_ACT_STOP && a->task && a->task->index == index && strcmp(a->task->role->name, role) == 0)
            return true;
    }
    return false;
}

static void reg(fixture *f, am_task *t, long long now) {
    am_registration r = {.host = "127.0.0.1", .port = 1000 + t->index};
    assert_int_equal(am_fsm_registered(&f->fsm, t, &r, now, fresh(f)), AM_REG_NEW);
}

/* Every task asked for now registers at a fake address and starts. */
static void start_all(fixture *f, long long now) {
    for (size_t i = 0; i < f->job->ntasks; i++) {
        am_task *t = &f->job->tasks[i];
        if (t->state != AM_TASK_REQUESTED) continue;
        reg(f, t, now);
    }
    for (size_t i = 0; i < f->job->ntasks; i++) {
        am_task *t = &f->job->tasks[i];
        if (t->state == AM_TASK_REGISTERED) am_fsm_started(&f->fsm, t, 4000 + (int)i, now);
    }
}

/* The first attempt: every REQUEST out, then all register and start. */
static void begin(fixture *f, long long now) {
    am_fsm_start(&f->fsm, now, fresh(f));
    assert_int_equal(f->fsm.state, AM_JOB_REGISTERING);
    start_all(f, now);
}

static void exit_task(fixture *f, const char *role, int index, int status) {
    am_fsm_exited(&f->fsm, task(f, role, index), status, status ? "diag" : NULL, 100, fresh(f));
}

/* The containers the last event asked to stop end as stopped ones do. */
static void stopped(fixture *f) {
    am_actions got = f->out;
    f->out = (am_actions){0};
    for (size_t i = 0; i < got.len; i++)
        if (got.items[i].kind == AM_ACT_STOP && got.items[i].task && !got.items[i].task->exited)
            am_fsm_exited(&f->fsm, got.items[i].task, TONY_EXIT_KILLED_BY_APPMASTER, NULL, 200, fresh(f));
    am_actions_free(&got);
}

static const char *PS_WORKERS[] = {"tony.ps.instances=1", "tony.worker.instances=3", NULL};

static void test_all_workers_succeed(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    begin(f, 0);
    assert_true(am_job_gang_ready(f->job));
    exit_task(f, "worker", 0, 0);
    exit_task(f, "worker", 1, 0);
    assert_false(f->job->attempt_over);
    exit_task(f, "worker", 2, 0);
    /* ps is untracked: the attempt is over without it, and it is stopped */
    assert_true(f->job->attempt_over);
    assert_int_equal(f->job->attempt_status, AM_FINAL_SUCCEEDED);
    assert_int_equal(f->fsm.state, AM_JOB_FINISHING);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1);
    assert_true(stops(f, "ps", 0));
    assert_int_equal(count(f, AM_ACT_FINISH), 0); /* not before ps's container ended */
    exit_task(f, "ps", 0, TONY_EXIT_KILLED_BY_APPMASTER);
    assert_int_equal(task(f, "ps", 0)->state, AM_TASK_FINISHED);
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_int_equal(f->fsm.state, AM_JOB_DONE);
    assert_int_equal(f->fsm.final_status, AM_FINAL_SUCCEEDED);
    assert_string_equal(f->fsm.diagnostics, "All 3 tracked tasks succeeded");
    destroy(f);
}

static void test_non_chief_failure_tolerated_with_ps(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    begin(f, 0);
    exit_task(f, "worker", 2, 1);
    assert_false(f->job->attempt_over);
    exit_task(f, "worker", 0, 0);
    exit_task(f, "worker", 1, 0);
    assert_int_equal(f->job->attempt_status, AM_FINAL_SUCCEEDED);
    assert_non_null(strstr(f->job->attempt_diagnostics, "failedCnt=1"));
    destroy(f);
}

static void test_all_tracked_failed_fails(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    begin(f, 0);
    exit_task(f, "worker", 1, 1);
    exit_task(f, "worker", 2, 1);
    assert_false(f->job->attempt_over);
    /* worker:0 is the chief here: its failure alone ends the attempt */
    exit_task(f, "worker", 0, 1);
    assert_int_equal(f->job->attempt_status, AM_FINAL_FAILED);
    assert_non_null(strstr(f->job->attempt_diagnostics, "Chief task [worker:0]"));
    destroy(f);
}

static void test_chief_role_is_chief(void **state) {
    (void)state;
    const char *kv[] = {"tony.chief.instances=1", "tony.worker.instances=2", "tony.ps.instances=1", NULL};
    fixture *f = make(kv);
    begin(f, 0);
    exit_task(f, "worker", 0, 1); /* not the chief when a chief role exists */
    assert_false(f->job->attempt_over);
    exit_task(f, "chief", 0, 137);
    assert_true(f->job->attempt_over);
    assert_int_equal(f->job->attempt_status, AM_FINAL_FAILED);
    destroy(f);
}

static void test_fail_on_worker_failure(void **state) {
    (void)state;
    const char *kv[] = {"tony.ps.instances=1", "tony.worker.instances=3",
                        "tony.application.fail-on-worker-failure-enabled=true", NULL};
    fixture *f = make(kv);
    begin(f, 0);
    exit_task(f, "worker", 2, 1);
    assert_true(f->job->attempt_over);
    assert_int_equal(f->job->attempt_status, AM_FINAL_FAILED);
    destroy(f);
}

static void test_stop_on_failure_role(void **state) {
    (void)state;
    const char *kv[] = {"tony.ps.instances=1", "tony.worker.instances=2", "tony.evaluator.instances=1",
                        "tony.application.stop-on-failure-jobtypes=evaluator", NULL};
    fixture *f = make(kv);
    begin(f, 0);
    exit_task(f, "evaluator", 0, 2);
    assert_true(f->job->attempt_over);
    assert_non_null(strstr(f->job->attempt_diagnostics, "stop-on-failure"));
    destroy(f);
}

static void test_untracked_failure_fails_fast(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    begin(f, 0);
    exit_task(f, "ps", 0, 1);
    assert_true(f->job->attempt_over);
    assert_non_null(strstr(f->job->attempt_diagnostics, "Untracked task [ps:0]"));
    destroy(f);
}

static void test_sidecar_failure_ignored(void **state) {
    (void)state;
    const char *kv[] = {"tony.ps.instances=1", "tony.worker.instances=1", "tony.tensorboard.instances=1", NULL};
    fixture *f = make(kv);
    begin(f, 0);
    exit_task(f, "tensorboard", 0, 1);
    assert_false(f->job->attempt_over);
    exit_task(f, "worker", 0, 0);
    assert_int_equal(f->job->attempt_status, AM_FINAL_SUCCEEDED);
    destroy(f);
}

static void test_lockstep_failure_ends_attempt(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=3", "tony.application.framework=pytorch", NULL};
    fixture *f = make(kv);
    assert_true(f->plan.lockstep);
    begin(f, 0);
    exit_task(f, "worker", 2, 137);
    assert_true(f->job->attempt_over);
    assert_non_null(strstr(f->job->attempt_diagnostics, "lock-step"));
    destroy(f);
}

static void test_tracked_task_stopped_counts_as_failure(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    begin(f, 0);
    exit_task(f, "worker", 1, TONY_EXIT_KILLED_BY_APPMASTER);
    exit_task(f, "worker", 2, TONY_EXIT_KILLED_BY_APPMASTER);
    exit_task(f, "worker", 0, 0);
    /* TonY counts every non-zero exit: 2 of 3 failed, tolerated with a note */
    assert_int_equal(f->job->attempt_status, AM_FINAL_SUCCEEDED);
    assert_non_null(strstr(f->job->attempt_diagnostics, "failedCnt=2"));
    destroy(f);
}

static void test_gang_ignores_tasks_that_ended_unregistered(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=1", "tony.tensorboard.instances=1", NULL};
    fixture *f = make(kv);
    am_fsm_start(&f->fsm, 0, fresh(f));
    assert_int_equal(count(f, AM_ACT_REQUEST), 2);
    am_task *tb = task(f, "tensorboard", 0), *w = task(f, "worker", 0);
    am_fsm_exited(&f->fsm, tb, TONY_EXIT_ABORTED, "localization failed", 1, fresh(f));
    assert_false(f->job->attempt_over); /* a sidecar: ignored */
    assert_false(am_job_gang_ready(f->job));
    reg(f, w, 2);
    assert_true(am_job_gang_ready(f->job));
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1);
    assert_int_equal(f->fsm.state, AM_JOB_RUNNING);
    destroy(f);
}

static void test_gang_released_only_when_complete(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", NULL};
    fixture *f = make(kv);
    am_fsm_start(&f->fsm, 0, fresh(f));
    reg(f, task(f, "worker", 1), 1);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 0);
    assert_int_equal(f->fsm.state, AM_JOB_REGISTERING);
    /* a renewed poll of the same executor changes nothing */
    am_registration r = {.host = "127.0.0.1", .port = 1};
    assert_int_equal(am_fsm_registered(&f->fsm, task(f, "worker", 1), &r, 2, fresh(f)), AM_REG_AGAIN);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 0);
    reg(f, task(f, "worker", 0), 3);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1);
    assert_int_equal(f->fsm.state, AM_JOB_RUNNING);
    destroy(f);
}

static void test_fcfs_releases_each_task_at_once(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.application.distributed-mode=FCFS", NULL};
    fixture *f = make(kv);
    assert_false(f->plan.gang);
    am_fsm_start(&f->fsm, 0, fresh(f));
    reg(f, task(f, "worker", 1), 1);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1);
    destroy(f);
}

static void test_tb_port_goes_to_the_sidecar_else_the_chief(void **state) {
    (void)state;
    const char *with_chief[] = {"tony.chief.instances=1", "tony.worker.instances=2", NULL};
    fixture *f = make(with_chief);
    assert_true(am_job_reserves_tb_port(f->job, task(f, "chief", 0)));
    assert_false(am_job_reserves_tb_port(f->job, task(f, "worker", 0)));
    destroy(f);
    const char *workers[] = {"tony.worker.instances=2", NULL};
    f = make(workers);
    assert_true(am_job_reserves_tb_port(f->job, task(f, "worker", 0)));
    assert_false(am_job_reserves_tb_port(f->job, task(f, "worker", 1)));
    destroy(f);
    const char *sidecar[] = {"tony.worker.instances=2", "tony.tensorboard.instances=1", NULL};
    f = make(sidecar);
    assert_true(am_job_reserves_tb_port(f->job, task(f, "tensorboard", 0)));
    assert_false(am_job_reserves_tb_port(f->job, task(f, "worker", 0)));
    destroy(f);
}

/* A failed attempt with retries left is restarted; each task keeps a line
 * on each attempt it got a container in; the last allowed failure fails
 * the job. */
static void test_restart_within_budget_then_fail(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.evaluator.instances=1", "tony.am.retry-count=1",
                        "tony.application.restart-backoff-ms=0", "tony.application.restart-mode=reallocate", NULL};
    fixture *f = make(kv);
    assert_int_equal(f->fsm.retries_left, 1);
    begin(f, 10);
    am_task *ev = task(f, "evaluator", 0), *w0 = task(f, "worker", 0);
    ev->started_ms = 0; /* got a container, but its process never started */
    /* each attempt's container has its own log link: the run keeps it */
    w0->log_url = tony_strdup("http://nm1:8042/node/containerlogs/c_1/u");
    exit_task(f, "worker", 0, 3); /* the chief */
    assert_true(f->job->attempt_over);
    assert_true(stops(f, "worker", 1));
    assert_true(stops(f, "evaluator", 0));
    assert_int_equal(count(f, AM_ACT_RESTART), 0);
    stopped(f);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    assert_int_equal(f->fsm.retries_left, 0);
    /* the attempt's record is intact until the next one starts */
    assert_int_equal(f->job->attempt, 0);
    assert_int_equal(w0->state, AM_TASK_FAILED);
    am_fsm_next_attempt(&f->fsm, 300, fresh(f));
    assert_int_equal(f->job->attempt, 1);
    assert_int_equal(count(f, AM_ACT_REQUEST), 3);
    assert_int_equal(f->fsm.state, AM_JOB_REGISTERING);
    assert_int_equal(w0->state, AM_TASK_REQUESTED);
    assert_int_equal(w0->nruns, 1);
    assert_int_equal(w0->runs[0].attempt, 0);
    assert_int_equal(w0->runs[0].state, AM_TASK_FAILED);
    assert_int_equal(w0->runs[0].exit_status, 3);
    assert_true(w0->runs[0].started);
    assert_string_equal(w0->runs[0].log_url, "http://nm1:8042/node/containerlogs/c_1/u");
    assert_null(w0->log_url);
    assert_null(w0->host);
    assert_null(task(f, "worker", 1)->runs[0].log_url);
    assert_int_equal(task(f, "worker", 1)->runs[0].state, AM_TASK_FINISHED);
    assert_int_equal(ev->runs[0].exit_status, TONY_EXIT_KILLED_BY_APPMASTER);
    /* attempt 1 fails too: no retry left */
    start_all(f, 400);
    exit_task(f, "worker", 0, 137);
    stopped(f);
    assert_int_equal(count(f, AM_ACT_RESTART), 0);
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_int_equal(f->fsm.final_status, AM_FINAL_FAILED);
    assert_non_null(strstr(f->fsm.diagnostics, "Chief task [worker:0] failed"));
    assert_int_equal(w0->nruns, 1);
    destroy(f); /* the runs are freed with the job (ASan checks) */
}

static void test_only_first_exit_counts(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    begin(f, 0);
    exit_task(f, "worker", 1, 0);
    exit_task(f, "worker", 1, 1);
    assert_int_equal(task(f, "worker", 1)->state, AM_TASK_SUCCEEDED);
    destroy(f);
}

static void test_exit_before_registration_fails(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    am_fsm_start(&f->fsm, 0, fresh(f));
    am_fsm_exited(&f->fsm, task(f, "worker", 2), 1, "cannot unpack", 5, fresh(f));
    assert_true(f->job->attempt_over);
    assert_non_null(strstr(f->job->attempt_diagnostics, "before it registered"));
    /* the others never registered either: they are stopped, and registering now is refused */
    assert_true(stops(f, "worker", 0));
    am_registration r = {.host = "h", .port = 1};
    assert_int_equal(am_fsm_registered(&f->fsm, task(f, "worker", 0), &r, 6, fresh(f)), AM_REG_ENDING);
    destroy(f);
}

/* A task whose command never ran (issue 34): the root cause is its
 * executor's error from its executor.log, never the script's. */
static void test_root_cause_of_a_command_that_never_ran(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    am_fsm_start(&f->fsm, 0, fresh(f));
    am_task *t = task(f, "worker", 2);
    am_fsm_task_start_log(&f->fsm, t,
                          "2026-12-07 21:43:03.490 INFO  [executor worker:2] starting\n"
                          "2026-12-07 21:43:03.497 ERROR [executor worker:2] unpacking the python venv v.zip: bad",
                          "/jobs/j/attempts/0/worker-2/executor.log");
    am_fsm_exited(&f->fsm, t, AM_EXEC_EXIT_NOT_STARTED, NULL, 5, fresh(f));
    assert_true(f->job->attempt_over);
    stopped(f); /* the others end: the attempt with them */
    assert_non_null(f->fsm.root_cause.task);
    char *text = am_cause_text(&f->fsm.root_cause);
    assert_non_null(strstr(text, "Root cause: worker:2 could not start its command in attempt 0: unpacking the "
                                 "python venv v.zip: bad. Its executor gave up before running it (exit code 122). "
                                 "The end of its executor.log:\n    2026-12-07"));
    assert_non_null(strstr(text, "\nAll of it: /jobs/j/attempts/0/worker-2/executor.log"));
    assert_null(strstr(text, "script's own error"));
    free(text);
    json_t *j = am_cause_json(&f->fsm.root_cause);
    assert_true(json_is_false(json_object_get(j, JOB_CAUSE_COMMAND_STARTED)));
    json_decref(j);
    destroy(f);
}

static void test_heartbeat_expiry(void **state) {
    (void)state;
    const char *kv[] = {"tony.ps.instances=1", "tony.worker.instances=2", "tony.task.heartbeat-interval-ms=100",
                        "tony.task.max-missed-heartbeats=5", NULL};
    fixture *f = make(kv);
    begin(f, 1000);
    am_fsm_tick(&f->fsm, 1400, fresh(f)); /* within 5 x 100 ms */
    assert_int_equal(count(f, AM_ACT_LOST), 0);
    bool changed;
    for (size_t i = 0; i < f->job->ntasks; i++) am_fsm_heartbeat(&f->fsm, &f->job->tasks[i], -1, 1400, &changed);
    task(f, "worker", 1)->last_heartbeat_ms = 1000;
    am_fsm_tick(&f->fsm, 1600, fresh(f));
    assert_int_equal(count(f, AM_ACT_LOST), 1);
    assert_ptr_equal(f->out.items[0].task, task(f, "worker", 1));
    assert_int_equal(task(f, "worker", 1)->state, AM_TASK_FAILED);
    assert_true(f->job->attempt_over);
    assert_non_null(strstr(f->job->attempt_diagnostics, "missed [5] heartbeats"));
    /* everything is stopped, the silent task too (its container may live on) */
    assert_true(stops(f, "worker", 1));
    assert_true(stops(f, "ps", 0));
    assert_true(stops(f, "worker", 0));
    stopped(f);
    assert_int_equal(count(f, AM_ACT_FINISH), 1); /* tony.am.retry-count is 0 */
    assert_int_equal(f->fsm.final_status, AM_FINAL_FAILED);
    assert_int_equal(task(f, "worker", 1)->state, AM_TASK_FAILED);
    destroy(f);
}

static void test_heartbeats_floor_of_three(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=1", "tony.task.heartbeat-interval-ms=100",
                        "tony.task.max-missed-heartbeats=1", NULL};
    fixture *f = make(kv);
    begin(f, 0);
    am_fsm_tick(&f->fsm, 250, fresh(f)); /* TonY: interval x max(3, missed) */
    assert_int_equal(count(f, AM_ACT_LOST), 0);
    am_fsm_tick(&f->fsm, 301, fresh(f));
    assert_int_equal(count(f, AM_ACT_LOST), 1);
    destroy(f);
}

static void test_barrier_waiters_not_expired(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.task.heartbeat-interval-ms=100",
                        "tony.task.max-missed-heartbeats=5", NULL};
    fixture *f = make_polling(kv, 20000);
    am_fsm_start(&f->fsm, 0, fresh(f));
    /* worker:0 registered and waits in its long poll for a slow peer */
    reg(f, task(f, "worker", 0), 0);
    am_fsm_tick(&f->fsm, 5000, fresh(f));
    assert_int_equal(count(f, AM_ACT_LOST), 0);
    /* its poll answered "wait" at 15 s, and it never polls again: silent
     * a poll's length and the heartbeats' expiry after that answer */
    am_fsm_poll_answered(&f->fsm, task(f, "worker", 0), 15000);
    am_fsm_tick(&f->fsm, 35500, fresh(f));
    assert_int_equal(count(f, AM_ACT_LOST), 0);
    am_fsm_tick(&f->fsm, 35501, fresh(f));
    assert_int_equal(count(f, AM_ACT_LOST), 1);
    destroy(f);
}

/* Issue 26: a task whose register long poll is held waits at the barrier,
 * alive however long the gang takes to form or to be answered (5,000 "go"
 * answers took longer than 25 heartbeats, and the first tasks were
 * declared lost); its silence counts again from the poll's answer. */
static void test_held_poll_is_alive(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.task.heartbeat-interval-ms=100",
                        "tony.task.max-missed-heartbeats=5", NULL};
    fixture *f = make_polling(kv, 1000);
    am_fsm_start(&f->fsm, 0, fresh(f));
    am_task *w0 = task(f, "worker", 0), *w1 = task(f, "worker", 1);
    reg(f, w0, 0);
    assert_true(w0->polling);
    /* far past interval x missed + the poll window: its poll is still held */
    am_fsm_tick(&f->fsm, 60000, fresh(f));
    assert_int_equal(count(f, AM_ACT_LOST), 0);
    assert_int_equal(w0->state, AM_TASK_REGISTERED);
    /* the gang completes; the answers take a minute to go out */
    reg(f, w1, 60000);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1);
    am_fsm_tick(&f->fsm, 120000, fresh(f));
    assert_int_equal(count(f, AM_ACT_LOST), 0);
    /* worker:1 got its "go" and started; worker:0's answer went at 120 s */
    am_fsm_poll_answered(&f->fsm, w1, 120000);
    am_fsm_started(&f->fsm, w1, 4001, 120000);
    am_fsm_poll_answered(&f->fsm, w0, 120000);
    assert_false(w0->polling);
    assert_int_equal(w0->last_heartbeat_ms, 120000);
    bool changed;
    am_fsm_heartbeat(&f->fsm, w1, -1, 121400, &changed);
    am_fsm_tick(&f->fsm, 121500, fresh(f)); /* 500 ms expiry + 1000 ms poll window */
    assert_int_equal(count(f, AM_ACT_LOST), 0);
    /* worker:0 never started nor polled again after its answer: lost */
    am_fsm_tick(&f->fsm, 121501, fresh(f));
    assert_int_equal(count(f, AM_ACT_LOST), 1);
    assert_ptr_equal(f->out.items[0].task, w0);
    assert_true(w0->lost);
    destroy(f);
}

/* The count of registered tasks is a running one (issue 26: no walk per
 * registration): it follows registrations and the next attempt's reset. */
static void test_registered_count(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=3", "tony.am.retry-count=1", "tony.application.restart-backoff-ms=0",
                        "tony.application.restart-mode=reallocate", NULL};
    fixture *f = make(kv);
    am_fsm_start(&f->fsm, 0, fresh(f));
    assert_int_equal(am_job_count_registered(f->job), 0);
    reg(f, task(f, "worker", 0), 1);
    assert_int_equal(am_job_count_registered(f->job), 1);
    /* a renewed poll is no new registration */
    am_registration r = {.host = "127.0.0.1", .port = 1000};
    assert_int_equal(am_fsm_registered(&f->fsm, task(f, "worker", 0), &r, 2, fresh(f)), AM_REG_AGAIN);
    assert_int_equal(am_job_count_registered(f->job), 1);
    reg(f, task(f, "worker", 1), 3);
    reg(f, task(f, "worker", 2), 3);
    assert_int_equal(am_job_count_registered(f->job), 3);
    /* worker:1 fails: the attempt ends, every container is stopped, the next one starts afresh */
    for (size_t i = 0; i < 3; i++) am_fsm_started(&f->fsm, &f->job->tasks[i], 10 + (int)i, 4);
    exit_task(f, "worker", 1, 1);
    stopped(f);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    am_fsm_next_attempt(&f->fsm, 300, fresh(f));
    assert_int_equal(f->job->attempt, 1);
    assert_int_equal(am_job_count_registered(f->job), 0);
    reg(f, task(f, "worker", 2), 301);
    assert_int_equal(am_job_count_registered(f->job), 1);
    destroy(f);
}

static void test_registration_timeout(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.container.registration.timeout=1000", NULL};
    fixture *f = make(kv);
    am_fsm_start(&f->fsm, 0, fresh(f));
    reg(f, task(f, "worker", 0), 500);
    am_fsm_tick(&f->fsm, 900, fresh(f));
    assert_false(f->job->attempt_over);
    am_fsm_tick(&f->fsm, 1100, fresh(f));
    assert_true(f->job->attempt_over);
    assert_non_null(strstr(f->job->attempt_diagnostics, "[worker:1] registration timeout"));
    assert_true(stops(f, "worker", 0));
    assert_true(stops(f, "worker", 1));
    /* the waiting executor is answered "ending" */
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1);
    destroy(f);
}

static void test_stages_order_requests(void **state) {
    (void)state;
    const char *kv[] = {"tony.prep.instances=1", "tony.worker.instances=2", "tony.ps.instances=1",
                        "tony.application.prepare-stage=prep,ps", NULL};
    fixture *f = make(kv);
    assert_true(f->plan.has_stages);
    am_task *prep = task(f, "prep", 0), *w = task(f, "worker", 0), *ps = task(f, "ps", 0);
    begin(f, 0);
    assert_int_equal(prep->state, AM_TASK_RUNNING);
    assert_int_equal(ps->state, AM_TASK_RUNNING);
    assert_int_equal(w->state, AM_TASK_NEW);
    assert_int_equal(am_job_count_requested(f->job), 2);
    /* the training stage waits for the tracked prepare tasks only (ps is untracked) */
    exit_task(f, "prep", 0, 0);
    assert_false(f->job->attempt_over);
    assert_int_equal(count(f, AM_ACT_REQUEST), 2);
    assert_int_equal(w->state, AM_TASK_REQUESTED);
    assert_int_equal(f->fsm.state, AM_JOB_REGISTERING);
    start_all(f, 10);
    assert_true(am_job_gang_ready(f->job));
    exit_task(f, "worker", 0, 0);
    exit_task(f, "worker", 1, 0);
    assert_int_equal(f->job->attempt_status, AM_FINAL_SUCCEEDED);
    destroy(f);
}

static void test_kill_stops_everything_and_never_restarts(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.am.retry-count=3", NULL};
    fixture *f = make(kv);
    begin(f, 0);
    am_fsm_kill(&f->fsm, 50, fresh(f));
    assert_true(stops(f, "worker", 0));
    assert_true(stops(f, "worker", 1));
    assert_int_equal(f->fsm.state, AM_JOB_FINISHING);
    stopped(f);
    assert_int_equal(count(f, AM_ACT_RESTART), 0);
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_int_equal(f->fsm.final_status, AM_FINAL_KILLED);
    assert_string_equal(f->fsm.diagnostics, "Killed by the user");
    assert_int_equal(f->fsm.retries_left, 3);
    destroy(f);
}

static void test_application_timeout_never_restarts(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=1", "tony.am.retry-count=3", "tony.application.timeout=5000", NULL};
    fixture *f = make(kv);
    begin(f, 0);
    am_fsm_tick(&f->fsm, 4000, fresh(f));
    assert_false(f->job->attempt_over);
    am_fsm_tick(&f->fsm, 5001, fresh(f));
    assert_true(f->fsm.timed_out);
    assert_true(stops(f, "worker", 0));
    stopped(f);
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_int_equal(f->fsm.final_status, AM_FINAL_FAILED);
    assert_non_null(strstr(f->fsm.diagnostics, "tony.application.timeout"));
    destroy(f);
}

/* Issue 11 #1: a stop that did not end its container is asked again on a
 * timer, each wait twice the last, AM_FSM_STOP_TRIES times; then the
 * container is given up on and the job finishes rather than staying in
 * FINISHING. */
static void test_stop_is_tried_again_then_given_up(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    begin(f, 0);
    exit_task(f, "worker", 0, 0);
    exit_task(f, "worker", 1, 0);
    exit_task(f, "worker", 2, 0); /* at 100 */
    assert_true(stops(f, "ps", 0));
    long long first = task(f, "ps", 0)->stop_ms;
    int tries = 1;
    long long wait = AM_FSM_STOP_RETRY_MS;
    for (long long now = first + 50; now < first + 60000; now += 50) {
        am_fsm_tick(&f->fsm, now, fresh(f));
        if (stops(f, "ps", 0)) {
            tries++;
            /* each try comes when its wait is over, not before */
            assert_true(now - task(f, "ps", 0)->stop_ms < 50);
            assert_int_equal(f->out.items[0].try_no, tries);
            assert_true(now >= first + wait);
            first = now;
            wait *= 2;
        }
        if (count(f, AM_ACT_FINISH)) {
            assert_int_equal(tries, AM_FSM_STOP_TRIES);
            assert_true(now >= first + wait);
            assert_true(task(f, "ps", 0)->stop_given_up);
            assert_int_equal(f->fsm.final_status, AM_FINAL_SUCCEEDED);
            destroy(f);
            return;
        }
        assert_int_equal(f->fsm.state, AM_JOB_FINISHING);
    }
    fail_msg("the job stayed in FINISHING for a minute after %d stop(s)", tries);
}

/* Issue 11 #1: while the coordinator is finishing, a heartbeat's answer
 * tells the executor to stop its task; the task that ends that way (exit
 * 143: SIGTERM) counts as stopped by us, not as a failure. */
static void test_heartbeat_tells_executor_to_stop_when_finishing(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    begin(f, 0);
    bool changed;
    am_task *ps = task(f, "ps", 0);
    assert_int_equal(am_fsm_heartbeat(&f->fsm, ps, -1, 50, &changed), AM_HB_OK);
    exit_task(f, "worker", 0, 0);
    exit_task(f, "worker", 1, 0);
    exit_task(f, "worker", 2, 0);
    assert_int_equal(f->fsm.state, AM_JOB_FINISHING);
    assert_int_equal(am_fsm_heartbeat(&f->fsm, ps, -1, 150, &changed), AM_HB_STOP);
    am_fsm_exited(&f->fsm, ps, 143, NULL, 200, fresh(f));
    assert_int_equal(ps->state, AM_TASK_FINISHED);
    assert_int_equal(ps->exit_status, 143);
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_int_equal(f->fsm.final_status, AM_FINAL_SUCCEEDED);
    destroy(f);
}

static void test_tensorboard_seen_through_heartbeats(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=1", NULL};
    fixture *f = make(kv);
    am_fsm_start(&f->fsm, 0, fresh(f));
    am_task *w = task(f, "worker", 0);
    am_registration r = {.host = "h", .port = 5, .tb_port = 6006, .log_dir = "/logs/w0", .container = "c_1"};
    assert_int_equal(am_fsm_registered(&f->fsm, w, &r, 1, fresh(f)), AM_REG_NEW);
    assert_string_equal(w->log_dir, "/logs/w0");
    assert_string_equal(w->container, "c_1");
    assert_null(w->log_url);
    bool changed;
    am_fsm_heartbeat(&f->fsm, w, 0, 2, &changed);
    assert_false(changed);
    am_fsm_heartbeat(&f->fsm, w, 1, 3, &changed);
    assert_true(changed && w->tb_listening);
    am_fsm_heartbeat(&f->fsm, w, -1, 4, &changed);
    assert_true(!changed && w->tb_listening);
    destroy(f);
}

/* A launch that failed at once ends the attempt; the requests after it in
 * the same batch are dropped, and the job finishes without them. */
static void test_request_dropped_after_attempt_ended(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=3", NULL};
    fixture *f = make(kv);
    am_fsm_start(&f->fsm, 0, fresh(f));
    assert_int_equal(count(f, AM_ACT_REQUEST), 3);
    am_actions batch = f->out;
    f->out = (am_actions){0};
    am_fsm_exited(&f->fsm, batch.items[0].task, TONY_EXIT_ABORTED, "no such directory", 1, fresh(f));
    assert_true(f->job->attempt_over);
    assert_int_equal(count(f, AM_ACT_FINISH), 0);
    am_fsm_request_dropped(&f->fsm, batch.items[1].task, 1, fresh(f));
    assert_int_equal(batch.items[1].task->state, AM_TASK_NEW);
    am_fsm_request_dropped(&f->fsm, batch.items[2].task, 1, fresh(f));
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_int_equal(f->fsm.final_status, AM_FINAL_FAILED);
    assert_non_null(strstr(f->fsm.diagnostics, "failed before it registered"));
    assert_int_equal(batch.items[1].task->nruns, 0);
    am_actions_free(&batch);
    destroy(f);
}

static void test_single_node(void **state) {
    (void)state;
    const char *ok[] = {"tony.application.timeout=0", NULL};
    fixture *f = make(ok);
    assert_true(f->plan.single_node);
    am_fsm_single_started(&f->fsm);
    assert_int_equal(f->fsm.state, AM_JOB_RUNNING);
    am_fsm_single_exited(&f->fsm, 0, 10, fresh(f));
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_int_equal(f->fsm.final_status, AM_FINAL_SUCCEEDED);
    destroy(f);
    const char *timeout[] = {"tony.application.timeout=1000", NULL};
    f = make(timeout);
    am_fsm_single_started(&f->fsm);
    am_fsm_tick(&f->fsm, 1001, fresh(f));
    assert_int_equal(count(f, AM_ACT_STOP), 1);
    assert_null(f->out.items[0].task);
    am_fsm_single_exited(&f->fsm, 137, 1100, fresh(f));
    assert_int_equal(f->fsm.final_status, AM_FINAL_FAILED);
    assert_non_null(strstr(f->fsm.diagnostics, "Timed out"));
    destroy(f);
    f = make(ok);
    am_fsm_single_started(&f->fsm);
    am_fsm_kill(&f->fsm, 5, fresh(f));
    assert_int_equal(count(f, AM_ACT_STOP), 1);
    am_fsm_single_exited(&f->fsm, 137, 6, fresh(f));
    assert_int_equal(f->fsm.final_status, AM_FINAL_KILLED);
    destroy(f);
}


/* ---------- restart policies (policy.h) and root cause (cause.h) ---------- */

/* Fails worker:index with status at `now`; with fail-on-worker-failure the
 * attempt ends, the others are stopped and end as stopped ones do. */
static void fail_task_at(fixture *f, am_task *t, int status, long long now) {
    am_fsm_exited(&f->fsm, t, status, NULL, now, fresh(f));
    /* every action of the sequence is kept in f->out */
    for (size_t i = 0; i < f->out.len; i++) {
        am_action a = f->out.items[i];
        if (a.kind == AM_ACT_STOP && a.task && !a.task->exited)
            am_fsm_exited(&f->fsm, a.task, TONY_EXIT_KILLED_BY_APPMASTER, NULL, now, &f->out);
    }
}

static void fail_worker_at(fixture *f, int index, int status, long long now) {
    fail_task_at(f, task(f, "worker", index), status, now);
}

/* exit-code: a script's own exit code (1-127) is permanent: the job ends at
 * once, with the budget untouched, saying why and naming the key; the root
 * cause names the first task to fail and the end of its stderr. */
static void test_exit_code_policy_does_not_retry_script_error(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.am.retry-count=3", "tony.application.restart-policy=exit-code",
                        "tony.application.fail-on-worker-failure-enabled=true", "tony.application.restart-mode=reallocate", NULL};
    fixture *f = make(kv);
    begin(f, 0);
    am_fsm_task_output(&f->fsm, task(f, "worker", 1), "Traceback (most recent call last):\n  File \"t.py\"\nValueError: boom",
                       NULL);
    fail_worker_at(f, 1, 1, 100);
    assert_int_equal(count(f, AM_ACT_RESTART), 0);
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_int_equal(f->fsm.final_status, AM_FINAL_FAILED);
    assert_int_equal(f->fsm.retries_left, 3);
    const char *d = f->fsm.diagnostics;
    assert_non_null(strstr(d, "Not retried: exit code 1 is the script's own error"));
    assert_non_null(strstr(d, "tony.application.restart-policy is exit-code"));
    assert_non_null(strstr(d, "Root cause: worker:1 failed first in attempt 0 on 127.0.0.1: exit code 1 (the "
                              "script's own error). The end of its stderr:\n    Traceback"));
    assert_non_null(strstr(d, "\n    ValueError: boom"));
    /* the reason comes before the traceback */
    assert_true(strstr(d, "Not retried") < strstr(d, "Root cause"));
    assert_string_equal(f->fsm.root_cause.task, "worker:1");
    assert_int_equal(f->fsm.root_cause.exit_status, 1);
    destroy(f);
}

/* What the scheduler, which shows the diagnostics to others, is told
 * (am.c's teardown; YARN's RM): the same diagnostics with every task's
 * last words out, those of an earlier attempt's cause too, and what
 * follows them kept. */
static void test_diagnostics_without_output_keep_the_rest(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.am.retry-count=3", "tony.application.restart-policy=exit-code",
                        "tony.application.fail-on-worker-failure-enabled=true", "tony.application.restart-mode=reallocate", NULL};
    fixture *f = make(kv);
    begin(f, 0);
    am_fsm_task_output(&f->fsm, task(f, "worker", 1), "secret-ish line\n\n  File \"t.py\"\nValueError: boom", NULL);
    fail_worker_at(f, 1, 1, 100);
    char *told = am_cause_without_output(f->fsm.diagnostics);
    assert_null(strstr(told, "secret-ish"));
    assert_null(strstr(told, "ValueError"));
    assert_null(strstr(told, "t.py"));
    assert_non_null(strstr(told, "Not retried: exit code 1 is the script's own error"));
    assert_non_null(strstr(told, "Root cause: worker:1 failed first in attempt 0 on 127.0.0.1: exit code 1 (the "
                                 "script's own error). Its last words are left out here"));
    free(told);
    /* two causes (a restart keeps the earlier one), text after each, an
     * error file's report: all last words go, the rest stays */
    told = am_cause_without_output("A. The end of its stderr:\n    one\n    two\nThen B. Its error file (torch's "
                                   "@record) says:\n    three\nEnd.");
    assert_string_equal(told, "A. Its last words are left out here, where others may read them: `tony status` shows "
                              "them to the job's owner.\nThen B. Its last words are left out here, where others may "
                              "read them: `tony status` shows them to the job's owner.\nEnd.");
    free(told);
    told = am_cause_without_output("Killed by the user");
    assert_string_equal(told, "Killed by the user");
    free(told);
    destroy(f);
}

/* exit-code retries a signal. The first restart comes at once; then, in a
 * crash loop (attempts that fail under the healthy stretch), the backoff,
 * doubled per quick failure up to its cap, waited for on ticks in BACKOFF. */
static void test_exit_code_policy_retries_signal_after_backoff(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.am.retry-count=4", "tony.application.restart-policy=exit-code",
                        "tony.application.fail-on-worker-failure-enabled=true",
                        "tony.application.restart-backoff-ms=1000", "tony.application.restart-backoff-max-ms=3000",
                        "tony.application.restart-healthy-ms=60000", "tony.application.restart-mode=reallocate", NULL};
    fixture *f = make(kv);
    begin(f, 0);
    long long now = 1000;
    long long waits[] = {0, 1000, 2000, 3000}; /* at once, then doubled, then capped */
    for (int a = 0; a < 4; a++) {
        fail_worker_at(f, 0, 128 + 9, now); /* SIGKILL */
        assert_int_equal(f->fsm.quick_failures, a + 1);
        if (waits[a]) {
            assert_int_equal(f->fsm.state, AM_JOB_BACKOFF);
            assert_int_equal(count(f, AM_ACT_RESTART), 0);
            assert_int_equal(f->fsm.restart_at_ms, now + waits[a]);
            am_fsm_tick(&f->fsm, now + waits[a] - 1, fresh(f));
            assert_int_equal(count(f, AM_ACT_RESTART), 0);
            am_fsm_tick(&f->fsm, now + waits[a], fresh(f));
        }
        assert_int_equal(count(f, AM_ACT_RESTART), 1);
        assert_int_equal(f->fsm.retries_left, 3 - a);
        /* the restart's record tells the root cause */
        assert_non_null(strstr(f->job->attempt_diagnostics, "Root cause: worker:0 failed first"));
        assert_non_null(strstr(f->job->attempt_diagnostics, "killed by signal 9"));
        am_fsm_tick(&f->fsm, now + waits[a] + 1, fresh(f)); /* no second restart */
        assert_int_equal(count(f, AM_ACT_RESTART), 0);
        now += waits[a];
        am_fsm_next_attempt(&f->fsm, now, fresh(f));
        assert_int_equal(f->job->attempt, a + 1);
        start_all(f, now);
        now += 500; /* each attempt dies half a second in */
    }
    /* budget exhausted: the end, saying so */
    fail_worker_at(f, 1, 128 + 15, now);
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_non_null(strstr(f->fsm.diagnostics, "Not retried: no restarts left (tony.am.retry-count=4)"));
    assert_non_null(strstr(f->fsm.diagnostics, "Root cause: worker:1 failed first in attempt 4"));
    destroy(f);
}

/* Backoff is for crash loops (policy.h), transition by transition: the
 * first failure restarts at once, the second quick one waits the backoff;
 * an attempt that ran the healthy stretch before failing restarts at once
 * and starts the count over, so the next quick failure is again the first.
 * An attempt whose processes never started ran for nothing; the stretch is
 * counted from the first process start, not from the containers' request. */
static void test_backoff_only_in_a_crash_loop(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.am.retry-count=9",
                        "tony.application.fail-on-worker-failure-enabled=true",
                        "tony.application.restart-backoff-ms=1000", "tony.application.restart-healthy-ms=10000",
                        "tony.application.restart-mode=reallocate", NULL};
    fixture *f = make(kv);
    am_fsm_start(&f->fsm, 0, fresh(f));
    /* registered at 0, started only at 50000 (a long wait for the gang): it dies 2 s in */
    for (size_t i = 0; i < f->job->ntasks; i++) reg(f, &f->job->tasks[i], 0);
    for (size_t i = 0; i < f->job->ntasks; i++) am_fsm_started(&f->fsm, &f->job->tasks[i], 4000 + (int)i, 50000);
    fail_worker_at(f, 0, 1, 52000);
    assert_int_equal(f->fsm.quick_failures, 1);
    assert_int_equal(count(f, AM_ACT_RESTART), 1); /* the first failure: at once */
    am_fsm_next_attempt(&f->fsm, 52000, fresh(f));
    start_all(f, 52000);
    fail_worker_at(f, 1, 1, 52000 + 9999); /* one ms short of healthy */
    assert_int_equal(f->fsm.quick_failures, 2);
    assert_int_equal(f->fsm.state, AM_JOB_BACKOFF);
    assert_int_equal(count(f, AM_ACT_RESTART), 0);
    assert_int_equal(f->fsm.restart_at_ms, 61999 + 1000);
    am_fsm_tick(&f->fsm, 62999, fresh(f));
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    am_fsm_next_attempt(&f->fsm, 62999, fresh(f));
    start_all(f, 62999);
    /* this one ran the healthy stretch: at once, the count starts over */
    fail_worker_at(f, 0, 1, 62999 + 10000);
    assert_int_equal(f->fsm.quick_failures, 0);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    am_fsm_next_attempt(&f->fsm, 72999, fresh(f));
    start_all(f, 72999);
    fail_worker_at(f, 0, 1, 73000); /* quick, but the first since the healthy one */
    assert_int_equal(f->fsm.quick_failures, 1);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    am_fsm_next_attempt(&f->fsm, 73000, fresh(f));
    /* no process ever started (the containers failed): quick, the second */
    am_fsm_exited(&f->fsm, task(f, "worker", 0), 1, NULL, 90000, fresh(f));
    for (size_t i = 0; i < f->out.len; i++)
        if (f->out.items[i].kind == AM_ACT_STOP && !f->out.items[i].task->exited)
            am_fsm_exited(&f->fsm, f->out.items[i].task, TONY_EXIT_KILLED_BY_APPMASTER, NULL, 90000, &f->out);
    assert_int_equal(f->fsm.quick_failures, 2);
    assert_int_equal(f->fsm.state, AM_JOB_BACKOFF);
    assert_int_equal(f->fsm.restart_at_ms, 91000);
    destroy(f);
}

/* YARN's codes and lost tasks (no exit status) are retryable under
 * exit-code; with no backoff the restart comes at once. */
static void test_exit_code_policy_retries_preempted_and_lost(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=1", "tony.am.retry-count=2", "tony.application.restart-policy=exit-code",
                        "tony.application.restart-backoff-ms=0", "tony.task.max-missed-heartbeats=3", "tony.application.restart-mode=reallocate", NULL};
    fixture *f = make(kv);
    begin(f, 0);
    fail_worker_at(f, 0, TONY_EXIT_PREEMPTED, 100);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    am_fsm_next_attempt(&f->fsm, 200, fresh(f));
    start_all(f, 200);
    am_fsm_tick(&f->fsm, 200 + 3000 + 1, fresh(f)); /* heartbeats missed */
    assert_int_equal(count(f, AM_ACT_LOST), 1);
    am_fsm_exited(&f->fsm, task(f, "worker", 0), TONY_EXIT_KILLED_BY_APPMASTER, NULL, 3300, fresh(f));
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    assert_string_equal(f->fsm.root_cause.task, "worker:0");
    assert_int_equal(f->fsm.root_cause.exit_status, TONY_EXIT_INVALID);
    assert_non_null(strstr(f->job->attempt_diagnostics, "its container was lost"));
    destroy(f);
}

/* A role's policy overrides the job's: the policy that applies is the one
 * of the role whose task failed first. */
static void test_role_policy_overrides_job_policy(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.evaluator.instances=1", "tony.am.retry-count=2",
                        "tony.worker.restart-policy=never", "tony.application.restart-backoff-ms=0",
                        "tony.application.fail-on-worker-failure-enabled=true", "tony.application.restart-mode=reallocate", NULL};
    fixture *f = make(kv);
    begin(f, 0);
    /* the evaluator fails first: on-failure (the job's) retries */
    fail_task_at(f, task(f, "evaluator", 0), 2, 100);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    am_fsm_next_attempt(&f->fsm, 300, fresh(f));
    start_all(f, 300);
    /* a worker fails first: never */
    fail_worker_at(f, 1, 137, 400);
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_non_null(strstr(f->fsm.diagnostics, "Not retried: tony.worker.restart-policy is never"));
    assert_int_equal(f->fsm.retries_left, 1);
    destroy(f);
}

/* The first task to fail by time is the root cause, not the one that
 * ended the attempt; torch's error report is preferred to stderr. */
static void test_root_cause_is_first_failure_and_prefers_error_file(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=3", "tony.application.fail-fast-lockstep=false", "tony.application.restart-mode=reallocate", NULL};
    fixture *f = make(kv);
    begin(f, 0);
    am_task *w2 = task(f, "worker", 2);
    am_fsm_task_output(&f->fsm, w2, "noise on stderr", "Traceback...\nRuntimeError: rank 2 broke");
    am_fsm_exited(&f->fsm, w2, 1, NULL, 100, fresh(f));
    assert_false(f->job->attempt_over); /* a worker that is not the chief */
    fail_worker_at(f, 0, 3, 200); /* the chief ends the attempt */
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_string_equal(f->fsm.root_cause.task, "worker:2");
    assert_non_null(strstr(f->fsm.diagnostics, "Chief task [worker:0] failed"));
    assert_non_null(strstr(f->fsm.diagnostics, "Its error file (torch's @record) says:\n    Traceback...\n    "
                                                 "RuntimeError: rank 2 broke"));
    assert_null(strstr(f->fsm.diagnostics, "noise"));
    /* with no retry asked for there is nothing to explain */
    assert_null(strstr(f->fsm.diagnostics, "Not retried"));
    destroy(f);
}

/* An exit told late (held while the coordinator reads the task's stderr
 * through the backend) counts at its own time: it failed first, before the
 * stop it was sent meanwhile, so it is the root cause and FAILED. */
static void test_exit_told_late_counts_at_its_time(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.application.fail-on-worker-failure-enabled=true", "tony.application.restart-mode=reallocate", NULL};
    fixture *f = make(kv);
    begin(f, 0);
    am_fsm_exited(&f->fsm, task(f, "worker", 1), 1, NULL, 300, fresh(f));
    assert_true(stops(f, "worker", 0)); /* its end is not known yet */
    am_fsm_task_output(&f->fsm, task(f, "worker", 0), "oom-ish end of worker 0", NULL);
    am_fsm_exited(&f->fsm, task(f, "worker", 0), 137, NULL, 100, fresh(f));
    assert_int_equal(task(f, "worker", 0)->state, AM_TASK_FAILED);
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_string_equal(f->fsm.root_cause.task, "worker:0");
    assert_non_null(strstr(f->fsm.diagnostics, "Root cause: worker:0 failed first"));
    assert_non_null(strstr(f->fsm.diagnostics, "oom-ish end of worker 0"));
    destroy(f);
}

/* A failure made permanent (a log policy's `fail`, a config error) is not
 * retried under any policy, and says why. */
static void test_permanent_failures_are_not_retried(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.am.retry-count=3", "tony.application.restart-backoff-ms=0",
                        "tony.application.fail-on-worker-failure-enabled=true", "tony.application.restart-mode=reallocate", NULL};
    fixture *f = make(kv);
    begin(f, 0);
    am_fsm_task_permanent(&f->fsm, task(f, "worker", 1), "its output matched 'CUDA out of memory'");
    fail_worker_at(f, 0, 137, 100); /* another task's failure came first: still permanent */
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_non_null(strstr(f->fsm.diagnostics, "Not retried: its output matched 'CUDA out of memory'"));
    destroy(f);

    f = make(kv);
    begin(f, 0);
    am_fsm_fail_permanently(&f->fsm, "cannot build the env of worker:0: bad", 100, fresh(f));
    for (size_t i = 0; i < f->out.len; i++)
        if (f->out.items[i].kind == AM_ACT_STOP && !f->out.items[i].task->exited)
            am_fsm_exited(&f->fsm, f->out.items[i].task, TONY_EXIT_KILLED_BY_APPMASTER, NULL, 100, &f->out);
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_int_equal(f->fsm.retries_left, 3);
    assert_non_null(strstr(f->fsm.diagnostics, "cannot build the env of worker:0: bad\nNot retried: the attempt "
                                                 "failed on its configuration"));
    destroy(f);
}

/* A crash loop's second quick failure, at `now`: the first restarts at
 * once, the second waits the backoff (in BACKOFF). */
static void crash_twice(fixture *f, long long now) {
    fail_worker_at(f, 0, 1, now);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    am_fsm_next_attempt(&f->fsm, now, fresh(f));
    start_all(f, now);
    fail_worker_at(f, 0, 1, now);
}

/* Killed, or out of time, while waiting to restart (a crash loop's
 * backoff): the end, at once. */
static void test_kill_or_timeout_during_backoff(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=1", "tony.am.retry-count=3", "tony.application.timeout=60000", "tony.application.restart-mode=reallocate", NULL};
    fixture *f = make(kv);
    begin(f, 0);
    crash_twice(f, 100);
    assert_int_equal(f->fsm.state, AM_JOB_BACKOFF);
    am_fsm_kill(&f->fsm, 200, fresh(f));
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_int_equal(count(f, AM_ACT_RESTART), 0);
    assert_int_equal(f->fsm.final_status, AM_FINAL_KILLED);
    assert_non_null(strstr(f->fsm.diagnostics, "Killed by the user while waiting to restart"));
    destroy(f);

    f = make(kv);
    begin(f, 0);
    crash_twice(f, 59900);
    assert_int_equal(f->fsm.state, AM_JOB_BACKOFF);
    am_fsm_tick(&f->fsm, 60001, fresh(f));
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_int_equal(count(f, AM_ACT_RESTART), 0);
    assert_int_equal(f->fsm.final_status, AM_FINAL_FAILED);
    assert_non_null(strstr(f->fsm.diagnostics, "(tony.application.timeout) while waiting to restart"));
    destroy(f);
}

/* In-place restarts (tony.application.restart-mode=in-place, the default),
 * without a backoff (policy.h) so that the restart follows at once. */
static const char *IN_PLACE[] = {"tony.worker.instances=3", "tony.am.retry-count=1",
                                 "tony.application.restart-backoff-ms=0", NULL};

static long long heartbeat_expiry_for(const fixture *f) {
    int missed = f->plan.max_missed_heartbeats < 3 ? 3 : f->plan.max_missed_heartbeats;
    return f->plan.heartbeat_interval_ms * missed;
}

static void report(fixture *f, const char *role, int index, int code, long long now) {
    am_fsm_result_reported(&f->fsm, task(f, role, index), code, false, now, fresh(f));
}

/* The attempt that failed in place: kept executors re-register, and the
 * gang of the next attempt is released with them, no container asked for. */
static void reregister_all(fixture *f, long long now) {
    for (size_t i = 0; i < f->job->ntasks; i++) {
        am_task *t = &f->job->tasks[i];
        if (t->state == AM_TASK_REQUESTED) reg(f, t, now);
    }
}

/* A failure with every container healthy: the executors stop their
 * processes themselves, are told to wait for the next attempt, and the
 * next attempt starts in the same containers. */
static void test_in_place_restart_keeps_containers(void **state) {
    (void)state;
    fixture *f = make(IN_PLACE);
    assert_true(f->fsm.in_place);
    begin(f, 0);
    report(f, "worker", 1, 1, 100); /* lock-step training: the attempt ends */
    assert_true(f->job->attempt_over);
    assert_int_equal(task(f, "worker", 1)->state, AM_TASK_FAILED);
    /* no container is stopped: heartbeats tell the others to stop in place */
    assert_int_equal(count(f, AM_ACT_STOP), 0);
    assert_int_equal(count(f, AM_ACT_RESTART), 0);
    assert_true(am_fsm_keeps_container(&f->fsm, task(f, "worker", 1)));
    bool tb;
    assert_int_equal(am_fsm_heartbeat(&f->fsm, task(f, "worker", 0), -1, 150, &tb), AM_HB_STOP);
    report(f, "worker", 0, 143, 300);
    assert_int_equal(task(f, "worker", 0)->state, AM_TASK_FINISHED); /* stopped, not failed */
    assert_int_equal(count(f, AM_ACT_RESTART), 0);
    report(f, "worker", 2, 143, 320);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    assert_int_equal(f->fsm.retries_left, 0);
    /* the last one to report is kept too (its retry is spent already) */
    assert_true(am_fsm_keeps_container(&f->fsm, task(f, "worker", 2)));
    am_fsm_next_attempt(&f->fsm, 400, fresh(f));
    assert_int_equal(f->job->attempt, 1);
    assert_int_equal(count(f, AM_ACT_REQUEST), 0); /* every container kept */
    for (int i = 0; i < 3; i++) {
        am_task *t = task(f, "worker", i);
        assert_int_equal(t->state, AM_TASK_REQUESTED);
        assert_int_equal(t->container_attempt, 0);
        assert_null(t->host);
        assert_int_equal(t->nruns, 1);
        assert_int_equal(t->stop_asked_ms, 0);
    }
    assert_int_equal(task(f, "worker", 1)->runs[0].exit_status, 1);
    assert_int_equal(f->fsm.state, AM_JOB_REGISTERING);
    reregister_all(f, 500);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1); /* the last one completes the gang */
    assert_int_equal(f->fsm.state, AM_JOB_RUNNING);
    /* the second attempt succeeds: its executors exit, their containers end */
    for (int i = 0; i < 3; i++) am_fsm_started(&f->fsm, task(f, "worker", i), 10 + i, 600);
    for (int i = 0; i < 3; i++) report(f, "worker", i, 0, 700);
    assert_true(f->job->attempt_over);
    assert_false(am_fsm_keeps_container(&f->fsm, task(f, "worker", 0)));
    /* their executors exit by themselves: no stop unless one lingers */
    assert_int_equal(count(f, AM_ACT_STOP), 0);
    am_fsm_exited(&f->fsm, task(f, "worker", 0), 0, NULL, 710, fresh(f));
    am_fsm_exited(&f->fsm, task(f, "worker", 1), 0, NULL, 720, fresh(f));
    assert_int_equal(count(f, AM_ACT_FINISH), 0);
    am_fsm_tick(&f->fsm, 700 + f->plan.heartbeat_interval_ms + AM_FSM_IN_PLACE_STOP_MS + 1, fresh(f));
    assert_int_equal(count(f, AM_ACT_STOP), 1);
    assert_true(stops(f, "worker", 2));
    stopped(f);
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_int_equal(f->fsm.final_status, AM_FINAL_SUCCEEDED);
    destroy(f);
}

/* A container that died is asked for anew; the live ones are kept. */
static void test_in_place_dead_container_requested_anew(void **state) {
    (void)state;
    fixture *f = make(IN_PLACE);
    begin(f, 0);
    am_fsm_exited(&f->fsm, task(f, "worker", 2), 137, "killed", 100, fresh(f));
    assert_true(f->job->attempt_over);
    assert_int_equal(count(f, AM_ACT_STOP), 0);
    assert_false(am_fsm_keeps_container(&f->fsm, task(f, "worker", 2)));
    report(f, "worker", 0, 143, 200);
    report(f, "worker", 1, 143, 210);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    am_fsm_next_attempt(&f->fsm, 300, fresh(f));
    assert_int_equal(count(f, AM_ACT_REQUEST), 1);
    assert_ptr_equal(f->out.items[0].task, task(f, "worker", 2));
    assert_int_equal(task(f, "worker", 2)->container_attempt, 1);
    assert_int_equal(task(f, "worker", 0)->container_attempt, 0);
    /* the gang waits for the new container's executor too */
    reg(f, task(f, "worker", 0), 400);
    reg(f, task(f, "worker", 1), 400);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 0);
    reg(f, task(f, "worker", 2), 500);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1);
    destroy(f);

    /* an executor lost to missed heartbeats does not answer: its container
     * is stopped at once and asked for anew */
    f = make(IN_PLACE);
    begin(f, 0);
    long long late = heartbeat_expiry_for(f) + 1;
    am_fsm_heartbeat(&f->fsm, task(f, "worker", 0), -1, late, &(bool){false});
    am_fsm_heartbeat(&f->fsm, task(f, "worker", 2), -1, late, &(bool){false});
    am_fsm_tick(&f->fsm, late, fresh(f));
    assert_true(task(f, "worker", 1)->lost);
    assert_true(stops(f, "worker", 1));
    assert_false(stops(f, "worker", 0));
    assert_false(am_fsm_keeps_container(&f->fsm, task(f, "worker", 1)));
    destroy(f);
}

/* An executor that does not report its process stopped in time has its
 * container stopped instead, which is then asked for anew; one waiting at
 * the barrier (its process never started) is done at once. */
static void test_in_place_stop_falls_back_to_the_container(void **state) {
    (void)state;
    fixture *f = make(IN_PLACE);
    am_fsm_start(&f->fsm, 0, fresh(f));
    reg(f, task(f, "worker", 0), 0);
    reg(f, task(f, "worker", 1), 0);
    reg(f, task(f, "worker", 2), 0);
    am_fsm_started(&f->fsm, task(f, "worker", 0), 10, 0);
    am_fsm_started(&f->fsm, task(f, "worker", 1), 11, 0);
    /* worker:2 still waits at the barrier */
    report(f, "worker", 0, 2, 100);
    assert_int_equal(task(f, "worker", 2)->state, AM_TASK_FINISHED);
    assert_int_equal(count(f, AM_ACT_STOP), 0);
    long long deadline = 100 + f->plan.heartbeat_interval_ms + AM_FSM_IN_PLACE_STOP_MS;
    am_fsm_tick(&f->fsm, deadline, fresh(f));
    assert_int_equal(count(f, AM_ACT_STOP), 0);
    am_fsm_tick(&f->fsm, deadline + 1, fresh(f));
    assert_true(stops(f, "worker", 1));
    assert_int_equal(count(f, AM_ACT_STOP), 1);
    /* a container being stopped is not kept, even if its executor reports now */
    assert_false(am_fsm_keeps_container(&f->fsm, task(f, "worker", 1)));
    stopped(f);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    am_fsm_next_attempt(&f->fsm, deadline + 100, fresh(f));
    assert_int_equal(count(f, AM_ACT_REQUEST), 1);
    assert_true(f->out.items[0].task == task(f, "worker", 1));
    assert_int_equal(task(f, "worker", 2)->state, AM_TASK_REQUESTED); /* kept */
    destroy(f);
}

/* A task given the go whose "started" has not come when the attempt ends
 * (its peer failed at once) is starting its process, not waiting at the
 * barrier: it is stopped as a running one, and the attempt restarts only
 * once it reported. Taken for done at once, its process ran on into the
 * next attempt, whose kept container's end then failed it (CI, stop 30). */
static void test_in_place_released_task_is_stopped_not_done(void **state) {
    (void)state;
    fixture *f = make(IN_PLACE);
    am_fsm_start(&f->fsm, 0, fresh(f));
    for (int i = 0; i < 3; i++) reg(f, task(f, "worker", i), 0);
    for (int i = 0; i < 3; i++) am_fsm_released(&f->fsm, task(f, "worker", i));
    am_fsm_started(&f->fsm, task(f, "worker", 0), 10, 0);
    am_fsm_started(&f->fsm, task(f, "worker", 1), 11, 0);
    /* worker:2 has the go; its "started" is on its way */
    report(f, "worker", 0, 1, 100);
    assert_true(f->job->attempt_over);
    assert_int_equal(task(f, "worker", 2)->state, AM_TASK_REGISTERED);
    report(f, "worker", 1, 143, 110);
    assert_int_equal(count(f, AM_ACT_RESTART), 0);
    /* its "started" and report come; only then the attempt restarts */
    am_fsm_started(&f->fsm, task(f, "worker", 2), 12, 120);
    report(f, "worker", 2, 143, 130);
    assert_int_equal(task(f, "worker", 2)->state, AM_TASK_FINISHED);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    assert_true(am_fsm_keeps_container(&f->fsm, task(f, "worker", 2)));
    am_fsm_next_attempt(&f->fsm, 200, fresh(f));
    assert_false(task(f, "worker", 2)->released); /* a new attempt's barrier */
    destroy(f);
}

/* The wait of an executor told to stop in place runs out at whatever event
 * comes next, not only at a tick (the stops are walked for again once
 * stop_due_ms passed, issue 26); a kill meanwhile (no next attempt: the
 * mode changes) stops what has not ended at once. */
static void test_in_place_stop_wait_runs_out_at_any_event(void **state) {
    (void)state;
    const char *four[] = {"tony.worker.instances=4", "tony.am.retry-count=1", "tony.application.restart-backoff-ms=0",
                          NULL};
    fixture *f = make(four);
    begin(f, 0);
    report(f, "worker", 0, 1, 100);
    assert_true(f->job->attempt_over);
    long long deadline = 100 + f->plan.heartbeat_interval_ms + AM_FSM_IN_PLACE_STOP_MS;
    report(f, "worker", 1, 143, deadline);
    assert_int_equal(count(f, AM_ACT_STOP), 0);
    report(f, "worker", 2, 143, deadline + 1); /* worker:3 never reports */
    assert_int_equal(count(f, AM_ACT_STOP), 1);
    assert_true(stops(f, "worker", 3));
    destroy(f);

    f = make(four);
    begin(f, 0);
    report(f, "worker", 0, 1, 100);
    report(f, "worker", 1, 143, 200);
    am_fsm_kill(&f->fsm, 300, fresh(f));
    /* the two still running are stopped; the two that reported exit by themselves */
    assert_int_equal(count(f, AM_ACT_STOP), 2);
    assert_true(stops(f, "worker", 2));
    assert_true(stops(f, "worker", 3));
    assert_false(am_fsm_keeps_container(&f->fsm, task(f, "worker", 1)));
    am_fsm_tick(&f->fsm, 300 + f->plan.heartbeat_interval_ms + AM_FSM_IN_PLACE_STOP_MS + 1, fresh(f));
    assert_true(stops(f, "worker", 0));
    assert_true(stops(f, "worker", 1));
    destroy(f);
}

/* The running counts the state machine answers from (job.h's am_tally)
 * are checked against a walk between the events of every test here
 * (fsm_fixture.h's check_counts); a change made behind its back is found. */
static void test_counts_self_check_finds_an_untallied_change(void **state) {
    (void)state;
    fixture *f = make(PS_WORKERS);
    begin(f, 0);
    tony_error err;
    assert_int_equal(am_fsm_check_counts(&f->fsm, &err), 0);
    am_task *t = task(f, "worker", 1);
    t->state = AM_TASK_SUCCEEDED; /* not through the state machine */
    assert_int_equal(am_fsm_check_counts(&f->fsm, &err), -1);
    assert_non_null(strstr(err.msg, "worker:1"));
    t->state = AM_TASK_RUNNING;
    assert_int_equal(am_fsm_check_counts(&f->fsm, &err), 0);
    destroy(f);
}

/* One gang of 20,000 workers through a whole in-place restart (register,
 * start, one failure, every other executor stopping its process, register
 * again) costs the state machine linear time: each event is O(1), where a
 * walk over every task per event took ~10 s of CPU here (bench/REPORT.md,
 * "Scale: the state machine per registration"). Counts are checked at the
 * end of each phase (a check per event would itself be quadratic). */
static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void register_gang(fixture *f, long long now) {
    for (size_t i = 0; i < f->job->ntasks; i++) {
        am_task *t = &f->job->tasks[i];
        am_registration r = {.host = "127.0.0.1", .port = 1000 + (int)(i % 60000)};
        f->out.len = 0;
        assert_int_equal(am_fsm_registered(&f->fsm, t, &r, now, &f->out), AM_REG_NEW);
    }
    check_counts(f);
}

static void test_gang_of_20000_in_linear_time(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=20000", "tony.am.retry-count=1", "tony.application.restart-backoff-ms=0",
                        NULL};
    fixture *f = make(kv);
    double t0 = cpu_s();
    am_fsm_start(&f->fsm, 0, fresh(f));
    register_gang(f, 10);
    assert_int_equal(f->fsm.state, AM_JOB_RUNNING);
    for (size_t i = 0; i < f->job->ntasks; i++) {
        am_task *t = &f->job->tasks[i];
        am_fsm_poll_answered(&f->fsm, t, 20);
        am_fsm_released(&f->fsm, t);
        am_fsm_started(&f->fsm, t, 100 + (int)i, 20);
    }
    f->out.len = 0;
    am_fsm_result_reported(&f->fsm, task(f, "worker", 7), 1, false, 30, &f->out);
    assert_true(f->job->attempt_over);
    for (size_t i = 0; i < f->job->ntasks; i++) {
        if (f->job->tasks[i].index == 7) continue;
        f->out.len = 0;
        am_fsm_result_reported(&f->fsm, &f->job->tasks[i], 143, false, 40, &f->out);
    }
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    check_counts(f);
    am_fsm_next_attempt(&f->fsm, 50, fresh(f));
    assert_int_equal(count(f, AM_ACT_REQUEST), 0); /* every container kept */
    register_gang(f, 60);
    assert_int_equal(f->fsm.state, AM_JOB_RUNNING);
    double spent = cpu_s() - t0;
    /* ~0.02 s here (0.2 s under ASan); generous for a loaded CI machine */
    if (spent > 3.0) fail_msg("a gang of 20,000 took %.2f s of CPU: a walk over every task per event?", spent);
    destroy(f);
}

/* reallocate: today's behaviour, every container stopped and asked anew;
 * the executor's report is not the result. No retry left: nothing kept. */
static void test_reallocate_and_no_retry_keep_nothing(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=2", "tony.am.retry-count=1", "tony.application.restart-mode=reallocate",
                        "tony.application.restart-backoff-ms=0", NULL};
    fixture *f = make(kv);
    assert_false(f->fsm.in_place);
    begin(f, 0);
    report(f, "worker", 1, 1, 100);
    assert_int_equal(task(f, "worker", 1)->state, AM_TASK_RUNNING); /* the container's exit decides */
    assert_false(am_fsm_keeps_container(&f->fsm, task(f, "worker", 1)));
    exit_task(f, "worker", 1, 1);
    assert_int_equal(count(f, AM_ACT_STOP), 1);
    stopped(f);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    am_fsm_next_attempt(&f->fsm, 300, fresh(f));
    assert_int_equal(count(f, AM_ACT_REQUEST), 2);
    destroy(f);

    const char *none[] = {"tony.worker.instances=2", NULL};
    f = make(none);
    assert_true(f->fsm.in_place);
    begin(f, 0);
    report(f, "worker", 1, 1, 100);
    assert_false(am_fsm_keeps_container(&f->fsm, task(f, "worker", 1)));
    assert_true(stops(f, "worker", 0)); /* no next attempt: stopped as before */
    destroy(f);

    /* with stages, only the prepare stage's containers are kept: the
     * training stage's are asked for once the prepare stage is done again */
    const char *stages[] = {"tony.prep.instances=1", "tony.worker.instances=1", "tony.am.retry-count=1",
                            "tony.application.prepare-stage=prep", "tony.application.restart-backoff-ms=0", NULL};
    f = make(stages);
    begin(f, 0);
    exit_task(f, "prep", 0, 0);
    start_all(f, 10);
    report(f, "worker", 0, 1, 20);
    assert_true(f->job->attempt_over);
    assert_false(am_fsm_keeps_container(&f->fsm, task(f, "worker", 0)));
    assert_int_equal(count(f, AM_ACT_STOP), 0); /* told to exit, its executor ends its container */
    exit_task(f, "worker", 0, 1);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    am_fsm_next_attempt(&f->fsm, 30, fresh(f));
    assert_int_equal(count(f, AM_ACT_REQUEST), 1); /* prep: its container ended; the worker waits for it */
    assert_int_equal(task(f, "worker", 0)->state, AM_TASK_NEW);
    destroy(f);

    const char *bad[] = {"tony.worker.instances=1", "tony.application.restart-mode=sometimes", NULL};
    tony_conf *c = tony_conf_new();
    tony_conf_load_defaults(c);
    tony_conf_set(c, "tony.containers.command", "x", "t");
    for (const char *const *kv2 = bad; *kv2; kv2++) {
        char *copy = strdup(*kv2), *eq = strchr(copy, '=');
        *eq = '\0';
        tony_conf_set(c, copy, eq + 1, "t");
        free(copy);
    }
    tony_plan p;
    tony_error err;
    assert_int_not_equal(tony_plan_from_conf(c, &p, &err), 0);
    assert_non_null(strstr(err.msg, "tony.application.restart-mode must be in-place or reallocate"));
    tony_conf_free(c);
}


/* ---- Coordinator loss: a new coordinator adopts the running tasks ---- */

static const char *ADOPT[] = {"tony.ps.instances=1", "tony.worker.instances=2", "tony.am.retry-count=1",
                              "tony.application.restart-backoff-ms=0", NULL};

static am_reg_result adopt(fixture *f, const char *role, int index, int attempt, int pid, long long now) {
    am_task *t = task(f, role, index);
    am_registration r = {.host = "node1", .port = 2000 + index, .container = "container_1"};
    return am_fsm_adopted(&f->fsm, t, &r, attempt, 0, pid, now, fresh(f));
}

/* Every task comes back with its process running: the job goes on in the
 * same attempt, nothing is asked for or stopped, no gang is formed again,
 * and it ends as any job does. */
static void test_adopt_every_task_no_restart(void **state) {
    (void)state;
    fixture *f = make(ADOPT);
    am_fsm_recover(&f->fsm, 0, 60000, 0, fresh(f));
    assert_int_equal(f->fsm.state, AM_JOB_REGISTERING);
    assert_true(f->fsm.recovering);
    assert_int_equal(count(f, AM_ACT_REQUEST), 0);
    /* an executor of the new kind (a fresh registration) is not taken meanwhile */
    am_registration r = {.host = "h", .port = 1};
    assert_int_equal(am_fsm_registered(&f->fsm, task(f, "worker", 0), &r, 10, fresh(f)), AM_REG_ENDING);
    assert_int_equal(adopt(f, "worker", 0, 2, 0, 90), AM_REG_ENDING); /* no process to take back */
    assert_int_equal(adopt(f, "worker", 0, 2, 111, 100), AM_REG_NEW);
    assert_int_equal(f->job->attempt, 2); /* the first one back names the attempt */
    assert_int_equal(f->fsm.retries_left, 0); /* the lost coordinator restarted twice: the 1 retry is spent */
    assert_int_equal(adopt(f, "worker", 0, 2, 111, 110), AM_REG_ENDING); /* only once */
    assert_int_equal(adopt(f, "worker", 1, 1, 112, 120), AM_REG_ENDING); /* another attempt's */
    assert_int_equal(adopt(f, "worker", 1, 2, 112, 130), AM_REG_NEW);
    assert_int_equal(count(f, AM_ACT_ADOPTED), 0);
    assert_int_equal(adopt(f, "ps", 0, 2, 113, 140), AM_REG_NEW);
    assert_int_equal(count(f, AM_ACT_ADOPTED), 1);
    assert_int_equal(count(f, AM_ACT_REQUEST) + count(f, AM_ACT_STOP) + count(f, AM_ACT_RESTART), 0);
    assert_false(f->fsm.recovering);
    assert_int_equal(f->fsm.adopted, 3);
    assert_int_equal(f->fsm.state, AM_JOB_RUNNING);
    am_task *w1 = task(f, "worker", 1);
    assert_int_equal(w1->state, AM_TASK_RUNNING);
    assert_int_equal(w1->pid, 112);
    assert_int_equal(w1->port, 2001);
    assert_string_equal(w1->host, "node1");
    assert_string_equal(w1->container, "container_1");
    assert_int_equal(w1->container_attempt, 0);
    /* heartbeats go on; the tasks end as they would have */
    bool tb;
    assert_int_equal(am_fsm_heartbeat(&f->fsm, w1, -1, 1000, &tb), AM_HB_OK);
    am_fsm_heartbeat(&f->fsm, task(f, "worker", 0), -1, 1000, &tb);
    am_fsm_heartbeat(&f->fsm, task(f, "ps", 0), -1, 1000, &tb);
    am_fsm_tick(&f->fsm, 1500, fresh(f));
    assert_false(f->job->attempt_over);
    exit_task(f, "worker", 0, 0);
    exit_task(f, "worker", 1, 0);
    assert_true(stops(f, "ps", 0));
    stopped(f);
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_int_equal(f->fsm.final_status, AM_FINAL_SUCCEEDED);
    assert_int_equal(f->job->attempt, 2);
    assert_int_equal(w1->nruns, 0); /* never restarted */
    destroy(f);
}

/* A task whose executor does not come back by the end of the wait fails
 * the attempt; it is restarted on the cluster's account (without
 * tony.am.retry-count, as a new AM attempt used to rerun the job), the
 * adopted ones' containers kept in place and the missing one asked for
 * anew. */
static void test_adopt_missing_task_fails_the_attempt(void **state) {
    (void)state;
    const char *kv[] = {"tony.ps.instances=1", "tony.worker.instances=2", "tony.application.restart-backoff-ms=0",
                        NULL};
    fixture *f = make(kv);
    assert_int_equal(f->fsm.retries_left, 0);
    am_fsm_recover(&f->fsm, 0, 60000, 0, fresh(f));
    assert_int_equal(adopt(f, "worker", 0, 0, 111, 100), AM_REG_NEW);
    assert_int_equal(adopt(f, "ps", 0, 0, 113, 100), AM_REG_NEW);
    bool tb;
    /* the wait is not a registration timeout; heartbeats keep the adopted alive */
    for (long long now = 1000; now < 60000; now += 1000) {
        am_fsm_heartbeat(&f->fsm, task(f, "worker", 0), -1, now, &tb);
        am_fsm_heartbeat(&f->fsm, task(f, "ps", 0), -1, now, &tb);
        am_fsm_tick(&f->fsm, now, fresh(f));
        assert_false(f->job->attempt_over);
    }
    am_fsm_tick(&f->fsm, 60000, fresh(f));
    assert_int_equal(count(f, AM_ACT_ADOPTED), 1);
    assert_false(f->fsm.recovering);
    assert_true(f->job->attempt_over);
    am_task *w1 = task(f, "worker", 1);
    assert_int_equal(w1->state, AM_TASK_FAILED);
    assert_true(w1->exited);
    assert_ptr_equal(f->job->first_failed, w1);
    assert_non_null(strstr(f->job->attempt_diagnostics, "did not come back to the restarted coordinator"));
    /* in place: the adopted tasks stop their processes and are kept */
    assert_int_equal(count(f, AM_ACT_STOP), 0);
    assert_true(am_fsm_keeps_container(&f->fsm, task(f, "worker", 0)));
    report(f, "worker", 0, 143, 60100);
    report(f, "ps", 0, 143, 60200);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    assert_int_equal(f->fsm.retries_left, 0); /* the one given, spent */
    am_fsm_next_attempt(&f->fsm, 60300, fresh(f));
    assert_int_equal(f->job->attempt, 1);
    assert_int_equal(count(f, AM_ACT_REQUEST), 1);
    assert_ptr_equal(f->out.items[0].task, w1);
    destroy(f);
}

/* Killed while tasks are still coming back: the wait ends, nothing is
 * restarted, the adopted tasks are stopped. */
static void test_adopt_kill_while_recovering(void **state) {
    (void)state;
    fixture *f = make(ADOPT);
    am_fsm_recover(&f->fsm, 0, 60000, 0, fresh(f));
    assert_int_equal(adopt(f, "worker", 0, 0, 111, 100), AM_REG_NEW);
    am_fsm_kill(&f->fsm, 200, fresh(f));
    assert_int_equal(count(f, AM_ACT_ADOPTED), 1);
    assert_false(f->fsm.recovering);
    assert_true(stops(f, "worker", 0));
    assert_false(stops(f, "worker", 1)); /* no container of this coordinator's */
    stopped(f);
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_int_equal(f->fsm.final_status, AM_FINAL_KILLED);
    destroy(f);
}

static am_reg_result rejoin(fixture *f, const char *role, int index, int attempt, long long now) {
    am_task *t = task(f, role, index);
    am_registration r = {.host = "node1", .port = 3000 + index, .container = "container_2"};
    return am_fsm_rejoined(&f->fsm, t, &r, attempt, 0, now, fresh(f));
}

/* The coordinator was lost while every task waited at its gang barrier:
 * they come back, their long polls held, and the gang goes once all are
 * back, with the addresses they registered; nothing is asked for. */
static void test_adopt_waiters_at_the_barrier_form_the_gang(void **state) {
    (void)state;
    fixture *f = make(ADOPT);
    am_fsm_recover(&f->fsm, 3, 60000, 0, fresh(f));
    assert_int_equal(rejoin(f, "worker", 0, 1, 100), AM_REG_NEW);
    assert_int_equal(f->job->attempt, 1);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 0);
    assert_int_equal(rejoin(f, "worker", 0, 1, 200), AM_REG_AGAIN); /* its long poll again */
    assert_int_equal(rejoin(f, "worker", 1, 2, 200), AM_REG_ENDING); /* a later attempt's */
    /* an earlier attempt's: the lost coordinator was restarting it; on to attempt 1 */
    assert_true(am_fsm_superseded(&f->fsm, 0));
    assert_false(am_fsm_superseded(&f->fsm, 1));
    assert_int_equal(rejoin(f, "worker", 1, 1, 300), AM_REG_NEW);
    assert_true(f->fsm.recovering);
    assert_int_equal(rejoin(f, "ps", 0, 1, 400), AM_REG_NEW);
    assert_false(f->fsm.recovering);
    assert_int_equal(count(f, AM_ACT_ADOPTED), 1);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1);
    assert_int_equal(count(f, AM_ACT_REQUEST), 0);
    assert_false(am_fsm_superseded(&f->fsm, 0)); /* the recovery is over */
    assert_int_equal(f->fsm.adopted, 3);
    assert_int_equal(f->fsm.rejoined, 3);
    assert_int_equal(task(f, "worker", 1)->state, AM_TASK_REGISTERED);
    assert_int_equal(task(f, "worker", 1)->port, 3001);
    /* after the recovery a returning executor registers as any */
    am_registration r = {.host = "node1", .port = 3000};
    assert_int_equal(am_fsm_registered(&f->fsm, task(f, "worker", 0), &r, 500, fresh(f)), AM_REG_AGAIN);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1);
    destroy(f);
}

/* Lost just as the gang went: some tasks run, others were still to be
 * answered. Those are released once all are back; none is restarted. */
static void test_adopt_running_and_waiting_tasks(void **state) {
    (void)state;
    fixture *f = make(ADOPT);
    am_fsm_recover(&f->fsm, 3, 60000, 0, fresh(f));
    assert_int_equal(adopt(f, "worker", 0, 0, 111, 100), AM_REG_NEW);
    assert_int_equal(f->fsm.retries_left, 1); /* attempt 0: no retry spent */
    assert_int_equal(rejoin(f, "worker", 1, 0, 110), AM_REG_NEW);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 0);
    assert_int_equal(adopt(f, "ps", 0, 0, 113, 120), AM_REG_NEW);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1);
    assert_int_equal(count(f, AM_ACT_REQUEST) + count(f, AM_ACT_STOP) + count(f, AM_ACT_RESTART), 0);
    am_fsm_started(&f->fsm, task(f, "worker", 1), 114, 200);
    assert_int_equal(task(f, "worker", 1)->state, AM_TASK_RUNNING);
    assert_false(f->job->attempt_over);
    destroy(f);
}

/* Only some tasks had containers when the coordinator was lost (the rest
 * were still asked for) and none had started: once every container handed
 * back has its task again, the others are asked for anew, without failing
 * the attempt or waiting out the recovery. */
static void test_adopt_before_the_gang_formed_asks_for_the_missing(void **state) {
    (void)state;
    fixture *f = make(ADOPT);
    int retries = f->fsm.retries_left;
    am_fsm_recover(&f->fsm, 2, 60000, 0, fresh(f));
    assert_int_equal(rejoin(f, "worker", 0, 0, 100), AM_REG_NEW);
    assert_int_equal(rejoin(f, "ps", 0, 0, 200), AM_REG_NEW);
    assert_false(f->fsm.recovering);
    assert_int_equal(count(f, AM_ACT_ADOPTED), 1);
    assert_int_equal(count(f, AM_ACT_REQUEST), 1);
    am_task *w1 = task(f, "worker", 1);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 0);
    assert_int_equal(w1->state, AM_TASK_REQUESTED);
    assert_int_equal(f->fsm.asked_anew, 1);
    assert_false(f->job->attempt_over);
    assert_int_equal(f->fsm.retries_left, retries);
    am_registration r = {.host = "node2", .port = 4000};
    assert_int_equal(am_fsm_registered(&f->fsm, w1, &r, 5000, fresh(f)), AM_REG_NEW);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1);
    destroy(f);
}

/* With processes running, a task missing once every handed-back
 * container's task is back fails the attempt at once: its container is
 * gone, no need to wait out the recovery. */
static void test_adopt_all_handed_back_then_missing_fails_at_once(void **state) {
    (void)state;
    fixture *f = make(ADOPT);
    am_fsm_recover(&f->fsm, 2, 60000, 0, fresh(f));
    assert_int_equal(adopt(f, "worker", 0, 0, 111, 100), AM_REG_NEW);
    assert_true(f->fsm.recovering);
    assert_int_equal(adopt(f, "ps", 0, 0, 113, 200), AM_REG_NEW);
    assert_false(f->fsm.recovering);
    assert_true(f->job->attempt_over);
    assert_int_equal(task(f, "worker", 1)->state, AM_TASK_FAILED);
    assert_int_equal(f->fsm.asked_anew, 0);
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
        cmocka_unit_test(test_lockstep_failure_ends_attempt),
        cmocka_unit_test(test_tracked_task_stopped_counts_as_failure),
        cmocka_unit_test(test_gang_ignores_tasks_that_ended_unregistered),
        cmocka_unit_test(test_gang_released_only_when_complete),
        cmocka_unit_test(test_fcfs_releases_each_task_at_once),
        cmocka_unit_test(test_restart_within_budget_then_fail),
        cmocka_unit_test(test_only_first_exit_counts),
        cmocka_unit_test(test_exit_before_registration_fails),
        cmocka_unit_test(test_root_cause_of_a_command_that_never_ran),
        cmocka_unit_test(test_heartbeat_expiry),
        cmocka_unit_test(test_heartbeats_floor_of_three),
        cmocka_unit_test(test_barrier_waiters_not_expired),
        cmocka_unit_test(test_held_poll_is_alive),
        cmocka_unit_test(test_registered_count),
        cmocka_unit_test(test_registration_timeout),
        cmocka_unit_test(test_stages_order_requests),
        cmocka_unit_test(test_kill_stops_everything_and_never_restarts),
        cmocka_unit_test(test_application_timeout_never_restarts),
        cmocka_unit_test(test_stop_is_tried_again_then_given_up),
        cmocka_unit_test(test_heartbeat_tells_executor_to_stop_when_finishing),
        cmocka_unit_test(test_tensorboard_seen_through_heartbeats),
        cmocka_unit_test(test_request_dropped_after_attempt_ended),
        cmocka_unit_test(test_single_node),
        cmocka_unit_test(test_exit_code_policy_does_not_retry_script_error),
        cmocka_unit_test(test_exit_code_policy_retries_signal_after_backoff),
        cmocka_unit_test(test_backoff_only_in_a_crash_loop),
        cmocka_unit_test(test_exit_code_policy_retries_preempted_and_lost),
        cmocka_unit_test(test_role_policy_overrides_job_policy),
        cmocka_unit_test(test_root_cause_is_first_failure_and_prefers_error_file),
        cmocka_unit_test(test_exit_told_late_counts_at_its_time),
        cmocka_unit_test(test_permanent_failures_are_not_retried),
        cmocka_unit_test(test_kill_or_timeout_during_backoff),
        cmocka_unit_test(test_in_place_restart_keeps_containers),
        cmocka_unit_test(test_in_place_dead_container_requested_anew),
        cmocka_unit_test(test_in_place_stop_falls_back_to_the_container),
        cmocka_unit_test(test_in_place_released_task_is_stopped_not_done),
        cmocka_unit_test(test_in_place_stop_wait_runs_out_at_any_event),
        cmocka_unit_test(test_counts_self_check_finds_an_untallied_change),
        cmocka_unit_test(test_gang_of_20000_in_linear_time),
        cmocka_unit_test(test_reallocate_and_no_retry_keep_nothing),
        cmocka_unit_test(test_adopt_every_task_no_restart),
        cmocka_unit_test(test_adopt_missing_task_fails_the_attempt),
        cmocka_unit_test(test_adopt_kill_while_recovering),
        cmocka_unit_test(test_adopt_waiters_at_the_barrier_form_the_gang),
        cmocka_unit_test(test_diagnostics_without_output_keep_the_rest),
        cmocka_unit_test(test_adopt_running_and_waiting_tasks),
        cmocka_unit_test(test_adopt_before_the_gang_formed_asks_for_the_missing),
        cmocka_unit_test(test_adopt_all_handed_back_then_missing_fails_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
