/* Unit tests of NodeManager log links and of reading a byte range through
 * the NodeManager's log REST: the answers below have the shape a Hadoop
 * 3.4.1 NodeManager gave on the test cluster (header, bytes, footer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/yarn/nmweb.h"
#include "common/strv.h"

#define CID "container_1795273401540_0001_01_000002"

static void test_link(void **state) {
    (void)state;
    char *l = tony_nmweb_log_link("node7.example.com", "8042", CID, "alice");
    assert_string_equal(l, "http://node7.example.com:8042/node/containerlogs/" CID "/alice");
    free(l);
    /* no web UI: the one-JVM NodeManagers say port 0 */
    assert_null(tony_nmweb_log_link("localhost", "0", CID, "alice"));
    assert_null(tony_nmweb_log_link("localhost", NULL, CID, "alice"));
    assert_null(tony_nmweb_log_link("localhost", "", CID, "alice"));
    assert_null(tony_nmweb_log_link("localhost", "70000", CID, "alice"));
    assert_null(tony_nmweb_log_link("localhost", "80a", CID, "alice"));
    /* nothing that would bend the URL */
    assert_null(tony_nmweb_log_link("evil/x", "8042", CID, "alice"));
    assert_null(tony_nmweb_log_link("host", "8042", "c/../x", "alice"));
    assert_null(tony_nmweb_log_link("host", "8042", CID, "a b"));
    assert_null(tony_nmweb_log_link("host", "8042", CID, ""));
    assert_null(tony_nmweb_log_link(NULL, "8042", CID, "alice"));
}

static void test_container_log_link(void **state) {
    (void)state;
    setenv("USER", "bob", 1);
    char *l = tony_nmweb_container_log_link("localhost:39837", CID);
    assert_string_equal(l, "http://localhost:39837/node/containerlogs/" CID "/bob");
    free(l);
    unsetenv("USER"); /* the NodeManager may leave it out: the process's user */
    l = tony_nmweb_container_log_link("localhost:39837", CID);
    assert_non_null(l);
    assert_true(tony_str_starts_with(l, "http://localhost:39837/node/containerlogs/" CID "/"));
    free(l);
    /* a node without a web UI (the one-JVM test cluster's): no link */
    assert_null(tony_nmweb_container_log_link("localhost:0", CID));
    assert_null(tony_nmweb_container_log_link("localhost", CID));
    assert_null(tony_nmweb_container_log_link("", CID));
    assert_null(tony_nmweb_container_log_link(NULL, CID));
}

static void test_parse_link(void **state) {
    (void)state;
    char *base, *cid;
    tony_error err;
    assert_int_equal(tony_nmweb_parse_link("http://n1:8042/node/containerlogs/" CID "/alice", &base, &cid, &err), 0);
    assert_string_equal(base, "http://n1:8042");
    assert_string_equal(cid, CID);
    free(base), free(cid);
    /* the RM's amContainerLogs of a node without web UI */
    assert_int_equal(tony_nmweb_parse_link("http://localhost:0/node/containerlogs/" CID "/root", &base, &cid, &err), -1);
    assert_non_null(strstr(err.msg, "web UI is off"));
    assert_null(base);
    assert_int_equal(tony_nmweb_parse_link("https://n1:8042/x", &base, &cid, &err), -1);
    assert_non_null(strstr(err.msg, "not a NodeManager log link"));
    assert_int_equal(tony_nmweb_parse_link("http://n1/node/containerlogs/" CID "/a", &base, &cid, &err), -1);
    assert_int_equal(tony_nmweb_parse_link("http://n1:8042/node/containerlogs/c?x=1/a", &base, &cid, &err), -1);
    assert_int_equal(tony_nmweb_parse_link(NULL, &base, &cid, &err), -1);
}

static void test_file_url(void **state) {
    (void)state;
    char *u = tony_nmweb_file_url("http://n1:8042", CID, "stdout", -131072);
    assert_string_equal(u, "http://n1:8042/ws/v1/node/containerlogs/" CID "/stdout?size=-131072");
    free(u);
    u = tony_nmweb_file_url("http://n1:8042", CID, "stderr", 0);
    assert_string_equal(u, "http://n1:8042/ws/v1/node/containerlogs/" CID "/stderr");
    free(u);
    assert_int_equal(tony_nmweb_first_size(0, 100), 100);
    assert_int_equal(tony_nmweb_first_size(5, 100), -200);
}

/* An answer as the NodeManager writes it for bytes of a file of file_len. */
static char *answer(const char *bytes, long long file_len, size_t *len) {
    tony_buf b = {0};
    tony_buf_printf(&b,
                    "Container: " CID " on localhost:38259\nLogAggregationType: LOCAL\n"
                    "====================================================================\n"
                    "LogType:stdout\nLogLastModifiedTime:Sat Nov 21 15:03:40 +0000 2026\nLogLength:%lld\n"
                    "LogContents:\n%sEnd of LogType:stdout.\n"
                    "***********************************************************************\n\n",
                    file_len, bytes);
    *len = b.len;
    return b.data;
}

