/* Unit tests of what the log endpoint stands on: reading a byte range of a
 * file that may not exist yet or may be growing, turning arbitrary output
 * into valid UTF-8 without losing the place, and the ETag fingerprint. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fs.h"
#include "common/strv.h"

static void check_sanitize(const char *in, size_t n, const char *want, size_t want_used) {
    size_t used = 99;
    char *out = tony_utf8_sanitize(in, n, &used);
    assert_string_equal(out, want);
    assert_int_equal(used, want_used);
    free(out);
}

static void test_utf8_valid_passes_through(void **state) {
    (void)state;
    check_sanitize("", 0, "", 0);
    check_sanitize("plain\n", 6, "plain\n", 6);
    check_sanitize("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9);
}

static void test_utf8_invalid_becomes_replacement(void **state) {
    (void)state;
    const char *R = "\xef\xbf\xbd";
    char want[64];
    /* stray bytes, a lone continuation byte, NUL */
    snprintf(want, sizeof want, "a%s%sb", R, R);
    check_sanitize("a\xff\xfe" "b", 4, want, 4);
    snprintf(want, sizeof want, "%sx", R);
    check_sanitize("\x80x", 2, want, 2);
    snprintf(want, sizeof want, "a%sb", R);
    check_sanitize("a\0b", 3, want, 3);
    /* overlong encodings and surrogates are not UTF-8 */
    snprintf(want, sizeof want, "%s%s", R, R);
    check_sanitize("\xc0\xaf", 2, want, 2);
    snprintf(want, sizeof want, "%s%s%s", R, R, R);
    check_sanitize("\xed\xa0\x80", 3, want, 3);
    /* a broken sequence in the middle: only its lead byte is replaced */
    snprintf(want, sizeof want, "%sAB", R);
    check_sanitize("\xe2" "AB", 3, want, 3);
}

static void test_utf8_cut_sequence_waits(void **state) {
    (void)state;
    /* an é, € or emoji cut by the end of a read is left for the next one */
    check_sanitize("ab\xc3", 3, "ab", 2);
    check_sanitize("ab\xe2\x82", 4, "ab", 2);
    check_sanitize("\xf0\x9f\x98", 3, "", 0);
}

static void test_read_range(void **state) {
    (void)state;
    char dir[] = "/tmp/tony-test-logtext-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = tony_path_join(dir, "stdout");
    tony_buf b = {0};
    long long size = -1;
    tony_error err;
    /* not there yet: empty, no error */
    assert_int_equal(tony_read_range(path, 0, 10, &b, &size, &err), 0);
    assert_int_equal(size, 0);
    assert_int_equal(b.len, 0);
    assert_int_equal(tony_write_file(path, "0123456789", 10, 0644, &err), 0);
    assert_int_equal(tony_read_range(path, 3, 4, &b, &size, &err), 0);
    assert_int_equal(size, 10);
    assert_string_equal(b.data, "3456");
    b.len = 0;
    /* the cap and the end of the file both stop a read */
    assert_int_equal(tony_read_range(path, 8, 100, &b, &size, &err), 0);
    assert_string_equal(b.data, "89");
    b.len = 0;
    assert_int_equal(tony_read_range(path, 10, 100, &b, &size, &err), 0);
    assert_int_equal(b.len, 0);
    assert_int_equal(tony_read_range(path, 50, 100, &b, &size, &err), 0);
    assert_int_equal(b.len, 0);
    /* a directory is an error that names the path */
    assert_int_not_equal(tony_read_range(dir, 0, 10, &b, &size, &err), 0);
    assert_non_null(strstr(err.msg, dir));
    tony_buf_free(&b);
    unlink(path);
    rmdir(dir);
    free(path);
}

static void test_hash64(void **state) {
    (void)state;
    assert_true(tony_hash64("", 0) == 0xcbf29ce484222325ULL); /* FNV-1a's offset basis */
    assert_true(tony_hash64("a", 1) == 0xaf63dc4c8601ec8cULL); /* published FNV-1a 64 value */
    assert_true(tony_hash64("{\"state\":\"RUNNING\"}", 19) != tony_hash64("{\"state\":\"FINISHED\"}", 20));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8_valid_passes_through),
        cmocka_unit_test(test_utf8_invalid_becomes_replacement),
        cmocka_unit_test(test_utf8_cut_sequence_waits),
        cmocka_unit_test(test_read_range),
        cmocka_unit_test(test_hash64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
