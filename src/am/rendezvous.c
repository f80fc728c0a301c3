/* The rendezvous store: scopes of keys to byte values, answered at once
 * (404 for a key not there yet: Horovod's workers poll). */
#include "am/rendezvous.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hostcheck.h"
#include "common/httpreply.h"
#include "common/httpserver.h"
#include "common/log.h"
#include "common/strv.h"

/* Horovod's gloo rendezvous stores a few addresses per rank: small values.
 * Anyone who can reach the port can PUT, so what the store holds is capped
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

struct am_rendezvous {
    tony_http_server *http;
    int port;
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

static void handle(struct evhttp_request *req, void *arg) {
    am_rendezvous *r = arg;
    if (!tony_host_check_ok(&r->hosts, evhttp_find_header(evhttp_request_get_input_headers(req), "Host"))) {
        refuse_host(req);
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

am_rendezvous *am_rendezvous_start(struct event_base *base, const char *host, tony_error *err) {
    am_rendezvous *r = tony_xcalloc(1, sizeof *r);
    tony_http_server_opts o = {.what = "the Horovod rendezvous",
                               .max_body = 2 * MAX_VALUE_BYTES,
                               .allowed_methods = EVHTTP_REQ_GET | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE,
                               .handler = handle,
                               .arg = r};
    r->http = tony_http_server_new(base, &o);
    if (tony_http_server_listen(r->http, host, 0, &r->port, err)) {
        tony_http_server_free(r->http);
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
}

void am_rendezvous_free(am_rendezvous *r) {
    if (!r) return;
    while (r->len) drop(r, 0);
    free(r->items);
    json_decref(r->scope_sizes);
    json_decref(r->finished);
    tony_http_server_free(r->http);
    tony_host_check_free(&r->hosts);
    free(r);
}
