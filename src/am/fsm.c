/* The coordinator's state machine: every change of the job's or a task's
 * state, as events in and actions out (see fsm.h). TonY's completion rules
 * (contract §3.5) decide what a container's exit means; ours add lock-step
 * training, stop retries and the executor's own stop. */
#include "am/fsm.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "am/policy.h"
#include "backend/backend.h"
#include "common/jobjson.h"
#include "common/strv.h"
#include "conf/keys.h"

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
    case AM_JOB_NEW: return JOB_STATE_NEW;
    case AM_JOB_REGISTERING: return JOB_STATE_REGISTERING;
    case AM_JOB_RUNNING: return JOB_STATE_RUNNING;
    case AM_JOB_FINISHING: return JOB_STATE_FINISHING;
    case AM_JOB_BACKOFF: return JOB_STATE_BACKOFF;
    case AM_JOB_DONE: return JOB_STATE_FINISHED;
    }
    return "?";
}

const char *am_final_status_name(am_final_status s) {
    switch (s) {
    case AM_FINAL_SUCCEEDED: return JOB_FINAL_STATUS_SUCCEEDED;
    case AM_FINAL_FAILED: return JOB_FINAL_STATUS_FAILED;
    case AM_FINAL_KILLED: return JOB_FINAL_STATUS_KILLED;
    default: return JOB_FINAL_STATUS_UNDEFINED;
    }
}

const char *am_attempt_end_name(am_attempt_end e) {
    switch (e) {
    case AM_END_SUCCEEDED: return JOB_END_SUCCEEDED;
    case AM_END_FAILED: return JOB_END_FAILED;
    case AM_END_KILLED: return JOB_END_KILLED;
    case AM_END_RESIZED: return JOB_END_RESIZED;
    case AM_END_NONE: break;
    }
    return NULL;
}

/* Answers found by a walk, kept until a task they depend on changes
 * (tally marks them stale): which task an elastic attempt's failure comes
 * from (loss_root's walk), and the first task whose failure is permanent. */
struct am_fsm_memo {
    bool loss_known;
    am_task *loss;
    bool permanent_known;
    const am_task *permanent;
};

static bool task_gone(const am_task *t);
static bool left_unannounced(const am_task *t);
static long long in_place_stop_ms(const tony_plan *p);
static am_task *loss_walk(const am_job *j);
static void rank_world(am_job *j);

static unsigned bit(am_tally k, bool on) { return on ? 1u << k : 0u; }

/* The counts of job.h's am_tally that t belongs in now. */
static unsigned task_bits(const am_fsm *f, const am_task *t) {
    bool done = am_task_done(t), live = am_task_live(t), asked = t->state != AM_TASK_NEW;
    bool tracked = t->role->kind == TONY_ROLE_TRACKED, prepare = t->role->stage == TONY_STAGE_PREPARE;
    bool unstopped = live && t->stop_tries == 0, kept = done && am_fsm_may_keep(f, t), told = t->stop_asked_ms != 0;
    return bit(AM_TALLY_REQUESTED, asked && !t->out) | bit(AM_TALLY_MISSING, asked && !t->out && !t->host && !done) |
           bit(AM_TALLY_NEW_PREPARE, !asked && !t->out && prepare) |
           bit(AM_TALLY_NEW_LATER, !asked && !t->out && !prepare) |
           bit(AM_TALLY_PREPARE_OPEN, prepare && tracked && !done) |
           bit(AM_TALLY_TRACKED_OPEN, tracked && !done && !t->out) | bit(AM_TALLY_LIVE, live) |
           bit(AM_TALLY_UNSETTLED, live && !kept) | bit(AM_TALLY_TO_STOP, unstopped && !kept && !told) |
           bit(AM_TALLY_KEPT, unstopped && kept && !told) | bit(AM_TALLY_STOP_ASKED, unstopped && !kept && told) |
           bit(AM_TALLY_KEPT_ASKED, unstopped && kept && told) | bit(AM_TALLY_PERMANENT, t->permanent != NULL) |
           bit(AM_TALLY_WORLD, !t->out) | bit(AM_TALLY_OUT, t->out) | bit(AM_TALLY_GONE, !t->out && task_gone(t)) |
           bit(AM_TALLY_COMING, !t->out || live) | bit(AM_TALLY_REJOINABLE, t->out && !live && !t->stop_given_up) |
           bit(AM_TALLY_LOSS, !t->out && !t->permanent && t->role->kind != TONY_ROLE_SIDECAR && left_unannounced(t));
}

/* After any change to t: its counts, and what the change makes due. */
static void tally(am_fsm *f, am_task *t) {
    unsigned was = t->tallied, now = task_bits(f, t);
    unsigned changed = am_job_tally(&f->job, t, now);
    /* a loss candidate changed (its end's time too): loss_root walks again */
    if ((was | now) & bit(AM_TALLY_LOSS, true)) f->memo->loss_known = false;
    if (changed & bit(AM_TALLY_PERMANENT, true)) f->memo->permanent_known = false;
    if (changed & (bit(AM_TALLY_COMING, true) | bit(AM_TALLY_REJOINABLE, true))) f->rejoin_due_ms = 0;
    /* a task told to stop in place whose wait was not counted in stop_due_ms */
    if (changed & now & bit(AM_TALLY_STOP_ASKED, true)) {
        long long due = t->stop_asked_ms + in_place_stop_ms(f->job.plan);
        if (!f->stop_due_ms || due < f->stop_due_ms) f->stop_due_ms = due;
    }
}

static void tally_all(am_fsm *f) {
    for (size_t i = 0; i < f->job.ntasks; i++) tally(f, &f->job.tasks[i]);
}

int am_fsm_check_counts(const am_fsm *f, tony_error *err) {
    const am_job *j = &f->job;
    int counts[AM_TALLY_N] = {0}, registered = 0;
    int *roles = tony_xcalloc(j->plan->nroles + 1, AM_TALLY_N * sizeof *roles);
    int rc = 0;
    for (size_t i = 0; i < j->ntasks && rc == 0; i++) {
        const am_task *t = &j->tasks[i];
        unsigned bits = task_bits(f, t);
        registered += t->host != NULL;
        if (bits != t->tallied)
            rc = tony_err(err, "task %s:%d is counted as %#x but is %#x now: a change to it was not tallied",
                          t->role->name, t->index, t->tallied, bits);
        for (int k = 0; k < AM_TALLY_N; k++) {
            counts[k] += !!(bits & (1u << k));
            roles[(size_t)(t->role - j->plan->roles) * AM_TALLY_N + (size_t)k] += !!(bits & (1u << k));
        }
    }
    for (int k = 0; k < AM_TALLY_N && rc == 0; k++)
        if (counts[k] != j->tally[k]) rc = tony_err(err, "count %d is %d, a walk says %d", k, j->tally[k], counts[k]);
    for (size_t k = 0; k < j->plan->nroles * AM_TALLY_N && rc == 0; k++)
        if (roles[k] != j->role_tally[k])
            rc = tony_err(err, "role %zu's count %zu is %d, a walk says %d", k / AM_TALLY_N, k % AM_TALLY_N,
                          j->role_tally[k], roles[k]);
    int *rank = tony_xcalloc(j->plan->nroles + 1, sizeof *rank); /* the next one's, per role */
    for (size_t i = 0; i < j->ntasks && rc == 0; i++) {
        const am_task *t = &j->tasks[i];
        size_t r = (size_t)(t->role - j->plan->roles);
        if (t->world_rank != rank[r])
            rc = tony_err(err, "task %s:%d's world rank is %d, a walk says %d: the world changed unranked",
                          t->role->name, t->index, t->world_rank, rank[r]);
        rank[r] += !t->out;
    }
    free(rank);
    if (rc == 0 && registered != j->nregistered)
        rc = tony_err(err, "nregistered is %d, a walk says %d", j->nregistered, registered);
    if (rc == 0 && f->memo->loss_known && f->memo->loss != loss_walk(j))
        rc = tony_err(err, "the memo of loss_root is stale: a change to a loss candidate did not reset it");
    const am_task *first_permanent = NULL;
    for (size_t i = 0; i < j->ntasks && !first_permanent; i++)
        if (j->tasks[i].permanent) first_permanent = &j->tasks[i];
    if (rc == 0 && f->memo->permanent_known && f->memo->permanent != first_permanent)
        rc = tony_err(err, "the memo of permanent_reason is stale");
    free(roles);
    return rc;
}

