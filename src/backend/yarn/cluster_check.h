/* Refusing, before anything is staged, a job this YARN cluster can never
 * run: a queue that does not exist (or is a parent, or stopped), a role or
 * the AM asking more memory/vcores/GPUs than the maximum allocation, GPUs on
 * a cluster without the yarn.io/gpu resource type, an unknown node label.
 * Works on the RM's own JSON, so it is testable without a cluster. */
#ifndef TONY_YARN_CLUSTER_CHECK_H
#define TONY_YARN_CLUSTER_CHECK_H

#include <jansson.h>

#include "common/error.h"
#include "conf/conf.h"
#include "conf/plan.h"

#define TONY_YARN_GPU "yarn.io/gpu"

typedef struct tony_yarn_cluster_info {
    const json_t *scheduler;      /* GET /ws/v1/cluster/scheduler */
    const json_t *node_labels;    /* GET /ws/v1/cluster/get-node-labels (may be NULL: labels unknown) */
    const json_t *max_capability; /* new-application's maximum-resource-capability */
} tony_yarn_cluster_info;

/* The queue the job goes to: tony.yarn.queue, "default" when unset. */
const char *tony_yarn_queue(const tony_conf *conf);

/* Errors name the role and the key (tony.worker.gpus, tony.yarn.queue, ...)
 * and what the cluster offers. *am_memory_mb / *am_vcores come back
 * truncated to the maximum allocation, as TonY does for the AM. */
int tony_yarn_check_plan(const tony_plan *plan, const tony_conf *conf, const tony_yarn_cluster_info *info,
                         long long *am_memory_mb, int *am_vcores, tony_error *err);

/* The Hadoop versions tony speaks with: 3.x (tested with 3.3 and 3.4; the
 * REST submission, resource types and token formats of 2.x differ). version
 * is what the RM reports (e.g. "3.4.1", or a vendor's "3.1.1.7.1.7.1000-141");
 * NULL or unparseable passes (with nothing to go on, the job is tried). */
#define TONY_YARN_HADOOP_TESTED "3.3 and 3.4"
int tony_yarn_check_hadoop_version(const char *version, const char *rm_url, tony_error *err);

#endif
