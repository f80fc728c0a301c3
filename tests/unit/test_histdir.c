/* Reading a history tree back (client/histdir): a whole job (.jhist, event
 * log, metrics.json, tony-final.xml) merged into tasks with exit meanings,
 * series and requests; an AM retry's older file; an in-progress job; a dir
 * with no .jhist; a job whose every file is damaged; ids that try to leave
 * the tree. Everything is built in a temporary dir with the real writers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/histdir.h"
#include "common/fs.h"
#include "common/strv.h"
#include "conf/conf.h"

static char *tree;

static char *mkpath(const char *rel) {
    char *p = tony_path_join(tree, rel);
    tony_error err;
    char *dir = tony_strdup(p);
    *strrchr(dir, '/') = '\0';
    assert_int_equal(tony_mkdir_p(dir, 0755, &err), 0);
    free(dir);
    return p;
}

static void write_text(const char *rel, const char *text) {
    char *p = mkpath(rel);
    tony_error err;
    assert_int_equal(tony_write_file(p, text, strlen(text), 0644, &err), 0);
    free(p);
}

static void write_conf(const char *rel) {
    tony_conf *c = tony_conf_new();
    tony_conf_load_defaults(c);
    tony_conf_set(c, "tony.worker.instances", "2", "--conf");
    tony_conf_set(c, "tony.worker.memory", "2g", "--conf");
    tony_conf_set(c, "tony.application.name", "demo", "--conf");
    tony_conf_set(c, "tony.containers.command", "python train.py", "--executes");
    tony_conf_set(c, "tony.application.framework", "pytorch", "--conf");
    /* its tasks ran seconds: sized all the same (the job's own threshold) */
    tony_conf_set(c, "tony.application.sizing-min-run-ms", "0", "--conf");
    char *p = mkpath(rel);
    tony_error err;
    assert_int_equal(tony_conf_write_file(c, p, &err), 0);
    free(p);
    tony_conf_free(c);
}

#define JOB1 "finished/2024/01/02/application_1_0001/"

static void write_job1(void) {
    char *p = mkpath(JOB1 "application_1_0001-1000-9000-alice-FAILED.jhist");
    tony_error err;
    tony_jhist_writer *w = tony_jhist_writer_new(p, &err);
    assert_non_null(w);
    tony_jhist_metric ms[] = {{"MAX_MEMORY_BYTES", 3e8}, {"AVG_MEMORY_BYTES", 2e8}};
    assert_int_equal(tony_jhist_application_inited(w, 1000, "application_1_0001", 2, "h0", NULL, &err), 0);
    assert_int_equal(tony_jhist_task_started(w, 1100, "worker", 0, "h1", NULL, &err), 0);
    assert_int_equal(tony_jhist_task_started(w, 1100, "worker", 1, "h2", "container_9", &err), 0);
    assert_int_equal(tony_jhist_task_finished(w, 8000, "worker", 0, "SUCCEEDED", ms, 2, "NA", &err), 0);
    assert_int_equal(tony_jhist_task_finished(w, 8500, "worker", 1, "FAILED", ms, 2, "boom", &err), 0);
    assert_int_equal(tony_jhist_application_finished(w, 9000, "application_1_0001", 2, 1, &err), 0);
    tony_jhist_writer_free(w);
    free(p);
    /* an earlier coordinator of the same job: the newer file wins */
    write_text(JOB1 "application_1_0001-500-900-alice-FAILED.jhist", "an older attempt's file");
    write_conf(JOB1 "tony-final.xml");
    write_text(JOB1 "events.jsonl",
               "{\"t_ms\":1000,\"type\":\"APPLICATION_INITED\",\"attempt\":0,\"text\":\"start\"}\n"
               "{\"t_ms\":1050,\"type\":\"TASK_REQUESTED\",\"task\":\"worker:1\",\"attempt\":0,\"text\":\"r\"}\n"
               "{\"t_ms\":1090,\"type\":\"TASK_REGISTERED\",\"task\":\"worker:1\",\"attempt\":0,\"host\":\"h2\",\"port\":77,\"text\":\"g\"}\n"
               "{\"t_ms\":1100,\"type\":\"TASK_STARTED\",\"task\":\"worker:1\",\"attempt\":0,\"text\":\"s\"}\n"
               "not json\n"
               "{\"t_ms\":8500,\"type\":\"TASK_FINISHED\",\"task\":\"worker:1\",\"attempt\":0,\"status\":\"FAILED\","
               "\"exit_status\":3,\"metrics\":{\"AVG_CPU_PERCENT\":50.0},\"text\":\"f\"}\n"
               "{\"t_ms\":8600,\"type\":\"TASK_FINISHED\",\"task\":\"../etc:x\",\"text\":\"bad id\"}\n");
    write_text(JOB1 "metrics.json",
               "{\"app_id\":\"application_1_0001\",\"attempts\":[{\"attempt\":0,\"tasks\":["
               "{\"role\":\"worker\",\"index\":1,\"state\":\"FAILED\",\"container\":\"container_9\",\"log_dir\":\"/x/worker-1\","
               "\"series\":{\"t_ms\":[1,2,3],\"rss_bytes\":[10,20,30],\"cpu_percent\":[1,2,3]}},"
               "{\"role\":\"worker\",\"index\":0,\"state\":\"SUCCEEDED\",\"series\":{\"t_ms\":[]}},"
               "{\"role\":\"../x\",\"index\":0,\"series\":{\"t_ms\":[1]}}]}]}");
}

