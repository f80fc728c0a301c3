/* The pytorch runtime: torchrun's contract (the variables torch's elastic
 * agent gives each process, which DDP's env://, Lightning, accelerate and
 * Kubeflow read), plus TonY's INIT_METHOD/WORLD for tcp:// scripts.
 * Model: a tony task is a node of its own running one process. */
#include <stdlib.h>
#include <string.h>

#include "conf/keys.h"
#include "runtime/runtime.h"

/* The role whose task 0 hosts the rendezvous (torch's TCPStore runs in
 * rank 0, so its tasks are numbered first). */
#define PT_MASTER_ROLE "worker"

static int worker_instances(const tony_plan *plan) {
    const tony_role *w = tony_plan_role(plan, PT_MASTER_ROLE);
    return w ? w->instances : 0;
}

/* The torch process group is every tracked task: the workers first (rank i
 * is worker:i, as in TonY, and rank 0 is where MASTER_ADDR points), then the
 * other tracked roles in plan order. Untracked and sidecar roles (a ps, a
 * TensorBoard) are not part of it. *rank is -1 for them; *world counts the
 * group. */
static void group_rank(const tony_plan *plan, const char *role, int index, int *rank, int *world) {
    *rank = -1;
    *world = 0;
    const tony_role *w = tony_plan_role(plan, PT_MASTER_ROLE);
    if (w && w->kind == TONY_ROLE_TRACKED) {
        if (strcmp(role, PT_MASTER_ROLE) == 0) *rank = index;
        *world = w->instances;
    }
    for (size_t i = 0; i < plan->nroles; i++) {
        const tony_role *r = &plan->roles[i];
        if (r->kind != TONY_ROLE_TRACKED || strcmp(r->name, PT_MASTER_ROLE) == 0) continue;
        if (strcmp(r->name, role) == 0) *rank = *world + index;
        *world += r->instances;
    }
}

static int pt_task_env(const tony_runtime_task *task, tony_env *env, tony_error *err) {
    const tony_plan *plan = task->plan;
    int rank, world;
    group_rank(plan, task->role, task->index, &rank, &world);
    if (rank < 0) return 0; /* not a torch process of this job */
    const tony_role *role = tony_plan_role(plan, task->role);

    /* torchrun's meanings (torch/distributed/elastic/agent/server): RANK and
     * WORLD_SIZE over every process; GROUP_* over the nodes (agents), here
     * one per task; ROLE_* over the processes of one role; LOCAL_* within
     * the node. One process per node makes RANK the node's rank and
     * LOCAL_RANK 0 whatever else shares the host, which is what Lightning
     * needs (it takes the node from GROUP_RANK/NODE_RANK and its device from
     * LOCAL_RANK), and cuda:LOCAL_RANK is right because each task sees only
     * its own GPUs (CUDA_VISIBLE_DEVICES). */
    tony_env_setf(env, "RANK", "%d", rank);
    tony_env_setf(env, "WORLD_SIZE", "%d", world);
    tony_env_setf(env, "WORLD", "%d", world); /* TonY's name, kept for old scripts */
    tony_env_set(env, "LOCAL_RANK", "0");
    tony_env_set(env, "LOCAL_WORLD_SIZE", "1");
    tony_env_setf(env, "GROUP_RANK", "%d", rank);
    tony_env_setf(env, "GROUP_WORLD_SIZE", "%d", world);
    tony_env_setf(env, "NODE_RANK", "%d", rank); /* Lightning's and Kubeflow's name for GROUP_RANK */
    tony_env_setf(env, "ROLE_RANK", "%d", task->index);
    tony_env_setf(env, "ROLE_WORLD_SIZE", "%d", role ? role->instances : 0);
    tony_env_set(env, "ROLE_NAME", task->role);
    /* A tony attempt restarts every process, as torch's agent restarts its
     * workers: the attempt is torch's restart count, tony.am.retry-count its
     * max_restarts. */
    tony_env_setf(env, "TORCHELASTIC_RESTART_COUNT", "%d", task->attempt);
    tony_env_setf(env, "TORCHELASTIC_MAX_RESTARTS", "%d", plan->retry_count);
    if (task->run_id) tony_env_set(env, "TORCHELASTIC_RUN_ID", task->run_id);

    char *host = NULL;
    int port = 0;
    if (tony_cluster_spec_addr(task->cluster_spec, PT_MASTER_ROLE, 0, &host, &port) < 0) {
        /* In FCFS a task may start before worker 0 registered; it then gets
         * no rendezvous address, like TensorFlow tasks get no TF_CONFIG. */
        if (!plan->gang) return 0;
        return tony_err(err,
                        "the cluster spec has no address for worker:0, which hosts the pytorch rendezvous "
                        "(INIT_METHOD, MASTER_ADDR); set tony.worker.instances to 1 or more");
    }
    bool v6 = strchr(host, ':') != NULL;
    tony_env_setf(env, "INIT_METHOD", v6 ? "tcp://[%s]:%d" : "tcp://%s:%d", host, port);
    tony_env_set(env, "MASTER_ADDR", host);
    tony_env_setf(env, "MASTER_PORT", "%d", port);
    free(host);
    return 0;
}

/* Worker 0's address is the rendezvous point, and TonY itself crashes on a
 * plan without workers; say so before anything starts. */
static int pt_validate(const tony_plan *plan, tony_error *err) {
    const tony_role *w = tony_plan_role(plan, PT_MASTER_ROLE);
    if (worker_instances(plan) < 1)
        return tony_err(err,
                        "the pytorch framework needs a 'worker' role (worker 0 hosts the rendezvous): "
                        "set tony.worker.instances to 1 or more");
    if (w->kind != TONY_ROLE_TRACKED)
        return tony_err(err,
                        "the pytorch framework's 'worker' role hosts the rendezvous (rank 0) and must be tracked: "
                        "remove worker from " TONY_KEY_APP_UNTRACKED_JOBTYPES " and " TONY_KEY_APP_SIDECAR_JOBTYPES);
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
