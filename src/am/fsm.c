/* The coordinator's state machine: every change of the job's or a task's
 * state, as events in and actions out (see fsm.h). TonY's completion rules
 * (contract §3.5) decide what a container's exit means; ours add lock-step
 * training, stop retries and the executor's own stop. */
#include "am/fsm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "common/strv.h"

void am_actions_free(am_actions *a) {
    free(a->items);
    memset(a, 0, sizeof *a);
}

static void emit(am_actions *out, am_action_kind kind, am_task *t, int try_no, const char *note) {
    if (out->len == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 16;
        out->items = tony_xrealloc(out->items, out->cap * sizeof *out->items);
    }
    out->items[out->len++] = (am_action){kind, t, try_no, note};
}

const char *am_job_state_name(am_job_state s) {
    switch (s) {
    case AM_JOB_NEW: return "NEW";
    case AM_JOB_REGISTERING: return "REGISTERING";
    case AM_JOB_RUNNING: return "RUNNING";
    case AM_JOB_FINISHING: return "FINISHING";
    case AM_JOB_DONE: return "FINISHED";
    }
    return "?";
}

const char *am_final_status_name(am_final_status s) {
    switch (s) {
    case AM_FINAL_SUCCEEDED: return "SUCCEEDED";
    case AM_FINAL_FAILED: return "FAILED";
    case AM_FINAL_KILLED: return "KILLED";
    default: return "UNDEFINED";
    }
}

void am_fsm_init(am_fsm *f, const tony_plan *plan, long long barrier_poll_ms, long long now_ms) {
    memset(f, 0, sizeof *f);
    am_job_init(&f->job, plan);
    f->job.barrier_poll_ms = barrier_poll_ms;
    f->retries_left = plan->retry_count;
    f->in_place = plan->restart_in_place;
    f->started_ms = now_ms;
    f->state = AM_JOB_NEW;
}

void am_fsm_free(am_fsm *f) {
    am_job_free(&f->job);
    free(f->diagnostics);
    memset(f, 0, sizeof *f);
}

/* Whether the task's container, still there, is kept for the next attempt
 * (in-place restarts): its executor stopped its process itself and waits. */
static bool kept_for_next(const am_fsm *f, const am_task *t) {
    return f->in_place && am_task_live(t) && t->stop_tries == 0 && am_task_done(t) && am_fsm_may_keep(f, t);
}

/* Forgets the last attempt's tasks and starts attempt number `attempt`;
 * each task that got a container keeps a line on it in its runs. A kept
 * container's task starts as asked for, its executor registering anew. */
static void reset_attempt(am_fsm *f, int attempt, long long now_ms) {
    am_job *j = &f->job;
    for (size_t k = 0; k < j->ntasks; k++) {
        am_task *t = &j->tasks[k];
        bool keep = kept_for_next(f, t);
        int container_attempt = t->container_attempt;
        am_task_run *runs = t->runs;
        size_t nruns = t->nruns;
        if (t->state != AM_TASK_NEW) {
            runs = tony_xrealloc(runs, (nruns + 1) * sizeof *runs);
            runs[nruns++] = (am_task_run){j->attempt, t->state, t->exit_status, t->started_ms != 0,
                                          t->log_url ? tony_strdup(t->log_url) : NULL};
        }
        const tony_role *role = t->role;
        int index = t->index;
        am_task_clear(t);
        memset(t, 0, sizeof *t);
        t->runs = runs;
        t->nruns = nruns;
        t->role = role;
        t->index = index;
        t->exit_status = TONY_EXIT_INVALID;
        if (keep) {
            t->state = AM_TASK_REQUESTED;
            t->requested_ms = now_ms;
            t->container_attempt = container_attempt;
        }
    }
    j->attempt = attempt;
    j->attempt_over = false;
    j->attempt_status = AM_FINAL_UNDEFINED;
    free(j->attempt_diagnostics);
    j->attempt_diagnostics = NULL;
}

/* Ends the attempt with a status and a reason, unless it already ended. */
static void end_attempt(am_job *j, am_final_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void end_attempt(am_job *j, am_final_status status, const char *fmt, ...) {
    if (j->attempt_over) return;
    j->attempt_over = true;
    j->attempt_status = status;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&j->attempt_diagnostics, fmt, ap) < 0) j->attempt_diagnostics = NULL;
    va_end(ap);
}

