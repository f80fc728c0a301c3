/* Nothing of a task outlives it: the executor is its processes' child
 * subreaper (PR_SET_CHILD_SUBREAPER), so that a process that leaves its
 * parent and group (a daemon that forks and calls setsid) becomes the
 * executor's child rather than init's, and at each end of the user's
 * process (its exit, a stop, an in-place restart) every descendant left is
 * ended and reaped. Works without a cgroup. */
#ifndef TONY_EXECUTOR_REAP_H
#define TONY_EXECUTOR_REAP_H

#include <stddef.h>
#include <sys/types.h>

/* Makes the calling process the subreaper of its descendants; 0, or -1
 * (the kernel refuses: older than 3.4), which the caller says. */
int tony_reap_become_subreaper(void);

/* Reaps the orphans that ended while the task runs (each holds a pid as a
 * zombie until then), leaving the nkeep processes of keep (the user's
 * processes the executor started, which their own waits reap) alone; once
 * one of those ended, what is left waits for the next call, after its wait.
 * Never blocks. */
void tony_reap_orphans(const pid_t *keep, size_t nkeep);

/* Ends every live descendant of the calling process: SIGTERM, up to
 * grace_ms for them to go, then SIGKILL, until none is left (one that
 * forks meanwhile is found again), and reaps them all. Returns how many
 * descendants it found, for the log. Call only while no child of the
 * caller is waited for elsewhere (it reaps any child). */
int tony_reap_descendants(long long grace_ms);

#endif
