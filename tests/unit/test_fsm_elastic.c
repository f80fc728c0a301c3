/* Elastic jobs in the coordinator's state machine (fsm.h), transition by
 * transition with no HTTP, process or clock: a lost worker whose
 * replacement does not come within the settle time leaves the world and
 * the others go on, ranks renumbered; one that comes in time keeps the
 * world; a replacement that cannot start leaves at once; a job starts with
 * its minimum; below the minimum, and without elasticity, nothing changes.
 * Growing back: a late replacement joins after the settle time, arrivals
 * batched into one restart; one that cannot start is asked again after a
 * backoff; `tony scale` shrinks and grows within min..max. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "fsm_fixture.h"

#define SETTLE 1000

/* PyTorch DDP, 3 workers, at least 2; no retry budget, so that only the
 * world's account can restart it. */
static const char *ELASTIC[] = {"tony.application.framework=pytorch", "tony.worker.instances=3",
                                "tony.worker.min-instances=2", "tony.application.elastic-settle-ms=1000", NULL};
static const char *RIGID[] = {"tony.application.framework=pytorch", "tony.worker.instances=3",
                              "tony.application.elastic-settle-ms=1000", NULL};

static void reg(fixture *f, am_task *t, long long now) {
    am_registration r = {.host = "127.0.0.1", .port = 1000 + t->index};
    assert_int_equal(am_fsm_registered(&f->fsm, t, &r, now, fresh(f)), AM_REG_NEW);
}

/* The first attempt: the tasks named by `present` (all when NULL) register
 * and start. */
static void begin(fixture *f, const bool *present) {
    am_fsm_start(&f->fsm, 0, fresh(f));
    for (size_t i = 0; i < f->job->ntasks; i++)
        if (!present || present[i]) reg(f, &f->job->tasks[i], 10);
    for (size_t i = 0; i < f->job->ntasks; i++)
        if (f->job->tasks[i].host) am_fsm_started(&f->fsm, &f->job->tasks[i], 100 + (int)i, 20);
}

static void report(fixture *f, int index, int code, long long now) {
    am_fsm_result_reported(&f->fsm, task(f, "worker", index), code, false, now, fresh(f));
}

static bool stops(const fixture *f, const am_task *t) {
    for (size_t i = 0; i < f->out.len; i++)
        if (f->out.items[i].kind == AM_ACT_STOP && f->out.items[i].task == t) return true;
    return false;
}

/* A rigid job (no min-instances) whose worker:2's container dies: the
 * others stop in place and every container ends. */
static fixture *rigid_job_loses_a_worker(void) {
    fixture *f = make(RIGID);
    begin(f, NULL);
    am_fsm_exited(&f->fsm, task(f, "worker", 2), 137, "killed", 100, fresh(f));
    report(f, 0, 143, 200);
    report(f, 1, 143, 200);
    am_fsm_exited(&f->fsm, task(f, "worker", 0), 143, NULL, 210, fresh(f));
    am_fsm_exited(&f->fsm, task(f, "worker", 1), 143, NULL, 210, fresh(f));
    return f;
}

/* worker:lost's container dies (its executor with it); the others stop
 * their processes in place: the attempt restarts on the world's account. */
static void lose(fixture *f, int lost) {
    am_fsm_exited(&f->fsm, task(f, "worker", lost), 137, "killed", 100, fresh(f));
    assert_true(f->job->attempt_over);
    assert_false(am_fsm_keeps_container(&f->fsm, task(f, "worker", lost)));
    for (int i = 0; i < 3; i++) {
        if (i == lost) continue;
        assert_true(am_fsm_keeps_container(&f->fsm, task(f, "worker", i)));
        report(f, i, 143, 200 + i);
    }
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    assert_int_equal(f->fsm.retries_left, 0); /* tony.am.retry-count is 0 and stays so */
    /* the lost task failed; the attempt ended for the world's change, not a failure */
    assert_int_equal(task(f, "worker", lost)->state, AM_TASK_FAILED);
    assert_int_equal(f->fsm.attempt_end, AM_END_RESIZED);
    assert_string_equal(am_attempt_end_name(f->fsm.attempt_end), "RESIZED");
    int ended = f->job->attempt;
    am_fsm_next_attempt(&f->fsm, 300, fresh(f));
    assert_int_equal(f->fsm.attempt_end, AM_END_NONE);
    assert_true(f->fsm.nends > ended);
    assert_int_equal(f->fsm.ends[ended], AM_END_RESIZED);
    assert_int_equal(count(f, AM_ACT_REQUEST), 1); /* the replacement, alone */
    assert_ptr_equal(f->out.items[0].task, task(f, "worker", lost));
    for (int i = 0; i < 3; i++)
        if (i != lost) reg(f, task(f, "worker", i), 400);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 0); /* the replacement is waited for */
}

