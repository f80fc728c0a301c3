/* Coordinator loss on YARN: where the job's coordinator is now. Each
 * coordinator (each AM attempt) writes its API's URL into a small file in
 * the job's staging dir on HDFS as it starts; when a task's executor no
 * longer reaches its coordinator, it reads the file until a new URL shows
 * (the next AM attempt, which keeps the task containers running) and comes
 * back to that coordinator with its process still running. HDFS is the one
 * place every container of the job can read with what it holds (the job's
 * delegation token on a secure cluster), wherever the next AM lands. */
#ifndef TONY_YARN_COORDFILE_H
#define TONY_YARN_COORDFILE_H

#include "common/env.h"
#include "common/error.h"

/* Env of the AM container (set by `tony submit`) and of every task
 * container (copied by the coordinator): the file's HDFS path. */
#define TONY_YARN_COORDINATOR_FILE_ENV "TONY_YARN_COORDINATOR_FILE"
/* Its name in the staging dir. */
#define TONY_YARN_COORDINATOR_FILE "coordinator.json"

/* The AM side: writes {"url", "am_attempt"} to the file (through a local
 * copy in local_dir), with the job's HDFS delegation token (NULL on an
 * insecure cluster). Blocking (seconds when the NameNode is slow): call it
 * off the event loop. 1 when the job has no such file (submitted without
 * keep-containers, or by an older tony): nothing written. */
int yarn_coordfile_write(const char *hdfs_token, const char *local_dir, const char *url, int am_attempt,
                         tony_error *err);
/* What a task container needs to read it: the file's path and the HDFS
 * settings of the AM's env, copied into env (nothing when the job has no
 * file). */
void yarn_coordfile_task_env(tony_env *env);
/* The task side is yarn_task.h's tony_yarn_task_find_coordinator. */

#endif
