/* The job as JSON (view.c): what GET /v1/job answers, status.json holds and
 * history's metrics.json keeps per task. Reads the coordinator's state,
 * changes nothing. */
#ifndef TONY_AM_VIEW_H
#define TONY_AM_VIEW_H

#include <jansson.h>

#include "am/am_internal.h"
#include "common/error.h"

/* The whole job. */
json_t *am_job_json(const tony_am *am);
/* Which tasks a page lists (GET /v1/job?state=&role=): those in one of
 * the states and of the role; a zero filter takes every task. */
typedef struct am_job_filter {
    unsigned states;  /* a bit per task state word (am_job_filter_parse); 0: any */
    const char *role; /* the plan's name of the role (or the single-node task's); NULL: any */
} am_job_filter;
/* f from the query's state (a comma list of task states, any case) and role
 * (a role of this job), either NULL for any; -1 with err naming the
 * parameter and what it allows. */
int am_job_filter_parse(const tony_am *am, const char *states, const char *role, am_job_filter *f, tony_error *err);
/* The job with a page of the tasks filter takes (NULL: every task), from
 * offset among them, at most limit of them (0: none), with how many it
 * takes, every task's total and their counts by role and state (jobjson.h,
 * JOB_TASKS_TOTAL): GET /v1/job?offset=&limit=&state=&role= or ?tasks=0. */
json_t *am_job_json_page(const tony_am *am, size_t offset, size_t limit, const am_job_filter *filter);
/* Every task of the job's current attempt, in job.tasks' order, as
 * am_task_json has them (without single-node mode's command): what
 * history's metrics.json keeps of an attempt. */
json_t *am_tasks_json(const tony_am *am);
/* One task of it (the job JSON's "tasks" entries). */
json_t *am_task_json(const tony_am *am, const am_task *t);
/* The task serving TensorBoard now: the one that reserved TB_PORT (the
 * sidecar, else the chief), running, with something listening there; or
 * NULL. */
const am_task *am_view_tensorboard_task(const tony_am *am);

#endif
