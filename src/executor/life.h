/* The executor's life as a state machine, as the coordinator's is (am/fsm.h):
 * the only place that decides when the user's process is stopped, killed or
 * left alone, and what the executor does while its coordinator does not
 * answer. Each function takes one event with the time passed in (clock.h's
 * monotonic ms) and fills an exec_act the loop in executor.c carries out; it
 * does no I/O, so every transition runs in tests/unit/test_life.c.
 *
 * Two parts, one struct:
 *   the process:     WAITING (at the gang barrier, no process) -> RUNNING
 *                    -> GRACE (SIGTERM sent) -> KILLED (SIGKILL sent);
 *                    RUNNING -> KILLED directly on the execution timeout.
 *                    "The process" is the task's nproc processes
 *                    (tony.<role>.nproc-per-node) together: the first to
 *                    fail stops the others, and its exit code is the task's.
 *   the coordinator: ANSWERING -> SEARCHING (calls failed, the backend can
 *                    start another) -> ANSWERING again (rejoined) or
 *                    GIVEN_UP (refused, or tony.am.recovery-timeout-ms
 *                    passed); where it cannot come back, too many failed
 *                    calls give up at once. */
#ifndef TONY_EXECUTOR_LIFE_H
#define TONY_EXECUTOR_LIFE_H

#include <stdbool.h>

/* Coordinator loss: after this many failed calls in a row the executor
 * looks for the next coordinator (where the backend can start one), every
 * EXEC_LIFE_SEARCH_EVERY_MS. */
#define EXEC_LIFE_SEARCH_AFTER 2
#define EXEC_LIFE_SEARCH_EVERY_MS 2000
/* From SIGTERM to SIGKILL. */
#define EXEC_LIFE_GRACE_MS 2000

typedef enum { EXEC_WAITING, EXEC_RUNNING, EXEC_GRACE, EXEC_KILLED } exec_proc_state;
typedef enum { EXEC_ANSWERING, EXEC_SEARCHING, EXEC_GIVEN_UP } exec_coord_state;

/* Why the process is stopped (or the wait at the barrier ends): the loop
 * says it in the log. */
typedef enum {
    EXEC_WHY_NONE,
    EXEC_WHY_COORDINATOR,  /* the coordinator said stop: the attempt is ending (watch or heartbeat) */
    EXEC_WHY_STALE,        /* the coordinator said this attempt is over: a newer one runs */
    EXEC_WHY_SIGNAL,       /* the executor was asked to stop (SIGTERM, SIGINT, SIGUSR1) */
    EXEC_WHY_TIMEOUT,      /* the command ran past its execution timeout */
    EXEC_WHY_MISSED,       /* too many failed calls, and no coordinator can come back */
    EXEC_WHY_NO_SUCCESSOR, /* no coordinator took the task back within the recovery timeout */
    EXEC_WHY_REFUSED,      /* the next coordinator does not take the task back */
    EXEC_WHY_NEXT_ATTEMPT, /* the next coordinator goes on with a newer attempt */
    EXEC_WHY_SIBLING,      /* one of the task's processes failed: the others cannot go on without it */
} exec_why;

/* How a look for the next coordinator went (the loop's I/O, fed back). */
typedef enum {
    EXEC_FOUND_NONE,    /* none named yet, or it does not answer yet */
    EXEC_FOUND_MOVED,   /* at the barrier: another one is named; register there now */
    EXEC_FOUND_ADOPTED, /* it took the task back, its process running */
    EXEC_FOUND_NEXT,    /* it goes on with a newer attempt: stop this one's process */
    EXEC_FOUND_REFUSED, /* it does not take the task back */
} exec_found;

/* What the loop does after an event; every field zero: nothing. */
typedef struct exec_act {
    int signal;   /* SIGTERM or SIGKILL to the user's process group, or 0 */
    exec_why why; /* for the log: why signal, or why exit */
    bool lost;    /* the coordinator was just taken for lost: say so once */
    bool search;  /* look for the next coordinator, then exec_life_found */
    bool rewatch; /* start a new watch on the coordinator that took the task back */
    bool exit;    /* at the barrier: stop waiting, registering failed (why says how) */
    bool failure; /* the process that just ended is the task's first failure: its end is the task's */
} exec_act;

typedef struct exec_life {
    exec_proc_state proc;
    exec_coord_state coord;
    long long grace_ms;      /* EXEC_LIFE_GRACE_MS; shorter in tests */
    long long recovery_ms;   /* tony.am.recovery-timeout-ms */
    int fail_limit;          /* failed calls in a row that give up where no coordinator can come back */
    long long timeout_ms;    /* the command's execution timeout, 0: none */
    long long started_ms;    /* when the process started */
    int nproc;               /* the task's processes (1 or more) */
    int ended;               /* how many of them ended */
    int code;                /* the task's exit code so far: 0, or the first failure's */
    bool failed_one;         /* one of them ended non-zero */
    long long kill_at;       /* GRACE: SIGKILL after this */
    bool timed_out;          /* killed for its execution timeout */
    int failed;              /* calls in a row that got no answer */
    long long lost_since;    /* SEARCHING: since when */
    long long next_search;   /* SEARCHING: the next look not before this */
    bool rewatch;            /* taken back: a new watch once the old one ended */
} exec_life;

/* At the gang barrier: registration's calls fail; fail_limit of them in a
 * row end the wait where no coordinator can come back. */
void exec_life_init(exec_life *l, long long recovery_ms, int fail_limit);
/* The task's nproc processes started at now; timeout_ms 0: they may run
 * for ever. */
void exec_life_started(exec_life *l, int nproc, long long timeout_ms, long long now);
/* One of them ended with code (0..255, 128+signal). The first non-zero
 * code is the task's (act.failure says so) and stops the others that still
 * run; a zero leaves them alone: the task ends when all did. */
void exec_life_exited(exec_life *l, int code, long long now, exec_act *a);
/* Whether every process of the task ended. */
bool exec_life_done(const exec_life *l);
/* Time passed; watch_ended: the watch thread on the old coordinator is done. */
void exec_life_tick(exec_life *l, long long now, bool watch_ended, exec_act *a);
/* A request to stop the process (why: the coordinator, a signal). At the
 * barrier a signal ends the wait. */
void exec_life_stop(exec_life *l, exec_why why, long long now, exec_act *a);
/* A call to the coordinator was answered. */
void exec_life_answered(exec_life *l);
/* A call got no answer; recoverable: a new coordinator may take the task
 * back (the backend can start one and the recovery timeout allows it). */
void exec_life_call_failed(exec_life *l, long long now, bool recoverable, exec_act *a);
/* What the look for the next coordinator (act.search) found. */
void exec_life_found(exec_life *l, exec_found found, long long now, exec_act *a);
/* Whether the process is being stopped (no metrics sent any more). */
bool exec_life_stopping(const exec_life *l);

#endif
