/* ApplicationMasterProtocol over yarn_ipc: turns plain C asks into
 * ResourceRequestProtos and AllocateResponseProtos back into plain C, with
 * the bookkeeping YARN expects of an AM (docs/yarn-wire.md 4.3): echo the
 * last response id, send changed ask totals only, cache NMTokens, keep the
 * newest AMRMToken, re-register when the RM forgot us, finish until it says
 * we are unregistered. */
#include "backend/yarn/amrm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/yarn/amrm_pb.h"
#include "backend/yarn/ids_pb.h"
#include "backend/yarn/ipc.h"
#include "common/log.h"
#include "common/strv.h"

#define NOT_REGISTERED "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException"

typedef struct ask {
    int priority;
    yarn_resource cap;
    char *label; /* "" for none */
    int total;
    bool dirty; /* changed since the last allocate that reached the RM */
} ask;

typedef struct nm_token {
    char *host;
    int port;
    yarn_token *token;
} nm_token;

struct yarn_amrm {
    /* The RPC side: only the thread making the current RPC touches these. */
    char *host;
    int port;
    yarn_token *token;
    bool token_rolled; /* a rolled-over token waits for its first connection */
    yarn_ipc *ipc;
    int timeout_ms;
    /* kept to re-register after an RM restart */
    bool registered;
    char *reg_host, *reg_url;
    int reg_port;
    int32_t response_id;
    /* The bookkeeping: any thread, under mu. Asks are only ever appended,
     * so an index stays valid across an allocate. */
    pthread_mutex_t mu;
    ask *asks;
    size_t n_asks;
    yarn_container_id *releases;
    size_t n_releases;
    tony_strv blacklist; /* additions not yet sent */
    tony_strv blacklisted; /* every addition: sent again when the RM forgot us */
    nm_token *nm;
    size_t n_nm;
};

/* --- plain <-> protobuf resources */

void yarn_resource_from_pb(const Hadoop__Yarn__ResourceProto *pb, yarn_resource *out) {
    memset(out, 0, sizeof *out);
    if (!pb) return;
    out->memory_mb = pb->memory;
    out->vcores = pb->virtual_cores;
    for (size_t i = 0; i < pb->n_resource_value_map; i++)
        if (strcmp(pb->resource_value_map[i]->key, YARN_GPU_RESOURCE) == 0)
            out->gpus = (int)pb->resource_value_map[i]->value;
}

Hadoop__Yarn__ResourceProto *yarn_resource_to_pb(const yarn_resource *r, yarn_resource_pb *s) {
    hadoop__yarn__resource_proto__init(&s->res);
    s->res.has_memory = s->res.has_virtual_cores = 1;
    s->res.memory = r->memory_mb;
    s->res.virtual_cores = r->vcores;
    if (r->gpus > 0) {
        hadoop__yarn__resource_information_proto__init(&s->gpu);
        s->gpu.key = YARN_GPU_RESOURCE;
        s->gpu.has_value = s->gpu.has_type = 1;
        s->gpu.value = r->gpus;
        s->gpu.units = "";
        s->gpu.type = HADOOP__YARN__RESOURCE_TYPES_PROTO__COUNTABLE;
        s->map[0] = &s->gpu;
        s->res.n_resource_value_map = 1;
        s->res.resource_value_map = s->map;
    }
    return &s->res;
}

static yarn_token *token_from_pb(const Hadoop__Common__TokenProto *t) {
    if (!t) return NULL;
    return yarn_token_new(t->identifier.data, t->identifier.len, t->password.data, t->password.len, t->kind,
                          t->service);
}

static void container_from_pb(const Hadoop__Yarn__ContainerProto *pb, yarn_container *c) {
    memset(c, 0, sizeof *c);
    yarn_container_id_from_pb(pb->id, &c->cid);
    yarn_container_id_format(&c->cid, c->id, sizeof c->id);
    c->node_host = tony_strdup(pb->nodeid && pb->nodeid->host ? pb->nodeid->host : "");
    c->node_port = pb->nodeid ? pb->nodeid->port : 0;
    c->node_http_address = tony_strdup(pb->node_http_address ? pb->node_http_address : "");
    yarn_resource_from_pb(pb->resource, &c->resource);
    c->priority = pb->priority ? pb->priority->priority : 0;
    c->token = token_from_pb(pb->container_token);
}

