/* TonY's container mount syntax (conf/dockermount.h): SRC:DST[:ro|rw]
 * lists parsed, read-write by default, written back with the mode YARN asks
 * for; each malformed entry refused naming the key and the entry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf/dockermount.h"

static void test_entries_modes_and_blanks(void **state) {
    (void)state;
    tony_docker_mounts m;
    tony_error err = {0};
    assert_int_equal(tony_docker_mounts_parse(" /data:/data:ro, ,/scratch : /tmp/s ,/a:/b:rw,", &m, &err), 0);
    assert_int_equal(m.len, 3);
    assert_string_equal(m.items[0].src, "/data");
    assert_string_equal(m.items[0].dst, "/data");
    assert_true(m.items[0].readonly);
    assert_string_equal(m.items[1].src, "/scratch");
    assert_string_equal(m.items[1].dst, "/tmp/s");
    assert_false(m.items[1].readonly);
    assert_false(m.items[2].readonly);
    char *s = tony_docker_mounts_format(&m);
    assert_string_equal(s, "/data:/data:ro,/scratch:/tmp/s:rw,/a:/b:rw");
    free(s);
    tony_docker_mounts_free(&m);
}

static void test_nothing_is_no_mounts(void **state) {
    (void)state;
    const char *specs[] = {NULL, "", "  ", ",,"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        tony_docker_mounts m;
        tony_error err = {0};
        assert_int_equal(tony_docker_mounts_parse(specs[i], &m, &err), 0);
        assert_int_equal(m.len, 0);
        assert_null(tony_docker_mounts_format(&m));
        tony_docker_mounts_free(&m);
    }
}

/* Refused, with the key, the entry and this much of the reason. */
static void refused(const char *spec, const char *entry, const char *why) {
    tony_docker_mounts m;
    tony_error err = {0};
    assert_int_equal(tony_docker_mounts_parse(spec, &m, &err), -1);
    assert_int_equal(m.len, 0);
    assert_null(m.items);
    if (!strstr(err.msg, TONY_DOCKER_MOUNT_KEY) || !strstr(err.msg, entry) || !strstr(err.msg, why))
        fail_msg("'%s' gave: %s", spec, err.msg);
}

static void test_bad_entries_are_refused(void **state) {
    (void)state;
    refused("/data", "'/data'", "1 field(s)");
    refused("/ok:/ok,/a:/b:ro:x", "'/a:/b:ro:x'", "4 field(s)");
    refused("data:/data", "'data:/data'", "the source 'data' is not an absolute path");
    refused("/data:data:ro", "'/data:data:ro'", "the destination 'data'");
    refused("/data::ro", "'/data::ro'", "the destination ''");
    refused("/data:/data:rx", "'/data:/data:rx'", "the mode 'rx'");
    refused("/data:/data:", "'/data:/data:'", "the mode ''");
    refused("/da\nta:/data", "/da\nta:/data", "control character");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entries_modes_and_blanks),
        cmocka_unit_test(test_nothing_is_no_mounts),
        cmocka_unit_test(test_bad_entries_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
