/* The executor's state machine (life.h): the process's stop, grace and kill,
 * and the coordinator's loss, search and return, as events in and actions
 * out. No I/O and no clock: the time comes with each event. */
#include "executor/life.h"

#include <signal.h>
#include <string.h>

void exec_life_init(exec_life *l, long long recovery_ms, int fail_limit) {
    *l = (exec_life){.proc = EXEC_WAITING, .coord = EXEC_ANSWERING, .grace_ms = EXEC_LIFE_GRACE_MS,
                     .recovery_ms = recovery_ms, .fail_limit = fail_limit};
}

void exec_life_started(exec_life *l, int nproc, long long timeout_ms, long long now) {
    l->proc = EXEC_RUNNING;
    l->timeout_ms = timeout_ms;
    l->started_ms = now;
    l->nproc = nproc > 0 ? nproc : 1;
    l->ended = 0;
    l->code = 0;
    l->failed_one = false;
}

bool exec_life_done(const exec_life *l) { return l->proc != EXEC_WAITING && l->ended >= l->nproc; }

bool exec_life_stopping(const exec_life *l) { return l->proc == EXEC_GRACE || l->proc == EXEC_KILLED; }

/* RUNNING -> GRACE: SIGTERM now, SIGKILL once the grace is over. At the
 * barrier there is no process: the wait ends instead. */
static void stop(exec_life *l, exec_why why, long long now, exec_act *a) {
    if (l->proc == EXEC_WAITING) {
        a->exit = true;
        a->why = why;
    } else if (l->proc == EXEC_RUNNING) {
        l->proc = EXEC_GRACE;
        l->kill_at = now + l->grace_ms;
        a->signal = SIGTERM;
        a->why = why;
    }
}

/* -> KILLED: SIGKILL now. */
static void kill_now(exec_life *l, exec_why why, exec_act *a) {
    l->proc = EXEC_KILLED;
    a->signal = SIGKILL;
    a->why = why;
}

/* Giving up on the coordinator stops the process (or the wait). */
static void give_up(exec_life *l, exec_why why, long long now, exec_act *a) {
    l->coord = EXEC_GIVEN_UP;
    stop(l, why, now, a);
}

/* Back to a coordinator that answers. */
static void rejoined(exec_life *l) {
    l->coord = EXEC_ANSWERING;
    l->failed = 0;
    l->lost_since = 0;
}

void exec_life_tick(exec_life *l, long long now, bool watch_ended, exec_act *a) {
    memset(a, 0, sizeof *a);
    /* the timeout kills a process in its grace too */
    bool live = l->proc == EXEC_RUNNING || l->proc == EXEC_GRACE;
    if (live && l->timeout_ms > 0 && !l->timed_out && now - l->started_ms > l->timeout_ms) {
        l->timed_out = true;
        kill_now(l, EXEC_WHY_TIMEOUT, a);
    } else if (l->proc == EXEC_GRACE && now > l->kill_at) {
        kill_now(l, a->why, a);
    }
    if (l->rewatch && watch_ended) {
        l->rewatch = false;
        a->rewatch = true;
    }
}

/* As torchrun's agent: the processes of a node train together, so the
 * first to fail fails the node, and the others are stopped rather than
 * left to hang in a collective that lost a member. */
void exec_life_exited(exec_life *l, int code, long long now, exec_act *a) {
    memset(a, 0, sizeof *a);
    if (l->proc == EXEC_WAITING || l->ended >= l->nproc) return;
    l->ended++;
    if (code == 0 || l->failed_one) return;
    l->failed_one = true;
    l->code = code;
    a->failure = true;
    if (l->ended < l->nproc) stop(l, EXEC_WHY_SIBLING, now, a);
}

void exec_life_stop(exec_life *l, exec_why why, long long now, exec_act *a) {
    memset(a, 0, sizeof *a);
    stop(l, why, now, a);
}

void exec_life_answered(exec_life *l) {
    if (l->coord != EXEC_GIVEN_UP) rejoined(l);
}

/* The first failures are taken for a blip; from EXEC_LIFE_SEARCH_AFTER on,
 * a coordinator that can come back is looked for until the recovery
 * timeout, one that cannot is given up on after fail_limit. A process
 * being stopped is past caring. */
void exec_life_call_failed(exec_life *l, long long now, bool recoverable, exec_act *a) {
    memset(a, 0, sizeof *a);
    if (l->coord == EXEC_GIVEN_UP || (l->proc != EXEC_WAITING && l->proc != EXEC_RUNNING)) return;
    l->failed++;
    if (l->failed >= EXEC_LIFE_SEARCH_AFTER && recoverable) {
        if (l->coord == EXEC_ANSWERING) {
            l->coord = EXEC_SEARCHING;
            l->lost_since = now;
            l->next_search = now;
            a->lost = true;
        }
        if (now - l->lost_since > l->recovery_ms) {
            give_up(l, EXEC_WHY_NO_SUCCESSOR, now, a);
        } else if (now >= l->next_search) {
            l->next_search = now + EXEC_LIFE_SEARCH_EVERY_MS;
            a->search = true;
        }
    } else if (!recoverable && l->failed >= l->fail_limit) {
        give_up(l, EXEC_WHY_MISSED, now, a);
    }
}

void exec_life_found(exec_life *l, exec_found found, long long now, exec_act *a) {
    memset(a, 0, sizeof *a);
    if (l->coord != EXEC_SEARCHING) return;
    switch (found) {
    case EXEC_FOUND_NONE:
    case EXEC_FOUND_MOVED: /* it answers (or not) the next call */
        break;
    case EXEC_FOUND_ADOPTED:
        rejoined(l);
        l->rewatch = true;
        break;
    case EXEC_FOUND_NEXT:
        /* its end goes to the new coordinator, which calls it stale */
        rejoined(l);
        stop(l, EXEC_WHY_NEXT_ATTEMPT, now, a);
        break;
    case EXEC_FOUND_REFUSED:
        give_up(l, EXEC_WHY_REFUSED, now, a);
        break;
    }
}