void yarn_container_copy(yarn_container *dst, const yarn_container *src) {
    *dst = *src;
    dst->node_host = tony_strdup(src->node_host);
    dst->node_http_address = tony_strdup(src->node_http_address);
    dst->token = yarn_token_dup(src->token);
}

void yarn_container_free(yarn_container *c) {
    if (!c) return;
    free(c->node_host);
    free(c->node_http_address);
    yarn_token_free(c->token);
    memset(c, 0, sizeof *c);
}

static void containers_free(yarn_container *v, size_t n) {
    for (size_t i = 0; i < n; i++) yarn_container_free(&v[i]);
    free(v);
}

void yarn_register_info_free(yarn_register_info *r) {
    if (!r) return;
    free(r->queue);
    containers_free(r->previous, r->n_previous);
    memset(r, 0, sizeof *r);
}

void yarn_allocation_free(yarn_allocation *a) {
    if (!a) return;
    containers_free(a->allocated, a->n_allocated);
    for (size_t i = 0; i < a->n_completed; i++) free(a->completed[i].diagnostics);
    free(a->completed);
    memset(a, 0, sizeof *a);
}

/* --- object */

yarn_amrm *yarn_amrm_new(const char *host, int port, const yarn_token *amrm_token, tony_error *err) {
    if (!host || !*host || port <= 0 || port > 65535) {
        tony_err(err, "bad ResourceManager scheduler address '%s:%d' (want host:port, e.g. the value of "
                 "yarn.resourcemanager.scheduler.address)", host ? host : "", port);
        return NULL;
    }
    if (!amrm_token) {
        tony_err(err, "no %s token: the AM must run in a YARN container whose token file holds one",
                 YARN_AMRM_TOKEN_KIND);
        return NULL;
    }
    yarn_amrm *am = tony_xcalloc(1, sizeof *am);
    am->host = tony_strdup(host);
    am->port = port;
    am->token = yarn_token_dup(amrm_token);
    am->timeout_ms = YARN_IPC_DEFAULT_TIMEOUT_MS;
    pthread_mutex_init(&am->mu, NULL);
    return am;
}

void yarn_amrm_free(yarn_amrm *am) {
    if (!am) return;
    yarn_ipc_free(am->ipc);
    free(am->host);
    yarn_token_free(am->token);
    free(am->reg_host);
    free(am->reg_url);
    for (size_t i = 0; i < am->n_asks; i++) free(am->asks[i].label);
    free(am->asks);
    free(am->releases);
    tony_strv_free(&am->blacklist);
    tony_strv_free(&am->blacklisted);
    for (size_t i = 0; i < am->n_nm; i++) {
        free(am->nm[i].host);
        yarn_token_free(am->nm[i].token);
    }
    free(am->nm);
    pthread_mutex_destroy(&am->mu);
    free(am);
}

void yarn_amrm_set_timeout(yarn_amrm *am, int timeout_ms) {
    am->timeout_ms = timeout_ms > 0 ? timeout_ms : YARN_IPC_DEFAULT_TIMEOUT_MS;
    if (am->ipc) yarn_ipc_set_timeout(am->ipc, am->timeout_ms);
}

const yarn_token *yarn_amrm_token(const yarn_amrm *am) { return am->token; }

yarn_token *yarn_amrm_nm_token_dup(yarn_amrm *am, const char *host, int port) {
    yarn_token *t = NULL;
    pthread_mutex_lock(&am->mu);
    for (size_t i = 0; i < am->n_nm && !t; i++)
        if (am->nm[i].port == port && strcmp(am->nm[i].host, host) == 0) t = yarn_token_dup(am->nm[i].token);
    pthread_mutex_unlock(&am->mu);
    return t;
}

/* Locked. A newer token for a node (its master key rolled) replaces the old. */
static void put_nm_token(yarn_amrm *am, const char *host, int port, yarn_token *t) {
    nm_token *slot = NULL;
    for (size_t i = 0; i < am->n_nm && !slot; i++)
        if (am->nm[i].port == port && strcmp(am->nm[i].host, host) == 0) slot = &am->nm[i];
    if (!slot) {
        am->nm = tony_xrealloc(am->nm, (am->n_nm + 1) * sizeof *am->nm);
        slot = &am->nm[am->n_nm++];
        *slot = (nm_token){tony_strdup(host), port, NULL};
    }
    yarn_token_free(slot->token);
    slot->token = t;
}

