/* The history cache's logic (client/histcache): remote paths to cache
 * paths, which names may enter the cache, and sync: first copy, nothing
 * fetched when nothing changed, a changed file fetched again, a job moved
 * from intermediate/ to finished/, a location that disappeared, a failed
 * download. The remote here is a local directory read through the same
 * interface (tony_client_remote_fs, backend/client.h) that the YARN
 * backend fills with WebHDFS (a stand-in: HDFS itself is exercised by
 * tests/e2e/test_yarn_history.py on the test cluster); as in
 * HDFS, replacing a file bumps its directory's mtime, done here by hand. */
#include <fcntl.h>
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/histcache.h"
#include "common/fs.h"
#include "common/strv.h"

typedef struct fake {
    int fetches;
    const char *fail_on; /* a name whose fetch fails */
} fake;

static int f_list(void *ctx, const char *dir, tony_client_remote_entry **out, size_t *n, bool *missing, tony_error *err) {
    (void)ctx;
    *out = tony_xcalloc(64, sizeof **out);
    *n = 0;
    DIR *d = opendir(dir);
    *missing = !d;
    if (!d) return 0;
    struct dirent *de;
    while ((de = readdir(d)) && *n < 64) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char *p = tony_path_join(dir, de->d_name);
        struct stat st;
        if (stat(p, &st) == 0) {
            tony_client_remote_entry *e = &(*out)[(*n)++];
            e->name = tony_strdup(de->d_name);
            e->length = st.st_size;
            e->mtime_ms = (long long)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
            e->is_dir = S_ISDIR(st.st_mode);
        }
        free(p);
    }
    closedir(d);
    (void)err;
    return 0;
}

static int f_fetch(void *ctx, const char *path, const char *local, tony_error *err) {
    fake *f = ctx;
    f->fetches++;
    if (f->fail_on && strstr(path, f->fail_on)) return tony_err(err, "cannot download %s: DataNode gone", path);
    return tony_copy_file(path, local, err);
}

static char *base;

static char *at(const char *rel) { return tony_path_join(base, rel); }

static void put(const char *rel, const char *text, long long mtime_s) {
    char *p = at(rel), *dir = tony_strdup(p);
    *strrchr(dir, '/') = '\0';
    tony_error err;
    assert_int_equal(tony_mkdir_p(dir, 0755, &err), 0);
    assert_int_equal(tony_write_file(p, text, strlen(text), 0644, &err), 0);
    struct timespec t[2] = {{mtime_s, 0}, {mtime_s, 0}};
    assert_int_equal(utimensat(AT_FDCWD, p, t, 0), 0);
    /* as HDFS: the directory changed when a file in it was (re)created */
    assert_int_equal(utimensat(AT_FDCWD, dir, t, 0), 0);
    free(dir);
    free(p);
}

static char *read_text(const char *rel) {
    char *p = at(rel), *data = NULL;
    size_t n;
    tony_error err;
    int rc = tony_read_file(p, &data, &n, &err);
    free(p);
    return rc ? NULL : data;
}

static const char *JOB1 = "application_1_0001-1000-2000-u-SUCCEEDED.jhist";
static const char *JOB2 = "application_1_0002-3000-u.jhist.inprogress";

static void sync_ok(fake *f, tony_hist_sync_stats *st) {
    tony_client_remote_fs r = {.ctx = f, .list = f_list, .fetch = f_fetch};
    char *rl = at("remote"), *ri = at("remote/intermediate"), *rf = at("remote/finished");
    char *cl = at("cache"), *ci = at("cache/intermediate"), *cf = at("cache/finished");
    tony_jhist_dirs rd = {rl, ri, rf}, cd = {cl, ci, cf};
    tony_error err = {{0}};
    if (tony_hist_cache_sync(&r, &rd, &cd, st, &err)) fail_msg("%s", err.msg);
    free(rl), free(ri), free(rf), free(cl), free(ci), free(cf);
}

static void test_paths(void **state) {
    (void)state;
    char *p = tony_hist_cache_path("/home/u/.tony/history-cache", "nn.example.com:8020", "/tony/history/finished");
    assert_string_equal(p, "/home/u/.tony/history-cache/nn.example.com:8020/tony/history/finished");
    free(p);
    /* an authority cannot leave the cache root */
    p = tony_hist_cache_path("/c", "../evil/x", "/h");
    assert_string_equal(p, "/c/_._evil_x/h");
    free(p);
    p = tony_hist_cache_path("/c", "", "/h");
    assert_string_equal(p, "/c/default/h");
    free(p);
    assert_true(tony_hist_cache_name_ok(JOB1));
    assert_true(tony_hist_cache_name_ok("tony-final.xml"));
    assert_false(tony_hist_cache_name_ok(""));
    assert_false(tony_hist_cache_name_ok("."));
    assert_false(tony_hist_cache_name_ok(".."));
    assert_false(tony_hist_cache_name_ok(".hidden"));
    assert_false(tony_hist_cache_name_ok("a/b"));
}

