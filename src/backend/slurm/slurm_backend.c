/* Starts each task as a Slurm job step: the local backend's containers with
 * an srun placement (see slurm_backend.h). */
#include "backend/slurm/slurm_backend.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "backend/local/local.h"
#include "backend/slurm/slurm_job.h"
#include "backend/slurm/slurm_tools.h"
#include "common/jobjson.h"
#include "common/log.h"
#include "common/taskenv.h"
#include "runtime/runtime.h"

/* srun hands SIGUSR1 to the task, the executor, which stops its user
 * process (SIGTERM, then SIGKILL) and ends; SIGTERM makes srun end the step
 * at once, which with proctrack/pgid reaches the executor's process group
 * only, so it is the fallback, this long after. */
#define SLURM_STOP_GRACE_MS 10000

typedef struct slurm_placement {
    tony_local_placement base;
    tony_plan plan;
    tony_slurm_layout layout;
    char *job_dir; /* holds the secret file each task's executor reads */
    bool killed; /* the job's final status is KILLED */
} slurm_placement;

static int slurm_wrap(void *ctx, const tony_launch *l, tony_strv *prefix, tony_env *env, tony_error *err) {
    slurm_placement *p = ctx;
    int component = tony_slurm_layout_component(&p->layout, l->role);
    if (component < 0)
        return tony_err(err, "role %s has no component in this Slurm job; resubmit the job", l->role);
    char *step = tony_sprintf("%s:%d", l->role, l->index);
    tony_slurm_srun_argv(&p->layout, component, step, prefix);
    free(step);
    /* Slurm sets CUDA_VISIBLE_DEVICES in a step that has GPUs; one without
     * must not see the batch step's (inherited through srun's env). */
    if (l->gpus == 0) {
        tony_env_set(env, TASKENV_CUDA_VISIBLE_DEVICES, "");
        tony_env_set(env, TASKENV_NVIDIA_VISIBLE_DEVICES, "void");
    }
    /* Slurm ends a step by its tasks' process group (proctrack/pgid) or
     * cgroup: the user's process stays in the executor's group, so that a
     * step Slurm kills (an executor that could not stop it first) leaves
     * nothing behind. */
    tony_env_set(env, TASKENV_SHARE_PROCESS_GROUP, "1");
    /* The step's env travels in clear in srun's launch RPC to slurmd (and
     * slurmstepd keeps it): the executor reads the secret from the job dir
     * (0700, its file 0600) on the file system the nodes share instead. */
    tony_env_unset(env, TASKENV_SECRET);
    tony_env_set(env, TASKENV_SECRET_JOB_DIR, p->job_dir);
    return 0;
}

/* A task in an image runs as `srun ... -- podman run ... image tony
 * executor`: the runtime's process is the step's task, so srun's stop
 * signal (SIGUSR1) and scancel's SIGTERM reach it and it hands them to the
 * executor in the container. Podman's conmon would otherwise leave for a
 * cgroup of its own; no-conmon keeps it (and so its container's exit) in
 * the step's. The cluster numbered the step's GPUs, not this backend: a
 * role with GPUs and an image is refused at submit (slurm_client.c). */
static void slurm_image_run(void *ctx, const tony_launch *l, tony_container_run *run) {
    (void)ctx;
    (void)l;
    const char *base = strrchr(run->runtime, '/');
    if (strcmp(base ? base + 1 : run->runtime, "podman") == 0) run->cgroups = "no-conmon";
    run->gpu_ids = NULL;
    run->ngpus = 0;
}

static int slurm_check_plan(void *ctx, const tony_plan *plan, tony_error *err) {
    slurm_placement *p = ctx;
    for (size_t i = 0; i < plan->nroles; i++)
        if (tony_slurm_layout_component(&p->layout, plan->roles[i].name) < 0)
            return tony_err(err, "role %s has no component in this Slurm job; resubmit the job", plan->roles[i].name);
    return 0;
}

static void slurm_finish(void *ctx, const char *final_status) {
    slurm_placement *p = ctx;
    p->killed = strcmp(final_status, JOB_FINAL_STATUS_KILLED) == 0;
}

/* A killed tony job (tony kill, a following submit's Ctrl-C, the web page,
 * a SIGTERM) would read FAILED in Slurm's records, the coordinator's exit
 * code being non-zero; admins read sacct, where scancel's CANCELLED is what
 * a kill looks like. So the coordinator cancels its own Slurm job, as its
 * last act: the history, status.json and every task's end are written, the
 * steps gone (shutdown), so the cancel ends nothing of the job's but this
 * process. Slurm marks the job CANCELLED at once and keeps that whatever
 * the batch step's exit; SIGTERM, which the cancel then sends this
 * process, is blocked so that the rest of the teardown (the log's last
 * lines) still runs. Here rather than in the client's kill, which the
 * other ways of killing a job never pass through; the client's own scancel
 * after the coordinator's end stays a backstop (a second cancel of an
 * ended job is no error). */
static void cancel_own_job(void) {
    const char *id = getenv(TONY_SLURM_ENV_JOB_ID);
    if (!id || !*id) {
        tony_warn("%s is not set: the killed job's Slurm job is not cancelled and reads FAILED in sacct",
                  TONY_SLURM_ENV_JOB_ID);
        return;
    }
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, NULL);
    tony_error err;
    if (tony_slurm_cancel(id, &err))
        tony_warn("%s; Slurm job %s reads FAILED in sacct rather than CANCELLED", err.msg, id);
    else
        tony_info("the job was killed: cancelled its Slurm job %s, which Slurm records as CANCELLED", id);
}

static void slurm_placement_free(void *ctx) {
    slurm_placement *p = ctx;
    if (p->killed) cancel_own_job();
    tony_slurm_layout_free(&p->layout);
    tony_plan_free(&p->plan);
    free(p->job_dir);
    free(p);
}

tony_backend *tony_backend_slurm_new(const tony_backend_opts *o, tony_error *err) {
    slurm_placement *p = tony_xcalloc(1, sizeof *p);
    p->base = (tony_local_placement){.backend_name = "slurm", .ctx = p, .wrap = slurm_wrap,
                                     .check_plan = slurm_check_plan, .free = slurm_placement_free,
                                     .image_run = slurm_image_run, .finish = slurm_finish,
                                     .stop_signal = SIGUSR1, .kill_signal = SIGTERM,
                                     .stop_grace_ms = SLURM_STOP_GRACE_MS};
    if (tony_runtime_plan(o->conf, &p->plan, err) || tony_slurm_layout_plan(&p->plan, o->conf, &p->layout, err)) {
        tony_plan_free(&p->plan);
        free(p);
        return NULL;
    }
    p->job_dir = tony_strdup(o->job_dir);
    return tony_backend_local_new_placed(o->base, o->reaper, o->job_dir, &p->base, err);
}