void yarn_amrm_put_nm_token(yarn_amrm *am, const char *host, int port, const yarn_token *t) {
    pthread_mutex_lock(&am->mu);
    put_nm_token(am, host, port, yarn_token_dup(t));
    pthread_mutex_unlock(&am->mu);
}

/* Locked. */
static void keep_nm_tokens(yarn_amrm *am, Hadoop__Yarn__NMTokenProto **v, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (v[k]->nodeid && v[k]->nodeid->host && v[k]->token)
            put_nm_token(am, v[k]->nodeid->host, v[k]->nodeid->port, token_from_pb(v[k]->token));
}

int yarn_amrm_token_key_id(const yarn_token *t) {
    if (!t) return -1;
    Hadoop__Yarn__AMRMTokenIdentifierProto *id =
        hadoop__yarn__amrmtoken_identifier_proto__unpack(NULL, t->identifier_len, t->identifier);
    if (!id) return -1;
    int key = id->has_keyid ? id->keyid : -1;
    protobuf_c_message_free_unpacked(&id->base, NULL);
    return key;
}

/* One RPC; a broken connection is re-opened once and the call repeated
 * (register, allocate with the same response id, and finish are all safe to
 * repeat). */
static int call(yarn_amrm *am, const char *method, const ProtobufCMessage *req, const ProtobufCMessageDescriptor *d,
                ProtobufCMessage **resp, const char **exception, tony_error *err) {
    for (int attempt = 0; attempt < 2; attempt++) {
        *exception = NULL;
        if (!am->ipc || yarn_ipc_broken(am->ipc)) {
            yarn_ipc_free(am->ipc);
            am->ipc = NULL;
            if (yarn_ipc_connect(am->host, am->port, YARN_AM_PROTOCOL, am->token, am->timeout_ms, &am->ipc, err) < 0)
                return tony_err_wrap(err, "connecting to the ResourceManager scheduler");
            if (am->token_rolled)
                tony_info("authenticated to the ResourceManager with the rolled-over AMRMToken (key id %d)",
                          yarn_amrm_token_key_id(am->token));
            am->token_rolled = false;
        }
        if (yarn_ipc_call(am->ipc, method, req, d, resp, err) == 0) return 0;
        *exception = yarn_ipc_exception(am->ipc);
        if (!yarn_ipc_broken(am->ipc)) return -1;
        tony_warn("%s; reconnecting to the ResourceManager", err->msg);
    }
    return -1;
}

void yarn_amrm_take_register(yarn_amrm *am, const Hadoop__Yarn__RegisterApplicationMasterResponseProto *r,
                             yarn_register_info *out) {
    pthread_mutex_lock(&am->mu);
    keep_nm_tokens(am, r->nm_tokens_from_previous_attempts, r->n_nm_tokens_from_previous_attempts);
    pthread_mutex_unlock(&am->mu);
    if (out) {
        memset(out, 0, sizeof *out);
        yarn_resource_from_pb(r->maximumcapability, &out->max_capability);
        for (size_t i = 0; i < r->n_resource_types; i++)
            if (strcmp(r->resource_types[i]->name, YARN_GPU_RESOURCE) == 0) out->has_gpu_type = true;
        out->queue = tony_strdup(r->queue ? r->queue : "");
        out->protection = am->ipc ? yarn_ipc_protection(am->ipc) : "authentication";
        out->n_previous = r->n_containers_from_previous_attempts;
        out->previous = tony_xcalloc(out->n_previous ? out->n_previous : 1, sizeof *out->previous);
        for (size_t i = 0; i < out->n_previous; i++)
            container_from_pb(r->containers_from_previous_attempts[i], &out->previous[i]);
    }
}

static int do_register(yarn_amrm *am, yarn_register_info *out, tony_error *err) {
    Hadoop__Yarn__RegisterApplicationMasterRequestProto req = HADOOP__YARN__REGISTER_APPLICATION_MASTER_REQUEST_PROTO__INIT;
    req.host = am->reg_host;
    req.has_rpc_port = 1;
    req.rpc_port = am->reg_port;
    req.tracking_url = am->reg_url;
    ProtobufCMessage *m;
    const char *exc;
    if (call(am, "registerApplicationMaster", &req.base,
             &hadoop__yarn__register_application_master_response_proto__descriptor, &m, &exc, err) < 0)
        return tony_err_wrap(err, "registering the ApplicationMaster with the ResourceManager at %s:%d", am->host,
                             am->port);
    yarn_amrm_take_register(am, (const Hadoop__Yarn__RegisterApplicationMasterResponseProto *)m, out);
    protobuf_c_message_free_unpacked(m, NULL);
    am->registered = true;
    am->response_id = 0;
    return 0;
}

