/* Unit tests of the coordinator's list of backends (backend/backend.h): every
 * name in the table resolves to its own constructor, an unknown name is an
 * error listing the known ones, and each tony_backend_* wrapper's policy for
 * an op a backend leaves NULL (and that it forwards to one that is set). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "common/fs.h"
#include "common/strv.h"
#include "conf/conf.h"

static const char *const unknown_name = "no backend called";

static void test_table_names_every_backend(void **state) {
    (void)state;
    size_t n = 0;
    const tony_backend_entry *t = tony_backend_table(&n);
    assert_int_equal(n, 3);
    const char *want[] = {"local", "yarn", "slurm"};
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(t[i].name, want[i]);
        assert_non_null(t[i].create);
    }
}

/* Each name reaches its constructor: local starts here; yarn and slurm, out
 * of their cluster, fail with their own reason, never the table's. */
static void test_every_name_resolves(void **state) {
    (void)state;
    char dir[] = "/tmp/test_backend_table.XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct event_base *base = event_base_new();
    tony_reaper *reaper = tony_reaper_new(base);
    tony_conf *conf = tony_conf_new();
    tony_conf_load_defaults(conf);
    tony_conf_set(conf, "tony.local.vcores", "2", "test");
    tony_conf_set(conf, "tony.local.memory", "2g", "test");
    tony_conf_set(conf, "tony.local.gpus", "0", "test");
    tony_backend_opts o = {.base = base, .reaper = reaper, .job_dir = dir, .conf = conf};
    size_t n = 0;
    const tony_backend_entry *t = tony_backend_table(&n);
    for (size_t i = 0; i < n; i++) {
        tony_error err = {{0}};
        tony_backend *b = tony_backend_new(t[i].name, &o, &err);
        assert_null(strstr(err.msg, unknown_name));
        if (strcmp(t[i].name, "local") == 0) {
            assert_non_null(b);
            assert_string_equal(tony_backend_name(b), "local");
            assert_true(tony_backend_shares_job_dir(b));
            assert_int_equal(tony_backend_active(b), 0);
        } else {
            assert_null(b);
            assert_true(err.msg[0] != '\0');
        }
        if (b) {
            tony_backend_shutdown(b);
            tony_backend_free(b);
        }
    }
    tony_conf_free(conf);
    tony_reaper_free(reaper);
    event_base_free(base);
    tony_rm_rf(dir, NULL);
}

static void test_unknown_name_lists_the_names(void **state) {
    (void)state;
    tony_error err = {{0}};
    tony_backend_opts o = {0};
    assert_null(tony_backend_new("k8s", &o, &err));
    assert_string_equal(err.msg, "no backend called 'k8s' (there are: local, yarn, slurm)");
    assert_null(tony_backend_new("Local", &o, &err));
    assert_non_null(strstr(err.msg, "'Local'"));
}

/* A backend with only the required ops, counting what reaches it. */
typedef struct fake {
    tony_backend base;
    int calls;
} fake;

static int fake_check_plan(tony_backend *b, const tony_plan *plan, tony_error *err) {
    (void)plan, (void)err;
    return ((fake *)b)->calls++, 0;
}
static int fake_launch(tony_backend *b, const tony_launch *l, tony_error *err) {
    (void)l, (void)err;
    return ((fake *)b)->calls++, 0;
}
static void fake_stop(tony_backend *b, const char *role, int index, int attempt) {
    (void)role, (void)index, (void)attempt;
    ((fake *)b)->calls++;
}
static int fake_active(const tony_backend *b) { return ((const fake *)b)->calls; }
static void fake_count(tony_backend *b) { ((fake *)b)->calls++; }

static const tony_backend_ops bare_ops = {.name = "bare",
                                          .check_plan = fake_check_plan,
                                          .launch = fake_launch,
                                          .stop = fake_stop,
                                          .active = fake_active,
                                          .shutdown = fake_count,
                                          .free = fake_count};

