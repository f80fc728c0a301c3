/* The jax runtime: what jax.distributed.initialize() reads from the
 * environment — the coordinator's address, the number of processes and this
 * process's id — with the coordinator task given process id 0. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

/* The chief when there is one (it is TonY's chief, and it is where users put
 * rank-0 work), else worker 0. */
static const char *coordinator_role(const tony_plan *plan) {
    const tony_role *chief = tony_plan_role(plan, "chief");
    return chief && chief->instances > 0 ? "chief" : "worker";
}

/* jax.distributed requires the coordinator service to run in process 0, so
 * the coordinator's role is numbered first, then the other tracked roles in
 * plan order, each by task index. -1 for an untracked or sidecar task, which
 * is not a JAX process. */
static int process_id(const tony_plan *plan, const char *role, int index) {
    const char *coord = coordinator_role(plan);
    const tony_role *first = tony_plan_role(plan, coord);
    int id = 0;
    if (first && first->kind == TONY_ROLE_TRACKED) {
        if (strcmp(role, coord) == 0) return index;
        id = first->instances;
    }
    for (size_t i = 0; i < plan->nroles; i++) {
        const tony_role *r = &plan->roles[i];
        if (r->kind != TONY_ROLE_TRACKED || strcmp(r->name, coord) == 0) continue;
        if (strcmp(r->name, role) == 0) return id + index;
        id += r->instances;
    }
    return -1;
}

static int jax_task_env(const tony_runtime_task *task, tony_env *env, tony_error *err) {
    /* Left unset so that each process uses every device it can see; which
     * GPUs those are is decided by the GPU allocation (CUDA_VISIBLE_DEVICES). */
    tony_env_unset(env, "JAX_LOCAL_DEVICE_IDS");
    int pid = process_id(task->plan, task->role, task->index);
    if (pid < 0) return 0; /* ps, tensorboard...: not part of the JAX job */
    tony_env_setf(env, "JAX_NUM_PROCESSES", "%d", tony_plan_tracked_tasks(task->plan));
    tony_env_setf(env, "JAX_PROCESS_ID", "%d", pid);

    const char *coord = coordinator_role(task->plan);
    char *host = NULL;
    int port = 0;
    if (tony_cluster_spec_addr(task->cluster_spec, coord, 0, &host, &port) < 0) {
        if (!task->plan->gang) return 0; /* FCFS: the coordinator may not have registered yet */
        return tony_err(err, "the cluster spec has no address for %s:0, which hosts the jax coordinator "
                             "(JAX_COORDINATOR_ADDRESS)", coord);
    }
    bool v6 = strchr(host, ':') != NULL;
    tony_env_setf(env, "JAX_COORDINATOR_ADDRESS", v6 ? "[%s]:%d" : "%s:%d", host, port);
    free(host);
    return 0;
}

static int jax_validate(const tony_plan *plan, tony_error *err) {
    const tony_role *chief = tony_plan_role(plan, "chief");
    const tony_role *worker = tony_plan_role(plan, "worker");
    if ((!chief || chief->instances < 1) && (!worker || worker->instances < 1))
        return tony_err(err, "the jax framework needs a 'chief' or 'worker' role to host its coordinator: "
                             "set tony.worker.instances to 1 or more");
    return 0;
}

/* Multi-process JAX runs SPMD programs whose collectives span every process:
 * one lost process blocks all the others. */
static bool jax_lockstep(const tony_plan *plan) {
    (void)plan;
    return true;
}

const tony_runtime tony_runtime_jax = {
    .name = "jax",
    .validate = jax_validate,
    .lockstep = jax_lockstep,
    .task_env = jax_task_env,
};
