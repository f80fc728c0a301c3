/* The job JSON's contract (common/jobjson.h) as it is on the wire: the
 * state-name tables of the coordinator give the words clients compare
 * with, written here as literals so that a changed header fails here and
 * not in a client of an older tony; and the questions every reader asks
 * (finished? succeeded?) hold for odd answers too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "am/fsm.h"
#include "am/job.h"
#include "common/jobjson.h"

static void test_state_words_on_the_wire(void **state) {
    (void)state;
    assert_string_equal(am_job_state_name(AM_JOB_NEW), "NEW");
    assert_string_equal(am_job_state_name(AM_JOB_REGISTERING), "REGISTERING");
    assert_string_equal(am_job_state_name(AM_JOB_RUNNING), "RUNNING");
    assert_string_equal(am_job_state_name(AM_JOB_FINISHING), "FINISHING");
    assert_string_equal(am_job_state_name(AM_JOB_BACKOFF), "BACKOFF");
    assert_string_equal(am_job_state_name(AM_JOB_DONE), "FINISHED");
    assert_string_equal(am_final_status_name(AM_FINAL_SUCCEEDED), "SUCCEEDED");
    assert_string_equal(am_final_status_name(AM_FINAL_FAILED), "FAILED");
    assert_string_equal(am_final_status_name(AM_FINAL_KILLED), "KILLED");
    assert_string_equal(am_final_status_name(AM_FINAL_UNDEFINED), "UNDEFINED");
    /* TonY's task words: requested and registered tasks are both READY */
    assert_string_equal(am_task_state_name(AM_TASK_NEW), "NEW");
    assert_string_equal(am_task_state_name(AM_TASK_REQUESTED), "READY");
    assert_string_equal(am_task_state_name(AM_TASK_REGISTERED), "READY");
    assert_string_equal(am_task_state_name(AM_TASK_RUNNING), "RUNNING");
    assert_string_equal(am_task_state_name(AM_TASK_SUCCEEDED), "SUCCEEDED");
    assert_string_equal(am_task_state_name(AM_TASK_FAILED), "FAILED");
    assert_string_equal(am_task_state_name(AM_TASK_FINISHED), "FINISHED");
}

static void test_finished_and_succeeded(void **state) {
    (void)state;
    json_t *done = json_pack("{s:s,s:s}", "state", "FINISHED", "final_status", "SUCCEEDED");
    json_t *failed = json_pack("{s:s,s:s}", "state", "FINISHED", "final_status", "FAILED");
    json_t *running = json_pack("{s:s,s:s}", "state", "RUNNING", "final_status", "UNDEFINED");
    json_t *odd = json_pack("{s:i,s:i}", "state", 3, "final_status", 1); /* not strings */
    json_t *empty = json_object();
    assert_true(tony_job_is_finished(done) && tony_job_succeeded(done));
    assert_true(tony_job_is_finished(failed) && !tony_job_succeeded(failed));
    assert_false(tony_job_is_finished(running) || tony_job_succeeded(running));
    assert_false(tony_job_is_finished(odd) || tony_job_succeeded(odd));
    assert_false(tony_job_is_finished(empty) || tony_job_succeeded(empty));
    assert_false(tony_job_is_finished(NULL) || tony_job_succeeded(NULL));
    json_decref(done), json_decref(failed), json_decref(running), json_decref(odd), json_decref(empty);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_words_on_the_wire),
        cmocka_unit_test(test_finished_and_succeeded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
