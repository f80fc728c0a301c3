/* The yarn backend's log reads: a task's output on another node comes from
 * that node's NodeManager log REST. It reads only heads and tails of a
 * file, so a range costs one tail read when the reader follows the end, and
 * at worst a head read too. Everything runs on the coordinator's loop. */
#include "backend/yarn/nmlog.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/dns.h>
#include <event2/http.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/yarn/nmweb.h"
#include "common/strv.h"

/* NodeManager reads for one range: a tail, a wider tail, a head. */
#define NMLOG_ROUNDS 3

struct yarn_nmlog {
    struct event_base *base;
    struct evdns_base *dns; /* made on first use */
    int timeout_s;
    tony_log_read *reads;   /* in flight, and failed ones whose connection waits to be freed */
    yarn_nmlog_auth auth;   /* all NULL: no SPNEGO */
};

struct tony_log_read {
    yarn_nmlog *nl;
    /* The NodeManager connection while it is ours to free: libevent frees
     * it itself after the callback of a request that got an answer. */
    struct evhttp_connection *conn;
    struct event *reap; /* frees a failed read's connection after libevent's callback */
    tony_log_cb cb;
    void *ctx;
    char *base, *container, *who, *stream;
    long long offset, max;
    long long size; /* the size parameter of the NodeManager read in flight (nmweb.h) */
    int round;
    int neterr; /* the evhttp_request_error of a failed read, or -1 */
    int syserr; /* errno when libevent reported it */
    /* libevent may fail a request from inside evhttp_make_request (no
     * socket left: EMFILE); the failure is then reported from the loop. */
    bool starting, failed_early;
    tony_log_read *next;
};

void yarn_nmlog_set_auth(yarn_nmlog *nl, const yarn_nmlog_auth *auth) { nl->auth = *auth; }

yarn_nmlog *yarn_nmlog_new(struct event_base *base) {
    yarn_nmlog *nl = tony_xcalloc(1, sizeof *nl);
    nl->base = base;
    nl->timeout_s = YARN_NMLOG_TIMEOUT_S;
    return nl;
}

static void read_free(tony_log_read *rd) {
    for (tony_log_read **p = &rd->nl->reads; *p; p = &(*p)->next)
        if (*p == rd) {
            *p = rd->next;
            break;
        }
    if (rd->conn) evhttp_connection_free(rd->conn);
    if (rd->reap) event_free(rd->reap);
    free(rd->base), free(rd->container), free(rd->who), free(rd->stream);
    free(rd);
}

void yarn_nmlog_free(yarn_nmlog *nl) {
    if (!nl) return;
    while (nl->reads) read_free(nl->reads);
    /* After the connections, which may still be resolving through it. */
    if (nl->dns) evdns_base_free(nl->dns, 0);
    free(nl);
}

void yarn_nmlog_set_timeout(yarn_nmlog *nl, int seconds) { nl->timeout_s = seconds > 0 ? seconds : YARN_NMLOG_TIMEOUT_S; }

void yarn_nmlog_cancel(tony_log_read *rd) {
    if (rd) read_free(rd);
}

int yarn_nmlog_check_link(const char *link, tony_error *err) {
    char *base = NULL, *container = NULL;
    int rc = tony_nmweb_parse_link(link, &base, &container, err);
    free(base);
    free(container);
    return rc;
}

/* The read's one callback; the read is over for its owner from here on. */
static void deliver(tony_log_read *rd, int code, const char *msg, const tony_log_chunk *chunk) {
    tony_log_cb cb = rd->cb;
    rd->cb = NULL;
    cb(rd->ctx, code, msg, chunk);
}

