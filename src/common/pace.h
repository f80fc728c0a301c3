/* Pacing of periodic work whose cost grows with the job: the coordinator's
 * status.json (every task's state, ~1 KB a task) and the local backend's
 * pass over /proc (every process) each ran on a fixed period whatever they
 * cost, and at 5,000 tasks they took most of a core between them (issue
 * 26). A paced piece of work runs at most once per its period and holds
 * itself to a share of the time: after a run of d, the next one is due
 * d × (100 - percent) / percent later at the earliest. At small sizes a run
 * takes well under a period and nothing changes. */
#ifndef TONY_COMMON_PACE_H
#define TONY_COMMON_PACE_H

#include <stdbool.h>

typedef struct tony_pace {
    int percent;             /* the share of the time it may take, 1..100 */
    long long not_before_us; /* tony_now_us(): not due before */
    long long last_us;       /* how long its last run took */
} tony_pace;

/* Whether the work may run now (it is never due twice within its own
 * running time's budget). */
bool tony_pace_due(const tony_pace *p);
/* Says a run that began at started_us (tony_now_us()) just ended. */
void tony_pace_ran(tony_pace *p, long long started_us);

#endif
