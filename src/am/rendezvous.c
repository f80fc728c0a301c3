/* The rendezvous store: scopes of keys to byte values, answered at once
 * (404 for a key not there yet: Horovod's workers poll). */
#include "am/rendezvous.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/hostcheck.h"
#include "common/httpreply.h"
#include "common/httpserver.h"
#include "common/log.h"
#include "common/strv.h"
#include "common/workq.h"

/* Horovod's gloo rendezvous stores a few addresses per rank: small values.
 * A task's process may PUT what it likes, so what the store holds is capped
 * (every entry counted with its names and bookkeeping); a PUT past either
 * cap is a 413 that says which. evhttp stops reading a body at twice the
 * value cap, so that a value just over it still gets those words. */
#define MAX_VALUE_BYTES (1 << 20)
#define MAX_STORE_BYTES (64 << 20)
#define ENTRY_OVERHEAD 64

typedef struct entry {
    char *scope, *key;
    unsigned char *value;
    size_t len;
} entry;

/* A task host's addresses, resolved once on a worker thread. */
typedef struct known_host {
    char *name;
    bool pending;
    struct sockaddr_storage *addrs;
    size_t naddrs;
    bool here; /* one of them is this machine's: its tasks may call from a loopback address */
} known_host;

struct am_rendezvous {
    tony_http_server *http;
    int port;
    const am_job *job;
    bool same_machine;
    uid_t owner;
    tony_workq *resolver; /* cluster only */
    known_host *hosts_seen;
    size_t nhosts_seen, caphosts_seen;
    json_t *host_index; /* name -> its index in hosts_seen: every request looks up every task's host */
    unsigned long refused; /* for the log: the first refusals, then one in 1000 */
    tony_host_check hosts; /* as the coordinator's API: no page of another site (DNS rebinding) */
    entry *items;
    size_t len, cap;
    size_t bytes; /* what the entries hold, as entry_bytes counts */
    json_t *scope_sizes;
    json_t *finished; /* scope -> number of workers that DELETEd */
};

static size_t entry_bytes(const char *scope, const char *key, size_t len) {
    return strlen(scope) + strlen(key) + len + ENTRY_OVERHEAD;
}

static void refuse(struct evhttp_request *req, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(struct evhttp_request *req, const char *fmt, ...) {
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; charset=utf-8");
    tony_http_reply_bytes(req, 413, text, n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1);
}

static entry *find(am_rendezvous *r, const char *scope, const char *key) {
    for (size_t i = 0; i < r->len; i++)
        if (strcmp(r->items[i].scope, scope) == 0 && strcmp(r->items[i].key, key) == 0) return &r->items[i];
    return NULL;
}

static void drop(am_rendezvous *r, size_t i) {
    r->bytes -= entry_bytes(r->items[i].scope, r->items[i].key, r->items[i].len);
    free(r->items[i].scope);
    free(r->items[i].key);
    free(r->items[i].value);
    r->items[i] = r->items[--r->len];
}

static void clear_scope(am_rendezvous *r, const char *scope) {
    for (size_t i = 0; i < r->len;) {
        if (strcmp(r->items[i].scope, scope) == 0) drop(r, i);
        else i++;
    }
}

/* It takes no secret (Horovod's workers send none), so a web page that
 * rebinds its name to this machine must not reach it either. */
static void refuse_host(struct evhttp_request *req) {
    static const char msg[] = "the Horovod rendezvous answers only requests for this machine's names and addresses "
                              "(a web page of another site may be trying to reach it through DNS rebinding)\n";
    tony_http_reply_bytes(req, 421, msg, sizeof msg - 1);
}

/* ---- who may call: the job's own tasks ---- */

/* An IPv4 peer in an IPv6 socket (::ffff:a.b.c.d) as the IPv4 address it is. */
static void unmap(const struct sockaddr *in, struct sockaddr_storage *out) {
    memset(out, 0, sizeof *out);
    if (in->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)in;
        if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
            struct sockaddr_in *s4 = (struct sockaddr_in *)out;
            s4->sin_family = AF_INET;
            s4->sin_port = s6->sin6_port;
            memcpy(&s4->sin_addr, s6->sin6_addr.s6_addr + 12, 4);
            return;
        }
        memcpy(out, in, sizeof *s6);
    } else if (in->sa_family == AF_INET) {
        memcpy(out, in, sizeof(struct sockaddr_in));
    }
}

