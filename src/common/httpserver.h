/* The HTTP servers tony runs (the coordinator's API, Horovod's rendezvous,
 * the history portal) on libevent's evhttp, with the limits evhttp leaves
 * off: idle, read and write timeouts, header and body size limits, and a
 * cap on open connections that keeps descriptors for the rest of the
 * process. At the cap the connection idle longest (no request being
 * answered) is closed for the new one; when accept() itself fails (out of
 * descriptors) the server stops accepting for a moment and says so in one
 * log line per interval instead of spinning. */
#ifndef TONY_HTTPSERVER_H
#define TONY_HTTPSERVER_H

#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

typedef struct tony_http_server tony_http_server;

/* A connection that says nothing for this long (between requests, or in the
 * middle of one) is closed, and so is one that reads nothing of a reply. */
#define TONY_HTTP_TIMEOUT_S 10
/* Request line and headers together (evhttp answers 400 beyond). */
#define TONY_HTTP_MAX_HEADERS (64 * 1024)
/* One request's body, unless the server says otherwise. */
#define TONY_HTTP_MAX_BODY (1024 * 1024)
/* The most connections a server keeps open, whatever the descriptor limit.
 * Each task of a job holds two open: its register or watch long poll, and
 * the one its heartbeats are kept on (common/http.c): a coordinator of
 * 10,000 tasks needs 20,000 (issue 26; at 1024, the 1025th task's calls
 * waited in the kernel's backlog until a long poll ended). Past the cap the
 * idlest (a kept one between heartbeats) is closed, and its task's next
 * heartbeat connects anew. */
#define TONY_HTTP_MAX_CONNS 65536
/* What of the descriptor limit is kept from connections: the coordinator's
 * other files (history, logs, the backends' pipes and sockets, its other
 * servers), 1/8 of the limit and at least 64 (or half of a limit under
 * 128). The coordinator holds no
 * descriptor per container, so the rest can be connections: with a hard
 * limit of 20,000, 17,500 (half of it, 10,000, was the cap before: a job of
 * 5,000 tasks filled it with their long polls and kept heartbeats). */
#define TONY_HTTP_FD_RESERVE_DIV 8
#define TONY_HTTP_FD_RESERVE_MIN 64
/* The connection cap a server without max_conns keeps under a descriptor
 * limit (-1: none): the limit less the reserve, 4 to TONY_HTTP_MAX_CONNS. */
size_t tony_http_conn_cap_for(long fd_limit);

typedef struct tony_http_server_opts {
    const char *what;   /* names the server in log lines: "the coordinator API" */
    size_t max_body;    /* bytes of one request's body, 413 beyond; 0: TONY_HTTP_MAX_BODY */
    size_t max_headers; /* 0: TONY_HTTP_MAX_HEADERS */
    int timeout_s;      /* 0: TONY_HTTP_TIMEOUT_S */
    int max_conns;      /* 0: tony_http_conn_cap_for(the descriptor limit, RLIMIT_NOFILE) */
    int allowed_methods; /* EVHTTP_REQ_* */
    void (*handler)(struct evhttp_request *req, void *arg);
    void *arg;
} tony_http_server_opts;

tony_http_server *tony_http_server_new(struct event_base *base, const tony_http_server_opts *o);

/* Listens on host at port (0: any free one); *bound_port gets the port. */
int tony_http_server_listen(tony_http_server *s, const char *host, int port, int *bound_port, tony_error *err);
/* Serves on a socket already listening (the server closes it). */
int tony_http_server_adopt(tony_http_server *s, evutil_socket_t fd, tony_error *err);

/* Calls sent(arg, written) once the answer to req, a request the handler
 * holds and has not answered yet, has left: written true once evhttp wrote
 * it out whole, false when its connection closed first (the peer went
 * away, or read nothing of it for the timeout). A user that bounds what it
 * queues (the coordinator's "go" answers) sends the next one then. Set it
 * before answering req; one per request (evhttp hands the handler one
 * request of a connection at a time). Never called while the server is
 * freed. -1 (nothing will be called): req is none of this server's held
 * requests, or has its hook already. */
int tony_http_server_when_sent(tony_http_server *s, struct evhttp_request *req, void (*sent)(void *arg, bool written),
                               void *arg);

/* Connections open now (for tests and log lines). */
size_t tony_http_server_connections(const tony_http_server *s);
/* Frees the server and every connection it has (requests held by the
 * handler included: reply to none of them afterwards). */
void tony_http_server_free(tony_http_server *s);

#endif
