/* Serves the embedded web UI; the bytes and types come from the generated
 * webui_files.c (see webui.h). */
#include "common/webui.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <string.h>

/* Generated at build time; ends with a zeroed entry. */
extern const am_webui_file am_webui_files[];

const am_webui_file *am_webui_find(const char *name) {
    for (const am_webui_file *f = am_webui_files; f->name; f++)
        if (strcmp(f->name, name) == 0) return f;
    return NULL;
}

void am_webui_reply(struct evhttp_request *req, const am_webui_file *f) {
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "ETag", f->etag);
    evhttp_add_header(out, "Cache-Control", "no-cache");
    evhttp_add_header(out, "X-Content-Type-Options", "nosniff");
    const char *inm = evhttp_find_header(evhttp_request_get_input_headers(req), "If-None-Match");
    if (inm && strstr(inm, f->etag)) {
        evhttp_send_reply(req, 304, "Not Modified", NULL);
        return;
    }
    evhttp_add_header(out, "Content-Type", f->type);
    struct evbuffer *buf = evbuffer_new();
    evbuffer_add_reference(buf, f->data, f->len, NULL, NULL);
    evhttp_send_reply(req, 200, "OK", buf);
    evbuffer_free(buf);
}