void am_fsm_init(am_fsm *f, const tony_plan *plan, long long barrier_poll_ms, long long now_ms) {
    memset(f, 0, sizeof *f);
    am_job_init(&f->job, plan);
    f->job.barrier_poll_ms = barrier_poll_ms;
    f->retries_left = plan->retry_count;
    am_exclusion_init(&f->exclusion, plan->max_excluded_nodes);
    f->in_place = plan->restart_in_place;
    f->world_target = tony_xcalloc(plan->nroles + 1, sizeof *f->world_target);
    for (size_t r = 0; r < plan->nroles; r++) f->world_target[r] = plan->roles[r].instances;
    f->started_ms = now_ms;
    f->state = AM_JOB_NEW;
    f->memo = tony_xcalloc(1, sizeof *f->memo);
    tally_all(f);
    rank_world(&f->job);
}

void am_fsm_free(am_fsm *f) {
    am_job_free(&f->job);
    free(f->diagnostics);
    free(f->permanent);
    free(f->world_note);
    free(f->world_target);
    free(f->ends);
    free(f->memo);
    am_cause_free(&f->root_cause);
    am_exclusion_free(&f->exclusion);
    memset(f, 0, sizeof *f);
}

/* Whether the task's container, still there, is kept for the next attempt
 * (in-place restarts): its executor stopped its process itself and waits. */
static bool kept_for_next(const am_fsm *f, const am_task *t) {
    return f->in_place && am_task_live(t) && t->stop_tries == 0 && am_task_done(t) && am_fsm_may_keep(f, t);
}

static void note_failure(am_fsm *f, am_task *t, long long when_ms);
static void end_recovery(am_fsm *f, long long now_ms, am_actions *out);
static void advance(am_fsm *f, long long now_ms, am_actions *out);
static void take_registration(am_job *j, am_task *t, const am_registration *r, long long now_ms);

/* t starts anew (NEW), with a line in its runs on the container it had;
 * what stays across attempts (its identity, its place in the world) stays. */
static void renew_task(am_job *j, am_task *t) {
    am_task_run *runs = t->runs;
    size_t nruns = t->nruns;
    if (t->state != AM_TASK_NEW) {
        runs = tony_xrealloc(runs, (nruns + 1) * sizeof *runs);
        runs[nruns++] = (am_task_run){j->attempt, t->state, t->exit_status, t->started_ms != 0,
                                      t->log_url ? tony_strdup(t->log_url) : NULL};
    }
    am_task kept = *t;
    if (t->host) {
        j->nregistered--;
        j->hosts_version++;
    }
    am_task_clear(t);
    memset(t, 0, sizeof *t);
    t->runs = runs;
    t->nruns = nruns;
    t->role = kept.role;
    t->index = kept.index;
    t->out = kept.out;
    t->rejoin_planned = kept.rejoin_planned;
    t->rejoin_at_ms = kept.rejoin_at_ms;
    t->rejoin_tries = kept.rejoin_tries;
    t->tallied = kept.tallied; /* what it is counted in until its caller tallies it anew */
    t->world_rank = kept.world_rank;
    t->exit_status = TONY_EXIT_INVALID;
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
        renew_task(j, t);
        if (keep) {
            t->state = AM_TASK_REQUESTED;
            t->requested_ms = now_ms;
            t->container_attempt = container_attempt;
        }
        tally(f, t);
    }
    j->attempt = attempt;
    j->first_failed = NULL;
    f->memo->loss_known = false;
    f->stop_due_ms = 0;
    f->stop_walk_mode = 0;
    f->rejoin_due_ms = 0;
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
        if (t->role->kind != TONY_ROLE_TRACKED || t->out) continue;
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
    /* the last attempt's end, unless a failure already decided it (a job
     * killed while waiting to restart: its last attempt failed) */
    if (f->attempt_end == AM_END_NONE)
        f->attempt_end = status == AM_FINAL_SUCCEEDED ? AM_END_SUCCEEDED
                         : status == AM_FINAL_KILLED  ? AM_END_KILLED
                                                      : AM_END_FAILED;
    /* executors still polling at the barrier learn that it is over */
    emit(out, AM_ACT_RELEASE_GANG, NULL, 0, NULL);
    emit(out, AM_ACT_FINISH, NULL, 0, NULL);
}

static bool containers_gone(const am_job *j) { return j->tally[AM_TALLY_LIVE] == 0; }

/* A task asked for whose executor has not registered, and still may (one
 * that ended unregistered, like an ignored sidecar, never will). */
static bool awaiting_registration(const am_job *j) { return j->tally[AM_TALLY_MISSING] > 0; }

static void stop_task(am_fsm *f, am_task *t, long long now_ms, am_actions *out) {
    t->stop_tries++;
    t->stop_ms = now_ms;
    tally(f, t);
    emit(out, AM_ACT_STOP, t, t->stop_tries, NULL);
}

/* Why this attempt's failure must not be retried whatever the policy: the
 * first failed task's own reason, else any task's, else the attempt's. */
static const char *permanent_reason(const am_fsm *f) {
    const am_job *j = &f->job;
    if (j->first_failed && j->first_failed->permanent) return j->first_failed->permanent;
    if (j->tally[AM_TALLY_PERMANENT] > 0 && !f->memo->permanent_known) {
        f->memo->permanent = NULL;
        for (size_t i = 0; i < j->ntasks && !f->memo->permanent; i++)
            if (j->tasks[i].permanent) f->memo->permanent = &j->tasks[i];
        f->memo->permanent_known = true;
    }
    if (j->tally[AM_TALLY_PERMANENT] > 0 && f->memo->permanent) return f->memo->permanent->permanent;
    return f->permanent;
}

/* How long the attempt's processes ran before it failed: from the first
 * one that started to its first failure. An attempt whose processes never
 * started (its containers or executors failed) ran for nothing. */
static long long attempt_ran_ms(const am_job *j, long long now_ms) {
    long long first = 0;
    for (size_t i = 0; i < j->ntasks; i++) {
        long long s = j->tasks[i].started_ms;
        if (s && (!first || s < first)) first = s;
    }
    if (!first) return 0;
    long long end = j->first_failed ? j->first_failed_ms : now_ms;
    return end > first ? end - first : 0;
}

/* ---- Elastic jobs: the world's membership (fsm.h) ---- */

/* Each task's rank among its role's tasks in the world (the tasks that
 * left are skipped): ranked once per change of the world, since every
 * task's answer asks for its own. */
static void rank_world(am_job *j) {
    int *next = tony_xcalloc(j->plan->nroles + 1, sizeof *next);
    for (size_t i = 0; i < j->ntasks; i++) {
        am_task *t = &j->tasks[i];
        size_t r = (size_t)(t->role - j->plan->roles);
        t->world_rank = next[r];
        next[r] += !t->out;
    }
    free(next);
}

int am_fsm_world_index(const am_job *j, const am_task *t) {
    (void)j;
    return t->world_rank;
}

int am_fsm_world_count(const am_job *j, const tony_role *r) { return am_job_role_tally(j, r, AM_TALLY_WORLD); }

/* A task of the world whose container or executor is gone (not a process
 * that failed in a container that stays): its replacement is to be asked for. */
static bool task_gone(const am_task *t) {
    return t->state == AM_TASK_FAILED && (t->lost || (t->exited && !t->result_reported));
}

/* t's container ended and its executor with it: lost (task_gone), or
 * ended while asked to stop its process in place, without our stopping
 * the container and without its executor's report (it died first). */
static bool left_unannounced(const am_task *t) {
    return task_gone(t) ||
           (t->state == AM_TASK_FINISHED && t->exited && !t->result_reported && t->stop_tries == 0);
}

/* The loss an elastic attempt's failure comes from: its first failure
 * when that task is gone; else a task gone no later than the settle time
 * after it (the peers of a lock-step training fail the moment a task dies,
 * often before the backend tells of its container). NULL: none. */
static am_task *loss_walk(const am_job *j) {
    am_task *root = NULL;
    for (size_t i = 0; i < j->ntasks; i++) {
        am_task *t = &j->tasks[i];
        if (!(t->tallied & bit(AM_TALLY_LOSS, true))) continue;
        if (t->finished_ms > j->first_failed_ms + j->plan->elastic_settle_ms) continue;
        if (!root || t->finished_ms < root->finished_ms) root = t;
    }
    return root;
}

static am_task *loss_root(const am_fsm *f) {
    const am_job *j = &f->job;
    am_task *first = j->first_failed;
    if (!first || first->out || first->permanent) return NULL;
    if (task_gone(first)) return first;
    if (j->tally[AM_TALLY_LOSS] == 0) return NULL;
    /* asked on every exit of an ending attempt: walked again only once a
     * candidate or the first failure changed */
    if (!f->memo->loss_known) {
        f->memo->loss = loss_walk(j);
        f->memo->loss_known = true;
    }
    return f->memo->loss;
}

/* Whether an elastic attempt's failure may yet turn out to be a loss. */
static bool may_be_loss(const am_fsm *f) {
    const am_job *j = &f->job;
    return j->plan->elastic && j->attempt_over && j->attempt_status == AM_FINAL_FAILED && !f->killed &&
           !f->timed_out && !f->recover_failed && !f->permanent && !f->reworld && j->first_failed &&
           !j->first_failed->out && !j->first_failed->permanent;
}

