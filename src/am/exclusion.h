/* Bad-node exclusion: which nodes the job keeps its containers off, and
 * why. A task that failed for a cause of its node's (its disks failed, its
 * node was lost, its container could not start its executor, an
 * exclude-node log policy matched) marks the node bad; the backend is then
 * asked to place no later container there. Capped, so that a job never
 * excludes most of the cluster: a fault that follows the job everywhere (a
 * bad image, a wrong path) is not the nodes' and must not empty the
 * cluster. No I/O: the state machine (fsm.c) feeds it and turns its
 * answers into actions. */
#ifndef TONY_AM_EXCLUSION_H
#define TONY_AM_EXCLUSION_H

#include <stdbool.h>
#include <stddef.h>

/* A node the job keeps off (or would have, but for the cap). */
typedef struct am_excluded_node {
    char *node;   /* as the backend names it (YARN: host:port of its NodeManager) */
    char *task;   /* "worker:1": whose failure it was */
    char *reason; /* why the node is at fault, in words */
    int attempt;
    long long t_ms;
    char *refused; /* NULL: excluded; else why not (the cap) */
} am_excluded_node;

typedef struct am_exclusion {
    int max;                /* tony.application.max-excluded-nodes; -1: fewer than half of the cluster */
    am_excluded_node *items; /* excluded and refused, in order */
    size_t len;
} am_exclusion;

void am_exclusion_init(am_exclusion *x, int max);
void am_exclusion_free(am_exclusion *x);

/* Whether a task's end says its node is at fault: the reason in words
 * (into buf), or NULL. exit_status as the backend reported it;
 * registered: its executor reached the coordinator; stopped: the
 * coordinator had asked to stop it (then nothing counts). */
const char *am_exclusion_node_cause(int exit_status, bool registered, bool stopped, char *buf, size_t n);

/* How many nodes may be excluded on a cluster of cluster_nodes (0: not
 * known): the configured maximum, or fewer than half of the nodes, and in
 * any case not all of them. */
int am_exclusion_cap(const am_exclusion *x, int cluster_nodes);
int am_exclusion_count(const am_exclusion *x); /* excluded, not refused */
bool am_exclusion_has(const am_exclusion *x, const char *node);

typedef enum {
    AM_EXCL_ADDED,   /* newly excluded: tell the backend */
    AM_EXCL_ALREADY, /* excluded (or refused) before */
    AM_EXCL_CAPPED,  /* not excluded: the cap is reached (recorded, with why) */
} am_excl_result;

am_excl_result am_exclusion_add(am_exclusion *x, const char *node, const char *task, const char *reason,
                                int attempt, int cluster_nodes, long long now_ms);

#endif
