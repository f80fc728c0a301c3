/* The job's task table and the questions asked of it; the transitions are
 * in fsm.c. */
#include "am/job.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "common/jobjson.h"
#include "common/strv.h"
#include "conf/keys.h"

void am_job_init(am_job *j, const tony_plan *plan) {
    memset(j, 0, sizeof *j);
    j->plan = plan;
    for (size_t r = 0; r < plan->nroles; r++) j->ntasks += (size_t)plan->roles[r].instances;
    j->tasks = tony_xcalloc(j->ntasks, sizeof *j->tasks);
    j->role_tally = tony_xcalloc(plan->nroles + 1, AM_TALLY_N * sizeof *j->role_tally);
    size_t k = 0;
    for (size_t r = 0; r < plan->nroles; r++) {
        for (int i = 0; i < plan->roles[r].instances; i++, k++) {
            j->tasks[k].role = &plan->roles[r];
            j->tasks[k].index = i;
            j->tasks[k].exit_status = TONY_EXIT_INVALID;
        }
    }
}

void am_task_clear(am_task *t) {
    free(t->host);
    free(t->log_dir);
    free(t->container);
    free(t->log_url);
    free(t->diagnostics);
    free(t->stderr_tail);
    free(t->error_report);
    free(t->start_log);
    free(t->start_log_path);
    free(t->permanent);
    free(t->node);
    free(t->log_fail);
    free(t->log_exclude);
}

void am_job_free(am_job *j) {
    for (size_t i = 0; i < j->ntasks; i++) {
        am_task_clear(&j->tasks[i]);
        for (size_t r = 0; r < j->tasks[i].nruns; r++) free(j->tasks[i].runs[r].log_url);
        free(j->tasks[i].runs);
    }
    free(j->tasks);
    free(j->role_tally);
    free(j->attempt_diagnostics);
    memset(j, 0, sizeof *j);
}

am_task *am_job_task(am_job *j, const char *role, int index) {
    /* Every API call looks its task up: by role, then its place in the
     * role's run of am_job_init's table, not by a walk over all tasks
     * (10,000 of them, 10,000 times a second: issue 26). */
    size_t k = 0;
    for (size_t r = 0; j->plan && r < j->plan->nroles; k += (size_t)j->plan->roles[r++].instances) {
        const tony_role *ro = &j->plan->roles[r];
        if (strcmp(ro->name, role) != 0) continue;
        if (index < 0 || index >= ro->instances || k + (size_t)index >= j->ntasks) return NULL;
        am_task *t = &j->tasks[k + (size_t)index];
        if (t->role == ro && t->index == index) return t;
        break; /* a table laid out otherwise: the walk below */
    }
    for (size_t i = 0; i < j->ntasks; i++)
        if (j->tasks[i].index == index && strcmp(j->tasks[i].role->name, role) == 0) return &j->tasks[i];
    return NULL;
}

const char *am_task_state_name(am_task_state s) {
    switch (s) {
    case AM_TASK_NEW: return JOB_TASK_STATE_NEW;
    case AM_TASK_REQUESTED: return JOB_TASK_STATE_READY;
    case AM_TASK_REGISTERED: return JOB_TASK_STATE_READY;
    case AM_TASK_RUNNING: return JOB_TASK_STATE_RUNNING;
    case AM_TASK_SUCCEEDED: return JOB_TASK_STATE_SUCCEEDED;
    case AM_TASK_FAILED: return JOB_TASK_STATE_FAILED;
    case AM_TASK_FINISHED: return JOB_TASK_STATE_FINISHED;
    }
    return "?";
}

bool am_task_done(const am_task *t) {
    return t->state == AM_TASK_SUCCEEDED || t->state == AM_TASK_FAILED || t->state == AM_TASK_FINISHED;
}

bool am_job_reserves_tb_port(const am_job *j, const am_task *t) {
    /* a notebook job's Jupyter server listens there (am/notebook_proxy.h) */
    if (tony_plan_role(j->plan, TONY_NOTEBOOK_ROLE)) return strcmp(t->role->name, TONY_NOTEBOOK_ROLE) == 0;
    if (tony_plan_role(j->plan, "tensorboard")) return strcmp(t->role->name, "tensorboard") == 0;
    return tony_plan_is_chief(j->plan, t->role->name, t->index);
}

bool am_job_should_request(const am_job *j, const am_task *t) {
    if (t->state != AM_TASK_NEW || j->attempt_over || t->out) return false;
    /* the training stage waits for every tracked prepare-stage task */
    return t->role->stage == TONY_STAGE_PREPARE || j->tally[AM_TALLY_PREPARE_OPEN] == 0;
}

int am_job_count_requested(const am_job *j) { return j->tally[AM_TALLY_REQUESTED]; }

int am_job_count_registered(const am_job *j) { return j->nregistered; }

bool am_job_gang_ready(const am_job *j) {
    /* Requested tasks that ended count as present: a prepare-stage task that
     * finished still has its place in the cluster spec; one that ended
     * without registering (an ignored sidecar) never will register. */
    return j->tally[AM_TALLY_MISSING] == 0 && j->tally[AM_TALLY_REQUESTED] > 0;
}

bool am_job_tracked_done(const am_job *j) { return j->tally[AM_TALLY_TRACKED_OPEN] == 0; }

bool am_task_live(const am_task *t) { return t->state != AM_TASK_NEW && !t->exited && !t->stop_given_up; }

unsigned am_job_tally(am_job *j, am_task *t, unsigned bits) {
    unsigned changed = t->tallied ^ bits;
    int *role = &j->role_tally[(size_t)(t->role - j->plan->roles) * AM_TALLY_N];
    for (int k = 0; k < AM_TALLY_N; k++) {
        if (!(changed & (1u << k))) continue;
        int d = bits & (1u << k) ? 1 : -1;
        j->tally[k] += d;
        role[k] += d;
    }
    t->tallied = bits;
    return changed;
}

int am_job_role_tally(const am_job *j, const tony_role *r, am_tally which) {
    return j->role_tally[(size_t)(r - j->plan->roles) * AM_TALLY_N + which];
}