/* The attempt failed because a task of the world was lost (loss_root: the
 * peers' failures around it are its consequence) and its role keeps its
 * minimum without the tasks gone: the next attempt goes on in place at
 * once, on the world's account (it spends no retry and waits no backoff),
 * awaiting the replacements for the settle time. Anything else is the
 * restart policy's to judge. */
static bool world_loss(const am_fsm *f) {
    const am_job *j = &f->job;
    if (!may_be_loss(f)) return false;
    const am_task *root = loss_root(f);
    if (!root) return false;
    int gone = am_job_role_tally(j, root->role, AM_TALLY_GONE);
    return am_fsm_world_count(j, root->role) - gone >= root->role->min_instances;
}

/* Still waiting for the news of a loss (loss_wait_ms, fsm.h). */
static bool awaiting_loss(const am_fsm *f) {
    return f->in_place && !f->loss_wait_over && may_be_loss(f) && !loss_root(f);
}

/* t leaves the world. A container whose executor has not registered yet
 * stays asked for: when it comes, the world grows back to it; one whose
 * executor is there (scaled down) is stopped. */
static void leave_world(am_fsm *f, am_task *t, tony_buf *who, long long now_ms, am_actions *out) {
    t->out = true;
    t->rejoin_planned = false;
    tally(f, t);
    tony_buf_printf(who, "%s%s:%d", who->len ? ", " : "", t->role->name, t->index);
    if (am_task_live(t) && t->stop_tries == 0 && t->host) stop_task(f, t, now_ms, out);
}

/* The world changed (`what` says who left or joined, and why): its
 * version, a note for the record, and the gang goes once those in the
 * world are all there. */
static void world_changed(am_fsm *f, const char *what, long long now_ms, am_actions *out) {
    am_job *j = &f->job;
    f->world_version++;
    f->settle_at_ms = 0;
    rank_world(j);
    tony_buf sizes = {0};
    int size = 0;
    for (size_t r = 0; r < j->plan->nroles; r++) {
        const tony_role *role = &j->plan->roles[r];
        int n = am_fsm_world_count(j, role);
        size += n;
        tony_buf_printf(&sizes, "%s%s %d of %d (min %d)", sizes.len ? ", " : "", role->name, n, role->instances,
                        role->min_instances);
    }
    free(f->world_note);
    f->world_note = tony_sprintf("%s; world %d is %d task(s): %s", what, f->world_version, size, sizes.data);
    tony_buf_free(&sizes);
    emit(out, AM_ACT_WORLD, NULL, 0, NULL);
    if (!j->attempt_over && am_job_gang_ready(j)) emit(out, AM_ACT_RELEASE_GANG, NULL, 0, NULL);
    advance(f, now_ms, out);
}

/* Whether every role keeps its minimum in the world without the tasks
 * the barrier still waits for (asked for, not there: leaving NULL), or
 * without `leaving`. */
static bool keeps_minimum(const am_job *j, const am_task *leaving) {
    for (size_t r = 0; r < j->plan->nroles; r++) {
        const tony_role *role = &j->plan->roles[r];
        int n = am_job_role_tally(j, role, AM_TALLY_WORLD);
        if (!leaving) n -= am_job_role_tally(j, role, AM_TALLY_MISSING);
        else n -= leaving->role == role && !leaving->out;
        if (n < role->min_instances) return false;
    }
    return true;
}

/* A task of the world the barrier still waits for: asked for, not there. */
static bool missing(const am_task *t) { return (t->tallied & bit(AM_TALLY_MISSING, true)) != 0; }

/* The barrier has waited the settle time: the tasks still missing leave
 * the world, where every role keeps its minimum without them. */
static void settle_world(am_fsm *f, long long now_ms, am_actions *out) {
    am_job *j = &f->job;
    if (!f->settle_at_ms || now_ms < f->settle_at_ms || j->attempt_over || f->recovering) return;
    if (am_job_gang_ready(j)) {
        f->settle_at_ms = 0;
        return;
    }
    if (!keeps_minimum(j, NULL)) return; /* below the minimum: as without elasticity */
    tony_buf who = {0};
    for (size_t i = 0; i < j->ntasks; i++)
        if (missing(&j->tasks[i])) leave_world(f, &j->tasks[i], &who, now_ms, out);
    char *what = tony_sprintf("%s left the world (not there %lld ms after the attempt started "
                              "(tony.application.elastic-settle-ms))",
                              who.data, j->plan->elastic_settle_ms);
    world_changed(f, what, now_ms, out);
    free(what);
    tony_buf_free(&who);
}

/* t's container ended before its executor registered (a replacement that
 * cannot start): in an elastic job it leaves the world at once where its
 * role keeps its minimum without it, instead of failing the attempt. */
static bool leaves_unregistered(am_fsm *f, am_task *t, long long now_ms, am_actions *out) {
    am_job *j = &f->job;
    if (!j->plan->elastic || t->host || t->out || j->attempt_over || f->recovering ||
        t->role->kind == TONY_ROLE_SIDECAR || !keeps_minimum(j, t))
        return false;
    tony_buf who = {0};
    leave_world(f, t, &who, now_ms, out);
    char *what = tony_sprintf("%s left the world (its container ended before it registered)", who.data);
    world_changed(f, what, now_ms, out);
    free(what);
    tony_buf_free(&who);
    return true;
}

static size_t role_no(const am_job *j, const tony_role *r) { return (size_t)(r - j->plan->roles); }

/* A task out of the world whose executor registered: it waits to join. */
static bool joining(const am_task *t) { return t->out && t->host && !am_task_done(t) && am_task_live(t); }

/* A task of role r that is in the world or on its way there (a container
 * asked for it, or its executor waiting to join). */
static bool in_or_coming(const am_task *t) { return !t->out || am_task_live(t); }

/* How long a task out of the world waits before it is asked for again:
 * the settle time, doubled for each try that did not bring it back. */
static long long rejoin_backoff_ms(const tony_plan *p, int tries) {
    int shift = tries < AM_FSM_REJOIN_MAX_SHIFT ? tries : AM_FSM_REJOIN_MAX_SHIFT;
    long long base = p->elastic_settle_ms > 0 ? p->elastic_settle_ms : 1;
    return base << shift;
}

/* Growing back: tasks out of the world with no container are asked for
 * again, lowest index first, while their role has fewer tasks in the
 * world or coming than its target; each after its backoff. A relaunch in
 * the same attempt starts the task anew (its last container's line kept
 * in its runs). */
static void ask_rejoin(am_fsm *f, long long now_ms, am_actions *out) {
    am_job *j = &f->job;
    /* Asked after every event: walked again only once a task came or went
     * (tally), a target changed, or a planned time came. */
    if (now_ms < f->rejoin_due_ms) return;
    f->rejoin_due_ms = LLONG_MAX;
    for (size_t r = 0; r < j->plan->nroles; r++) {
        const tony_role *role = &j->plan->roles[r];
        int have = am_job_role_tally(j, role, AM_TALLY_COMING);
        if (have >= f->world_target[r] || am_job_role_tally(j, role, AM_TALLY_REJOINABLE) == 0) continue;
        for (size_t i = 0; i < j->ntasks && have < f->world_target[r]; i++) {
            am_task *t = &j->tasks[i];
            if (t->role != role || in_or_coming(t) || t->stop_given_up) continue;
            have++;
            if (!t->rejoin_planned) {
                t->rejoin_planned = true;
                t->rejoin_at_ms = now_ms + rejoin_backoff_ms(j->plan, t->rejoin_tries);
            }
            if (now_ms < t->rejoin_at_ms) {
                if (t->rejoin_at_ms < f->rejoin_due_ms) f->rejoin_due_ms = t->rejoin_at_ms;
                continue;
            }
            renew_task(j, t);
            t->rejoin_planned = false;
            t->rejoin_tries++;
            t->state = AM_TASK_REQUESTED;
            t->requested_ms = now_ms;
            t->container_attempt = j->attempt;
            long long due = f->rejoin_due_ms;
            tally(f, t);
            f->rejoin_due_ms = due; /* this walk saw it */
            emit(out, AM_ACT_REQUEST, t, 0, NULL);
        }
    }
}

/* The tasks waiting to join do, once grow_at_ms came, as far as their
 * role's target allows (the others' containers are stopped). A world
 * whose gang went already restarts in place with them (reworld); one
 * still at the barrier takes them in. */
