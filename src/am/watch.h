/* Executors' watches (POST /v1/tasks/<role>/<index>/watch): a long poll
 * each running executor keeps open, answered "stop" the moment its
 * attempt ends or its own result is in, so that the executors stop their
 * processes at once rather than at their next heartbeat. That makes an
 * in-place restart as fast as the processes stop. api.c takes the polls
 * and says when to answer; nothing else calls in here. */
#ifndef TONY_AM_WATCH_H
#define TONY_AM_WATCH_H

#include "am/am_internal.h"

/* The longest a watch is held before it is answered "wait" (the executor
 * polls again). */
#define AM_WATCH_POLL_MS 15000

/* Holds req for task t, or answers it "stop" now if that is due. */
void am_watch_add(tony_am *am, struct evhttp_request *req, am_task *t);
/* Answers "stop" to every watch that is due: its attempt is over, the
 * job is done, or its task's executor reported the result. */
void am_watch_release(tony_am *am);
/* The same after t's executor reported its result: t's watch, found by its
 * slot (issue 26: no walk over every watch for each task's end), or every
 * due one once the attempt is over. */
void am_watch_release_task(tony_am *am, const am_task *t);
/* Answers "wait" to the watches held longer than AM_WATCH_POLL_MS. */
void am_watch_expire(tony_am *am, long long now_ms);
/* Drops every watch unanswered (the coordinator is going away). */
void am_watch_free(tony_am *am);

#endif
