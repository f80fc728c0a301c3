/* Unit tests of the configuration layer: Hadoop XML loading, TonY's
 * precedence and multi-value append, <final>, tony-final.xml round trips,
 * memory strings, job-type discovery and resource strings. Fixtures live in
 * data/conf/ (tests run with tests/unit as the working directory). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fs.h"
#include "conf/conf.h"
#include "conf/keys.h"
#include "conf/resource.h"

#define assert_contains(haystack, needle)                                                              \
    do {                                                                                               \
        const char *h_ = (haystack), *n_ = (needle);                                                   \
        if (!h_ || !strstr(h_, n_)) fail_msg("expected \"%s\" to contain \"%s\"", h_ ? h_ : "(null)", n_); \
    } while (0)

static char *make_tmpdir(void) {
    char tmpl[] = "/tmp/tony-test-conf-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static void remove_tmpdir(char *d) {
    tony_error err;
    assert_int_equal(tony_rm_rf(d, &err), 0);
    free(d);
}

static void test_defaults(void **state) {
    (void)state;
    tony_conf *c = tony_conf_new();
    tony_conf_load_defaults(c);
    assert_string_equal(tony_conf_get(c, "tony.application.name"), "TensorFlowApplication");
    assert_string_equal(tony_conf_get_source(c, "tony.application.name"), "default");
    assert_string_equal(tony_conf_get(c, "tony.container.allocation.timeout"), "-1");
    assert_string_equal(tony_conf_get(c, "tony.application.stop-on-failure-jobtypes"), "ps");
    assert_string_equal(tony_conf_get(c, "tony.application.untracked.jobtypes"), "ps");
    assert_string_equal(tony_conf_get(c, "tony.application.sidecar.jobtypes"), "tensorboard");
    assert_string_equal(tony_conf_get(c, "tony.task.heartbeat-interval-ms"), "1000");
    assert_string_equal(tony_conf_get(c, "tony.task.max-missed-heartbeats"), "25");
    assert_string_equal(tony_conf_get(c, "tony.task.metrics-interval-ms"), "5000");
    assert_string_equal(tony_conf_get(c, "tony.am.retry-count"), "0");
    assert_string_equal(tony_conf_get(c, "tony.ps.memory"), "2g");
    assert_string_equal(tony_conf_get(c, "tony.worker.memory"), "2g");
    assert_string_equal(tony_conf_get(c, "tony.worker.gpus"), "0");
    assert_string_equal(tony_conf_get(c, "tony.worker.timeout"), "0");
    assert_string_equal(tony_conf_get(c, "tony.application.framework"), "tensorflow");
    assert_string_equal(tony_conf_get(c, "tony.application.distributed-mode"), "GANG");
    assert_string_equal(tony_conf_get(c, "tony.docker.enabled"), "false");
    assert_string_equal(tony_conf_get(c, "tony.application.fail-fast-lockstep"), "auto");
    assert_string_equal(tony_conf_get(c, "tony.task.executor.execution-timeout-ms"), "0");
    assert_string_equal(tony_conf_get(c, "tony.container.registration.timeout"), "-1");
    assert_string_equal(tony_conf_get(c, "tony.history.retention-sec"), "2592000");
    assert_string_equal(tony_conf_get(c, "tony.https.port"), "19886");
    assert_string_equal(tony_conf_get(c, "tony.horovod.mode.test"), "false");
    assert_string_equal(tony_conf_get(c, "tony.application.tags"), "");
    /* Unset on purpose: the reader auto-detects, and job types come only
     * from explicit instances keys. */
    assert_null(tony_conf_get(c, "tony.application.backend"));
    assert_null(tony_conf_get(c, "tony.local.root"));
    assert_null(tony_conf_get(c, "tony.local.vcores"));
    assert_null(tony_conf_get(c, "tony.worker.instances"));
    assert_null(tony_conf_get(c, "tony.ps.instances"));
    tony_strv types = {0};
    tony_conf_job_types(c, &types);
    assert_int_equal(types.len, 0);

    /* Every table entry with a value is loaded, and every entry is described. */
    size_t n;
    const tony_key *d = tony_keys(&n);
    assert_true(n > 60);
    for (size_t i = 0; i < n; i++) {
        if (tony_key_is_pattern(&d[i])) continue;
        if (d[i].value) assert_string_equal(tony_conf_get(c, d[i].name), d[i].value);
        else assert_null(tony_conf_get(c, d[i].name));
    }
    tony_conf_free(c);
}

