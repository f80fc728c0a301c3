/* The coordinator's event log (ring, since/next paging, JSON-lines file) and
 * TonY's .jhist files: names both ways, the finished tree's layout, and a
 * file written with every event type read back through avro-c. (The e2e
 * test reads the coordinator's real file with an independent reader,
 * fastavro.) */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "am/events.h"
#include "common/fs.h"
#include "common/jhist.h"
#include "sample_jhist.h"

static void test_events_ring_and_paging(void **state) {
    (void)state;
    am_events *e = am_events_new(4);
    json_t *j = am_events_since_json(e, 0, 100);
    assert_int_equal(json_array_size(json_object_get(j, "events")), 0);
    assert_int_equal(json_integer_value(json_object_get(j, "next")), 0);
    json_decref(j);
    for (int i = 1; i <= 10; i++)
        am_events_add(e, 1000 + i, i == 10 ? "APPLICATION_FINISHED" : "TASK_FINISHED", i == 10 ? NULL : "worker:1",
                      0, "event %d", i);
    j = am_events_since_json(e, 0, 100); /* only the newest 4 are kept */
    json_t *evs = json_object_get(j, "events");
    assert_int_equal(json_array_size(evs), 4);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(evs, 0), "seq")), 7);
    assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 0), "text")), "event 7");
    assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 0), "task")), "worker:1");
    assert_true(json_is_null(json_object_get(json_array_get(evs, 3), "task")));
    assert_int_equal(json_integer_value(json_object_get(json_array_get(evs, 3), "t_ms")), 1010);
    assert_int_equal(json_integer_value(json_object_get(j, "next")), 10);
    json_decref(j);
    /* extra fields ride along, without overriding the event's own */
    am_events_add_data(e, 2000, "TASK_REGISTERED", "ps:0", 1, json_pack("{s:s,s:i,s:s}", "host", "h1", "port", 80, "type", "X"),
                       "ps:0 registered");
    j = am_events_since_json(e, 10, 100);
    json_t *reg = json_array_get(json_object_get(j, "events"), 0);
    assert_string_equal(json_string_value(json_object_get(reg, "host")), "h1");
    assert_int_equal(json_integer_value(json_object_get(reg, "port")), 80);
    assert_string_equal(json_string_value(json_object_get(reg, "type")), "TASK_REGISTERED");
    assert_int_equal(json_integer_value(json_object_get(j, "next")), 11);
    json_decref(j);
    j = am_events_since_json(e, 8, 1); /* paging: one at a time */
    assert_int_equal(json_array_size(json_object_get(j, "events")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "next")), 9);
    json_decref(j);
    j = am_events_since_json(e, 11, 100);
    assert_int_equal(json_array_size(json_object_get(j, "events")), 0);
    assert_int_equal(json_integer_value(json_object_get(j, "next")), 11);
    json_decref(j);
    j = am_events_since_json(e, 500, 100); /* from a coordinator before a restart */
    assert_int_equal(json_integer_value(json_object_get(j, "next")), 11);
    json_decref(j);
    am_events_free(e);
}