static void test_lost_worker_without_replacement_leaves_the_world(void **state) {
    (void)state;
    fixture *f = make(ELASTIC);
    assert_true(f->plan.elastic);
    begin(f, NULL);
    assert_int_equal(f->fsm.world_version, 0);
    lose(f, 2);
    am_fsm_tick(&f->fsm, 300 + SETTLE - 1, fresh(f));
    assert_int_equal(count(f, AM_ACT_WORLD), 0);
    am_fsm_tick(&f->fsm, 300 + SETTLE, fresh(f));
    assert_int_equal(count(f, AM_ACT_WORLD), 1);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1);
    /* its replacement is not waited for, but stays asked for (it may grow the world back) */
    assert_false(stops(f, task(f, "worker", 2)));
    assert_true(task(f, "worker", 2)->out);
    assert_int_equal(f->fsm.world_version, 1);
    assert_int_equal(f->fsm.state, AM_JOB_RUNNING);
    assert_non_null(strstr(f->fsm.world_note, "worker:2 left the world"));
    assert_non_null(strstr(f->fsm.world_note, "worker 2 of 3 (min 2)"));
    assert_int_equal(am_fsm_world_count(f->job, task(f, "worker", 0)->role), 2);
    assert_int_equal(am_fsm_world_index(f->job, task(f, "worker", 1)), 1);
    /* the replacement's end decides nothing; a registration after it is refused */
    am_fsm_exited(&f->fsm, task(f, "worker", 2), TONY_EXIT_ABORTED, NULL, 1400, fresh(f));
    assert_false(f->job->attempt_over);
    am_registration r = {.host = "127.0.0.1", .port = 1};
    assert_int_equal(am_fsm_registered(&f->fsm, task(f, "worker", 2), &r, 1500, fresh(f)), AM_REG_ENDING);
    /* the two finish the job */
    for (int i = 0; i < 2; i++) am_fsm_started(&f->fsm, task(f, "worker", i), 10 + i, 1600);
    report(f, 0, 0, 1700);
    report(f, 1, 0, 1700);
    am_fsm_exited(&f->fsm, task(f, "worker", 0), 0, NULL, 1710, fresh(f));
    am_fsm_exited(&f->fsm, task(f, "worker", 1), 0, NULL, 1710, fresh(f));
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_int_equal(f->fsm.final_status, AM_FINAL_SUCCEEDED);
    assert_string_equal(f->fsm.diagnostics, "All 2 tracked tasks succeeded");
    destroy(f);
}

/* Rank 0 moves to the first task left when worker:0 is the one lost. */
static void test_ranks_are_renumbered_densely(void **state) {
    (void)state;
    fixture *f = make(ELASTIC);
    begin(f, NULL);
    lose(f, 0);
    am_fsm_tick(&f->fsm, 300 + SETTLE, fresh(f));
    assert_true(task(f, "worker", 0)->out);
    assert_int_equal(am_fsm_world_index(f->job, task(f, "worker", 1)), 0);
    assert_int_equal(am_fsm_world_index(f->job, task(f, "worker", 2)), 1);
    destroy(f);
}

static void test_replacement_in_time_keeps_the_world(void **state) {
    (void)state;
    fixture *f = make(ELASTIC);
    begin(f, NULL);
    lose(f, 1);
    reg(f, task(f, "worker", 1), 300 + SETTLE / 2);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1);
    am_fsm_tick(&f->fsm, 300 + 2 * SETTLE, fresh(f));
    assert_int_equal(count(f, AM_ACT_WORLD), 0);
    assert_int_equal(f->fsm.world_version, 0);
    assert_false(task(f, "worker", 1)->out);
    destroy(f);
}

