/* evhttp with limits (see httpserver.h). libevent 2.1's evhttp neither caps
 * its connections nor tells its user when one opens or closes, so each
 * connection is followed here: evhttp asks this module for the bufferevent
 * of every accepted connection (evhttp_set_bevcb), the connection itself is
 * picked up from that bufferevent's callback argument right after, and from
 * then on evhttp's close callback and the requests handed to the handler
 * tell whether it is open and whether a request of it is being answered.
 * A request without Host, or with an absolute URI, never reaches the
 * handler (400). */
#include "common/httpserver.h"

#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include "common/clock.h"
#include "common/httpreply.h"
#include "common/log.h"
#include "common/strv.h"

/* How long accepting stops after accept() failed (out of descriptors). */
#define ACCEPT_PAUSE_MS 250
/* At most one log line per this long about failing accepts. */
#define ACCEPT_LOG_INTERVAL_MS 10000

typedef struct conn {
    struct conn *prev, *next;
    tony_http_server *srv;
    /* Until adopted: the bufferevent evhttp was given, with a reference of
     * ours so that it outlives a connection evhttp drops at once. */
    struct bufferevent *bev;
    struct evhttp_connection *evcon; /* once adopted */
    int busy;                        /* requests handed to the handler and not yet answered */
    long long idle_since_ms;
    /* tony_http_server_when_sent's hook on the request being answered */
    void (*sent)(void *arg, bool written);
    void *sent_arg;
    int fd; /* its place in by_fd, once adopted (-1: none) */
} conn;

struct tony_http_server {
    struct event_base *base;
    struct evhttp *http;
    struct evconnlistener *lev;
    char *what;
    int max_conns;
    void (*handler)(struct evhttp_request *, void *);
    void *arg;
    conn *conns;
    size_t nconns;
    /* the adopted connections by their socket: a request's connection is
     * found without a walk over every connection (issue 26: thousands of
     * long polls are open while each heartbeat arrives) */
    conn **by_fd;
    size_t nby_fd;
    size_t nfresh; /* of them not adopted yet: the newest, near the list's head */
    struct event *adopt_ev;  /* picks up new connections right after evhttp made them */
    struct event *resume_ev; /* accepting again after a failed accept() */
    bool paused_full, paused_error, freeing;
    long long err_logged_ms;
    unsigned long err_unlogged;
    tony_http_server *next_registered;
};

/* libevent 2.1 hands a listener's error callback the evhttp only (the
 * listener's user pointer is evhttp's), so the servers of this process are
 * found from their listener here. Only the loop thread touches the list. */
static tony_http_server *registered;

static long fd_limit(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY) return -1;
    return (long)rl.rlim_cur;
}

size_t tony_http_conn_cap_for(long fd_limit) {
    if (fd_limit < 0) return TONY_HTTP_MAX_CONNS;
    long reserve = fd_limit / TONY_HTTP_FD_RESERVE_DIV, least = TONY_HTTP_FD_RESERVE_MIN;
    if (least > fd_limit / 2) least = fd_limit / 2; /* a tiny limit: half, as before */
    if (reserve < least) reserve = least;
    long cap = fd_limit - reserve;
    if (cap < 4) cap = 4;
    return (size_t)(cap > TONY_HTTP_MAX_CONNS ? TONY_HTTP_MAX_CONNS : cap);
}

/* Read at every accept: a limit lowered while the process runs counts. */
static size_t conn_cap(const tony_http_server *s) {
    if (s->max_conns > 0) return (size_t)s->max_conns;
    return tony_http_conn_cap_for(fd_limit());
}

static int evcon_fd(struct evhttp_connection *evcon) {
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    return bev ? (int)bufferevent_getfd(bev) : -1;
}

static void unlink_conn(tony_http_server *s, conn *c) {
    if (!c->evcon) s->nfresh--;
    if (c->fd >= 0 && (size_t)c->fd < s->nby_fd && s->by_fd[c->fd] == c) s->by_fd[c->fd] = NULL;
    if (c->prev) c->prev->next = c->next;
    else s->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    s->nconns--;
    free(c);
}

/* Accepting stops while the connections are at the cap and none can be
 * closed for a new one (each is new or in a request): the next ones wait in
 * the kernel's backlog. Called after every change of either. */
static conn *idlest(tony_http_server *s);
static void update_accepting(tony_http_server *s) {
    if (!s->lev || s->freeing) return;
    bool full = s->nconns >= conn_cap(s) && !idlest(s);
    if (full == s->paused_full) return;
    s->paused_full = full;
    if (s->paused_error) return; /* on_resume looks again */
    if (full) evconnlistener_disable(s->lev);
    else evconnlistener_enable(s->lev);
}

static void on_close(struct evhttp_connection *evcon, void *arg) {
    conn *c = arg;
    tony_http_server *s = c->srv;
    evhttp_connection_set_closecb(evcon, NULL, NULL);
    void (*sent)(void *, bool) = c->sent;
    void *sent_arg = c->sent_arg;
    unlink_conn(s, c);
    /* closed before its answer was written out (none is told while the
     * server is freed: its user is going away) */
    if (sent && !s->freeing) sent(sent_arg, false);
    update_accepting(s);
}

