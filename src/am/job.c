/* Job state machine: TonY's completion rules in one place. */
#include "am/job.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "common/strv.h"

void am_job_init(am_job *j, const tony_plan *plan) {
    memset(j, 0, sizeof *j);
    j->plan = plan;
    for (size_t r = 0; r < plan->nroles; r++) j->ntasks += (size_t)plan->roles[r].instances;
    j->tasks = tony_xcalloc(j->ntasks, sizeof *j->tasks);
    am_job_reset(j, 0);
}

static void task_clear(am_task *t) {
    free(t->host);
    free(t->log_dir);
    free(t->container);
    free(t->log_url);
    free(t->diagnostics);
}

void am_job_free(am_job *j) {
    for (size_t i = 0; i < j->ntasks; i++) {
        task_clear(&j->tasks[i]);
        for (size_t r = 0; r < j->tasks[i].nruns; r++) free(j->tasks[i].runs[r].log_url);
        free(j->tasks[i].runs);
    }
    free(j->tasks);
    free(j->attempt_diagnostics);
    memset(j, 0, sizeof *j);
}

void am_job_reset(am_job *j, int attempt) {
    size_t k = 0;
    for (size_t r = 0; r < j->plan->nroles; r++) {
        for (int i = 0; i < j->plan->roles[r].instances; i++, k++) {
            am_task *t = &j->tasks[k];
            am_task_run *runs = t->runs;
            size_t nruns = t->nruns;
            if (t->role && t->state != AM_TASK_NEW) {
                runs = tony_xrealloc(runs, (nruns + 1) * sizeof *runs);
                runs[nruns++] = (am_task_run){j->attempt, t->state, t->exit_status, t->started_ms != 0,
                                              t->log_url ? tony_strdup(t->log_url) : NULL};
            }
            task_clear(t);
            memset(t, 0, sizeof *t);
            t->runs = runs;
            t->nruns = nruns;
            t->role = &j->plan->roles[r];
            t->index = i;
            t->exit_status = TONY_EXIT_INVALID;
        }
    }
    j->attempt = attempt;
    j->attempt_over = false;
    j->attempt_status = AM_FINAL_UNDEFINED;
    free(j->attempt_diagnostics);
    j->attempt_diagnostics = NULL;
}

am_task *am_job_task(am_job *j, const char *role, int index) {
    for (size_t i = 0; i < j->ntasks; i++)
        if (j->tasks[i].index == index && strcmp(j->tasks[i].role->name, role) == 0) return &j->tasks[i];
    return NULL;
}

const char *am_task_state_name(am_task_state s) {
    switch (s) {
    case AM_TASK_NEW: return "NEW";
    case AM_TASK_REQUESTED: return "READY";
    case AM_TASK_REGISTERED: return "READY";
    case AM_TASK_RUNNING: return "RUNNING";
    case AM_TASK_SUCCEEDED: return "SUCCEEDED";
    case AM_TASK_FAILED: return "FAILED";
    case AM_TASK_FINISHED: return "FINISHED";
    }
    return "?";
}

bool am_task_done(const am_task *t) {
    return t->state == AM_TASK_SUCCEEDED || t->state == AM_TASK_FAILED || t->state == AM_TASK_FINISHED;
}

bool am_job_reserves_tb_port(const am_job *j, const am_task *t) {
    if (tony_plan_role(j->plan, "tensorboard")) return strcmp(t->role->name, "tensorboard") == 0;
    return tony_plan_is_chief(j->plan, t->role->name, t->index);
}

static bool prepare_stage_done(const am_job *j) {
    for (size_t i = 0; i < j->ntasks; i++) {
        const am_task *t = &j->tasks[i];
        if (t->role->stage == TONY_STAGE_PREPARE && t->role->kind == TONY_ROLE_TRACKED && !am_task_done(t)) return false;
    }
    return true;
}