static void test_parse_head_and_tail(void **state) {
    (void)state;
    tony_error err;
    tony_nmweb_log log;
    size_t len, from, n;
    /* head of 10 bytes of a 59-byte file; the bytes may hold header-like lines */
    char *a = answer("LogLength:", 59, &len);
    assert_int_equal(tony_nmweb_parse_log(a, len, 10, &log, &err), 0);
    assert_int_equal(log.file_len, 59);
    assert_int_equal(log.start, 0);
    assert_int_equal(log.len, 10);
    assert_memory_equal(log.data, "LogLength:", 10);
    assert_int_equal(tony_nmweb_slice(&log, 4, 100, &from, &n), 0);
    assert_int_equal(from, 4);
    assert_int_equal(n, 6);
    free(a);
    /* tail of -10: the last 10 bytes of a 59-byte file */
    a = answer("0123456789", 59, &len);
    assert_int_equal(tony_nmweb_parse_log(a, len, -10, &log, &err), 0);
    assert_int_equal(log.start, 49);
    assert_int_equal(tony_nmweb_slice(&log, 52, 4, &from, &n), 0);
    assert_int_equal(from, 3);
    assert_int_equal(n, 4);
    assert_memory_equal(log.data + from, "3456", 4);
    /* the reader's offset lies before what the tail covers: ask again */
    assert_int_equal(tony_nmweb_slice(&log, 40, 4, &from, &n), 1);
    /* at the end: nothing new; past it: an error */
    assert_int_equal(tony_nmweb_slice(&log, 59, 4, &from, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(tony_nmweb_slice(&log, 60, 4, &from, &n), -1);
    free(a);
    /* a tail bigger than the file is the whole file */
    a = answer("abc", 3, &len);
    assert_int_equal(tony_nmweb_parse_log(a, len, -200, &log, &err), 0);
    assert_int_equal(log.start, 0);
    assert_int_equal(log.len, 3);
    free(a);
    /* size 0 in the URL: the whole file */
    a = answer("", 0, &len);
    assert_int_equal(tony_nmweb_parse_log(a, len, 0, &log, &err), 0);
    assert_int_equal(log.len, 0);
    assert_int_equal(tony_nmweb_slice(&log, 0, 4, &from, &n), 0);
    assert_int_equal(n, 0);
    free(a);
}

/* An empty file, as each Hadoop line answers it (bytes from the test
 * cluster's NodeManagers): 3.3 and 3.4 send the header with LogLength:0,
 * 3.2 the footer alone. */
static void test_parse_empty_file_by_version(void **state) {
    (void)state;
    static const char v32[] = "End of LogType:prelaunch.err.\n"
                              "******************************************************************************\n\n";
    static const char v33[] = "Container: " CID " on localhost:41473\nLogAggregationType: LOCAL\n"
                              "====================================================================\n"
                              "LogType:prelaunch.err\nLogLastModifiedTime:Tue Nov 24 01:10:27 +0000 2026\n"
                              "LogLength:0\nLogContents:\nEnd of LogType:prelaunch.err.\n"
                              "******************************************************************************\n\n";
    const char *answers[] = {v32, v33};
    const long long sizes[] = {0, 4096, -8192};
    for (size_t i = 0; i < 2; i++) {
        for (size_t k = 0; k < 3; k++) {
            tony_error err = {{0}};
            tony_nmweb_log log;
            size_t from = 1, n = 1;
            assert_int_equal(tony_nmweb_parse_log(answers[i], strlen(answers[i]), sizes[k], &log, &err), 0);
            assert_int_equal(log.file_len, 0);
            assert_int_equal(log.start, 0);
            assert_int_equal(log.len, 0);
            assert_int_equal(tony_nmweb_slice(&log, 0, 4096, &from, &n), 0);
            assert_int_equal(n, 0);
            assert_int_equal(tony_nmweb_slice(&log, 1, 4096, &from, &n), -1);
        }
    }
    /* only at the very start: a footer further in is no empty file */
    static const char junk[] = "<html>End of LogType:x.\n";
    tony_error err;
    tony_nmweb_log log;
    assert_int_equal(tony_nmweb_parse_log(junk, strlen(junk), 0, &log, &err), -1);
}

static void test_parse_bad_answers(void **state) {
    (void)state;
    tony_error err;
    tony_nmweb_log log;
    const char *notlog = "java.lang.Exception: Cannot find this log on the local disk.";
    assert_int_equal(tony_nmweb_parse_log(notlog, strlen(notlog), 10, &log, &err), -1);
    assert_non_null(strstr(err.msg, "LogLength"));
    size_t len;
    /* says 59 bytes, the head of 10 has only 5 */
    char *a = answer("01234", 59, &len);
    assert_int_equal(tony_nmweb_parse_log(a, len, 10, &log, &err), -1);
    assert_non_null(strstr(err.msg, "malformed"));
    free(a);
    /* cut before the bytes */
    a = answer("0123456789", 59, &len);
    const char *cut = strstr(a, "LogContents:");
    assert_int_equal(tony_nmweb_parse_log(a, (size_t)(cut - a) + 12, 10, &log, &err), -1);
    free(a);
    const char *neg = "LogLength:-5\nLogContents:\n";
    assert_int_equal(tony_nmweb_parse_log(neg, strlen(neg), 10, &log, &err), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_link),
        cmocka_unit_test(test_container_log_link),
        cmocka_unit_test(test_parse_link),
        cmocka_unit_test(test_file_url),
        cmocka_unit_test(test_parse_head_and_tail),
        cmocka_unit_test(test_parse_empty_file_by_version),
        cmocka_unit_test(test_parse_bad_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