/* A job the user did not name is named after its framework (submit.c),
 * TonY's own name kept for tensorflow. */
static void test_default_app_name(void **state) {
    (void)state;
    static const char *const cases[][2] = {{"tensorflow", "TensorFlowApplication"},
                                           {"PyTorch", "PyTorchApplication"},
                                           {"xgboost", "XGBoostApplication"},
                                           {"standalone", "StandaloneApplication"},
                                           {"generic", "GenericApplication"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *name = tony_conf_default_app_name(cases[i][0]);
        assert_string_equal(name, cases[i][1]);
        free(name);
    }
}

static void test_load_file(void **state) {
    (void)state;
    tony_conf *c = tony_conf_new();
    tony_error err = {{0}};
    assert_int_equal(tony_conf_load_file(c, "data/conf/basic.xml", &err), 0);
    assert_string_equal(tony_conf_get(c, "tony.worker.instances"), "2");
    assert_string_equal(tony_conf_get_source(c, "tony.worker.instances"), "data/conf/basic.xml");
    assert_string_equal(tony_conf_get(c, "tony.worker.memory"), "4g");
    assert_string_equal(tony_conf_get(c, "tony.containers.command"), "python train.py --flag \"a&b\" <x>");
    assert_string_equal(tony_conf_get(c, "tony.ps.instances"), "1");
    assert_string_equal(tony_conf_get(c, "tony.application.tags"), "");
    assert_null(tony_conf_get(c, "tony.other.namenodes"));
    /* Insertion order is the file's order. */
    assert_string_equal(tony_conf_key_at(c, 0), "tony.worker.instances");
    assert_string_equal(tony_conf_key_at(c, 1), "tony.worker.memory");
    assert_string_equal(tony_conf_value_at(c, 1), "4g");
    assert_null(tony_conf_key_at(c, tony_conf_size(c)));

    long long mb;
    assert_int_equal(tony_conf_get_memory_mb(c, "tony.worker.memory", "2g", &mb, &err), 0);
    assert_int_equal(mb, 4096);
    tony_conf_free(c);
}

static void test_final(void **state) {
    (void)state;
    tony_conf *c = tony_conf_new();
    tony_error err = {{0}};
    assert_int_equal(tony_conf_load_file(c, "data/conf/basic.xml", &err), 0);
    assert_int_equal(tony_conf_load_file(c, "data/conf/override.xml", &err), 0);
    /* A later file cannot override a final key... */
    assert_string_equal(tony_conf_get(c, "tony.application.queue-locked"), "locked");
    assert_string_equal(tony_conf_get_source(c, "tony.application.queue-locked"), "data/conf/basic.xml");
    /* ...but overrides the others, in place. */
    assert_string_equal(tony_conf_get(c, "tony.worker.instances"), "5");
    assert_string_equal(tony_conf_get_source(c, "tony.worker.instances"), "data/conf/override.xml");
    assert_string_equal(tony_conf_key_at(c, 0), "tony.worker.instances");
    /* --conf is an explicit set and wins even over final, as in Hadoop. */
    tony_conf_set_cli(c, "tony.application.queue-locked", "cli");
    assert_string_equal(tony_conf_get(c, "tony.application.queue-locked"), "cli");
    tony_conf_free(c);
}

static void test_precedence(void **state) {
    (void)state;
    char *cwd = getcwd(NULL, 0);
    char *site = tony_path_join(cwd, "data/conf/site");
    setenv("TONY_CONF_DIR", site, 1);
    tony_conf *c = tony_conf_new();
    tony_error err = {{0}};
    assert_int_equal(tony_conf_load_layers(c, "data/conf/layer_file.xml", &err), 0);
    tony_conf_set_cli(c, "test.from.cli", "cli");
    tony_conf_set_cli(c, "tony.execution.envs", "Y=2");

    assert_string_equal(tony_conf_get(c, "tony.application.framework"), "tensorflow");
    assert_string_equal(tony_conf_get_source(c, "tony.application.framework"), "default");
    assert_string_equal(tony_conf_get(c, "tony.application.name"), "FromFile");
    assert_string_equal(tony_conf_get(c, "test.from.file"), "file");
    assert_string_equal(tony_conf_get_source(c, "test.from.file"), "data/conf/layer_file.xml");
    assert_string_equal(tony_conf_get(c, "test.from.site"), "site");
    char *site_file = tony_path_join(site, "tony-site.xml");
    assert_string_equal(tony_conf_get_source(c, "test.from.site"), site_file);
    assert_string_equal(tony_conf_get(c, "test.from.cli"), "cli");
    assert_string_equal(tony_conf_get_source(c, "test.from.cli"), "--conf");
    assert_string_equal(tony_conf_get(c, "tony.execution.envs"), "X=1,Y=2");
    tony_conf_free(c);

    /* A missing --conf_file is an error naming it. */
    c = tony_conf_new();
    assert_int_equal(tony_conf_load_layers(c, "data/conf/no-such-file.xml", &err), -1);
    assert_contains(err.msg, "data/conf/no-such-file.xml");
    tony_conf_free(c);

    /* Without --conf_file, ./tony.xml is read when present, and a missing
     * site directory is fine. */
    char *tmp = make_tmpdir();
    char *tony_xml = tony_path_join(tmp, "tony.xml");
    const char *xml = "<configuration><property><name>tony.worker.instances</name><value>3</value></property>"
                      "</configuration>\n";
    assert_int_equal(tony_write_file(tony_xml, xml, strlen(xml), 0644, &err), 0);
    setenv("TONY_CONF_DIR", tmp, 1);
    assert_int_equal(chdir(tmp), 0);
    c = tony_conf_new();
    int rc = tony_conf_load_layers(c, NULL, &err);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, 0);
    assert_string_equal(tony_conf_get(c, "tony.worker.instances"), "3");
    assert_string_equal(tony_conf_get_source(c, "tony.worker.instances"), "tony.xml");
    assert_string_equal(tony_conf_get(c, "tony.application.name"), "TensorFlowApplication");
    tony_conf_free(c);
    unsetenv("TONY_CONF_DIR");

    free(tony_xml);
    remove_tmpdir(tmp);
    free(site_file);
    free(site);
    free(cwd);
}

