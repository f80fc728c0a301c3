/* The pre-staging checks of a plan against the RM's scheduler, labels and
 * maximum allocation. Capacity and Fair scheduler JSON differ in how queues
 * nest; both are walked, and the FIFO scheduler has only "default". */
#include "backend/yarn/cluster_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/yarn/rest.h"
#include "common/strv.h"
#include "conf/keys.h"

const char *tony_yarn_queue(const tony_conf *conf) {
    const char *q = tony_conf_get(conf, TONY_KEY_YARN_QUEUE);
    return q && *q ? q : "default";
}

static json_t *child_queues(const json_t *q) {
    json_t *c = json_object_get(q, "queues"); /* capacity */
    if (!c) c = json_object_get(q, "childQueues"); /* fair */
    return c ? json_object_get(c, "queue") : NULL;
}

/* A queue's full path ("root.a.b"): its queuePath where the RM gives one
 * (Capacity Scheduler of Hadoop 3.4), else its parent's path and its name
 * (Hadoop 3.3 gives only the leaf name, "b"; the Fair Scheduler's names are
 * paths already). parent: NULL for the top queue. */
static char *queue_path(const json_t *q, const char *parent) {
    const char *path = json_string_value(json_object_get(q, "queuePath"));
    const char *name = json_string_value(json_object_get(q, "queueName"));
    if (path) return tony_strdup(path);
    if (!name) return tony_strdup(parent ? parent : "");
    size_t n = parent ? strlen(parent) : 0;
    if (!parent || (strncmp(name, parent, n) == 0 && name[n] == '.')) return tony_strdup(name);
    return tony_sprintf("%s.%s", parent, name);
}

/* want: a leaf name or a path, with or without the leading "root.". */
static bool queue_matches(const json_t *q, const char *path, const char *want) {
    const char *name = json_string_value(json_object_get(q, "queueName"));
    char *rooted = tony_sprintf("root.%s", want);
    bool m = (name && (strcmp(name, want) == 0 || strcmp(name, rooted) == 0)) ||
             strcmp(path, want) == 0 || strcmp(path, rooted) == 0;
    free(rooted);
    return m;
}

/* Depth-first search below parent (whose path is parent_path); collects
 * leaf names for the error message. */
static const json_t *find_queue(const json_t *parent, const char *parent_path, const char *want, tony_strv *leaves) {
    json_t *list = tony_yarn_json_list(child_queues(parent));
    const json_t *found = NULL;
    size_t i;
    json_t *q;
    json_array_foreach(list, i, q) {
        char *path = queue_path(q, parent_path);
        if (!found && queue_matches(q, path, want)) found = q;
        if (child_queues(q)) {
            const json_t *f = find_queue(q, path, want, leaves);
            if (!found) found = f;
        } else {
            const char *n = json_string_value(json_object_get(q, "queueName"));
            if (n) tony_strv_push(leaves, n);
        }
        free(path);
    }
    json_decref(list);
    return found;
}

typedef struct max_alloc {
    long long memory_mb;
    long long vcores;
    long long gpus;
    bool has_gpu_type;
    const char *what; /* where the limit comes from */
} max_alloc;

static void read_max(const json_t *m, const char *what, max_alloc *out) {
    out->memory_mb = json_integer_value(json_object_get(m, "memory"));
    out->vcores = json_integer_value(json_object_get(m, "vCores"));
    out->what = what;
    json_t *ris = tony_yarn_json_list(json_object_get(json_object_get(m, "resourceInformations"), "resourceInformation"));
    size_t i;
    json_t *ri;
    json_array_foreach(ris, i, ri) {
        const char *n = json_string_value(json_object_get(ri, "name"));
        if (n && strcmp(n, TONY_YARN_GPU) == 0) {
            out->has_gpu_type = true;
            json_t *v = json_object_get(ri, "value");
            out->gpus = json_is_string(v) ? atoll(json_string_value(v)) : json_integer_value(v);
        }
    }
    json_decref(ris);
}