static void grow_world(am_fsm *f, long long now_ms, am_actions *out) {
    am_job *j = &f->job;
    if (!f->grow_at_ms || now_ms < f->grow_at_ms || j->attempt_over || f->recovering) return;
    f->grow_at_ms = 0;
    bool live = am_job_gang_ready(j);
    tony_buf who = {0};
    for (size_t i = 0; i < j->ntasks; i++) {
        am_task *t = &j->tasks[i];
        if (!joining(t)) continue;
        if (am_fsm_world_count(j, t->role) >= f->world_target[role_no(j, t->role)]) {
            if (t->stop_tries == 0) stop_task(f, t, now_ms, out);
            continue;
        }
        t->out = false;
        t->rejoin_tries = 0;
        tally(f, t);
        tony_buf_printf(&who, "%s%s:%d", who.len ? ", " : "", t->role->name, t->index);
    }
    if (who.len) {
        char *what = tony_sprintf("%s joined the world", who.data);
        if (live) {
            f->reworld = true;
            end_attempt(j, AM_FINAL_FAILED, "%s: the world's tasks restart in place in the larger world", what);
        }
        world_changed(f, what, now_ms, out);
        free(what);
    }
    tony_buf_free(&who);
}

/* An executor of a task out of the world registers (its container came):
 * it waits to join, the first one starting the settle time's batch. */
static am_reg_result join_request(am_fsm *f, am_task *t, const am_registration *r, long long now_ms) {
    if (t->host) {
        t->last_heartbeat_ms = now_ms;
        t->polling = joining(t);
        return joining(t) ? AM_REG_AGAIN : AM_REG_ENDING;
    }
    if (t->state != AM_TASK_REQUESTED || t->exited) return AM_REG_ENDING;
    take_registration(&f->job, t, r, now_ms);
    t->state = AM_TASK_REGISTERED;
    t->last_heartbeat_ms = now_ms;
    t->polling = true;
    tally(f, t);
    if (!f->grow_at_ms) f->grow_at_ms = now_ms + f->job.plan->elastic_settle_ms;
    return AM_REG_NEW;
}

am_scale_result am_fsm_scale(am_fsm *f, const char *name, int n, long long now_ms, am_actions *out, tony_error *err) {
    am_job *j = &f->job;
    const tony_plan *p = j->plan;
    if (f->state == AM_JOB_DONE) {
        tony_err(err, "the job is over");
        return AM_SCALE_BUSY;
    }
    if (!p->elastic) {
        tony_err(err, "the job is not elastic: submit it with tony.<role>.min-instances below tony.<role>.instances "
                      "to scale it (docs/elastic.md)");
        return AM_SCALE_BAD;
    }
    const tony_role *role = tony_plan_role(p, name);
    if (!role) {
        tony_buf names = {0};
        for (size_t r = 0; r < p->nroles; r++) tony_buf_printf(&names, "%s%s", r ? ", " : "", p->roles[r].name);
        tony_err(err, "the job has no role '%s' (its roles: %s)", name, names.data);
        tony_buf_free(&names);
        return AM_SCALE_BAD;
    }
    if (n < role->min_instances || n > role->instances) {
        tony_err(err, "%s=%d is out of bounds: the job runs %d to %d %s task(s) (tony.%s.min-instances is %d, "
                      "tony.%s.instances is %d)",
                 name, n, role->min_instances, role->instances, name, name, role->min_instances, name,
                 role->instances);
        return AM_SCALE_BAD;
    }
    if (j->attempt_over || f->restarting || f->recovering || f->state == AM_JOB_NEW) {
        tony_err(err, "the job is between attempts; try again in a moment");
        return AM_SCALE_BUSY;
    }
    size_t r = role_no(j, role);
    f->world_target[r] = n;
    f->rejoin_due_ms = 0; /* growing back walks again for the new target */
    bool live = am_job_gang_ready(j);
    int count = am_fsm_world_count(j, role);
    tony_buf who = {0};
    for (size_t i = j->ntasks; i-- > 0 && count > n;) {
        am_task *t = &j->tasks[i];
        if (t->role != role || t->out) continue;
        leave_world(f, t, &who, now_ms, out);
        if (am_task_live(t) && t->stop_tries == 0) stop_task(f, t, now_ms, out);
        count--;
    }
    /* those on their way beyond the target are not waited for; those
     * wanted are asked for at once */
    int have = count;
    for (size_t i = 0; i < j->ntasks; i++) {
        am_task *t = &j->tasks[i];
        if (t->role != role || !t->out) continue;
        if (am_task_live(t)) {
            if (have >= n && t->stop_tries == 0) stop_task(f, t, now_ms, out);
            have++;
        } else {
            t->rejoin_planned = true;
            t->rejoin_at_ms = now_ms;
            t->rejoin_tries = 0;
        }
    }
    if (who.len) {
        char *what = tony_sprintf("%s left the world (tony scale %s=%d)", who.data, name, n);
        if (live) {
            f->reworld = true;
            end_attempt(j, AM_FINAL_FAILED, "%s: the world's tasks restart in place in the smaller world", what);
        }
        world_changed(f, what, now_ms, out);
        free(what);
    } else {
        advance(f, now_ms, out);
    }
    tony_buf_free(&who);
    return AM_SCALE_OK;
}

/* The attempt failed and every container has ended: the restart policy
 * (policy.h) decides between the end and another attempt after its backoff
 * (none for a first failure: only crash loops wait), waited for in
 * AM_JOB_BACKOFF on ticks. The diagnostics name the first
 * task to fail and its last words (cause.h), and say why no retry came. */
static void after_failure(am_fsm *f, long long now_ms, am_actions *out) {
    am_job *j = &f->job;
    const tony_plan *p = j->plan;
    if (f->state == AM_JOB_BACKOFF) {
        /* killed or out of time while waiting: the last attempt stands */
        char *d = NULL;
        if (f->killed) d = tony_sprintf("Killed by the user while waiting to restart. The last attempt: %s",
                                        j->attempt_diagnostics);
        else if (f->timed_out)
            d = tony_sprintf("Application timed out after %lld ms (tony.application.timeout) while waiting to "
                             "restart. The last attempt: %s", p->app_timeout_ms, j->attempt_diagnostics);
        if (d) {
            finish(f, f->killed ? AM_FINAL_KILLED : AM_FINAL_FAILED, d, now_ms, out);
            free(d);
            return;
        }
        if (now_ms < f->restart_at_ms) return;
        f->retries_left--;
        f->restarting = true;
        emit(out, AM_ACT_RESTART, NULL, 0, NULL);
        return;
    }
    bool lost = !f->reworld && world_loss(f);
    if (lost) j->first_failed = loss_root(f); /* the root cause: its peers failed for it */
    if (j->first_failed) am_cause_set(&f->root_cause, j->first_failed, j->attempt);
    if (f->reworld || lost) {
        /* a change of the world's membership, not a failure (a lost task's
         * own end stays FAILED) */
        f->attempt_end = AM_END_RESIZED;
        char *d = f->reworld ? tony_strdup(j->attempt_diagnostics ? j->attempt_diagnostics : "") : tony_sprintf("%s\nThe job is elastic and %s keeps its minimum of %d without %s:%d: it goes on in "
                               "place, waiting up to %lld ms for a replacement (tony.application.elastic-settle-ms)",
                               j->attempt_diagnostics ? j->attempt_diagnostics : "", j->first_failed->role->name,
                               j->first_failed->role->min_instances, j->first_failed->role->name,
                               j->first_failed->index, p->elastic_settle_ms);
        free(j->attempt_diagnostics);
        j->attempt_diagnostics = d;
        f->retries_left++; /* the world's account, spent again at once below */
        f->state = AM_JOB_BACKOFF;
        f->restart_at_ms = now_ms;
        after_failure(f, now_ms, out);
        return;
    }
    f->attempt_end = AM_END_FAILED;
    am_failure fl = {.role = j->first_failed ? j->first_failed->role : NULL,
                     .exit_status = j->first_failed ? j->first_failed->exit_status : TONY_EXIT_INVALID,
                     .permanent = permanent_reason(f), .killed = f->killed, .timed_out = f->timed_out,
                     .coordinator_lost = f->recover_failed,
                     .never_ran = j->first_failed && !am_cause_command_ran(j->first_failed)};
    char *why = NULL, *cause = j->first_failed ? am_cause_text(&f->root_cause) : NULL;
    bool retry = am_policy_should_retry(p, &fl, f->retries_left, &why);
    const char *diag = j->attempt_diagnostics ? j->attempt_diagnostics : "";
    char *d = tony_sprintf("%s%s%s%s%s", diag, why ? "\n" : "", why ? why : "", cause ? "\n" : "", cause ? cause : "");
    free(why);
    free(cause);
    if (!retry) {
        finish(f, AM_FINAL_FAILED, d, now_ms, out);
        free(d);
        return;
    }
    /* the restart's record and a following client tell the root cause */
    free(j->attempt_diagnostics);
    j->attempt_diagnostics = d;
    f->state = AM_JOB_BACKOFF;
    f->quick_failures = am_policy_quick_failures(p, f->quick_failures, attempt_ran_ms(j, now_ms));
    f->restart_at_ms = now_ms + am_policy_backoff_ms(p, f->quick_failures);
    after_failure(f, now_ms, out); /* no wait at all: at once */
}

