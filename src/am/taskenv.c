/* The coordinator's part of a task's environment: the job, the coordinator
 * to talk to, the attempt, the heartbeat and metrics settings. The task's
 * identity in TonY's terms (JOB_NAME, TASK_INDEX, IS_CHIEF, ...) is the
 * runtime's to write, in the "go" answer; the backend adds where the
 * container runs. */
#include "am/taskenv.h"

#include <stdlib.h>

#include "common/http.h"
#include "common/taskenv.h"
#include "conf/keys.h"

/* The executor's metrics: the interval, and nvidia-smi for tasks with GPUs
 * when tony.task.gpu-metrics.enabled. */
static void metrics_env(const tony_am *am, const am_task *t, tony_env *env) {
    tony_env_setf(env, TASKENV_METRICS_INTERVAL_MS, "%lld", am->plan.metrics_interval_ms);
    bool gpu_metrics = true;
    if (tony_conf_get_bool(am->conf, TONY_KEY_TASK_GPU_METRICS_ENABLED, true, &gpu_metrics, NULL)) gpu_metrics = true;
    const char *smi = tony_conf_get(am->conf, TONY_KEY_GPU_EXEC_PATH);
    if (t->role->gpus > 0 && gpu_metrics) tony_env_set(env, TASKENV_GPU_METRICS_SMI, smi && *smi ? smi : "nvidia-smi");
}

void am_task_attempt_env(const tony_am *am, tony_env *env) {
    int attempt = am->fsm.job.attempt;
    tony_env_setf(env, TASKENV_SESSION_ID, "%d", attempt);
    if (attempt > 0) tony_env_setf(env, TASKENV_NUM_AM_RETRIES, "%d", attempt);
    tony_env_setf(env, TASKENV_ATTEMPT, "%d", attempt);
    if (am->plan.elastic) tony_env_setf(env, TASKENV_WORLD_VERSION, "%d", am->fsm.world_version);
}

void am_task_world(const tony_am *am, const am_task *t, tony_plan *view, int *index) {
    *view = am->plan;
    view->roles = tony_xcalloc(am->plan.nroles ? am->plan.nroles : 1, sizeof *view->roles);
    for (size_t r = 0; r < am->plan.nroles; r++) {
        view->roles[r] = am->plan.roles[r];
        view->roles[r].instances = am_fsm_world_count(&am->fsm.job, &am->plan.roles[r]);
    }
    *index = am_fsm_world_index(&am->fsm.job, t);
}

void am_task_world_free(tony_plan *view) {
    free(view->roles);
    view->roles = NULL;
}

void am_task_env(const tony_am *am, const am_task *t, tony_env *env) {
    const tony_plan *p = &am->plan;
    tony_env_merge(env, &p->container_env);
    tony_env_set(env, TASKENV_JOB_ID, am->id.app_id);
    tony_env_set(env, TASKENV_APPID, am->id.app_id);
    am_task_attempt_env(am, env);
    tony_env_set(env, TASKENV_ATTEMPT_NUMBER, "0");
    tony_env_set(env, TASKENV_AM_HOST, am->id.host);
    tony_env_setf(env, TASKENV_AM_PORT, "%d", am->id.port);
    if (am->id.shared_dir) tony_env_set(env, TASKENV_JOB_DIR, am->id.shared_dir);
    tony_env_set(env, TASKENV_AM_URL, am->id.url);
    tony_env_set(env, TASKENV_BACKEND, tony_backend_name(am->backend));
    tony_env_set(env, TASKENV_SECRET, am->id.secret);
    tony_env_setf(env, TASKENV_TASK_ID, "%s:%d", t->role->name, t->index);
    tony_env_setf(env, TASKENV_HEARTBEAT_INTERVAL_MS, "%lld", p->heartbeat_interval_ms);
    tony_env_setf(env, TASKENV_MAX_MISSED_HEARTBEATS, "%d", p->max_missed_heartbeats);
    /* coordinator loss: the executor looks for the next coordinator (where
     * the backend can start one) this long, its process running */
    tony_env_setf(env, TASKENV_AM_RECOVERY_MS, "%lld", p->am_recovery_ms);
    metrics_env(am, t, env);
    tony_env_setf(env, TASKENV_LOG_MAX_SIZE, "%lld", p->log_max_mb * 1024 * 1024);
    /* hang diagnosis: the executor dumps stacks with this py-spy when asked */
    const char *spy = tony_conf_get(am->conf, TONY_KEY_TASK_PY_SPY_PATH);
    if (p->progress_timeout_ms > 0) tony_env_set(env, TASKENV_PY_SPY, spy && *spy ? spy : "py-spy");
    if (am_job_reserves_tb_port(&am->fsm.job, t)) tony_env_set(env, TASKENV_RESERVE_TB_PORT, "1");
    if (p->tensorboard_log_dir) tony_env_set(env, TASKENV_TB_LOG_DIR, p->tensorboard_log_dir);
}

void am_single_node_env(const tony_am *am, const char *work_dir, tony_env *env) {
    tony_env_merge(env, &am->plan.container_env);
    tony_env_merge(env, &am->plan.shell_env);
    tony_env_set(env, TASKENV_JOB_ID, am->id.app_id);
    tony_env_set(env, TASKENV_APPID, am->id.app_id);
    tony_env_set(env, TASKENV_PREPROCESSING_JOB, "true");
    tony_env_set(env, "HOME", work_dir);
    tony_env_set(env, TASKENV_SESSION_ID, "0");
    if (am->id.shared_dir) tony_env_set(env, TASKENV_JOB_DIR, am->id.shared_dir);
    /* YARN's MALLOC_ARENA_MAX slows TensorFlow down (TonY #346) */
    tony_env_unset(env, "MALLOC_ARENA_MAX");
}
