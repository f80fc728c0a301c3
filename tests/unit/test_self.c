/* Unit tests of common/self: a plain build finds itself as its own command,
 * names its build by version and program hash, and packing it without the
 * launcher built beside it is an error that says what to build. (A packed
 * tree running through its launcher is tested end to end:
 * tests/e2e/test_selfcontained.py.) */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fs.h"
#include "common/self.h"

static void test_plain_build_is_its_own_command(void **state) {
    (void)state;
    tony_self s;
    tony_error err;
    assert_int_equal(tony_self_find(&s, &err), 0);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    assert_null(s.root);
    assert_string_equal(s.program, exe);
    assert_string_equal(s.command, exe);
    tony_self_free(&s);
}

static void test_build_id_is_version_and_hash(void **state) {
    (void)state;
    tony_self s;
    tony_error err;
    assert_int_equal(tony_self_find(&s, &err), 0);
    char *id = NULL, *again = NULL;
    assert_int_equal(tony_self_build_id(&s, &id, &err), 0);
    assert_int_equal(tony_self_build_id(&s, &again, &err), 0);
    assert_string_equal(id, again);
    size_t v = strlen(TONY_VERSION);
    assert_memory_equal(id, TONY_VERSION "-", v + 1);
    assert_int_equal(strlen(id + v + 1), 16);
    assert_int_equal(strspn(id + v + 1, "0123456789abcdef"), 16);
    free(id);
    free(again);
    free(s.program);
    s.program = strdup("/nonexistent/tony");
    assert_int_equal(tony_self_build_id(&s, &id, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/tony"));
    tony_self_free(&s);
}

static void test_pack_without_launcher_says_what_to_build(void **state) {
    (void)state;
    tony_self s;
    tony_error err;
    assert_int_equal(tony_self_find(&s, &err), 0);
    /* the unit tests live in build/tests/, where no tony-launcher is built */
    char out[] = "/tmp/tony-test-self-XXXXXX";
    assert_non_null(mkdtemp(out));
    char *archive = tony_path_join(out, "t.tar.gz");
    assert_int_equal(tony_self_pack(&s, archive, "", &err), -1);
    assert_non_null(strstr(err.msg, "tony-launcher"));
    assert_non_null(strstr(err.msg, "make"));
    assert_false(tony_file_exists(archive));
    free(archive);
    tony_rm_rf(out, NULL);
    tony_self_free(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_build_is_its_own_command),
        cmocka_unit_test(test_build_id_is_version_and_hash),
        cmocka_unit_test(test_pack_without_launcher_says_what_to_build),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
