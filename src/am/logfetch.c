/* GET /v1/tasks/<role>/<index>/log for a task whose output the coordinator
 * cannot open as a file (a YARN task on another node): the backend reads it
 * (backend.h's read_log) without blocking the loop, and the answer has the
 * same shape as for a local file. This file holds the client's side: one
 * pending answer per read, dropped with the read when the client goes. */
#include "am/logfetch.h"

#include <stdlib.h>
#include <string.h>

#include "am/reply.h"
#include "common/strv.h"

struct am_logfetch {
    tony_am *am;
    struct evhttp_request *req;
    struct evhttp_connection *client; /* watched for closing while the read runs */
    tony_log_read *read;              /* the backend's, until its callback */
    char *role, *stream;
    int index, attempt;
    am_logfetch *next;
};

static void fetch_free(am_logfetch *f) {
    for (am_logfetch **p = &f->am->logfetches; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
    if (f->client) evhttp_connection_set_closecb(f->client, NULL, NULL);
    tony_backend_cancel_log(f->am->backend, f->read);
    free(f->role), free(f->stream);
    free(f);
}

/* The client's connection is going (libevent does not read from it while a
 * request waits, so mostly when the server goes): nobody is left to answer
 * and the read stops. A request libevent detached from its failed
 * connection is left to us to free. */
static void on_client_close(struct evhttp_connection *c, void *arg) {
    (void)c;
    am_logfetch *f = arg;
    f->client = NULL;
    if (!evhttp_request_get_connection(f->req)) evhttp_request_free(f->req);
    fetch_free(f);
}

static void reply(am_logfetch *f, int code, json_t *body) {
    if (f->client) evhttp_connection_set_closecb(f->client, NULL, NULL);
    f->client = NULL;
    am_reply_json(f->req, code, body);
    fetch_free(f);
}

static void on_read(void *ctx, int code, const char *msg, const tony_log_chunk *c) {
    am_logfetch *f = ctx;
    f->read = NULL; /* over: the backend frees it */
    if (!c) {
        reply(f, code, json_pack("{s:s}", "error", msg));
        return;
    }
    reply(f, 200, am_log_chunk_json(f->role, f->index, f->attempt, f->stream, c->offset, c->data, c->n, c->size,
                                        c->exists));
}

int am_backend_reads_log_url(const tony_am *am, const char *log_url, tony_error *err) {
    const tony_backend *b = am->backend;
    if (!b) return tony_err(err, "the local backend reads no log links (its tasks' logs are files here)");
    return tony_backend_check_log_url(b, log_url, err);
}

void am_logfetch_start(tony_am *am, struct evhttp_request *req, const char *log_url, const char *role, int index,
                       int attempt, const char *stream, long long offset) {
    struct evhttp_connection *client = evhttp_request_get_connection(req);
    /* A connection has one close callback: one read in flight per client
     * connection (browsers and curl do not pipeline anyway). */
    for (am_logfetch *o = am->logfetches; o && client; o = o->next)
        if (o->client == client) {
            am_reply_json(req, 409, json_pack("{s:s}", "error", "another log read is in flight on this connection"));
            return;
        }
    /* Whole and listed before the backend is asked, whenever its answer
     * comes. */
    am_logfetch *f = tony_xcalloc(1, sizeof *f);
    f->am = am;
    f->req = req;
    f->role = tony_strdup(role);
    f->stream = tony_strdup(stream);
    f->index = index;
    f->attempt = attempt;
    f->next = am->logfetches;
    am->logfetches = f;
    char *who = tony_sprintf("%s:%d", role, index);
    tony_log_request r = {.url = log_url, .who = who, .stream = stream, .offset = offset, .max = AM_LOG_CHUNK};
    tony_error err;
    int rc = tony_backend_read_log(am->backend, &r, on_read, f, &f->read, &err);
    free(who);
    if (rc) {
        reply(f, 502, json_pack("{s:s}", "error", err.msg));
        return;
    }
    f->client = client;
    if (client) evhttp_connection_set_closecb(client, on_client_close, f);
}

void am_logfetch_free_all(tony_am *am) {
    while (am->logfetches) fetch_free(am->logfetches);
}
