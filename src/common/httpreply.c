/* The answers every HTTP server of tony gives alike (httpreply.h), so that
 * the coordinator's API and the portal cannot drift apart in status lines,
 * caching or what a bad request's error looks like. */
#include "common/httpreply.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "common/amapi.h"
#include "common/strv.h"

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
    evhttp_send_reply(req, code, tony_http_reason(code), buf);
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
    evhttp_send_reply(req, code, tony_http_reason(code), buf);
    evbuffer_free(buf);
}
