/* The answers every HTTP server of tony gives alike (httpreply.h), so that
 * the coordinator's API and the portal cannot drift apart in status lines,
 * caching or what a bad request's error looks like; and the one place where
 * the coordinator's answers to signed calls are signed (apiauth.h). */
#include "common/httpreply.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "common/amapi.h"
#include "common/strv.h"

/* Marks a request whose answer is to be signed: an output header that never
 * leaves this process (send_reply takes it off), holding the nonce only. */
#define SIGN_PENDING "X-Tony-Internal-Sign-Nonce"
static tony_apiauth_key sign_key;

void tony_http_reply_sign(struct evhttp_request *req, const tony_apiauth_key *key, const char *nonce_hex) {
    sign_key = *key;
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_remove_header(out, SIGN_PENDING);
    evhttp_add_header(out, SIGN_PENDING, nonce_hex);
}

/* Every answer leaves through here: signed when its request was
 * authenticated (the status and the exact bytes of the body). */
static void send_reply(struct evhttp_request *req, int code, struct evbuffer *buf) {
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    const char *nonce = evhttp_find_header(out, SIGN_PENDING);
    if (nonce) {
        char sig[80];
        size_t n = evbuffer_get_length(buf);
        tony_apiauth_sign_reply(&sign_key, nonce, code, n ? evbuffer_pullup(buf, -1) : NULL, n, sig);
        evhttp_remove_header(out, SIGN_PENDING);
        evhttp_remove_header(out, TONY_APIAUTH_REPLY_HEADER);
        evhttp_add_header(out, TONY_APIAUTH_REPLY_HEADER, sig);
    }
    evhttp_send_reply(req, code, tony_http_reason(code), buf);
}

const char *tony_http_reason(int code) {
    switch (code) {
    case 200: return "OK";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 421: return "Misdirected Request";
    default: return "Error";
    }
}

void tony_http_reply_line(struct evhttp_request *req, int code, const char *type, const char *s) {
    struct evbuffer *buf = evbuffer_new();
    evbuffer_add(buf, s, strlen(s));
    evbuffer_add(buf, "\n", 1);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-store");
    send_reply(req, code, buf);
    evbuffer_free(buf);
}

void tony_http_reply_json(struct evhttp_request *req, int code, json_t *body) {
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!s) tony_http_reply_line(req, 500, "application/json", "{\"" AM_API_ERROR "\":\"the server could not encode its answer\"}");
    else tony_http_reply_line(req, code, "application/json", s);
    free(s);
}

void tony_http_reply_error(struct evhttp_request *req, int code, const char *msg) {
    /* json_pack refuses what is not UTF-8 (found by tests/fuzz/fuzz_api.c:
     * "Host: \xce" took the coordinator down). */
    size_t used;
    char *text = tony_utf8_sanitize(msg, strlen(msg), &used);
    tony_http_reply_json(req, code, json_pack("{s:s}", AM_API_ERROR, text));
    free(text);
}

void tony_http_reply_bytes(struct evhttp_request *req, int code, const void *body, size_t len) {
    struct evbuffer *buf = evbuffer_new();
    if (len) evbuffer_add(buf, body, len);
    send_reply(req, code, buf);
    evbuffer_free(buf);
}