/* TonY's final status once the tracked tasks are done (updateSessionStatus):
 * a failed tracked task fails the job only when fail-on-worker-failure is on
 * or every tracked task failed; otherwise SUCCEEDED with a note. */
static void settle(am_job *j) {
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
        end_attempt(j, AM_FINAL_SUCCEEDED, "All %d tracked tasks succeeded", tracked);
    } else if (j->plan->fail_on_worker_failure || failed >= tracked) {
        end_attempt(j, AM_FINAL_FAILED, "%d of %d tracked tasks failed", failed, tracked);
    } else {
        end_attempt(j, AM_FINAL_SUCCEEDED, "Training completed with some worker jobs failure, failedCnt=%d", failed);
    }
}

static void finish(am_fsm *f, am_final_status status, const char *diag, long long now_ms, am_actions *out) {
    if (f->state == AM_JOB_DONE) return;
    f->state = AM_JOB_DONE;
    f->final_status = status;
    free(f->diagnostics);
    f->diagnostics = tony_strdup(diag ? diag : "");
    f->finished_ms = now_ms;
    /* executors still polling at the barrier learn that it is over */
    emit(out, AM_ACT_RELEASE_GANG, NULL, 0, NULL);
    emit(out, AM_ACT_FINISH, NULL, 0, NULL);
}

static bool containers_gone(const am_job *j) {
    for (size_t i = 0; i < j->ntasks; i++)
        if (am_task_live(&j->tasks[i])) return false;
    return true;
}

/* A task asked for whose executor has not registered, and still may (one
 * that ended unregistered, like an ignored sidecar, never will). */
static bool awaiting_registration(const am_job *j) {
    for (size_t i = 0; i < j->ntasks; i++) {
        const am_task *t = &j->tasks[i];
        if (t->state != AM_TASK_NEW && !t->host && !am_task_done(t)) return true;
    }
    return false;
}

static void stop_task(am_task *t, long long now_ms, am_actions *out) {
    t->stop_tries++;
    t->stop_ms = now_ms;
    emit(out, AM_ACT_STOP, t, t->stop_tries, NULL);
}

/* The decided attempt failed and another one follows. */
static bool restart_due(const am_fsm *f) {
    const am_job *j = &f->job;
    return j->attempt_over && j->attempt_status == AM_FINAL_FAILED && f->retries_left > 0 && !f->killed &&
           !f->timed_out;
}

/* How long an executor told to stop its process in place has before its
 * container is stopped instead: until its next heartbeat, its stop's grace
 * (SIGTERM, then SIGKILL of the group) and its report. */
static long long in_place_stop_ms(const tony_plan *p) { return p->heartbeat_interval_ms + AM_FSM_IN_PLACE_STOP_MS; }

bool am_fsm_may_keep(const am_fsm *f, const am_task *t) {
    /* A training-stage task starts only once the prepare stage is done:
     * its container is asked for anew then, not kept waiting. */
    if (f->job.plan->has_stages && t->role->stage != TONY_STAGE_PREPARE) return false;
    /* Only a container whose executor registered and still answers can
     * start the next attempt's process. (Bad-node exclusion adds its
     * veto here: a container on an excluded node is not kept.) */
    return t->host != NULL && !t->lost && !t->exited && !t->stop_given_up && t->stop_tries == 0;
}

bool am_fsm_keeps_container(const am_fsm *f, const am_task *t) {
    if (!f->in_place || f->state == AM_JOB_DONE) return false;
    /* once the restart is decided its retry is spent already */
    if (!f->restarting && (f->killed || f->timed_out || f->retries_left <= 0)) return false;
    if (!f->restarting && f->job.attempt_over && !restart_due(f)) return false;
    return am_fsm_may_keep(f, t);
}

/* Leaves the task's executor in_place_stop_ms to do what it was told (stop
 * its process, or exit) before its container is stopped. */
static void stop_later(am_fsm *f, am_task *t, long long now_ms, am_actions *out) {
    if (!t->stop_asked_ms) t->stop_asked_ms = now_ms;
    else if (now_ms - t->stop_asked_ms > in_place_stop_ms(f->job.plan)) stop_task(t, now_ms, out);
}

/* In-place: what the decided attempt still waits for before the next one
 * starts. A kept task's executor stops its process when its watch (or its
 * heartbeat) is answered and reports; one that has not in time has its
 * container stopped (and asked for anew). An executor waiting at the
 * barrier never started its process: it is done at once. */