static bool same_address(const struct sockaddr_storage *a, const struct sockaddr_storage *b) {
    if (a->ss_family != b->ss_family) return false;
    if (a->ss_family == AF_INET)
        return memcmp(&((const struct sockaddr_in *)a)->sin_addr, &((const struct sockaddr_in *)b)->sin_addr, 4) == 0;
    if (a->ss_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr,
                      16) == 0;
    return false;
}

static bool is_loopback(const struct sockaddr_storage *a) {
    if (a->ss_family == AF_INET) return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
    return a->ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

static void address_text(const struct sockaddr_storage *a, char *out, size_t n) {
    const void *bytes = a->ss_family == AF_INET ? (const void *)&((const struct sockaddr_in *)a)->sin_addr
                                                : (const void *)&((const struct sockaddr_in6 *)a)->sin6_addr;
    if (!inet_ntop(a->ss_family, bytes, out, (socklen_t)n)) snprintf(out, n, "an unknown address");
}

/* The local backend: the uid that owns the socket at the other end, found
 * in this machine's TCP table (/proc/net/tcp, tcp6) as the one whose local
 * end is the peer's and remote end ours. -1: none there (not a process of
 * this machine's network namespace). The table prints each address as the
 * kernel holds it: 32-bit words in host order, the port in hex. */
static void proc_addr(const struct sockaddr_storage *a, bool v6_table, char *out, size_t n) {
    uint32_t w[4] = {0, 0, 0, 0};
    unsigned port;
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)a;
        port = ntohs(s4->sin_port);
        if (!v6_table) {
            memcpy(&w[0], &s4->sin_addr, 4);
            snprintf(out, n, "%08X:%04X", w[0], port);
            return;
        }
        /* an IPv6 socket talking IPv4: ::ffff:a.b.c.d */
        uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        memcpy(mapped + 12, &s4->sin_addr, 4);
        memcpy(w, mapped, 16);
    } else {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)a;
        port = ntohs(s6->sin6_port);
        memcpy(w, &s6->sin6_addr, 16);
        if (!v6_table) {
            snprintf(out, n, "-");
            return;
        }
    }
    snprintf(out, n, "%08X%08X%08X%08X:%04X", w[0], w[1], w[2], w[3], port);
}

static long long socket_owner(const struct sockaddr_storage *peer, const struct sockaddr_storage *self) {
    static const char *const tables[2] = {"/proc/net/tcp", "/proc/net/tcp6"};
    for (int t = 0; t < 2; t++) {
        char want_local[64], want_remote[64];
        proc_addr(peer, t == 1, want_local, sizeof want_local);
        proc_addr(self, t == 1, want_remote, sizeof want_remote);
        FILE *f = fopen(tables[t], "re");
        if (!f) continue;
        char line[512], local[64], remote[64];
        unsigned uid;
        long long found = -1;
        while (found < 0 && fgets(line, sizeof line, f))
            if (sscanf(line, "%*s %63s %63s %*s %*s %*s %*s %u", local, remote, &uid) == 3 &&
                strcmp(local, want_local) == 0 && strcmp(remote, want_remote) == 0)
                found = uid;
        fclose(f);
        if (found >= 0) return found;
    }
    return -1;
}

typedef struct resolve_job {
    am_rendezvous *r;
    char *name;
    struct sockaddr_storage *addrs;
    size_t naddrs;
    bool here;
} resolve_job;

static bool on_this_machine(const struct sockaddr_storage *a) {
    if (is_loopback(a)) return true;
    struct ifaddrs *ifs, *i;
    bool here = false;
    if (getifaddrs(&ifs) != 0) return false;
    for (i = ifs; i && !here; i = i->ifa_next) {
        if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)) continue;
        struct sockaddr_storage x;
        unmap(i->ifa_addr, &x);
        here = same_address(&x, a);
    }
    freeifaddrs(ifs);
    return here;
}