static void write_others(void) {
    /* still running */
    write_text("intermediate/application_1_0002/application_1_0002-5000-bob.jhist.inprogress", "Obj\x01");
    /* a coordinator that died before its .jhist: config only */
    write_conf("intermediate/application_1_0003/tony-final.xml");
    /* everything damaged */
    write_text("finished/2024/01/03/application_1_0004/application_1_0004-2000-3000-carol-SUCCEEDED.jhist",
               "Obj\x01 and then garbage");
    write_text("finished/2024/01/03/application_1_0004/tony-final.xml", "<configuration><property>");
    write_text("finished/2024/01/03/application_1_0004/metrics.json", "{\"attempts\": [");
    /* not jobs: a dir whose name is no id, stray files */
    write_text("finished/2024/01/03/bad id/tony-final.xml", "<configuration/>");
    write_text("intermediate/README", "not a job");
}

static int setup(void **state) {
    (void)state;
    char t[] = "/tmp/tony-histdir-XXXXXX";
    assert_non_null(mkdtemp(t));
    tree = tony_strdup(t);
    write_job1();
    write_others();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tony_rm_rf(tree, NULL);
    free(tree);
    return 0;
}

static void scan(tony_hist_list *l) {
    tony_jhist_dirs d;
    tony_jhist_dirs_resolve(tree, NULL, NULL, "/nowhere", &d);
    tony_hist_scan(&d, l);
    tony_jhist_dirs_free(&d);
}

static bool has_problem(const json_t *job, const char *needle) {
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(job, "problems"), i, p)
        if (strstr(json_string_value(p), needle)) return true;
    return false;
}

static json_t *task(const json_t *job, const char *id) {
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(job, "tasks"), i, t)
        if (strcmp(json_string_value(json_object_get(t, "task")), id) == 0) return t;
    return NULL;
}

static void test_ids(void **state) {
    (void)state;
    assert_true(tony_hist_valid_id("application_1_0001"));
    assert_true(tony_hist_valid_id("job-2.x"));
    const char *bad[] = {"", ".", "..", "../etc", ".hidden", "a/b", "a%2Fb", "a b", "a\\b", NULL};
    for (size_t i = 0; bad[i]; i++) assert_false(tony_hist_valid_id(bad[i]));
    char longid[200];
    memset(longid, 'a', sizeof longid - 1);
    longid[sizeof longid - 1] = '\0';
    assert_false(tony_hist_valid_id(longid));
    assert_false(tony_hist_valid_id(NULL));
    assert_true(tony_hist_valid_role("worker"));
    assert_false(tony_hist_valid_role("Worker"));
    assert_false(tony_hist_valid_role("../x"));
    assert_false(tony_hist_valid_role(""));
}

static void test_scan(void **state) {
    (void)state;
    tony_hist_list l = {0};
    scan(&l);
    assert_int_equal(l.len, 4); /* "bad id" and README are not jobs */
    const char *order[] = {"application_1_0002", "application_1_0004", "application_1_0001", "application_1_0003"};
    for (size_t i = 0; i < 4; i++) assert_string_equal(l.items[i].meta.app_id, order[i]);
    const tony_hist_job *j = tony_hist_find(&l, "application_1_0001");
    assert_int_equal(j->meta.start_ms, 1000); /* not the older coordinator's 500 */
    assert_non_null(strstr(j->file, "-1000-9000-alice-FAILED.jhist"));
    j = tony_hist_find(&l, "application_1_0003");
    assert_null(j->file);
    assert_string_equal(j->meta.status, "UNKNOWN");
    json_t *o = tony_hist_job_json(j);
    assert_true(json_is_null(json_object_get(o, "file")) && json_is_null(json_object_get(o, "started_ms")));
    json_decref(o);
    j = tony_hist_find(&l, "application_1_0002");
    assert_true(j->meta.in_progress);
    o = tony_hist_job_json(j);
    assert_true(json_is_true(json_object_get(o, "in_progress")) && json_is_null(json_object_get(o, "finished_ms")));
    json_decref(o);
    assert_null(tony_hist_find(&l, "application_9_0009"));
    json_t *facts;
    tony_error err;
    assert_int_equal(tony_hist_conf_facts(tony_hist_find(&l, "application_1_0001"), &facts, &err), 0);
    assert_string_equal(json_string_value(json_object_get(facts, "name")), "demo");
    assert_string_equal(json_string_value(json_object_get(facts, "framework")), "pytorch");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(facts, "roles"), "worker")), 2);
    assert_int_equal(json_integer_value(json_object_get(facts, "task_count")), 2);
    json_decref(facts);
    assert_int_equal(tony_hist_conf_facts(tony_hist_find(&l, "application_1_0004"), &facts, &err), -1);
    assert_null(facts);
    assert_non_null(strstr(err.msg, "tony-final.xml"));
    tony_hist_list_free(&l);
}

