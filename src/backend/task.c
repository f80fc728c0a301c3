/* The task half's list of backends (task.h): the executor's questions go to
 * the table its env names, so that they reach the backend that started the
 * container whatever backends this binary has. */
#include "backend/task.h"

#include <stdlib.h>
#include <string.h>

#include "backend/slurm/slurm_task.h"
#include "backend/yarn/yarn_task.h"
#include "common/jobdir.h"
#include "common/taskenv.h"

int tony_task_secret_from_job_dir(char **out, tony_error *err) {
    const char *job_dir = getenv(TASKENV_SECRET_JOB_DIR);
    if (!job_dir || !*job_dir)
        return tony_err(err, "%s is not set, nor %s (%s=%s, in an image): was this executor started by a tony "
                             "coordinator?",
                        TASKENV_SECRET, TASKENV_SECRET_JOB_DIR, TASKENV_BACKEND, getenv(TASKENV_BACKEND));
    return tony_jobdir_secret(job_dir, out, err);
}

/* The local backend puts the secret in the env (or, in an image, in the
 * job dir), sends no credentials, and starts no second coordinator for a
 * job. */
static const tony_task_backend_ops local_ops = {.name = "local", .secret = tony_task_secret_from_job_dir};
static const tony_task_backend_ops none_ops = {.name = "none"};

static const tony_task_backend_ops *const backends[] = {&tony_yarn_task_ops, &local_ops, &tony_slurm_task_ops};

const tony_task_backend_ops *tony_task_backend_find(const char *name) {
    for (size_t i = 0; name && i < sizeof backends / sizeof *backends; i++)
        if (strcmp(backends[i]->name, name) == 0) return backends[i];
    return &none_ops;
}

const tony_task_backend_ops *tony_task_backend(void) { return tony_task_backend_find(getenv(TASKENV_BACKEND)); }

/* For the messages of none's answers: what the env said. */
static const char *env_backend(void) {
    const char *b = getenv(TASKENV_BACKEND);
    return b && *b ? b : "(not set)";
}

int tony_backend_task_secret(char **out, tony_error *err) {
    const tony_task_backend_ops *ops = tony_task_backend();
    if (ops->secret) return ops->secret(out, err);
    return tony_err(err, "%s is not set, and the task's backend (%s=%s) delivers the job's secret no other way: "
                         "was this executor started by a tony coordinator?",
                    TASKENV_SECRET, TASKENV_BACKEND, env_backend());
}

int tony_backend_task_update_credentials(const void *data, size_t len, tony_error *err) {
    const tony_task_backend_ops *ops = tony_task_backend();
    if (ops->update_credentials) return ops->update_credentials(data, len, err);
    return tony_err(err, "the coordinator sent credentials, but the task's backend (%s=%s) has nowhere to put them",
                    TASKENV_BACKEND, env_backend());
}

int tony_backend_task_find_coordinator(char **url, tony_error *err) {
    const tony_task_backend_ops *ops = tony_task_backend();
    *url = NULL;
    return ops->find_coordinator ? ops->find_coordinator(url, err) : 1;
}

void tony_backend_task_user_env(tony_env *env) {
    const tony_task_backend_ops *ops = tony_task_backend();
    if (ops->user_env) ops->user_env(env);
}
