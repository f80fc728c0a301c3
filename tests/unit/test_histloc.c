/* Which file system a history location means (common/histloc): bare paths on
 * YARN and elsewhere, hdfs:// with and without an authority, webhdfs://,
 * file:///, TonY's placeholders, derived intermediate/finished dirs, and
 * the values that must be refused with the key named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/histloc.h"
#include "common/strv.h"

static void resolve_ok(const char *loc, const char *inter, const char *fin, bool yarn, tony_histloc *out) {
    tony_error err = {{0}};
    int rc = tony_histloc_resolve(loc, inter, fin, "tony.history.location", yarn, "/home/u/.tony", out, &err);
    if (rc) fail_msg("%s", err.msg);
}

static void test_bare_paths(void **state) {
    (void)state;
    tony_histloc l;
    resolve_ok("/tmp/hist", NULL, NULL, true, &l);
    assert_int_equal(l.fs, TONY_HISTLOC_HDFS);
    assert_string_equal(l.authority, "");
    assert_string_equal(l.dirs.intermediate, "/tmp/hist/intermediate");
    assert_string_equal(l.dirs.finished, "/tmp/hist/finished");
    tony_histloc_free(&l);

    resolve_ok("/tmp/hist/", NULL, NULL, false, &l);
    assert_int_equal(l.fs, TONY_HISTLOC_LOCAL);
    assert_string_equal(l.dirs.location, "/tmp/hist");
    assert_string_equal(l.dirs.finished, "/tmp/hist/finished");
    tony_histloc_free(&l);

    /* locally a relative path stays what it was (relative to the cwd) */
    resolve_ok("hist", NULL, NULL, false, &l);
    assert_int_equal(l.fs, TONY_HISTLOC_LOCAL);
    assert_string_equal(l.dirs.intermediate, "hist/intermediate");
    tony_histloc_free(&l);

    /* TonY's placeholder and unset: <root>/history on this machine */
    resolve_ok("/path/to/tony-history", "/path/to/tony-history/intermediate", NULL, true, &l);
    assert_int_equal(l.fs, TONY_HISTLOC_LOCAL);
    assert_string_equal(l.dirs.location, "/home/u/.tony/history");
    tony_histloc_free(&l);
    assert_false(tony_histloc_configured("/path/to/tony-history"));
    assert_false(tony_histloc_configured(""));
    assert_false(tony_histloc_configured(NULL));
    assert_true(tony_histloc_configured("/h"));
}

static void test_uris(void **state) {
    (void)state;
    tony_histloc l;
    resolve_ok("hdfs://nn.example.com:8020/tony/history", NULL, NULL, false, &l);
    assert_int_equal(l.fs, TONY_HISTLOC_HDFS);
    assert_string_equal(l.authority, "nn.example.com:8020");
    assert_string_equal(l.dirs.location, "/tony/history");
    assert_string_equal(l.dirs.intermediate, "/tony/history/intermediate");
    char *u = tony_histloc_uri(&l, l.dirs.finished);
    assert_string_equal(u, "hdfs://nn.example.com:8020/tony/history/finished");
    free(u);
    tony_histloc_free(&l);

    resolve_ok("hdfs:///tony", NULL, NULL, false, &l);
    assert_int_equal(l.fs, TONY_HISTLOC_HDFS);
    assert_string_equal(l.authority, "");
    assert_string_equal(l.dirs.location, "/tony");
    tony_histloc_free(&l);

    resolve_ok("webhdfs://nn:9870/tony", NULL, NULL, true, &l);
    assert_int_equal(l.fs, TONY_HISTLOC_WEBHDFS);
    assert_string_equal(l.authority, "nn:9870");
    tony_histloc_free(&l);

    /* file:/// keeps today's local (shared disk) meaning, on YARN too */
    resolve_ok("file:///shared/hist", NULL, NULL, true, &l);
    assert_int_equal(l.fs, TONY_HISTLOC_LOCAL);
    assert_string_equal(l.dirs.finished, "/shared/hist/finished");
    u = tony_histloc_uri(&l, l.dirs.finished);
    assert_string_equal(u, "/shared/hist/finished");
    free(u);
    tony_histloc_free(&l);

    /* intermediate/finished given on their own, the location unset */
    resolve_ok(NULL, "hdfs:///i", "/f", true, &l);
    assert_int_equal(l.fs, TONY_HISTLOC_HDFS);
    tony_histloc_free(&l);
}

static void refused(const char *loc, const char *inter, const char *fin, bool yarn, const char *key, const char *words) {
    tony_error err = {{0}};
    tony_histloc l;
    assert_int_equal(tony_histloc_resolve(loc, inter, fin, key, yarn, "/root", &l, &err), -1);
    if (!strstr(err.msg, key) || !strstr(err.msg, words)) fail_msg("for %s: %s", loc ? loc : "(unset)", err.msg);
}

static void test_refused(void **state) {
    (void)state;
    refused("s3a://bucket/h", NULL, NULL, true, "tony.history.location", "not s3a://");
    refused("hdfs://nn", NULL, NULL, true, "tony.history.location", "no directory after the NameNode");
    refused("hdfs://nn/", NULL, NULL, true, "tony.history.location", "no directory after the NameNode");
    refused("webhdfs:///h", NULL, NULL, true, "--location", "web address");
    refused("file://host/h", NULL, NULL, true, "--location", "file:///absolute/path");
    refused("relative/h", NULL, NULL, true, "tony.history.location", "must be absolute");
    refused("/a/../b", NULL, NULL, true, "tony.history.location", "'..'");
    refused("hdfs://nn/h", NULL, "file:///local/finished", true, "tony.history.finished", "one file system");
    refused("hdfs://nn/h", "hdfs://other/i", NULL, true, "tony.history.intermediate", "one file system");
    /* "--flag value", "key=value" */
    refused("s3a://x/y", NULL, NULL, false, "--location", "--location s3a://x/y");
    refused("s3a://x/y", NULL, NULL, false, "tony.history.location", "tony.history.location=s3a://x/y");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bare_paths),
        cmocka_unit_test(test_uris),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
