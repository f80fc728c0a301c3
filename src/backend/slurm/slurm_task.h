/* The Slurm backend's task half (backend/task.h): the user's process sees
 * no SLURM_* variable that describes the one-task step tony started for its
 * task as if it were the tony job. */
#ifndef TONY_SLURM_TASK_H
#define TONY_SLURM_TASK_H

#include "backend/task.h"
#include "common/env.h"

extern const tony_task_backend_ops tony_slurm_task_ops;

/* Removes from env (the user's process's, built from the step's own) the
 * step's task layout: each task is a step of one task on one node, so
 * SLURM_PROCID=0, SLURM_NTASKS=1, SLURM_NNODES=1... in every task. Lightning
 * (SLURMEnvironment), JAX (SlurmCluster) and submitit would take them for
 * the job's and train alone, or take node 0 of the step's node list for the
 * job's coordinator. The job's own (SLURM_JOB_ID, SLURM_JOB_NODELIST,
 * SLURM_JOB_NUM_NODES, SLURM_STEP_ID, SLURMD_NODENAME...) stay: they are
 * true. A task's place in the tony job is the framework runtime's (RANK,
 * WORLD_SIZE, JAX_PROCESS_ID...). */
void tony_slurm_task_user_env(tony_env *env);

#endif
