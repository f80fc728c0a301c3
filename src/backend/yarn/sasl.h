/* The client half of SASL DIGEST-MD5 (RFC 2831) as Hadoop's TOKEN method
 * uses it: algorithm=md5-sess, user name and password are the base64 of a
 * token's identifier and password, digest-uri "/default"; qop auth, or,
 * where the cluster's hadoop.rpc.protection asks for it, auth-int
 * (integrity) or auth-conf with the 3des cipher (privacy), whose security
 * layer is sasl_layer.h. Pure functions; yarn_ipc drives them over the
 * connection. */
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
    char *cipher;    /* comma list offered with auth-conf, e.g. "3des,rc4,des" */
} yarn_digest_challenge;

/* The quality of protection chosen: the strongest the server offers. */
typedef enum { YARN_QOP_AUTH, YARN_QOP_INT, YARN_QOP_CONF } yarn_qop;

/* What the security layer after the handshake needs. */
typedef struct yarn_sasl_negotiated {
    yarn_qop qop;
    unsigned char ha1[16]; /* H(A1), raw: the keys derive from it */
} yarn_sasl_negotiated;

/* Parses `k=v,k="v",...`. Fails clearly when the challenge is malformed,
 * lacks a nonce, is not md5-sess, or offers no qop tony speaks (auth,
 * auth-int, auth-conf with the 3des cipher), naming hadoop.rpc.protection. */
int yarn_sasl_parse_challenge(const void *buf, size_t len, yarn_digest_challenge *out, tony_error *err);
void yarn_digest_challenge_free(yarn_digest_challenge *c); /* frees the fields */

/* Builds the client's digest-response for token t. cnonce NULL picks a
 * random one. *response is malloc'ed; rspauth receives the 32 hex digits the
 * server must send back in its SUCCESS token. */
int yarn_sasl_digest_response(const yarn_digest_challenge *ch, const yarn_token *t, const char *cnonce,
                              char **response, char rspauth[33], tony_error *err);
/* The same with the strongest qop the challenge offers (auth-conf > auth-int
 * > auth); *neg (if not NULL) says which, for the security layer. */
int yarn_sasl_digest_respond(const yarn_digest_challenge *ch, const yarn_token *t, const char *cnonce,
                             char **response, char rspauth[33], yarn_sasl_negotiated *neg, tony_error *err);

/* Checks the server's final token ("rspauth=<hex>") against the expected
 * value; a mismatch means the server does not know the token's password. */
int yarn_sasl_check_rspauth(const void *token, size_t len, const char rspauth[33], tony_error *err);

#endif