/* A replacement whose container ends before it registers leaves at once. */
static void test_replacement_that_cannot_start_leaves_at_once(void **state) {
    (void)state;
    fixture *f = make(ELASTIC);
    begin(f, NULL);
    lose(f, 2);
    am_fsm_exited(&f->fsm, task(f, "worker", 2), TONY_EXIT_ABORTED, "cannot start", 500, fresh(f));
    assert_false(f->job->attempt_over);
    assert_int_equal(count(f, AM_ACT_WORLD), 1);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1);
    assert_true(task(f, "worker", 2)->out);
    assert_int_equal(f->fsm.state, AM_JOB_RUNNING);
    destroy(f);
}

/* The first attempt starts with the minimum once the settle time passed. */
static void test_starts_with_the_minimum_after_the_settle_time(void **state) {
    (void)state;
    fixture *f = make(ELASTIC);
    bool present[] = {true, true, false};
    begin(f, present);
    assert_int_equal(f->fsm.state, AM_JOB_REGISTERING);
    am_fsm_tick(&f->fsm, SETTLE, fresh(f));
    assert_int_equal(count(f, AM_ACT_WORLD), 1);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1);
    assert_int_equal(f->fsm.world_version, 1);
    destroy(f);

    /* under the minimum it keeps waiting, as without elasticity */
    f = make(ELASTIC);
    bool one[] = {true, false, false};
    begin(f, one);
    am_fsm_tick(&f->fsm, 10 * SETTLE, fresh(f));
    assert_int_equal(count(f, AM_ACT_WORLD), 0);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 0);
    assert_int_equal(f->fsm.state, AM_JOB_REGISTERING);
    destroy(f);
}

/* Two lost at once: the replacements are waited for while the world would
 * fall below its minimum without them; once one is there the other leaves. */
static void test_two_lost_wait_for_the_minimum(void **state) {
    (void)state;
    fixture *f = make(ELASTIC);
    begin(f, NULL);
    am_fsm_exited(&f->fsm, task(f, "worker", 1), 137, "killed", 100, fresh(f));
    am_fsm_exited(&f->fsm, task(f, "worker", 2), 137, "killed", 100, fresh(f));
    report(f, 0, 143, 200);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    am_fsm_next_attempt(&f->fsm, 300, fresh(f));
    assert_int_equal(count(f, AM_ACT_REQUEST), 2);
    reg(f, task(f, "worker", 0), 400);
    am_fsm_tick(&f->fsm, 300 + 5 * SETTLE, fresh(f));
    assert_int_equal(count(f, AM_ACT_WORLD), 0);
    reg(f, task(f, "worker", 1), 300 + 6 * SETTLE);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 0);
    am_fsm_tick(&f->fsm, 300 + 6 * SETTLE, fresh(f));
    assert_int_equal(count(f, AM_ACT_WORLD), 1);
    assert_true(task(f, "worker", 2)->out);
    destroy(f);
}

/* At its minimum, a loss is the restart policy's to judge: with no retry
 * left the job fails; a process that failed in its container is the
 * script's failure, not a loss. */
static void test_at_the_minimum_the_policy_decides(void **state) {
    (void)state;
    fixture *f = make(ELASTIC);
    begin(f, NULL);
    lose(f, 2);
    am_fsm_tick(&f->fsm, 300 + SETTLE, fresh(f));
    assert_int_equal(f->fsm.world_version, 1);
    am_fsm_exited(&f->fsm, task(f, "worker", 2), TONY_EXIT_KILLED_BY_APPMASTER, NULL, 1400, fresh(f));
    for (int i = 0; i < 2; i++) am_fsm_started(&f->fsm, task(f, "worker", i), 10 + i, 1500);
    am_fsm_exited(&f->fsm, task(f, "worker", 1), 137, "killed", 1600, fresh(f));
    report(f, 0, 143, 1700);
    assert_int_equal(count(f, AM_ACT_RESTART), 0);
    am_fsm_exited(&f->fsm, task(f, "worker", 0), 143, NULL, 1710, fresh(f));
    assert_int_equal(f->fsm.state, AM_JOB_DONE);
    assert_int_equal(f->fsm.final_status, AM_FINAL_FAILED);
    assert_int_equal(f->fsm.attempt_end, AM_END_FAILED); /* below the minimum: a failure */
    destroy(f);

    f = make(ELASTIC);
    begin(f, NULL);
    report(f, 2, 1, 100);
    report(f, 0, 143, 200);
    report(f, 1, 143, 200);
    assert_int_equal(count(f, AM_ACT_RESTART), 0);
    destroy(f);
}

