/* Framework runtimes: the only code that knows TF_CONFIG, INIT_METHOD, DMLC_*,
 * JAX's coordinator and friends. Each runtime validates a plan, says whether
 * its workers train in lock-step, and produces the framework env of one task
 * from the cluster spec. One file per framework; this header dispatches. */
#ifndef TONY_RUNTIME_H
#define TONY_RUNTIME_H

#include <jansson.h>
#include <stdbool.h>

#include "common/env.h"
#include "common/error.h"
#include "conf/plan.h"
#include "runtime/pyboot.h"

/* Text that is the same for every task of one cluster spec: made by the
 * first task's build_env, reused by the next ones' (the coordinator answers
 * thousands of tasks with one spec, and serializing it for each was
 * quadratic: issue 26). The caller owns it, and empties it
 * (tony_runtime_memo_clear) when the spec changes. */
typedef struct tony_runtime_memo {
    char *cluster_spec; /* CLUSTER_SPEC's value */
    char *framework[2]; /* the runtime's own: tensorflow's TF_CONFIG cluster, for the others and for the evaluator */
} tony_runtime_memo;

void tony_runtime_memo_clear(tony_runtime_memo *m);

/* What a runtime knows about the task it builds env for. */
typedef struct tony_runtime_task {
    const tony_plan *plan;
    const char *role;
    int index;
    /* {"<role>": ["host:port", ...], ...} in index order, every role with
     * instances (untracked and sidecar included). NULL in FCFS mode before all
     * tasks registered; may then be partial. */
    const json_t *cluster_spec;
    /* The coordinator's rendezvous store (runtimes with rendezvous_scopes);
     * NULL / 0 otherwise. */
    const char *rendezvous_host;
    int rendezvous_port;
    /* The job's attempt (0 first; torch's TORCHELASTIC_RESTART_COUNT) and
     * its id (TORCHELASTIC_RUN_ID); NULL run_id: not known (a dry run). */
    int attempt;
    const char *run_id;
    /* NULL: every text is built anew */
    tony_runtime_memo *memo;
} tony_runtime_task;

typedef struct tony_runtime {
    const char *name;
    /* Extra rules on the plan (NULL: none). */
    int (*validate)(const tony_plan *plan, tony_error *err);
    /* Do this runtime's workers train in lock-step under this plan? */
    bool (*lockstep)(const tony_plan *plan);
    /* Adds the framework's variables for one task to env. */
    int (*task_env)(const tony_runtime_task *task, tony_env *env, tony_error *err);
    /* Non-NULL for frameworks that rendezvous through the coordinator's
     * key-value store (Horovod's gloo): given the complete cluster spec, how
     * many workers share each scope. */
    json_t *(*rendezvous_scopes)(const json_t *spec);
    /* Elastic jobs (tony.<role>.min-instances): roles whose tasks the
     * framework cannot train without (NULL-terminated; NULL: none beyond
     * the chief's), and, for a framework whose world cannot change size,
     * why not (NULL: it can, with its processes restarted in the new world). */
    const char *const *elastic_needs;
    const char *fixed_world;
    /* Whether a task may run several processes (tony.<role>.nproc-per-node,
     * torchrun's --nproc_per_node); false: the key is refused above 1. */
    bool processes_per_task;
    /* Python modules a task's processes import at start (pyboot.h), given
     * the task's env (a runtime sees from it whether the task is one of its
     * processes); returns how many, 0: none. NULL: none ever. */
    size_t (*python_modules)(const tony_env *env, const tony_pyboot_module **mods);
} tony_runtime;

/* Every task's env says how many processes the executor starts for it
 * (tony.<role>.nproc-per-node; 1 where the framework has no such thing).
 * Set by tony_runtime_build_env whatever the user's envs say. */
#define TONY_RUNTIME_NPROC_ENV "TONY_NPROC_PER_NODE"
/* The processes a task's env (go's, from the coordinator) asks for: 1
 * when it says nothing (an older coordinator) or something unusable. */
