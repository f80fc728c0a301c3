/* Restart policies and a failure's last words without the state machine:
 * which exit statuses are permanent under exit-code, quick failures
 * counted, the backoff (none for the first) doubling and its cap, the
 * reasons given for no retry (naming the key), the keys'
 * validation, and reading a stderr's tail and torch's error file from real
 * files. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "am/policy.h"
#include "backend/backend.h"
#include "common/lastwords.h"
#include "conf/conf.h"
#include "common/amapi.h"
#include "conf/plan.h"
#include "runtime/runtime.h"

static int plan_of(const char *const *kv, tony_conf **conf, tony_plan *p, tony_error *err) {
    *conf = tony_conf_new();
    tony_conf_load_defaults(*conf);
    tony_conf_set(*conf, "tony.containers.command", "python train.py", "test");
    for (; *kv; kv++) {
        char *copy = strdup(*kv), *eq = strchr(copy, '=');
        *eq = '\0';
        tony_conf_set(*conf, copy, eq + 1, "test");
        free(copy);
    }
    return tony_runtime_plan(*conf, p, err);
}

static void test_exit_code_rule(void **state) {
    (void)state;
    assert_true(am_policy_exit_is_permanent(1));
    assert_true(am_policy_exit_is_permanent(2));
    assert_true(am_policy_exit_is_permanent(127));
    assert_false(am_policy_exit_is_permanent(0));
    assert_false(am_policy_exit_is_permanent(128));
    assert_false(am_policy_exit_is_permanent(137)); /* SIGKILL */
    assert_false(am_policy_exit_is_permanent(143)); /* SIGTERM */
    for (int s = TONY_EXIT_KILLED_FOR_EXCESS_LOGS; s <= TONY_EXIT_ABORTED; s++) assert_false(am_policy_exit_is_permanent(s));
    assert_false(am_policy_exit_is_permanent(TONY_EXIT_INVALID));
}

/* The first failure restarts at once; from the second quick one in a row
 * the wait is the backoff, doubled per quick failure after that, capped. */
static void test_backoff_doubles_up_to_cap(void **state) {
    (void)state;
    tony_plan p = {.restart_backoff_ms = 1000, .restart_backoff_max_ms = 60000};
    assert_int_equal(am_policy_backoff_ms(&p, 0), 0);
    assert_int_equal(am_policy_backoff_ms(&p, 1), 0);
    assert_int_equal(am_policy_backoff_ms(&p, 2), 1000);
    assert_int_equal(am_policy_backoff_ms(&p, 3), 2000);
    assert_int_equal(am_policy_backoff_ms(&p, 7), 32000);
    assert_int_equal(am_policy_backoff_ms(&p, 8), 60000);
    assert_int_equal(am_policy_backoff_ms(&p, 1000000), 60000); /* no overflow */
    p.restart_backoff_ms = 0;
    assert_int_equal(am_policy_backoff_ms(&p, 3), 0);
    p.restart_backoff_ms = 5000, p.restart_backoff_max_ms = 2000;
    assert_int_equal(am_policy_backoff_ms(&p, 2), 2000);
}

/* Quick failures count up; an attempt that ran the healthy stretch (not
 * one ms less) ends the run of them; the count does not overflow. */
static void test_quick_failures_count_and_reset(void **state) {
    (void)state;
    tony_plan p = {.restart_healthy_ms = 60000};
    assert_int_equal(am_policy_quick_failures(&p, 0, 0), 1);
    assert_int_equal(am_policy_quick_failures(&p, 1, 59999), 2);
    assert_int_equal(am_policy_quick_failures(&p, 2, 60000), 0);
    assert_int_equal(am_policy_quick_failures(&p, 5, 3600000), 0);
    assert_int_equal(am_policy_quick_failures(&p, INT_MAX, 10), INT_MAX);
    /* 0: every attempt is healthy, no restart ever waits */
    p.restart_healthy_ms = 0;
    assert_int_equal(am_policy_quick_failures(&p, 3, 0), 0);
}