bool am_job_should_request(const am_job *j, const am_task *t) {
    if (t->state != AM_TASK_NEW || j->attempt_over) return false;
    return t->role->stage == TONY_STAGE_PREPARE || prepare_stage_done(j);
}

int am_job_count_requested(const am_job *j) {
    int n = 0;
    for (size_t i = 0; i < j->ntasks; i++) n += j->tasks[i].state != AM_TASK_NEW;
    return n;
}

int am_job_count_registered(const am_job *j) {
    int n = 0;
    for (size_t i = 0; i < j->ntasks; i++) n += j->tasks[i].host != NULL;
    return n;
}

bool am_job_gang_ready(const am_job *j) {
    /* Requested tasks that ended count as present: a prepare-stage task that
     * finished still has its place in the cluster spec. */
    for (size_t i = 0; i < j->ntasks; i++) {
        const am_task *t = &j->tasks[i];
        if (t->state == AM_TASK_NEW) continue;
        /* one that ended without registering (an ignored sidecar) never will */
        if (!t->host && !am_task_done(t)) return false;
    }
    return am_job_count_requested(j) > 0;
}

void am_job_end_attempt(am_job *j, am_final_status status, const char *fmt, ...) {
    if (j->attempt_over) return;
    j->attempt_over = true;
    j->attempt_status = status;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&j->attempt_diagnostics, fmt, ap) < 0) j->attempt_diagnostics = NULL;
    va_end(ap);
}

static const char *lockstep_hint(const tony_plan *p) {
    return p->lockstep ? "its peers train in lock-step and cannot go on without it" : "";
}

void am_job_on_task_exit(am_job *j, am_task *t, int exit_status, const char *diagnostics, long long now_ms) {
    if (t->exited) return; /* only the first exit status counts */
    t->exited = true;
    t->finished_ms = now_ms;
    if (am_task_done(t)) return; /* already decided (e.g. expired heartbeats) */
    t->exit_status = exit_status;
    if (diagnostics) {
        /* keep what the executor already said (a timeout), then the container's word */
        char *d = t->diagnostics ? tony_sprintf("%s %s", t->diagnostics, diagnostics) : tony_strdup(diagnostics);
        free(t->diagnostics);
        t->diagnostics = d;
    }
    bool registered = t->host != NULL;
    if (exit_status == 0) t->state = AM_TASK_SUCCEEDED;
    else if (exit_status == TONY_EXIT_KILLED_BY_APPMASTER) t->state = AM_TASK_FINISHED;
    else t->state = AM_TASK_FAILED;
    if (t->state != AM_TASK_FAILED || j->attempt_over) {
        if (!j->attempt_over && am_job_tracked_done(j)) am_job_settle(j);
        return;
    }

    const tony_plan *p = j->plan;
    const tony_role *r = t->role;
    char meaning[160];
    const char *what = tony_exit_status_meaning(exit_status, meaning, sizeof meaning);
    const char *diag = diagnostics ? diagnostics : "";
    if (r->kind == TONY_ROLE_SIDECAR) return; /* sidecar failures are ignored */
    if (!registered) {
        am_job_end_attempt(j, AM_FINAL_FAILED, "Task [%s:%d] failed before it registered (%s). %s", r->name, t->index,
                           what, diag);
    } else if (r->kind == TONY_ROLE_UNTRACKED) {
        am_job_end_attempt(j, AM_FINAL_FAILED, "Untracked task [%s:%d] failed on its own (%s). %s", r->name, t->index,
                           what, diag);
    } else if (tony_plan_is_chief(p, r->name, t->index)) {
        am_job_end_attempt(j, AM_FINAL_FAILED, "Chief task [%s:%d] failed (%s). Exit status: %d. Error msg: %s",
                           r->name, t->index, what, exit_status, diag);
    } else if (r->stop_on_failure) {
        am_job_end_attempt(j, AM_FINAL_FAILED,
                           "Task [%s:%d] failed (%s) and %s is in tony.application.stop-on-failure-jobtypes. %s",
                           r->name, t->index, what, r->name, diag);
    } else if (p->fail_on_worker_failure) {
        am_job_end_attempt(j, AM_FINAL_FAILED,
                           "Task [%s:%d] failed (%s) and tony.application.fail-on-worker-failure-enabled is true. %s",
                           r->name, t->index, what, diag);
    } else if (p->lockstep) {
        am_job_end_attempt(j, AM_FINAL_FAILED, "Task [%s:%d] failed (%s); %s (%s training), so the attempt ends now. %s",
                           r->name, t->index, what, lockstep_hint(p), p->framework, diag);
    } else if (am_job_tracked_done(j)) {
        am_job_settle(j);
    }
}