/* The decided attempt failed and another one follows (the restart policy
 * says so, policy.h; or its backoff is being waited out), so that healthy
 * containers may be kept for it (in place). after_failure makes the same
 * decision, once every container of the attempt is settled. */
static bool restart_due(const am_fsm *f) {
    const am_job *j = &f->job;
    if (!j->attempt_over || j->attempt_status != AM_FINAL_FAILED || f->killed || f->timed_out) return false;
    if (f->state == AM_JOB_BACKOFF || f->reworld || world_loss(f) || awaiting_loss(f)) return true;
    am_failure fl = {.role = j->first_failed ? j->first_failed->role : NULL,
                     .exit_status = j->first_failed ? j->first_failed->exit_status : TONY_EXIT_INVALID,
                     .permanent = permanent_reason(f), .killed = f->killed, .timed_out = f->timed_out,
                     .coordinator_lost = f->recover_failed,
                     .never_ran = j->first_failed && !am_cause_command_ran(j->first_failed)};
    char *why = NULL;
    bool retry = am_policy_should_retry(j->plan, &fl, f->retries_left, &why);
    free(why);
    return retry;
}

/* How long an executor told to stop its process in place has before its
 * container is stopped instead: until its next heartbeat, its stop's grace
 * (SIGTERM, then SIGKILL of the group) and its report. */
static long long in_place_stop_ms(const tony_plan *p) { return p->heartbeat_interval_ms + AM_FSM_IN_PLACE_STOP_MS; }

bool am_fsm_may_keep(const am_fsm *f, const am_task *t) {
    /* A training-stage task starts only once the prepare stage is done:
     * its container is asked for anew then, not kept waiting. */
    if (f->job.plan->has_stages && t->role->stage != TONY_STAGE_PREPARE) return false;
    /* A container on a node excluded meanwhile (exclusion.h) is not kept,
     * where its node is known; nor one whose task's output says its node
     * is bad (an exclude-node log policy): its end names the node. */
    if (t->node && am_exclusion_has(&f->exclusion, t->node)) return false;
    if (t->log_exclude) return false;
    /* Only a container whose executor registered and still answers can
     * start the next attempt's process. */
    return t->host != NULL && !t->lost && !t->exited && !t->stop_given_up && t->stop_tries == 0;
}

bool am_fsm_keeps_container(const am_fsm *f, const am_task *t) {
    if (!f->in_place || f->state == AM_JOB_DONE) return false;
    /* once the restart is decided its retry is spent already */
    if (!f->restarting && (f->killed || f->timed_out || (f->retries_left <= 0 && !f->reworld && !world_loss(f) && !awaiting_loss(f)))) return false;
    if (!f->restarting && f->job.attempt_over && !restart_due(f)) return false;
    return am_fsm_may_keep(f, t);
}

/* Leaves the task's executor in_place_stop_ms to do what it was told (stop
 * its process, or exit) before its container is stopped. */
static void stop_later(am_fsm *f, am_task *t, long long now_ms, am_actions *out) {
    if (!t->stop_asked_ms) {
        t->stop_asked_ms = now_ms;
        tally(f, t);
    } else if (now_ms - t->stop_asked_ms > in_place_stop_ms(f->job.plan)) stop_task(f, t, now_ms, out);
}

/* In-place: what the decided attempt still waits for before the next one
 * starts. A kept task's executor stops its process when its watch (or its
 * heartbeat) is answered and reports; one that has not in time has its
 * container stopped (and asked for anew). An executor waiting at the
 * barrier never started its process: it is done at once; one given the go
 * whose "started" has not come yet is starting it, and is stopped as a
 * running one (else its late end would be charged to the next attempt). */
static void stop_in_place(am_fsm *f, am_task *t, long long now_ms, am_actions *out) {
    if (t->state == AM_TASK_REGISTERED && !t->released) {
        t->state = AM_TASK_FINISHED;
        tally(f, t);
    }
    if (!am_task_done(t)) stop_later(f, t, now_ms, out);
}

/* Every task of the decided attempt ended, in a container that is kept,
 * or lost its container; no other container is still there. */
static bool attempt_settled(const am_fsm *f) { return f->job.tally[AM_TALLY_UNSETTLED] == 0; }

/* Whether ending the attempt has something to do to a task now: one not
 * yet stopped, or told to stop (in place), a container no longer kept, a
 * mode that changed, or an in-place stop's wait that ran out. */
static bool stops_due(const am_fsm *f, bool in_place, long long now_ms) {
    const am_job *j = &f->job;
    if (j->tally[AM_TALLY_TO_STOP] > 0 || f->stop_walk_mode != (in_place ? 1 : 2)) return true;
    if (!in_place && j->tally[AM_TALLY_KEPT] > 0) return true;
    int waiting = j->tally[AM_TALLY_STOP_ASKED] + (in_place ? 0 : j->tally[AM_TALLY_KEPT_ASKED]);
    return waiting > 0 && (!f->stop_due_ms || now_ms > f->stop_due_ms);
}

/* The decided attempt's containers: kept for the next attempt in place
 * (their executors told to stop their processes), or stopped. Notes when
 * the first wait of an executor told to stop runs out. */
static void stop_attempt(am_fsm *f, bool in_place, long long now_ms, am_actions *out) {
    am_job *j = &f->job;
    f->stop_walk_mode = in_place ? 1 : 2;
    f->stop_due_ms = 0;
    unsigned waiting = bit(AM_TALLY_STOP_ASKED, true) | (in_place ? 0u : bit(AM_TALLY_KEPT_ASKED, true));
    for (size_t i = 0; i < j->ntasks; i++) {
        am_task *t = &j->tasks[i];
        if (!am_task_live(t) || t->stop_tries > 0) continue;
        if (in_place && am_fsm_may_keep(f, t)) stop_in_place(f, t, now_ms, out);
        /* no next attempt: an executor that reported exits by itself */
        else if (f->in_place && am_task_done(t) && t->result_reported) stop_later(f, t, now_ms, out);
        else stop_task(f, t, now_ms, out);
        if (!(t->tallied & waiting)) continue;
        long long due = t->stop_asked_ms + in_place_stop_ms(j->plan);
        if (!f->stop_due_ms || due < f->stop_due_ms) f->stop_due_ms = due;
    }
}

/* After every event: ask for what may start now, and once the attempt is
 * decided, stop what still runs; when every container has ended, restart
 * or finish. */
static void advance(am_fsm *f, long long now_ms, am_actions *out) {
    if (f->state == AM_JOB_DONE || f->state == AM_JOB_NEW || f->job.plan->single_node || f->restarting) return;
    am_job *j = &f->job;
    if (!j->attempt_over) {
        /* a walk only while a task of the world waits to be asked for and may be now */
        bool to_request = j->tally[AM_TALLY_NEW_PREPARE] > 0 ||
                          (j->tally[AM_TALLY_NEW_LATER] > 0 && j->tally[AM_TALLY_PREPARE_OPEN] == 0);
        for (size_t i = 0; to_request && i < j->ntasks; i++) {
            am_task *t = &j->tasks[i];
            if (!am_job_should_request(j, t)) continue;
            t->state = AM_TASK_REQUESTED;
            t->requested_ms = now_ms;
            t->container_attempt = j->attempt;
            tally(f, t);
            emit(out, AM_ACT_REQUEST, t, 0, NULL);
        }
        if (j->plan->elastic && !f->recovering) ask_rejoin(f, now_ms, out);
        if (am_job_tracked_done(j)) settle(j);
        if (!j->attempt_over) {
            f->state = awaiting_registration(j) ? AM_JOB_REGISTERING : AM_JOB_RUNNING;
            return;
        }
    }
    /* decided while tasks were still coming back (a kill): the rest never will */
    if (f->recovering) end_recovery(f, now_ms, out);
    /* The attempt is decided: untracked and sidecar roles, and anything still
     * running after a failure, are stopped; the next step waits for every
     * container to end so that their final states are known. */
    if (f->state != AM_JOB_FINISHING && f->state != AM_JOB_BACKOFF) {
        f->state = AM_JOB_FINISHING;
        emit(out, AM_ACT_RELEASE_GANG, NULL, 0, NULL);
    }
    if (may_be_loss(f) && !f->loss_wait_ms) f->loss_wait_ms = j->first_failed_ms + j->plan->elastic_settle_ms;
    if (f->loss_wait_ms && now_ms >= f->loss_wait_ms) f->loss_wait_over = true;
    bool in_place = f->in_place && restart_due(f);
    if (stops_due(f, in_place, now_ms)) stop_attempt(f, in_place, now_ms, out);
    if (in_place ? !attempt_settled(f) : !containers_gone(j)) return;
    if (awaiting_loss(f)) return; /* judged on a tick once the wait is over */
    if (j->attempt_status == AM_FINAL_FAILED) {
        after_failure(f, now_ms, out);
        return;
    }
    finish(f, j->attempt_status, j->attempt_diagnostics, now_ms, out);
}