int yarn_amrm_register(yarn_amrm *am, const char *host, int rpc_port, const char *tracking_url,
                       yarn_register_info *out, tony_error *err) {
    free(am->reg_host);
    free(am->reg_url);
    am->reg_host = tony_strdup(host ? host : "");
    am->reg_url = tony_strdup(tracking_url ? tracking_url : "");
    am->reg_port = rpc_port;
    return do_register(am, out, err);
}

/* --- the ask table */

static bool same_cap(const yarn_resource *a, const yarn_resource *b) {
    return a->memory_mb == b->memory_mb && a->vcores == b->vcores && a->gpus == b->gpus;
}

static ask *find_ask(const yarn_amrm *am, int priority, const yarn_resource *cap, const char *label) {
    if (!label) label = "";
    for (size_t i = 0; i < am->n_asks; i++)
        if (am->asks[i].priority == priority && same_cap(&am->asks[i].cap, cap) && strcmp(am->asks[i].label, label) == 0)
            return &am->asks[i];
    return NULL;
}

static void change_ask(yarn_amrm *am, int priority, const yarn_resource *cap, const char *label, int delta) {
    ask *a = find_ask(am, priority, cap, label);
    if (!a) {
        if (delta <= 0) return; /* removing what was never asked for */
        am->asks = tony_xrealloc(am->asks, (am->n_asks + 1) * sizeof *am->asks);
        a = &am->asks[am->n_asks++];
        *a = (ask){priority, *cap, tony_strdup(label ? label : ""), 0, false};
    }
    int total = a->total + delta;
    if (total < 0) total = 0;
    if (total != a->total) {
        a->total = total;
        a->dirty = true;
    }
}

void yarn_amrm_add_request(yarn_amrm *am, int priority, const yarn_resource *cap, const char *node_label, int count) {
    if (count <= 0) return;
    pthread_mutex_lock(&am->mu);
    change_ask(am, priority, cap, node_label, count);
    pthread_mutex_unlock(&am->mu);
}

void yarn_amrm_remove_request(yarn_amrm *am, int priority, const yarn_resource *cap, const char *node_label,
                              int count) {
    if (count <= 0) return;
    pthread_mutex_lock(&am->mu);
    change_ask(am, priority, cap, node_label, -count);
    pthread_mutex_unlock(&am->mu);
}

int yarn_amrm_outstanding(yarn_amrm *am, int priority, const yarn_resource *cap, const char *node_label) {
    pthread_mutex_lock(&am->mu);
    const ask *a = find_ask(am, priority, cap, node_label);
    int total = a ? a->total : 0;
    pthread_mutex_unlock(&am->mu);
    return total;
}

/* A granted container fills one outstanding ask of its priority: an exact
 * size match first, else any ask it is big enough for (the scheduler rounds
 * sizes up to its minimum allocation). The RM already counted it down, so
 * nothing is resent. */
static void fill_ask(yarn_amrm *am, const yarn_container *c) {
    ask *best = NULL;
    for (size_t i = 0; i < am->n_asks; i++) {
        ask *a = &am->asks[i];
        if (a->priority != c->priority || a->total <= 0) continue;
        if (same_cap(&a->cap, &c->resource)) {
            best = a;
            break;
        }
        if (!best && a->cap.memory_mb <= c->resource.memory_mb && a->cap.vcores <= c->resource.vcores &&
            a->cap.gpus <= c->resource.gpus)
            best = a;
    }
    if (best) best->total--;
}

void yarn_amrm_release(yarn_amrm *am, const yarn_container *c) {
    pthread_mutex_lock(&am->mu);
    am->releases = tony_xrealloc(am->releases, (am->n_releases + 1) * sizeof *am->releases);
    am->releases[am->n_releases++] = c->cid;
    pthread_mutex_unlock(&am->mu);
}

void yarn_amrm_blacklist(yarn_amrm *am, const char *name) {
    pthread_mutex_lock(&am->mu);
    tony_strv_push(&am->blacklist, name);
    tony_strv_push(&am->blacklisted, name);
    pthread_mutex_unlock(&am->mu);
}

