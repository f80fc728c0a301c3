/* How the coordinator's HTTP API answers: one line of JSON or text, never
 * cached, and the shape of a log chunk, shared by the API (api.c) and the
 * log reads the backend does for it (logfetch.c). */
#include "am/reply.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "common/amapi.h"
#include "common/strv.h"

static const char *reason_phrase(int code) {
    switch (code) {
    case 200: return "OK";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 421: return "Misdirected Request";
    default: return "Error";
    }
}

/* One line of text (JSON or words) as the whole answer, never cached. */
static void send_line(struct evhttp_request *req, int code, const char *type, const char *s) {
    struct evbuffer *buf = evbuffer_new();
    evbuffer_add(buf, s, strlen(s));
    evbuffer_add(buf, "\n", 1);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-store");
    evhttp_send_reply(req, code, reason_phrase(code), buf);
    evbuffer_free(buf);
}

void am_reply_json_text(struct evhttp_request *req, int code, const char *s) {
    send_line(req, code, "application/json", s);
}

void am_reply_json(struct evhttp_request *req, int code, json_t *body) {
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    /* No body (a json_pack that failed) is a bug of ours; the request is
     * still answered, never strlen(NULL). */
    if (!s) am_reply_json_text(req, 500, "{\"" AM_API_ERROR "\":\"the coordinator could not encode its answer\"}");
    else am_reply_json_text(req, code, s);
    free(s);
}

void am_reply_text(struct evhttp_request *req, int code, const char *text) {
    send_line(req, code, "text/plain; charset=utf-8", text);
}

void am_reply_error(struct evhttp_request *req, int code, const char *msg) {
    /* Messages quote what the client sent (a Host header, a path), which
     * need not be UTF-8: json_pack would refuse it (found by
     * tests/fuzz/fuzz_api.c: "Host: \xce" took the coordinator down). */
    size_t used;
    char *text = tony_utf8_sanitize(msg, strlen(msg), &used);
    am_reply_json(req, code, json_pack("{s:s}", AM_API_ERROR, text));
    free(text);
}

json_t *am_log_chunk_json(const char *role, int index, int attempt, const char *stream, long long offset,
                          const char *data, size_t n, long long size, bool exists) {
    /* Output cut mid-character waits for its next bytes; what is not
     * UTF-8 at all is shown as U+FFFD rather than refused. */
    size_t used;
    char *text = tony_utf8_sanitize(data, n, &used);
    json_t *o = json_pack("{s:s,s:i,s:i,s:s,s:I,s:I,s:I,s:s}", "role", role, "index", index, "attempt", attempt,
                          "stream", stream, "offset", offset, "next", offset + (long long)used, "size", size, "data",
                          text);
    json_object_set_new(o, "exists", json_boolean(exists));
    free(text);
    return o;
}

