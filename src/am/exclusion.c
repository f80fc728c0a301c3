/* Bad-node exclusion (see exclusion.h): which container ends are the
 * node's fault, and the cap. */
#include "am/exclusion.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "common/amapi.h"
#include "common/strv.h"

void am_exclusion_init(am_exclusion *x, int max) {
    memset(x, 0, sizeof *x);
    x->max = max;
}

void am_exclusion_free(am_exclusion *x) {
    for (size_t i = 0; i < x->len; i++) {
        free(x->items[i].node);
        free(x->items[i].task);
        free(x->items[i].reason);
        free(x->items[i].refused);
    }
    free(x->items);
    memset(x, 0, sizeof *x);
}

const char *am_exclusion_node_cause(int exit_status, bool registered, bool stopped, char *buf, size_t n) {
    /* Our own stops end containers too (-105, a signal, and the -100 of a
     * released one): never the node's fault. */
    if (stopped || exit_status == TONY_EXIT_SUCCESS) return NULL;
    switch (exit_status) {
    case TONY_EXIT_DISKS_FAILED: return "its disks failed (YARN exit status -101)";
    /* Not released by us (stopped is false): its node was lost, or the
     * backend could not start the container there. */
    case TONY_EXIT_ABORTED: return "the container was lost with its node, or could not be started there";
    /* What the scheduler or the user's code did, not the node. */
    case TONY_EXIT_PREEMPTED:
    case TONY_EXIT_KILLED_EXCEEDED_VMEM:
    case TONY_EXIT_KILLED_EXCEEDED_PMEM:
    case TONY_EXIT_KILLED_BY_APPMASTER:
    case TONY_EXIT_KILLED_BY_RESOURCEMANAGER:
    case TONY_EXIT_KILLED_AFTER_APP_COMPLETION:
    case TONY_EXIT_KILLED_BY_CONTAINER_SCHEDULER:
    case TONY_EXIT_KILLED_FOR_EXCESS_LOGS: return NULL;
    default: break;
    }
    /* Its executor could not set the task up from the job's own inputs (an
     * archive that does not unpack, a shell or command the image lacks):
     * the job's fault, which follows it to every node (amapi.h). */
    if (exit_status == AM_EXEC_EXIT_NOT_STARTED) return NULL;
    /* A container that ended before its executor reached the coordinator
     * never ran the user's code: its launch failed on that node (a disk
     * mounted noexec, missing localized files, a broken container
     * runtime). */
    if (!registered) {
        char meaning[160];
        snprintf(buf, n, "its container ended before tony's executor started (%s)",
                 tony_exit_status_meaning(exit_status, meaning, sizeof meaning));
        return buf;
    }
    return NULL;
}

int am_exclusion_cap(const am_exclusion *x, int cluster_nodes) {
    if (cluster_nodes <= 0) return x->max > 0 ? x->max : 0;
    int cap = x->max >= 0 ? x->max : (cluster_nodes - 1) / 2;
    return cap < cluster_nodes - 1 ? cap : cluster_nodes - 1;
}

int am_exclusion_count(const am_exclusion *x) {
    int n = 0;
    for (size_t i = 0; i < x->len; i++) n += x->items[i].refused == NULL;
    return n;
}

bool am_exclusion_has(const am_exclusion *x, const char *node) {
    for (size_t i = 0; i < x->len; i++)
        if (!x->items[i].refused && strcmp(x->items[i].node, node) == 0) return true;
    return false;
}

static am_excluded_node *refused_before(am_exclusion *x, const char *node) {
    for (size_t i = 0; i < x->len; i++)
        if (x->items[i].refused && strcmp(x->items[i].node, node) == 0) return &x->items[i];
    return NULL;
}

/* Why the cap stops an exclusion, in words that name the key. */
static char *why_capped(const am_exclusion *x, int cap, int cluster_nodes) {
    if (cluster_nodes == 1)
        return tony_strdup("the cluster has one node: a job never excludes its only node");
    if (cluster_nodes <= 0)
        return tony_strdup("the cluster's size is not known yet (set tony.application.max-excluded-nodes to "
                           "exclude regardless)");
    if (x->max == 0) return tony_strdup("tony.application.max-excluded-nodes is 0");
    if (x->max > 0 && x->max < cluster_nodes - 1)
        return tony_sprintf("%d node(s) excluded already, tony.application.max-excluded-nodes=%d", cap, x->max);
    return tony_sprintf("%d of the cluster's %d nodes excluded already: a job excludes %s (raise "
                        "tony.application.max-excluded-nodes to exclude more)",
                        cap, cluster_nodes, x->max < 0 ? "fewer than half of them" : "never all of them");
}

am_excl_result am_exclusion_add(am_exclusion *x, const char *node, const char *task, const char *reason,
                                int attempt, int cluster_nodes, long long now_ms) {
    if (am_exclusion_has(x, node)) return AM_EXCL_ALREADY;
    int cap = am_exclusion_cap(x, cluster_nodes);
    am_excluded_node *before = refused_before(x, node);
    if (before) {
        /* refused once (the cluster's size unknown then, or the cap since raised): again only when room now */
        if (am_exclusion_count(x) >= cap) return AM_EXCL_ALREADY;
        free(before->refused);
        before->refused = NULL;
        return AM_EXCL_ADDED;
    }
    x->items = tony_xrealloc(x->items, (x->len + 1) * sizeof *x->items);
    am_excluded_node *e = &x->items[x->len++];
    *e = (am_excluded_node){tony_strdup(node), tony_strdup(task), tony_strdup(reason), attempt, now_ms, NULL};
    if (am_exclusion_count(x) - 1 >= cap) {
        e->refused = why_capped(x, cap, cluster_nodes);
        return AM_EXCL_CAPPED;
    }
    return AM_EXCL_ADDED;
}