static void stop_in_place(am_fsm *f, am_task *t, long long now_ms, am_actions *out) {
    if (t->state == AM_TASK_REGISTERED) t->state = AM_TASK_FINISHED;
    if (!am_task_done(t)) stop_later(f, t, now_ms, out);
}

/* Every task of the decided attempt ended, in a container that is kept,
 * or lost its container; no other container is still there. */
static bool attempt_settled(const am_fsm *f) {
    const am_job *j = &f->job;
    for (size_t i = 0; i < j->ntasks; i++) {
        const am_task *t = &j->tasks[i];
        if (am_task_live(t) && (!am_task_done(t) || !am_fsm_may_keep(f, t))) return false;
    }
    return true;
}

/* After every event: ask for what may start now, and once the attempt is
 * decided, stop what still runs; when every container has ended, restart
 * or finish. */
static void advance(am_fsm *f, long long now_ms, am_actions *out) {
    if (f->state == AM_JOB_DONE || f->state == AM_JOB_NEW || f->job.plan->single_node || f->restarting) return;
    am_job *j = &f->job;
    if (!j->attempt_over) {
        for (size_t i = 0; i < j->ntasks; i++) {
            am_task *t = &j->tasks[i];
            if (!am_job_should_request(j, t)) continue;
            t->state = AM_TASK_REQUESTED;
            t->requested_ms = now_ms;
            t->container_attempt = j->attempt;
            emit(out, AM_ACT_REQUEST, t, 0, NULL);
        }
        if (am_job_tracked_done(j)) settle(j);
        if (!j->attempt_over) {
            f->state = awaiting_registration(j) ? AM_JOB_REGISTERING : AM_JOB_RUNNING;
            return;
        }
    }
    /* The attempt is decided: untracked and sidecar roles, and anything still
     * running after a failure, are stopped; the next step waits for every
     * container to end so that their final states are known. */
    if (f->state != AM_JOB_FINISHING) {
        f->state = AM_JOB_FINISHING;
        emit(out, AM_ACT_RELEASE_GANG, NULL, 0, NULL);
    }
    bool in_place = f->in_place && restart_due(f);
    for (size_t i = 0; i < j->ntasks; i++) {
        am_task *t = &j->tasks[i];
        if (!am_task_live(t) || t->stop_tries > 0) continue;
        if (in_place && am_fsm_may_keep(f, t)) stop_in_place(f, t, now_ms, out);
        /* no next attempt: an executor that reported exits by itself */
        else if (f->in_place && am_task_done(t) && t->result_reported) stop_later(f, t, now_ms, out);
        else stop_task(t, now_ms, out);
    }
    if (in_place ? !attempt_settled(f) : !containers_gone(j)) return;
    if (restart_due(f)) {
        f->retries_left--;
        f->restarting = true;
        emit(out, AM_ACT_RESTART, NULL, 0, NULL);
        return;
    }
    finish(f, j->attempt_status, j->attempt_diagnostics, now_ms, out);
}

void am_fsm_start(am_fsm *f, long long now_ms, am_actions *out) {
    if (f->state != AM_JOB_NEW) return;
    f->state = AM_JOB_REGISTERING;
    advance(f, now_ms, out);
}

void am_fsm_next_attempt(am_fsm *f, long long now_ms, am_actions *out) {
    if (!f->restarting) return;
    f->restarting = false;
    reset_attempt(f, f->job.attempt + 1, now_ms);
    f->state = AM_JOB_REGISTERING;
    advance(f, now_ms, out);
}

void am_fsm_request_dropped(am_fsm *f, am_task *t, long long now_ms, am_actions *out) {
    if (t->state != AM_TASK_REQUESTED || t->exited) return;
    t->state = AM_TASK_NEW;
    t->requested_ms = 0;
    t->stop_tries = 0;
    advance(f, now_ms, out);
}

