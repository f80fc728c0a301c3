/* Unit tests of the client half's list of backends (backend/client.h): the
 * backend a submit gets when nothing names one (yarn only where
 * HADOOP_CONF_DIR has a yarn-site.xml, saying why either way), the one a
 * job's record belongs to, lookups by name, that every backend fills
 * the ops the client calls without checking, and that history on a
 * cluster's file system opens through YARN's reader whichever backend runs
 * jobs here (reading it is tests/e2e/test_yarn_history.py's), and the
 * tony_client_backend_* wrappers' policy for an op a backend leaves NULL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/client.h"
#include "common/fs.h"
#include "common/strv.h"

static char *tmp_dir(void) {
    char tmpl[] = "/tmp/test_client_backend.XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return tony_strdup(d);
}

static void touch(const char *dir, const char *name) {
    char *p = tony_path_join(dir, name);
    assert_int_equal(tony_write_file(p, "{}", 2, 0600, NULL), 0);
    free(p);
}

static void test_no_hadoop_conf_dir_is_local(void **state) {
    (void)state;
    unsetenv("HADOOP_CONF_DIR");
    char why[512];
    const tony_client_backend_ops *b = tony_client_backend_choose(why, sizeof why);
    assert_string_equal(b->name, "local");
    assert_string_equal(why, "HADOOP_CONF_DIR is not set");
}

static void test_yarn_site_chooses_yarn(void **state) {
    (void)state;
    char *d = tmp_dir();
    setenv("HADOOP_CONF_DIR", d, 1);
    char why[512];
    const tony_client_backend_ops *b = tony_client_backend_choose(why, sizeof why);
    assert_string_equal(b->name, "local");
    assert_non_null(strstr(why, "has no yarn-site.xml"));
    touch(d, "yarn-site.xml");
    b = tony_client_backend_choose(why, sizeof why);
    assert_string_equal(b->name, "yarn");
    assert_non_null(strstr(why, "has a yarn-site.xml"));
    unsetenv("HADOOP_CONF_DIR");
    tony_rm_rf(d, NULL);
    free(d);
}

static void test_job_record_says_whose(void **state) {
    (void)state;
    char *d = tmp_dir();
    assert_string_equal(tony_client_backend_of_job(d)->name, "local");
    touch(d, "yarn.json");
    assert_string_equal(tony_client_backend_of_job(d)->name, "yarn");
    tony_rm_rf(d, NULL);
    free(d);
    d = tmp_dir();
    touch(d, "slurm.json");
    assert_string_equal(tony_client_backend_of_job(d)->name, "slurm");
    tony_rm_rf(d, NULL);
    free(d);
}

static void test_find_by_name(void **state) {
    (void)state;
    assert_string_equal(tony_client_backend_find("yarn")->name, "yarn");
    assert_string_equal(tony_client_backend_find("local")->name, "local");
    assert_null(tony_client_backend_find("Yarn"));
    assert_null(tony_client_backend_find("k8s"));
    assert_string_equal(tony_client_backend_find("slurm")->name, "slurm");
    assert_string_equal(tony_client_backend_names(), "local or slurm or yarn");
    /* a bare history path is on HDFS for YARN's jobs only */
    assert_true(tony_client_backend_find("yarn")->history_on_cluster_fs);
    assert_false(tony_client_backend_find("local")->history_on_cluster_fs);
    assert_false(tony_client_backend_find("slurm")->history_on_cluster_fs); /* the shared tony root */
}

/* What client/ calls on every backend without a NULL check. */
static void test_every_backend_has_the_required_ops(void **state) {
    (void)state;
    const char *names[] = {"local", "yarn", "slurm"};
    for (size_t i = 0; i < 3; i++) {
        const tony_client_backend_ops *b = tony_client_backend_find(names[i]);
        assert_non_null(b);
        assert_non_null(b->configured);
        assert_non_null(b->owns_job);
        assert_non_null(b->submit);
        assert_non_null(b->poll);
        assert_non_null(b->interrupt);
        assert_non_null(b->release);
        assert_non_null(b->state);
        assert_non_null(b->kill);
        assert_non_null(b->logs);
        assert_non_null(b->list_row);
        assert_non_null(b->lost_reason);
    }
}

