/* The task half of the backend seam: what `tony executor`, inside a task's
 * container, asks of the backend that started the container, so that
 * executor/ names no backend. The coordinator writes its backend's name
 * into every task's env (TASKENV_BACKEND, common/taskenv.h); the executor's
 * questions go to that backend's table of ops below. A backend that
 * delivers everything in the env and never starts a second coordinator
 * (local, Slurm) has a table with no ops, and the answers are those of
 * "none" (below each op).
 *
 * Every op runs on the executor's one thread and may block (YARN: a
 * WebHDFS read); none keeps a callback. */
#ifndef TONY_BACKEND_TASK_H
#define TONY_BACKEND_TASK_H

#include <stddef.h>

#include "common/env.h"
#include "common/error.h"

typedef struct tony_task_backend_ops {
    const char *name; /* as tony_backend_ops.name: the value of TASKENV_BACKEND */
    /* The job's secret where the backend delivered it instead of the env
     * (YARN: a secret in the container's token file, because YARN writes a
     * container's env into launch_container.sh in its log dir, which the
     * NodeManager serves). *out malloc'ed; an error says where it looked.
     * NULL: the secret is always in TASKENV_SECRET (none: an error saying
     * it is not). */
    int (*secret)(char **out, tony_error *err);
    /* Installs credentials the coordinator sent with a heartbeat answer
     * (tony_backend_ops.task_credentials) where the task's processes find
     * them (YARN: rewrites the container's token file, atomically). NULL:
     * the backend never sends any (none: an error). */
    int (*update_credentials)(const void *data, size_t len, tony_error *err);
    /* When the task's coordinator no longer answers: where the job's
     * coordinator is now, should the cluster have started a new one that
     * keeps the task containers (YARN's next AM attempt). 0 and *url
     * (malloc'ed; still the old one until the new coordinator is up); 1
     * when no new coordinator can come for this job (the executor stops
     * its task as before); -1 and err when the answer cannot be read now
     * (try again). NULL: none ever comes (none: 1). */
    int (*find_coordinator)(char **url, tony_error *err);
    /* Last word on the user's process's env (this process's own overlaid
     * with the coordinator's): takes out what the container's launcher set
     * that would mislead the user's process (Slurm: the one-task step's
     * layout, slurm/slurm_task.h). NULL: nothing to change. */
    void (*user_env)(tony_env *env);
} tony_task_backend_ops;

/* The table of the backend called name; "none" (every op NULL) for NULL,
 * "" or a name no backend has. */
const tony_task_backend_ops *tony_task_backend_find(const char *name);
/* The table of this task's backend, named by TASKENV_BACKEND in its env. */
const tony_task_backend_ops *tony_task_backend(void);

/* The secret from the job dir that TASKENV_SECRET_JOB_DIR names: a local
 * task's in an image (backend/container.h; the dir mounted into its
 * container), whose env is in plain view of whoever may inspect it, and
 * every Slurm task's, whose step env srun sends to slurmd in clear. The
 * local and Slurm backends' secret op. */
int tony_task_secret_from_job_dir(char **out, tony_error *err);

/* The executor's questions, answered by tony_task_backend()'s ops (or
 * none's answer where it has none). */
int tony_backend_task_secret(char **out, tony_error *err);
int tony_backend_task_update_credentials(const void *data, size_t len, tony_error *err);
int tony_backend_task_find_coordinator(char **url, tony_error *err);
void tony_backend_task_user_env(tony_env *env);

#endif
