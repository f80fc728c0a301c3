/* The Slurm backend's task half: the step's task-layout variables taken
 * out of the user's process's env (slurm_task.h says why). */
#include "backend/slurm/slurm_task.h"

#include <stddef.h>

/* What slurmstepd sets about the step's tasks and nodes (srun's "OUTPUT
 * ENVIRONMENT VARIABLES"), each of which is 0 or 1 in a one-task step
 * whatever the tony job's size. */
static const char *const step_layout[] = {
    "SLURM_PROCID",         "SLURM_LOCALID",         "SLURM_NODEID",         "SLURM_GTIDS",
    "SLURM_NTASKS",         "SLURM_NPROCS",          "SLURM_NNODES",         "SLURM_NODELIST",
    "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NUM_NODES",
    "SLURM_STEP_NODELIST",  "SLURM_STEP_TASKS_PER_NODE",
};

void tony_slurm_task_user_env(tony_env *env) {
    for (size_t i = 0; i < sizeof step_layout / sizeof *step_layout; i++) tony_env_unset(env, step_layout[i]);
}

/* The secret comes from the job dir (slurm_backend.c keeps it out of the
 * step's env); no credentials, no second coordinator. */
const tony_task_backend_ops tony_slurm_task_ops = {
    .name = "slurm", .secret = tony_task_secret_from_job_dir, .user_env = tony_slurm_task_user_env};
