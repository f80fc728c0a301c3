/* The web UI's static files (the web/ folder), compiled into the binary by
 * cmake/embed-web.cmake so the coordinator and the history portal serve
 * them from memory: a container needs nothing beside the tony binary to
 * show the page. (The am_ names date from when only the coordinator did.) */
#ifndef TONY_COMMON_WEBUI_H
#define TONY_COMMON_WEBUI_H

#include <stddef.h>

struct evhttp_request;

typedef struct am_webui_file {
    const char *name; /* "index.html", "app.js": web/'s flat names */
    const char *type; /* its Content-Type */
    const char *etag; /* quoted, from the file's SHA-1 at build time */
    const unsigned char *data;
    size_t len;
} am_webui_file;

/* The embedded file called name, or NULL: names are matched whole against
 * the table, so no request can reach anything else. */
const am_webui_file *am_webui_find(const char *name);
/* Answers a GET with f: 304 when the browser's copy is current
 * (If-None-Match), else the bytes. Browsers revalidate every load, so a new
 * binary's page is never mixed with an old cached script. */
void am_webui_reply(struct evhttp_request *req, const am_webui_file *f);

#endif
