/* Answers of the coordinator's HTTP API (api.c, logfetch.c): JSON or text,
 * one line, never cached. */
#ifndef TONY_AM_REPLY_H
#define TONY_AM_REPLY_H

#include <event2/http.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Answers req with body (reference stolen). */
void am_reply_json(struct evhttp_request *req, int code, json_t *body);
/* Answers req with s, JSON text already. */
void am_reply_json_text(struct evhttp_request *req, int code, const char *s);
void am_reply_text(struct evhttp_request *req, int code, const char *text);
/* {"error": msg} */
void am_reply_error(struct evhttp_request *req, int code, const char *msg);
/* One answer of GET .../log: n bytes of data at offset of a file of size. */
json_t *am_log_chunk_json(const char *role, int index, int attempt, const char *stream, long long offset,
                          const char *data, size_t n, long long size, bool exists);

#endif
