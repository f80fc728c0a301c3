/* The task executor (TonY's TaskExecutor), run in every container: unpack the
 * job's files, reserve the task's port, register with the coordinator and
 * wait for the gang, start the user's command with the framework's env in
 * its own process group, heartbeat while it runs, and exit with its code. */
#ifndef TONY_EXECUTOR_H
#define TONY_EXECUTOR_H

/* Reads its settings from the container env the coordinator set (TONY_AM_URL,
 * TONY_SECRET, TONY_TASK_ID, TONY_ATTEMPT, ...). Returns the exit code: the
 * user process's own. */
int tony_executor_main(void);

#endif