/* On a worker thread: a name server may take seconds. */
static void resolve_run(void *arg) {
    resolve_job *j = arg;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *ai;
    if (getaddrinfo(j->name, NULL, &hints, &res) != 0) return;
    for (ai = res; ai; ai = ai->ai_next) {
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
        j->addrs = tony_xrealloc(j->addrs, (j->naddrs + 1) * sizeof *j->addrs);
        unmap(ai->ai_addr, &j->addrs[j->naddrs]);
        j->here = j->here || on_this_machine(&j->addrs[j->naddrs]);
        j->naddrs++;
    }
    freeaddrinfo(res);
}

static void resolve_done(void *arg, bool ran) {
    resolve_job *j = arg;
    am_rendezvous *r = j->r;
    json_t *at = json_object_get(r->host_index, j->name);
    if (at) {
        known_host *h = &r->hosts_seen[json_integer_value(at)];
        h->pending = false;
        h->addrs = j->addrs;
        h->naddrs = j->naddrs;
        h->here = j->here;
        j->addrs = NULL;
        if (ran && !h->naddrs)
            tony_warn("the Horovod rendezvous cannot resolve %s, where a task registered from: its requests are "
                      "refused", h->name);
    }
    free(j->addrs);
    free(j->name);
    free(j);
}

static known_host *host_seen(am_rendezvous *r, const char *name) {
    json_t *at = json_object_get(r->host_index, name);
    if (at) return &r->hosts_seen[json_integer_value(at)];
    if (r->nhosts_seen == r->caphosts_seen) {
        r->caphosts_seen = r->caphosts_seen ? 2 * r->caphosts_seen : 16;
        r->hosts_seen = tony_xrealloc(r->hosts_seen, r->caphosts_seen * sizeof *r->hosts_seen);
    }
    json_object_set_new(r->host_index, name, json_integer((json_int_t)r->nhosts_seen));
    known_host *h = &r->hosts_seen[r->nhosts_seen++];
    *h = (known_host){.name = tony_strdup(name), .pending = true};
    /* an address needs no name server: known at once */
    struct sockaddr_storage a = {0};
    struct sockaddr_in *s4 = (struct sockaddr_in *)&a;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a;
    if (inet_pton(AF_INET, name, &s4->sin_addr) == 1) a.ss_family = AF_INET;
    else if (inet_pton(AF_INET6, name, &s6->sin6_addr) == 1) a.ss_family = AF_INET6;
    if (a.ss_family) {
        h->pending = false;
        h->addrs = tony_xmalloc(sizeof a);
        unmap((struct sockaddr *)&a, h->addrs);
        h->naddrs = 1;
        h->here = on_this_machine(h->addrs);
        return h;
    }
    resolve_job *j = tony_xcalloc(1, sizeof *j);
    j->r = r;
    j->name = tony_strdup(name);
    tony_workq_submit(r->resolver, NULL, resolve_run, resolve_done, j);
    return h;
}

/* Every host a task of the job registered from, resolving those not seen
 * yet; whether peer is one of them. *pending: some are still resolving. */
static bool from_a_task_host(am_rendezvous *r, const struct sockaddr_storage *peer, bool *pending) {
    bool ok = false;
    *pending = false;
    for (size_t t = 0; t < r->job->ntasks; t++) {
        const char *name = r->job->tasks[t].host;
        if (!name || !*name) continue;
        known_host *h = host_seen(r, name);
        if (h->pending) *pending = true;
        for (size_t i = 0; i < h->naddrs && !ok; i++) ok = same_address(&h->addrs[i], peer);
        /* a task on the coordinator's own node may call from a loopback address */
        ok = ok || (h->here && is_loopback(peer));
    }
    return ok;
}

