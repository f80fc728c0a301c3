/* ContainerManagementProtocol over yarn_ipc, one connection per NodeManager.
 * The NM reports per-container refusals in failed_requests rather than as an
 * RPC error; both become tony_errors here. The async calls are jobs on a
 * tony_workq whose lane is the node, so a node's connection is only used by
 * the thread running that node's current job. */
#include "backend/yarn/nm.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "backend/yarn/ids_pb.h"
#include "backend/yarn/ipc.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/strv.h"
#include "yarn_am.pb-c.h"

typedef struct nm_conn {
    char *host;
    int port;
    yarn_ipc *ipc;
} nm_conn;

struct yarn_nm_pool {
    yarn_amrm *am;
    tony_workq *q;
    nm_conn **conns; /* created by the submitting thread, never moved */
    size_t n_conns;
    int timeout_ms;
    int cancel_fd; /* written once at the end: every call still out gives up */
};

void yarn_container_status_free(yarn_container_status *s) {
    if (!s) return;
    free(s->diagnostics);
    memset(s, 0, sizeof *s);
}

yarn_nm_pool *yarn_nm_pool_new(yarn_amrm *am, tony_workq *q) {
    yarn_nm_pool *p = tony_xcalloc(1, sizeof *p);
    p->am = am;
    p->q = q;
    p->timeout_ms = YARN_IPC_DEFAULT_TIMEOUT_MS;
    /* Without one, calls at the end are bounded by their own timeouts only. */
    p->cancel_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (p->cancel_fd < 0) tony_warn("no eventfd to cut NodeManager calls short at the end: %s", strerror(errno));
    return p;
}

void yarn_nm_pool_free(yarn_nm_pool *p) {
    if (!p) return;
    for (size_t i = 0; i < p->n_conns; i++) {
        free(p->conns[i]->host);
        yarn_ipc_free(p->conns[i]->ipc);
        free(p->conns[i]);
    }
    free(p->conns);
    if (p->cancel_fd >= 0) close(p->cancel_fd);
    free(p);
}

void yarn_nm_pool_set_timeout(yarn_nm_pool *p, int timeout_ms) {
    p->timeout_ms = timeout_ms > 0 ? timeout_ms : YARN_IPC_DEFAULT_TIMEOUT_MS;
    for (size_t i = 0; i < p->n_conns; i++)
        if (p->conns[i]->ipc) yarn_ipc_set_timeout(p->conns[i]->ipc, p->timeout_ms);
}

static nm_conn *conn_for(yarn_nm_pool *p, const char *host, int port) {
    for (size_t i = 0; i < p->n_conns; i++)
        if (p->conns[i]->port == port && strcmp(p->conns[i]->host, host) == 0) return p->conns[i];
    p->conns = tony_xrealloc(p->conns, (p->n_conns + 1) * sizeof *p->conns);
    nm_conn *nc = tony_xcalloc(1, sizeof *nc);
    *nc = (nm_conn){tony_strdup(host), port, NULL};
    return p->conns[p->n_conns++] = nc;
}

static bool cancelled(const yarn_nm_pool *p) {
    struct pollfd pf = {p->cancel_fd, POLLIN, 0};
    return p->cancel_fd >= 0 && poll(&pf, 1, 0) > 0;
}

/* One call to the container's NM on its connection nc; a broken connection
 * is re-opened once, with the newest NMToken the RM gave for the node. */
static int nm_call(yarn_nm_pool *p, nm_conn *nc, const yarn_container *c, const char *method,
                   const ProtobufCMessage *req, const ProtobufCMessageDescriptor *d, ProtobufCMessage **resp,
                   tony_error *err) {
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!nc->ipc || yarn_ipc_broken(nc->ipc)) {
            yarn_ipc_free(nc->ipc);
            nc->ipc = NULL;
            yarn_token *t = yarn_amrm_nm_token_dup(p->am, c->node_host, c->node_port);
            if (!t)
                return tony_err(err, "no NMToken for NodeManager %s:%d (the RM sends one with the first container "
                                "on each node)", c->node_host, c->node_port);
            int rc = yarn_ipc_connect_cancellable(c->node_host, c->node_port, YARN_NM_PROTOCOL, t, p->timeout_ms,
                                                  p->cancel_fd, &nc->ipc, err);
            yarn_token_free(t);
            if (rc < 0) return tony_err_wrap(err, "connecting to NodeManager %s:%d", c->node_host, c->node_port);
        }
        if (yarn_ipc_call(nc->ipc, method, req, d, resp, err) == 0) return 0;
        if (!yarn_ipc_broken(nc->ipc) || cancelled(p)) break;
        tony_warn("%s; reconnecting to NodeManager %s:%d", err->msg, c->node_host, c->node_port);
    }
    return tony_err_wrap(err, "%s of %s on %s:%d", method, c->id, c->node_host, c->node_port);
}

