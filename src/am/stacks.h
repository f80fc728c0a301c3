/* The coordinator's side of hang diagnosis' stacks (stacks.c): what it does
 * when the state machine finds a task hung, and the API's stacks verb, by
 * which executors deliver their tasks' stacks and people read them. */
#ifndef TONY_AM_STACKS_H
#define TONY_AM_STACKS_H

#include "am/am_internal.h"

/* AM_ACT_HANG carried out: said in the log and the event log; the
 * attempt's stacks dir made. */
void am_stacks_hang(tony_am *am, const am_task *t, long long idle_ms);
/* POST .../stacks (body already read, secret and attempt checked): writes
 * the text to the job dir, tells the state machine, answers. */
void am_stacks_post(tony_am *am, struct evhttp_request *req, am_task *t, const json_t *body);
/* GET .../stacks?attempt=A: the task's stacks file as text, 404 when none. */
void am_stacks_get(tony_am *am, struct evhttp_request *req, const char *role, int index);

#endif