am_reg_result am_fsm_registered(am_fsm *f, am_task *t, const am_registration *r, long long now_ms, am_actions *out) {
    if (f->job.attempt_over || f->state == AM_JOB_DONE) return AM_REG_ENDING;
    am_reg_result res = AM_REG_AGAIN;
    if (!t->host) {
        t->host = tony_strdup(r->host);
        t->port = r->port;
        t->tb_port = r->tb_port;
        if (r->log_dir && *r->log_dir) t->log_dir = tony_strdup(r->log_dir);
        if (r->container && *r->container) t->container = tony_strdup(r->container);
        if (r->log_url && *r->log_url) t->log_url = tony_strdup(r->log_url);
        t->registered_ms = now_ms;
        if (!am_task_done(t)) t->state = AM_TASK_REGISTERED;
        res = AM_REG_NEW;
    }
    t->last_heartbeat_ms = now_ms;
    /* Without a gang (FCFS) each task goes as soon as it registers. */
    if (!f->job.plan->gang || am_job_gang_ready(&f->job)) emit(out, AM_ACT_RELEASE_GANG, NULL, 0, NULL);
    advance(f, now_ms, out);
    return res;
}

void am_fsm_started(am_fsm *f, am_task *t, int pid, long long now_ms) {
    (void)f;
    t->pid = pid;
    t->started_ms = now_ms;
    t->last_heartbeat_ms = now_ms;
    if (!am_task_done(t)) t->state = AM_TASK_RUNNING;
}

am_hb_answer am_fsm_heartbeat(am_fsm *f, am_task *t, int tensorboard, long long now_ms, bool *tb_changed) {
    t->last_heartbeat_ms = now_ms;
    *tb_changed = false;
    /* As TonY's registerTensorBoardUrl, but only once the port serves. */
    if (tensorboard >= 0 && t->tb_port > 0 && (tensorboard > 0) != t->tb_listening) {
        t->tb_listening = tensorboard > 0;
        *tb_changed = true;
    }
    /* An executor told to stop stops its user process itself: the task ends
     * even when the backend's stop cannot reach it. */
    return f->job.attempt_over || f->state == AM_JOB_DONE ? AM_HB_STOP : AM_HB_OK;
}

void am_fsm_alive(am_fsm *f, am_task *t, long long now_ms) {
    (void)f;
    t->last_heartbeat_ms = now_ms;
}

static void task_failed(am_job *j, am_task *t, int exit_status, const char *diagnostics, bool registered);

/* A task's end in this attempt, by what it ended with: a task the
 * coordinator asked to stop (the backend, or its executor in place) was
 * stopped, not failed. */
static void task_ended(am_fsm *f, am_task *t, int exit_status, const char *diagnostics, long long now_ms) {
    t->exit_status = exit_status;
    t->finished_ms = now_ms;
    if (exit_status == 0) t->state = AM_TASK_SUCCEEDED;
    else if (exit_status == TONY_EXIT_KILLED_BY_APPMASTER || t->stop_tries > 0 || t->stop_asked_ms)
        t->state = AM_TASK_FINISHED;
    else t->state = AM_TASK_FAILED;
    if (t->state == AM_TASK_FAILED && !f->job.attempt_over)
        task_failed(&f->job, t, exit_status, diagnostics, t->host != NULL);
}

void am_fsm_result_reported(am_fsm *f, am_task *t, int exit_code, bool timed_out, long long now_ms, am_actions *out) {
    t->result_reported = true;
    if (timed_out) {
        free(t->diagnostics);
        t->diagnostics = tony_sprintf("The command ran longer than its execution timeout of %lld ms "
                                      "(tony.task.executor.execution-timeout-ms / tony.worker.timeout) and was killed.",
                                      f->job.plan->execution_timeout_ms);
    }
    /* Reallocating, the container's exit status is the result, as in
     * TonY; in place the container stays, so the executor's word is it. */
    if (!f->in_place || t->exited || am_task_done(t) || f->state == AM_JOB_DONE) return;
    task_ended(f, t, exit_code, t->diagnostics, now_ms);
    advance(f, now_ms, out);
}

static const char *lockstep_hint(const tony_plan *p) {
    return p->lockstep ? "its peers train in lock-step and cannot go on without it" : "";
}

