/* The xgboost runtime: the Rabit tracker env of XGBoost's collective, as
 * Kubeflow's XGBoost runtime sets it. The user's code on worker 0 starts the
 * tracker (xgboost.tracker.RabitTracker) on worker 0's reserved port, and
 * every worker passes these to xgboost.collective (XGBoost 2+ reads no
 * DMLC_* variable itself). */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

static int worker_instances(const tony_plan *plan) {
    const tony_role *w = tony_plan_role(plan, "worker");
    return w ? w->instances : 0;
}

static int xgb_task_env(const tony_runtime_task *task, tony_env *env, tony_error *err) {
    tony_env_setf(env, "DMLC_NUM_WORKER", "%d", worker_instances(task->plan));
    /* The worker's index: what scripts read as their rank to decide who starts
     * the tracker (Kubeflow sets the same). The tracker ranks the workers by
     * host unless told sortby="task", so its ranks may differ. */
    tony_env_setf(env, "DMLC_TASK_ID", "%d", task->index);
    bool tracker = strcmp(task->role, "worker") == 0 && task->index == 0;
    if (tracker)
        tony_env_set(env, "TONY_XGBOOST_TRACKER", "1");
    else
        tony_env_unset(env, "TONY_XGBOOST_TRACKER");

    char *host = NULL;
    int port = 0;
    if (tony_cluster_spec_addr(task->cluster_spec, "worker", 0, &host, &port) < 0) {
        if (!task->plan->gang) return 0; /* FCFS: worker 0 may not have registered yet */
        return tony_err(err, "the cluster spec has no address for worker:0, which runs the xgboost tracker "
                             "(DMLC_TRACKER_URI); set tony.worker.instances to 1 or more");
    }
    tony_env_set(env, "DMLC_TRACKER_URI", host);
    tony_env_setf(env, "DMLC_TRACKER_PORT", "%d", port);
    free(host);
    return 0;
}

static int xgb_validate(const tony_plan *plan, tony_error *err) {
    if (worker_instances(plan) < 1)
        return tony_err(err, "the xgboost framework needs a 'worker' role (worker 0 runs the tracker): "
                             "set tony.worker.instances to 1 or more");
    return 0;
}

/* Rabit all-reduces histograms every boosting round: when a worker dies the
 * others fail within milliseconds, and the tracker's join() never returns,
 * so the job must be ended from outside. */
static bool xgb_lockstep(const tony_plan *plan) {
    (void)plan;
    return true;
}

const tony_runtime tony_runtime_xgboost = {
    .name = "xgboost",
    .validate = xgb_validate,
    .lockstep = xgb_lockstep,
    .task_env = xgb_task_env,
};
