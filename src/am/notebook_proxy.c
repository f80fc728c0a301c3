/* The reverse proxy from the coordinator's URL to a notebook job's Jupyter
 * server (am/notebook_proxy.h). evhttp has no WebSocket, so every proxied
 * request leaves evhttp: its socket is borrowed from evhttp's connection,
 * the request is written again to Jupyter (with Jupyter's token, without
 * ours) and the two sockets are spliced byte for byte until either closes.
 * Who may pass: docs/security.md ("The notebook"). */
#include "am/notebook_proxy.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <unistd.h>

#include "am/reply.h"
#include "common/amapi.h"
#include "common/apiauth.h"
#include "common/log.h"
#include "common/readtoken.h"
#include "common/strv.h"
#include "conf/keys.h"

/* Past this much waiting to be written to one side, the other is not read
 * until it drains: a slow browser does not make the coordinator buffer a
 * whole download. */
#define NB_HIGH_WATER (4u << 20)

typedef struct nb_splice {
    struct evhttp_connection *evcon; /* the browser's connection, whose socket is lent; NULL once evhttp freed it */
    struct bufferevent *lender;      /* evhttp's bufferevent of it, given its socket back at the end */
    evutil_socket_t fd;
    struct bufferevent *down; /* the browser's side (does not close fd) */
    struct bufferevent *up;   /* Jupyter's side */
    bool closing;
    bool answered; /* Jupyter has sent something */
} nb_splice;