void am_fsm_start(am_fsm *f, long long now_ms, am_actions *out) {
    if (f->state != AM_JOB_NEW) return;
    f->state = AM_JOB_REGISTERING;
    if (f->job.plan->elastic) f->settle_at_ms = now_ms + f->job.plan->elastic_settle_ms;
    advance(f, now_ms, out);
}

/* Where t's executor is and what it reported, once per attempt. */
static void take_registration(am_job *j, am_task *t, const am_registration *r, long long now_ms) {
    t->host = tony_strdup(r->host);
    j->nregistered++;
    j->hosts_version++;
    t->port = r->port;
    t->tb_port = r->tb_port;
    if (r->log_dir && *r->log_dir) t->log_dir = tony_strdup(r->log_dir);
    if (r->container && *r->container) t->container = tony_strdup(r->container);
    if (r->log_url && *r->log_url) t->log_url = tony_strdup(r->log_url);
    t->registered_ms = now_ms;
}

void am_fsm_recover(am_fsm *f, int expected, long long until_ms, long long now_ms, am_actions *out) {
    if (f->state != AM_JOB_NEW) return;
    f->state = AM_JOB_REGISTERING;
    f->recovering = true;
    f->recover_expected = expected;
    f->recover_until_ms = until_ms;
    /* every task's container may still run: none is asked for */
    for (size_t i = 0; i < f->job.ntasks; i++) {
        am_task *t = &f->job.tasks[i];
        t->state = AM_TASK_REQUESTED;
        t->requested_ms = now_ms;
        tally(f, t);
    }
    advance(f, now_ms, out);
}

/* The recovery is over (every task back, or the wait): a task whose
 * executor did not come back has no container this coordinator knows of
 * (the backend stops what is left of the last coordinator's). Where no
 * task that came back had its process started, the gang never formed (no
 * cluster spec was handed out): the task is asked for anew and the
 * barrier goes on. Otherwise it fails the attempt, as a lost one would.
 * That restart is on the cluster's account (a new AM attempt, which used
 * to rerun the whole job), not tony.am.retry-count's: the budget gets one
 * more; the restart policy still judges the failure. */
static void end_recovery(am_fsm *f, long long now_ms, am_actions *out) {
    am_job *j = &f->job;
    f->recovering = false;
    bool gang_formed = f->adopted > f->rejoined;
    bool missing = false;
    for (size_t i = 0; i < j->ntasks; i++) {
        am_task *t = &j->tasks[i];
        if (t->host || am_task_done(t)) continue;
        if (!gang_formed && !j->attempt_over) {
            t->state = AM_TASK_NEW; /* advance asks for it */
            tally(f, t);
            f->asked_anew++;
            continue;
        }
        if (!missing && !j->attempt_over) {
            f->retries_left++;
            f->recover_failed = true;
        }
        missing = true;
        t->state = AM_TASK_FAILED;
        t->exited = true;
        t->exit_status = TONY_EXIT_ABORTED;
        t->finished_ms = now_ms;
        t->lost = true;
        free(t->diagnostics);
        t->diagnostics = tony_sprintf("Task [%s:%d] did not come back to the restarted coordinator within %lld ms: "
                                      "its container or its executor ended with the lost coordinator.",
                                      t->role->name, t->index, f->recover_until_ms - t->requested_ms);
        tally(f, t);
        note_failure(f, t, now_ms);
        end_attempt(j, AM_FINAL_FAILED, "%s", t->diagnostics);
    }
    emit(out, AM_ACT_ADOPTED, NULL, 0, NULL);
}

/* The first task back names the attempt the tasks work for; they all
 * started it together, so one naming another is left over from a restart
 * the lost coordinator had begun: false. Each attempt before it was a
 * restart the lost coordinator made: tony.am.retry-count is what is left
 * of it (a restart it made on the cluster's account is counted too:
 * the budget errs on the side of fewer retries). */
static bool same_attempt(am_fsm *f, int attempt) {
    if (!f->recover_attempt_known) {
        f->job.attempt = attempt;
        f->recover_attempt_known = true;
        f->retries_left = attempt >= f->retries_left ? 0 : f->retries_left - attempt;
        return true;
    }
    return attempt == f->job.attempt;
}

/* t came back: once every container the backend handed back has its task
 * again (or every task is back), the recovery is over; tasks back at the
 * barrier go once the gang is whole. */
static void came_back(am_fsm *f, am_task *t, const am_registration *r, int container_attempt, long long now_ms,
                      am_actions *out) {
    take_registration(&f->job, t, r, now_ms);
    t->container_attempt = container_attempt;
    t->last_heartbeat_ms = now_ms;
    tally(f, t);
    f->adopted++;
    bool all = f->job.nregistered == (int)f->job.ntasks;
    if (all || (f->recover_expected > 0 && f->adopted >= f->recover_expected)) end_recovery(f, now_ms, out);
    advance(f, now_ms, out);
    if (!f->recovering && f->rejoined > 0 && !f->job.attempt_over && am_job_gang_ready(&f->job))
        emit(out, AM_ACT_RELEASE_GANG, NULL, 0, NULL);
}

bool am_fsm_superseded(const am_fsm *f, int attempt) {
    return f->recovering && f->recover_attempt_known && attempt < f->job.attempt;
}

am_reg_result am_fsm_adopted(am_fsm *f, am_task *t, const am_registration *r, int attempt, int container_attempt,
                             int pid, long long now_ms, am_actions *out) {
    /* only a running process is taken back (one waiting at the barrier: am_fsm_rejoined) */
    if (!f->recovering || pid <= 0 || t->host || am_task_done(t) || f->state == AM_JOB_DONE) return AM_REG_ENDING;
    if (!same_attempt(f, attempt)) return AM_REG_ENDING;
    t->pid = pid;
    t->started_ms = now_ms;
    t->state = AM_TASK_RUNNING;
    came_back(f, t, r, container_attempt, now_ms, out);
    return AM_REG_NEW;
}

am_reg_result am_fsm_rejoined(am_fsm *f, am_task *t, const am_registration *r, int attempt, int container_attempt,
                              long long now_ms, am_actions *out) {
    if (!f->recovering || am_task_done(t) || f->state == AM_JOB_DONE) return AM_REG_ENDING;
    if (t->host) { /* its long poll again */
        t->last_heartbeat_ms = now_ms;
        t->polling = attempt == f->job.attempt;
        return attempt == f->job.attempt ? AM_REG_AGAIN : AM_REG_ENDING;
    }
    if (!same_attempt(f, attempt)) return AM_REG_ENDING;
    t->state = AM_TASK_REGISTERED;
    t->polling = true;
    f->rejoined++;
    came_back(f, t, r, container_attempt, now_ms, out);
    return AM_REG_NEW;
}

void am_fsm_next_attempt(am_fsm *f, long long now_ms, am_actions *out) {
    if (!f->restarting) return;
    f->restarting = false;
    f->recover_failed = false;
    f->reworld = false;
    f->loss_wait_ms = 0;
    f->loss_wait_over = false;
    /* the ending attempt's end, kept by its number */
    int a = f->job.attempt;
    if (a >= 0) {
        if (a >= f->nends) {
            f->ends = tony_xrealloc(f->ends, (size_t)(a + 1) * sizeof *f->ends);
            for (int k = f->nends; k <= a; k++) f->ends[k] = AM_END_NONE;
            f->nends = a + 1;
        }
        f->ends[a] = f->attempt_end;
    }
    f->attempt_end = AM_END_NONE;
    f->grow_at_ms = 0;
    free(f->permanent);
    f->permanent = NULL;
    reset_attempt(f, f->job.attempt + 1, now_ms);
    f->state = AM_JOB_REGISTERING;
    if (f->job.plan->elastic) f->settle_at_ms = now_ms + f->job.plan->elastic_settle_ms;
    advance(f, now_ms, out);
}

void am_fsm_request_dropped(am_fsm *f, am_task *t, long long now_ms, am_actions *out) {
    if (t->state != AM_TASK_REQUESTED || t->exited) return;
    t->state = AM_TASK_NEW;
    t->requested_ms = 0;
    t->stop_tries = 0;
    tally(f, t);
    advance(f, now_ms, out);
}