/* An executor lost to missed heartbeats is a loss too: its container is
 * stopped and the attempt restarts on the world's account. */
static void test_missed_heartbeats_are_a_loss(void **state) {
    (void)state;
    fixture *f = make(ELASTIC);
    begin(f, NULL);
    int missed = f->plan.max_missed_heartbeats < 3 ? 3 : f->plan.max_missed_heartbeats;
    long long late = 20 + f->plan.heartbeat_interval_ms * missed + 1;
    am_fsm_heartbeat(&f->fsm, task(f, "worker", 0), -1, late, &(bool){false});
    am_fsm_heartbeat(&f->fsm, task(f, "worker", 1), -1, late, &(bool){false});
    am_fsm_tick(&f->fsm, late, fresh(f));
    assert_true(task(f, "worker", 2)->lost);
    assert_true(stops(f, task(f, "worker", 2)));
    am_fsm_exited(&f->fsm, task(f, "worker", 2), TONY_EXIT_KILLED_BY_APPMASTER, NULL, late + 1, fresh(f));
    report(f, 0, 143, late + 2);
    report(f, 1, 143, late + 2);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    am_fsm_next_attempt(&f->fsm, late + 3, fresh(f));
    assert_int_equal(count(f, AM_ACT_REQUEST), 1);
    assert_ptr_equal(f->out.items[0].task, task(f, "worker", 2));
    destroy(f);
}

/* Without min-instances nothing of the above happens. */
static void test_a_rigid_job_is_unchanged(void **state) {
    (void)state;
    fixture *f = make(RIGID);
    assert_false(f->plan.elastic);
    bool present[] = {true, true, false};
    begin(f, present);
    am_fsm_tick(&f->fsm, 10 * SETTLE, fresh(f));
    assert_int_equal(count(f, AM_ACT_WORLD), 0);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 0);
    am_fsm_exited(&f->fsm, task(f, "worker", 2), TONY_EXIT_ABORTED, "cannot start", 10 * SETTLE, fresh(f));
    assert_true(f->job->attempt_over);
    destroy(f);

    f = rigid_job_loses_a_worker();
    assert_int_equal(count(f, AM_ACT_RESTART), 0);
    assert_int_equal(f->fsm.final_status, AM_FINAL_FAILED);
    destroy(f);
}


/* Every task in the world stops in place; the next attempt starts with
 * those kept (none asked for anew) and goes once they all registered. */
static void restart_in_place(fixture *f, long long now) {
    for (size_t i = 0; i < f->job->ntasks; i++) {
        am_task *t = &f->job->tasks[i];
        if (!t->out && t->started_ms) am_fsm_result_reported(&f->fsm, t, 143, false, now, fresh(f));
    }
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    /* a change of the world, not a failure: no task of it failed */
    assert_int_equal(f->fsm.attempt_end, AM_END_RESIZED);
    for (size_t i = 0; i < f->job->ntasks; i++) assert_int_not_equal(f->job->tasks[i].state, AM_TASK_FAILED);
    am_fsm_next_attempt(&f->fsm, now + 1, fresh(f));
    assert_int_equal(f->fsm.ends[f->job->attempt - 1], AM_END_RESIZED);
    assert_int_equal(count(f, AM_ACT_REQUEST), 0);
    for (size_t i = 0; i < f->job->ntasks; i++)
        if (!f->job->tasks[i].out) reg(f, &f->job->tasks[i], now + 2);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 1);
}

/* The replacement comes after the world went on without it: it waits,
 * and after the settle time the world grows back to it, restarting in
 * place on the world's account. */