char *yarn_amrm_pending_blacklist(yarn_amrm *am) {
    tony_buf b = {0};
    tony_buf_puts(&b, "");
    pthread_mutex_lock(&am->mu);
    for (size_t i = 0; i < am->blacklist.len; i++) tony_buf_printf(&b, "%s\n", am->blacklist.items[i]);
    pthread_mutex_unlock(&am->mu);
    return b.data;
}

char *yarn_amrm_pending_asks(yarn_amrm *am) {
    tony_buf b = {0};
    tony_buf_puts(&b, "");
    pthread_mutex_lock(&am->mu);
    for (size_t i = 0; i < am->n_asks; i++) {
        const ask *a = &am->asks[i];
        if (a->dirty)
            tony_buf_printf(&b, "%d/%lld/%d/%d/%s=%d\n", a->priority, a->cap.memory_mb, a->cap.vcores, a->cap.gpus,
                            a->label, a->total);
    }
    pthread_mutex_unlock(&am->mu);
    return b.data;
}

/* --- allocate */

/* One allocate request, built under the lock into storage of its own: the
 * loop may change the ask table while the call is on the wire. */
typedef struct alloc_req {
    Hadoop__Yarn__AllocateRequestProto req;
    Hadoop__Yarn__ResourceRequestProto *rr;
    Hadoop__Yarn__ResourceRequestProto **rrp;
    Hadoop__Yarn__PriorityProto *prio;
    yarn_resource_pb *res;
    char **labels;
    yarn_container_id_pb *rel;
    yarn_container_id *rel_ids;
    Hadoop__Yarn__ContainerIdProto **relp;
    size_t *sent;       /* indexes of the asks sent... */
    int *sent_total;    /* ...and the totals they had */
    Hadoop__Yarn__ResourceBlacklistRequestProto blacklist;
    tony_strv blacklist_names; /* copies of the additions sent */
} alloc_req;

/* Locked. */
static void build_allocate(yarn_amrm *am, float progress, alloc_req *a) {
    size_t n = am->n_asks ? am->n_asks : 1, nr = am->n_releases ? am->n_releases : 1;
    a->rr = tony_xcalloc(n, sizeof *a->rr);
    a->rrp = tony_xcalloc(n, sizeof *a->rrp);
    a->prio = tony_xcalloc(n, sizeof *a->prio);
    a->res = tony_xcalloc(n, sizeof *a->res);
    a->labels = tony_xcalloc(n, sizeof *a->labels);
    a->sent = tony_xcalloc(n, sizeof *a->sent);
    a->sent_total = tony_xcalloc(n, sizeof *a->sent_total);
    a->rel = tony_xcalloc(nr, sizeof *a->rel);
    a->rel_ids = tony_xcalloc(nr, sizeof *a->rel_ids);
    a->relp = tony_xcalloc(nr, sizeof *a->relp);
    hadoop__yarn__allocate_request_proto__init(&a->req);
    size_t k = 0;
    for (size_t i = 0; i < am->n_asks; i++) {
        const ask *s = &am->asks[i];
        if (!s->dirty) continue;
        Hadoop__Yarn__ResourceRequestProto *r = &a->rr[k];
        hadoop__yarn__resource_request_proto__init(r);
        hadoop__yarn__priority_proto__init(&a->prio[k]);
        a->prio[k].has_priority = 1;
        a->prio[k].priority = s->priority;
        r->priority = &a->prio[k];
        r->resource_name = "*"; /* anywhere: no locality */
        r->capability = yarn_resource_to_pb(&s->cap, &a->res[k]);
        r->has_num_containers = r->has_relax_locality = 1;
        r->num_containers = s->total;
        r->relax_locality = 1;
        if (*s->label) r->node_label_expression = a->labels[k] = tony_strdup(s->label);
        a->rrp[k] = r;
        a->sent[k] = i;
        a->sent_total[k] = s->total;
        k++;
    }
    a->req.n_ask = k;
    a->req.ask = a->rrp;
    for (size_t i = 0; i < am->n_releases; i++) {
        a->rel_ids[i] = am->releases[i];
        a->relp[i] = yarn_container_id_to_pb(&a->rel_ids[i], &a->rel[i]);
    }
    a->req.n_release = am->n_releases;
    a->req.release = a->relp;
    hadoop__yarn__resource_blacklist_request_proto__init(&a->blacklist);
    memset(&a->blacklist_names, 0, sizeof a->blacklist_names);
    if (am->blacklist.len) {
        for (size_t i = 0; i < am->blacklist.len; i++) tony_strv_push(&a->blacklist_names, am->blacklist.items[i]);
        a->blacklist.n_blacklist_additions = a->blacklist_names.len;
        a->blacklist.blacklist_additions = a->blacklist_names.items;
        a->req.blacklist_request = &a->blacklist;
    }
    a->req.has_response_id = a->req.has_progress = 1;
    a->req.response_id = am->response_id;
    a->req.progress = progress < 0 ? 0 : progress > 1 ? 1 : progress;
}