int tony_runtime_nproc(const tony_env *env);
/* Turns the env of a task's local rank 0 (what build_env made) into local
 * rank local_rank's: torchrun's LOCAL_RANK, RANK and ROLE_RANK are the
 * only variables that differ between the processes of one node. Nothing
 * for local rank 0, or for a task of no torch world. */
void tony_runtime_process_env(tony_env *env, int local_rank);

/* Case-insensitive lookup; NULL if unknown. */
const tony_runtime *tony_runtime_find(const char *name);
/* The known name closest to name (edit distance), for "did you mean". */
const char *tony_runtime_suggest(const char *name);
/* "tensorflow, pytorch, ..." for error messages. */
const char *tony_runtime_names(void);

/* The job's plan: tony_plan_from_conf (conf/plan.h) and then its
 * framework's rules: an unknown framework refused with the nearest known
 * name, the framework's own checks (e.g. standalone needs exactly one
 * instance), tony.application.fail-fast-lockstep's auto resolved. Every
 * error names the key; on error out is freed. */
int tony_runtime_plan(const tony_conf *c, tony_plan *out, tony_error *err);

/* Fills env with what every task gets whatever the framework, then the
 * framework's own variables: JOB_NAME, TASK_INDEX, TASK_NUM, IS_CHIEF (chief
 * only), DISTRIBUTED_MODE, CLUSTER_SPEC (GANG). A string over Linux's
 * MAX_ARG_STRLEN (TF_CONFIG and CLUSTER_SPEC list every task, so a few
 * thousand tasks pass it) is left in env: the executor sends it by file
 * (tony_runtime_prepare_env). Fails, naming the variable, its size and the
 * limit, when the task still could not be exec'd: what stays in the
 * environment and the command together over ARG_MAX, or a string of
 * tony.containers.envs over MAX_ARG_STRLEN (the container itself is exec'd
 * with it, before any executor can move it). */
int tony_runtime_build_env(const tony_runtime *rt, const tony_runtime_task *task, tony_env *env, tony_error *err);

/* Where a plan is looked at before any executor registered (--dry-run, the
 * submit-time check): the cluster spec's addresses are placeholders of the
 * shape the local backend really registers, 127.0.0.1 and 5-digit ports from
 * 20000, and the rendezvous store is at the host's port 29400. A cluster's
 * host names are longer, so the env of a real task is at least this long. */
#define TONY_RUNTIME_PLACEHOLDER_HOST "127.0.0.1"
#define TONY_RUNTIME_PLACEHOLDER_RDZV_PORT 29400
json_t *tony_runtime_placeholder_spec(const tony_plan *plan);

/* Refuses, before anything is staged, a plan whose tasks could not be
 * started because their env could not be exec'd (see build_env): builds the
 * env of each role's last task (the longest index; the evaluator's TF_CONFIG
 * also lists itself) from the placeholder spec, with the container's and
 * the user's envs. 0: every task's env fits. by_file (NULL: not wanted)
 * gets the names of the variables that will reach tasks by file, once each. */
int tony_runtime_check_exec(const tony_plan *plan, tony_strv *by_file, tony_error *err);

/* For the executor, before it starts the user's process, on env (go's env;
 * the executor's own environment comes under it): every string over
 * MAX_ARG_STRLEN, which no exec could pass, is written to <dir>/env/<KEY>
 * (0600), removed from env and listed in TONY_ENV_FILES (taskenv.h); then,
 * when there is such a string or the framework has Python modules for the
 * task (jax's cluster, which makes jax.distributed.initialize() with no
 * arguments read tony's variables), tony's sitecustomize (pyboot.h), which
 * sets the moved ones in os.environ, is written into dir and put first on
 * PYTHONPATH. dir is the container's own (its work dir). 0 and nothing
 * done for a task that needs neither. */
int tony_runtime_prepare_env(const char *dir, tony_env *env, tony_error *err);

/* Host and port of <role>[index] in a cluster spec; -1 if absent. host is
 * malloc'ed. */
int tony_cluster_spec_addr(const json_t *spec, const char *role, int index, char **host, int *port);
/* Number of entries of role in the spec (0 if absent). */
int tony_cluster_spec_count(const json_t *spec, const char *role);

#endif
