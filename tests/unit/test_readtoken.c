/* Unit test of the job's read token (common/readtoken.c): the derivation
 * the clients' Python twin (tests/e2e/conftest.py) and every client rely on,
 * the comparison, and the query a redirect passes on without the token. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/readtoken.h"

static void test_derivation(void **state) {
    (void)state;
    const char *secret = "0123456789abcdef0123456789abcdef0123456789abcdef";
    char *t = tony_read_token(secret);
    /* hex(HMAC-SHA256(secret, "tony read token v1")), by Python's hmac */
    assert_string_equal(t, "c2977587f9087fd6884b2d4f9da80941f5bf6dc246ee610580f6759194c7c062");
    assert_null(strstr(t, secret));
    char *other = tony_read_token("another secret");
    assert_string_not_equal(t, other);
    free(other);
    free(t);
}

static void test_equal(void **state) {
    (void)state;
    const char *tok = "abcd";
    assert_true(tony_read_token_equal(tok, "abcd", 4));
    assert_false(tony_read_token_equal(tok, "abc", 3));
    assert_false(tony_read_token_equal(tok, "abcde", 5));
    assert_false(tony_read_token_equal(tok, "abce", 4));
    assert_false(tony_read_token_equal(tok, "", 0));
    assert_false(tony_read_token_equal(tok, NULL, 0));
    assert_false(tony_read_token_equal(NULL, "abcd", 4));
}

static void test_query_without_token(void **state) {
    (void)state;
    const char *cases[][2] = {
        {NULL, ""},
        {"token=x", ""},
        {"a=1&token=x&b=2", "a=1&b=2"},
        {"a=x%20y", "a=x%20y"},
        {"token=x&token=y", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *q = tony_read_query_without_token(cases[i][0]);
        assert_string_equal(q, cases[i][1]);
        free(q);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_derivation),
        cmocka_unit_test(test_equal),
        cmocka_unit_test(test_query_without_token),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
