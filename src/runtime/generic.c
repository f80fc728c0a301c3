/* The generic runtime: the common env only (JOB_NAME, TASK_INDEX, TASK_NUM,
 * IS_CHIEF, DISTRIBUTED_MODE, CLUSTER_SPEC), for frameworks that read the
 * cluster spec themselves or for independent tasks. */
#include "runtime/runtime.h"

/* Nothing is known about how the tasks talk to each other, so a lost task is
 * not assumed to doom the others. */
static bool generic_lockstep(const tony_plan *plan) {
    (void)plan;
    return false;
}

const tony_runtime tony_runtime_generic = {
    .name = "generic",
    .validate = NULL,
    .lockstep = generic_lockstep,
    .task_env = NULL,
};
