/* The client half of SASL DIGEST-MD5 (RFC 2831) as Hadoop's TOKEN method
 * uses it: qop=auth, algorithm=md5-sess, user name and password are the
 * base64 of a token's identifier and password, digest-uri "/default". Pure
 * functions; yarn_ipc drives them over the connection. */
#ifndef TONY_YARN_SASL_H
#define TONY_YARN_SASL_H

#include <stddef.h>

#include "backend/yarn/tokens.h"
#include "common/error.h"

#define YARN_SASL_DIGEST_URI "/default"

/* The fields of a server challenge we use (NULL when absent). */
typedef struct yarn_digest_challenge {
    char *realm;     /* first realm offered */
    char *nonce;
    char *qop;       /* comma list, e.g. "auth" or "auth,auth-int" */
    char *algorithm; /* must be md5-sess */
    char *charset;
} yarn_digest_challenge;

/* Parses `k=v,k="v",...`. Fails clearly when the challenge is malformed,
 * lacks a nonce, is not md5-sess, or does not offer qop "auth" (a cluster
 * with hadoop.rpc.protection=integrity|privacy). */
int yarn_sasl_parse_challenge(const void *buf, size_t len, yarn_digest_challenge *out, tony_error *err);
void yarn_digest_challenge_free(yarn_digest_challenge *c); /* frees the fields */

/* Builds the client's digest-response for token t. cnonce NULL picks a
 * random one. *response is malloc'ed; rspauth receives the 32 hex digits the
 * server must send back in its SUCCESS token. */
int yarn_sasl_digest_response(const yarn_digest_challenge *ch, const yarn_token *t, const char *cnonce,
                              char **response, char rspauth[33], tony_error *err);

/* Checks the server's final token ("rspauth=<hex>") against the expected
 * value; a mismatch means the server does not know the token's password. */
int yarn_sasl_check_rspauth(const void *token, size_t len, const char rspauth[33], tony_error *err);

#endif
