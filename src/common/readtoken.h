/* Reads behind a token: the job's read token (derived from its control
 * secret, so that the coordinator and every client of the owner can compute
 * it without a channel of its own, and that it reveals nothing of the
 * secret) and the check a server makes of a GET: a header, or ?token= in
 * the query (common/amapi.h names them). No cookie carries it: browsers
 * send a host's cookies to every port of that host, so a cookie would go
 * to any other user's server on this machine. A page keeps it per origin
 * instead: a link with ?token= to one of the page's files is sent on to
 * the file with the token in the URL's fragment, which the page's script
 * moves into sessionStorage and sends as the header (docs/security.md). */
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
    TONY_READ_ALLOWED,  /* the request carries the token, or asks for one of the page's files: serve it */
    TONY_READ_ANSWERED, /* a link to the page with ?token=: answered with a redirect that moves it to the fragment */
    TONY_READ_REFUSED,  /* no valid token: the caller answers (403/401, saying what to do) */
} tony_read_verdict;

/* How a server takes its token: the paths of its page's static files
 * (the same for every job, they hold nothing of it: served to anyone; a
 * link to them with ?token= is redirected), NULL when it has none. */
typedef struct tony_read_gate {
    const char *token;
    bool (*page)(const char *path);
} tony_read_gate;

/* query (may be NULL) without AM_API_TOKEN_PARAM, re-encoded: "" when
 * nothing else is left. What a redirect passes on. malloc'ed. */
char *tony_read_query_without_token(const char *query);

/* Whether req carries token in AM_API_TOKEN_HEADER or as a Bearer
 * credential: a caller that holds it (a browser adds neither header to
 * another site's request by itself). */
bool tony_read_header_has(struct evhttp_request *req, const char *token);
/* Whether req's Cookie headers hold name=value. */
bool tony_read_cookie_has(struct evhttp_request *req, const char *name, const char *value);

/* The redirect of a link with the token (path relative: a reverse proxy's
 * prefix is kept) to to_path (relative to path's folder: "./<its last
 * segment>" when NULL) with q's other parameters and, unless fragment is
 * NULL, "#fragment"; and cookie, when not NULL, as its Set-Cookie. */
void tony_read_redirect(struct evhttp_request *req, const char *path, const char *to_path, const struct evkeyvalq *q,
                        const char *fragment, const char *cookie);

/* Checks req (path and its parsed query q) against the gate. */
tony_read_verdict tony_read_check(const tony_read_gate *g, struct evhttp_request *req, const char *path,
                                  const struct evkeyvalq *q);

#endif