static int check_label(const char *key, const char *who, const char *label, const json_t *labels, const json_t *queue,
                       const char *qname, tony_error *err) {
    if (!label || !*label) return 0;
    tony_strv names = {0};
    bool known = labels == NULL; /* the RM did not say: let YARN decide */
    json_t *list = tony_yarn_json_list(labels ? json_object_get(labels, "nodeLabelInfo") : NULL);
    size_t i;
    json_t *l;
    json_array_foreach(list, i, l) {
        const char *n = json_string_value(json_object_get(l, "name"));
        if (!n) continue;
        tony_strv_push(&names, n);
        if (strcmp(n, label) == 0) known = true;
    }
    json_decref(list);
    int rc = 0;
    if (!known) {
        char *all = tony_strv_join(&names, ", ");
        rc = tony_err(err, "%s: %s asks for node label '%s' but the cluster has no such label (its labels: %s)", key,
                      who, label, names.len ? all : "none");
        free(all);
    }
    tony_strv_free(&names);
    json_t *access = queue ? json_object_get(queue, "nodeLabels") : NULL;
    if (rc == 0 && json_is_array(access)) {
        bool ok = false;
        tony_strv acc = {0};
        json_array_foreach(access, i, l) {
            const char *n = json_string_value(l);
            if (!n) continue;
            tony_strv_push(&acc, n);
            ok = ok || strcmp(n, label) == 0 || strcmp(n, "*") == 0;
        }
        if (!ok) {
            char *all = tony_strv_join(&acc, ", ");
            rc = tony_err(err, "%s: %s asks for node label '%s' but queue '%s' (tony.yarn.queue) may not use it "
                               "(accessible labels: %s)", key, who, label, qname, acc.len ? all : "none");
            free(all);
        }
        tony_strv_free(&acc);
    }
    return rc;
}

static int check_fit(const char *role, long long mem, int vcores, int gpus, const max_alloc *m, tony_error *err) {
    if (mem > m->memory_mb)
        return tony_err(err, "tony.%s.memory: role %s asks %lld MB per container, more than %s allows (%lld MB)", role,
                        role, mem, m->what, m->memory_mb);
    if (vcores > m->vcores)
        return tony_err(err, "tony.%s.vcores: role %s asks %d vcores per container, more than %s allows (%lld)", role,
                        role, vcores, m->what, m->vcores);
    if (gpus > 0 && !m->has_gpu_type)
        return tony_err(err, "tony.%s.gpus: role %s asks %d GPUs but this cluster has no %s resource type "
                             "(the cluster must list it in yarn.resource-types; or set tony.%s.gpus=0)",
                        role, role, gpus, TONY_YARN_GPU, role);
    if (gpus > m->gpus)
        return tony_err(err, "tony.%s.gpus: role %s asks %d GPUs per container, more than %s allows (%lld)", role, role,
                        gpus, m->what, m->gpus);
    return 0;
}