/* The first failed request, as "Class: first line of message". */
static int failed(Hadoop__Yarn__ContainerExceptionMapProto **v, size_t n, const char *what, const yarn_container *c,
                  tony_error *err) {
    if (n == 0) return 0;
    const Hadoop__Yarn__SerializedExceptionProto *e = v[0]->exception;
    const char *cls = e && e->class_name ? e->class_name : "(no exception class)";
    const char *msg = e && e->message ? e->message : "";
    return tony_err(err, "NodeManager %s:%d refused to %s %s: %s: %.*s", c->node_host, c->node_port, what, c->id, cls,
                    (int)strcspn(msg, "\r\n"), msg);
}

/* scheme://[user@]host[:port]/path as YARN's URL message (Java URL.fromURI). */
static int url_from_uri(const char *uri, Hadoop__Yarn__URLProto *u, tony_buf *store, tony_error *err) {
    hadoop__yarn__urlproto__init(u);
    const char *sep = strstr(uri, "://");
    if (!sep || sep == uri)
        return tony_err(err, "local resource '%s' is not a full URI (want e.g. hdfs://namenode:8020/path or "
                        "file:///path)", uri);
    const char *auth = sep + 3, *path = strchr(auth, '/');
    if (!path) path = auth + strlen(auth);
    /* one buffer, NUL-separated pieces: scheme, userinfo, host */
    tony_buf_append(store, uri, (size_t)(sep - uri));
    tony_buf_append(store, "", 1);
    const char *at = memchr(auth, '@', (size_t)(path - auth));
    size_t user_at = 0, host_at;
    if (at) {
        user_at = store->len;
        tony_buf_append(store, auth, (size_t)(at - auth));
        tony_buf_append(store, "", 1);
        auth = at + 1;
    }
    host_at = store->len;
    const char *colon = memchr(auth, ':', (size_t)(path - auth));
    const char *host_end = colon ? colon : path;
    tony_buf_append(store, auth, (size_t)(host_end - auth));
    tony_buf_append(store, "", 1);
    if (colon) {
        long long port;
        char digits[16] = "";
        size_t n = (size_t)(path - colon - 1);
        if (n >= sizeof digits) n = sizeof digits - 1;
        memcpy(digits, colon + 1, n);
        if (!tony_parse_ll(digits, &port) || port <= 0 || port > 65535)
            return tony_err(err, "local resource '%s' has a bad port", uri);
        u->has_port = 1;
        u->port = (int32_t)port;
    }
    u->scheme = store->data;
    if (at) u->userinfo = store->data + user_at;
    if (host_end > auth) u->host = store->data + host_at;
    u->file = (char *)(*path ? path : "/");
    return 0;
}