static void test_null_op_policies(void **state) {
    (void)state;
    fake f = {.base = {.ops = &bare_ops}};
    tony_backend *b = &f.base;
    tony_error err = {{0}};
    /* nothing to tell, no node to avoid, nothing to end */
    tony_backend_finish(b, "SUCCEEDED", "", NULL);
    tony_backend_exclude_node(b, "node1");
    tony_backend_adopt_end(b);
    tony_backend_cancel_log(b, NULL);
    /* one node: this machine */
    assert_int_equal(tony_backend_cluster_nodes(b), 1);
    /* credentials never change */
    tony_buf creds = {0};
    assert_int_equal(tony_backend_newer_credentials(b, 0, &creds), 0);
    assert_int_equal(creds.len, 0);
    /* no coordinator replaced: whatever the caller had is cleared */
    tony_backend_previous prev = {.containers = 7, .submitted_wall_ms = 9};
    tony_backend_previous_of(b, &prev);
    assert_int_equal(prev.containers, 0);
    assert_int_equal(prev.submitted_wall_ms, 0);
    /* the coordinator opens the logs itself */
    assert_false(tony_backend_reads_logs(b));
    assert_int_equal(tony_backend_check_log_url(b, "http://nm:8042/x", &err), -1);
    assert_string_equal(err.msg, "the bare backend reads no log links (its tasks' logs are files here)");
    tony_log_read *read = NULL;
    tony_log_request r = {.url = "http://nm:8042/x", .who = "worker:0", .stream = "stdout"};
    err.msg[0] = '\0';
    assert_int_equal(tony_backend_read_log(b, &r, NULL, NULL, &read, &err), -1);
    assert_non_null(strstr(err.msg, "reads no log links"));
    assert_null(read);
    /* no single-node job, no containers handed back */
    tony_am_place place = {0};
    assert_int_equal(tony_backend_prepare_am_command(b, "", &place, &err), -1);
    assert_string_equal(err.msg,
                        "the bare backend runs no single-node job: set tony.<role>.instances for at least one role");
    assert_int_equal(tony_backend_adopt(b, "worker", 0, 1, "container_1", &err), -1);
    assert_string_equal(err.msg, "this backend hands no container back");
    /* a single-node command runs as it is, and leaves nothing behind */
    char *cmd[] = {"bash", "-c", "true", NULL};
    tony_strv argv = {0};
    assert_int_equal(tony_backend_am_command_argv(b, &place, NULL, cmd, &argv), 0);
    assert_int_equal(argv.len, 0);
    tony_backend_am_command_ended(b, 0);
    /* none of that reached the backend */
    assert_int_equal(f.calls, 0);
    /* the required ops are forwarded */
    assert_string_equal(tony_backend_name(b), "bare");
    assert_false(tony_backend_shares_job_dir(b));
    assert_int_equal(tony_backend_check_plan(b, NULL, &err), 0);
    assert_int_equal(tony_backend_launch(b, NULL, &err), 0);
    tony_backend_stop(b, "worker", 0, 1);
    tony_backend_shutdown(b);
    tony_backend_free(b);
    assert_int_equal(tony_backend_active(b), 5);
}

/* The optional ops set: each wrapper forwards, with its arguments. */
typedef struct full {
    tony_backend base;
    const char *last;
    int value;
} full;

