/* Restart policies: whether a failed attempt is worth another one, and how
 * long to wait before it. tony.am.retry-count is the budget; the policy of
 * the role whose task failed first (tony.<role>.restart-policy, else
 * tony.application.restart-policy) says which failures may be retried;
 * nothing that could not make the job succeed is (a permanent failure, a
 * killed job, a job out of time). No I/O: the state machine asks, am.c
 * carries out what it decides. */
#ifndef TONY_AM_POLICY_H
#define TONY_AM_POLICY_H

#include <stdbool.h>

#include "conf/plan.h"

/* What ended a failed attempt, as the policy needs it. */
typedef struct am_failure {
    const tony_role *role; /* the role of the task that failed first; NULL when none did (a timeout...) */
    int exit_status;       /* its container's exit status; TONY_EXIT_INVALID when none was seen (lost) */
    /* Non-NULL: the failure is permanent whatever the policy, for this
     * reason (it names the key or rule that says so): a config error, a
     * log policy's `fail` action. */
    const char *permanent;
    bool killed;    /* by the user */
    bool timed_out; /* tony.application.timeout */
    /* Tasks did not come back to a coordinator that replaced a lost one:
     * retried on the cluster's account (its budget given one more by the
     * state machine) even where tony.am.retry-count is 0. */
    bool coordinator_lost;
    /* Its command never ran (cause.h's am_cause_command_ran): its exit code
     * is its executor's or its container runtime's, not the script's. */
    bool never_ran;
} am_failure;

/* Whether the exit status is the user's script's own verdict (exit codes
 * 1-127), which a new attempt would only repeat. Signals (128 and above),
 * YARN's -100...-109 (preempted, lost node, disks failed...) and no exit
 * status at all (lost heartbeats, a launch that failed) are not. */
bool am_policy_exit_is_permanent(int exit_status);

/* Whether the attempt that failed as f may be retried with retries_left
 * restarts left. When not, *why (malloc'd, NULL when retry-count is 0 and
 * nothing else is worth saying) says why no retry happens, naming the key. */
bool am_policy_should_retry(const tony_plan *p, const am_failure *f, int retries_left, char **why);

/* Backoff is for crash loops, not for a one-off crash: a restart costs
 * the job little once the processes start again at once, while a script
 * that dies at every start should not hammer the cluster. `quick` counts
 * the failures in a row of attempts that ran less than
 * tony.application.restart-healthy-ms; an attempt that ran at least that
 * long ends the run of them (its failure is a first failure again).
 * am_policy_quick_failures returns the count after an attempt that failed
 * having run ran_ms, given the count `quick` before it. */
int am_policy_quick_failures(const tony_plan *p, int quick, long long ran_ms);

/* How long to wait before the restart that follows `quick` quick failures
 * in a row (am_policy_quick_failures): nothing for the first (or after a
 * healthy attempt); from the second, tony.application.restart-backoff-ms,
 * doubled per quick failure after that, at most
 * tony.application.restart-backoff-max-ms. */
long long am_policy_backoff_ms(const tony_plan *p, int quick);

#endif