static int start_on(yarn_nm_pool *p, nm_conn *nc, const yarn_container *c, const yarn_launch_ctx *ctx,
                    tony_error *err) {
    if (!c->token) return tony_err(err, "container %s has no container token from the RM", c->id);
    size_t nr = ctx->n_resources, ne = ctx->env ? ctx->env->kv.len : 0;
    Hadoop__Yarn__URLProto *urls = tony_xcalloc(nr + 1, sizeof *urls);
    tony_buf *stores = tony_xcalloc(nr + 1, sizeof *stores);
    Hadoop__Yarn__LocalResourceProto *lrs = tony_xcalloc(nr + 1, sizeof *lrs);
    Hadoop__Yarn__StringLocalResourceMapProto *lre = tony_xcalloc(nr + 1, sizeof *lre), **lrp =
                                                         tony_xcalloc(nr + 1, sizeof *lrp);
    Hadoop__Yarn__StringStringMapProto *env = tony_xcalloc(ne + 1, sizeof *env), **envp = tony_xcalloc(ne + 1, sizeof *envp);
    char **keys = tony_xcalloc(ne + 1, sizeof *keys);
    int rc = -1;
    for (size_t i = 0; i < nr; i++) {
        const yarn_local_resource *r = &ctx->resources[i];
        if (!r->name || !*r->name || !r->uri) {
            tony_err(err, "local resource %zu of %s has no name or URI", i, c->id);
            goto out;
        }
        /* URL strings point into stores[i], which must not grow afterwards. */
        if (url_from_uri(r->uri, &urls[i], &stores[i], err) < 0) goto out;
        hadoop__yarn__local_resource_proto__init(&lrs[i]);
        lrs[i].resource = &urls[i];
        lrs[i].has_size = lrs[i].has_timestamp = lrs[i].has_type = lrs[i].has_visibility = 1;
        lrs[i].size = r->size;
        lrs[i].timestamp = r->timestamp;
        lrs[i].type = (Hadoop__Yarn__LocalResourceTypeProto)r->type;
        lrs[i].visibility = (Hadoop__Yarn__LocalResourceVisibilityProto)r->visibility;
        hadoop__yarn__string_local_resource_map_proto__init(&lre[i]);
        lre[i].key = (char *)r->name;
        lre[i].value = &lrs[i];
        lrp[i] = &lre[i];
    }
    for (size_t i = 0; i < ne; i++) {
        const char *kv = ctx->env->kv.items[i], *eq = strchr(kv, '=');
        keys[i] = eq ? strndup(kv, (size_t)(eq - kv)) : tony_strdup(kv);
        hadoop__yarn__string_string_map_proto__init(&env[i]);
        env[i].key = keys[i];
        env[i].value = (char *)(eq ? eq + 1 : "");
        envp[i] = &env[i];
    }
    Hadoop__Yarn__ContainerLaunchContextProto clc = HADOOP__YARN__CONTAINER_LAUNCH_CONTEXT_PROTO__INIT;
    clc.n_localresources = nr;
    clc.localresources = lrp;
    clc.n_environment = ne;
    clc.environment = envp;
    char *cmd = (char *)(ctx->command ? ctx->command : "");
    clc.n_command = 1;
    clc.command = &cmd;
    if (ctx->tokens && ctx->tokens_len) {
        clc.has_tokens = 1;
        clc.tokens = (ProtobufCBinaryData){ctx->tokens_len, (uint8_t *)ctx->tokens};
    }
    Hadoop__Common__TokenProto tok = HADOOP__COMMON__TOKEN_PROTO__INIT;
    tok.identifier = (ProtobufCBinaryData){c->token->identifier_len, c->token->identifier};
    tok.password = (ProtobufCBinaryData){c->token->password_len, c->token->password};
    tok.kind = c->token->kind;
    tok.service = c->token->service;
    Hadoop__Yarn__StartContainerRequestProto one = HADOOP__YARN__START_CONTAINER_REQUEST_PROTO__INIT, *onep = &one;
    one.container_launch_context = &clc;
    one.container_token = &tok;
    Hadoop__Yarn__StartContainersRequestProto req = HADOOP__YARN__START_CONTAINERS_REQUEST_PROTO__INIT;
    req.n_start_container_request = 1;
    req.start_container_request = &onep;
    ProtobufCMessage *m;
    if (nm_call(p, nc, c, "startContainers", &req.base, &hadoop__yarn__start_containers_response_proto__descriptor, &m,
                err) < 0)
        goto out;
    Hadoop__Yarn__StartContainersResponseProto *r = (Hadoop__Yarn__StartContainersResponseProto *)m;
    rc = failed(r->failed_requests, r->n_failed_requests, "start", c, err);
    if (rc == 0 && r->n_succeeded_requests == 0) rc = tony_err(err, "NodeManager %s:%d did not start %s",
                                                               c->node_host, c->node_port, c->id);
    protobuf_c_message_free_unpacked(m, NULL);
out:
    for (size_t i = 0; i < nr; i++) tony_buf_free(&stores[i]);
    for (size_t i = 0; i < ne; i++) free(keys[i]);
    free(urls);
    free(stores);
    free(lrs);
    free(lre);
    free(lrp);
    free(env);
    free(envp);
    free(keys);
    return rc;
}

static int stop_on(yarn_nm_pool *p, nm_conn *nc, const yarn_container *c, tony_error *err) {
    yarn_container_id_pb store;
    Hadoop__Yarn__ContainerIdProto *id = yarn_container_id_to_pb(&c->cid, &store);
    Hadoop__Yarn__StopContainersRequestProto req = HADOOP__YARN__STOP_CONTAINERS_REQUEST_PROTO__INIT;
    req.n_container_id = 1;
    req.container_id = &id;
    ProtobufCMessage *m;
    if (nm_call(p, nc, c, "stopContainers", &req.base, &hadoop__yarn__stop_containers_response_proto__descriptor, &m,
                err) < 0)
        return -1;
    Hadoop__Yarn__StopContainersResponseProto *r = (Hadoop__Yarn__StopContainersResponseProto *)m;
    int rc = failed(r->failed_requests, r->n_failed_requests, "stop", c, err);
    protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}

