/* Hadoop delegation tokens and token storage ("credentials") as the YARN AM
 * meets them: the $HADOOP_TOKEN_FILE_LOCATION file (both formats), the AMRM
 * and NM tokens used for SASL, and the Writable/base64 encodings the RM REST
 * API wants for a submission's `credentials`. */
#ifndef TONY_YARN_TOKENS_H
#define TONY_YARN_TOKENS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/strv.h"

#define YARN_AMRM_TOKEN_KIND "YARN_AM_RM_TOKEN"
#define YARN_NM_TOKEN_KIND "NMToken"

/* One token: opaque identifier and password bytes, a kind and a service. */
typedef struct yarn_token {
    unsigned char *identifier;
    size_t identifier_len;
    unsigned char *password;
    size_t password_len;
    char *kind;    /* never NULL once built by this module */
    char *service; /* "" when unset */
} yarn_token;

yarn_token *yarn_token_new(const void *identifier, size_t identifier_len, const void *password, size_t password_len,
                           const char *kind, const char *service);
yarn_token *yarn_token_dup(const yarn_token *t); /* NULL-safe */
void yarn_token_free(yarn_token *t);

typedef struct yarn_cred_token {
    char *alias;
    yarn_token *token;
} yarn_cred_token;

typedef struct yarn_secret {
    char *alias;
    unsigned char *data;
    size_t len;
} yarn_secret;

/* A token storage: tokens and secrets, each under an alias, in file order. */
typedef struct yarn_credentials {
    yarn_cred_token *tokens;
    size_t n_tokens;
    yarn_secret *secrets;
    size_t n_secrets;
} yarn_credentials;

yarn_credentials *yarn_credentials_new(void);
void yarn_credentials_free(yarn_credentials *c);
/* Both add copies. */
void yarn_credentials_add_token(yarn_credentials *c, const char *alias, const yarn_token *t);
void yarn_credentials_add_secret(yarn_credentials *c, const char *alias, const void *data, size_t len);
/* First token of that kind / secret of that alias, or NULL. */
const yarn_token *yarn_credentials_find_kind(const yarn_credentials *c, const char *kind);
const yarn_secret *yarn_credentials_find_secret(const yarn_credentials *c, const char *alias);

/* Parses a token storage ("HDTS" + format 0 Writable or 1 protobuf). what
 * names the source in errors (a path, "the submission"). */
int yarn_credentials_parse(const void *buf, size_t len, const char *what, yarn_credentials **out, tony_error *err);
int yarn_credentials_read_file(const char *path, yarn_credentials **out, tony_error *err);
/* Appends the Writable (format 0) token storage, which every Hadoop reads. */
void yarn_credentials_write(const yarn_credentials *c, tony_buf *out);
/* Appends one token in Writable form (what Token.encodeToUrlString encodes). */
void yarn_token_write(const yarn_token *t, tony_buf *out);

/* The token as Token.encodeToUrlString writes it (URL-safe base64 of its
 * Writable form, no padding): what WebHDFS's delegation= and the RM REST
 * submission's credentials take. malloc'ed. */
char *yarn_token_url_string(const yarn_token *t);
/* The kind of an HDFS delegation token. */
#define YARN_HDFS_TOKEN_KIND "HDFS_DELEGATION_TOKEN"
/* The token storage a task container gets: every token and secret of c but
 * the AMRMToken (which only the AM may use) and the secrets whose aliases
 * are in withheld (NULL-terminated; NULL: none). Appended to out in
 * Writable form; false (nothing appended) when nothing is left to give. */
bool yarn_credentials_write_for_tasks(const yarn_credentials *c, const char *const *withheld, tony_buf *out);
/* Replaces the token filed under alias (a copy), or adds it. */
void yarn_credentials_set_token(yarn_credentials *c, const char *alias, const yarn_token *t);
/* The token a URL string (yarn_token_url_string's form) encodes. */
int yarn_token_from_url_string(const char *s, yarn_token **out, tony_error *err);
/* A delegation token's issue date and maximum lifetime's end (ms since the
 * epoch), from its identifier; -1 when it is not a delegation token's. */
int yarn_delegation_token_dates(const yarn_token *t, int64_t *issue_ms, int64_t *max_ms);

/* Hadoop WritableUtils variable-length integers (not protobuf varints). */
void yarn_vlong_write(tony_buf *out, int64_t v);
/* Reads at *pos, advancing it; -1 if buf ends inside the number. */
int yarn_vlong_read(const unsigned char *buf, size_t len, size_t *pos, int64_t *out);
/* A VInt: a VLong that must fit in int32. */
int yarn_vint_read(const unsigned char *buf, size_t len, size_t *pos, int32_t *out);

/* Base64 lives in common/strv.h (tony_base64_encode). */

#endif
