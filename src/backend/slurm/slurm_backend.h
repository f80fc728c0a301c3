/* The Slurm backend's coordinator half: the coordinator runs in the batch
 * step of the tony job's Slurm job, and each task's container is a job step
 * started with srun in the component its role belongs to (slurm_job.h).
 * Containers are otherwise the local backend's (a child process session
 * per task, logs under the job dir, which Slurm nodes share), placed by
 * srun instead of started here. */
#ifndef TONY_BACKEND_SLURM_BACKEND_H
#define TONY_BACKEND_SLURM_BACKEND_H

#include <event2/event.h>

#include "backend/backend.h"

tony_backend *tony_backend_slurm_new(const tony_backend_opts *o, tony_error *err);

#endif
