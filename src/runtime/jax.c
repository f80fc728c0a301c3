/* The jax runtime: the coordinator's address (JAX_COORDINATOR_ADDRESS, which
 * jax.distributed.initialize() reads itself), and the process count and id
 * in tony's own variables, which JAX reads only through tony's cluster: a
 * ClusterEnv that a Python file on the task's PYTHONPATH registers. */
#include <stdlib.h>
#include <string.h>

#include "common/strv.h"
#include "runtime/pyboot.h"
#include "runtime/runtime.h"

/* JAX's own name: initialize() takes the coordinator from it when not given. */
#define JAX_ENV_COORDINATOR "JAX_COORDINATOR_ADDRESS"
/* tony's names (no JAX version reads them): the explicit form passes them,
 * initialize(addr, int(os.environ[...]), int(os.environ[...])); the
 * no-argument form gets them from tony's cluster below. */
#define JAX_ENV_NUM_PROCESSES "JAX_NUM_PROCESSES"
#define JAX_ENV_PROCESS_ID "JAX_PROCESS_ID"
#define JAX_ENV_LOCAL_DEVICE_IDS "JAX_LOCAL_DEVICE_IDS"

/* The modules tony puts first on a JAX task's PYTHONPATH (pyboot.h). JAX
 * finds the cluster it runs in through jax._src.clusters.ClusterEnv, whose
 * subclasses register themselves when their module is imported (JAX's own
 * Slurm, Open MPI, Kubernetes and TPU clusters are such modules). tony's
 * cluster is one more, reading tony's variables: nothing pretends to be a
 * Slurm or an MPI job that another library would then believe in. The
 * script does not import it: tony's sitecustomize imports a hook that
 * arranges for it to be imported right after jax._src.clusters, so that a
 * process that never imports jax pays nothing. Python run with -S or -I
 * skips sitecustomize; initialize() then needs the explicit arguments. */
#define JAX_PY_CLUSTER_MODULE "tony_jax_cluster"
static const char jax_py_cluster[] =
    "# tony's cluster for jax.distributed.initialize() without arguments: this\n"
    "# process's place in the tony job, from the variables tony set for it.\n"
    "# Written by tony's executor; see tony's docs/frameworks.md.\n"
    "import os\n"
    "\n"
    "from jax._src import clusters\n"
    "\n"
    "\n"
    "class TonyCluster(clusters.ClusterEnv):\n"
    "    name = \"tony\"\n"
    "\n"
    "    @classmethod\n"
    "    def is_env_present(cls):\n"
    "        return all(k in os.environ for k in (\"" JAX_ENV_COORDINATOR "\", \"" JAX_ENV_NUM_PROCESSES
    "\", \"" JAX_ENV_PROCESS_ID "\"))\n"
    "\n"
    "    @classmethod\n"
    "    def get_coordinator_address(cls, timeout_secs=None):\n"
    "        return os.environ[\"" JAX_ENV_COORDINATOR "\"]\n"
    "\n"
    "    @classmethod\n"
    "    def get_process_count(cls):\n"
    "        return int(os.environ[\"" JAX_ENV_NUM_PROCESSES "\"])\n"
    "\n"
    "    @classmethod\n"
    "    def get_process_id(cls):\n"
    "        return int(os.environ[\"" JAX_ENV_PROCESS_ID "\"])\n"
    "\n"
    "    @classmethod\n"
    "    def get_local_process_id(cls):\n"
    "        # each task uses every device it sees: its own GPUs (CUDA_VISIBLE_DEVICES)\n"
    "        return None\n"
    "\n"
    "\n"
    "# JAX asks its clusters in registration order. tony's variables describe\n"
    "# this process; the machine's may not (on tony's Slurm backend a task is a\n"
    "# one-task step of the job), so tony's cluster is asked first.\n"
    "clusters.ClusterEnv._cluster_types.remove(TonyCluster)\n"
    "clusters.ClusterEnv._cluster_types.insert(0, TonyCluster)\n";

#define JAX_PY_HOOK_MODULE "tony_jax_hook"
static const char jax_py_hook[] =
    "# tony: imports " JAX_PY_CLUSTER_MODULE " right after jax._src.clusters.\n"
    "# Imported by tony's sitecustomize; written by tony's executor.\n"
    "import importlib.machinery\n"
    "import sys\n"
    "\n"
    "\n"
    "class _TonyJaxClusterLoader:\n"
    "    def __init__(self, inner):\n"
    "        self.inner = inner\n"
    "\n"
    "    def create_module(self, spec):\n"
    "        return self.inner.create_module(spec)\n"
    "\n"
    "    def exec_module(self, module):\n"
    "        self.inner.exec_module(module)\n"
    "        import " JAX_PY_CLUSTER_MODULE "  # noqa: F401\n"
    "\n"
    "\n"
    "class _TonyJaxClusterFinder:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name != \"jax._src.clusters\":\n"
    "            return None\n"
    "        sys.meta_path.remove(self)\n"
    "        spec = importlib.machinery.PathFinder.find_spec(name, path)\n"
    "        if spec is not None and spec.loader is not None:\n"
    "            spec.loader = _TonyJaxClusterLoader(spec.loader)\n"
    "        return spec\n"
    "\n"
    "\n"
    "sys.meta_path.insert(0, _TonyJaxClusterFinder())\n";

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
    tony_env_unset(env, JAX_ENV_LOCAL_DEVICE_IDS);
    int pid = process_id(task->plan, task->role, task->index);
    if (pid < 0) return 0; /* ps, tensorboard...: not part of the JAX job */
    tony_env_setf(env, JAX_ENV_NUM_PROCESSES, "%d", tony_plan_tracked_tasks(task->plan));
    tony_env_setf(env, JAX_ENV_PROCESS_ID, "%d", pid);

    const char *coord = coordinator_role(task->plan);
    char *host = NULL;
    int port = 0;
    if (tony_cluster_spec_addr(task->cluster_spec, coord, 0, &host, &port) < 0) {
        if (!task->plan->gang) return 0; /* FCFS: the coordinator may not have registered yet */
        return tony_err(err, "the cluster spec has no address for %s:0, which hosts the jax coordinator "
                             "(" JAX_ENV_COORDINATOR ")", coord);
    }
    bool v6 = strchr(host, ':') != NULL;
    tony_env_setf(env, JAX_ENV_COORDINATOR, v6 ? "[%s]:%d" : "%s:%d", host, port);
    free(host);
    return 0;
}

static const tony_pyboot_module jax_modules[] = {
    {JAX_PY_CLUSTER_MODULE, jax_py_cluster, false},
    {JAX_PY_HOOK_MODULE, jax_py_hook, true},
};

static size_t jax_python_modules(const tony_env *env, const tony_pyboot_module **mods) {
    /* only a JAX process of the job has a process id */
    if (!tony_env_get(env, JAX_ENV_PROCESS_ID)) return 0;
    *mods = jax_modules;
    return sizeof jax_modules / sizeof jax_modules[0];
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
    .python_modules = jax_python_modules,
};