static void test_a_late_replacement_grows_the_world_back(void **state) {
    (void)state;
    fixture *f = make(ELASTIC);
    begin(f, NULL);
    lose(f, 2);
    am_fsm_tick(&f->fsm, 300 + SETTLE, fresh(f));
    assert_true(task(f, "worker", 2)->out);
    for (int i = 0; i < 2; i++) am_fsm_started(&f->fsm, task(f, "worker", i), 10 + i, 1400);
    am_registration r = {.host = "127.0.0.1", .port = 1002};
    assert_int_equal(am_fsm_registered(&f->fsm, task(f, "worker", 2), &r, 2000, fresh(f)), AM_REG_NEW);
    assert_int_equal(count(f, AM_ACT_RELEASE_GANG), 0); /* it waits to join */
    assert_int_equal(am_fsm_registered(&f->fsm, task(f, "worker", 2), &r, 2500, fresh(f)), AM_REG_AGAIN);
    am_fsm_tick(&f->fsm, 2000 + SETTLE - 1, fresh(f));
    assert_int_equal(count(f, AM_ACT_WORLD), 0);
    assert_false(f->job->attempt_over);
    am_fsm_tick(&f->fsm, 2000 + SETTLE, fresh(f));
    assert_int_equal(count(f, AM_ACT_WORLD), 1);
    assert_false(task(f, "worker", 2)->out);
    assert_int_equal(f->fsm.world_version, 2);
    assert_non_null(strstr(f->fsm.world_note, "worker:2 joined the world; world 2 is 3 task(s)"));
    assert_true(f->job->attempt_over);
    for (int i = 0; i < 3; i++) assert_true(am_fsm_keeps_container(&f->fsm, task(f, "worker", i)));
    restart_in_place(f, 3100);
    assert_int_equal(f->fsm.retries_left, 0);
    assert_int_equal(am_fsm_world_count(f->job, task(f, "worker", 0)->role), 3);
    assert_int_equal(am_fsm_world_index(f->job, task(f, "worker", 2)), 2);
    destroy(f);
}

/* Three containers arriving one after another within the settle time
 * make one change of the world and one restart, not three. */
static void test_arrivals_are_batched_into_one_restart(void **state) {
    (void)state;
    static const char *WIDE[] = {"tony.application.framework=pytorch", "tony.worker.instances=4",
                                 "tony.worker.min-instances=1", "tony.application.elastic-settle-ms=1000", NULL};
    fixture *f = make(WIDE);
    bool one[] = {true, false, false, false};
    begin(f, one);
    am_fsm_tick(&f->fsm, SETTLE, fresh(f));
    assert_int_equal(f->fsm.world_version, 1);
    assert_int_equal(count(f, AM_ACT_STOP), 0); /* the three stay asked for */
    am_fsm_started(&f->fsm, task(f, "worker", 0), 10, SETTLE + 10);
    for (int i = 1; i < 4; i++) {
        am_registration r = {.host = "127.0.0.1", .port = 1000 + i};
        assert_int_equal(am_fsm_registered(&f->fsm, task(f, "worker", i), &r, 2000 + 300 * i, fresh(f)), AM_REG_NEW);
        am_fsm_tick(&f->fsm, 2000 + 300 * i, fresh(f));
        assert_int_equal(count(f, AM_ACT_WORLD), 0);
    }
    am_fsm_tick(&f->fsm, 2300 + SETTLE, fresh(f));
    assert_int_equal(count(f, AM_ACT_WORLD), 1);
    assert_int_equal(f->fsm.world_version, 2);
    assert_non_null(strstr(f->fsm.world_note, "worker:1, worker:2, worker:3 joined the world"));
    restart_in_place(f, 4000);
    assert_int_equal(am_fsm_world_count(f->job, task(f, "worker", 0)->role), 4);
    destroy(f);
}

/* A task that left because its container could not start is asked for
 * again after the settle time, then after twice as long, and so on. */
