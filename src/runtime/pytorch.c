/* The pytorch runtime: torchrun's contract (the variables torch's elastic
 * agent gives each process, which DDP's env://, Lightning, accelerate and
 * Kubeflow read), plus TonY's INIT_METHOD/WORLD for tcp:// scripts.
 * Model: a tony task is a node of its own running one process, or
 * tony.<role>.nproc-per-node processes as torchrun's --nproc_per_node. */
#include <stdlib.h>
#include <string.h>

#include "common/strv.h"
#include "conf/keys.h"
#include "runtime/runtime.h"

/* The role whose task 0 hosts the rendezvous (torch's TCPStore runs in
 * rank 0, so its tasks are numbered first). */
#define PT_MASTER_ROLE "worker"

static int worker_instances(const tony_plan *plan) {
    const tony_role *w = tony_plan_role(plan, PT_MASTER_ROLE);
    return w ? w->instances : 0;
}

static int nproc_of(const tony_role *r) { return r->nproc_per_node > 1 ? r->nproc_per_node : 1; }

/* Where a task stands in the torch world. The nodes (torchrun's agents,
 * here tasks) are every tracked task: the workers first (node i is
 * worker:i, as in TonY, and node 0 is where MASTER_ADDR points), then the
 * other tracked roles in plan order. Each node runs its role's
 * nproc-per-node processes, numbered in node order, so node n's processes
 * follow every process of the nodes before it. Untracked and sidecar roles
 * (a ps, a TensorBoard) are not part of it: node is -1 for them. */
typedef struct pt_place {
    int node, nodes;    /* GROUP_RANK, GROUP_WORLD_SIZE */
    int rank, world;    /* RANK of the node's local rank 0, WORLD_SIZE: over processes */
    int nproc;          /* LOCAL_WORLD_SIZE */
    int role_procs;     /* ROLE_WORLD_SIZE: the role's processes */
} pt_place;

static void add_role(const tony_role *r, const char *role, int index, pt_place *p) {
    if (strcmp(r->name, role) == 0) {
        p->node = p->nodes + index;
        p->rank = p->world + index * nproc_of(r);
        p->nproc = nproc_of(r);
        p->role_procs = r->instances * nproc_of(r);
    }
    p->nodes += r->instances;
    p->world += r->instances * nproc_of(r);
}

static void place_of(const tony_plan *plan, const char *role, int index, pt_place *p) {
    *p = (pt_place){.node = -1};
    const tony_role *w = tony_plan_role(plan, PT_MASTER_ROLE);
    if (w && w->kind == TONY_ROLE_TRACKED) add_role(w, role, index, p);
    for (size_t i = 0; i < plan->nroles; i++) {
        const tony_role *r = &plan->roles[i];
        if (r->kind != TONY_ROLE_TRACKED || strcmp(r->name, PT_MASTER_ROLE) == 0) continue;
        add_role(r, role, index, p);
    }
}

static int pt_task_env(const tony_runtime_task *task, tony_env *env, tony_error *err) {
    const tony_plan *plan = task->plan;
    pt_place p;
    place_of(plan, task->role, task->index, &p);
    if (p.node < 0) return 0; /* not a torch process of this job */

    /* torchrun's meanings (torch/distributed/elastic/agent/server): RANK and
     * WORLD_SIZE over every process; GROUP_* over the nodes (agents), here
     * one per task; ROLE_* over the processes of one role; LOCAL_* within
     * the node. These are local rank 0's values: the executor gives each
     * of the task's processes its own (tony_runtime_process_env). With one
     * process per node LOCAL_RANK is 0 whatever else shares the host, which
     * is what Lightning needs (it takes the node from GROUP_RANK/NODE_RANK
     * and its device from LOCAL_RANK), and cuda:LOCAL_RANK is right because
     * each task sees only its own GPUs (CUDA_VISIBLE_DEVICES), which all of
     * its processes share, as torchrun's workers share their node's. */
    tony_env_setf(env, "RANK", "%d", p.rank);
    tony_env_setf(env, "WORLD_SIZE", "%d", p.world);
    tony_env_setf(env, "WORLD", "%d", p.world); /* TonY's name, kept for old scripts */
    tony_env_set(env, "LOCAL_RANK", "0");
    tony_env_setf(env, "LOCAL_WORLD_SIZE", "%d", p.nproc);
    tony_env_setf(env, "GROUP_RANK", "%d", p.node);
    tony_env_setf(env, "GROUP_WORLD_SIZE", "%d", p.nodes);
    tony_env_setf(env, "NODE_RANK", "%d", p.node); /* Lightning's and Kubeflow's name for GROUP_RANK */
    tony_env_setf(env, "ROLE_RANK", "%d", task->index * p.nproc);
    tony_env_setf(env, "ROLE_WORLD_SIZE", "%d", p.role_procs);
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
    for (size_t i = 0; i < plan->nroles; i++) {
        const tony_role *r = &plan->roles[i];
        int n = nproc_of(r);
        if (n == 1) continue;
        char *key = tony_sprintf(TONY_KEY_ROLE_NPROC_PER_NODE_FMT, r->name);
        char *gpus_key = tony_sprintf(TONY_KEY_ROLE_GPUS_FMT, r->name);
        int rc = 0;
        if (r->kind != TONY_ROLE_TRACKED)
            rc = tony_err(err,
                          "%s is %d, but %s is %s: its tasks are not part of the torch world, "
                          "so they run one process; unset %s",
                          key, n, r->name,
                          r->kind == TONY_ROLE_SIDECAR ? "a sidecar (" TONY_KEY_APP_SIDECAR_JOBTYPES ")"
                                                       : "untracked (" TONY_KEY_APP_UNTRACKED_JOBTYPES ")",
                          key);
        /* Every process of a task sees all of the task's GPUs and takes
         * cuda:LOCAL_RANK, as under torchrun: more processes than GPUs
         * would have the last ones ask for a device that is not there. */
        else if (r->gpus > 0 && n > r->gpus)
            rc = tony_err(err,
                          "%s (%d) is more than %s (%d): each process of a task "
                          "takes its own GPU (cuda:LOCAL_RANK); raise %s to %d or lower %s",
                          key, n, gpus_key, r->gpus, gpus_key, n, key);
        free(key);
        free(gpus_key);
        if (rc < 0) return rc;
    }
    return 0;
}

/* Local rank 0's RANK and ROLE_RANK (pt_task_env) are the task's first;
 * local rank i has the i-th after them. */
static void shift(tony_env *env, const char *name, int by) {
    const char *v = tony_env_get(env, name);
    long long base;
    if (v && tony_parse_ll(v, &base)) tony_env_setf(env, name, "%lld", base + by);
}

void tony_runtime_process_env(tony_env *env, int local_rank) {
    if (local_rank == 0 || !tony_env_get(env, "LOCAL_RANK")) return;
    tony_env_setf(env, "LOCAL_RANK", "%d", local_rank);
    shift(env, "RANK", local_rank);
    shift(env, "ROLE_RANK", local_rank);
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
    .processes_per_task = true,
    .validate = pt_validate,
    .lockstep = pt_lockstep,
    .task_env = pt_task_env,
};
