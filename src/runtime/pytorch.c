/* The pytorch runtime: TonY's INIT_METHOD/RANK/WORLD for init_process_group
 * with tcp://, plus the env:// variables (MASTER_ADDR, MASTER_PORT,
 * WORLD_SIZE, LOCAL_RANK...) that current torch.distributed and DDP read. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

static int worker_instances(const tony_plan *plan) {
    const tony_role *w = tony_plan_role(plan, "worker");
    return w ? w->instances : 0;
}

/* Counts the tasks of role on host in the spec: all of them (*size) and
 * those before index (*rank). -1 when this task's own entry is missing (an
 * FCFS spec may be partial). */
static int local_rank(const json_t *spec, const char *role, int index, int *rank, int *size) {
    char *mine = NULL;
    if (tony_cluster_spec_addr(spec, role, index, &mine, NULL) < 0) return -1;
    int n = tony_cluster_spec_count(spec, role);
    *rank = *size = 0;
    for (int j = 0; j < n; j++) {
        char *h = NULL;
        if (tony_cluster_spec_addr(spec, role, j, &h, NULL) == 0 && strcmp(h, mine) == 0) {
            (*size)++;
            if (j < index) (*rank)++;
        }
        free(h);
    }
    free(mine);
    return 0;
}

static int pt_task_env(const tony_runtime_task *task, tony_env *env, tony_error *err) {
    int world = worker_instances(task->plan);
    if (world == 0) world = tony_cluster_spec_count(task->cluster_spec, "worker");
    /* Rank is the task index, as in TonY: it only makes sense with workers
     * alone, which validate() cannot force because TonY allows other roles. */
    tony_env_setf(env, "RANK", "%d", task->index);
    tony_env_setf(env, "WORLD", "%d", world); /* TonY's name, kept for old scripts */
    tony_env_setf(env, "WORLD_SIZE", "%d", world);

    char *host = NULL;
    int port = 0;
    if (tony_cluster_spec_addr(task->cluster_spec, "worker", 0, &host, &port) < 0) {
        /* In FCFS a task may start before worker 0 registered; it then gets
         * no rendezvous address, like TensorFlow tasks get no TF_CONFIG. */
        if (!task->plan->gang) return 0;
        return tony_err(err,
                        "the cluster spec has no address for worker:0, which hosts the pytorch rendezvous "
                        "(INIT_METHOD, MASTER_ADDR); set tony.worker.instances to 1 or more");
    }
    bool v6 = strchr(host, ':') != NULL;
    tony_env_setf(env, "INIT_METHOD", v6 ? "tcp://[%s]:%d" : "tcp://%s:%d", host, port);
    tony_env_set(env, "MASTER_ADDR", host);
    tony_env_setf(env, "MASTER_PORT", "%d", port);
    free(host);

    int lrank, lsize;
    if (local_rank(task->cluster_spec, task->role, task->index, &lrank, &lsize) == 0) {
        tony_env_setf(env, "LOCAL_RANK", "%d", lrank);
        tony_env_setf(env, "LOCAL_WORLD_SIZE", "%d", lsize);
    }
    return 0;
}

/* Worker 0's address is the rendezvous point, and TonY itself crashes on a
 * plan without workers; say so before anything starts. */
static int pt_validate(const tony_plan *plan, tony_error *err) {
    if (worker_instances(plan) < 1)
        return tony_err(err,
                        "the pytorch framework needs a 'worker' role (worker 0 hosts the rendezvous): "
                        "set tony.worker.instances to 1 or more");
    return 0;
}

/* DDP all-reduces gradients every step: when one rank dies the others fail
 * within milliseconds, and when one hangs they wait for the process group's
 * 30-minute timeout. Either way the survivors cannot go on. */
static bool pt_lockstep(const tony_plan *plan) {
    (void)plan;
    return true;
}

const tony_runtime tony_runtime_pytorch = {
    .name = "pytorch",
    .validate = pt_validate,
    .lockstep = pt_lockstep,
    .task_env = pt_task_env,
};
