/* The tensorflow runtime (TonY's default): TF_CONFIG for tf.distribute and
 * Estimator in GANG mode, built from the cluster spec with the roles that are
 * not part of the TensorFlow cluster taken out. */
#include <stdlib.h>
#include <strings.h>

#include "common/strv.h"
#include "runtime/runtime.h"

/* Roles that are in the cluster spec but must not appear in TF_CONFIG's
 * cluster: sidecars (tensorboard) are not TensorFlow servers, and nobody would
 * ever connect to them, but a strategy that waits for every listed task
 * would wait for them forever. */
static bool is_sidecar(const tony_plan *plan, const char *role) {
    if (strcasecmp(role, "tensorboard") == 0) return true;
    for (size_t i = 0; i < plan->nroles; i++)
        if (plan->roles[i].kind == TONY_ROLE_SIDECAR && strcasecmp(plan->roles[i].name, role) == 0) return true;
    return false;
}

static char *tf_cluster_json(const tony_runtime_task *task, bool self_is_evaluator);
static int tf_config_set(tony_env *env, const tony_runtime_task *task, char *cluster, bool owned, tony_error *err);

static int tf_task_env(const tony_runtime_task *task, tony_env *env, tony_error *err) {
    /* FCFS tasks start before the others registered and are meant to be
     * independent (TonY #501): a TF_CONFIG naming a partial cluster would make
     * TensorFlow try to join it. */
    if (!task->plan->gang || !task->cluster_spec) {
        tony_env_unset(env, "TF_CONFIG");
        return 0;
    }
    bool self_is_evaluator = strcasecmp(task->role, "evaluator") == 0;
    char **memo = task->memo ? &task->memo->framework[self_is_evaluator] : NULL;
    if (!memo || !*memo) {
        char *cl = tf_cluster_json(task, self_is_evaluator);
        if (!cl) return tony_err(err, "cannot encode TF_CONFIG for %s:%d", task->role, task->index);
        if (!memo) return tf_config_set(env, task, cl, true, err);
        *memo = cl;
    }
    return tf_config_set(env, task, *memo, false, err);
}

/* TF_CONFIG's cluster: the spec without the roles TensorFlow must not
 * see, as compact JSON (malloc'ed; NULL: not encodable). */
static char *tf_cluster_json(const tony_runtime_task *task, bool self_is_evaluator) {
    json_t *cluster = json_object();
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)task->cluster_spec, key, val) {
        if (is_sidecar(task->plan, key)) continue;
        /* The evaluator is not part of the training cluster: listing it makes
         * ParameterServerStrategy and Estimator's train_and_evaluate wait for
         * it as a worker and hang (TonY #512). Only the evaluator itself
         * sees it, because TensorFlow checks that its own task is in the
         * cluster. */
        if (!self_is_evaluator && strcasecmp(key, "evaluator") == 0) continue;
        json_object_set(cluster, key, val);
    }
    char *js = json_dumps(cluster, JSON_COMPACT);
    json_decref(cluster);
    return js;
}

/* TF_CONFIG = {"cluster": <cluster>, "task": {"type": <role>, "index": <i>}},
 * as json_dumps(JSON_COMPACT) writes it, around the cluster's text made once
 * (the memo); cluster is freed when owned. No "environment" key: TonY never
 * sets it, and "cloud" changes how Estimator picks its master. */
static int tf_config_set(tony_env *env, const tony_runtime_task *task, char *cluster, bool owned, tony_error *err) {
    json_t *type = json_string(task->role);
    char *type_js = type ? json_dumps(type, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    json_decref(type);
    if (!type_js) {
        if (owned) free(cluster);
        return tony_err(err, "cannot encode TF_CONFIG for %s:%d", task->role, task->index);
    }
    /* pieces, not printf: the cluster is hundreds of KB at thousands of tasks */
    tony_buf js = {0};
    tony_buf_puts(&js, "{\"cluster\":");
    tony_buf_puts(&js, cluster);
    tony_buf_printf(&js, ",\"task\":{\"type\":%s,\"index\":%d}}", type_js, task->index);
    tony_env_set(env, "TF_CONFIG", js.data);
    tony_buf_free(&js);
    free(type_js);
    if (owned) free(cluster);
    return 0;
}

/* With a "ps" role the job uses ParameterServerStrategy (or Estimator with
 * parameter servers), which tolerates a lost worker: the others keep pulling
 * and pushing variables. Without one, workers use MultiWorkerMirroredStrategy's
 * collective all-reduce, where every step needs every worker. */
static bool tf_lockstep(const tony_plan *plan) {
    for (size_t i = 0; i < plan->nroles; i++)
        if (strcasecmp(plan->roles[i].name, "ps") == 0 && plan->roles[i].instances > 0) return false;
    return true;
}

/* ParameterServerStrategy keeps the variables on the ps tasks: none, no model. */
static const char *const tf_elastic_needs[] = {"ps", NULL};

const tony_runtime tony_runtime_tensorflow = {
    .name = "tensorflow",
    .validate = NULL,
    .lockstep = tf_lockstep,
    .task_env = tf_task_env,
    .elastic_needs = tf_elastic_needs,
};
