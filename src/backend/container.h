/* Tasks in their role's image (tony.docker.*): which container runtime
 * (podman or docker) runs them, the checks a submit makes before anything
 * starts, the `run` command line that puts an executor in a container, and
 * finding and removing a job's containers by their label. Shared by the
 * backends that start containers on a machine of their own (local, and
 * Slurm inside each task's step): a backend keeps the runtime's process as the container's main
 * process and watches it as it would a bare executor. */
#ifndef TONY_BACKEND_CONTAINER_H
#define TONY_BACKEND_CONTAINER_H

#include <stdbool.h>

#include "common/env.h"
#include "common/error.h"
#include "conf/plan.h"

/* Every container of a job carries this label, valued with the job's
 * application id: the sweeps below, and anyone's `podman ps --filter
 * label=tony.app=<id>`, find a job's containers by it. */
#define TONY_CONTAINER_LABEL_APP "tony.app"
/* The runtime to use: want ("podman" or "docker", tony.docker.runtime), or
 * NULL for the first of them on PATH that answers (a docker CLI without a
 * daemon does not). *path malloc'ed. Errors name the key. */
int tony_container_runtime(const char *want, char **path, tony_error *err);

/* What a submit checks for a plan with images, before anything starts:
 * a runtime, every role's image present in it and holding /bin/sh, every
 * mount well-formed with an existing source; with am, the coordinator's
 * image (plan->am_image) too, where the backend runs something in it.
 * Each error names the key and the image. 0 when no image is used. */
int tony_container_check_plan(const tony_plan *plan, bool am, tony_error *err);

/* One container to run. */
typedef struct tony_container_run {
    const char *runtime;   /* tony_container_runtime's path */
    const char *image;
    const char *network;   /* NULL: the host's (the frameworks' ports must be reachable) */
    const char *mounts;    /* tony.docker.containers.mount, TonY's syntax, or NULL */
    const char *name;      /* the container's name, unique on this machine */
    const char *app_id;    /* for TONY_CONTAINER_LABEL_APP */
    const char *job_dir;   /* mounted at the same path, read-write */
    const char *self_root; /* a self-contained tony, mounted read-only at the same path; NULL: none */
    const char *work_dir;  /* the task's cwd */
    long long memory_mb;   /* > 0: the runtime's memory limit */
    int vcores;            /* > 0: the runtime's CPU limit */
    const int *gpu_ids;    /* the task's GPUs (their /dev/nvidiaN), ngpus of them */
    int ngpus;
    const tony_env *env;   /* passed by name only: the runtime reads the values from its own env */
    char *const *argv;     /* the command in the container, NULL-terminated */
    const char *cgroups;   /* podman's --cgroups mode (e.g. no-conmon), NULL: the runtime's default */
} tony_container_run;

/* Appends the runtime's whole command line (runtime path first) to out.
 * No value of env appears in it; the runtime must be started with env in
 * its environment. */
void tony_container_run_argv(const tony_container_run *r, tony_strv *out);

/* Removes container name at once (killing what runs in it); nothing
 * when it is gone already. Blocks for the runtime's answer. */
void tony_container_remove(const char *runtime, const char *name);

/* Removes every container labelled with app_id; how many there were. */
int tony_container_sweep(const char *runtime, const char *app_id);

/* A self-contained tony for containers: this one's own tree when it is
 * one, else a tree packed from this build (common/self.h), made once per
 * build under cache_dir (tony-<build id>, as the Slurm client's) and
 * reused. *root malloc'ed; its bin/tony is what to run. */
int tony_container_self(const char *cache_dir, char **root, tony_error *err);

#endif
