/* A small blocking HTTP/1.1 client (libcurl) for the executor and the CLI,
 * which talk JSON to the coordinator's API. The coordinator itself never
 * blocks and does not use this. */
#ifndef TONY_HTTP_H
#define TONY_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

typedef struct tony_http_response {
    long status; /* HTTP status, 0 if no response */
    char *body;  /* NUL-terminated, never NULL after success */
    size_t len;  /* bytes in body (it may hold NULs of its own) */
    /* A call with the job's secret got an answer that the job's coordinator
     * did not sign (the call returned -1; status and body are gone). */
    bool unsigned_answer;
} tony_http_response;

/* The CA bundle to use instead of libcurl's built-in one (builtin) when that
 * is missing here: the first readable of others (NULL-terminated), else
 * NULL (keep libcurl's). Exposed for its unit test. */
const char *tony_http_pick_ca_file(const char *builtin, const char *const *others);

/* method "GET"/"POST"; body may be NULL. Returns -1 when no HTTP response
 * came (refused, timeout), naming the URL.
 * With the job's secret (else NULL), the call is one to the job's
 * coordinator: the secret never travels, the request is signed with a key
 * derived from it (common/apiauth.h), and an answer that is not signed for
 * this very request is refused (-1, unsigned_answer set): whoever answered
 * does not hold the secret (a process that took over a dead coordinator's
 * port). A signed refusal for the caller's clock (or a timestamp under its
 * floor) sets this process's offset to the coordinator's time and the call
 * is made once more. (The secret reaches a task's executor in
 * TASKENV_SECRET, common/taskenv.h, unless its backend delivers it
 * otherwise: tony_backend_task_secret.) */
int tony_http_call(const char *method, const char *url, const char *secret, const char *body, long timeout_ms,
                   tony_http_response *resp, tony_error *err);
/* The same, proving who we are with SPNEGO (Kerberos, this process's
 * ticket cache: KRB5CCNAME) as Hadoop's secure web endpoints want. */
int tony_http_call_negotiate(const char *method, const char *url, const char *body, long timeout_ms,
                             tony_http_response *resp, tony_error *err);
/* GET url of a coordinator's API (or a portal's) with the job's read token
 * (common/readtoken.h) in AM_API_TOKEN_HEADER; token may be NULL. */
int tony_http_read(const char *url, const char *read_token, long timeout_ms, tony_http_response *resp,
                   tony_error *err);
/* Logs in to a server with SPNEGO (GET url) and returns the session
 * cookie it set, as "name=value" for a Cookie header (Hadoop's web servers
 * set hadoop.auth), so that later requests need no Kerberos exchange. An
 * error unless the answer is 200 with that cookie. */
int tony_http_spnego_cookie(const char *url, const char *name, long timeout_ms, char **cookie, tony_error *err);
/* PUTs the bytes of a local file (application/octet-stream), e.g. to a
 * WebHDFS DataNode. A transfer that moves nothing for stall_s seconds fails;
 * max_s > 0 also bounds the whole transfer (0: none, for large files). */
int tony_http_put_file(const char *url, const char *path, long stall_s, long max_s, tony_http_response *resp,
                       tony_error *err);
/* GETs url into the file at path (overwritten); a non-200 answer is an
 * error with the server's words, and leaves no file. *status: the HTTP
 * status (0 without an answer). */
int tony_http_get_file(const char *url, const char *path, long stall_s, long *status, tony_error *err);
void tony_http_response_free(tony_http_response *r);

#endif
