/* Bad-node exclusion and the `fail` log policy: the exclusion module alone
 * (which exits are the node's fault, the cap, counting) and the state
 * machine through event sequences (a node excluded once with its action, a
 * stopped task's end not counted, the cap said, a `fail` match ending the
 * job with retries left, an `exclude-node` match, a sidecar's match
 * ignored). Plans come from real configurations (tony_runtime_plan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "am/exclusion.h"
#include "common/amapi.h"
#include "backend/backend.h"
#include "fsm_fixture.h"

/* --- the module */

static void test_node_causes(void **state) {
    (void)state;
    char buf[256];
    /* the node's fault */
    assert_non_null(am_exclusion_node_cause(TONY_EXIT_DISKS_FAILED, true, false, buf, sizeof buf));
    assert_non_null(am_exclusion_node_cause(TONY_EXIT_ABORTED, true, false, buf, sizeof buf));
    const char *why = am_exclusion_node_cause(126, false, false, buf, sizeof buf);
    assert_non_null(why);
    assert_non_null(strstr(why, "exit code 126"));
    /* the user's code, the scheduler, or us */
    assert_null(am_exclusion_node_cause(1, true, false, buf, sizeof buf));
    assert_null(am_exclusion_node_cause(137, true, false, buf, sizeof buf));
    assert_null(am_exclusion_node_cause(TONY_EXIT_KILLED_EXCEEDED_PMEM, false, false, buf, sizeof buf));
    assert_null(am_exclusion_node_cause(TONY_EXIT_PREEMPTED, false, false, buf, sizeof buf));
    assert_null(am_exclusion_node_cause(TONY_EXIT_KILLED_BY_APPMASTER, false, false, buf, sizeof buf));
    assert_null(am_exclusion_node_cause(0, false, false, buf, sizeof buf));
    /* the executor could not set the task up from the job's own inputs (a
     * venv that does not unpack): the job's fault, on every node */
    assert_null(am_exclusion_node_cause(AM_EXEC_EXIT_NOT_STARTED, false, false, buf, sizeof buf));
    /* whatever ends a container we asked to stop is ours */
    assert_null(am_exclusion_node_cause(TONY_EXIT_ABORTED, true, true, buf, sizeof buf));
    assert_null(am_exclusion_node_cause(126, false, true, buf, sizeof buf));
}

static void test_cap(void **state) {
    (void)state;
    am_exclusion x;
    am_exclusion_init(&x, -1); /* default: fewer than half */
    assert_int_equal(am_exclusion_cap(&x, 0), 0);
    assert_int_equal(am_exclusion_cap(&x, 1), 0);
    assert_int_equal(am_exclusion_cap(&x, 2), 0);
    assert_int_equal(am_exclusion_cap(&x, 3), 1);
    assert_int_equal(am_exclusion_cap(&x, 4), 1);
    assert_int_equal(am_exclusion_cap(&x, 5), 2);
    assert_int_equal(am_exclusion_cap(&x, 100), 49);
    am_exclusion_free(&x);
    am_exclusion_init(&x, 10); /* configured, but never every node */
    assert_int_equal(am_exclusion_cap(&x, 3), 2);
    assert_int_equal(am_exclusion_cap(&x, 50), 10);
    assert_int_equal(am_exclusion_cap(&x, 0), 10);
    am_exclusion_free(&x);
    am_exclusion_init(&x, 0); /* off */
    assert_int_equal(am_exclusion_cap(&x, 100), 0);
    am_exclusion_free(&x);
}

static void test_counting_and_the_cap_said(void **state) {
    (void)state;
    am_exclusion x;
    am_exclusion_init(&x, -1);
    assert_int_equal(am_exclusion_add(&x, "n1:1", "worker:0", "disks", 0, 5, 10), AM_EXCL_ADDED);
    assert_int_equal(am_exclusion_add(&x, "n1:1", "worker:1", "disks", 0, 5, 11), AM_EXCL_ALREADY);
    assert_int_equal(am_exclusion_add(&x, "n2:1", "worker:1", "lost", 1, 5, 12), AM_EXCL_ADDED);
    assert_int_equal(am_exclusion_count(&x), 2);
    /* 5 nodes: 2 is the most (fewer than half) */
    assert_int_equal(am_exclusion_add(&x, "n3:1", "worker:2", "lost", 1, 5, 13), AM_EXCL_CAPPED);
    assert_int_equal(am_exclusion_count(&x), 2);
    assert_true(am_exclusion_has(&x, "n2:1"));
    assert_false(am_exclusion_has(&x, "n3:1"));
    assert_int_equal(x.len, 3);
    assert_non_null(x.items[2].refused);
    assert_non_null(strstr(x.items[2].refused, "fewer than half"));
    assert_non_null(strstr(x.items[2].refused, "tony.application.max-excluded-nodes"));
    assert_string_equal(x.items[0].task, "worker:0");
    assert_int_equal(x.items[1].attempt, 1);
    /* the same bad node again: said once */
    assert_int_equal(am_exclusion_add(&x, "n3:1", "worker:0", "lost", 2, 5, 14), AM_EXCL_ALREADY);
    /* a bigger cluster makes room: excluded now */
    assert_int_equal(am_exclusion_add(&x, "n3:1", "worker:0", "lost", 2, 7, 15), AM_EXCL_ADDED);
    assert_true(am_exclusion_has(&x, "n3:1"));
    am_exclusion_free(&x);

    /* one node: never excluded, and said so */
    am_exclusion_init(&x, -1);
    assert_int_equal(am_exclusion_add(&x, "localhost", "worker:0", "lost", 0, 1, 0), AM_EXCL_CAPPED);
    assert_non_null(strstr(x.items[0].refused, "only node"));
    am_exclusion_free(&x);
}

