/* The job JSON's pages (am/view.h): GET /v1/job?state=&role= takes the
 * tasks of some states and of a role, offset and limit page those in the
 * job's order, and the answer says how many it took (issue 26: a job's few
 * failed tasks among thousands, found in one answer). A real coordinator's
 * state over a real plan; the tasks' states are set as its state machine
 * would leave them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "am/am_internal.h"
#include "am/view.h"
#include "common/jobjson.h"

typedef struct view_fixture {
    tony_am am;
} view_fixture;

/* ps:0..1 then worker:0..7 (TensorFlow), every task RUNNING but ps:1,
 * worker:3 and worker:6, FAILED. */
static int setup(void **st) {
    view_fixture *v = calloc(1, sizeof *v);
    tony_am *am = &v->am;
    am->conf = tony_conf_new();
    tony_conf_load_defaults(am->conf);
    tony_conf_set(am->conf, "tony.containers.command", "python train.py", "test");
    tony_conf_set(am->conf, "tony.ps.instances", "2", "test");
    tony_conf_set(am->conf, "tony.worker.instances", "8", "test");
    tony_error err;
    if (tony_runtime_plan(am->conf, &am->plan, &err)) fail_msg("plan: %s", err.msg);
    am->id.app_id = "application_1_0001";
    am->id.job_dir = "/nonexistent/job";
    am->id.host = "127.0.0.1";
    am_fsm_init(&am->fsm, &am->plan, 0, 0);
    for (size_t i = 0; i < am->fsm.job.ntasks; i++) {
        am_task *t = &am->fsm.job.tasks[i];
        bool failed = (strcmp(t->role->name, "ps") == 0 && t->index == 1) ||
                      (strcmp(t->role->name, "worker") == 0 && (t->index == 3 || t->index == 6));
        t->state = failed ? AM_TASK_FAILED : AM_TASK_RUNNING;
    }
    *st = v;
    return 0;
}

static int teardown(void **st) {
    view_fixture *v = *st;
    am_fsm_free(&v->am.fsm);
    tony_plan_free(&v->am.plan);
    tony_conf_free(v->am.conf);
    free(v);
    return 0;
}

/* The page's tasks as "role:index,...", and its counts. */
static void expect_page(const tony_am *am, const char *states, const char *role, size_t offset, size_t limit,
                        const char *want, int matching) {
    am_job_filter f;
    tony_error err;
    if (am_job_filter_parse(am, states, role, &f, &err)) fail_msg("filter: %s", err.msg);
    json_t *job = am_job_json_page(am, offset, limit, &f);
    char got[512] = "";
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(job, JOB_TASKS), i, t) {
        size_t n = strlen(got);
        snprintf(got + n, sizeof got - n, "%s%s:%d", i ? "," : "", json_string_value(json_object_get(t, JOB_TASK_ROLE)),
                 (int)json_integer_value(json_object_get(t, JOB_TASK_INDEX)));
    }
    assert_string_equal(got, want);
    assert_int_equal(json_integer_value(json_object_get(job, JOB_TASKS_MATCHING)), matching);
    assert_int_equal(json_integer_value(json_object_get(job, JOB_TASKS_TOTAL)), 10);
    json_t *counts = json_object_get(job, JOB_TASK_COUNTS);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(counts, "worker"), JOB_TASK_STATE_FAILED)), 2);
    json_decref(job);
}

static void test_a_state_filter_pages_the_tasks_it_takes(void **st) {
    tony_am *am = &((view_fixture *)*st)->am;
    expect_page(am, JOB_TASK_STATE_FAILED, NULL, 0, 100, "ps:1,worker:3,worker:6", 3);
    expect_page(am, JOB_TASK_STATE_FAILED, NULL, 1, 1, "worker:3", 3);
    expect_page(am, JOB_TASK_STATE_FAILED, NULL, 2, 100, "worker:6", 3);
    expect_page(am, JOB_TASK_STATE_FAILED, NULL, 3, 100, "", 3);
    expect_page(am, "failed", "worker", 0, 100, "worker:3,worker:6", 2);
    expect_page(am, NULL, "ps", 0, 100, "ps:0,ps:1", 2);
    expect_page(am, "SUCCEEDED,FINISHED", NULL, 0, 100, "", 0);
    expect_page(am, "RUNNING,FAILED", NULL, 8, 100, "worker:6,worker:7", 10);
    /* without a filter: by position, as before; every task taken */
    expect_page(am, NULL, NULL, 4, 2, "worker:2,worker:3", 10);
    /* a job over lists every task for its advice: the page is the same */
    am->fsm.state = AM_JOB_DONE;
    expect_page(am, JOB_TASK_STATE_FAILED, NULL, 1, 100, "worker:3,worker:6", 3);
    expect_page(am, NULL, "worker", 7, 100, "worker:7", 8);
    am->fsm.state = AM_JOB_RUNNING;
}

static void expect_refused(const tony_am *am, const char *states, const char *role, const char *const *words) {
    am_job_filter f;
    tony_error err;
    assert_int_equal(am_job_filter_parse(am, states, role, &f, &err), -1);
    for (; *words; words++)
        if (!strstr(err.msg, *words)) fail_msg("'%s' not in: %s", *words, err.msg);
}

/* A 400's words: the parameter, and what it allows. */
static void test_unknown_states_and_roles_are_refused_naming_what_is_allowed(void **st) {
    const tony_am *am = &((view_fixture *)*st)->am;
    const char *const states[] = {"state: 'DEAD'", JOB_TASK_STATE_NEW, JOB_TASK_STATE_READY, JOB_TASK_STATE_RUNNING,
                                  JOB_TASK_STATE_SUCCEEDED, JOB_TASK_STATE_FAILED, JOB_TASK_STATE_FINISHED, NULL};
    expect_refused(am, "FAILED,DEAD", NULL, states);
    const char *const empty[] = {"state: ''", NULL};
    expect_refused(am, "", NULL, empty);
    expect_refused(am, "FAILED,", NULL, empty);
    expect_refused(am, "FAILEDX", NULL, (const char *const[]){"state: 'FAILEDX'", NULL});
    expect_refused(am, NULL, "chief", (const char *const[]){"role: 'chief'", "ps, worker", NULL});
    am_job_filter f;
    tony_error err;
    assert_int_equal(am_job_filter_parse(am, NULL, NULL, &f, &err), 0);
    assert_int_equal(f.states, 0);
    assert_null(f.role);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_state_filter_pages_the_tasks_it_takes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_states_and_roles_are_refused_naming_what_is_allowed, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