static void test_whole_job(void **state) {
    (void)state;
    tony_hist_list l = {0};
    scan(&l);
    const tony_hist_job *j = tony_hist_find(&l, "application_1_0001");
    json_t *o = tony_hist_job_detail(j, TONY_HIST_WITH_CONFIG);
    assert_int_equal(json_array_size(json_object_get(o, "events")), 6);
    assert_int_equal(json_array_size(json_object_get(o, "log")), 6); /* the bad line skipped */
    assert_true(has_problem(o, "1 of 7 line(s)"));
    assert_int_equal(json_array_size(json_object_get(o, "problems")), 1);
    assert_string_equal(json_string_value(json_object_get(o, "name")), "demo");
    assert_int_equal(json_array_size(json_object_get(o, "tasks")), 2); /* no task "../etc" or "../x" */
    json_t *w1 = task(o, "worker:1"), *w0 = task(o, "worker:0");
    assert_string_equal(json_string_value(json_object_get(w1, "status")), "FAILED");
    assert_int_equal(json_integer_value(json_object_get(w1, "exit_status")), 3);
    assert_string_equal(json_string_value(json_object_get(w1, "exit_meaning")), "exit code 3");
    assert_string_equal(json_string_value(json_object_get(w1, "host")), "h2");
    assert_int_equal(json_integer_value(json_object_get(w1, "port")), 77);
    assert_string_equal(json_string_value(json_object_get(w1, "container")), "container_9");
    assert_string_equal(json_string_value(json_object_get(w1, "log_dir")), "/x/worker-1");
    assert_int_equal(json_integer_value(json_object_get(w1, "started_ms")), 1100);
    assert_int_equal(json_integer_value(json_object_get(w1, "finished_ms")), 8500);
    json_t *m = json_object_get(w1, "metrics");
    assert_float_equal(json_number_value(json_object_get(m, "MAX_MEMORY_BYTES")), 3e8, 1);
    assert_float_equal(json_number_value(json_object_get(m, "AVG_CPU_PERCENT")), 50, 1e-9);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(w1, "series_attempts"), 0)), 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(w1, "requested"), "memory_bytes")), 2048LL << 20);
    /* worker:0 is known from the .jhist alone here: TonY's status, no series */
    assert_string_equal(json_string_value(json_object_get(w0, "status")), "SUCCEEDED");
    assert_null(json_object_get(w0, "series_attempts"));
    assert_true(json_array_size(json_object_get(o, "advice")) > 0);
    bool found = false;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(o, "config"), i, c)
        found |= strcmp(json_string_value(json_object_get(c, "key")), "tony.application.name") == 0 &&
                 strcmp(json_string_value(json_object_get(c, "value")), "demo") == 0;
    assert_true(found);
    json_decref(o);

    tony_error err;
    json_t *s = tony_hist_task_series(j, "worker", 1, -1, &err);
    assert_non_null(s);
    assert_int_equal(json_array_size(json_object_get(s, "t_ms")), 3);
    assert_int_equal(json_integer_value(json_object_get(s, "attempt")), 0);
    json_decref(s);
    assert_null(tony_hist_task_series(j, "worker", 1, 4, &err));
    assert_non_null(strstr(err.msg, "worker:1"));
    assert_null(tony_hist_task_series(j, "worker", 0, -1, &err)); /* an empty series is none */
    assert_null(tony_hist_task_series(j, "ps", 0, -1, &err));
    tony_hist_list_free(&l);
}

static void test_broken_jobs(void **state) {
    (void)state;
    tony_hist_list l = {0};
    scan(&l);
    json_t *o = tony_hist_job_detail(tony_hist_find(&l, "application_1_0004"), TONY_HIST_WITH_CONFIG);
    assert_true(has_problem(o, "is damaged"));
    assert_true(has_problem(o, "tony-final.xml"));
    assert_true(has_problem(o, "metrics.json is not valid JSON"));
    assert_int_equal(json_array_size(json_object_get(o, "events")), 0);
    assert_int_equal(json_array_size(json_object_get(o, "config")), 0);
    assert_int_equal(json_array_size(json_object_get(o, "tasks")), 0);
    json_decref(o);
    o = tony_hist_job_detail(tony_hist_find(&l, "application_1_0003"), 0);
    assert_true(has_problem(o, "no .jhist file"));
    assert_string_equal(json_string_value(json_object_get(o, "framework")), "pytorch");
    json_decref(o);
    /* in progress: nothing is wrong yet, and no metrics are expected */
    o = tony_hist_job_detail(tony_hist_find(&l, "application_1_0002"), 0);
    assert_false(has_problem(o, "metrics.json"));
    assert_true(has_problem(o, "tony-final.xml")); /* this one has none */
    json_decref(o);
    tony_hist_list_free(&l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_scan),
        cmocka_unit_test(test_whole_job),
        cmocka_unit_test(test_broken_jobs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