static void test_multi_value(void **state) {
    (void)state;
    tony_conf *c = tony_conf_new();
    tony_error err = {{0}};
    assert_int_equal(tony_conf_load_file(c, "data/conf/basic.xml", &err), 0);
    assert_true(tony_conf_is_multi_value("tony.containers.envs"));
    assert_true(tony_conf_is_multi_value("tony.execution.envs"));
    assert_true(tony_conf_is_multi_value("tony.containers.resources"));
    assert_false(tony_conf_is_multi_value("tony.worker.resources"));

    tony_conf_set_cli(c, "tony.containers.envs", "B=2");
    tony_conf_set_cli(c, "tony.containers.envs", "C=3");
    assert_string_equal(tony_conf_get(c, "tony.containers.envs"), "A=1,B=2,C=3");
    tony_conf_set_cli(c, "tony.containers.envs", "");
    assert_string_equal(tony_conf_get(c, "tony.containers.envs"), "A=1,B=2,C=3");
    /* Unset multi-value keys simply take the value. */
    tony_conf_set_cli(c, "tony.containers.resources", "a.zip#archive");
    assert_string_equal(tony_conf_get(c, "tony.containers.resources"), "a.zip#archive");
    /* Other keys are replaced. */
    tony_conf_set_cli(c, "tony.worker.instances", "7");
    assert_string_equal(tony_conf_get(c, "tony.worker.instances"), "7");
    tony_conf_set_cli(c, "tony.worker.resources", "x");
    tony_conf_set_cli(c, "tony.worker.resources", "y");
    assert_string_equal(tony_conf_get(c, "tony.worker.resources"), "y");

    tony_strv list = {0};
    tony_conf_get_list(c, "tony.containers.envs", &list);
    assert_int_equal(list.len, 3);
    assert_string_equal(list.items[2], "C=3");
    tony_strv_free(&list);
    tony_conf_free(c);
}

