/* The coordinator's part of a task's environment (taskenv.c), the one
 * writer of the variables common/taskenv.h gives to it: what a task's
 * container gets, and what the single-node command gets. */
#ifndef TONY_AM_TASKENV_H
#define TONY_AM_TASKENV_H

#include "am/am_internal.h"

/* The container env of t in the current attempt (its executor's). */
void am_task_env(const tony_am *am, const am_task *t, tony_env *env);
/* The variables that name the current attempt (SESSION_ID, NUM_AM_RETRIES,
 * TONY_ATTEMPT): in the container env, and again in the "go" answer, since
 * a container kept by an in-place restart was asked for in an earlier one. */
void am_task_attempt_env(const tony_am *am, tony_env *env);
/* The world t's framework env describes (elastic jobs, fsm.h): a view of
 * the plan whose instances are each role's tasks in the world (view owns
 * only its roles array: am_task_world_free), and t's rank in its role. A
 * job that is not elastic sees the plan and t's index as they are. */
void am_task_world(const tony_am *am, const am_task *t, tony_plan *view, int *index);
void am_task_world_free(tony_plan *view);
/* The env of the single-node command, run in work_dir. */
void am_single_node_env(const tony_am *am, const char *work_dir, tony_env *env);

#endif
