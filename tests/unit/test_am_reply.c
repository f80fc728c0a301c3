/* Unit tests of the coordinator's answers (am/reply.c): an error message
 * that quotes what a client sent is answered whatever its bytes (a Host
 * header of invalid UTF-8 once made json_pack fail and the reply strlen a
 * NULL: an unauthenticated request took the coordinator down; found by
 * tests/fuzz/fuzz_api.c), and a body that could not be built is answered
 * with a 500 rather than a crash. The requests have no connection behind
 * them, as in the fuzzer: evhttp frees one when it is answered, so one
 * left unanswered would be a leak the ASan build reports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <event2/http.h>

#include "am/reply.h"

static void test_error_quoting_invalid_utf8(void **state) {
    (void)state;
    struct evhttp_request *req = evhttp_request_new(NULL, NULL);
    am_reply_error(req, 421, "this coordinator answers requests for 127.0.0.1, not for Host '\xce' (cut) or '\xff\xfe'");
}

static void test_json_without_body(void **state) {
    (void)state;
    struct evhttp_request *req = evhttp_request_new(NULL, NULL);
    am_reply_json(req, 200, NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_quoting_invalid_utf8),
        cmocka_unit_test(test_json_without_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
