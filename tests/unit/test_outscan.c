/* Log policies: the value's syntax (conf/logpolicy.c) and the executor's
 * scanner (executor/outscan.c): lines split across reads, very long lines,
 * '\r' progress lines, several policies and the first match of each, and
 * files read as they grow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf/logpolicy.h"
#include "executor/outscan.h"

static void parse_ok(const char *v, tony_logpolicies *p) {
    tony_error err;
    if (tony_logpolicies_parse(v, p, &err)) fail_msg("%s", err.msg);
}

static void test_syntax(void **state) {
    (void)state;
    tony_logpolicies p;
    parse_ok(NULL, &p); /* the defaults */
    assert_int_equal(p.len, 3);
    assert_string_equal(p.items[0].text, "fail:CUDA out of memory");
    assert_int_equal(p.items[2].action, TONY_LOGPOLICY_EXCLUDE_NODE);
    tony_logpolicies_free(&p);
    parse_ok("", &p);
    assert_int_equal(p.len, 0);
    tony_logpolicies_free(&p);
    /* spread over lines as in a tony.xml value; \, is a comma of the regex */
    parse_ok("\n  fail:a{1\\,3}b ,\n\texclude-node:(?i)ecc\n, ", &p);
    assert_int_equal(p.len, 2);
    assert_string_equal(p.items[0].text, "fail:a{1,3}b");
    assert_int_equal(regexec(&p.items[0].re, "xaaab", 0, NULL, 0), 0);
    assert_int_not_equal(regexec(&p.items[0].re, "xb", 0, NULL, 0), 0);
    assert_int_equal(regexec(&p.items[1].re, "Uncorrectable ECC Error", 0, NULL, 0), 0);
    tony_logpolicies_free(&p);
}

static void test_bad_values_name_the_key(void **state) {
    (void)state;
    const char *bad[] = {"CUDA out of memory", "retry:x", "fail:(", "fail:", "exclude-node:(?i)"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tony_logpolicies p;
        tony_error err;
        assert_int_equal(tony_logpolicies_parse(bad[i], &p, &err), -1);
        assert_non_null(strstr(err.msg, TONY_LOGPOLICY_KEY));
        assert_null(p.items);
    }
}

static const char *matched(const tony_outscan *s, size_t i) {
    const tony_outscan_match *m = tony_outscan_matched(s, i);
    return m ? m->line : NULL;
}

static void test_lines_split_across_reads(void **state) {
    (void)state;
    tony_logpolicies p;
    parse_ok("fail:CUDA out of memory", &p);
    tony_outscan *s = tony_outscan_new(&p);
    int f = tony_outscan_add_file(s, "/nonexistent", "stderr");
    const char *text = "epoch 1\nRuntimeError: CUDA out of mem";
    tony_outscan_feed(s, f, text, strlen(text));
    assert_null(matched(s, 0));
    tony_outscan_feed(s, f, "ory. Tried", 10);
    assert_null(matched(s, 0)); /* the line has not ended */
    tony_outscan_feed(s, f, " to allocate\nmore\n", 18);
    assert_string_equal(matched(s, 0), "RuntimeError: CUDA out of memory. Tried to allocate");
    assert_string_equal(tony_outscan_matched(s, 0)->stream, "stderr");
    tony_outscan_free(s);
    tony_logpolicies_free(&p);
}

static void test_very_long_lines(void **state) {
    (void)state;
    tony_logpolicies p;
    parse_ok("fail:^tail, exclude-node:ECC", &p);
    tony_outscan *s = tony_outscan_new(&p);
    int f = tony_outscan_add_file(s, "/nonexistent", "stdout");
    /* 10 pieces' worth of one line, then the text: matched in its piece, kept short */
    size_t n = 10 * TONY_OUTSCAN_LINE_MAX;
    char *big = malloc(n);
    memset(big, 'x', n);
    tony_outscan_feed(s, f, big, n);
    tony_outscan_feed(s, f, "tail ECC", 8);
    assert_null(matched(s, 0));
    tony_outscan_finish(s, f); /* the stream ended without a newline */
    /* "^tail" sits at the start of a piece */
    assert_string_equal(matched(s, 0), "tail ECC");
    assert_string_equal(matched(s, 1), "tail ECC");
    tony_outscan_free(s);
    /* a long line that matches is reported cut */
    s = tony_outscan_new(&p);
    f = tony_outscan_add_file(s, "/nonexistent", "stdout");
    tony_outscan_feed(s, f, "ECC", 3);
    tony_outscan_feed(s, f, big, 2000);
    tony_outscan_feed(s, f, "\n", 1);
    assert_int_equal(strlen(matched(s, 1)), TONY_OUTSCAN_KEEP);
    free(big);
    tony_outscan_free(s);
    tony_logpolicies_free(&p);
}

static void test_several_policies_first_match_each(void **state) {
    (void)state;
    tony_logpolicies p;
    parse_ok("fail:ModuleNotFoundError, exclude-node:(?i)uncorrectable ecc, fail:never", &p);
    tony_outscan *s = tony_outscan_new(&p);
    int out = tony_outscan_add_file(s, "/nonexistent", "stdout");
    int err = tony_outscan_add_file(s, "/nonexistent", "stderr");
    const char *a = "10%|#   |\r20%|##  |\rUncorrectable ECC error on GPU 3\rUncorrectable ECC again\n";
    tony_outscan_feed(s, out, a, strlen(a));
    const char *b = "ModuleNotFoundError: No module named 'horovod'\nModuleNotFoundError: second\n";
    tony_outscan_feed(s, err, b, strlen(b));
    assert_string_equal(matched(s, 0), "ModuleNotFoundError: No module named 'horovod'");
    assert_string_equal(tony_outscan_matched(s, 0)->stream, "stderr");
    assert_string_equal(matched(s, 1), "Uncorrectable ECC error on GPU 3");
    assert_string_equal(tony_outscan_matched(s, 1)->stream, "stdout");
    assert_null(matched(s, 2));
    tony_outscan_free(s);
    tony_logpolicies_free(&p);
}

static void test_files_as_they_grow(void **state) {
    (void)state;
    char dir[] = "/tmp/outscan-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/stderr", dir);
    tony_logpolicies p;
    parse_ok("fail:CUDA out of memory", &p);
    tony_outscan *s = tony_outscan_new(&p);
    tony_outscan_add_file(s, path, "stderr");
    tony_outscan_poll(s, 0); /* not there yet: nothing, no error */
    FILE *f = fopen(path, "w");
    fputs("Traceback (most recent call last):\n  RuntimeError: CUDA out", f);
    fflush(f);
    tony_outscan_poll(s, 0);
    assert_null(matched(s, 0));
    fputs(" of memory", f); /* the process dies without a newline */
    fclose(f);
    tony_outscan_poll(s, 0);
    assert_null(matched(s, 0));
    tony_outscan_poll(s, 1); /* the end: the last line counts */
    assert_string_equal(matched(s, 0), "  RuntimeError: CUDA out of memory");
    tony_outscan_free(s);
    tony_logpolicies_free(&p);
    unlink(path);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_syntax),
        cmocka_unit_test(test_bad_values_name_the_key),
        cmocka_unit_test(test_lines_split_across_reads),
        cmocka_unit_test(test_very_long_lines),
        cmocka_unit_test(test_several_policies_first_match_each),
        cmocka_unit_test(test_files_as_they_grow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