static void test_events_log_file(void **state) {
    (void)state;
    char dir[] = "/tmp/tony-ev-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = tony_path_join(dir, "events.jsonl");
    am_events *e = am_events_new(2);
    tony_error err;
    assert_int_equal(am_events_open_log(e, path, &err), 0);
    for (int i = 0; i < 5; i++) am_events_add(e, i, "KILL", NULL, 1, "n=%d", i);
    /* flushed as they happen: readable before the log is closed */
    char *text;
    size_t len;
    assert_int_equal(tony_read_file(path, &text, &len, &err), 0);
    int lines = 0;
    for (char *p = text; *p; p++) lines += *p == '\n';
    assert_int_equal(lines, 5);
    json_t *last = json_loads(strrchr(text, '{'), 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(last, "seq")), 5);
    assert_string_equal(json_string_value(json_object_get(last, "text")), "n=4");
    json_decref(last);
    free(text);
    am_events_free(e);
    e = am_events_new(2);
    assert_int_equal(am_events_open_log(e, "/nonexistent/dir/events.jsonl", &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/dir/events.jsonl"));
    am_events_free(e);
    tony_rm_rf(dir, NULL);
    free(path);
}

static void test_jhist_names(void **state) {
    (void)state;
    char *a = tony_jhist_inprogress_name("application_1_0001", 1700000000123, "alice");
    assert_string_equal(a, "application_1_0001-1700000000123-alice.jhist.inprogress");
    char *b = tony_jhist_final_name("application_1_0001", 1700000000123, 1700000099999, "bob-smith", "SUCCEEDED");
    assert_string_equal(b, "application_1_0001-1700000000123-1700000099999-bob-smith-SUCCEEDED.jhist");
    tony_jhist_meta m;
    assert_true(tony_jhist_parse_name(a, &m));
    assert_true(m.in_progress);
    assert_string_equal(m.app_id, "application_1_0001");
    assert_string_equal(m.user, "alice");
    assert_string_equal(m.status, "RUNNING");
    assert_int_equal(m.start_ms, 1700000000123);
    assert_true(tony_jhist_parse_name(b, &m));
    assert_false(m.in_progress);
    assert_string_equal(m.user, "bob-smith");
    assert_string_equal(m.status, "SUCCEEDED");
    assert_int_equal(m.end_ms, 1700000099999);
    const char *bad[] = {"tony-final.xml", "x.jhist", "app-notanumber-u.jhist.inprogress", "app-1-2-FAILED.jhist",
                         "app-1-2-u-.jhist", "app-1.jhist.inprogress", "events.jsonl"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) assert_false(tony_jhist_parse_name(bad[i], &m));
    free(a);
    free(b);
    char *f = tony_jhist_finished_dir("/h/finished", 1700000000123, "application_1_0001"); /* 2023-11-14 22:13 UTC */
    assert_string_equal(f, "/h/finished/2023/11/14/application_1_0001");
    free(f);
    tony_jhist_dirs d;
    tony_jhist_dirs_resolve("/path/to/tony-history", "/path/to/tony-history/intermediate", NULL, "/root/.tony", &d);
    assert_string_equal(d.location, "/root/.tony/history");
    assert_string_equal(d.intermediate, "/root/.tony/history/intermediate");
    assert_string_equal(d.finished, "/root/.tony/history/finished");
    tony_jhist_dirs_free(&d);
    tony_jhist_dirs_resolve("/data/h", NULL, "/elsewhere/done", "/root/.tony", &d);
    assert_string_equal(d.intermediate, "/data/h/intermediate");
    assert_string_equal(d.finished, "/elsewhere/done");
    tony_jhist_dirs_free(&d);
}

static void test_jhist_write_and_read(void **state) {
    (void)state;
    char dir[] = "/tmp/tony-jh-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = tony_path_join(dir, "a.jhist");
    tony_error err;
    tony_jhist_writer *w = tony_jhist_writer_new(path, &err);
    assert_non_null(w);
    assert_int_equal(sample_jhist_events(w, &err), 0);
    /* flushed: a reader sees the events while the writer is still open */
    json_t *evs;
    assert_int_equal(tony_jhist_read(path, &evs, &err), 0);
    assert_int_equal(json_array_size(evs), 3);
    json_decref(evs);
    assert_int_equal(tony_jhist_application_finished(w, 4, "application_1_0001", 2, 1, &err), 0);
    tony_jhist_writer_free(w);

    assert_int_equal(tony_jhist_read(path, &evs, &err), 0);
    assert_int_equal(json_array_size(evs), 4);
    const char *types[] = {"APPLICATION_INITED", "TASK_STARTED", "TASK_FINISHED", "APPLICATION_FINISHED"};
    for (int i = 0; i < 4; i++) {
        json_t *ev = json_array_get(evs, (size_t)i);
        assert_string_equal(json_string_value(json_object_get(ev, "type")), types[i]);
        assert_int_equal(json_integer_value(json_object_get(ev, "timestamp")), i + 1);
    }
    json_t *inited = json_object_get(json_array_get(evs, 0), "event");
    assert_int_equal(json_integer_value(json_object_get(inited, "numTasks")), 2);
    assert_true(json_is_null(json_object_get(inited, "containerID")));
    json_t *started = json_object_get(json_array_get(evs, 1), "event");
    assert_string_equal(json_string_value(json_object_get(started, "containerID")), "container_1_0001_01_000002");
    json_t *fin = json_object_get(json_array_get(evs, 2), "event");
    assert_string_equal(json_string_value(json_object_get(fin, "taskType")), "worker");
    assert_int_equal(json_integer_value(json_object_get(fin, "taskIndex")), 1);
    assert_string_equal(json_string_value(json_object_get(fin, "status")), "FAILED");
    assert_string_equal(json_string_value(json_object_get(fin, "containerDiagnostic")), "exit code 3");
    json_t *m0 = json_array_get(json_object_get(fin, "metrics"), 0);
    assert_string_equal(json_string_value(json_object_get(m0, "name")), "MAX_MEMORY_BYTES");
    assert_float_equal(json_real_value(json_object_get(m0, "value")), 1e8, 1e-6);
    json_t *appfin = json_object_get(json_array_get(evs, 3), "event");
    assert_int_equal(json_integer_value(json_object_get(appfin, "failedTasks")), 1);
    assert_int_equal(json_array_size(json_object_get(appfin, "metrics")), 0);
    json_decref(evs);

    /* never overwrites, and bad files are errors that name them */
    assert_null(tony_jhist_writer_new(path, &err));
    assert_non_null(strstr(err.msg, "already exists"));
    char *junk = tony_path_join(dir, "junk.jhist");
    assert_int_equal(tony_write_file(junk, "not avro", 8, 0644, &err), 0);
    assert_int_equal(tony_jhist_read(junk, &evs, &err), -1);
    assert_non_null(strstr(err.msg, "junk.jhist"));
    assert_int_equal(tony_jhist_read("/nonexistent.jhist", &evs, &err), -1);
    free(junk);
    free(path);
    tony_rm_rf(dir, NULL);
}

/* A full disk, played by RLIMIT_FSIZE (writes past it fail with EFBIG, as
 * with ENOSPC): the .jhist keeps every event written before the failure and
 * is readable to its end; the event log keeps whole lines. (The e2e test
 * fills a real tmpfs.) */
static void test_history_files_on_a_full_disk(void **state) {
    (void)state;
    char dir[] = "/tmp/tony-full-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = tony_path_join(dir, "a.jhist"), *log = tony_path_join(dir, "events.jsonl");
    tony_error err;
    tony_jhist_writer *w = tony_jhist_writer_new(path, &err);
    assert_non_null(w);
    am_events *e = am_events_new(4);
    assert_int_equal(am_events_open_log(e, log, &err), 0);
    struct rlimit old, small = {3000, 0};
    getrlimit(RLIMIT_FSIZE, &old);
    small.rlim_max = old.rlim_max;
    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    int written = 0, rc = 0;
    for (int i = 0; i < 200 && rc == 0; i++) {
        rc = tony_jhist_task_started(w, i, "worker", i, "a-rather-long-host-name.example.com", NULL, &err);
        written += rc == 0;
        am_events_add(e, i, "TASK_STARTED", "worker:0", 0, "event %d with some words to fill the file", i);
    }
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "the events before are kept"));
    /* nothing more goes in, even with room again */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    assert_int_equal(tony_jhist_task_started(w, 0, "worker", 0, "h", NULL, &err), -1);
    am_events_add(e, 0, "KILL", NULL, 0, "after");
    tony_jhist_writer_free(w);
    am_events_free(e);
    signal(SIGXFSZ, SIG_DFL);
    assert_true(written > 5);

    json_t *evs;
    assert_int_equal(tony_jhist_read(path, &evs, &err), 0);
    assert_int_equal(json_array_size(evs), (size_t)written);
    json_decref(evs);
    char *text;
    size_t len;
    assert_int_equal(tony_read_file(log, &text, &len, &err), 0);
    assert_true(len > 0 && len <= 3000 && text[len - 1] == '\n');
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *j = json_loads(line, 0, NULL);
        assert_non_null(j);
        json_decref(j);
    }
    assert_null(strstr(text, "after"));
    free(text);
    free(path);
    free(log);
    tony_rm_rf(dir, NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_history_files_on_a_full_disk),
        cmocka_unit_test(test_events_ring_and_paging),
        cmocka_unit_test(test_events_log_file),
        cmocka_unit_test(test_jhist_names),
        cmocka_unit_test(test_jhist_write_and_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
