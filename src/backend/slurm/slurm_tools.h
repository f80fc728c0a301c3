/* Slurm's command-line tools, for the client half (and the coordinator's
 * cancel of its own job, slurm_backend.c): whether Slurm is configured here, a job's
 * check against the cluster's nodes (sinfo) before anything is queued, and
 * the job's submission (sbatch), state (squeue, then sacct) and cancel
 * (scancel). Slurm is spoken through its command-line tools, which every
 * Slurm installation has and which read SLURM_CONF; every failure is an
 * error that names the command and says what it said. */
#ifndef TONY_BACKEND_SLURM_TOOLS_H
#define TONY_BACKEND_SLURM_TOOLS_H

#include <stdbool.h>

#include "backend/slurm/slurm_job.h"
#include "common/error.h"
#include "common/strv.h"

/* Slurm's client tools are installed and configured here (SLURM_CONF, or
 * /etc/slurm/slurm.conf). */
bool tony_slurm_configured(void);

/* One node as sinfo describes it. */
typedef struct tony_slurm_node {
    char *name;
    tony_strv partitions; /* the default partition with its '*' removed */
    int cpus;
    long long memory_mb;
    int gpus;             /* gres gpu count (any type) */
    tony_strv features;
} tony_slurm_node;

typedef struct tony_slurm_cluster {
    tony_slurm_node *nodes;
    size_t len;
    char *default_partition; /* NULL when none is marked */
} tony_slurm_cluster;

/* Parses `sinfo -h -N -o '%N|%P|%c|%m|%G|%f'` (one line per node and
 * partition); I/O-free for tests. */
int tony_slurm_cluster_parse(const char *sinfo, tony_slurm_cluster *out, tony_error *err);
void tony_slurm_cluster_free(tony_slurm_cluster *c);
/* Runs sinfo: an unreachable controller is an error saying so. */
int tony_slurm_cluster_read(tony_slurm_cluster *out, tony_error *err);

/* Refuses, naming the key to change, a layout the cluster can never run:
 * an unknown partition, a task bigger than every node of its partition (CPUs,
 * memory, GPUs, the constraint's feature), more components than the
 * partitions' nodes (each needs nodes of its own). I/O-free. */
int tony_slurm_check_layout(const tony_slurm_cluster *c, const tony_plan *plan, const tony_slurm_layout *l,
                            tony_error *err);

/* sbatch script_path from dir; *job_id is Slurm's job id (malloc'ed). */
int tony_slurm_sbatch(const char *script_path, const char *dir, char **job_id, tony_error *err);
/* What sbatch --parsable printed ("123" or "123;cluster") as the job id;
 * I/O-free (the fuzz harness and unit tests use it). */
int tony_slurm_sbatch_parse(const char *out, char **job_id, tony_error *err);

/* The job's state as Slurm says it (PENDING, RUNNING, COMPLETED, FAILED,
 * CANCELLED, TIMEOUT, ...; malloc'ed) from squeue while it is known
 * there, else from sacct; *state NULL when neither knows the job. */
int tony_slurm_job_state(const char *job_id, char **state, tony_error *err);
/* The state word of what squeue -o %T or sacct -P -o State printed (its
 * first line's first word: sacct adds "by UID" or "+"; malloc'ed), NULL
 * when it printed none; I/O-free (the fuzz harness and unit tests use it). */
char *tony_slurm_state_parse(const char *out);
/* Whether a state is one a job never leaves. */
bool tony_slurm_state_final(const char *state);

/* The batch step's (the coordinator's) own Slurm job id, as Slurm sets it. */
#define TONY_SLURM_ENV_JOB_ID "SLURM_JOB_ID"

/* scancel the whole job (every component and step). Slurm takes the
 * cancel of a job that ended but is still remembered (MinJobAge) quietly:
 * no error. */
int tony_slurm_cancel(const char *job_id, tony_error *err);

#endif