static void test_a_task_that_cannot_start_is_asked_again_after_a_backoff(void **state) {
    (void)state;
    fixture *f = make(ELASTIC);
    begin(f, NULL);
    lose(f, 2);
    am_fsm_exited(&f->fsm, task(f, "worker", 2), TONY_EXIT_ABORTED, "cannot start", 500, fresh(f));
    assert_true(task(f, "worker", 2)->out);
    am_fsm_tick(&f->fsm, 500 + SETTLE - 1, fresh(f));
    assert_int_equal(count(f, AM_ACT_REQUEST), 0);
    am_fsm_tick(&f->fsm, 500 + SETTLE, fresh(f));
    assert_int_equal(count(f, AM_ACT_REQUEST), 1);
    assert_ptr_equal(f->out.items[0].task, task(f, "worker", 2));
    assert_int_equal(task(f, "worker", 2)->nruns, 2); /* its attempt-0 container and the one that failed */
    am_fsm_exited(&f->fsm, task(f, "worker", 2), TONY_EXIT_ABORTED, "cannot start", 2000, fresh(f));
    assert_false(f->job->attempt_over);
    am_fsm_tick(&f->fsm, 2000 + 2 * SETTLE - 1, fresh(f));
    assert_int_equal(count(f, AM_ACT_REQUEST), 0);
    am_fsm_tick(&f->fsm, 2000 + 2 * SETTLE, fresh(f));
    assert_int_equal(count(f, AM_ACT_REQUEST), 1);
    /* this time it comes: the world grows back after the settle time */
    for (int i = 0; i < 2; i++) am_fsm_started(&f->fsm, task(f, "worker", i), 10 + i, 3000);
    am_registration r = {.host = "127.0.0.1", .port = 1002};
    assert_int_equal(am_fsm_registered(&f->fsm, task(f, "worker", 2), &r, 4100, fresh(f)), AM_REG_NEW);
    am_fsm_tick(&f->fsm, 4100 + SETTLE, fresh(f));
    assert_int_equal(count(f, AM_ACT_WORLD), 1);
    assert_false(task(f, "worker", 2)->out);
    destroy(f);
}

static am_scale_result scale(fixture *f, const char *role, int n, long long now, tony_error *err) {
    return am_fsm_scale(&f->fsm, role, n, now, fresh(f), err);
}

/* `tony scale`'s refusals: each names what is wrong. */
static void test_scale_refusals(void **state) {
    (void)state;
    tony_error err;
    fixture *f = make(RIGID);
    begin(f, NULL);
    assert_int_equal(scale(f, "worker", 2, 100, &err), AM_SCALE_BAD);
    assert_non_null(strstr(err.msg, "the job is not elastic"));
    destroy(f);
    f = make(ELASTIC);
    begin(f, NULL);
    assert_int_equal(scale(f, "ps", 2, 100, &err), AM_SCALE_BAD);
    assert_string_equal(err.msg, "the job has no role 'ps' (its roles: worker)");
    assert_int_equal(scale(f, "worker", 1, 100, &err), AM_SCALE_BAD);
    assert_non_null(strstr(err.msg, "worker=1 is out of bounds: the job runs 2 to 3 worker task(s) "
                                    "(tony.worker.min-instances is 2, tony.worker.instances is 3)"));
    assert_int_equal(scale(f, "worker", 4, 100, &err), AM_SCALE_BAD);
    assert_int_equal(count(f, AM_ACT_WORLD), 0);
    assert_int_equal(scale(f, "worker", 3, 100, &err), AM_SCALE_OK); /* as it is: nothing changes */
    assert_int_equal(count(f, AM_ACT_WORLD) + count(f, AM_ACT_REQUEST) + count(f, AM_ACT_STOP), 0);
    am_fsm_kill(&f->fsm, 200, fresh(f));
    assert_int_equal(scale(f, "worker", 2, 300, &err), AM_SCALE_BUSY);
    destroy(f);
}

/* Scaling a training world down stops the highest-index task and restarts
 * the others in place; scaling it up asks for that task at once, and the
 * world grows when it registers (after the settle time). */
static void test_scale_shrinks_and_grows_a_running_world(void **state) {
    (void)state;
    tony_error err;
    fixture *f = make(ELASTIC);
    begin(f, NULL);
    assert_int_equal(scale(f, "worker", 2, 100, &err), AM_SCALE_OK);
    assert_true(stops(f, task(f, "worker", 2)));
    assert_false(stops(f, task(f, "worker", 0)));
    assert_int_equal(count(f, AM_ACT_WORLD), 1);
    assert_non_null(strstr(f->fsm.world_note, "worker:2 left the world (tony scale worker=2); world 1 is 2 task(s)"));
    assert_true(f->job->attempt_over);
    assert_false(am_fsm_keeps_container(&f->fsm, task(f, "worker", 2)));
    am_fsm_exited(&f->fsm, task(f, "worker", 2), TONY_EXIT_KILLED_BY_APPMASTER, NULL, 150, fresh(f));
    restart_in_place(f, 200);
    assert_int_equal(f->fsm.retries_left, 0);
    assert_int_equal(am_fsm_world_count(f->job, task(f, "worker", 0)->role), 2);
    /* no regrowth: the target is 2 now */
    am_fsm_tick(&f->fsm, 200 + 2 * SETTLE, fresh(f));
    assert_int_equal(count(f, AM_ACT_REQUEST), 0);
    for (int i = 0; i < 2; i++) am_fsm_started(&f->fsm, task(f, "worker", i), 10 + i, 300);

    assert_int_equal(scale(f, "worker", 3, 500, &err), AM_SCALE_OK);
    assert_int_equal(count(f, AM_ACT_REQUEST), 1);
    assert_ptr_equal(f->out.items[0].task, task(f, "worker", 2));
    assert_false(f->job->attempt_over);
    am_registration r = {.host = "127.0.0.1", .port = 1002};
    assert_int_equal(am_fsm_registered(&f->fsm, task(f, "worker", 2), &r, 800, fresh(f)), AM_REG_NEW);
    am_fsm_tick(&f->fsm, 800 + SETTLE, fresh(f));
    assert_int_equal(count(f, AM_ACT_WORLD), 1);
    assert_int_equal(f->fsm.world_version, 2);
    restart_in_place(f, 2000);
    assert_int_equal(am_fsm_world_count(f->job, task(f, "worker", 0)->role), 3);
    destroy(f);
}