static void test_write_reload(void **state) {
    (void)state;
    char *tmp = make_tmpdir();
    char *path = tony_path_join(tmp, "tony-final.xml");
    tony_conf *c = tony_conf_new();
    tony_error err = {{0}};
    tony_conf_load_defaults(c);
    assert_int_equal(tony_conf_load_file(c, "data/conf/basic.xml", &err), 0);
    tony_conf_set(c, "test.escapes", "<a href=\"x\">&amp; it's</a>\nline2\ttab", "unit test");
    tony_conf_set_cli(c, "tony.execution.envs", "K=V=W");
    assert_int_equal(tony_conf_write_file(c, path, &err), 0);

    char *text;
    assert_int_equal(tony_read_file(path, &text, NULL, &err), 0);
    assert_contains(text, "<configuration>");
    assert_contains(text, "&lt;a href=&quot;x&quot;&gt;&amp;amp; it&apos;s&lt;/a&gt;");
    assert_contains(text, "<final>true</final>");
    free(text);

    tony_conf *d = tony_conf_new();
    assert_int_equal(tony_conf_load_file(d, path, &err), 0);
    assert_int_equal(tony_conf_size(d), tony_conf_size(c));
    for (size_t i = 0; i < tony_conf_size(c); i++) {
        assert_string_equal(tony_conf_key_at(d, i), tony_conf_key_at(c, i));
        assert_string_equal(tony_conf_value_at(d, i), tony_conf_value_at(c, i));
        const char *key = tony_conf_key_at(c, i);
        assert_string_equal(tony_conf_get_source(d, key), tony_conf_get_source(c, key));
    }
    assert_string_equal(tony_conf_get(d, "test.escapes"), "<a href=\"x\">&amp; it's</a>\nline2\ttab");
    /* final survives the trip: a later file cannot override it. */
    assert_int_equal(tony_conf_load_file(d, "data/conf/override.xml", &err), 0);
    assert_string_equal(tony_conf_get(d, "tony.application.queue-locked"), "locked");

    /* A clone is independent of its original. */
    tony_conf *e = tony_conf_clone(d);
    tony_conf_set(e, "tony.worker.instances", "9", "x");
    assert_string_equal(tony_conf_get(d, "tony.worker.instances"), "5");
    assert_string_equal(tony_conf_get(e, "tony.worker.instances"), "9");
    assert_int_equal(tony_conf_size(e), tony_conf_size(d));

    tony_conf_free(e);
    tony_conf_free(d);
    tony_conf_free(c);
    free(path);
    remove_tmpdir(tmp);
}

static void test_malformed(void **state) {
    (void)state;
    tony_conf *c = tony_conf_new();
    tony_error err = {{0}};
    assert_int_equal(tony_conf_load_file(c, "data/conf/malformed.xml", &err), -1);
    assert_contains(err.msg, "data/conf/malformed.xml:6");
    assert_contains(err.msg, "malformed XML");

    assert_int_equal(tony_conf_load_file(c, "data/conf/noname.xml", &err), -1);
    assert_contains(err.msg, "data/conf/noname.xml:7");
    assert_contains(err.msg, "without a <name>");

    assert_int_equal(tony_conf_load_file(c, "data/conf/badroot.xml", &err), -1);
    assert_contains(err.msg, "data/conf/badroot.xml");
    assert_contains(err.msg, "<configuration>");

    assert_int_equal(tony_conf_load_file(c, "data/conf/missing.xml", &err), -1);
    assert_contains(err.msg, "data/conf/missing.xml");

    char *tmp = make_tmpdir();
    char *empty = tony_path_join(tmp, "empty.xml");
    assert_int_equal(tony_write_file(empty, "", 0, 0644, &err), 0);
    assert_int_equal(tony_conf_load_file(c, empty, &err), -1);
    assert_contains(err.msg, empty);
    free(empty);
    remove_tmpdir(tmp);
    tony_conf_free(c);
}

static void test_memory_strings(void **state) {
    (void)state;
    long long v = -7;
    assert_true(tony_parse_memory_mb("2g", &v));
    assert_int_equal(v, 2048);
    assert_true(tony_parse_memory_mb("2G", &v));
    assert_int_equal(v, 2048);
    assert_true(tony_parse_memory_mb("2M", &v));
    assert_int_equal(v, 2);
    assert_true(tony_parse_memory_mb("512m", &v));
    assert_int_equal(v, 512);
    assert_true(tony_parse_memory_mb("3", &v));
    assert_int_equal(v, 3);
    assert_true(tony_parse_memory_mb(" 0 ", &v));
    assert_int_equal(v, 0);
    const char *bad[] = {"-1g", "-1", "abc", "2k", "2t", "", "g", "2.5g", "2gb", "+2g", "99999999999999999999", NULL};
    for (int i = 0; bad[i]; i++) {
        v = -7;
        if (tony_parse_memory_mb(bad[i], &v)) fail_msg("'%s' should be an invalid memory string", bad[i]);
        assert_int_equal(v, -7);
    }
    assert_false(tony_parse_memory_mb(NULL, &v));

    tony_conf *c = tony_conf_new();
    tony_error err = {{0}};
    assert_int_equal(tony_conf_get_memory_mb(c, "tony.x.memory", "2g", &v, &err), 0);
    assert_int_equal(v, 2048);
    tony_conf_set(c, "tony.x.memory", "2k", "test");
    assert_int_equal(tony_conf_get_memory_mb(c, "tony.x.memory", "2g", &v, &err), -1);
    assert_contains(err.msg, "tony.x.memory");
    assert_contains(err.msg, "'2k'");
    tony_conf_free(c);
}

