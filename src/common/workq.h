/* A few worker threads for blocking calls that an event loop must not wait
 * on (the YARN coordinator's Hadoop IPC to the ResourceManager and the
 * NodeManagers). The loop submits jobs; each job's `run` happens on a worker
 * thread and its `done` back on the loop thread.
 *
 * Lanes: every job names a lane (e.g. "nm localhost:45454"). Jobs of one lane
 * run one at a time, in submission order; jobs of different lanes run in
 * parallel on up to max_threads threads. Whatever a lane stands for (one
 * server's connection) is therefore only ever used by one thread at a time,
 * without a lock, and a lane whose server hangs holds one thread, never the
 * others or the loop.
 *
 * What crosses threads: only the job's arg. It belongs to the worker during
 * `run` and to the loop thread from `done` on; run must touch nothing else
 * that the loop touches unless that is locked (say so where it is). Every
 * submitted job gets exactly one `done` call, where its owner frees it. */
#ifndef TONY_WORKQ_H
#define TONY_WORKQ_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

typedef struct tony_workq tony_workq;

/* On a worker thread. */
typedef void (*tony_workq_run_fn)(void *arg);
/* On the loop thread (or in tony_workq_drain / _free). ran is false for a job
 * that tony_workq_free cancelled before it started. */
typedef void (*tony_workq_done_fn)(void *arg, bool ran);

/* done callbacks are delivered through base. Starts one thread now (a
 * system that cannot start one fails here, not later) and more on demand. */
tony_workq *tony_workq_new(struct event_base *base, int max_threads, tony_error *err);

/* From the loop thread. lane NULL: no ordering with any other job. */
void tony_workq_submit(tony_workq *q, const char *lane, tony_workq_run_fn run, tony_workq_done_fn done, void *arg);

/* Jobs submitted whose done has not been called yet. */
size_t tony_workq_pending(tony_workq *q);

/* Waits until every job submitted (also by done callbacks meanwhile) has
 * run, calling their done callbacks on this thread: for the end, when the
 * loop no longer dispatches. */
void tony_workq_drain(tony_workq *q);

/* For a caller at the end that waits for some of its jobs with a time
 * limit: calls the done callbacks of the jobs that finished, first waiting
 * up to timeout_ms for one when none has. false: the time passed and no
 * job finished (or none is pending). */
bool tony_workq_wait(tony_workq *q, int timeout_ms);

/* Cancels the jobs that have not started (done with ran = false), waits for
 * the running ones (done with ran = true), joins the threads. */
void tony_workq_free(tony_workq *q);

#endif
