/* How the CLI shows a job: TonY's grouped status lines ("RUNNING: ps [0]
 * worker [0, 1]"), the task table with exit meanings and log paths, and the
 * final line. Shared by submit (following a job) and status. */
#ifndef TONY_REPORT_H
#define TONY_REPORT_H

#include <jansson.h>
#include <stdio.h>

/* Grouped lines, one per task state, in TonY's attention order (FAILED,
 * SUCCEEDED, FINISHED, RUNNING, NEW, READY); malloc'ed, "" when no tasks. */
char *tony_report_grouped(const json_t *job);

/* How `tony submit` follows a job on every backend: fed each new job JSON,
 * it prints the grouped lines, each prefixed "tony: ", when they changed,
 * and "tony: TensorBoard at URL (task)" once the link is known or moves. */
typedef struct tony_report_follow tony_report_follow;
tony_report_follow *tony_report_follow_new(FILE *out);
void tony_report_follow_free(tony_report_follow *f);
void tony_report_follow_update(tony_report_follow *f, const json_t *job);
/* A one-off message (to stream: out, or stderr) from whoever follows. */
void tony_report_follow_say(tony_report_follow *f, FILE *stream, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* One entry per task: state, exit meaning, diagnostics of a failure, log
 * paths, and the TensorBoard link of the task serving it. */
void tony_report_tasks(FILE *out, const json_t *job);
void tony_report_final(FILE *out, const json_t *job);
/* The job's right-sizing advice ("advice" of the job JSON), when it has any. */
void tony_report_advice(FILE *out, const json_t *job);

#endif