int tony_yarn_check_plan(const tony_plan *plan, const tony_conf *conf, const tony_yarn_cluster_info *info,
                         long long *am_memory_mb, int *am_vcores, tony_error *err) {
    const char *qname = tony_yarn_queue(conf);
    const json_t *si = json_object_get(json_object_get(info->scheduler, "scheduler"), "schedulerInfo");
    const char *type = json_string_value(json_object_get(si, "type"));
    const json_t *queue = NULL;
    const char *src = tony_conf_get_source(conf, TONY_KEY_YARN_QUEUE);
    if (type && strcmp(type, "fifoScheduler") == 0) {
        if (strcmp(qname, "default") != 0)
            return tony_err(err, "tony.yarn.queue is '%s'%s%s but this cluster runs the FIFO scheduler, whose only "
                                 "queue is 'default'", qname, src ? " in " : "", src ? src : "");
    } else if (si) {
        const json_t *root = json_object_get(si, "rootQueue"); /* fair */
        tony_strv leaves = {0};
        const json_t *top = root ? root : si;
        char *top_path = queue_path(top, NULL);
        queue = find_queue(top, top_path, qname, &leaves);
        if (!queue && queue_matches(top, top_path, qname)) queue = top;
        free(top_path);
        int rc = 0;
        if (!queue) {
            char *all = tony_strv_join(&leaves, ", ");
            rc = tony_err(err, "tony.yarn.queue is '%s'%s%s but the cluster has no such queue (its leaf queues: %s)",
                          qname, src ? " in " : "", src ? src : "", leaves.len ? all : "none");
            free(all);
        } else if (child_queues(queue)) {
            char *all = tony_strv_join(&leaves, ", ");
            rc = tony_err(err, "tony.yarn.queue is '%s', a parent queue; applications go to leaf queues (%s)", qname, all);
            free(all);
        } else {
            const char *state = json_string_value(json_object_get(queue, "state"));
            if (state && strcmp(state, "RUNNING") != 0)
                rc = tony_err(err, "tony.yarn.queue is '%s' but that queue is %s: it accepts no applications", qname,
                              state);
        }
        tony_strv_free(&leaves);
        if (rc) return rc;
    }
    max_alloc m = {0};
    const json_t *qmax = queue ? json_object_get(queue, "maximumAllocation") : NULL;
    char *what = qmax ? tony_sprintf("queue '%s''s maximum allocation", qname)
                      : tony_strdup("the cluster's maximum allocation (yarn.scheduler.maximum-allocation-*)");
    read_max(qmax ? qmax : info->max_capability, what, &m);
    /* The queue's maximum omits resource types the scheduler does not
     * count; the cluster-wide one says whether yarn.io/gpu exists. */
    if (qmax && !m.has_gpu_type && info->max_capability) {
        max_alloc c = {0};
        read_max(info->max_capability, what, &c);
        m.has_gpu_type = c.has_gpu_type;
        m.gpus = c.gpus;
    }
    int rc = 0;
    for (size_t r = 0; rc == 0 && r < plan->nroles; r++) {
        const tony_role *role = &plan->roles[r];
        rc = check_fit(role->name, role->memory_mb, role->vcores, role->gpus, &m, err);
        if (rc == 0) {
            char *key = tony_sprintf(TONY_KEY_ROLE_NODE_LABEL_FMT, role->name);
            char *who = tony_sprintf("role %s", role->name);
            rc = check_label(key, who, role->node_label, info->node_labels, queue, qname, err);
            free(key);
            free(who);
        }
    }
    if (rc == 0)
        rc = check_label(TONY_KEY_APP_NODE_LABEL, "the application", tony_conf_get(conf, TONY_KEY_APP_NODE_LABEL),
                         info->node_labels, queue, qname, err);
    if (rc == 0 && plan->am_gpus > 0 && !m.has_gpu_type)
        rc = tony_err(err, "tony.am.gpus is %d but this cluster has no %s resource type", plan->am_gpus, TONY_YARN_GPU);
    *am_memory_mb = plan->am_memory_mb > m.memory_mb && m.memory_mb > 0 ? m.memory_mb : plan->am_memory_mb;
    *am_vcores = plan->am_vcores > m.vcores && m.vcores > 0 ? (int)m.vcores : plan->am_vcores;
    free(what);
    return rc;
}

int tony_yarn_check_hadoop_version(const char *version, const char *rm_url, tony_error *err) {
    long long major = 0;
    char head[16] = {0};
    if (!version || sscanf(version, "%15[0-9]", head) != 1 || !tony_parse_ll(head, &major)) return 0;
    if (major >= 3) return 0;
    return tony_err(err,
                    "the ResourceManager at %s runs Hadoop %s: tony speaks Hadoop 3 (tested with %s); a Hadoop 2 "
                    "cluster needs TonY itself",
                    rm_url ? rm_url : "?", version, TONY_YARN_HADOOP_TESTED);
}