/* What a failed task means for the attempt (TonY's rules, then ours). */
static void task_failed(am_job *j, am_task *t, int exit_status, const char *diagnostics, bool registered) {
    const tony_plan *p = j->plan;
    const tony_role *r = t->role;
    char meaning[160];
    const char *what = tony_exit_status_meaning(exit_status, meaning, sizeof meaning);
    const char *diag = diagnostics ? diagnostics : "";
    if (r->kind == TONY_ROLE_SIDECAR) return; /* sidecar failures are ignored */
    if (!registered) {
        end_attempt(j, AM_FINAL_FAILED, "Task [%s:%d] failed before it registered (%s). %s", r->name, t->index, what,
                    diag);
    } else if (r->kind == TONY_ROLE_UNTRACKED) {
        end_attempt(j, AM_FINAL_FAILED, "Untracked task [%s:%d] failed on its own (%s). %s", r->name, t->index, what,
                    diag);
    } else if (tony_plan_is_chief(p, r->name, t->index)) {
        end_attempt(j, AM_FINAL_FAILED, "Chief task [%s:%d] failed (%s). Exit status: %d. Error msg: %s", r->name,
                    t->index, what, exit_status, diag);
    } else if (r->stop_on_failure) {
        end_attempt(j, AM_FINAL_FAILED,
                    "Task [%s:%d] failed (%s) and %s is in tony.application.stop-on-failure-jobtypes. %s", r->name,
                    t->index, what, r->name, diag);
    } else if (p->fail_on_worker_failure) {
        end_attempt(j, AM_FINAL_FAILED,
                    "Task [%s:%d] failed (%s) and tony.application.fail-on-worker-failure-enabled is true. %s",
                    r->name, t->index, what, diag);
    } else if (p->lockstep) {
        end_attempt(j, AM_FINAL_FAILED, "Task [%s:%d] failed (%s); %s (%s training), so the attempt ends now. %s",
                    r->name, t->index, what, lockstep_hint(p), p->framework, diag);
    }
}

void am_fsm_exited(am_fsm *f, am_task *t, int exit_status, const char *diagnostics, long long now_ms,
                   am_actions *out) {
    if (t->exited || t->state == AM_TASK_NEW) return; /* only the first exit status counts */
    t->exited = true;
    if (!am_task_done(t)) { /* else already decided (e.g. expired heartbeats, or reported in place) */
        if (diagnostics) {
            /* keep what the executor already said (a timeout), then the container's word */
            char *d = t->diagnostics ? tony_sprintf("%s %s", t->diagnostics, diagnostics) : tony_strdup(diagnostics);
            free(t->diagnostics);
            t->diagnostics = d;
        }
        /* A task we asked to stop ended because of it, whether the backend
         * stopped it or its executor did when its heartbeat was answered. */
        task_ended(f, t, exit_status, diagnostics, now_ms);
    } else if (!t->finished_ms) {
        t->finished_ms = now_ms;
    }
    advance(f, now_ms, out);
}

void am_fsm_fail_attempt(am_fsm *f, const char *why, long long now_ms, am_actions *out) {
    end_attempt(&f->job, AM_FINAL_FAILED, "%s", why);
    advance(f, now_ms, out);
}

void am_fsm_kill(am_fsm *f, long long now_ms, am_actions *out) {
    if (f->state == AM_JOB_DONE) return;
    f->killed = true;
    if (f->job.plan->single_node) {
        if (f->single_running) emit(out, AM_ACT_STOP, NULL, 1, "killed by the user");
        return;
    }
    end_attempt(&f->job, AM_FINAL_KILLED, "Killed by the user");
    advance(f, now_ms, out);
}

static long long heartbeat_expiry_ms(const tony_plan *p) {
    int missed = p->max_missed_heartbeats < 3 ? 3 : p->max_missed_heartbeats;
    return p->heartbeat_interval_ms * missed;
}

/* Tasks that stayed silent longer than the interval × max(3, max-missed)
 * are declared dead, the first one ending the attempt. */
static void check_heartbeats(am_fsm *f, long long now_ms, am_actions *out) {
    am_job *j = &f->job;
    long long expiry = heartbeat_expiry_ms(j->plan);
    for (size_t i = 0; i < j->ntasks; i++) {
        am_task *t = &j->tasks[i];
        if (!t->host || t->exited || t->result_reported || am_task_done(t)) continue;
        /* one waiting at the barrier sits in a long poll that long */
        long long limit = t->state == AM_TASK_REGISTERED ? expiry + j->barrier_poll_ms : expiry;
        if (now_ms - t->last_heartbeat_ms <= limit) continue;
        t->state = AM_TASK_FAILED;
        t->lost = true;
        free(t->diagnostics);
        t->diagnostics = tony_sprintf("Task with id [%s:%d] has missed [%d] heartbeats (none for %lld ms).",
                                      t->role->name, t->index, j->plan->max_missed_heartbeats,
                                      now_ms - t->last_heartbeat_ms);
        end_attempt(j, AM_FINAL_FAILED, "%s Ending application!", t->diagnostics);
        emit(out, AM_ACT_LOST, t, 0, NULL);
        return;
    }
}

