/* The coordinator's state machine on a plan from a real configuration, for
 * the tests that drive it through event sequences (test_fsm.c,
 * test_exclusion.c, test_hang.c): make one, read the actions of the last event, find a
 * task, free it. What each file does with the tasks (register them, end
 * them as its cluster would) stays in that file. Include after <cmocka.h>. */
#ifndef TONY_TEST_FSM_FIXTURE_H
#define TONY_TEST_FSM_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "am/fsm.h"
#include "conf/conf.h"
#include "conf/plan.h"
#include "runtime/runtime.h"

typedef struct fixture {
    tony_conf *conf;
    tony_plan plan;
    am_fsm fsm;
    am_job *job;    /* &fsm.job */
    am_actions out; /* the actions of the last event */
} fixture;

/* kv: NULL-terminated "key=value" list over TonY's defaults (the command
 * is set); barrier_poll_ms as am_fsm_init's. */
static inline fixture *make_polling(const char *const *kv, long long barrier_poll_ms) {
    fixture *f = calloc(1, sizeof *f);
    f->conf = tony_conf_new();
    tony_conf_load_defaults(f->conf);
    tony_conf_set(f->conf, "tony.containers.command", "python train.py", "test");
    for (; *kv; kv++) {
        char *copy = strdup(*kv), *eq = strchr(copy, '=');
        *eq = '\0';
        tony_conf_set(f->conf, copy, eq + 1, "test");
        free(copy);
    }
    tony_error err;
    if (tony_runtime_plan(f->conf, &f->plan, &err)) fail_msg("plan: %s", err.msg);
    am_fsm_init(&f->fsm, &f->plan, barrier_poll_ms, 0);
    f->job = &f->fsm.job;
    return f;
}

static inline fixture *make(const char *const *kv) { return make_polling(kv, 0); }

/* The running counts of the state machine (job.h's am_tally) agree with a
 * walk: called between events (fresh) and at the end (destroy), so that a
 * change to a task that was not counted fails the test that made it. */
static inline void check_counts(const fixture *f) {
    tony_error err;
    if (am_fsm_check_counts(&f->fsm, &err)) fail_msg("counts: %s", err.msg);
}

static inline void destroy(fixture *f) {
    check_counts(f);
    am_actions_free(&f->out);
    am_fsm_free(&f->fsm);
    tony_plan_free(&f->plan);
    tony_conf_free(f->conf);
    free(f);
}

/* Forgets the last event's actions: the next event's are checked alone
 * (and the counts after the last event, check_counts). */
static inline am_actions *fresh(fixture *f) {
    check_counts(f);
    f->out.len = 0;
    return &f->out;
}

/* How many of the last event's actions are of kind. */
static inline int count(const fixture *f, am_action_kind kind) {
    int n = 0;
    for (size_t i = 0; i < f->out.len; i++) n += f->out.items[i].kind == kind;
    return n;
}

static inline am_task *task(fixture *f, const char *role, int index) {
    am_task *t = am_job_task(f->job, role, index);
    assert_non_null(t);
    return t;
}

#endif
