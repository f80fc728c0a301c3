/* The coordinator's reverse proxy to a `tony notebook` job's Jupyter server:
 * every request under AM_API_NOTEBOOK (HTTP, and WebSocket for the kernels'
 * channels) goes to the server, which listens on the task's loopback only,
 * and only with the job's read token, the same check as the web page's. */
#ifndef TONY_AM_NOTEBOOK_PROXY_H
#define TONY_AM_NOTEBOOK_PROXY_H

#include <event2/http.h>
#include <stdbool.h>

#include "am/am_internal.h"

/* Whether path is AM_API_NOTEBOOK or below it. */
bool am_notebook_path(const char *path);

/* Answers req (any method) by splicing its connection to the Jupyter server
 * of the job's notebook task; answers 403 without the read token and 503,
 * saying why, when no server runs. */
void am_notebook_proxy(tony_am *am, struct evhttp_request *req);

#endif