static void alloc_req_free(alloc_req *a) {
    for (size_t i = 0; i < a->req.n_ask; i++) free(a->labels[i]);
    free(a->rr);
    free(a->rrp);
    free(a->prio);
    free(a->res);
    free(a->labels);
    free(a->sent);
    free(a->sent_total);
    free(a->rel);
    free(a->rel_ids);
    free(a->relp);
    tony_strv_free(&a->blacklist_names);
}

/* Locked. What the RM now knows: an ask it got is clean unless it changed
 * meanwhile, and the releases it got are done. */
static void mark_sent(yarn_amrm *am, const alloc_req *a) {
    for (size_t i = 0; i < a->req.n_ask; i++)
        if (am->asks[a->sent[i]].total == a->sent_total[i]) am->asks[a->sent[i]].dirty = false;
    /* the RM keeps the additions it got: they are sent once */
    size_t nb = a->blacklist_names.len;
    if (nb) {
        for (size_t i = 0; i < nb; i++) free(am->blacklist.items[i]);
        memmove(am->blacklist.items, am->blacklist.items + nb, (am->blacklist.len - nb) * sizeof *am->blacklist.items);
        am->blacklist.len -= nb;
        am->blacklist.items[am->blacklist.len] = NULL;
    }
    size_t n = a->req.n_release;
    if (n == 0) return;
    memmove(am->releases, am->releases + n, (am->n_releases - n) * sizeof *am->releases);
    am->n_releases -= n;
}

static bool same_token(const yarn_token *a, const yarn_token *b) {
    return a->identifier_len == b->identifier_len && a->password_len == b->password_len &&
           memcmp(a->identifier, b->identifier, a->identifier_len) == 0 &&
           memcmp(a->password, b->password, a->password_len) == 0;
}

/* The RM repeats the new AMRMToken in every response until a connection
 * authenticated with it calls: drop ours so that the next call makes one,
 * which also proves the token before the old key is retired. */
static void take_amrm_token(yarn_amrm *am, const Hadoop__Common__TokenProto *pb, yarn_allocation *out) {
    yarn_token *t = token_from_pb(pb);
    if (!t || same_token(t, am->token)) {
        yarn_token_free(t);
        return;
    }
    tony_info("the ResourceManager rolled the AMRMToken over (key id %d -> %d); reconnecting with the new one",
              yarn_amrm_token_key_id(am->token), yarn_amrm_token_key_id(t));
    yarn_token_free(am->token);
    am->token = t;
    am->token_rolled = true;
    yarn_ipc_free(am->ipc);
    am->ipc = NULL;
    out->amrm_token_rolled = true;
}

void yarn_amrm_take_allocate(yarn_amrm *am, const Hadoop__Yarn__AllocateResponseProto *r, yarn_allocation *out) {
    am->response_id = r->response_id;
    if (r->am_rm_token) take_amrm_token(am, r->am_rm_token, out);
    if (r->has_a_m_command)
        out->command = r->a_m_command == HADOOP__YARN__AMCOMMAND_PROTO__AM_SHUTDOWN ? YARN_AM_CMD_SHUTDOWN
                                                                                    : YARN_AM_CMD_RESYNC;
    out->n_allocated = r->n_allocated_containers;
    out->allocated = tony_xcalloc(out->n_allocated ? out->n_allocated : 1, sizeof *out->allocated);
    for (size_t i = 0; i < out->n_allocated; i++) container_from_pb(r->allocated_containers[i], &out->allocated[i]);
    pthread_mutex_lock(&am->mu);
    keep_nm_tokens(am, r->nm_tokens, r->n_nm_tokens);
    for (size_t i = 0; i < out->n_allocated; i++) fill_ask(am, &out->allocated[i]);
    pthread_mutex_unlock(&am->mu);
    out->n_completed = r->n_completed_container_statuses;
    out->completed = tony_xcalloc(out->n_completed ? out->n_completed : 1, sizeof *out->completed);
    for (size_t i = 0; i < out->n_completed; i++) {
        const Hadoop__Yarn__ContainerStatusProto *s = r->completed_container_statuses[i];
        yarn_container_id cid;
        yarn_container_id_from_pb(s->container_id, &cid);
        yarn_container_id_format(&cid, out->completed[i].id, sizeof out->completed[i].id);
        out->completed[i].exit_status = s->exit_status; /* -1000 (INVALID) when absent */
        out->completed[i].diagnostics = tony_strdup(s->diagnostics ? s->diagnostics : "");
    }
    yarn_resource_from_pb(r->limit, &out->headroom);
    out->num_cluster_nodes = r->num_cluster_nodes;
}

