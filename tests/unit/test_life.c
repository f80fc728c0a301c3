/* The executor's state machine (executor/life.h), one test per transition:
 * the process's stop, grace, kill and execution timeout; the coordinator's
 * loss, the search every few seconds, the return (adopted, a newer attempt,
 * refused) and the recovery timeout; the same at the gang barrier, where
 * giving up ends the wait; a task's several processes (the first failure
 * stops the others). Times are plain numbers: no clock, no process. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "executor/life.h"

#define RECOVERY_MS 10000
#define FAIL_LIMIT 5

static exec_life running(long long now) {
    exec_life l;
    exec_life_init(&l, RECOVERY_MS, FAIL_LIMIT);
    exec_life_started(&l, 1, 0, now);
    return l;
}

/* Fails calls until the coordinator is taken for lost (recoverable). */
static void lose(exec_life *l, long long now) {
    exec_act a;
    for (int i = 0; i < EXEC_LIFE_SEARCH_AFTER; i++) exec_life_call_failed(l, now, true, &a);
    assert_true(a.lost);
    assert_true(a.search);
    assert_int_equal(l->coord, EXEC_SEARCHING);
}

static void test_waiting_to_running(void **st) {
    (void)st;
    exec_life l;
    exec_life_init(&l, RECOVERY_MS, FAIL_LIMIT);
    assert_int_equal(l.proc, EXEC_WAITING);
    assert_int_equal(l.coord, EXEC_ANSWERING);
    exec_life_started(&l, 1, 500, 100);
    assert_int_equal(l.proc, EXEC_RUNNING);
    assert_false(exec_life_stopping(&l));
}

static void test_stop_starts_grace(void **st) {
    (void)st;
    exec_life l = running(0);
    exec_act a;
    exec_life_stop(&l, EXEC_WHY_COORDINATOR, 1000, &a);
    assert_int_equal(a.signal, SIGTERM);
    assert_int_equal(a.why, EXEC_WHY_COORDINATOR);
    assert_int_equal(l.proc, EXEC_GRACE);
    assert_int_equal(l.kill_at, 1000 + EXEC_LIFE_GRACE_MS);
    assert_true(exec_life_stopping(&l));
}

static void test_second_stop_is_nothing(void **st) {
    (void)st;
    exec_life l = running(0);
    exec_act a;
    exec_life_stop(&l, EXEC_WHY_SIGNAL, 1000, &a);
    exec_life_stop(&l, EXEC_WHY_COORDINATOR, 1500, &a);
    assert_int_equal(a.signal, 0);
    assert_int_equal(l.kill_at, 1000 + EXEC_LIFE_GRACE_MS);
}

static void test_grace_ends_in_kill(void **st) {
    (void)st;
    exec_life l = running(0);
    exec_act a;
    exec_life_stop(&l, EXEC_WHY_SIGNAL, 1000, &a);
    exec_life_tick(&l, 1000 + EXEC_LIFE_GRACE_MS, false, &a);
    assert_int_equal(a.signal, 0); /* not before the grace is over */
    exec_life_tick(&l, 1001 + EXEC_LIFE_GRACE_MS, false, &a);
    assert_int_equal(a.signal, SIGKILL);
    assert_int_equal(l.proc, EXEC_KILLED);
    exec_life_tick(&l, 5000 + EXEC_LIFE_GRACE_MS, false, &a);
    assert_int_equal(a.signal, 0); /* killed once */
    exec_life_stop(&l, EXEC_WHY_SIGNAL, 9000, &a);
    assert_int_equal(a.signal, 0);
}

static void test_timeout_kills(void **st) {
    (void)st;
    exec_life l;
    exec_life_init(&l, 0, FAIL_LIMIT);
    exec_life_started(&l, 1, 3000, 100);
    exec_act a;
    exec_life_tick(&l, 3100, false, &a);
    assert_int_equal(a.signal, 0);
    exec_life_tick(&l, 3101, false, &a);
    assert_int_equal(a.signal, SIGKILL);
    assert_int_equal(a.why, EXEC_WHY_TIMEOUT);
    assert_true(l.timed_out);
    assert_int_equal(l.proc, EXEC_KILLED);
}

static void test_timeout_in_grace_kills(void **st) {
    (void)st;
    exec_life l;
    exec_life_init(&l, 0, FAIL_LIMIT);
    exec_life_started(&l, 1, 3000, 0);
    exec_act a;
    exec_life_stop(&l, EXEC_WHY_COORDINATOR, 2500, &a);
    exec_life_tick(&l, 3001, false, &a);
    assert_int_equal(a.signal, SIGKILL);
    assert_int_equal(a.why, EXEC_WHY_TIMEOUT);
    assert_true(l.timed_out);
}

