/* GET /v1/tasks/<role>/<index>/log for a task whose output lives on another
 * node: the coordinator asks that node's NodeManager web service (without
 * blocking its loop) and answers in the same shape as for a local file. The
 * NodeManager reads only heads and tails of a file, so a range costs one
 * tail read when the reader follows the end, and at worst a head read. */
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "am/am_internal.h"
#include "backend/yarn/nmweb.h"
#include "common/log.h"
#include "common/strv.h"

/* How long a NodeManager may take to answer one read. */
#define LOGFETCH_TIMEOUT_S 10
/* Reads of one request: a tail, a wider tail, a head. */
#define LOGFETCH_STR_(x) #x
#define LOGFETCH_STR(x) LOGFETCH_STR_(x)
#define LOGFETCH_ROUNDS 3

struct am_logfetch {
    tony_am *am;
    struct evhttp_request *req; /* the client's; NULL once it went away */
    struct evhttp_connection *client, *nm;
    char *base, *container, *role, *stream;
    int index, attempt, round;
    int neterr; /* the evhttp_request_error of a failed read, or -1 */
    long long offset, size; /* size: the NodeManager read in flight */
    am_logfetch *next;
};

static void fetch_free(am_logfetch *f) {
    for (am_logfetch **p = &f->am->logfetches; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
    if (f->client) evhttp_connection_set_closecb(f->client, NULL, NULL);
    free(f->base), free(f->container), free(f->role), free(f->stream);
    free(f);
}

static void on_client_close(struct evhttp_connection *c, void *arg) {
    (void)c;
    am_logfetch *f = arg;
    /* Its request is freed with the connection: answer nobody later. */
    f->req = NULL;
    f->client = NULL;
}

static void respond(am_logfetch *f, int code, json_t *body) {
    if (f->client) evhttp_connection_set_closecb(f->client, NULL, NULL);
    f->client = NULL;
    if (f->req) am_api_reply_json(f->req, code, body);
    else json_decref(body);
    f->req = NULL;
}

static void finish(am_logfetch *f, int code, json_t *body) {
    respond(f, code, body);
    /* The NodeManager connection frees itself once its request is done. */
    f->nm = NULL;
    fetch_free(f);
}

static void reap(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    am_logfetch *f = arg;
    if (f->nm) evhttp_connection_free(f->nm);
    f->nm = NULL;
    fetch_free(f);
}

static void finish_error(am_logfetch *f, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void finish_error(am_logfetch *f, int code, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    finish(f, code, json_pack("{s:s}", "error", msg));
}

static void on_answer(struct evhttp_request *r, void *arg);

static const char *error_words(enum evhttp_request_error e) {
    switch (e) {
    case EVREQ_HTTP_TIMEOUT: return "no answer within " LOGFETCH_STR(LOGFETCH_TIMEOUT_S) " s";
    case EVREQ_HTTP_EOF: return "it closed the connection";
    case EVREQ_HTTP_INVALID_HEADER: return "it sent an invalid header";
    case EVREQ_HTTP_BUFFER_ERROR: return "the connection failed (refused or unreachable)";
    case EVREQ_HTTP_DATA_TOO_LONG: return "it sent too much";
    default: return "the read failed";
    }
}

/* libevent calls this before on_answer, which answers the client; a
 * refused connection may come with no error call at all. */
static void on_error(enum evhttp_request_error e, void *arg) {
    am_logfetch *f = arg;
    f->neterr = (int)e;
}

static int send_read(am_logfetch *f) {
    struct evhttp_uri *u = evhttp_uri_parse(f->base);
    const char *host = u ? evhttp_uri_get_host(u) : NULL;
    int port = u ? evhttp_uri_get_port(u) : -1;
    if (!host || port <= 0) {
        if (u) evhttp_uri_free(u);
        return -1;
    }
    /* The node's name is resolved without blocking the loop (libevent's
     * resolver, /etc/hosts included); without one (no resolver could be
     * set up) libevent falls back to a blocking lookup. */
    if (!f->am->dns) f->am->dns = evdns_base_new(f->am->base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
    f->nm = evhttp_connection_base_new(f->am->base, f->am->dns, host, (unsigned short)port);
    struct evhttp_request *r = f->nm ? evhttp_request_new(on_answer, f) : NULL;
    if (!r) {
        if (f->nm) evhttp_connection_free(f->nm);
        f->nm = NULL;
        evhttp_uri_free(u);
        return -1;
    }
    evhttp_connection_set_timeout(f->nm, LOGFETCH_TIMEOUT_S);
    evhttp_connection_free_on_completion(f->nm);
    evhttp_request_set_error_cb(r, on_error);
    struct evkeyvalq *h = evhttp_request_get_output_headers(r);
    char *hostport = tony_sprintf("%s:%d", host, port);
    evhttp_add_header(h, "Host", hostport);
    /* Asked for JSON, the NodeManager's log REST answers 503. */
    evhttp_add_header(h, "Accept", "text/plain");
    evhttp_add_header(h, "Connection", "close");
    free(hostport);
    evhttp_uri_free(u);
    char *path = tony_nmweb_file_url("", f->container, f->stream, f->size);
    int rc = evhttp_make_request(f->nm, r, EVHTTP_REQ_GET, path);
    free(path);
    if (rc) {
        /* libevent freed the request; the connection has nothing to complete */
        evhttp_connection_free(f->nm);
        f->nm = NULL;
    }
    return rc;
}

static void on_answer(struct evhttp_request *r, void *arg) {
    am_logfetch *f = arg;
    int code = r ? evhttp_request_get_response_code(r) : 0;
    if (code == 0) {
        char msg[768];
        snprintf(msg, sizeof msg, "cannot read %s:%d's %s from its NodeManager at %s: %s", f->role, f->index,
                 f->stream, f->base,
                 f->neterr >= 0 ? error_words((enum evhttp_request_error)f->neterr)
                                : "the connection failed (refused or unreachable)");
        respond(f, 502, json_pack("{s:s}", "error", msg));
        /* A failed connection is not freed by libevent (free_on_completion
         * covers completed requests only), and not from inside its own
         * callback: right after it. */
        static const struct timeval now = {0, 0};
        if (event_base_once(f->am->base, -1, EV_TIMEOUT, reap, f, &now) != 0) reap(-1, 0, f);
        return;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(r);
    size_t len = evbuffer_get_length(in);
    char *body = tony_xmalloc(len + 1);
    evbuffer_copyout(in, body, len);
    body[len] = '\0';
    f->nm = NULL; /* freed after this callback (free_on_completion) */
    if (!f->req) {
        free(body);
        fetch_free(f);
        return;
    }
    if (code == 404 && strstr(body, "Cannot find this log")) {
        /* Nothing written to it yet: as a local file that does not exist. */
        free(body);
        if (f->offset > 0) finish_error(f, 400, "offset is past the end of the log");
        else finish(f, 200, am_api_log_chunk_json(f->role, f->index, f->attempt, f->stream, 0, "", 0, 0, false));
        return;
    }
    if (code != 200) {
        char *nl = strchr(body, '\n');
        if (nl) *nl = '\0';
        finish_error(f, 502, "the NodeManager at %s answered HTTP %d for %s:%d's %s (container %s): %.300s", f->base,
                     code, f->role, f->index, f->stream, f->container, body);
        free(body);
        return;
    }
    tony_nmweb_log log;
    tony_error err;
    size_t from = 0, n = 0;
    int s = tony_nmweb_parse_log(body, len, f->size, &log, &err) ? -2 : tony_nmweb_slice(&log, f->offset, AM_LOG_CHUNK, &from, &n);
    if (s == -2) {
        finish_error(f, 502, "%s (from %s)", err.msg, f->base);
    } else if (s == -1) {
        finish_error(f, 400, "offset is past the end of the log");
    } else if (s == 0) {
        finish(f, 200, am_api_log_chunk_json(f->role, f->index, f->attempt, f->stream, f->offset, log.data + from, n,
                                            log.file_len, true));
    } else if (++f->round >= LOGFETCH_ROUNDS) {
        finish_error(f, 502, "the log of %s:%d grows faster than the NodeManager at %s can be read", f->role,
                     f->index, f->base);
    } else {
        f->neterr = -1;
        /* The file grew past the tail: a tail that reaches offset with a
         * chunk to spare, or the head up to offset + chunk if that is less. */
        long long tail = log.file_len - f->offset + AM_LOG_CHUNK, head = f->offset + AM_LOG_CHUNK;
        f->size = f->round == 1 && tail < head ? -tail : head;
        if (send_read(f)) finish_error(f, 502, "cannot ask the NodeManager at %s", f->base);
    }
    free(body);
}

void am_logfetch_start(tony_am *am, struct evhttp_request *req, const char *log_url, const char *role, int index,
                       int attempt, const char *stream, long long offset) {
    am_logfetch *f = tony_xcalloc(1, sizeof *f);
    tony_error err;
    if (tony_nmweb_parse_link(log_url, &f->base, &f->container, &err)) {
        am_api_reply_json(req, 500, json_pack("{s:s}", "error", err.msg));
        free(f);
        return;
    }
    f->am = am;
    f->req = req;
    f->role = tony_strdup(role);
    f->stream = tony_strdup(stream);
    f->index = index;
    f->attempt = attempt;
    f->offset = offset;
    f->neterr = -1;
    f->size = tony_nmweb_first_size(offset, AM_LOG_CHUNK);
    f->next = am->logfetches;
    am->logfetches = f;
    f->client = evhttp_request_get_connection(req);
    /* A connection has one close callback: one read in flight per client
     * connection (browsers and curl do not pipeline anyway). */
    for (am_logfetch *o = f->next; o && f->client; o = o->next)
        if (o->client == f->client) {
            f->client = NULL;
            finish_error(f, 409, "another log read is in flight on this connection");
            return;
        }
    if (f->client) evhttp_connection_set_closecb(f->client, on_client_close, f);
    if (send_read(f)) finish_error(f, 502, "cannot ask the NodeManager at %s", f->base);
}

void am_logfetch_free_all(tony_am *am) {
    while (am->logfetches) {
        am_logfetch *f = am->logfetches;
        if (f->nm) evhttp_connection_free(f->nm);
        fetch_free(f);
    }
}