static void adopt(conn *c, struct evhttp_connection *evcon) {
    c->srv->nfresh--;
    c->evcon = evcon;
    evhttp_connection_set_closecb(evcon, on_close, c);
    tony_http_server *s = c->srv;
    int fd = evcon_fd(evcon);
    if (fd >= 0) {
        if ((size_t)fd >= s->nby_fd) {
            size_t n = s->nby_fd ? s->nby_fd : 64;
            while (n <= (size_t)fd) n *= 2;
            s->by_fd = tony_xrealloc(s->by_fd, n * sizeof *s->by_fd);
            memset(s->by_fd + s->nby_fd, 0, (n - s->nby_fd) * sizeof *s->by_fd);
            s->nby_fd = n;
        }
        s->by_fd[fd] = c;
        c->fd = fd;
    }
    bufferevent_decref(c->bev);
    c->bev = NULL;
}

/* Right after evhttp made its connections around the bufferevents handed
 * out: each one's callback argument is its evhttp connection, unless evhttp
 * already dropped it (then the callbacks are cleared). */
static void adopt_new(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    tony_http_server *s = arg;
    /* only until the fresh ones are found: a walk over every connection
     * at each accept would cost 10,000 steps each with as many long polls
     * open (issue 26) */
    for (conn *c = s->conns, *next; c && s->nfresh; c = next) {
        next = c->next;
        if (c->evcon) continue;
        bufferevent_data_cb readcb;
        void *evcon = NULL;
        bufferevent_getcb(c->bev, &readcb, NULL, NULL, &evcon);
        if (readcb && evcon) {
            adopt(c, evcon);
        } else {
            bufferevent_decref(c->bev);
            unlink_conn(s, c);
        }
    }
    update_accepting(s);
}

/* The connection idle longest, if any is: none of its requests is with the
 * handler (a long poll is not idle). */
static conn *idlest(tony_http_server *s) {
    conn *found = NULL;
    for (conn *c = s->conns; c; c = c->next)
        if (c->evcon && !c->busy && (!found || c->idle_since_ms < found->idle_since_ms)) found = c;
    return found;
}

static bool close_idlest(tony_http_server *s) {
    conn *c = idlest(s);
    if (c) evhttp_connection_free(c->evcon); /* on_close unlinks it */
    return c != NULL;
}

static struct bufferevent *new_connection(struct event_base *base, void *arg) {
    tony_http_server *s = arg;
    size_t cap = conn_cap(s);
    while (s->nconns >= cap && close_idlest(s)) {
    }
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!bev) return NULL; /* evhttp tries its own */
    conn *c = tony_xcalloc(1, sizeof *c);
    c->srv = s;
    c->bev = bev;
    c->fd = -1;
    c->idle_since_ms = tony_now_ms();
    bufferevent_incref(bev);
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    s->nfresh++;
    event_active(s->adopt_ev, EV_TIMEOUT, 0);
    update_accepting(s);
    return bev;
}

static conn *find_conn(tony_http_server *s, struct evhttp_connection *evcon) {
    int fd = evcon_fd(evcon);
    if (fd >= 0 && (size_t)fd < s->nby_fd && s->by_fd[fd] && s->by_fd[fd]->evcon == evcon) return s->by_fd[fd];
    /* one not adopted yet: the newest, near the list's head */
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    for (conn *c = s->conns; c; c = c->next) {
        if (c->evcon == evcon) return c;
        if (!c->evcon && c->bev == bev) {
            adopt(c, evcon);
            return c;
        }
    }
    return NULL;
}

static void on_complete(struct evhttp_request *req, void *arg) {
    (void)req;
    conn *c = arg;
    c->busy--;
    c->idle_since_ms = tony_now_ms();
    void (*sent)(void *, bool) = c->sent;
    c->sent = NULL;
    update_accepting(c->srv);
    if (sent) sent(c->sent_arg, true);
}

int tony_http_server_when_sent(tony_http_server *s, struct evhttp_request *req, void (*sent)(void *arg, bool written),
                               void *arg) {
    struct evhttp_connection *evcon = s ? evhttp_request_get_connection(req) : NULL;
    conn *c = evcon ? find_conn(s, evcon) : NULL;
    if (!c || !c->busy || c->sent) return -1;
    c->sent = sent;
    c->sent_arg = arg;
    return 0;
}

static void on_request(struct evhttp_request *req, void *arg) {
    tony_http_server *s = arg;
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    conn *c = evcon ? find_conn(s, evcon) : NULL;
    if (c) {
        c->busy++;
        evhttp_request_set_on_complete_cb(req, on_complete, c);
        update_accepting(s);
    }
    /* Each server checks the Host header against its own names (hostcheck.h),
     * which a request without one or with the target in absolute form
     * ("GET http://elsewhere/v1/job", or "//elsewhere/v1/job", which
     * evhttp_uri_parse reads as one) would pass by: both are refused for
     * every server here, as HTTP/1.1 (RFC 9112 3.2) has a server do. */
    const char *uri = evhttp_request_get_uri(req);
    if (!evhttp_find_header(evhttp_request_get_input_headers(req), "Host"))
        tony_http_reply_error(req, 400, "the request has no Host header; name the server in one");
    else if (!uri || uri[0] != '/' || uri[1] == '/') /* "//host/path": an authority to evhttp_uri_parse */
        tony_http_reply_error(req, 400, "the request target must be a path (\"/v1/job\"), not an absolute URI");
    else
        s->handler(req, s->arg);
}

