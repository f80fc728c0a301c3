/* The AM's side of YARN's ApplicationMasterProtocol (RM scheduler port) in
 * plain C: register, an ask table, allocate heartbeats, release, finish.
 * Keeps what the RM hands out for later (NMTokens per node, a rolled-over
 * AMRMToken) and reconnects on a broken connection. Callers never see
 * protobuf-c.
 *
 * Threads: the RPCs (register, allocate, finish) are made by one thread at a
 * time, which owns the connection and the AMRMToken meanwhile; the ask table,
 * releases and NMTokens are behind a lock, so another thread (the event loop)
 * may add asks and releases, and NodeManager threads may look up NMTokens,
 * while an allocate is on the wire. */
#ifndef TONY_YARN_AMRM_H
#define TONY_YARN_AMRM_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/yarn/ids.h"
#include "backend/yarn/tokens.h"
#include "common/error.h"

#define YARN_GPU_RESOURCE "yarn.io/gpu"

/* A container size. */
typedef struct yarn_resource {
    long long memory_mb;
    int vcores;
    int gpus; /* yarn.io/gpu */
} yarn_resource;

/* One granted container. Owns its strings and token (yarn_container_free). */
typedef struct yarn_container {
    char id[YARN_ID_MAX]; /* container_... */
    yarn_container_id cid;
    char *node_host;
    int node_port;           /* the NM's IPC port */
    char *node_http_address; /* host:port of the NM web UI */
    yarn_resource resource;
    int priority;
    yarn_token *token; /* container token, passed to the NM at start */
} yarn_container;

void yarn_container_copy(yarn_container *dst, const yarn_container *src);
void yarn_container_free(yarn_container *c); /* frees the fields, not c */

/* What registration tells us. Free the fields with yarn_register_info_free. */
typedef struct yarn_register_info {
    yarn_resource max_capability;
    bool has_gpu_type; /* yarn.io/gpu is a configured resource type (else GPU asks silently become 0) */
    char *queue;
    const char *protection; /* hadoop.rpc.protection the scheduler connection speaks (static) */
    yarn_container *previous; /* containers kept from earlier attempts */
    size_t n_previous;
} yarn_register_info;
void yarn_register_info_free(yarn_register_info *r);

/* A container that ended (YARN's ContainerStatus). */
typedef struct yarn_completed {
    char id[YARN_ID_MAX];
    int exit_status; /* process exit code, or YARN's -100..-109 (backend.h TONY_EXIT_*) */
    char *diagnostics;
} yarn_completed;

typedef enum { YARN_AM_CMD_NONE = 0, YARN_AM_CMD_RESYNC = 1, YARN_AM_CMD_SHUTDOWN = 2 } yarn_am_command;

/* One heartbeat's news. Free the fields with yarn_allocation_free. */
typedef struct yarn_allocation {
    yarn_container *allocated;
    size_t n_allocated;
    yarn_completed *completed;
    size_t n_completed;
    yarn_resource headroom;
    int num_cluster_nodes;
    yarn_am_command command; /* RESYNC: re-register; SHUTDOWN: the RM wants us gone */
    bool amrm_token_rolled;  /* a new AMRMToken arrived: the next call reconnects with it */
} yarn_allocation;
void yarn_allocation_free(yarn_allocation *a);

typedef enum {
    YARN_FINAL_UNDEFINED = 0,
    YARN_FINAL_SUCCEEDED = 1,
    YARN_FINAL_FAILED = 2,
    YARN_FINAL_KILLED = 3,
} yarn_final_status;

typedef struct yarn_amrm yarn_amrm;

/* Connects to the RM scheduler address with the AMRMToken (copied). */
yarn_amrm *yarn_amrm_new(const char *host, int port, const yarn_token *amrm_token, tony_error *err);
void yarn_amrm_free(yarn_amrm *am);
/* Bounds each RPC (default YARN_IPC_DEFAULT_TIMEOUT_MS). */
void yarn_amrm_set_timeout(yarn_amrm *am, int timeout_ms);

/* host/rpc_port: where the AM listens (rpc_port -1 if nowhere);
 * tracking_url: shown by the RM as the app's link ("" for none). out may be
 * NULL. */
int yarn_amrm_register(yarn_amrm *am, const char *host, int rpc_port, const char *tracking_url,
                       yarn_register_info *out, tony_error *err);

/* The ask table: outstanding container counts per (priority, capability,
 * node label; NULL/"" = none). add/remove change the total; the next
 * allocate sends only entries whose total changed, as YARN expects (asks are
 * totals, not increments). Containers that arrive decrement the matching
 * entry (same priority; the RM may round the size up) without a resend. */
void yarn_amrm_add_request(yarn_amrm *am, int priority, const yarn_resource *cap, const char *node_label, int count);
void yarn_amrm_remove_request(yarn_amrm *am, int priority, const yarn_resource *cap, const char *node_label,
                              int count);
/* The current outstanding total of one entry. */
int yarn_amrm_outstanding(yarn_amrm *am, int priority, const yarn_resource *cap, const char *node_label);
/* Gives a container back to the RM at the next allocate. */
void yarn_amrm_release(yarn_amrm *am, const yarn_container *c);
/* Adds name (a scheduler node name) to the application's blacklist with
 * the next allocate that reaches the RM (once: the RM keeps it). */
void yarn_amrm_blacklist(yarn_amrm *am, const char *name);

/* One heartbeat (progress in [0,1]). out is filled even when nothing new
 * happened. Re-registers and resends every ask when the RM has forgotten us
 * (ApplicationMasterNotRegisteredException); reconnects once on a broken
 * connection. */
int yarn_amrm_allocate(yarn_amrm *am, float progress, yarn_allocation *out, tony_error *err);

/* Unregisters with a final status, retrying until the RM confirms or
 * timeout_ms passes. */
int yarn_amrm_finish(yarn_amrm *am, yarn_final_status status, const char *diagnostics, const char *tracking_url,
                     int timeout_ms, tony_error *err);

/* A copy of the NMToken the RM gave for node host:port (yarn_token_free
 * it), or NULL. Any thread. */
yarn_token *yarn_amrm_nm_token_dup(yarn_amrm *am, const char *host, int port);
/* The AMRMToken a reconnect would use now. The RPC thread only. */
const yarn_token *yarn_amrm_token(const yarn_amrm *am);
/* The id of the RM master key that signed an AMRMToken (it changes when the
 * RM rolls its key over), or -1 when the identifier is unreadable. */
int yarn_amrm_token_key_id(const yarn_token *t);

/* --- for tests */
/* What the next allocate would send, as "prio/mem/vcores/gpus/label=count" lines. */
char *yarn_amrm_pending_asks(yarn_amrm *am);
/* The blacklist additions the next allocate would send, one per line. */
char *yarn_amrm_pending_blacklist(yarn_amrm *am);
/* Keeps an NMToken (a copy) for node host:port, as an allocate would. */
void yarn_amrm_put_nm_token(yarn_amrm *am, const char *host, int port, const yarn_token *t);

#endif
