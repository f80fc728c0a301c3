/* How a tony job maps onto one Slurm job, I/O-free so that the client (which
 * writes the batch script) and the coordinator (which starts each task with
 * srun inside the allocation) compute the same thing from the same plan.
 *
 * A tony job is one Slurm job. Roles that ask for the same thing (memory,
 * vcores, GPUs, partition, constraint) share a component; different shapes
 * make a heterogeneous job with one component per shape. Not one component
 * per role: Slurm places the components of a heterogeneous job on distinct
 * nodes (seen on 22.05: four one-task components never start on three
 * nodes), so a chief and its workers of the same shape would each need a
 * node of their own. Components are ordered most constrained first (GPUs,
 * then a constraint, then a partition), because the controller places them
 * in order and a plain component taken first can use up the only node a
 * GPU component fits on. The coordinator runs in the batch step, on the
 * first node of component 0; a single-node job's command needs the
 * coordinator's own resources (tony.am.*), so its job has that one
 * component. */
#ifndef TONY_BACKEND_SLURM_JOB_H
#define TONY_BACKEND_SLURM_JOB_H

#include <stddef.h>

#include "common/error.h"
#include "common/strv.h"
#include "conf/conf.h"
#include "conf/plan.h"

typedef struct tony_slurm_component {
    int ntasks;            /* the tasks of its roles, all instances */
    int cpus_per_task;
    long long mem_per_cpu_mb; /* a task's memory over its CPUs, rounded up */
    int gpus_per_task;
    const char *partition; /* NULL: the cluster's default */
    const char *constraint; /* the roles' node label, NULL: none */
    tony_strv roles;       /* the role names placed in it */
} tony_slurm_component;

typedef struct tony_slurm_layout {
    tony_slurm_component *items;
    size_t len;
} tony_slurm_layout;

/* The layout of plan. Partitions come from tony.slurm.<role>.partition,
 * else tony.slurm.partition; an error names a key whose value Slurm would
 * refuse. */
int tony_slurm_layout_plan(const tony_plan *plan, const tony_conf *conf, tony_slurm_layout *out, tony_error *err);
void tony_slurm_layout_free(tony_slurm_layout *l);
/* The component role is placed in, or -1. */
int tony_slurm_layout_component(const tony_slurm_layout *l, const char *role);

/* What the batch script says besides the layout. */
typedef struct tony_slurm_script {
    const char *job_name;   /* TonY's application name: what squeue and sacct show */
    const char *output;     /* the batch step's stdout and stderr (the coordinator's own output) */
    const char *account;    /* tony.slurm.account, or NULL */
    long long time_limit_ms; /* tony.application.timeout, 0: the partition's limit */
    const char *am_command; /* the coordinator's command line, already quoted for sh */
} tony_slurm_script;

/* The whole batch script (#SBATCH lines, one "hetjob" between components),
 * malloc'ed. */
char *tony_slurm_batch_script(const tony_slurm_layout *l, const tony_slurm_script *s);

/* The srun words that start one task of role (in component) inside the
 * allocation, before the executor's own argv: one task on one node, its
 * CPUs, memory and GPUs exactly, in its component. */
void tony_slurm_srun_argv(const tony_slurm_layout *l, int component, const char *job_step_name, tony_strv *argv);

/* The time limit Slurm is given for a job whose own timeout is
 * time_limit_ms: whole minutes, with room for the coordinator to stop
 * the tasks and record the end before Slurm kills it. */
long long tony_slurm_time_limit_minutes(long long time_limit_ms);

#endif
