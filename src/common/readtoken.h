/* Reads behind a token: the job's read token (derived from its control
 * secret, so that the coordinator and every client of the owner can compute
 * it without a channel of its own, and that it reveals nothing of the
 * secret) and the check a server makes of a GET: a header, a cookie it set,
 * or a link carrying ?token= once (common/amapi.h names them). */
#ifndef TONY_READTOKEN_H
#define TONY_READTOKEN_H

#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>

/* hex(HMAC-SHA256(secret, "tony read token v1")); malloc'ed. */
char *tony_read_token(const char *secret);
/* Whether s (len bytes) is token, in time that does not depend on where
 * they differ. */
bool tony_read_token_equal(const char *token, const char *s, size_t len);

typedef enum {
    TONY_READ_ALLOWED,  /* the request carries the token: serve it */
    TONY_READ_ANSWERED, /* a link with ?token=: answered with the cookie and a redirect */
    TONY_READ_REFUSED,  /* no valid token: the caller answers (403/401, saying what to do) */
} tony_read_verdict;

/* How a server takes its token: the cookie it sets (per server: cookies are
 * not told apart by port) and whether a valid ?token= on a page path sets it
 * and redirects (redirect_path, e.g. "/" and "/ui/") or is taken as is. */
typedef struct tony_read_gate {
    const char *token;
    const char *cookie; /* the cookie's name */
    bool (*redirects)(const char *path); /* NULL: every path redirects */
} tony_read_gate;

/* query (may be NULL) without AM_API_TOKEN_PARAM, re-encoded: "" when
 * nothing else is left. What a redirect passes on. malloc'ed. */
char *tony_read_query_without_token(const char *query);

/* Checks req (path and its parsed query q) against the gate. A redirect
 * goes to path (relative: a reverse proxy's prefix is kept) with the other
 * query parameters as they were. */
tony_read_verdict tony_read_check(const tony_read_gate *g, struct evhttp_request *req, const char *path,
                                  const struct evkeyvalq *q);

#endif