/* YARN's reader, asked without the network: an hdfs:// location needs
 * HADOOP_CONF_DIR (an error naming the key, nothing left open), a
 * webhdfs:// one is opened as it is. */
static void test_history_fs_opens_through_yarn(void **state) {
    (void)state;
    assert_null(tony_client_backend_find("local")->open_history_fs);
    assert_null(tony_client_backend_find("slurm")->open_history_fs);
    unsetenv("HADOOP_CONF_DIR");
    tony_histloc where = {0};
    tony_error err = {{0}};
    assert_int_equal(tony_histloc_resolve("hdfs:///tony/history", NULL, NULL, "--location", false, "/tmp", &where, &err), 0);
    tony_client_remote_fs fs;
    assert_int_equal(tony_client_history_fs_open(&where, NULL, "--location", &fs, &err), -1);
    assert_non_null(strstr(err.msg, "--location hdfs:///tony/history: reading history on HDFS needs HADOOP_CONF_DIR"));
    assert_null(fs.ctx);
    tony_histloc_free(&where);
    assert_int_equal(tony_histloc_resolve("webhdfs://127.0.0.1:1/h", NULL, NULL, "--location", false, "/tmp", &where, &err), 0);
    assert_int_equal(tony_client_history_fs_open(&where, NULL, "--location", &fs, &err), 0);
    assert_non_null(fs.ctx);
    assert_non_null(fs.connect);
    assert_non_null(fs.list);
    assert_non_null(fs.fetch);
    assert_non_null(fs.server);
    fs.close(fs.ctx);
    tony_histloc_free(&where);
}

/* A backend with none of the optional ops: each wrapper's policy. */
static int fake_wait_calls;
static int fake_wait_started(tony_client_job *j, tony_error *err) {
    (void)j;
    fake_wait_calls++;
    return tony_err(err, "not yet"), TONY_EXIT_UNAVAILABLE;
}

static void test_null_op_policies(void **state) {
    (void)state;
    tony_client_backend_ops bare = {.name = "bare"};
    tony_client_job j = {.ops = &bare, .id = "app_1", .job_dir = "/nonexistent"};
    tony_error err = {{0}};
    char *about = (char *)"stale";
    /* only the submit itself can tell */
    assert_int_equal(tony_client_backend_check_plan(&bare, NULL, NULL, &about, &err), 0);
    assert_null(about);
    /* submit's return already means started */
    assert_int_equal(tony_client_backend_wait_started(&j, &err), TONY_EXIT_OK);
    assert_string_equal(err.msg, "");
    /* nothing to say, to link or to remove */
    tony_client_backend_job_finished(&j, NULL);
    tony_client_backend_cleanup(&bare, "/nonexistent", true);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    tony_client_backend_print_log_links(&bare, out, NULL, "app_1", false);
    fclose(out);
    assert_int_equal(len, 0);
    free(text);
    /* a set op is called */
    bare.wait_started = fake_wait_started;
    assert_int_equal(tony_client_backend_wait_started(&j, &err), TONY_EXIT_UNAVAILABLE);
    assert_int_equal(fake_wait_calls, 1);
    assert_string_equal(err.msg, "not yet");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_hadoop_conf_dir_is_local),
        cmocka_unit_test(test_yarn_site_chooses_yarn),
        cmocka_unit_test(test_job_record_says_whose),
        cmocka_unit_test(test_find_by_name),
        cmocka_unit_test(test_every_backend_has_the_required_ops),
        cmocka_unit_test(test_history_fs_opens_through_yarn),
        cmocka_unit_test(test_null_op_policies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
