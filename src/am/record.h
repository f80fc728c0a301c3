/* Recording what happens to a job (record.c): hooks the loop and the API
 * call as things happen; each writes the event log, the history file and
 * the metrics, which the recorder's part of the handle holds (am_internal.h)
 * and the API and the view read through the functions at the end. Failing
 * to record never disturbs the job, and recording never changes a state. */
#ifndef TONY_AM_RECORD_H
#define TONY_AM_RECORD_H

#include "am/am_internal.h"
#include "am/history.h"
#include "am/metrics.h"
#include "backend/history_mirror.h"

/* The recorder's part (am_internal.h) with an event log keeping
 * keep_events and each task's metrics, but no history files: what
 * am_record_start makes first; alone, for the request fuzzer. */
void am_record_init(tony_am *am, size_t keep_events);
/* The job's start: the recorder's part, and the history files where the
 * configuration puts them (mirror: the backend's, HDFS, or NULL). */
void am_record_start(tony_am *am, const tony_am_history_mirror *mirror);
void am_record_attempt(tony_am *am);
void am_record_task_requested(tony_am *am, const am_task *t);
void am_record_task_registered(tony_am *am, const am_task *t);
void am_record_task_started(tony_am *am, const am_task *t);
void am_record_task_exit(tony_am *am, const am_task *t);
void am_record_heartbeat_missed(tony_am *am, const am_task *t);
void am_record_task_hung(tony_am *am, const am_task *t, long long idle_ms);
void am_record_stacks(tony_am *am, const am_task *t, const char *path);
/* An attempt ended and the job restarts; tasks: am_tasks_json's, kept in
 * history's metrics.json with each task's metric series. */
void am_record_restart(tony_am *am, const json_t *tasks);
/* Elastic jobs: the world changed (fsm.h), an event of the job's history
 * with the world's version and size and each role's count, so that the
 * world over time can be read back. */
void am_record_world_changed(tony_am *am);
/* A node a task's end marked bad (excluded, or refused by the cap). */
void am_record_node_excluded(tony_am *am, const am_task *t, const am_excluded_node *e);
/* Coordinator loss: this coordinator replaced a lost one (previous: its
 * containers still running), a task came back to it, the recovery ended. */
void am_record_recovering(tony_am *am, int previous);
void am_record_task_adopted(tony_am *am, const am_task *t);
void am_record_adopted(tony_am *am);
void am_record_kill(tony_am *am);
/* The job is over; tasks as for am_record_restart. */
void am_record_finish(tony_am *am, const json_t *tasks);
/* Writes status.json (job: am_job_json's); when that fails (a full disk),
 * says so once, keeps why for the job's JSON (am_record_status_error) and
 * writes the job's state, app id, final status, diagnostics and the
 * write's error over the old file in place (its blocks need no new ones),
 * so that the file never stays at a state the job left. */
void am_record_status(tony_am *am, const json_t *job);
/* The history's last copy is over, or given up: the files are closed
 * (before the cluster hears of the end: its client then looks for them). */
void am_record_history_close(tony_am *am);
void am_record_free(tony_am *am);

/* What the recorder keeps, for the API and the view: */
/* GET /v1/events?since=: the events from seq since on, a page at most. */
json_t *am_record_events_json(const tony_am *am, long long since);
/* The task's metrics in the current attempt; NULL when none are kept. */
am_metrics *am_task_metrics(const tony_am *am, const am_task *t);
/* The history files, NULL when none are written. */
const am_history *am_record_history(const tony_am *am);
/* No copy of the history to its mirror is out or waiting (or none is made). */
bool am_record_history_settled(const tony_am *am);
/* Why status.json or the history could not be written; NULL: they were. */
const char *am_record_status_error(const tony_am *am);
const char *am_record_history_error(const tony_am *am);

#endif