am_reg_result am_fsm_registered(am_fsm *f, am_task *t, const am_registration *r, long long now_ms, am_actions *out) {
    /* while recovering only the lost coordinator's executors come back */
    if (f->job.attempt_over || f->state == AM_JOB_DONE || f->recovering) return AM_REG_ENDING;
    if (t->out) return join_request(f, t, r, now_ms);
    am_reg_result res = AM_REG_AGAIN;
    if (!t->host) {
        take_registration(&f->job, t, r, now_ms);
        if (!am_task_done(t)) t->state = AM_TASK_REGISTERED;
        tally(f, t);
        res = AM_REG_NEW;
    }
    t->last_heartbeat_ms = now_ms;
    t->polling = true; /* held until am_fsm_poll_answered */
    /* Without a gang (FCFS) each task goes as soon as it registers. */
    if (!f->job.plan->gang || am_job_gang_ready(&f->job)) emit(out, AM_ACT_RELEASE_GANG, NULL, 0, NULL);
    advance(f, now_ms, out);
    return res;
}

void am_fsm_node(am_fsm *f, am_task *t, const char *node, int cluster_nodes) {
    if (cluster_nodes > 0) f->cluster_nodes = cluster_nodes;
    if (!node || !*node || t->node) return;
    t->node = tony_strdup(node);
    tally(f, t); /* a container on an excluded node is not kept */
}

void am_fsm_log_matched(am_fsm *f, am_task *t, bool fail, const char *policy, const char *stream, const char *line) {
    char **slot = fail ? &t->log_fail : &t->log_exclude;
    if (*slot) return; /* the first match counts */
    *slot = tony_sprintf("log policy '%s' matched %s:%d's %s: %s", policy, t->role->name, t->index, stream, line);
    tally(f, t); /* an exclude-node match: its container is not kept */
}

/* A failed task's node: excluded when its end was the node's fault (or an
 * exclude-node log policy matched), within the cap. */
static void judge_node(am_fsm *f, am_task *t, int exit_status, long long now_ms, am_actions *out) {
    char buf[256];
    const char *cause = t->log_exclude ? t->log_exclude
                                       : am_exclusion_node_cause(exit_status, t->host != NULL, t->stop_tries > 0, buf,
                                                                 sizeof buf);
    if (!cause) return;
    /* A task's end its executor reported (in place) comes before its
     * container's, which names the node: judged then (am_fsm_exited). */
    t->node_judgement_due = !t->node;
    if (!t->node) return;
    char *id = tony_sprintf("%s:%d", t->role->name, t->index);
    am_excl_result r = am_exclusion_add(&f->exclusion, t->node, id, cause, f->job.attempt, f->cluster_nodes, now_ms);
    free(id);
    if (r != AM_EXCL_ALREADY) emit(out, AM_ACT_EXCLUDE_NODE, t, 0, t->node);
    /* the containers on a node excluded now are no longer kept: once per node */
    if (r == AM_EXCL_ADDED) tally_all(f);
}

/* What a failed task's end says beyond TonY's rules: its node is bad
 * (above), or a `fail` log policy makes the failure permanent (a
 * sidecar's failures never count). Returns the diagnostics for the
 * attempt when a log policy adds to them (malloc'ed), else NULL. */
static char *judge_failure(am_fsm *f, am_task *t, int exit_status, const char *diagnostics, long long now_ms,
                           am_actions *out) {
    judge_node(f, t, exit_status, now_ms, out);
    const char *said = t->log_fail ? t->log_fail : t->log_exclude;
    if (!said) return NULL;
    /* the task's own diagnostics say it first */
    char *d = tony_sprintf("%s. %s", said, t->diagnostics ? t->diagnostics : "");
    free(t->diagnostics);
    t->diagnostics = d;
    if (!t->log_fail || t->role->kind == TONY_ROLE_SIDECAR) return NULL;
    char *why = tony_sprintf("a fail log policy matched %s:%d's output, so the failure is permanent "
                             "(tony.application.log-policies).",
                             t->role->name, t->index);
    am_fsm_task_permanent(f, t, why);
    free(why);
    return tony_sprintf("%s. %s", t->log_fail, diagnostics ? diagnostics : "");
}

void am_fsm_poll_answered(am_fsm *f, am_task *t, long long now_ms) {
    (void)f;
    if (!t->polling) return;
    t->polling = false;
    /* the answer is its last sign of life: the executor re-polls, or
     * starts its process, from here */
    t->last_heartbeat_ms = now_ms;
}

void am_fsm_released(am_fsm *f, am_task *t) {
    (void)f;
    t->released = true;
}

void am_fsm_started(am_fsm *f, am_task *t, int pid, long long now_ms) {
    t->polling = false;
    t->pid = pid;
    t->started_ms = now_ms;
    t->last_heartbeat_ms = now_ms;
    if (!am_task_done(t)) t->state = AM_TASK_RUNNING;
    tally(f, t);
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
/* A task ended with exit_status: its container did, or (in place) its
 * executor reported its process's end. A task we asked to stop ended
 * because of it, whether the backend stopped it or its executor did when
 * told; not one whose end, told late (lastfetch.h), came before the stop.
 * A failure is judged (its node, its log policies), noted for the root
 * cause and applied with TonY's rules. */
static void task_ended(am_fsm *f, am_task *t, int exit_status, const char *diagnostics, long long now_ms,
                       am_actions *out) {
    t->exit_status = exit_status;
    t->finished_ms = now_ms;
    bool stopped = (t->stop_tries > 0 && now_ms >= t->stop_ms) || (t->stop_asked_ms && now_ms >= t->stop_asked_ms);
    /* In place the executor reports its process's own exit code, and one
     * that exits 0 on SIGTERM (TensorBoard does) was stopped all the same;
     * a stopped container's end never says 0. */
    bool reported = t->result_reported && !t->exited;
    if (exit_status == 0 && !(stopped && reported)) t->state = AM_TASK_SUCCEEDED;
    else if (exit_status == TONY_EXIT_KILLED_BY_APPMASTER || stopped) t->state = AM_TASK_FINISHED;
    else t->state = AM_TASK_FAILED;
    tally(f, t);
    /* a task out of the world (being stopped) decides nothing */
    if (t->state != AM_TASK_FAILED || t->out) return;
    if (leaves_unregistered(f, t, now_ms, out)) return;
    char *policy_diag = judge_failure(f, t, exit_status, diagnostics, now_ms, out);
    note_failure(f, t, now_ms);
    if (!f->job.attempt_over)
        task_failed(&f->job, t, exit_status, policy_diag ? policy_diag : diagnostics, t->host != NULL);
    free(policy_diag);
}

void am_fsm_result_reported(am_fsm *f, am_task *t, int exit_code, bool timed_out, long long now_ms, am_actions *out) {
    t->result_reported = true;
    tally(f, t);
    if (timed_out) {
        free(t->diagnostics);
        t->diagnostics = tony_sprintf("The command ran longer than its execution timeout of %lld ms "
                                      "(tony.task.executor.execution-timeout-ms / tony.worker.timeout) and was killed.",
                                      f->job.plan->execution_timeout_ms);
    }
    /* Reallocating, the container's exit status is the result, as in
     * TonY; in place the container stays, so the executor's word is it. */
    if (!f->in_place || t->exited || am_task_done(t) || f->state == AM_JOB_DONE) return;
    task_ended(f, t, exit_code, t->diagnostics, now_ms, out);
    advance(f, now_ms, out);
}

static const char *lockstep_hint(const tony_plan *p) {
    return p->lockstep ? "its peers train in lock-step and cannot go on without it" : "";
}

/* The first task of the attempt to fail, by time, is its root cause (an
 * exit told late, held for its last words, still counts at its time); a
 * sidecar's failures are ignored, so never one. */
static void note_failure(am_fsm *f, am_task *t, long long when_ms) {
    am_job *j = &f->job;
    if (t->role->kind == TONY_ROLE_SIDECAR || (j->first_failed && j->first_failed_ms <= when_ms)) return;
    j->first_failed = t;
    j->first_failed_ms = when_ms;
    f->memo->loss_known = false; /* loss_root counts from it */
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
        /* TonY's words, without an empty "Error msg:" when there is none */
        end_attempt(j, AM_FINAL_FAILED, "Chief task [%s:%d] failed (%s). Exit status: %d.%s%s", r->name, t->index,
                    what, exit_status, *diag ? " Error msg: " : "", diag);
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
    tally(f, t);
    if (!am_task_done(t)) { /* else already decided (e.g. expired heartbeats, or reported in place) */
        if (diagnostics) {
            /* keep what the executor already said (a timeout), then the container's word */
            char *d = t->diagnostics ? tony_sprintf("%s %s", t->diagnostics, diagnostics) : tony_strdup(diagnostics);
            free(t->diagnostics);
            t->diagnostics = d;
        }
        /* A task we asked to stop ended because of it, whether the backend
         * stopped it or its executor did when its heartbeat was answered. */
        task_ended(f, t, exit_status, diagnostics, now_ms, out);
    } else {
        if (!t->finished_ms) t->finished_ms = now_ms;
        tally(f, t); /* its end's time: loss_root looks at it */
        /* its failure was reported before its node was known */
        if (t->node_judgement_due && t->node && t->state == AM_TASK_FAILED) judge_node(f, t, t->exit_status, now_ms, out);
    }
    advance(f, now_ms, out);
}

void am_fsm_fail_attempt(am_fsm *f, const char *why, long long now_ms, am_actions *out) {
    end_attempt(&f->job, AM_FINAL_FAILED, "%s", why);
    advance(f, now_ms, out);
}

void am_fsm_fail_permanently(am_fsm *f, const char *why, long long now_ms, am_actions *out) {
    if (!f->job.attempt_over && !f->permanent)
        f->permanent = tony_strdup("the attempt failed on its configuration, which another attempt would repeat");
    am_fsm_fail_attempt(f, why, now_ms, out);
}

void am_fsm_task_permanent(am_fsm *f, am_task *t, const char *reason) {
    if (t->permanent) return; /* the first reason stands */
    t->permanent = tony_strdup(reason);
    tally(f, t);
}

/* Keeps s, cut to its first `max` bytes at most (the API bounds what an
 * executor may send; this bounds what the job's JSON carries). */
static char *bounded_dup(const char *s, size_t max) {
    if (!s || !*s) return NULL;
    size_t n = strnlen(s, max);
    return strndup(s, n);
}

void am_fsm_task_output(am_fsm *f, am_task *t, const char *stderr_tail, const char *error_report) {
    (void)f;
    if (stderr_tail && *stderr_tail) {
        free(t->stderr_tail);
        t->stderr_tail = bounded_dup(stderr_tail, AM_FSM_OUTPUT_MAX);
    }
    if (error_report && *error_report) {
        free(t->error_report);
        t->error_report = bounded_dup(error_report, AM_FSM_OUTPUT_MAX);
    }
}

void am_fsm_task_start_log(am_fsm *f, am_task *t, const char *tail, const char *path) {
    (void)f;
    if (!tail || !*tail) return;
    free(t->start_log);
    free(t->start_log_path);
    t->start_log = bounded_dup(tail, AM_FSM_OUTPUT_MAX);
    t->start_log_path = path ? tony_strdup(path) : NULL;
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
        /* one waiting to join the world ends with its container, failing nothing */
        if (t->out) continue;
        /* One waiting at the barrier with its long poll held is alive, however
         * long the gang takes to form or to be answered (thousands of "go"
         * answers take a while); between polls it sits in a poll that long. */
        if (t->state == AM_TASK_REGISTERED && t->polling) continue;
        long long limit = t->state == AM_TASK_REGISTERED ? expiry + j->barrier_poll_ms : expiry;
        if (now_ms - t->last_heartbeat_ms <= limit) continue;
        t->state = AM_TASK_FAILED;
        t->lost = true;
        tally(f, t);
        note_failure(f, t, now_ms);
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
        if (t->state != AM_TASK_REQUESTED || t->host || t->out || now_ms - t->requested_ms <= limit) continue;
        end_attempt(j, AM_FINAL_FAILED,
                    "Stopping AM for task [%s:%d] registration timeout: its executor did not register within "
                    "%lld ms (tony.container.registration.timeout, or TonY's tony.container.allocation.timeout)",
                    t->role->name, t->index, limit);
        return;
    }
}

