/* Unit test of the CA bundle choice (common/http.c): libcurl's built-in path
 * when it exists here, else the first readable of the other distributions'
 * paths, else none (libcurl's own, failing with its own words). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fs.h"
#include "common/http.h"

static void test_pick_ca_file(void **state) {
    (void)state;
    char dir[] = "/tmp/tony-test-ca-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *present = tony_path_join(dir, "bundle.pem"), *other = tony_path_join(dir, "other.pem");
    char *missing = tony_path_join(dir, "missing.pem");
    tony_error err;
    assert_int_equal(tony_write_file(present, "x", 1, 0644, &err), 0);
    assert_int_equal(tony_write_file(other, "x", 1, 0644, &err), 0);
    const char *candidates[] = {missing, present, other, NULL};
    assert_null(tony_http_pick_ca_file(present, candidates)); /* the built-in one exists: keep it */
    assert_null(tony_http_pick_ca_file(NULL, candidates));    /* libcurl names none: keep its way */
    assert_string_equal(tony_http_pick_ca_file(missing, candidates), present);
    const char *none[] = {missing, NULL};
    assert_null(tony_http_pick_ca_file(missing, none));
    tony_rm_rf(dir, NULL);
    free(present);
    free(other);
    free(missing);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_pick_ca_file)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