static int status_on(yarn_nm_pool *p, nm_conn *nc, const yarn_container *c, yarn_container_status *out,
                     tony_error *err) {
    memset(out, 0, sizeof *out);
    yarn_container_id_pb store;
    Hadoop__Yarn__ContainerIdProto *id = yarn_container_id_to_pb(&c->cid, &store);
    Hadoop__Yarn__GetContainerStatusesRequestProto req = HADOOP__YARN__GET_CONTAINER_STATUSES_REQUEST_PROTO__INIT;
    req.n_container_id = 1;
    req.container_id = &id;
    ProtobufCMessage *m;
    if (nm_call(p, nc, c, "getContainerStatuses", &req.base,
                &hadoop__yarn__get_container_statuses_response_proto__descriptor, &m, err) < 0)
        return -1;
    Hadoop__Yarn__GetContainerStatusesResponseProto *r = (Hadoop__Yarn__GetContainerStatusesResponseProto *)m;
    int rc = failed(r->failed_requests, r->n_failed_requests, "report the status of", c, err);
    if (rc == 0 && r->n_status == 0)
        rc = tony_err(err, "NodeManager %s:%d returned no status for %s", c->node_host, c->node_port, c->id);
    if (rc == 0) {
        out->state = r->status[0]->has_state ? (yarn_container_state)r->status[0]->state : YARN_CSTATE_NEW;
        out->exit_status = r->status[0]->exit_status;
        out->diagnostics = tony_strdup(r->status[0]->diagnostics ? r->status[0]->diagnostics : "");
    }
    protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}

/* --- synchronous */

int yarn_nm_start(yarn_nm_pool *p, const yarn_container *c, const yarn_launch_ctx *ctx, tony_error *err) {
    return start_on(p, conn_for(p, c->node_host, c->node_port), c, ctx, err);
}

int yarn_nm_stop(yarn_nm_pool *p, const yarn_container *c, tony_error *err) {
    return stop_on(p, conn_for(p, c->node_host, c->node_port), c, err);
}

int yarn_nm_status(yarn_nm_pool *p, const yarn_container *c, yarn_container_status *out, tony_error *err) {
    return status_on(p, conn_for(p, c->node_host, c->node_port), c, out, err);
}

/* --- asynchronous: a job owns copies of everything its call needs */

typedef enum { NM_START, NM_STOP, NM_STATUS } nm_op;

typedef struct nm_job {
    yarn_nm_pool *p;
    nm_conn *nc;
    nm_op op;
    yarn_container c;
    yarn_local_resource *res; /* strings owned */
    size_t n_res;
    tony_env env;
    char *command;
    unsigned char *tokens;
    size_t tokens_len;
    yarn_nm_reply reply;
    yarn_nm_done_fn done;
    void *arg;
} nm_job;

static void job_run(void *arg) {
    nm_job *j = arg;
    yarn_nm_reply *r = &j->reply;
    if (j->op == NM_START) {
        yarn_launch_ctx ctx = {.resources = j->res, .n_resources = j->n_res, .env = &j->env,
                               .command = j->command, .tokens = j->tokens, .tokens_len = j->tokens_len};
        r->rc = start_on(j->p, j->nc, &j->c, &ctx, &r->err);
    } else if (j->op == NM_STOP) {
        r->rc = stop_on(j->p, j->nc, &j->c, &r->err);
    } else {
        r->rc = status_on(j->p, j->nc, &j->c, &r->status, &r->err);
    }
}

static void job_done(void *arg, bool ran) {
    nm_job *j = arg;
    j->reply.ran = ran;
    if (!ran) j->reply.rc = tony_err(&j->reply.err, "cancelled: the coordinator is shutting down");
    j->done(j->arg, &j->reply);
    yarn_container_status_free(&j->reply.status);
    for (size_t i = 0; i < j->n_res; i++) {
        free((char *)j->res[i].name);
        free((char *)j->res[i].uri);
    }
    free(j->res);
    tony_env_free(&j->env);
    free(j->command);
    free(j->tokens);
    yarn_container_free(&j->c);
    free(j);
}

static void node_name(const yarn_container *c, char *out, size_t n) {
    snprintf(out, n, "%s:%d", c->node_host, c->node_port);
}