static void test_typed_getters(void **state) {
    (void)state;
    tony_conf *c = tony_conf_new();
    tony_error err = {{0}};
    long long v;
    bool b;
    assert_int_equal(tony_conf_get_ll(c, "a.num", 42, &v, &err), 0);
    assert_int_equal(v, 42);
    tony_conf_set(c, "a.num", "", "t");
    assert_int_equal(tony_conf_get_ll(c, "a.num", 42, &v, &err), 0);
    assert_int_equal(v, 42);
    tony_conf_set(c, "a.num", " -3 ", "t");
    assert_int_equal(tony_conf_get_ll(c, "a.num", 42, &v, &err), 0);
    assert_int_equal(v, -3);
    tony_conf_set(c, "a.num", "3x", "t");
    assert_int_equal(tony_conf_get_ll(c, "a.num", 42, &v, &err), -1);
    assert_contains(err.msg, "a.num");
    assert_contains(err.msg, "'3x'");

    assert_int_equal(tony_conf_get_bool(c, "a.flag", true, &b, &err), 0);
    assert_true(b);
    tony_conf_set(c, "a.flag", "FALSE", "t");
    assert_int_equal(tony_conf_get_bool(c, "a.flag", true, &b, &err), 0);
    assert_false(b);
    tony_conf_set(c, "a.flag", "yes", "t");
    assert_int_equal(tony_conf_get_bool(c, "a.flag", true, &b, &err), -1);
    assert_contains(err.msg, "a.flag");
    assert_contains(err.msg, "'yes'");

    /* Replacing keeps the position; unset removes. NULL value unsets. */
    tony_conf_set(c, "k1", "1", "t");
    tony_conf_set(c, "k2", "2", "t");
    tony_conf_set(c, "a.num", "5", "t");
    assert_string_equal(tony_conf_key_at(c, 0), "a.num");
    tony_conf_unset(c, "a.flag");
    assert_int_equal(tony_conf_size(c), 3);
    assert_string_equal(tony_conf_key_at(c, 1), "k1");
    tony_conf_set(c, "k1", NULL, "t");
    assert_null(tony_conf_get(c, "k1"));
    assert_null(tony_conf_get_source(c, "k1"));
    tony_conf_unset(c, "never.set");
    assert_int_equal(tony_conf_size(c), 2);
    tony_conf_free(c);
}

static void test_job_types(void **state) {
    (void)state;
    tony_conf *c = tony_conf_new();
    const char *keys[] = {"tony.worker.instances", "tony.ps.instances",     "tony.Worker2.instances",
                          "tony.chief.instances",  "tony.worker.instances", "tony.a_b.instances",
                          "tony.x.y.instances",    "tony..instances",       "tony.evaluator.instances",
                          "tony.worker.instance",  "xtony.db.instances",    "tony.dbloader.instancesx",
                          NULL};
    for (int i = 0; keys[i]; i++) tony_conf_set(c, keys[i], "1", "t");
    tony_conf_set(c, "tony.evaluator.instances", "0", "t"); /* still a job type */
    tony_strv types = {0};
    tony_conf_job_types(c, &types);
    assert_int_equal(types.len, 4);
    assert_string_equal(types.items[0], "chief");
    assert_string_equal(types.items[1], "evaluator");
    assert_string_equal(types.items[2], "ps");
    assert_string_equal(types.items[3], "worker");
    tony_strv_free(&types);
    tony_conf_free(c);
}

