/* The live status block of `tony submit` on a terminal: per-role counts in
 * TonY's attention order with the failed indices, the links while they
 * exist, the final state, and lines cut to the terminal's width without
 * breaking a colour or a UTF-8 character; what follows a job says of a
 * coordinator that replaced a lost one, once per change, and of a failed
 * attempt's root cause, even when the restart came between two looks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/follow.h"
#include "client/report.h"
#include "common/jobjson.h"

static json_t *job(const char *state, const char *final, int attempt) {
    json_t *tasks = json_array();
    const char *spec[][3] = {{"ps", "0", "RUNNING"},    {"worker", "0", "SUCCEEDED"}, {"worker", "1", "FAILED"},
                             {"worker", "2", "RUNNING"}, {"worker", "3", "FAILED"},    {"tensorboard", "0", "READY"}};
    for (size_t i = 0; i < sizeof spec / sizeof *spec; i++)
        json_array_append_new(tasks, json_pack("{s:s,s:i,s:s}", "role", spec[i][0], "index", atoi(spec[i][1]),
                                               "state", spec[i][2]));
    return json_pack("{s:s,s:s,s:s,s:i,s:I,s:s,s:o}", "app_id", "application_1_0001", "state", state, "final_status",
                     final, "attempt", attempt, "started_ms", (json_int_t)1000000, "url", "http://h:1", "tasks", tasks);
}

static void test_block_counts_each_role(void **state) {
    (void)state;
    json_t *j = job("RUNNING", "UNDEFINED", 1);
    json_object_set_new(j, "tensorboard_url", json_string("http://h:2/"));
    json_object_set_new(j, "tensorboard_task", json_string("tensorboard:0"));
    char *b = tony_follow_block(j, 1000000 + 75500, 200, false);
    assert_string_equal(b, "tony: application_1_0001 RUNNING, attempt 1 (1 restart), 1m15s\n"
                           "  ps          1 task: 1 RUNNING\n"
                           "  worker      4 tasks: 2 FAILED [1, 3], 1 SUCCEEDED, 1 RUNNING\n"
                           "  tensorboard 1 task: 1 READY\n"
                           "  web page    http://h:1/\n"
                           "  TensorBoard http://h:2/ (tensorboard:0)\n");
    free(b);
    json_decref(j);
}

static void test_block_final_state(void **state) {
    (void)state;
    json_t *j = job("FINISHED", "FAILED", 0);
    json_object_set_new(j, "finished_ms", json_integer(1000000 + 3 * 3600000LL + 61000));
    char *b = tony_follow_block(j, 1000000 + 9999999, 200, false);
    /* the end's time, not now; no web page once the coordinator goes */
    assert_non_null(strstr(b, "tony: application_1_0001 FINISHED FAILED, attempt 0, 3h01m01s\n"));
    assert_null(strstr(b, "web page"));
    free(b);
    json_decref(j);
}

static void test_block_colours_and_cuts(void **state) {
    (void)state;
    json_t *j = job("RUNNING", "UNDEFINED", 0);
    char *b = tony_follow_block(j, 1000000, 200, true);
    assert_non_null(strstr(b, "2 \x1b[31mFAILED\x1b[0m [1, 3], 1 \x1b[32mSUCCEEDED\x1b[0m, 1 \x1b[36mRUNNING\x1b[0m\n"));
    free(b);
    /* 30 columns: "tony: application_1_0001 RUNN" and the colour reset */
    b = tony_follow_block(j, 1000000, 29, true);
    const char *first_nl = strchr(b, '\n');
    assert_int_equal(first_nl - b, (long)strlen("tony: application_1_0001 \x1b[36mRUNN\x1b[0m"));
    assert_memory_equal(b, "tony: application_1_0001 \x1b[36mRUNN\x1b[0m\n", first_nl - b + 1);
    free(b);
    b = tony_follow_block(j, 1000000, 29, false);
    for (const char *line = b, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        assert_true(nl - line <= 29);
    }
    free(b);
    json_decref(j);
    /* a multi-byte character is kept whole or left out, never cut */
    j = job("RUNNING", "UNDEFINED", 0);
    json_object_set_new(j, "app_id", json_string("jöb"));
    b = tony_follow_block(j, 1000000, 8, false);
    assert_memory_equal(b, "tony: jö\n", 10);
    free(b);
    json_decref(j);
}


static void test_coordinator_restart_said_once_per_change(void **state) {
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    tony_follow *f = tony_follow_new(out); /* not a terminal: plain lines */
    json_t *j = job("RUNNING", "UNDEFINED", 0);
    assert_null(tony_report_coordinator(j));
    tony_follow_update(f, j);
    json_object_set_new(j, "coordinator_restarted", json_pack("{s:b,s:i}", "waiting", 1, "adopted", 1));
    tony_follow_update(f, j);
    tony_follow_update(f, j);
    json_object_set_new(j, "coordinator_restarted", json_pack("{s:b,s:i}", "waiting", 0, "adopted", 6));
    tony_follow_update(f, j);
    tony_follow_update(f, j);
    tony_follow_free(f);
    fclose(out);
    const char *waiting = "tony: the coordinator was lost and restarted: 1 task(s) came back so far\n";
    const char *done = "tony: the coordinator was lost and restarted: 6 of 6 task(s) adopted without a restart\n";
    char *w = strstr(text, waiting), *d = strstr(text, done);
    assert_non_null(w);
    assert_non_null(d);
    assert_true(w < d);
    assert_null(strstr(w + 1, waiting));
    assert_null(strstr(d + 1, done));
    free(text);
    json_decref(j);
}

/* The first restart comes at once (am/policy.h): a job can restart and
 * succeed between two looks. Its root cause is still said, once; a job that
 * failed says its last one in the final diagnostics instead. */
static void test_root_cause_of_a_restart_seen_only_at_the_end(void **state) {
    (void)state;
    const char *finals[] = {JOB_FINAL_STATUS_SUCCEEDED, JOB_FINAL_STATUS_FAILED};
    for (int k = 0; k < 2; k++) {
        char *text = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&text, &len);
        tony_follow *f = tony_follow_new(out);
        json_t *j = job(JOB_STATE_FINISHED, finals[k], 1);
        json_object_set_new(j, JOB_ROOT_CAUSE, json_pack("{s:s}", JOB_CAUSE_TEXT, "Root cause: worker:1 died"));
        tony_follow_update(f, j);
        tony_follow_update(f, j);
        tony_follow_free(f);
        fclose(out);
        const char *line = "tony: Root cause: worker:1 died\n";
        char *said = strstr(text, line);
        if (k == 0) {
            assert_non_null(said);
            assert_null(strstr(said + strlen(line), "Root cause")); /* once */
        } else {
            assert_null(said);
        }
        free(text);
        json_decref(j);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_counts_each_role),
        cmocka_unit_test(test_block_final_state),
        cmocka_unit_test(test_block_colours_and_cuts),
        cmocka_unit_test(test_coordinator_restart_said_once_per_change),
        cmocka_unit_test(test_root_cause_of_a_restart_seen_only_at_the_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
