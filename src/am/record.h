/* Recording what happens to a job (record.c): hooks the loop and the API
 * call as things happen; each writes the event log, the history file and
 * the metrics. Failing to record never disturbs the job, and recording
 * never changes a state. */
#ifndef TONY_AM_RECORD_H
#define TONY_AM_RECORD_H

#include "am/am_internal.h"

void am_record_start(tony_am *am);
void am_record_attempt(tony_am *am);
void am_record_task_requested(tony_am *am, const am_task *t);
void am_record_task_registered(tony_am *am, const am_task *t);
void am_record_task_started(tony_am *am, const am_task *t);
void am_record_task_exit(tony_am *am, const am_task *t);
void am_record_heartbeat_missed(tony_am *am, const am_task *t);
void am_record_task_hung(tony_am *am, const am_task *t, long long idle_ms);
void am_record_stacks(tony_am *am, const am_task *t, const char *path);
void am_record_restart(tony_am *am);
/* A node a task's end marked bad (excluded, or refused by the cap). */
void am_record_node_excluded(tony_am *am, const am_task *t, const am_excluded_node *e);
/* Coordinator loss: this coordinator replaced a lost one (previous: its
 * containers still running), a task came back to it, the recovery ended. */
void am_record_recovering(tony_am *am, int previous);
void am_record_task_adopted(tony_am *am, const am_task *t);
void am_record_adopted(tony_am *am);
void am_record_kill(tony_am *am);
void am_record_finish(tony_am *am);
void am_record_free(tony_am *am);
/* status.json could not be written (its atomic write failed: a full disk):
 * the job's state, app id, final status, diagnostics and the write's error,
 * written over the old file in place (its blocks need no new ones), so
 * that the file never stays at a state the job left. Said in the log
 * when even that fails. */
void am_record_status_in_place(tony_am *am, const char *path);

#endif
