/* The coordinator's reverse proxy to a `tony notebook` job's Jupyter server:
 * every request under AM_API_NOTEBOOK (HTTP, and WebSocket for the kernels'
 * channels) goes to the server, which listens on its task's registered host
 * (loopback on the local backend, the node on YARN) under a secret folder
 * (common/amapi.h), and only with the job's read token, or from a browser
 * with the cookie the printed link set, changes only from the
 * coordinator's own origin (docs/security.md). */
#ifndef TONY_AM_NOTEBOOK_PROXY_H
#define TONY_AM_NOTEBOOK_PROXY_H

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>

#include "am/job.h"

/* What the proxy needs of the coordinator (not its handle: the API hands
 * it these, the DNS base and read gate from its own part). */
typedef struct am_notebook_ctx {
    struct event_base *base;
    struct evdns_base *dns;      /* resolves the task's host off the loop; NULL: a blocking lookup */
    const char *token;           /* the job's read token: the check, and Jupyter's own token */
    const am_job *job;           /* where its notebook task is */
    const char *app_id;
    const char *host; /* the coordinator's, for messages: the server is reached on its task's host */
    bool job_ended;
} am_notebook_ctx;

/* Whether path is AM_API_NOTEBOOK or below it. */
bool am_notebook_path(const char *path);

/* Answers req (any method) by splicing its connection to the Jupyter server
 * of the job's notebook task; answers 403, saying why, to a request that may
 * not pass, and 503, saying why, when no server runs. */
void am_notebook_proxy(const am_notebook_ctx *am, struct evhttp_request *req);

#endif