static void submit(yarn_nm_pool *p, nm_op op, const yarn_container *c, const yarn_launch_ctx *ctx,
                   yarn_nm_done_fn done, void *arg) {
    nm_job *j = tony_xcalloc(1, sizeof *j);
    j->p = p;
    j->nc = conn_for(p, c->node_host, c->node_port);
    j->op = op;
    yarn_container_copy(&j->c, c);
    snprintf(j->reply.container_id, sizeof j->reply.container_id, "%s", c->id);
    node_name(c, j->reply.node, sizeof j->reply.node);
    if (ctx) {
        j->n_res = ctx->n_resources;
        j->res = tony_xcalloc(j->n_res + 1, sizeof *j->res);
        for (size_t i = 0; i < j->n_res; i++) {
            j->res[i] = ctx->resources[i];
            j->res[i].name = tony_strdup(ctx->resources[i].name);
            j->res[i].uri = tony_strdup(ctx->resources[i].uri);
        }
        if (ctx->env) tony_env_merge(&j->env, ctx->env);
        j->command = tony_strdup(ctx->command);
        if (ctx->tokens && ctx->tokens_len) {
            j->tokens = tony_xmalloc(ctx->tokens_len);
            memcpy(j->tokens, ctx->tokens, ctx->tokens_len);
            j->tokens_len = ctx->tokens_len;
        }
    }
    j->done = done;
    j->arg = arg;
    char lane[sizeof j->reply.node + 3];
    snprintf(lane, sizeof lane, "nm %s", j->reply.node);
    tony_workq_submit(p->q, lane, job_run, job_done, j);
}

void yarn_nm_start_async(yarn_nm_pool *p, const yarn_container *c, const yarn_launch_ctx *ctx, yarn_nm_done_fn done,
                         void *arg) {
    submit(p, NM_START, c, ctx, done, arg);
}

void yarn_nm_stop_async(yarn_nm_pool *p, const yarn_container *c, yarn_nm_done_fn done, void *arg) {
    submit(p, NM_STOP, c, NULL, done, arg);
}

void yarn_nm_status_async(yarn_nm_pool *p, const yarn_container *c, yarn_nm_done_fn done, void *arg) {
    submit(p, NM_STATUS, c, NULL, done, arg);
}

/* --- the end */

typedef struct final_stops {
    const yarn_container *const *cs;
    size_t n, out;
    bool *answered;
    bool abandoned;
    tony_strv *failed;
} final_stops;

static void final_stopped(void *arg, const yarn_nm_reply *r) {
    final_stops *f = arg;
    for (size_t i = 0; i < f->n; i++) {
        if (f->answered[i] || strcmp(f->cs[i]->id, r->container_id) != 0) continue;
        f->answered[i] = true;
        f->out--;
        /* An abandoned call's error says only that we stopped waiting. */
        if (r->rc && !f->abandoned) tony_strv_pushf(f->failed, "%s", r->err.msg);
        return;
    }
}

static void cancel_all(yarn_nm_pool *p) {
    uint64_t one = 1;
    if (p->cancel_fd >= 0 && write(p->cancel_fd, &one, sizeof one) < 0)
        tony_warn("cannot cut NodeManager calls short: %s", strerror(errno));
}

void yarn_nm_stop_all(yarn_nm_pool *p, const yarn_container *const *cs, size_t n, int bound_ms, tony_strv *silent,
                      tony_strv *failed) {
    final_stops f = {.cs = cs, .n = n, .out = n, .answered = tony_xcalloc(n + 1, sizeof(bool)), .failed = failed};
    for (size_t i = 0; i < n; i++) submit(p, NM_STOP, cs[i], NULL, final_stopped, &f);
    long long end = tony_now_ms() + bound_ms;
    for (long long left = bound_ms; f.out > 0 && left > 0; left = end - tony_now_ms()) tony_workq_wait(p->q, (int)left);
    if (f.out > 0) {
        for (size_t i = 0; i < n; i++) {
            char node[sizeof ((yarn_nm_reply *)0)->node];
            node_name(cs[i], node, sizeof node);
            if (!f.answered[i] && !tony_strv_contains(silent, node)) tony_strv_push(silent, node);
        }
        /* Whatever those nodes hold (these stops, calls queued before them)
         * gives up now; nothing else waits for the pool after this. */
        f.abandoned = true;
        cancel_all(p);
        while (f.out > 0) tony_workq_wait(p->q, 1000);
    }
    free(f.answered);
}