static void test_resources(void **state) {
    (void)state;
    tony_resource r;
    tony_error err = {{0}};
    assert_int_equal(tony_resource_parse("hdfs://nn:9000/a/b/model.zip", &r, &err), 0);
    assert_string_equal(r.source, "hdfs://nn:9000/a/b/model.zip");
    assert_string_equal(r.name, "model.zip");
    assert_false(r.archive);
    tony_resource_free(&r);

    assert_int_equal(tony_resource_parse(" data/test2.zip::t2#archive ", &r, &err), 0);
    assert_string_equal(r.source, "data/test2.zip");
    assert_string_equal(r.name, "t2");
    assert_true(r.archive);
    tony_resource_free(&r);

    assert_int_equal(tony_resource_parse("venv.zip#archive", &r, &err), 0);
    assert_string_equal(r.source, "venv.zip");
    assert_string_equal(r.name, "venv.zip");
    assert_true(r.archive);
    tony_resource_free(&r);

    assert_int_equal(tony_resource_parse("some/dir/", &r, &err), 0);
    assert_string_equal(r.name, "dir");
    tony_resource_free(&r);

    assert_int_equal(tony_resource_parse("a::b::c", &r, &err), -1);
    assert_contains(err.msg, "'a::b::c'");
    assert_contains(err.msg, "more than one '::'");
    assert_int_equal(tony_resource_parse("::name", &r, &err), -1);
    assert_contains(err.msg, "empty source");
    assert_int_equal(tony_resource_parse("src::", &r, &err), -1);
    assert_contains(err.msg, "'src::'");
    /* names that would land outside the task's work dir (issue 11 #9) */
    assert_int_equal(tony_resource_parse("a.txt::/etc/cron.d/x", &r, &err), -1);
    assert_contains(err.msg, "'/etc/cron.d/x'");
    assert_contains(err.msg, "relative path");
    assert_int_equal(tony_resource_parse("a.txt::../../x", &r, &err), -1);
    assert_contains(err.msg, "'../../x'");
    assert_int_equal(tony_resource_parse("a.txt::d/../../x#archive", &r, &err), -1);
    assert_int_equal(tony_resource_parse("some/..", &r, &err), -1);
    assert_contains(err.msg, "'..'");
    assert_int_equal(tony_resource_parse("a.txt::conf/..x/a..b", &r, &err), 0);
    assert_string_equal(r.name, "conf/..x/a..b");
    tony_resource_free(&r);

    tony_resource_list l = {0};
    assert_int_equal(tony_resource_parse_list("a.txt,, b.zip::bee#archive ,,", &l, &err), 0);
    assert_int_equal(l.len, 2);
    assert_string_equal(l.items[0].name, "a.txt");
    assert_string_equal(l.items[1].name, "bee");
    assert_true(l.items[1].archive);
    assert_int_equal(tony_resource_parse_list(NULL, &l, &err), 0);
    assert_int_equal(l.len, 2);
    assert_int_equal(tony_resource_parse_list("c.txt,x::y::z", &l, &err), -1);
    assert_contains(err.msg, "'x::y::z'");
    assert_int_equal(l.len, 2); /* as it was */
    tony_resource_list_free(&l);
    assert_int_equal(l.len, 0);

    /* A bad entry after good ones: nothing is added, nothing is left to free
     * (callers give up without freeing; under ASan a leak fails this test). */
    tony_resource_list fresh = {0};
    assert_int_equal(tony_resource_parse_list("a.txt,b.zip::bee#archive,::/abs::x", &fresh, &err), -1);
    assert_int_equal(fresh.len, 0);
    assert_null(fresh.items);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A tony-final.xml of 40000 properties (the portal reads every job's) loads,
 * clones, is looked up key by key and has keys replaced and removed in well
 * under a second: the table is hashed (it took 7 s when every key was
 * looked for by a walk over the others). Every key still reads back, in
 * the file's order, and a file's later duplicate still wins. */
static void test_many_properties(void **state) {
    (void)state;
    enum { N = 40000 };
    char *dir = make_tmpdir();
    char *path = tony_path_join(dir, "big.xml");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "<?xml version=\"1.0\"?>\n<configuration>\n");
    for (int i = 0; i < N; i++)
        fprintf(f, "<property><name>k.%d.x</name><value>v%d</value></property>\n", i, i);
    fprintf(f, "<property><name>k.7.x</name><value>again</value></property>\n</configuration>\n");
    fclose(f);
    double t0 = now_s();
    tony_conf *c = tony_conf_new();
    tony_error err;
    assert_int_equal(tony_conf_load_file(c, path, &err), 0);
    tony_conf *d = tony_conf_clone(c);
    char key[32], want[32];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "k.%d.x", i);
        snprintf(want, sizeof want, "v%d", i);
        assert_string_equal(tony_conf_get(d, key), i == 7 ? "again" : want);
        assert_string_equal(tony_conf_key_at(d, (size_t)i), key);
    }
    for (int i = 0; i < N; i += 2) {
        snprintf(key, sizeof key, "k.%d.x", i);
        tony_conf_set(d, key, "new", "test");
    }
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "k.%d.x", i * 3);
        tony_conf_unset(d, key);
    }
    double took = now_s() - t0;
    assert_int_equal(tony_conf_size(d), N - 100);
    assert_null(tony_conf_get(d, "k.0.x"));
    assert_string_equal(tony_conf_get(d, "k.2.x"), "new");
    assert_string_equal(tony_conf_get(d, "k.1.x"), "v1");
    assert_string_equal(tony_conf_get(d, "k.39999.x"), "v39999");
    assert_string_equal(tony_conf_key_at(d, 0), "k.1.x");
    assert_true(took < 2.0);
    tony_conf_free(c);
    tony_conf_free(d);
    unlink(path);
    free(path);
    remove_tmpdir(dir);
}