static void test_no_timeout_runs_on(void **st) {
    (void)st;
    exec_life l = running(0);
    exec_act a;
    exec_life_tick(&l, 1LL << 40, false, &a);
    assert_int_equal(a.signal, 0);
    assert_int_equal(l.proc, EXEC_RUNNING);
}

static void test_one_failure_is_a_blip(void **st) {
    (void)st;
    exec_life l = running(0);
    exec_act a;
    exec_life_call_failed(&l, 1000, true, &a);
    assert_false(a.lost || a.search || a.signal);
    assert_int_equal(l.coord, EXEC_ANSWERING);
    exec_life_answered(&l);
    assert_int_equal(l.failed, 0);
    exec_life_call_failed(&l, 2000, true, &a);
    assert_false(a.lost);
}

static void test_lost_starts_search(void **st) {
    (void)st;
    exec_life l = running(0);
    lose(&l, 1000);
    assert_int_equal(l.lost_since, 1000);
    assert_int_equal(l.proc, EXEC_RUNNING); /* the process runs on */
}

static void test_search_every_few_seconds(void **st) {
    (void)st;
    exec_life l = running(0);
    lose(&l, 1000);
    exec_act a;
    exec_life_found(&l, EXEC_FOUND_NONE, 1000, &a);
    assert_int_equal(l.coord, EXEC_SEARCHING);
    exec_life_call_failed(&l, 1000 + EXEC_LIFE_SEARCH_EVERY_MS - 1, true, &a);
    assert_false(a.search || a.lost);
    exec_life_call_failed(&l, 1000 + EXEC_LIFE_SEARCH_EVERY_MS, true, &a);
    assert_true(a.search);
    assert_false(a.lost); /* said once */
}

static void test_adopted_rejoins_and_rewatches(void **st) {
    (void)st;
    exec_life l = running(0);
    lose(&l, 1000);
    exec_act a;
    exec_life_found(&l, EXEC_FOUND_ADOPTED, 1000, &a);
    assert_int_equal(a.signal, 0);
    assert_int_equal(l.coord, EXEC_ANSWERING);
    assert_int_equal(l.failed, 0);
    exec_life_tick(&l, 1100, false, &a);
    assert_false(a.rewatch); /* the old watch still runs */
    exec_life_tick(&l, 1200, true, &a);
    assert_true(a.rewatch);
    exec_life_tick(&l, 1300, true, &a);
    assert_false(a.rewatch);
}

static void test_next_attempt_stops(void **st) {
    (void)st;
    exec_life l = running(0);
    lose(&l, 1000);
    exec_act a;
    exec_life_found(&l, EXEC_FOUND_NEXT, 1000, &a);
    assert_int_equal(a.signal, SIGTERM);
    assert_int_equal(a.why, EXEC_WHY_NEXT_ATTEMPT);
    assert_int_equal(l.coord, EXEC_ANSWERING);
    assert_int_equal(l.proc, EXEC_GRACE);
}

static void test_refused_gives_up(void **st) {
    (void)st;
    exec_life l = running(0);
    lose(&l, 1000);
    exec_act a;
    exec_life_found(&l, EXEC_FOUND_REFUSED, 1000, &a);
    assert_int_equal(a.signal, SIGTERM);
    assert_int_equal(a.why, EXEC_WHY_REFUSED);
    assert_int_equal(l.coord, EXEC_GIVEN_UP);
    exec_life_answered(&l);
    assert_int_equal(l.coord, EXEC_GIVEN_UP); /* no way back */
}

static void test_recovery_timeout_gives_up(void **st) {
    (void)st;
    exec_life l = running(0);
    lose(&l, 1000);
    exec_act a;
    exec_life_call_failed(&l, 1000 + RECOVERY_MS, true, &a);
    assert_int_equal(a.signal, 0);
    exec_life_call_failed(&l, 1001 + RECOVERY_MS, true, &a);
    assert_int_equal(a.signal, SIGTERM);
    assert_int_equal(a.why, EXEC_WHY_NO_SUCCESSOR);
    assert_false(a.search); /* past the deadline: no more looks */
    assert_int_equal(l.coord, EXEC_GIVEN_UP);
}