static void full_finish(tony_backend *b, const char *final_status, const char *diagnostics, const char *url) {
    (void)diagnostics, (void)url;
    ((full *)b)->last = final_status;
}
static void full_exclude(tony_backend *b, const char *node) { ((full *)b)->last = node; }
static int full_nodes(const tony_backend *b) {
    (void)b;
    return 12;
}
static long long full_creds(tony_backend *b, long long have, tony_buf *out) {
    (void)b;
    tony_buf_append(out, "tok", 3);
    return have + 1;
}
static void full_previous(const tony_backend *b, tony_backend_previous *out) {
    (void)b;
    out->containers = 3;
}
static int full_adopt(tony_backend *b, const char *role, int index, int attempt, const char *container,
                      tony_error *err) {
    (void)role, (void)index, (void)attempt, (void)err;
    ((full *)b)->last = container;
    return 0;
}
static void full_adopt_end(tony_backend *b) { ((full *)b)->value = 42; }
static int full_check_log_url(const tony_backend *b, const char *link, tony_error *err) {
    (void)b, (void)link;
    return tony_err(err, "checked");
}
static int full_read_log(tony_backend *b, const tony_log_request *r, tony_log_cb cb, void *ctx, tony_log_read **out,
                         tony_error *err) {
    (void)b, (void)r, (void)cb, (void)ctx, (void)err;
    *out = (tony_log_read *)b;
    return 0;
}
static void full_cancel_log(tony_backend *b, tony_log_read *read) {
    if (read == (tony_log_read *)b) ((full *)b)->value = 7;
}
static int full_prepare(tony_backend *b, const char *resources, tony_am_place *out, tony_error *err) {
    (void)b, (void)resources, (void)err;
    out->work_dir = tony_strdup("/w");
    return 0;
}

static const tony_backend_ops full_ops = {.name = "full",
                                          .finish = full_finish,
                                          .exclude_node = full_exclude,
                                          .cluster_nodes = full_nodes,
                                          .task_credentials = full_creds,
                                          .previous = full_previous,
                                          .adopt = full_adopt,
                                          .adopt_end = full_adopt_end,
                                          .check_log_url = full_check_log_url,
                                          .read_log = full_read_log,
                                          .cancel_log = full_cancel_log,
                                          .prepare_am_command = full_prepare};

static void test_set_ops_are_forwarded(void **state) {
    (void)state;
    full f = {.base = {.ops = &full_ops}};
    tony_backend *b = &f.base;
    tony_error err = {{0}};
    tony_backend_finish(b, "FAILED", "", NULL);
    assert_string_equal(f.last, "FAILED");
    tony_backend_exclude_node(b, "node1");
    assert_string_equal(f.last, "node1");
    assert_int_equal(tony_backend_cluster_nodes(b), 12);
    tony_buf creds = {0};
    assert_int_equal(tony_backend_newer_credentials(b, 4, &creds), 5);
    assert_int_equal(creds.len, 3);
    tony_buf_free(&creds);
    tony_backend_previous prev;
    tony_backend_previous_of(b, &prev);
    assert_int_equal(prev.containers, 3);
    assert_int_equal(prev.submitted_wall_ms, 0);
    assert_int_equal(tony_backend_adopt(b, "worker", 0, 1, "container_1", &err), 0);
    assert_string_equal(f.last, "container_1");
    tony_backend_adopt_end(b);
    assert_int_equal(f.value, 42);
    assert_true(tony_backend_reads_logs(b));
    assert_int_equal(tony_backend_check_log_url(b, "x", &err), -1);
    assert_string_equal(err.msg, "checked");
    tony_log_read *read = NULL;
    tony_log_request r = {.url = "x", .who = "worker:0", .stream = "stdout"};
    assert_int_equal(tony_backend_read_log(b, &r, NULL, NULL, &read, &err), 0);
    tony_backend_cancel_log(b, read);
    assert_int_equal(f.value, 7);
    tony_am_place place = {0};
    assert_int_equal(tony_backend_prepare_am_command(b, "", &place, &err), 0);
    assert_string_equal(place.work_dir, "/w");
    tony_am_place_free(&place);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_names_every_backend),
        cmocka_unit_test(test_every_name_resolves),
        cmocka_unit_test(test_unknown_name_lists_the_names),
        cmocka_unit_test(test_null_op_policies),
        cmocka_unit_test(test_set_ops_are_forwarded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