/* A lost task's peers fail first (their collective breaks the moment it
 * dies; the backend tells of its container later): within the settle time
 * the loss is the root cause, the peers' failures its consequence, and the
 * attempt restarts in place on the world's account. */
static void test_peers_failing_before_the_loss_is_told(void **state) {
    (void)state;
    fixture *f = make(ELASTIC);
    begin(f, NULL);
    report(f, 1, 1, 100); /* gloo's broken pipe */
    assert_true(f->job->attempt_over);
    report(f, 0, 143, 150);
    assert_int_equal(count(f, AM_ACT_RESTART), 0); /* not judged yet: a loss may be told */
    assert_int_equal(count(f, AM_ACT_FINISH), 0);
    assert_true(am_fsm_keeps_container(&f->fsm, task(f, "worker", 0)));
    assert_true(am_fsm_keeps_container(&f->fsm, task(f, "worker", 1)));
    am_fsm_tick(&f->fsm, 500, fresh(f));
    assert_int_equal(count(f, AM_ACT_STOP), 0);
    am_fsm_exited(&f->fsm, task(f, "worker", 2), 137, "killed", 100 + SETTLE - 1, fresh(f));
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    assert_int_equal(f->fsm.retries_left, 0);
    assert_int_equal(f->fsm.attempt_end, AM_END_RESIZED);
    assert_ptr_equal(f->job->first_failed, task(f, "worker", 2));
    assert_non_null(strstr(f->job->attempt_diagnostics, "without worker:2"));
    assert_true(am_fsm_keeps_container(&f->fsm, task(f, "worker", 1)));
    am_fsm_next_attempt(&f->fsm, 100 + SETTLE, fresh(f));
    assert_int_equal(count(f, AM_ACT_REQUEST), 1); /* worker:2's replacement alone */
    assert_ptr_equal(f->out.items[0].task, task(f, "worker", 2));
    destroy(f);
}

/* A peer's failure with no loss told within the settle time is the
 * script's: the restart policy judges it then (here: no retries). */
static void test_a_failure_no_loss_explains_is_judged_after_the_wait(void **state) {
    (void)state;
    for (int late = 0; late < 2; late++) {
        fixture *f = make(ELASTIC);
        begin(f, NULL);
        report(f, 1, 1, 100);
        report(f, 0, 143, 150);
        report(f, 2, 143, 150);
        am_fsm_tick(&f->fsm, 100 + SETTLE - 1, fresh(f));
        assert_int_equal(count(f, AM_ACT_FINISH) + count(f, AM_ACT_RESTART), 0);
        am_fsm_tick(&f->fsm, 100 + SETTLE, fresh(f));
        long long t = 100 + SETTLE + 1;
        if (late) am_fsm_exited(&f->fsm, task(f, "worker", 2), 137, "killed", t++, fresh(f));
        am_fsm_tick(&f->fsm, t + f->plan.heartbeat_interval_ms + AM_FSM_IN_PLACE_STOP_MS + 1, fresh(f));
        for (int i = 0; i < 3; i++)
            if (!task(f, "worker", i)->exited) am_fsm_exited(&f->fsm, task(f, "worker", i), 143, NULL, t + 1, fresh(f));
        assert_int_equal(count(f, AM_ACT_RESTART), 0);
        assert_int_equal(f->fsm.state, AM_JOB_DONE);
        assert_int_equal(f->fsm.final_status, AM_FINAL_FAILED);
        assert_int_equal(f->fsm.attempt_end, AM_END_FAILED);
        assert_ptr_equal(f->job->first_failed, task(f, "worker", 1));
        destroy(f);
    }
}