/* A configuration file must be a regular file under the cap: anything else
 * is refused at once (a FIFO never waited on), naming the file and, through
 * tony_conf_load_layers, where it came from. */
static void test_file_checks(void **state) {
    (void)state;
    char *dir = make_tmpdir();
    tony_conf *c = tony_conf_new();
    tony_error err;
    char *fifo = tony_path_join(dir, "conf.fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    double t0 = now_s();
    assert_int_equal(tony_conf_load_file(c, fifo, &err), -1);
    assert_true(now_s() - t0 < 1.0);
    assert_contains(err.msg, fifo);
    assert_contains(err.msg, "is a FIFO, not a regular file");
    assert_int_equal(tony_conf_load_file(c, "/dev/zero", &err), -1);
    assert_contains(err.msg, "/dev/zero is a character device");
    assert_int_equal(tony_conf_load_file(c, dir, &err), -1);
    assert_contains(err.msg, "is a directory");
    /* one byte over the cap: refused without being read (sparse, so cheap) */
    char *big = tony_path_join(dir, "big.xml");
    FILE *f = fopen(big, "w");
    assert_non_null(f);
    assert_int_equal(ftruncate(fileno(f), (off_t)TONY_CONF_FILE_MAX + 1), 0);
    fclose(f);
    assert_int_equal(tony_conf_load_file(c, big, &err), -1);
    assert_contains(err.msg, big);
    assert_contains(err.msg, "more than a configuration file may have");
    /* at the cap it is read (and here found malformed: all NULs) */
    assert_int_equal(truncate(big, (off_t)TONY_CONF_FILE_MAX), 0);
    assert_int_equal(tony_conf_load_file(c, big, &err), -1);
    assert_contains(err.msg, "malformed XML");
    /* the layers name the flag */
    assert_int_equal(tony_conf_load_layers(c, fifo, &err), -1);
    assert_contains(err.msg, "--conf_file ");
    assert_contains(err.msg, "is a FIFO");
    /* and the site file, by where it was looked for */
    char *site = tony_path_join(dir, "tony-site.xml");
    assert_int_equal(symlink("/dev/zero", site), 0);
    setenv("TONY_CONF_DIR", dir, 1);
    assert_int_equal(tony_conf_load_layers(c, NULL, &err), -1);
    unsetenv("TONY_CONF_DIR");
    assert_contains(err.msg, "tony-site.xml in $TONY_CONF_DIR");
    assert_contains(err.msg, "character device");
    tony_conf_free(c);
    free(site);
    free(big);
    free(fifo);
    remove_tmpdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),      cmocka_unit_test(test_load_file),    cmocka_unit_test(test_final),
        cmocka_unit_test(test_default_app_name),
        cmocka_unit_test(test_precedence),    cmocka_unit_test(test_multi_value),  cmocka_unit_test(test_write_reload),
        cmocka_unit_test(test_malformed),     cmocka_unit_test(test_memory_strings), cmocka_unit_test(test_typed_getters),
        cmocka_unit_test(test_job_types),     cmocka_unit_test(test_resources),    cmocka_unit_test(test_many_properties),
        cmocka_unit_test(test_file_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
