/* The job as JSON (view.c): what GET /v1/job answers, status.json holds and
 * history's metrics.json keeps per task. Reads the coordinator's state,
 * changes nothing. */
#ifndef TONY_AM_VIEW_H
#define TONY_AM_VIEW_H

#include <jansson.h>

#include "am/am_internal.h"

/* The whole job. */
json_t *am_job_json(const tony_am *am);
/* The job with a page of its tasks, from offset, at most limit of them (0:
 * none), and their total and counts by role and state (jobjson.h,
 * JOB_TASKS_TOTAL): GET /v1/job?offset=&limit= or ?tasks=0. */
json_t *am_job_json_page(const tony_am *am, size_t offset, size_t limit);
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