/* How each attempt ends, outside the world's changes: a script's failure
 * that the policy retries is FAILED (and stays so in ends), a success
 * SUCCEEDED, a kill KILLED, a rigid job's lost task FAILED. */
static void test_attempt_ends_that_are_not_the_worlds(void **state) {
    (void)state;
    static const char *RETRY[] = {"tony.application.framework=pytorch", "tony.worker.instances=3",
                                  "tony.worker.min-instances=2", "tony.application.elastic-settle-ms=1000",
                                  "tony.am.retry-count=1", "tony.application.restart-backoff-ms=0", NULL};
    fixture *f = make(RETRY);
    begin(f, NULL);
    report(f, 2, 1, 100); /* its process failed in a container that stays: the script's failure */
    report(f, 0, 143, 200);
    report(f, 1, 143, 200);
    am_fsm_tick(&f->fsm, 100 + SETTLE, fresh(f)); /* judged once no loss came to explain it */
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    assert_int_equal(f->fsm.attempt_end, AM_END_FAILED);
    am_fsm_next_attempt(&f->fsm, 1300, fresh(f));
    assert_int_equal(f->fsm.ends[0], AM_END_FAILED);
    for (int i = 0; i < 3; i++) reg(f, task(f, "worker", i), 1400);
    for (int i = 0; i < 3; i++) am_fsm_started(&f->fsm, task(f, "worker", i), 10 + i, 1410);
    for (int i = 0; i < 3; i++) report(f, i, 0, 1500);
    for (int i = 0; i < 3; i++) am_fsm_exited(&f->fsm, task(f, "worker", i), 0, NULL, 1510, fresh(f));
    assert_int_equal(f->fsm.final_status, AM_FINAL_SUCCEEDED);
    assert_int_equal(f->fsm.attempt_end, AM_END_SUCCEEDED);
    destroy(f);

    f = make(ELASTIC);
    begin(f, NULL);
    am_fsm_kill(&f->fsm, 100, fresh(f));
    for (int i = 0; i < 3; i++) am_fsm_exited(&f->fsm, task(f, "worker", i), 143, NULL, 110, fresh(f));
    assert_int_equal(f->fsm.state, AM_JOB_DONE);
    assert_int_equal(f->fsm.attempt_end, AM_END_KILLED);
    destroy(f);

    f = rigid_job_loses_a_worker();
    assert_int_equal(f->fsm.attempt_end, AM_END_FAILED);
    assert_null(am_attempt_end_name(AM_END_NONE));
    destroy(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lost_worker_without_replacement_leaves_the_world),
        cmocka_unit_test(test_ranks_are_renumbered_densely),
        cmocka_unit_test(test_replacement_in_time_keeps_the_world),
        cmocka_unit_test(test_replacement_that_cannot_start_leaves_at_once),
        cmocka_unit_test(test_starts_with_the_minimum_after_the_settle_time),
        cmocka_unit_test(test_two_lost_wait_for_the_minimum),
        cmocka_unit_test(test_at_the_minimum_the_policy_decides),
        cmocka_unit_test(test_missed_heartbeats_are_a_loss),
        cmocka_unit_test(test_a_rigid_job_is_unchanged),
        cmocka_unit_test(test_a_late_replacement_grows_the_world_back),
        cmocka_unit_test(test_arrivals_are_batched_into_one_restart),
        cmocka_unit_test(test_a_task_that_cannot_start_is_asked_again_after_a_backoff),
        cmocka_unit_test(test_scale_refusals),
        cmocka_unit_test(test_scale_shrinks_and_grows_a_running_world),
        cmocka_unit_test(test_attempt_ends_that_are_not_the_worlds),
        cmocka_unit_test(test_peers_failing_before_the_loss_is_told),
        cmocka_unit_test(test_a_failure_no_loss_explains_is_judged_after_the_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