/* --- the state machine */

/* Every task asked for registers and starts, except those in skip. */
static void begin(fixture *f, const char *skip) {
    am_fsm_start(&f->fsm, 0, fresh(f));
    for (size_t i = 0; i < f->fsm.job.ntasks; i++) {
        am_task *t = &f->fsm.job.tasks[i];
        char id[64];
        snprintf(id, sizeof id, "%s:%d", t->role->name, t->index);
        if (t->state != AM_TASK_REQUESTED || (skip && strcmp(skip, id) == 0)) continue;
        am_registration r = {.host = "127.0.0.1", .port = 1000 + t->index};
        am_fsm_registered(&f->fsm, t, &r, 0, fresh(f));
        am_fsm_started(&f->fsm, t, 100 + (int)i, 0);
    }
}

/* A container ends on node, on a cluster of n nodes. */
static void ended(fixture *f, const char *role, int index, int status, const char *node, int n) {
    am_task *t = task(f, role, index);
    am_fsm_node(&f->fsm, t, node, n);
    am_fsm_exited(&f->fsm, t, status, "diag", 10, fresh(f));
}

/* The containers the last event asked to stop end as stopped ones do. */
static void stopped(fixture *f) {
    am_actions got = f->out;
    f->out = (am_actions){0};
    for (size_t i = 0; i < got.len; i++)
        if (got.items[i].kind == AM_ACT_STOP && got.items[i].task && !got.items[i].task->exited) {
            am_fsm_node(&f->fsm, got.items[i].task, "good:1", 4);
            am_fsm_exited(&f->fsm, got.items[i].task, TONY_EXIT_ABORTED, NULL, 20, fresh(f));
        }
    am_actions_free(&got);
}

static const char *WORKERS[] = {"tony.worker.instances=3", "tony.am.retry-count=2",
                                "tony.application.framework=pytorch",
                                "tony.application.restart-backoff-ms=0" /* restarts at once (policy.h) */,
                                "tony.application.restart-mode=reallocate" /* every container asked anew */, NULL};

static void test_launch_failure_excludes_its_node_once(void **state) {
    (void)state;
    fixture *f = make(WORKERS);
    begin(f, "worker:2"); /* its executor never registers */
    ended(f, "worker", 2, 126, "bad:1", 4);
    assert_int_equal(count(f, AM_ACT_EXCLUDE_NODE), 1);
    assert_string_equal(f->out.items[0].note, "bad:1");
    assert_true(am_exclusion_has(&f->fsm.exclusion, "bad:1"));
    assert_true(f->fsm.job.attempt_over);
    /* the others are stopped; their ends (ABORTED, after our stop) are ours, not their nodes' */
    stopped(f);
    assert_int_equal(count(f, AM_ACT_EXCLUDE_NODE), 0);
    assert_int_equal(am_exclusion_count(&f->fsm.exclusion), 1);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    /* the next attempt on the same bad node: no second action */
    am_fsm_next_attempt(&f->fsm, 30, fresh(f));
    begin(f, "worker:0");
    f->fsm.state = AM_JOB_RUNNING;
    ended(f, "worker", 0, 126, "bad:1", 4);
    assert_int_equal(count(f, AM_ACT_EXCLUDE_NODE), 0);
    destroy(f);
}

static void test_user_failure_excludes_nothing(void **state) {
    (void)state;
    fixture *f = make(WORKERS);
    begin(f, NULL);
    ended(f, "worker", 1, 1, "n:1", 4);
    assert_int_equal(count(f, AM_ACT_EXCLUDE_NODE), 0);
    assert_int_equal(f->fsm.exclusion.len, 0);
    destroy(f);
}