static void test_decisions_and_reasons(void **state) {
    (void)state;
    const char *kv[] = {"tony.worker.instances=1", "tony.ps.instances=1", "tony.am.retry-count=2",
                        "tony.application.restart-policy=exit-code", "tony.ps.restart-policy=on-failure", NULL};
    tony_conf *c;
    tony_plan p;
    tony_error err;
    if (plan_of(kv, &c, &p, &err)) fail_msg("plan: %s", err.msg);
    const tony_role *ps = tony_plan_role(&p, "ps"), *worker = tony_plan_role(&p, "worker");
    assert_int_equal(worker->restart_policy, TONY_RESTART_EXIT_CODE);
    assert_int_equal(ps->restart_policy, TONY_RESTART_ON_FAILURE);
    char *why;
    am_failure f = {.role = worker, .exit_status = 137};
    assert_true(am_policy_should_retry(&p, &f, 2, &why));
    assert_null(why);
    f.exit_status = 1;
    assert_false(am_policy_should_retry(&p, &f, 2, &why));
    assert_non_null(strstr(why, "tony.application.restart-policy is exit-code"));
    free(why);
    /* a command that never ran: the executor's own code for the job's
     * inputs is not retried, and not called the script's; a container the
     * runtime did not start (125) is retried as a failed launch */
    f = (am_failure){.role = worker, .exit_status = AM_EXEC_EXIT_NOT_STARTED, .never_ran = true};
    assert_false(am_policy_should_retry(&p, &f, 2, &why));
    assert_non_null(strstr(why, "the command never ran"));
    assert_null(strstr(why, "script's own"));
    free(why);
    f.exit_status = 125;
    assert_true(am_policy_should_retry(&p, &f, 2, &why));
    f.never_ran = false;
    f.role = ps; /* its own key says on-failure */
    assert_true(am_policy_should_retry(&p, &f, 2, &why));
    assert_false(am_policy_should_retry(&p, &f, 0, &why));
    assert_string_equal(why, "Not retried: no restarts left (tony.am.retry-count=2)");
    free(why);
    f.timed_out = true;
    assert_false(am_policy_should_retry(&p, &f, 2, &why));
    assert_non_null(strstr(why, "tony.application.timeout"));
    free(why);
    f = (am_failure){.role = ps, .exit_status = 137, .permanent = "its output matched X"};
    assert_false(am_policy_should_retry(&p, &f, 2, &why));
    assert_string_equal(why, "Not retried: its output matched X");
    free(why);
    /* no task failed (a registration timeout): the job's policy; no exit code */
    f = (am_failure){.exit_status = TONY_EXIT_INVALID};
    assert_true(am_policy_should_retry(&p, &f, 1, &why));
    p.retry_count = 0; /* nothing was asked for: nothing to say */
    assert_false(am_policy_should_retry(&p, &f, 0, &why));
    assert_null(why);
    tony_plan_free(&p);
    tony_conf_free(c);
}

static void expect_plan_error(const char *kv0, const char *want) {
    const char *kv[] = {"tony.worker.instances=1", kv0, NULL};
    tony_conf *c;
    tony_plan p;
    tony_error err;
    assert_int_not_equal(plan_of(kv, &c, &p, &err), 0);
    if (!strstr(err.msg, want)) fail_msg("'%s' not in '%s'", want, err.msg);
    tony_conf_free(c);
}

static void test_bad_values_name_the_key(void **state) {
    (void)state;
    expect_plan_error("tony.application.restart-policy=always",
                      "tony.application.restart-policy must be on-failure, never or exit-code, got 'always'");
    expect_plan_error("tony.worker.restart-policy=sometimes", "tony.worker.restart-policy must be on-failure");
    expect_plan_error("tony.application.restart-backoff-ms=-5", "tony.application.restart-backoff-ms");
    expect_plan_error("tony.application.restart-backoff-max-ms=soon", "tony.application.restart-backoff-max-ms");
    expect_plan_error("tony.application.restart-healthy-ms=-1", "tony.application.restart-healthy-ms");
    /* case and blanks as other keys take them; the defaults */
    const char *kv[] = {"tony.worker.instances=1", "tony.application.restart-policy= Never ", NULL};
    tony_conf *c;
    tony_plan p;
    tony_error err;
    if (plan_of(kv, &c, &p, &err)) fail_msg("plan: %s", err.msg);
    assert_int_equal(p.restart_policy, TONY_RESTART_NEVER);
    assert_int_equal(p.roles[0].restart_policy, TONY_RESTART_NEVER);
    assert_int_equal(p.restart_backoff_ms, 1000);
    assert_int_equal(p.restart_backoff_max_ms, 60000);
    assert_int_equal(p.restart_healthy_ms, 60000);
    assert_string_equal(tony_restart_policy_name(p.restart_policy), "never");
    tony_plan_free(&p);
    tony_conf_free(c);
}