static int deny(int status, char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int deny(int status, char *why, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return status;
}

/* 0: a task of the job sent req; else the HTTP status to refuse it with,
 * and why in words. */
static int check_peer(am_rendezvous *r, struct evhttp_request *req, char *why, size_t n, char *who, size_t wn) {
    struct evhttp_connection *c = evhttp_request_get_connection(req);
    const struct sockaddr *pa = c ? evhttp_connection_get_addr(c) : NULL;
    snprintf(who, wn, "an unknown peer");
    if (!pa) return deny(403, why, n, "its address is unknown");
    struct sockaddr_storage peer;
    unmap(pa, &peer);
    char text[INET6_ADDRSTRLEN];
    address_text(&peer, text, sizeof text);
    snprintf(who, wn, "%s port %u", text,
             ntohs(peer.ss_family == AF_INET ? ((struct sockaddr_in *)&peer)->sin_port
                                             : ((struct sockaddr_in6 *)&peer)->sin6_port));
    if (r->same_machine) {
        struct sockaddr_storage self_raw = {0}, self;
        socklen_t len = sizeof self_raw;
        struct bufferevent *bev = evhttp_connection_get_bufferevent(c);
        if (!bev || getsockname(bufferevent_getfd(bev), (struct sockaddr *)&self_raw, &len) != 0)
            return deny(403, why, n, "this end of its connection is unknown");
        unmap((struct sockaddr *)&self_raw, &self);
        long long uid = socket_owner(&peer, &self);
        if (uid < 0) return deny(403, why, n, "it is no process of this machine");
        if ((uid_t)uid != r->owner)
            return deny(403, why, n, "it is a process of uid %lld, not of the job's owner (uid %u)", uid,
                            (unsigned)r->owner);
        return 0;
    }
    bool pending;
    if (from_a_task_host(r, &peer, &pending)) return 0;
    if (pending) return deny(503, why, n, "the job's task hosts are still being resolved: try again");
    return deny(403, why, n, "it is none of the hosts the job's tasks registered from");
}

static void refuse_peer(am_rendezvous *r, struct evhttp_request *req, int status, const char *why, const char *who) {
    if (status == 403 && (r->refused++ < 20 || r->refused % 1000 == 0))
        tony_warn("the Horovod rendezvous refused a request from %s: %s (%lu refused so far)", who, why, r->refused);
    char text[512];
    int k = snprintf(text, sizeof text, "the Horovod rendezvous answers only the job's own tasks: %s\n", why);
    if (status == 503) evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; charset=utf-8");
    tony_http_reply_bytes(req, status, text, k < 0 ? 0 : (size_t)k < sizeof text ? (size_t)k : sizeof text - 1);
}

static void handle(struct evhttp_request *req, void *arg) {
    am_rendezvous *r = arg;
    if (!tony_host_check_ok(&r->hosts, evhttp_find_header(evhttp_request_get_input_headers(req), "Host"))) {
        refuse_host(req);
        return;
    }
    char why[256], who[96];
    int status = check_peer(r, req, why, sizeof why, who, sizeof who);
    if (status) {
        refuse_peer(r, req, status, why, who);
        return;
    }
    const char *uri = evhttp_request_get_uri(req);
    char scope[256], key[256];
    int n = 0;
    if (sscanf(uri, "/%255[^/]/%255[^/?]%n", scope, key, &n) != 2 || uri[n] != '\0') {
        tony_http_reply_bytes(req, 400, NULL, 0);
        return;
    }
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    entry *e = find(r, scope, key);
    if (cmd == EVHTTP_REQ_GET) {
        if (e) tony_http_reply_bytes(req, 200, e->value, e->len);
        else tony_http_reply_bytes(req, 404, NULL, 0);
    } else if (cmd == EVHTTP_REQ_PUT) {
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t len = evbuffer_get_length(in);
        size_t now = r->bytes - (e ? entry_bytes(scope, key, e->len) : 0) + entry_bytes(scope, key, len);
        if (len > MAX_VALUE_BYTES) {
            refuse(req, "the Horovod rendezvous takes values of at most %d bytes; this one has %zu\n",
                   MAX_VALUE_BYTES, len);
            return;
        }
        if (now > MAX_STORE_BYTES) {
            refuse(req, "the Horovod rendezvous store is full: it holds at most %d bytes and has %zu; nothing "
                        "more is stored until the job's workers finish their scopes\n",
                   MAX_STORE_BYTES, r->bytes);
            return;
        }
        r->bytes = now;
        unsigned char *v = tony_xmalloc(len);
        evbuffer_remove(in, v, len);
        if (!e) {
            if (r->len == r->cap) {
                r->cap = r->cap ? r->cap * 2 : 64;
                r->items = tony_xrealloc(r->items, r->cap * sizeof *r->items);
            }
            e = &r->items[r->len++];
            e->scope = tony_strdup(scope);
            e->key = tony_strdup(key);
        } else {
            free(e->value);
        }
        e->value = v;
        e->len = len;
        tony_http_reply_bytes(req, 200, NULL, 0);
    } else if (cmd == EVHTTP_REQ_DELETE) {
        json_t *size = json_object_get(r->scope_sizes, scope);
        if (json_is_integer(size)) {
            /* a worker leaves a scope of the plan: clear it once all have */
            json_int_t done = json_integer_value(json_object_get(r->finished, scope)) + 1;
            json_object_set_new(r->finished, scope, json_integer(done));
            if (done >= json_integer_value(size)) {
                clear_scope(r, scope);
                json_object_del(r->finished, scope);
            }
        } else if (e) {
            drop(r, (size_t)(e - r->items));
        }
        tony_http_reply_bytes(req, 200, NULL, 0);
    } else {
        tony_http_reply_bytes(req, 400, NULL, 0);
    }
}

am_rendezvous *am_rendezvous_start(struct event_base *base, const char *host, const am_job *job, bool same_machine,
                                   tony_error *err) {
    am_rendezvous *r = tony_xcalloc(1, sizeof *r);
    r->job = job;
    r->same_machine = same_machine;
    r->host_index = json_object();
    r->owner = geteuid();
    if (!same_machine && !(r->resolver = tony_workq_new(base, 2, err))) {
        json_decref(r->host_index);
        free(r);
        return NULL;
    }
    tony_http_server_opts o = {.what = "the Horovod rendezvous",
                               .max_body = 2 * MAX_VALUE_BYTES,
                               .allowed_methods = EVHTTP_REQ_GET | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE,
                               .handler = handle,
                               .arg = r};
    r->http = tony_http_server_new(base, &o);
    if (tony_http_server_listen(r->http, host, 0, &r->port, err)) {
        tony_http_server_free(r->http);
        tony_workq_free(r->resolver);
        json_decref(r->host_index);
        free(r);
        return NULL;
    }
    tony_host_check_init_job_server(&r->hosts, r->port, host);
    r->scope_sizes = json_object();
    r->finished = json_object();
    return r;
}

int am_rendezvous_port(const am_rendezvous *r) { return r->port; }

void am_rendezvous_reset(am_rendezvous *r) {
    while (r->len) drop(r, 0);
    json_object_clear(r->scope_sizes);
    json_object_clear(r->finished);
}

void am_rendezvous_set_scopes(am_rendezvous *r, const json_t *scope_sizes) {
    json_object_update(r->scope_sizes, (json_t *)scope_sizes);
    /* the gang is whole: its hosts are resolved now, before its workers call */
    bool pending;
    struct sockaddr_storage none = {0};
    if (!r->same_machine) from_a_task_host(r, &none, &pending);
}

void am_rendezvous_free(am_rendezvous *r) {
    if (!r) return;
    while (r->len) drop(r, 0);
    free(r->items);
    json_decref(r->scope_sizes);
    json_decref(r->finished);
    tony_http_server_free(r->http);
    tony_workq_free(r->resolver); /* its done callbacks still see hosts_seen */
    for (size_t i = 0; i < r->nhosts_seen; i++) {
        free(r->hosts_seen[i].name);
        free(r->hosts_seen[i].addrs);
    }
    free(r->hosts_seen);
    json_decref(r->host_index);
    tony_host_check_free(&r->hosts);
    free(r);
}