static void test_unrecoverable_misses_stop(void **st) {
    (void)st;
    exec_life l = running(0);
    exec_act a;
    for (int i = 1; i < FAIL_LIMIT; i++) {
        exec_life_call_failed(&l, i * 1000, false, &a);
        assert_false(a.signal || a.search || a.lost);
    }
    exec_life_call_failed(&l, FAIL_LIMIT * 1000, false, &a);
    assert_int_equal(a.signal, SIGTERM);
    assert_int_equal(a.why, EXEC_WHY_MISSED);
    assert_int_equal(l.coord, EXEC_GIVEN_UP);
}

static void test_failures_while_stopping_ignored(void **st) {
    (void)st;
    exec_life l = running(0);
    exec_act a;
    exec_life_stop(&l, EXEC_WHY_COORDINATOR, 0, &a);
    for (int i = 0; i < 2 * FAIL_LIMIT; i++) {
        exec_life_call_failed(&l, i, true, &a);
        assert_false(a.signal || a.search || a.lost);
    }
    assert_int_equal(l.coord, EXEC_ANSWERING);
}

static void test_barrier_signal_exits(void **st) {
    (void)st;
    exec_life l;
    exec_life_init(&l, RECOVERY_MS, FAIL_LIMIT);
    exec_act a;
    exec_life_stop(&l, EXEC_WHY_SIGNAL, 0, &a);
    assert_true(a.exit);
    assert_int_equal(a.signal, 0);
}

static void test_barrier_misses_exit(void **st) {
    (void)st;
    exec_life l;
    exec_life_init(&l, 0, FAIL_LIMIT);
    exec_act a;
    for (int i = 1; i < FAIL_LIMIT; i++) exec_life_call_failed(&l, i, false, &a);
    assert_false(a.exit);
    exec_life_call_failed(&l, FAIL_LIMIT, false, &a);
    assert_true(a.exit);
    assert_int_equal(a.why, EXEC_WHY_MISSED);
}

static void test_barrier_moved_keeps_searching(void **st) {
    (void)st;
    exec_life l;
    exec_life_init(&l, RECOVERY_MS, FAIL_LIMIT);
    lose(&l, 0);
    exec_act a;
    exec_life_found(&l, EXEC_FOUND_MOVED, 0, &a);
    assert_int_equal(l.coord, EXEC_SEARCHING); /* until the new one answers */
    exec_life_answered(&l);
    assert_int_equal(l.coord, EXEC_ANSWERING);
    assert_int_equal(l.failed, 0);
}

static void test_barrier_recovery_timeout_exits(void **st) {
    (void)st;
    exec_life l;
    exec_life_init(&l, RECOVERY_MS, FAIL_LIMIT);
    lose(&l, 0);
    exec_act a;
    exec_life_call_failed(&l, RECOVERY_MS + 1, true, &a);
    assert_true(a.exit);
    assert_int_equal(a.why, EXEC_WHY_NO_SUCCESSOR);
}

/* ---- several processes per task (tony.<role>.nproc-per-node) ---- */

static exec_life running_n(int nproc, long long now) {
    exec_life l;
    exec_life_init(&l, RECOVERY_MS, FAIL_LIMIT);
    exec_life_started(&l, nproc, 0, now);
    return l;
}

/* One process: its end is the task's, whatever its code, and stops nothing. */
static void test_one_process_ends_task(void **st) {
    (void)st;
    exec_life l = running(0);
    exec_act a;
    assert_false(exec_life_done(&l));
    exec_life_exited(&l, 3, 10, &a);
    assert_true(a.failure);
    assert_int_equal(a.signal, 0);
    assert_true(exec_life_done(&l));
    assert_int_equal(l.code, 3);
}

/* All exit 0: the task ends once the last did, with 0, and no one is stopped. */
static void test_all_succeed(void **st) {
    (void)st;
    exec_life l = running_n(3, 0);
    exec_act a;
    for (int i = 0; i < 3; i++) {
        assert_false(exec_life_done(&l));
        exec_life_exited(&l, 0, 10 + i, &a);
        assert_false(a.failure);
        assert_int_equal(a.signal, 0);
        assert_int_equal(l.proc, EXEC_RUNNING);
    }
    assert_true(exec_life_done(&l));
    assert_int_equal(l.code, 0);
}

/* The first failure stops the others (grace, then kill by the one stop
 * path) and its code is the task's; the stopped ones' codes are not. */