static void on_resume(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    tony_http_server *s = arg;
    s->paused_error = false;
    if (!s->paused_full) evconnlistener_enable(s->lev);
}

static void on_accept_error(struct evconnlistener *lev, void *arg) {
    (void)arg;
    int e = errno;
    tony_http_server *s = registered;
    while (s && s->lev != lev) s = s->next_registered;
    if (!s) return;
    long long now = tony_now_ms();
    if (!s->err_logged_ms || now - s->err_logged_ms >= ACCEPT_LOG_INTERVAL_MS) {
        char more[96] = "";
        if (s->err_unlogged)
            snprintf(more, sizeof more, "; %lu more time(s) since the last such line", s->err_unlogged);
        tony_warn("%s cannot accept a connection: %s (descriptor limit %ld, %zu connection(s) open%s); it stops "
                  "accepting for %d ms each time",
                  s->what, strerror(e), fd_limit(), s->nconns, more, ACCEPT_PAUSE_MS);
        s->err_logged_ms = now;
        s->err_unlogged = 0;
    } else {
        s->err_unlogged++;
    }
    /* A descriptor back for the next accept, if an idle connection has one. */
    close_idlest(s);
    if (!s->paused_error) {
        if (!s->paused_full) evconnlistener_disable(s->lev);
        s->paused_error = true;
        struct timeval tv = {0, ACCEPT_PAUSE_MS * 1000};
        evtimer_add(s->resume_ev, &tv);
    }
}

tony_http_server *tony_http_server_new(struct event_base *base, const tony_http_server_opts *o) {
    tony_http_server *s = tony_xcalloc(1, sizeof *s);
    s->base = base;
    s->what = tony_strdup(o->what ? o->what : "the HTTP server");
    s->max_conns = o->max_conns;
    s->handler = o->handler;
    s->arg = o->arg;
    s->http = evhttp_new(base);
    evhttp_set_gencb(s->http, on_request, s);
    evhttp_set_bevcb(s->http, new_connection, s);
    evhttp_set_timeout(s->http, o->timeout_s > 0 ? o->timeout_s : TONY_HTTP_TIMEOUT_S);
    evhttp_set_max_headers_size(s->http, (ev_ssize_t)(o->max_headers ? o->max_headers : TONY_HTTP_MAX_HEADERS));
    evhttp_set_max_body_size(s->http, (ev_ssize_t)(o->max_body ? o->max_body : TONY_HTTP_MAX_BODY));
    if (o->allowed_methods) evhttp_set_allowed_methods(s->http, (ev_uint16_t)o->allowed_methods);
    s->adopt_ev = event_new(base, -1, 0, adopt_new, s);
    s->resume_ev = evtimer_new(base, on_resume, s);
    return s;
}

static int guard(tony_http_server *s, struct evhttp_bound_socket *bound) {
    s->lev = evhttp_bound_socket_get_listener(bound);
    evconnlistener_set_error_cb(s->lev, on_accept_error);
    s->next_registered = registered;
    registered = s;
    return 0;
}

int tony_http_server_listen(tony_http_server *s, const char *host, int port, int *bound_port, tony_error *err) {
    struct evhttp_bound_socket *bound = evhttp_bind_socket_with_handle(s->http, host, (ev_uint16_t)port);
    if (!bound) return tony_err(err, "cannot listen on %s port %d for %s: %s", host, port, s->what, strerror(errno));
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&ss, &len);
    *bound_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    return guard(s, bound);
}

int tony_http_server_adopt(tony_http_server *s, evutil_socket_t fd, tony_error *err) {
    struct evhttp_bound_socket *bound = evhttp_accept_socket_with_handle(s->http, fd);
    if (!bound) return tony_err(err, "cannot serve %s on its socket: %s", s->what, strerror(errno));
    return guard(s, bound);
}

size_t tony_http_server_connections(const tony_http_server *s) { return s->nconns; }

void tony_http_server_free(tony_http_server *s) {
    if (!s) return;
    s->freeing = true;
    for (tony_http_server **p = &registered; *p; p = &(*p)->next_registered)
        if (*p == s) {
            *p = s->next_registered;
            break;
        }
    /* Frees the listener and every connection (on_close unlinks those
     * adopted); then the ones evhttp never showed. */
    evhttp_free(s->http);
    while (s->conns) {
        if (s->conns->bev) bufferevent_decref(s->conns->bev);
        unlink_conn(s, s->conns);
    }
    free(s->by_fd);
    event_free(s->adopt_ev);
    event_free(s->resume_ev);
    free(s->what);
    free(s);
}