bool am_notebook_path(const char *path) {
    size_t n = strlen(AM_API_NOTEBOOK);
    return strncmp(path, AM_API_NOTEBOOK, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static const am_task *notebook_task(const am_notebook_ctx *am) {
    for (size_t i = 0; i < am->job->ntasks; i++) {
        const am_task *t = &am->job->tasks[i];
        if (strcmp(t->role->name, TONY_NOTEBOOK_ROLE) == 0) return t;
    }
    return NULL;
}

static char *why_no_notebook(const am_notebook_ctx *am, const am_task *t) {
    if (!t)
        return tony_sprintf("Job %s is no notebook job (no %s task); start one with `tony notebook`.", am->app_id,
                            TONY_NOTEBOOK_ROLE);
    if (am_task_done(t) || am->job_ended)
        return tony_sprintf("Job %s: its Jupyter server has ended (%s; idle shutdown after %s, or `tony kill`); "
                            "its log says why: tony logs %s --task %s:%d",
                            am->app_id, am_task_state_name(t->state), TONY_KEY_NOTEBOOK_IDLE_TIMEOUT, am->app_id,
                            t->role->name, t->index);
    return tony_sprintf("Job %s: its Jupyter server is starting (%s:%d is %s); try again in a few seconds.", am->app_id,
                        t->role->name, t->index, am_task_state_name(t->state));
}

static const char *method_name(enum evhttp_cmd_type c) {
    switch (c) {
    case EVHTTP_REQ_GET: return "GET";
    case EVHTTP_REQ_POST: return "POST";
    case EVHTTP_REQ_HEAD: return "HEAD";
    case EVHTTP_REQ_PUT: return "PUT";
    case EVHTTP_REQ_DELETE: return "DELETE";
    case EVHTTP_REQ_OPTIONS: return "OPTIONS";
    case EVHTTP_REQ_PATCH: return "PATCH";
    default: return NULL;
    }
}

/* Hop-by-hop headers and our credentials stay here; the rest reach Jupyter
 * as the browser sent them (Host and Origin too: Jupyter's WebSocket origin
 * check compares them). */
static bool header_kept(const char *name) {
    static const char *dropped[] = {"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding",
                                    "Content-Length", "Upgrade", "Authorization", AM_API_TOKEN_HEADER, "TE", "Expect"};
    for (size_t i = 0; i < sizeof dropped / sizeof *dropped; i++)
        if (strcasecmp(name, dropped[i]) == 0) return false;
    return true;
}

static bool wants_websocket(struct evhttp_request *req) {
    const char *u = evhttp_find_header(evhttp_request_get_input_headers(req), "Upgrade");
    return u && strcasecmp(u, "websocket") == 0;
}

/* The request as Jupyter gets it. A plain request asks Jupyter to close
 * after its answer: the splice then ends with it, so a later request on the
 * browser's connection comes back to us and its token is checked again. */
static void write_request(struct evbuffer *to, struct evhttp_request *req, const char *method, const char *path,
                          const char *query, const char *jupyter_token) {
    char *passed = tony_read_query_without_token(query);
    evbuffer_add_printf(to, "%s %s%s%s HTTP/1.1\r\n", method, path, *passed ? "?" : "", passed);
    free(passed);
    struct evkeyval *h;
    TAILQ_FOREACH(h, evhttp_request_get_input_headers(req), next) {
        if (header_kept(h->key)) evbuffer_add_printf(to, "%s: %s\r\n", h->key, h->value);
    }
    if (wants_websocket(req)) {
        evbuffer_add_printf(to, "Connection: Upgrade\r\nUpgrade: websocket\r\n");
    } else {
        evbuffer_add_printf(to, "Connection: close\r\n");
        size_t n = evbuffer_get_length(evhttp_request_get_input_buffer(req));
        if (n || evhttp_request_get_command(req) & (EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH))
            evbuffer_add_printf(to, "Content-Length: %zu\r\n", n);
    }
    /* Jupyter's token is the job's read token (the task has it as
     * TONY_READ_TOKEN); a token-authenticated request needs no XSRF cookie */
    evbuffer_add_printf(to, "Authorization: token %s\r\n\r\n", jupyter_token);
    evbuffer_add_buffer(to, evhttp_request_get_input_buffer(req));
}

static void splice_end(nb_splice *s) {
    bufferevent_free(s->up);
    bufferevent_free(s->down);
    if (s->evcon) {
        /* evhttp closes the socket as it would have without us */
        evhttp_connection_set_closecb(s->evcon, NULL, NULL);
        bufferevent_setfd(s->lender, s->fd);
        evhttp_connection_free(s->evcon);
    } else {
        close(s->fd);
    }
    free(s);
}

static void on_evcon_closed(struct evhttp_connection *evcon, void *arg) {
    (void)evcon;
    nb_splice *s = arg;
    s->evcon = NULL;
}

static bool drained(const nb_splice *s) {
    return evbuffer_get_length(bufferevent_get_output(s->up)) == 0 &&
           evbuffer_get_length(bufferevent_get_output(s->down)) == 0;
}

static void on_read(struct bufferevent *from, void *arg) {
    nb_splice *s = arg;
    struct bufferevent *to = from == s->up ? s->down : s->up;
    if (from == s->up && evbuffer_get_length(bufferevent_get_input(from))) s->answered = true;
    evbuffer_add_buffer(bufferevent_get_output(to), bufferevent_get_input(from));
    if (evbuffer_get_length(bufferevent_get_output(to)) >= NB_HIGH_WATER) bufferevent_disable(from, EV_READ);
}

static void on_written(struct bufferevent *to, void *arg) {
    nb_splice *s = arg;
    if (s->closing) {
        if (drained(s)) splice_end(s);
        return;
    }
    /* below the mark again: read the other side on */
    bufferevent_enable(to == s->up ? s->down : s->up, EV_READ);
}

/* One side closed (or failed): what the other still has to get is written,
 * then both close. */
static void on_event(struct bufferevent *bev, short what, void *arg) {
    nb_splice *s = arg;
    if (what & BEV_EVENT_CONNECTED) return;
    if (!s->closing) {
        on_read(bev, s);
        if (bev == s->up && !s->answered) {
            /* Jupyter went away before answering: the browser still gets
             * an answer, not a bare reset */
            static const char gone[] = "the notebook's Jupyter server closed the connection without answering; "
                                       "try again, or see its log (tony logs)\n";
            evbuffer_add_printf(bufferevent_get_output(s->down),
                                "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\n"
                                "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                                sizeof gone - 1, gone);
        }
        s->closing = true;
        bufferevent_disable(s->up, EV_READ);
        bufferevent_disable(s->down, EV_READ);
    }
    if (what & BEV_EVENT_ERROR) {
        /* the side that failed takes nothing more */
        evbuffer_drain(bufferevent_get_output(bev), evbuffer_get_length(bufferevent_get_output(bev)));
    }
    if (drained(s)) splice_end(s);
}

/* The server listens on its task's registered host (NM_HOST: loopback on
 * the local backend, the node's name on YARN), so that is where it is
 * reached, wherever the coordinator runs. The name is resolved by libevent's
 * resolver (/etc/hosts included), off the loop, as nmlog.c resolves nodes'
 * names; a failed lookup or connect ends the splice with a 502 (on_event). */
static int connect_jupyter(const am_notebook_ctx *am, struct bufferevent *up, const char *host, int port) {
    return bufferevent_socket_connect_hostname(up, am->dns, AF_UNSPEC, host, port);
}

static void splice(const am_notebook_ctx *am, struct evhttp_request *req, const am_task *t, const char *method, const char *path,
                   const char *query) {
    struct bufferevent *up = bufferevent_socket_new(am->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!up || connect_jupyter(am, up, t->host, t->tb_port)) {
        if (up) bufferevent_free(up);
        char *msg = tony_sprintf("cannot reach the Jupyter server of %s:%d on %s:%d from the coordinator's machine (%s); "
                                 "try again, or see tony logs %s --task %s:%d",
                                 t->role->name, t->index, t->host, t->tb_port, am->host ? am->host : "?", am->app_id,
                                 t->role->name, t->index);
        am_reply_error(req, 502, msg);
        free(msg);
        return;
    }
    nb_splice *s = tony_xcalloc(1, sizeof *s);
    s->up = up;
    s->evcon = evhttp_request_get_connection(req);
    s->lender = evhttp_connection_get_bufferevent(s->evcon);
    s->fd = bufferevent_getfd(s->lender);
    write_request(bufferevent_get_output(up), req, method, path, query, am->token);
    /* what the browser sent past this request (it may not wait for ours) */
    evbuffer_add_buffer(bufferevent_get_output(up), bufferevent_get_input(s->lender));
    /* evhttp keeps the connection (and frees it at the end, in splice_end)
     * but no longer reads or writes its socket */
    bufferevent_disable(s->lender, EV_READ | EV_WRITE);
    bufferevent_setfd(s->lender, -1);
    evhttp_connection_set_closecb(s->evcon, on_evcon_closed, s);
    s->down = bufferevent_socket_new(am->base, s->fd, 0);
    bufferevent_setcb(s->up, on_read, on_written, on_event, s);
    bufferevent_setcb(s->down, on_read, on_written, on_event, s);
    bufferevent_enable(s->up, EV_READ | EV_WRITE);
    bufferevent_enable(s->down, EV_READ | EV_WRITE);
}

/* Whether req comes from a page of the coordinator's own origin: its
 * Origin (else its Referer) is http://<its Host>, which host_ok checked is
 * one of the coordinator's names. A browser sends Origin with every
 * WebSocket handshake and every request other than GET and HEAD, and no
 * page can forge it; another user's page on another port of this host is
 * another origin. */
static bool same_origin(struct evhttp_request *req) {
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *host = evhttp_find_header(in, "Host");
    const char *origin = evhttp_find_header(in, "Origin");
    const char *from = origin ? origin : evhttp_find_header(in, "Referer");
    if (!host || !from || strncasecmp(from, "http://", 7) != 0) return false;
    size_t n = strlen(host);
    const char *rest = from + 7;
    if (strncasecmp(rest, host, n) != 0) return false;
    return origin ? rest[n] == '\0' : rest[n] == '/';
}

/* How a request may pass (docs/security.md, "The notebook"). A holder of
 * the read token (the header, Bearer, or ?token=) passes with any method;
 * ?token= on a GET of a page is a browser's link: it gets the cookie and
 * is sent on to the secret folder without the token. The cookie alone
 * (what a browser sends by itself, also when another site's page asks)
 * passes for GET and HEAD; for anything else, and every WebSocket, only
 * from the coordinator's own origin. NULL when it passes, else why not. */
static const char *refusal(const am_notebook_ctx *am, struct evhttp_request *req, bool under, const char *cookie,
                           const struct evkeyvalq *q, bool *link) {
    const char *t = evhttp_find_header(q, AM_API_TOKEN_PARAM);
    bool read_only = (evhttp_request_get_command(req) & (EVHTTP_REQ_GET | EVHTTP_REQ_HEAD)) && !wants_websocket(req);
    *link = false;
    if (t) {
        if (!tony_read_token_equal(am->token, t, strlen(t))) return "a wrong read token";
        *link = read_only;
        return NULL;
    }
    if (tony_read_header_has(req, am->token)) return NULL;
    if (!under || !tony_read_cookie_has(req, AM_API_NOTEBOOK_COOKIE, cookie)) return "no read token";
    if (read_only || same_origin(req)) return NULL;
    return "a change asked for by a page of another origin (its Origin is not this coordinator's)";
}

void am_notebook_proxy(const am_notebook_ctx *am, struct evhttp_request *req) {
    struct evhttp_uri *u = evhttp_uri_parse(evhttp_request_get_uri(req));
    const char *path = u ? evhttp_uri_get_path(u) : NULL;
    const char *query = u ? evhttp_uri_get_query(u) : NULL;
    const char *method = method_name(evhttp_request_get_command(req));
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    if (query && evhttp_parse_query_str(query, &q)) evhttp_clear_headers(&q);
    char key[2 * 32 + 1], cookie[2 * 32 + 1];
    tony_apiauth_derive_hex(am->token, AM_API_NOTEBOOK_PATH_LABEL, key);
    tony_apiauth_derive_hex(am->token, AM_API_NOTEBOOK_COOKIE_LABEL, cookie);
    char *folder = tony_sprintf(AM_API_NOTEBOOK "/%s", key);
    size_t fn = strlen(folder);
    bool under = path && strncmp(path, folder, fn) == 0 && (path[fn] == '\0' || path[fn] == '/');
    /* Jupyter serves under the secret folder; a token holder may leave it out */
    char *upstream = !path ? NULL : under ? tony_strdup(path) : tony_sprintf("%s%s", folder, path + strlen(AM_API_NOTEBOOK));
    bool link = false;
    const char *why = path ? refusal(am, req, under, cookie, &q, &link) : NULL;
    if (!path || !method) {
        am_reply_error(req, 400, "malformed request for the notebook");
    } else if (why) {
        char *msg = tony_sprintf("the notebook refuses %s: open the URL `tony notebook` printed (.../" AM_API_NOTEBOOK
                                 "/?" AM_API_TOKEN_PARAM "=...) in the browser, or pass the job's read token in the "
                                 AM_API_TOKEN_HEADER " header",
                                 why);
        am_reply_error(req, 403, msg);
        free(msg);
    } else if (link) {
        /* the browser's cookie opens the secret folder only, wherever it is sent */
        char *set = tony_sprintf(AM_API_NOTEBOOK_COOKIE "=%s; Path=%s/; HttpOnly; SameSite=Strict", cookie, folder);
        char *to = upstream[fn] ? tony_strdup(upstream) : tony_sprintf("%s/", folder);
        tony_read_redirect(req, path, to, &q, NULL, set);
        free(to);
        free(set);
    } else {
        const am_task *t = notebook_task(am);
        if (t && t->state == AM_TASK_RUNNING && t->tb_port > 0 && t->tb_listening && t->host) {
            splice(am, req, t, method, upstream, query);
        } else {
            char *nb = why_no_notebook(am, t);
            am_reply_text(req, 503, nb);
            free(nb);
        }
    }
    evhttp_clear_headers(&q);
    OPENSSL_cleanse(cookie, sizeof cookie);
    free(upstream);
    free(folder);
    if (u) evhttp_uri_free(u);
}