static void test_first_failure_stops_siblings(void **st) {
    (void)st;
    exec_life l = running_n(3, 0);
    exec_act a;
    exec_life_exited(&l, 0, 5, &a); /* one done early: nothing happens */
    assert_int_equal(a.signal, 0);
    exec_life_exited(&l, 7, 100, &a);
    assert_true(a.failure);
    assert_int_equal(a.signal, SIGTERM);
    assert_int_equal(a.why, EXEC_WHY_SIBLING);
    assert_int_equal(l.proc, EXEC_GRACE);
    assert_int_equal(l.kill_at, 100 + EXEC_LIFE_GRACE_MS);
    assert_false(exec_life_done(&l));
    /* the last one ignores SIGTERM: killed once the grace is over */
    exec_life_tick(&l, 100 + EXEC_LIFE_GRACE_MS + 1, false, &a);
    assert_int_equal(a.signal, SIGKILL);
    exec_life_exited(&l, 128 + SIGKILL, 100 + EXEC_LIFE_GRACE_MS + 60, &a);
    assert_false(a.failure);
    assert_int_equal(a.signal, 0);
    assert_true(exec_life_done(&l));
    assert_int_equal(l.code, 7);
}

/* A stop from outside (the coordinator) ends them all; the first to go
 * (by the SIGTERM) gives the code, and no second stop is sent. */
static void test_stop_then_exits(void **st) {
    (void)st;
    exec_life l = running_n(2, 0);
    exec_act a;
    exec_life_stop(&l, EXEC_WHY_COORDINATOR, 50, &a);
    assert_int_equal(a.signal, SIGTERM);
    exec_life_exited(&l, 128 + SIGTERM, 60, &a);
    assert_true(a.failure);
    assert_int_equal(a.signal, 0); /* already in its grace */
    exec_life_exited(&l, 0, 70, &a);
    assert_true(exec_life_done(&l));
    assert_int_equal(l.code, 128 + SIGTERM);
}

/* More ends than processes (a repeated report) change nothing; an end at
 * the barrier, where nothing runs, is no event. */
static void test_exits_bounded(void **st) {
    (void)st;
    exec_life l = running_n(1, 0);
    exec_act a;
    exec_life_exited(&l, 0, 1, &a);
    exec_life_exited(&l, 9, 2, &a);
    assert_false(a.failure);
    assert_int_equal(l.code, 0);
    assert_int_equal(l.ended, 1);
    exec_life w;
    exec_life_init(&w, RECOVERY_MS, FAIL_LIMIT);
    exec_life_exited(&w, 1, 0, &a);
    assert_false(a.failure);
    assert_false(exec_life_done(&w));
}

/* An in-place restart starts the same machine again: the counts start over. */
static void test_restart_counts_again(void **st) {
    (void)st;
    exec_life l = running_n(2, 0);
    exec_act a;
    exec_life_exited(&l, 1, 10, &a);
    exec_life_exited(&l, 143, 20, &a);
    assert_true(exec_life_done(&l));
    exec_life_init(&l, RECOVERY_MS, FAIL_LIMIT);
    exec_life_started(&l, 2, 0, 1000);
    assert_false(exec_life_done(&l));
    assert_int_equal(l.code, 0);
    assert_int_equal(l.proc, EXEC_RUNNING);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_waiting_to_running),
        cmocka_unit_test(test_stop_starts_grace),
        cmocka_unit_test(test_second_stop_is_nothing),
        cmocka_unit_test(test_grace_ends_in_kill),
        cmocka_unit_test(test_timeout_kills),
        cmocka_unit_test(test_timeout_in_grace_kills),
        cmocka_unit_test(test_no_timeout_runs_on),
        cmocka_unit_test(test_one_failure_is_a_blip),
        cmocka_unit_test(test_lost_starts_search),
        cmocka_unit_test(test_search_every_few_seconds),
        cmocka_unit_test(test_adopted_rejoins_and_rewatches),
        cmocka_unit_test(test_next_attempt_stops),
        cmocka_unit_test(test_refused_gives_up),
        cmocka_unit_test(test_recovery_timeout_gives_up),
        cmocka_unit_test(test_unrecoverable_misses_stop),
        cmocka_unit_test(test_failures_while_stopping_ignored),
        cmocka_unit_test(test_barrier_signal_exits),
        cmocka_unit_test(test_barrier_misses_exit),
        cmocka_unit_test(test_barrier_moved_keeps_searching),
        cmocka_unit_test(test_barrier_recovery_timeout_exits),
        cmocka_unit_test(test_one_process_ends_task),
        cmocka_unit_test(test_all_succeed),
        cmocka_unit_test(test_first_failure_stops_siblings),
        cmocka_unit_test(test_stop_then_exits),
        cmocka_unit_test(test_exits_bounded),
        cmocka_unit_test(test_restart_counts_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