/* tony.container.registration.timeout */
static void check_registration(am_job *j, long long now_ms) {
    long long limit = j->plan->registration_timeout_ms;
    if (limit <= 0) return;
    for (size_t i = 0; i < j->ntasks; i++) {
        am_task *t = &j->tasks[i];
        if (t->state != AM_TASK_REQUESTED || t->host || now_ms - t->requested_ms <= limit) continue;
        end_attempt(j, AM_FINAL_FAILED,
                    "Stopping AM for task [%s:%d] registration timeout: its executor did not register within "
                    "%lld ms (tony.container.registration.timeout, or TonY's tony.container.allocation.timeout)",
                    t->role->name, t->index, limit);
        return;
    }
}

/* Stops that did not end their container are asked again, each wait twice
 * the last; after the last try's wait the container is given up on. */
static void retry_stops(am_job *j, long long now_ms, am_actions *out) {
    for (size_t i = 0; i < j->ntasks; i++) {
        am_task *t = &j->tasks[i];
        if (!am_task_live(t) || t->stop_tries == 0) continue;
        long long wait = (long long)AM_FSM_STOP_RETRY_MS << (t->stop_tries - 1);
        if (now_ms - t->stop_ms < wait) continue;
        if (t->stop_tries < AM_FSM_STOP_TRIES) stop_task(t, now_ms, out);
        else t->stop_given_up = true;
    }
}

void am_fsm_tick(am_fsm *f, long long now_ms, am_actions *out) {
    if (f->state == AM_JOB_DONE || f->state == AM_JOB_NEW) return;
    const tony_plan *p = f->job.plan;
    if (p->app_timeout_ms > 0 && now_ms - f->started_ms > p->app_timeout_ms && !f->timed_out) {
        f->timed_out = true;
        if (p->single_node) {
            if (f->single_running) emit(out, AM_ACT_STOP, NULL, 1, "tony.application.timeout");
        } else {
            end_attempt(&f->job, AM_FINAL_FAILED, "Application timed out after %lld ms (tony.application.timeout)",
                        p->app_timeout_ms);
        }
    }
    if (p->single_node) {
        if (f->single_running && p->execution_timeout_ms > 0 && now_ms - f->started_ms > p->execution_timeout_ms &&
            !f->timed_out) {
            f->timed_out = true;
            emit(out, AM_ACT_STOP, NULL, 1, "the command ran longer than its execution timeout");
        }
        return;
    }
    /* Once the attempt is decided, silence means nothing more: the tasks
     * are being stopped. */
    if (!f->job.attempt_over) {
        check_heartbeats(f, now_ms, out);
        check_registration(&f->job, now_ms);
    } else {
        retry_stops(&f->job, now_ms, out);
    }
    advance(f, now_ms, out);
}

void am_fsm_single_started(am_fsm *f) {
    f->single_running = true;
    f->state = AM_JOB_RUNNING;
}

void am_fsm_single_exited(am_fsm *f, int code, long long now_ms, am_actions *out) {
    f->single_running = false;
    if (f->killed) {
        finish(f, AM_FINAL_KILLED, "Killed by the user", now_ms, out);
        return;
    }
    char meaning[160], *diag;
    if (f->timed_out) diag = tony_strdup("Timed out (tony.application.timeout or tony.worker.timeout)");
    else if (code == 0) diag = tony_strdup("Single node training succeeded");
    else diag = tony_sprintf("Single node training failed: %s", tony_exit_status_meaning(code, meaning, sizeof meaning));
    finish(f, code == 0 && !f->timed_out ? AM_FINAL_SUCCEEDED : AM_FINAL_FAILED, diag, now_ms, out);
    free(diag);
}

void am_fsm_fail_job(am_fsm *f, const char *why, long long now_ms, am_actions *out) {
    finish(f, AM_FINAL_FAILED, why, now_ms, out);
}

void am_fsm_abandon(am_fsm *f, long long now_ms, am_actions *out) {
    finish(f, AM_FINAL_KILLED, "the coordinator stopped before the job ended", now_ms, out);
}