/* Stops that did not end their container are asked again, each wait twice
 * the last; after the last try's wait the container is given up on. */
static void retry_stops(am_fsm *f, long long now_ms, am_actions *out) {
    am_job *j = &f->job;
    for (size_t i = 0; i < j->ntasks; i++) {
        am_task *t = &j->tasks[i];
        if (!am_task_live(t) || t->stop_tries == 0) continue;
        long long wait = (long long)AM_FSM_STOP_RETRY_MS << (t->stop_tries - 1);
        if (now_ms - t->stop_ms < wait) continue;
        if (t->stop_tries < AM_FSM_STOP_TRIES) stop_task(f, t, now_ms, out);
        else {
            t->stop_given_up = true;
            tally(f, t);
        }
    }
}

/* ---- Hang diagnosis (hang.h): tony.task.progress-timeout ---- */

static bool hang_collecting(const am_fsm *f) {
    return f->hang.active && f->hang.attempt == f->job.attempt && !f->job.attempt_over;
}

/* The stacks are in, or the wait is over: the attempt fails, naming the
 * task found idle; the restart policy applies as to any failure. */
static void hang_end(am_fsm *f) {
    am_hang *h = &f->hang;
    am_task *t = h->task;
    int wanted, in;
    am_hang_count_stacks(&f->job, &wanted, &in);
    char idle[32], limit[32];
    am_hang_format_ms(h->idle_ms, idle, sizeof idle);
    am_hang_format_ms(f->job.plan->progress_timeout_ms, limit, sizeof limit);
    free(t->diagnostics);
    t->diagnostics = tony_sprintf("hung: no output or progress from %s:%d for %s (tony.task.progress-timeout is %s)",
                                  t->role->name, t->index, idle, limit);
    end_attempt(&f->job, AM_FINAL_FAILED, "%s; stacks of %d of %d running task(s) collected (tony logs --stacks)",
                t->diagnostics, in, wanted);
    h->active = false;
}

static void check_hang(am_fsm *f, long long now_ms, am_actions *out) {
    am_hang *h = &f->hang;
    if (hang_collecting(f)) {
        int wanted, in;
        am_hang_count_stacks(&f->job, &wanted, &in);
        if (in >= wanted || now_ms >= h->deadline_ms) hang_end(f);
        return;
    }
    long long idle;
    am_task *t = am_hang_find(&f->job, f->job.plan->progress_timeout_ms, now_ms, &idle);
    if (!t) return;
    *h = (am_hang){.active = true, .attempt = f->job.attempt, .task = t, .idle_ms = idle,
                   .deadline_ms = now_ms + am_hang_stacks_wait_ms(f->job.plan)};
    emit(out, AM_ACT_HANG, t, 0, NULL);
}

void am_fsm_progress(am_fsm *f, am_task *t, long long idle_ms, long long now_ms) {
    (void)f;
    t->idle_ms = idle_ms < 0 ? 0 : idle_ms;
    t->idle_seen_ms = now_ms;
}

bool am_fsm_wants_stacks(am_fsm *f, am_task *t) {
    return hang_collecting(f) && !t->stacks_in && am_hang_wants_stacks(t);
}

void am_fsm_stacks_in(am_fsm *f, am_task *t, long long now_ms, am_actions *out) {
    t->stacks_in = true;
    if (!hang_collecting(f)) return;
    int wanted, in;
    am_hang_count_stacks(&f->job, &wanted, &in);
    if (in >= wanted) hang_end(f);
    advance(f, now_ms, out);
}

void am_fsm_tick(am_fsm *f, long long now_ms, am_actions *out) {
    if (f->state == AM_JOB_DONE || f->state == AM_JOB_NEW) return;
    const tony_plan *p = f->job.plan;
    if (p->app_timeout_ms > 0 && now_ms - f->started_ms > p->app_timeout_ms && !f->timed_out) {
        f->timed_out = true;
        if (p->single_node) {
            if (f->single_running) emit(out, AM_ACT_STOP, NULL, 1, TONY_KEY_APP_TIMEOUT);
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
    if (f->recovering && now_ms >= f->recover_until_ms) end_recovery(f, now_ms, out);
    if (!f->job.attempt_over) {
        settle_world(f, now_ms, out);
        if (!f->job.attempt_over) grow_world(f, now_ms, out);
        check_heartbeats(f, now_ms, out);
        /* a task waited for after a coordinator loss is not a registration */
        if (!f->recovering) check_registration(&f->job, now_ms);
        if (!f->job.attempt_over) check_hang(f, now_ms, out);
    } else {
        retry_stops(f, now_ms, out);
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
    else {
        /* with the root cause am.c read from its log, as a task's failure */
        char *cause = am_cause_text(&f->root_cause);
        diag = tony_sprintf("Single node training failed: %s%s%s", tony_exit_status_meaning(code, meaning, sizeof meaning),
                            cause ? "\n" : "", cause ? cause : "");
        free(cause);
    }
    finish(f, code == 0 && !f->timed_out ? AM_FINAL_SUCCEEDED : AM_FINAL_FAILED, diag, now_ms, out);
    free(diag);
}

void am_fsm_fail_job(am_fsm *f, const char *why, long long now_ms, am_actions *out) {
    finish(f, AM_FINAL_FAILED, why, now_ms, out);
}

void am_fsm_abandon(am_fsm *f, long long now_ms, am_actions *out) {
    finish(f, AM_FINAL_KILLED, "the coordinator stopped before the job ended", now_ms, out);
}
