/* The Slurm backend's client half (backend/client.h): a tony job is one
 * Slurm job, its record a job dir on a file system the nodes share. */
#ifndef TONY_BACKEND_SLURM_CLIENT_H
#define TONY_BACKEND_SLURM_CLIENT_H

#include "backend/client.h"

extern const tony_client_backend_ops tony_slurm_client_ops;

#endif
