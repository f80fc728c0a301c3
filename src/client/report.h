/* How the CLI shows a job: TonY's grouped status lines ("RUNNING: ps [0]
 * worker [0, 1]"), the task table with exit meanings and log paths, and the
 * final line. Shared by submit (following a job) and status. */
#ifndef TONY_REPORT_H
#define TONY_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* Grouped lines, one per task state, in TonY's attention order (FAILED,
 * SUCCEEDED, FINISHED, RUNNING, NEW, READY); malloc'ed, "" when no tasks. */
char *tony_report_grouped(const json_t *job);
/* That order: TONY_REPORT_NSTATES task states. */
#define TONY_REPORT_NSTATES 6
extern const char *const tony_report_state_order[TONY_REPORT_NSTATES];

/* One entry per task: state, exit meaning, diagnostics of a failure, log
 * paths, and the TensorBoard link of the task serving it; then the nodes
 * the job excluded (or found bad and could not exclude), with why. */
void tony_report_tasks(FILE *out, const json_t *job);
/* A sentence on a coordinator that replaced a lost one (the job's
 * "coordinator_restarted"): waiting for its tasks, or how many it took
 * back; NULL for a job whose coordinator was never lost. Malloc'ed. */
char *tony_report_coordinator(const json_t *job);
void tony_report_final(FILE *out, const json_t *job);
/* The framework as the user set it: "pytorch", or "tensorflow (default)"
 * when tony.application.framework was not set. Malloc'ed. */
char *tony_report_framework(const char *framework, bool is_default);
/* "name: NAME, framework: ..." of a job JSON (JOB_NAME, JOB_FRAMEWORK*). */
void tony_report_name(FILE *out, const json_t *job);
/* A failed job's root cause, first thing (its text, indented), when the job
 * JSON has one and the job is over and failed; nothing otherwise. */
void tony_report_cause(FILE *out, const json_t *job);
/* The job's right-sizing advice ("advice" of the job JSON), when it has any. */
void tony_report_advice(FILE *out, const json_t *job);

#endif