static void fail(tony_log_read *rd, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(tony_log_read *rd, int code, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    deliver(rd, code, msg, NULL);
}

static const char *error_words(const tony_log_read *rd, char *buf, size_t n) {
    switch (rd->neterr) {
    case EVREQ_HTTP_TIMEOUT: snprintf(buf, n, "no answer within %d s", rd->nl->timeout_s); return buf;
    case EVREQ_HTTP_EOF:
        /* libevent says EOF for a connect or name lookup that failed too. */
        if (rd->syserr == ECONNREFUSED || rd->syserr == EHOSTUNREACH || rd->syserr == ENETUNREACH ||
            rd->syserr == ETIMEDOUT || rd->syserr == ECONNRESET || rd->syserr == EMFILE || rd->syserr == ENFILE) {
            snprintf(buf, n, "%s (check that the coordinator can reach that host and port)", strerror(rd->syserr));
            return buf;
        }
        return "it closed the connection, or its name could not be resolved (check that the coordinator can "
               "resolve and reach that host)";
    case EVREQ_HTTP_INVALID_HEADER: return "it sent an invalid header";
    case EVREQ_HTTP_DATA_TOO_LONG: return "it sent too much";
    case EVREQ_HTTP_BUFFER_ERROR:
    case -1: /* a refused connection may come with no error call at all */
        return "the connection failed (refused or unreachable)";
    default: return "the read failed";
    }
}

/* libevent calls this before on_answer. */
static void on_error(enum evhttp_request_error e, void *arg) {
    tony_log_read *rd = arg;
    rd->neterr = (int)e;
    rd->syserr = errno; /* libevent restores the socket's errno before calling back */
}

static void on_reap(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    read_free(arg);
}

static void on_answer(struct evhttp_request *r, void *arg);

static void fail_unread(tony_log_read *rd) {
    char words[160];
    fail(rd, 502, "cannot read %s's %s from its NodeManager at %s: %s", rd->who, rd->stream, rd->base,
         error_words(rd, words, sizeof words));
}

static void on_failed_early(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    tony_log_read *rd = arg;
    fail_unread(rd);
    read_free(rd);
}

static int send_read(tony_log_read *rd) {
    struct evhttp_uri *u = evhttp_uri_parse(rd->base);
    const char *host = u ? evhttp_uri_get_host(u) : NULL;
    int port = u ? evhttp_uri_get_port(u) : -1;
    if (!host || port <= 0) {
        if (u) evhttp_uri_free(u);
        return -1;
    }
    /* The node's name is resolved without blocking the loop (libevent's
     * resolver, /etc/hosts included); without one (none could be set up)
     * libevent falls back to a blocking lookup. */
    yarn_nmlog *nl = rd->nl;
    if (!nl->dns) nl->dns = evdns_base_new(nl->base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
    rd->neterr = -1;
    rd->conn = evhttp_connection_base_new(nl->base, nl->dns, host, (unsigned short)port);
    struct evhttp_request *r = rd->conn ? evhttp_request_new(on_answer, rd) : NULL;
    if (!r) {
        if (rd->conn) evhttp_connection_free(rd->conn);
        rd->conn = NULL;
        evhttp_uri_free(u);
        return -1;
    }
    evhttp_connection_set_timeout(rd->conn, nl->timeout_s);
    evhttp_connection_free_on_completion(rd->conn);
    evhttp_request_set_error_cb(r, on_error);
    struct evkeyvalq *h = evhttp_request_get_output_headers(r);
    char *hostport = tony_sprintf("%s:%d", host, port);
    evhttp_add_header(h, "Host", hostport);
    /* Asked for JSON, the NodeManager's log REST answers 503. */
    evhttp_add_header(h, "Accept", "text/plain");
    evhttp_add_header(h, "Connection", "close");
    const char *cookie = nl->auth.cookie ? nl->auth.cookie(nl->auth.ctx, rd->base) : NULL;
    if (cookie) evhttp_add_header(h, "Cookie", cookie);
    free(hostport);
    evhttp_uri_free(u);
    char *path = tony_nmweb_file_url("", rd->container, rd->stream, rd->size);
    rd->starting = true;
    rd->failed_early = false;
    int rc = evhttp_make_request(rd->conn, r, EVHTTP_REQ_GET, path);
    rd->starting = false;
    free(path);
    if (rc) {
        /* libevent freed the request; the connection has nothing to complete */
        if (rd->conn) evhttp_connection_free(rd->conn);
        rd->conn = NULL;
    } else if (rd->failed_early) {
        /* The callback promised to come from the loop, never from inside
         * the call that asked for the read: a moment later. */
        static const struct timeval now = {0, 0};
        rd->reap = evtimer_new(rd->nl->base, on_failed_early, rd);
        if (!rd->reap || evtimer_add(rd->reap, &now) != 0) {
            if (rd->reap) event_free(rd->reap);
            rd->reap = NULL;
            if (rd->conn) evhttp_connection_free(rd->conn);
            rd->conn = NULL;
            return -1;
        }
    }
    return rc;
}

/* What a 200 answer holds for the range; returns true when the read goes on
 * with another round. */
static bool use_answer(tony_log_read *rd, const char *body, size_t len) {
    tony_nmweb_log log;
    tony_error err;
    size_t from = 0, n = 0;
    if (tony_nmweb_parse_log(body, len, rd->size, &log, &err)) {
        fail(rd, 502, "%s (from %s)", err.msg, rd->base);
        return false;
    }
    int s = tony_nmweb_slice(&log, rd->offset, rd->max, &from, &n);
    if (s == -1) {
        fail(rd, 400, "offset is past the end of the log");
    } else if (s == 0) {
        tony_log_chunk c = {.data = log.data + from, .n = n, .offset = rd->offset, .size = log.file_len, .exists = true};
        deliver(rd, 200, NULL, &c);
    } else if (++rd->round >= NMLOG_ROUNDS) {
        fail(rd, 502, "the log of %s grows faster than the NodeManager at %s can be read", rd->who, rd->base);
    } else {
        /* The file grew past the tail: a tail that reaches offset with a
         * chunk to spare, or the head up to offset + chunk if that is less. */
        long long tail = log.file_len - rd->offset + rd->max, head = rd->offset + rd->max;
        rd->size = rd->round == 1 && tail < head ? -tail : head;
        if (send_read(rd) == 0) return true;
        fail(rd, 502, "cannot ask the NodeManager at %s", rd->base);
    }
    return false;
}

static void on_answer(struct evhttp_request *r, void *arg) {
    tony_log_read *rd = arg;
    int code = r ? evhttp_request_get_response_code(r) : 0;
    if (rd->starting) {
        /* Failed from inside evhttp_make_request: send_read reports it. A
         * NULL request means libevent freed the connection already. */
        rd->failed_early = true;
        if (!r) rd->conn = NULL;
        return;
    }
    if (code == 0) {
        fail_unread(rd);
        if (!r) {
            /* A failure after connecting: libevent freed the connection
             * (free_on_completion) before this callback. */
            rd->conn = NULL;
            read_free(rd);
            return;
        }
        /* A failed connect: libevent leaves the connection to us, and it
         * may not be freed from inside its own callback: right after it. */
        rd->reap = evtimer_new(rd->nl->base, on_reap, rd);
        static const struct timeval now = {0, 0};
        if (!rd->reap || evtimer_add(rd->reap, &now) != 0) read_free(rd);
        return;
    }
    rd->conn = NULL; /* libevent frees it after this callback */
    struct evbuffer *in = evhttp_request_get_input_buffer(r);
    size_t len = evbuffer_get_length(in);
    char *body = tony_xmalloc(len + 1);
    evbuffer_copyout(in, body, len);
    body[len] = '\0';
    bool again = false;
    if (code == 404 && strstr(body, "Cannot find this log")) {
        /* Nothing written to it yet: as a local file that does not exist. */
        if (rd->offset > 0) {
            fail(rd, 400, "offset is past the end of the log");
        } else {
            tony_log_chunk c = {.data = "", .exists = false};
            deliver(rd, 200, NULL, &c);
        }
    } else if (code == 401 && rd->nl->auth.refused) {
        rd->nl->auth.refused(rd->nl->auth.ctx, rd->base);
        fail(rd, 502, "the NodeManager at %s wants Kerberos (SPNEGO): the coordinator is logging in to it with the "
                      "job's keytab; try again in a moment", rd->base);
    } else if (code == 401) {
        fail(rd, 502, "the NodeManager at %s wants Kerberos (SPNEGO), and the coordinator has no login of its own "
                      "(submit with tony.keytab.user and tony.keytab.location for this log tail); `tony logs` reads "
                      "it with your ticket", rd->base);
    } else if (code != 200) {
        char *nl = strchr(body, '\n');
        if (nl) *nl = '\0';
        fail(rd, 502, "the NodeManager at %s answered HTTP %d for %s's %s (container %s): %.300s", rd->base, code,
             rd->who, rd->stream, rd->container, body);
    } else {
        again = use_answer(rd, body, len);
    }
    free(body);
    if (!again) read_free(rd);
}

int yarn_nmlog_read(yarn_nmlog *nl, const tony_log_request *r, tony_log_cb cb, void *ctx, tony_log_read **out,
                    tony_error *err) {
    *out = NULL;
    char *base = NULL, *container = NULL;
    if (tony_nmweb_parse_link(r->url, &base, &container, err)) return -1;
    tony_log_read *rd = tony_xcalloc(1, sizeof *rd);
    rd->nl = nl;
    rd->cb = cb;
    rd->ctx = ctx;
    rd->base = base;
    rd->container = container;
    rd->who = tony_strdup(r->who);
    rd->stream = tony_strdup(r->stream);
    rd->offset = r->offset;
    rd->max = r->max;
    rd->size = tony_nmweb_first_size(r->offset, r->max);
    rd->next = nl->reads;
    nl->reads = rd;
    if (send_read(rd)) {
        tony_err(err, "cannot ask the NodeManager at %s for %s's %s", rd->base, rd->who, rd->stream);
        read_free(rd);
        return -1;
    }
    *out = rd;
    return 0;
}