/* What tony_lastwords_tail / _torch_error (torch: true) read from a real
 * file holding data[0..n). */
static char *read_back(const char *data, size_t n, bool torch, int lines, size_t max_bytes) {
    char path[] = "/tmp/tony-test-lastwords-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, n), (ssize_t)n);
    close(fd);
    char *out = torch ? tony_lastwords_torch_error(path, lines, max_bytes) : tony_lastwords_tail(path, lines, max_bytes);
    unlink(path);
    return out;
}

static void expect_read(const char *data, size_t n, bool torch, int lines, size_t max_bytes, const char *want) {
    char *got = read_back(data, n, torch, lines, max_bytes);
    if (!want) assert_null(got);
    else assert_string_equal(got, want);
    free(got);
}

static void test_stderr_tail(void **state) {
    (void)state;
    char big[8192];
    size_t n = 0;
    for (int i = 0; i < 100; i++) n += (size_t)snprintf(big + n, sizeof big - n, "line %d\n", i);
    expect_read(big, n, false, 3, 4096, "line 97\nline 98\nline 99");
    /* bytes bound whole lines: "line 98\nline 99\n" is 16 */
    expect_read(big, n, false, 20, 16, "line 98\nline 99");
    expect_read(big, n, false, 20, 15, "line 99");
    /* a window that starts inside a line drops that line */
    expect_read(big, n, false, 20, 10, "line 99");
    /* not UTF-8, a NUL, blank endings */
    const char odd[] = "ok\n\xff\xfe bad \xc3\x28 \xc3\xa9t\xc3\xa9\0x\n\n  \n";
    expect_read(odd, sizeof odd - 1, false, 5, 4096, "ok\n?? bad ?( \xc3\xa9t\xc3\xa9?x");
    expect_read("\n \n", 3, false, 5, 4096, NULL);
    /* what a terminal shows: colors, a title, a progress bar's returns, a bell */
    const char ansi[] = "\x1b]0;title\x07\x1b[1;31mTraceback\x1b[0m (most recent)\n"
                        " 10%\r 50%\r100% done\a\r\n\x1b(BValueError: \x1b[33mboom\x1b[m\n\x1b[K";
    expect_read(ansi, sizeof ansi - 1, false, 5, 4096, "Traceback (most recent)\n100% done\nValueError: boom");
    expect_read("\x1b[31m\x1b[0m\n", 9, false, 5, 4096, NULL);
    assert_null(tony_lastwords_tail("/nonexistent/stderr", 5, 4096));
}

static void test_torch_error_file(void **state) {
    (void)state;
    /* what torch's @record writes */
    const char *rec = "{\"message\": {\"message\": \"ValueError: boom\", \"extraInfo\": {\"py_callstack\": "
                      "\"Traceback (most recent call last):\\n  File \\\"t.py\\\", line 3, in main\\n    raise "
                      "ValueError('boom')\\nValueError: boom\\n\", \"timestamp\": \"1\"}}}";
    expect_read(rec, strlen(rec), true, 20, 4096,
                "Traceback (most recent call last):\n  File \"t.py\", line 3, in main\n    raise "
                "ValueError('boom')\nValueError: boom");
    expect_read(rec, strlen(rec), true, 1, 4096, "ValueError: boom");
    expect_read("{\"message\": \"plain text\"}", 25, true, 20, 4096, "plain text");
    expect_read("not json", 8, true, 20, 4096, NULL);
    assert_null(tony_lastwords_torch_error("/nonexistent/torchelastic_error.json", 20, 4096));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_code_rule),
        cmocka_unit_test(test_backoff_doubles_up_to_cap),
        cmocka_unit_test(test_quick_failures_count_and_reset),
        cmocka_unit_test(test_decisions_and_reasons),
        cmocka_unit_test(test_bad_values_name_the_key),
        cmocka_unit_test(test_stderr_tail),
        cmocka_unit_test(test_torch_error_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
