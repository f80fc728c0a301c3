/* How the coordinator's HTTP API answers: one line of JSON or text, never
 * cached, and the shape of a log chunk, shared by the API (api.c) and the
 * log reads the backend does for it (logfetch.c). */
#include "am/reply.h"

#include <stdlib.h>
#include <string.h>

#include "common/amapi.h"
#include "common/httpreply.h"
#include "common/strv.h"

/* The coordinator's names for the answers every server of tony gives alike
 * (common/httpreply.h). */
void am_reply_json_text(struct evhttp_request *req, int code, const char *s) {
    tony_http_reply_line(req, code, "application/json", s);
}

void am_reply_json(struct evhttp_request *req, int code, json_t *body) { tony_http_reply_json(req, code, body); }

void am_reply_text(struct evhttp_request *req, int code, const char *text) {
    tony_http_reply_line(req, code, "text/plain; charset=utf-8", text);
}

void am_reply_error(struct evhttp_request *req, int code, const char *msg) { tony_http_reply_error(req, code, msg); }

json_t *am_log_chunk_json(const char *role, int index, int attempt, const char *stream, long long offset,
                          const char *data, size_t n, long long size, bool exists) {
    /* Output cut mid-character waits for its next bytes; what is not
     * UTF-8 at all is shown as U+FFFD rather than refused. */
    size_t used;
    char *text = tony_utf8_sanitize(data, n, &used);
    json_t *o = json_pack("{s:s,s:i,s:i,s:s,s:I,s:I,s:I,s:s}", "role", role, "index", index, "attempt", attempt,
                          AM_API_LOG_STREAM, stream, AM_API_LOG_OFFSET, offset, AM_API_LOG_NEXT, offset + (long long)used,
                          AM_API_LOG_SIZE, size, AM_API_LOG_DATA,
                          text);
    json_object_set_new(o, "exists", json_boolean(exists));
    free(text);
    return o;
}