static void test_sync(void **state) {
    (void)state;
    char tmpl[] = "/tmp/tony-test-histcache-XXXXXX";
    base = mkdtemp(tmpl);
    assert_non_null(base);
    char *job1 = tony_sprintf("remote/finished/2026/01/02/application_1_0001/%s", JOB1);
    char *job2 = tony_sprintf("remote/intermediate/application_1_0002/%s", JOB2);
    put(job1, "avro-1", 1700000000);
    put("remote/finished/2026/01/02/application_1_0001/tony-final.xml", "<configuration/>", 1700000001);
    put(job2, "avro-2", 1700000002);
    put("remote/intermediate/application_1_0002/events.jsonl", "{}\n", 1700000003);
    put("remote/finished/README.txt", "not history", 1700000004);     /* not a job's: skipped */
    put("remote/intermediate/.staging/x", "hidden", 1700000005);      /* hidden: skipped */

    fake f = {0};
    tony_hist_sync_stats st;
    sync_ok(&f, &st);
    assert_true(st.found);
    assert_int_equal(st.downloaded, 4);
    char *c1 = tony_sprintf("cache/finished/2026/01/02/application_1_0001/%s", JOB1);
    char *text = read_text(c1);
    assert_string_equal(text, "avro-1");
    free(text);
    char *p = at(c1);
    struct stat s;
    assert_int_equal(stat(p, &s), 0);
    assert_int_equal(s.st_mtim.tv_sec, 1700000000); /* the remote's mtime, kept */
    free(p);
    p = at("cache/finished/README.txt");
    assert_false(tony_file_exists(p));
    free(p);
    p = at("cache/intermediate/.staging");
    assert_false(tony_file_exists(p));
    free(p);
    int first_listed = st.listed;

    /* Nothing changed: nothing fetched, and job dirs are not listed again. */
    sync_ok(&f, &st);
    assert_int_equal(st.downloaded, 0);
    assert_int_equal(st.removed, 0);
    assert_int_equal(f.fetches, 4);
    assert_true(st.listed < first_listed);

    /* A running job's file replaced: fetched again, alone. */
    put("remote/intermediate/application_1_0002/events.jsonl", "{}\n{}\n", 1700000010);
    sync_ok(&f, &st);
    assert_int_equal(st.downloaded, 1);
    text = read_text("cache/intermediate/application_1_0002/events.jsonl");
    assert_string_equal(text, "{}\n{}\n");
    free(text);

    /* The job finishes: moved on the remote, moved in the cache. */
    char *from = at("remote/intermediate/application_1_0002");
    char *to = at("remote/finished/2026/01/02/application_1_0002");
    assert_int_equal(rename(from, to), 0);
    free(from);
    free(to);
    sync_ok(&f, &st);
    assert_int_equal(st.removed, 1);
    p = at("cache/intermediate/application_1_0002");
    assert_false(tony_file_exists(p));
    free(p);
    text = read_text("cache/finished/2026/01/02/application_1_0002/events.jsonl");
    assert_string_equal(text, "{}\n{}\n");
    free(text);

    /* A failed download: an error, the cache keeps the old copy. */
    put(job1, "avro-1 rewritten", 1700000020);
    f.fail_on = "application_1_0001-";
    tony_client_remote_fs r = {.ctx = &f, .list = f_list, .fetch = f_fetch};
    char *rl = at("remote"), *ri = at("remote/intermediate"), *rf = at("remote/finished");
    char *cl = at("cache"), *ci = at("cache/intermediate"), *cf = at("cache/finished");
    tony_jhist_dirs rd = {rl, ri, rf}, cd = {cl, ci, cf};
    tony_error err = {{0}};
    assert_int_equal(tony_hist_cache_sync(&r, &rd, &cd, &st, &err), -1);
    assert_non_null(strstr(err.msg, "DataNode gone"));
    text = read_text(c1);
    assert_string_equal(text, "avro-1");
    free(text);
    f.fail_on = NULL;
    sync_ok(&f, &st);
    text = read_text(c1);
    assert_string_equal(text, "avro-1 rewritten");
    free(text);

    /* The location is gone: nothing found, the cache copy dropped. */
    char *remote = at("remote");
    assert_int_equal(tony_rm_rf(remote, &err), 0);
    free(remote);
    sync_ok(&f, &st);
    assert_false(st.found);
    p = at("cache/finished");
    assert_false(tony_file_exists(p));
    free(p);

    free(rl), free(ri), free(rf), free(cl), free(ci), free(cf);
    free(c1);
    free(job1);
    free(job2);
    tony_rm_rf(base, &err);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_sync),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