int yarn_amrm_allocate(yarn_amrm *am, float progress, yarn_allocation *out, tony_error *err) {
    memset(out, 0, sizeof *out);
    if (!am->registered) return tony_err(err, "allocate before registerApplicationMaster");
    for (int attempt = 0; attempt < 2; attempt++) {
        alloc_req a;
        pthread_mutex_lock(&am->mu);
        build_allocate(am, progress, &a);
        pthread_mutex_unlock(&am->mu);
        ProtobufCMessage *m;
        const char *exc;
        int rc = call(am, "allocate", &a.req.base, &hadoop__yarn__allocate_response_proto__descriptor, &m, &exc, err);
        if (rc == 0) {
            pthread_mutex_lock(&am->mu);
            mark_sent(am, &a);
            pthread_mutex_unlock(&am->mu);
            yarn_amrm_take_allocate(am, (Hadoop__Yarn__AllocateResponseProto *)m, out);
            protobuf_c_message_free_unpacked(m, NULL);
        }
        alloc_req_free(&a);
        if (rc == 0) return 0;
        if (attempt > 0 || !exc || strcmp(exc, NOT_REGISTERED) != 0) return tony_err_wrap(err, "YARN allocate");
        /* The RM lost our registration (e.g. it restarted): register again
         * and resend the whole table, as Java's AMRMClient does. */
        tony_warn("%s; registering again", err->msg);
        if (do_register(am, NULL, err) < 0) return -1;
        pthread_mutex_lock(&am->mu);
        for (size_t i = 0; i < am->n_asks; i++) am->asks[i].dirty = am->asks[i].total > 0;
        tony_strv_free(&am->blacklist);
        for (size_t i = 0; i < am->blacklisted.len; i++) tony_strv_push(&am->blacklist, am->blacklisted.items[i]);
        pthread_mutex_unlock(&am->mu);
    }
    return -1;
}

int yarn_amrm_finish(yarn_amrm *am, yarn_final_status status, const char *diagnostics, const char *tracking_url,
                     int timeout_ms, tony_error *err) {
    Hadoop__Yarn__FinishApplicationMasterRequestProto req = HADOOP__YARN__FINISH_APPLICATION_MASTER_REQUEST_PROTO__INIT;
    req.diagnostics = (char *)(diagnostics ? diagnostics : "");
    req.tracking_url = (char *)(tracking_url ? tracking_url : "");
    req.has_final_application_status = 1;
    req.final_application_status = (Hadoop__Yarn__FinalApplicationStatusProto)status;
    long long waited = 0;
    bool reregistered = false;
    for (;;) {
        ProtobufCMessage *m;
        const char *exc;
        if (call(am, "finishApplicationMaster", &req.base,
                 &hadoop__yarn__finish_application_master_response_proto__descriptor, &m, &exc, err) < 0) {
            if (reregistered || !exc || strcmp(exc, NOT_REGISTERED) != 0)
                return tony_err_wrap(err, "unregistering from the ResourceManager");
            reregistered = true;
            if (do_register(am, NULL, err) < 0) return -1;
            continue;
        }
        bool done = ((Hadoop__Yarn__FinishApplicationMasterResponseProto *)m)->isunregistered;
        protobuf_c_message_free_unpacked(m, NULL);
        if (done) return 0;
        /* The RM answers "not yet" until the final state is stored. */
        if (waited >= timeout_ms)
            return tony_err(err, "the ResourceManager did not confirm the unregistration within %d ms", timeout_ms);
        tony_sleep_ms(100);
        waited += 100;
    }
}
