/* The horovod runtime (gloo controller, static topology): every worker gets
 * its rank, local and cross ranks from the cluster spec, and the address of
 * the rendezvous store the coordinator serves (am/rendezvous.c). TonY starts
 * a separate driver role with Horovod's Python server for that; we need no
 * extra container and no horovod install outside the workers. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

/* Horovod's placement of one worker, the way its launcher computes it:
 * hosts in order of first appearance, local ranks by order on a host, cross
 * ranks by host order among hosts that have that local rank. */
typedef struct slot {
    int local_rank, local_size, cross_rank, cross_size;
    char *host;
} slot;

static char *host_of(const json_t *spec, int i) {
    char *h = NULL;
    if (tony_cluster_spec_addr(spec, "worker", i, &h, NULL) < 0) return NULL;
    return h;
}

static int place(const json_t *spec, int index, slot *s) {
    int n = tony_cluster_spec_count(spec, "worker");
    char **hosts = calloc((size_t)n + 1, sizeof(char *));
    int rc = 0;
    for (int i = 0; i < n; i++)
        if (!(hosts[i] = host_of(spec, i))) rc = -1;
    if (rc == 0 && index < n) {
        memset(s, 0, sizeof *s);
        s->host = strdup(hosts[index]);
        for (int i = 0; i < n; i++) {
            if (strcmp(hosts[i], hosts[index]) != 0) continue;
            if (i < index) s->local_rank++;
            s->local_size++;
        }
        /* walk hosts in first-appearance order; count those with this local rank */
        for (int i = 0; i < n; i++) {
            bool first = true;
            for (int j = 0; j < i; j++) first &= strcmp(hosts[j], hosts[i]) != 0;
            if (!first) continue;
            int on_host = 0;
            for (int j = 0; j < n; j++) on_host += strcmp(hosts[j], hosts[i]) == 0;
            if (on_host <= s->local_rank) continue;
            if (strcmp(hosts[i], hosts[index]) == 0) s->cross_rank = s->cross_size;
            s->cross_size++;
        }
    } else {
        rc = -1;
    }
    for (int i = 0; i < n; i++) free(hosts[i]);
    free(hosts);
    return rc;
}

static int hvd_task_env(const tony_runtime_task *task, tony_env *env, tony_error *err) {
    if (strcmp(task->role, "worker") != 0) return 0;
    int n = tony_cluster_spec_count(task->cluster_spec, "worker");
    slot s;
    if (!task->cluster_spec || place(task->cluster_spec, task->index, &s))
        return tony_err(err, "horovod: the cluster spec lacks worker:%d's address", task->index);
    tony_env_set(env, "HOROVOD_CONTROLLER", "gloo");
    tony_env_set(env, "HOROVOD_CPU_OPERATIONS", "gloo");
    if (!tony_env_get(env, "HOROVOD_GLOO_TIMEOUT_SECONDS")) tony_env_set(env, "HOROVOD_GLOO_TIMEOUT_SECONDS", "2000");
    if (task->rendezvous_host) {
        tony_env_set(env, "HOROVOD_GLOO_RENDEZVOUS_ADDR", task->rendezvous_host);
        tony_env_setf(env, "HOROVOD_GLOO_RENDEZVOUS_PORT", "%d", task->rendezvous_port);
    }
    tony_env_setf(env, "HOROVOD_RANK", "%d", task->index);
    tony_env_setf(env, "HOROVOD_SIZE", "%d", n);
    tony_env_setf(env, "HOROVOD_LOCAL_RANK", "%d", s.local_rank);
    tony_env_setf(env, "HOROVOD_LOCAL_SIZE", "%d", s.local_size);
    tony_env_setf(env, "HOROVOD_CROSS_RANK", "%d", s.cross_rank);
    tony_env_setf(env, "HOROVOD_CROSS_SIZE", "%d", s.cross_size);
    tony_env_set(env, "HOROVOD_HOSTNAME", s.host);
    free(s.host);
    return 0;
}

static json_t *hvd_scopes(const json_t *spec) {
    json_t *sizes = json_object();
    int n = tony_cluster_spec_count(spec, "worker");
    json_object_set_new(sizes, "global", json_integer(n));
    for (int i = 0; i < n; i++) {
        slot s;
        if (place(spec, i, &s)) continue;
        char *local = tony_sprintf("local_%s", s.host), *cross = tony_sprintf("cross_%d", s.local_rank);
        json_object_set_new(sizes, local, json_integer(s.local_size));
        json_object_set_new(sizes, cross, json_integer(s.cross_size));
        free(local);
        free(cross);
        free(s.host);
    }
    return sizes;
}

static int hvd_validate(const tony_plan *plan, tony_error *err) {
    const tony_role *w = tony_plan_role(plan, "worker");
    if (!w || w->instances < 1)
        return tony_err(err, "the horovod framework needs a 'worker' role: set tony.worker.instances to 1 or more");
    if (!plan->gang)
        return tony_err(err,
                        "the horovod framework needs every worker at the rendezvous: "
                        "tony.application.distributed-mode must be GANG, not FCFS");
    return 0;
}

/* Horovod all-reduces every step: a lost worker stops them all. */
static bool hvd_lockstep(const tony_plan *plan) {
    (void)plan;
    return true;
}

const tony_runtime tony_runtime_horovod = {
    .name = "horovod",
    .validate = hvd_validate,
    .lockstep = hvd_lockstep,
    .task_env = hvd_task_env,
    .rendezvous_scopes = hvd_scopes,
};
