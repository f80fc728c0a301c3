/* How tony's HTTP servers answer (the coordinator's API, its rendezvous
 * store, the history portal): the status line's reason phrase, one line of
 * JSON or text as the whole answer, never cached, and {"error": msg} with
 * what the client sent made UTF-8 first. */
#ifndef TONY_HTTPREPLY_H
#define TONY_HTTPREPLY_H

#include <event2/http.h>
#include <jansson.h>
#include <stddef.h>

#include "common/apiauth.h"

/* "OK", "Not Found", ...; "Error" for a code without one here. */
const char *tony_http_reason(int code);
/* s and a newline as the answer, of Content-Type type, never cached. */
void tony_http_reply_line(struct evhttp_request *req, int code, const char *type, const char *s);
/* body as one line of JSON (reference stolen); a body that cannot be
 * encoded (a json_pack that failed) is a 500 rather than a crash. */
void tony_http_reply_json(struct evhttp_request *req, int code, json_t *body);
/* {"error": msg}; msg may quote the request (a Host header, a path),
 * which need not be UTF-8. */
void tony_http_reply_error(struct evhttp_request *req, int code, const char *msg);
/* len bytes of body as they are (no type, no newline). */
void tony_http_reply_bytes(struct evhttp_request *req, int code, const void *body, size_t len);

/* The answer to req, whenever it is sent through the functions above (a
 * long poll's included), is signed for the request of nonce_hex with key
 * (common/apiauth.h): its TONY_APIAUTH_REPLY_HEADER proves the job's
 * coordinator answered that request. A process serves one job: the key
 * is the last one given. */
void tony_http_reply_sign(struct evhttp_request *req, const tony_apiauth_key *key, const char *nonce_hex);

#endif
