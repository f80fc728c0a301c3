/* Hang diagnosis (tony.task.progress-timeout): the questions the state
 * machine asks to tell a hung attempt, with no I/O. A task is idle while its
 * user process writes nothing to stdout or stderr and does not touch
 * TONY_PROGRESS_FILE; its executor measures that and reports it with each
 * heartbeat (am_task's idle_ms). One tracked task idle for the timeout means
 * the attempt hangs (a rank stuck in a collective, a deadlock): before it is
 * torn down, every running task's executor is asked for its Python stacks,
 * and the attempt ends once they are in or the wait is over. Silence of the
 * executor itself is heartbeat loss, a different thing (fsm.c). */
#ifndef TONY_AM_HANG_H
#define TONY_AM_HANG_H

#include <stdbool.h>
#include <stddef.h>

#include "am/job.h"

/* The hang being diagnosed, in the state machine (am_fsm.hang). */
typedef struct am_hang {
    bool active;            /* stacks are being collected */
    int attempt;            /* the attempt it belongs to: another attempt's is over */
    am_task *task;          /* the first task found idle */
    long long idle_ms;      /* how long it had been idle then */
    long long deadline_ms;  /* the attempt ends then at the latest, stacks or not */
} am_hang;

/* The longest the coordinator waits for the stacks, from the hang on: a
 * heartbeat to carry the ask, the executor's bounded dump
 * (executor/stacks.h), and its answer. */
long long am_hang_stacks_wait_ms(const tony_plan *p);

/* How long t has been idle at now_ms, from its executor's last report (its
 * start when none came yet); -1 when t is not watched: not running, already
 * done, or not of a tracked role (a parameter server or a sidecar may well be
 * silent for hours). */
long long am_hang_idle_ms(const am_task *t, long long now_ms);
/* The watched task idle longest, when that is at least limit_ms (> 0);
 * NULL otherwise. *idle_ms gets its idle time. */
am_task *am_hang_find(am_job *j, long long limit_ms, long long now_ms, long long *idle_ms);
/* Whether t's stacks are to be collected: its user process runs. */
bool am_hang_wants_stacks(const am_task *t);
/* Tasks whose stacks are wanted, and how many of them arrived. */
void am_hang_count_stacks(const am_job *j, int *wanted, int *in);
/* "850 ms", "5.0 s", "12 min 5 s", "2 h 3 min": for diagnostics. */
void am_hang_format_ms(long long ms, char *buf, size_t n);

#endif