static void test_the_cap_is_said_and_stops_excluding(void **state) {
    (void)state;
    /* 3 nodes: one may be excluded */
    const char *kv[] = {"tony.worker.instances=3", "tony.application.fail-fast-lockstep=false", NULL};
    fixture *f = make(kv);
    begin(f, NULL);
    /* (not worker:0, the chief: its failure would stop the others) */
    ended(f, "worker", 1, TONY_EXIT_DISKS_FAILED, "a:1", 3);
    assert_int_equal(count(f, AM_ACT_EXCLUDE_NODE), 1);
    assert_false(f->fsm.job.attempt_over);
    ended(f, "worker", 2, TONY_EXIT_DISKS_FAILED, "b:1", 3);
    /* an action still (for the coordinator to say why not), but not excluded */
    assert_int_equal(count(f, AM_ACT_EXCLUDE_NODE), 1);
    assert_false(am_exclusion_has(&f->fsm.exclusion, "b:1"));
    assert_non_null(f->fsm.exclusion.items[1].refused);
    destroy(f);
}

static void test_exclude_node_log_policy(void **state) {
    (void)state;
    fixture *f = make(WORKERS);
    begin(f, NULL);
    am_task *t = task(f, "worker", 1);
    am_fsm_log_matched(&f->fsm, t, false, "exclude-node:(?i)uncorrectable ECC error", "stderr",
                       "RuntimeError: CUDA error: uncorrectable ECC error encountered");
    ended(f, "worker", 1, 1, "gpu7:8041", 10);
    assert_int_equal(count(f, AM_ACT_EXCLUDE_NODE), 1);
    assert_non_null(strstr(f->fsm.exclusion.items[0].reason, "uncorrectable ECC error"));
    assert_non_null(strstr(t->diagnostics, "exclude-node:(?i)uncorrectable ECC error"));
    /* not a permanent failure: the job restarts */
    assert_null(t->permanent);
    stopped(f);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    destroy(f);
}

static void test_fail_log_policy_stops_retries(void **state) {
    (void)state;
    fixture *f = make(WORKERS);
    begin(f, NULL);
    am_task *t = task(f, "worker", 0);
    am_fsm_log_matched(&f->fsm, t, true, "fail:CUDA out of memory", "stderr",
                       "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB");
    /* only the first match of a kind counts */
    am_fsm_log_matched(&f->fsm, t, true, "fail:ModuleNotFoundError", "stderr", "later");
    ended(f, "worker", 0, 1, "n:1", 4);
    assert_int_equal(count(f, AM_ACT_EXCLUDE_NODE), 0);
    assert_non_null(t->permanent);
    stopped(f);
    assert_int_equal(count(f, AM_ACT_RESTART), 0);
    assert_int_equal(count(f, AM_ACT_FINISH), 1);
    assert_int_equal(f->fsm.state, AM_JOB_DONE);
    assert_int_equal(f->fsm.final_status, AM_FINAL_FAILED);
    assert_int_equal(f->fsm.retries_left, 2);
    assert_non_null(strstr(f->fsm.diagnostics, "fail:CUDA out of memory"));
    assert_non_null(strstr(f->fsm.diagnostics, "Tried to allocate 2.00 GiB"));
    assert_non_null(strstr(f->fsm.diagnostics, "Not retried"));
    assert_null(strstr(f->fsm.diagnostics, "later"));
    destroy(f);
}

static void test_fail_match_of_a_task_that_succeeded_counts_not(void **state) {
    (void)state;
    fixture *f = make(WORKERS);
    begin(f, NULL);
    am_fsm_log_matched(&f->fsm, task(f, "worker", 0), true, "fail:CUDA out of memory", "stdout",
                       "warning: CUDA out of memory, retrying with a smaller batch");
    ended(f, "worker", 0, 0, "n:1", 4);
    ended(f, "worker", 1, 3, "n:2", 4);
    assert_null(task(f, "worker", 0)->permanent);
    stopped(f);
    assert_int_equal(count(f, AM_ACT_RESTART), 1);
    destroy(f);
}

static void test_a_sidecars_fail_match_is_ignored(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=1", "tony.tensorboard.instances=1", "tony.am.retry-count=1", NULL};
    fixture *f = make(kv);
    begin(f, NULL);
    am_fsm_log_matched(&f->fsm, task(f, "tensorboard", 0), true, "fail:ModuleNotFoundError", "stderr",
                       "ModuleNotFoundError: No module named 'tensorboard'");
    ended(f, "tensorboard", 0, 1, "n:1", 4);
    assert_null(task(f, "tensorboard", 0)->permanent);
    assert_false(f->fsm.job.attempt_over);
    destroy(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_causes),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_counting_and_the_cap_said),
        cmocka_unit_test(test_launch_failure_excludes_its_node_once),
        cmocka_unit_test(test_user_failure_excludes_nothing),
        cmocka_unit_test(test_the_cap_is_said_and_stops_excluding),
        cmocka_unit_test(test_exclude_node_log_policy),
        cmocka_unit_test(test_fail_log_policy_stops_retries),
        cmocka_unit_test(test_fail_match_of_a_task_that_succeeded_counts_not),
        cmocka_unit_test(test_a_sidecars_fail_match_is_ignored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