static long long heartbeat_expiry_ms(const tony_plan *p) {
    int missed = p->max_missed_heartbeats < 3 ? 3 : p->max_missed_heartbeats;
    return p->heartbeat_interval_ms * missed;
}

am_task *am_job_check_heartbeats(am_job *j, long long now_ms) {
    long long expiry = heartbeat_expiry_ms(j->plan);
    for (size_t i = 0; i < j->ntasks; i++) {
        am_task *t = &j->tasks[i];
        if (!t->host || t->exited || t->result_reported || am_task_done(t)) continue;
        long long limit = t->state == AM_TASK_REGISTERED ? expiry + j->barrier_poll_ms : expiry;
        if (now_ms - t->last_heartbeat_ms <= limit) continue;
        t->state = AM_TASK_FAILED;
        free(t->diagnostics);
        t->diagnostics = tony_sprintf("Task with id [%s:%d] has missed [%d] heartbeats (none for %lld ms).",
                                      t->role->name, t->index, j->plan->max_missed_heartbeats,
                                      now_ms - t->last_heartbeat_ms);
        am_job_end_attempt(j, AM_FINAL_FAILED, "%s Ending application!", t->diagnostics);
        return t;
    }
    return NULL;
}

am_task *am_job_check_registration(am_job *j, long long now_ms) {
    long long limit = j->plan->registration_timeout_ms;
    if (limit <= 0) return NULL;
    for (size_t i = 0; i < j->ntasks; i++) {
        am_task *t = &j->tasks[i];
        if (t->state != AM_TASK_REQUESTED || t->host || now_ms - t->requested_ms <= limit) continue;
        am_job_end_attempt(j, AM_FINAL_FAILED,
                           "Stopping AM for task [%s:%d] registration timeout: its executor did not register within "
                           "%lld ms (tony.container.registration.timeout, or TonY's tony.container.allocation.timeout)",
                           t->role->name, t->index, limit);
        return t;
    }
    return NULL;
}

bool am_job_tracked_done(const am_job *j) {
    for (size_t i = 0; i < j->ntasks; i++) {
        const am_task *t = &j->tasks[i];
        if (t->role->kind == TONY_ROLE_TRACKED && !am_task_done(t)) return false;
    }
    return true;
}

void am_job_settle(am_job *j) {
    if (j->attempt_over) return;
    int tracked = 0, failed = 0;
    for (size_t i = 0; i < j->ntasks; i++) {
        const am_task *t = &j->tasks[i];
        if (t->role->kind != TONY_ROLE_TRACKED) continue;
        tracked++;
        /* TonY counts every non-zero exit, a tracked task stopped by us included */
        failed += t->state != AM_TASK_SUCCEEDED;
    }
    if (failed == 0) {
        am_job_end_attempt(j, AM_FINAL_SUCCEEDED, "All %d tracked tasks succeeded", tracked);
    } else if (j->plan->fail_on_worker_failure || failed >= tracked) {
        am_job_end_attempt(j, AM_FINAL_FAILED, "%d of %d tracked tasks failed", failed, tracked);
    } else {
        am_job_end_attempt(j, AM_FINAL_SUCCEEDED, "Training completed with some worker jobs failure, failedCnt=%d",
                           failed);
    }
}
