/* Token storage and the encodings around it: WritableUtils VLongs, the two
 * HDTS formats, and base64 for SASL user names and RM REST credentials. Every
 * length read from a file is checked against what is left before use. */
#include "backend/yarn/tokens.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "common/fs.h"
#include "hadoop_rpc.pb-c.h"

static void *memdup_or_empty(const void *p, size_t n) {
    unsigned char *r = tony_xmalloc(n ? n : 1);
    if (n) memcpy(r, p, n);
    return r;
}

yarn_token *yarn_token_new(const void *identifier, size_t identifier_len, const void *password, size_t password_len,
                           const char *kind, const char *service) {
    yarn_token *t = tony_xcalloc(1, sizeof *t);
    t->identifier = memdup_or_empty(identifier, identifier_len);
    t->identifier_len = identifier_len;
    t->password = memdup_or_empty(password, password_len);
    t->password_len = password_len;
    t->kind = tony_strdup(kind ? kind : "");
    t->service = tony_strdup(service ? service : "");
    return t;
}

yarn_token *yarn_token_dup(const yarn_token *t) {
    if (!t) return NULL;
    return yarn_token_new(t->identifier, t->identifier_len, t->password, t->password_len, t->kind, t->service);
}

void yarn_token_free(yarn_token *t) {
    if (!t) return;
    free(t->identifier);
    free(t->password);
    free(t->kind);
    free(t->service);
    free(t);
}

yarn_credentials *yarn_credentials_new(void) { return tony_xcalloc(1, sizeof(yarn_credentials)); }

void yarn_credentials_free(yarn_credentials *c) {
    if (!c) return;
    for (size_t i = 0; i < c->n_tokens; i++) {
        free(c->tokens[i].alias);
        yarn_token_free(c->tokens[i].token);
    }
    for (size_t i = 0; i < c->n_secrets; i++) {
        free(c->secrets[i].alias);
        free(c->secrets[i].data);
    }
    free(c->tokens);
    free(c->secrets);
    free(c);
}

void yarn_credentials_add_token(yarn_credentials *c, const char *alias, const yarn_token *t) {
    c->tokens = tony_xrealloc(c->tokens, (c->n_tokens + 1) * sizeof *c->tokens);
    c->tokens[c->n_tokens].alias = tony_strdup(alias ? alias : "");
    c->tokens[c->n_tokens].token = yarn_token_dup(t);
    c->n_tokens++;
}

void yarn_credentials_add_secret(yarn_credentials *c, const char *alias, const void *data, size_t len) {
    c->secrets = tony_xrealloc(c->secrets, (c->n_secrets + 1) * sizeof *c->secrets);
    c->secrets[c->n_secrets].alias = tony_strdup(alias ? alias : "");
    c->secrets[c->n_secrets].data = memdup_or_empty(data, len);
    c->secrets[c->n_secrets].len = len;
    c->n_secrets++;
}

const yarn_token *yarn_credentials_find_kind(const yarn_credentials *c, const char *kind) {
    for (size_t i = 0; c && i < c->n_tokens; i++)
        if (strcmp(c->tokens[i].token->kind, kind) == 0) return c->tokens[i].token;
    return NULL;
}

void yarn_credentials_set_token(yarn_credentials *c, const char *alias, const yarn_token *t) {
    for (size_t i = 0; i < c->n_tokens; i++)
        if (strcmp(c->tokens[i].alias, alias ? alias : "") == 0) {
            yarn_token_free(c->tokens[i].token);
            c->tokens[i].token = yarn_token_dup(t);
            return;
        }
    yarn_credentials_add_token(c, alias, t);
}

const yarn_secret *yarn_credentials_find_secret(const yarn_credentials *c, const char *alias) {
    for (size_t i = 0; c && i < c->n_secrets; i++)
        if (strcmp(c->secrets[i].alias, alias) == 0) return &c->secrets[i];
    return NULL;
}

/* --- WritableUtils VLong: values -112..127 are one byte; otherwise a marker
 * byte says the sign and how many big-endian bytes follow (negatives are
 * stored one's-complemented so they stay short). */

void yarn_vlong_write(tony_buf *out, int64_t v) {
    if (v >= -112 && v <= 127) {
        char b = (char)(int8_t)v;
        tony_buf_append(out, &b, 1);
        return;
    }
    bool neg = v < 0;
    uint64_t u = neg ? ~(uint64_t)v : (uint64_t)v;
    int n = 0;
    for (uint64_t t = u; t; t >>= 8) n++;
    char marker = (char)(int8_t)(neg ? -120 - n : -112 - n);
    tony_buf_append(out, &marker, 1);
    for (int i = n - 1; i >= 0; i--) {
        char b = (char)((u >> (8 * i)) & 0xff);
        tony_buf_append(out, &b, 1);
    }
}

int yarn_vlong_read(const unsigned char *buf, size_t len, size_t *pos, int64_t *out) {
    if (*pos >= len) return -1;
    int8_t first = (int8_t)buf[*pos];
    if (first >= -112) {
        *out = first;
        (*pos)++;
        return 0;
    }
    bool neg = first < -120;
    size_t n = (size_t)(neg ? -120 - first : -112 - first);
    if (len - *pos - 1 < n) return -1;
    uint64_t u = 0;
    for (size_t i = 0; i < n; i++) u = (u << 8) | buf[*pos + 1 + i];
    *pos += 1 + n;
    *out = neg ? (int64_t)~u : (int64_t)u;
    return 0;
}

int yarn_vint_read(const unsigned char *buf, size_t len, size_t *pos, int32_t *out) {
    size_t p = *pos;
    int64_t v;
    if (yarn_vlong_read(buf, len, &p, &v) < 0 || v < INT32_MIN || v > INT32_MAX) return -1;
    *pos = p;
    *out = (int32_t)v;
    return 0;
}

/* --- Writable token storage (format 0) */

typedef struct reader {
    const unsigned char *buf;
    size_t len, pos;
    const char *what;
    tony_error *err;
} reader;

static int rd_fail(reader *r, const char *field) {
    return tony_err(r->err, "%s: bad token storage at byte %zu (%s is truncated or corrupt); regenerate the token file",
                    r->what, r->pos, field);
}

/* A VInt length that must fit in what is left. */
static int rd_len(reader *r, const char *field, size_t *n) {
    int32_t v;
    if (yarn_vint_read(r->buf, r->len, &r->pos, &v) < 0 || v < 0 || (size_t)v > r->len - r->pos)
        return rd_fail(r, field);
    *n = (size_t)v;
    return 0;
}

static int rd_bytes(reader *r, const char *field, unsigned char **data, size_t *n) {
    if (rd_len(r, field, n) < 0) return -1;
    *data = memdup_or_empty(r->buf + r->pos, *n);
    r->pos += *n;
    return 0;
}

static int rd_text(reader *r, const char *field, char **s) {
    size_t n = 0;
    if (rd_len(r, field, &n) < 0) return -1;
    *s = strndup((const char *)r->buf + r->pos, n);
    r->pos += n;
    return 0;
}

static int rd_token(reader *r, yarn_token **out) {
    yarn_token *t = tony_xcalloc(1, sizeof *t);
    if (rd_bytes(r, "token identifier", &t->identifier, &t->identifier_len) < 0 ||
        rd_bytes(r, "token password", &t->password, &t->password_len) < 0 || rd_text(r, "token kind", &t->kind) < 0 ||
        rd_text(r, "token service", &t->service) < 0) {
        yarn_token_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

static int parse_writable(reader *r, yarn_credentials *c) {
    size_t n = 0;
    if (rd_len(r, "token count", &n) < 0) return -1;
    for (size_t i = 0; i < n; i++) {
        char *alias = NULL;
        yarn_token *t = NULL;
        if (rd_text(r, "token alias", &alias) < 0) return -1;
        if (rd_token(r, &t) < 0) {
            free(alias);
            return -1;
        }
        c->tokens = tony_xrealloc(c->tokens, (c->n_tokens + 1) * sizeof *c->tokens);
        c->tokens[c->n_tokens++] = (yarn_cred_token){alias, t};
    }
    if (rd_len(r, "secret count", &n) < 0) return -1;
    for (size_t i = 0; i < n; i++) {
        yarn_secret s = {0};
        if (rd_text(r, "secret alias", &s.alias) < 0) return -1;
        if (rd_bytes(r, "secret value", &s.data, &s.len) < 0) {
            free(s.alias);
            return -1;
        }
        c->secrets = tony_xrealloc(c->secrets, (c->n_secrets + 1) * sizeof *c->secrets);
        c->secrets[c->n_secrets++] = s;
    }
    if (r->pos != r->len) return rd_fail(r, "trailing data");
    return 0;
}

int yarn_token_from_url_string(const char *s, yarn_token **out, tony_error *err) {
    tony_buf b = {0};
    *out = NULL;
    int rc = -1;
    if (tony_base64_decode(s, strlen(s), &b) < 0) {
        tony_err(err, "a delegation token's URL string is not base64");
    } else {
        reader r = {(const unsigned char *)b.data, b.len, 0, "a delegation token's URL string", err};
        rc = rd_token(&r, out);
        if (rc == 0 && r.pos != r.len) {
            rc = rd_fail(&r, "trailing data");
            yarn_token_free(*out);
            *out = NULL;
        }
    }
    tony_buf_free(&b);
    return rc;
}

/* The identifier of a delegation token (AbstractDelegationTokenIdentifier's
 * Writable form): a version byte, owner, renewer and real user as Texts,
 * then issueDate and maxDate as VLongs (ms), then numbers we do not need. */
int yarn_delegation_token_dates(const yarn_token *t, int64_t *issue_ms, int64_t *max_ms) {
    reader r = {t->identifier, t->identifier_len, 1, "", NULL};
    tony_error ignored;
    r.err = &ignored;
    size_t n = 0;
    if (t->identifier_len < 1) return -1;
    for (int i = 0; i < 3; i++) {
        if (rd_len(&r, "text", &n) < 0) return -1;
        r.pos += n;
    }
    if (yarn_vlong_read(r.buf, r.len, &r.pos, issue_ms) < 0 || yarn_vlong_read(r.buf, r.len, &r.pos, max_ms) < 0)
        return -1;
    return *issue_ms > 0 && *max_ms >= *issue_ms ? 0 : -1;
}

/* --- protobuf token storage (format 1): one varint-delimited message */

static int parse_protobuf(reader *r, yarn_credentials *c) {
    uint64_t n = 0;
    int shift = 0;
    for (;;) {
        if (r->pos >= r->len || shift > 63) return rd_fail(r, "message length");
        unsigned char b = r->buf[r->pos++];
        n |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) break;
    }
    if (n != r->len - r->pos) return rd_fail(r, "message length");
    Hadoop__Common__CredentialsProto *m = hadoop__common__credentials_proto__unpack(NULL, n, r->buf + r->pos);
    if (!m) return rd_fail(r, "protobuf message");
    for (size_t i = 0; i < m->n_tokens; i++) {
        Hadoop__Common__TokenProto *t = m->tokens[i]->token;
        if (!t) continue; /* an alias without a token carries nothing we can use */
        yarn_token *tok = yarn_token_new(t->identifier.data, t->identifier.len, t->password.data, t->password.len,
                                         t->kind, t->service);
        yarn_credentials_add_token(c, m->tokens[i]->alias, tok);
        yarn_token_free(tok);
    }
    for (size_t i = 0; i < m->n_secrets; i++) {
        Hadoop__Common__CredentialsKVProto *kv = m->secrets[i];
        yarn_credentials_add_secret(c, kv->alias, kv->secret.data, kv->has_secret ? kv->secret.len : 0);
    }
    hadoop__common__credentials_proto__free_unpacked(m, NULL);
    r->pos = r->len;
    return 0;
}

int yarn_credentials_parse(const void *buf, size_t len, const char *what, yarn_credentials **out, tony_error *err) {
    *out = NULL;
    if (len < 5 || memcmp(buf, "HDTS", 4) != 0)
        return tony_err(err, "%s is not a Hadoop token storage (no HDTS header); it should be the file YARN names in "
                        "HADOOP_TOKEN_FILE_LOCATION", what);
    reader r = {buf, len, 5, what, err};
    yarn_credentials *c = yarn_credentials_new();
    int format = ((const unsigned char *)buf)[4], rc;
    if (format == 0)
        rc = parse_writable(&r, c);
    else if (format == 1)
        rc = parse_protobuf(&r, c);
    else
        rc = tony_err(err, "%s: unknown token storage format %d (this reader knows 0 and 1)", what, format);
    if (rc < 0) {
        yarn_credentials_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

int yarn_credentials_read_file(const char *path, yarn_credentials **out, tony_error *err) {
    char *data;
    size_t len;
    /* a few tokens: a FIFO or a huge file is a mistake, not read */
    if (tony_read_regular_file(path, 64u << 20, "a token file", &data, &len, err) < 0)
        return tony_err_wrap(err, "reading the token file");
    int rc = yarn_credentials_parse(data, len, path, out, err);
    free(data);
    return rc;
}

static void write_bytes(tony_buf *out, const void *p, size_t n) {
    yarn_vlong_write(out, (int64_t)n);
    tony_buf_append(out, p, n);
}

static void write_text(tony_buf *out, const char *s) { write_bytes(out, s, strlen(s)); }

void yarn_token_write(const yarn_token *t, tony_buf *out) {
    write_bytes(out, t->identifier, t->identifier_len);
    write_bytes(out, t->password, t->password_len);
    write_text(out, t->kind);
    write_text(out, t->service);
}

char *yarn_token_url_string(const yarn_token *t) {
    tony_buf b = {0};
    yarn_token_write(t, &b);
    char *s = tony_base64_encode(b.data, b.len, true);
    tony_buf_free(&b);
    return s;
}

static bool listed(const char *const *list, const char *s) {
    for (; list && *list; list++)
        if (strcmp(*list, s) == 0) return true;
    return false;
}

bool yarn_credentials_write_for_tasks(const yarn_credentials *c, const char *const *withheld, tony_buf *out) {
    yarn_credentials *tasks = yarn_credentials_new();
    for (size_t i = 0; c && i < c->n_tokens; i++)
        if (strcmp(c->tokens[i].token->kind, YARN_AMRM_TOKEN_KIND) != 0)
            yarn_credentials_add_token(tasks, c->tokens[i].alias, c->tokens[i].token);
    for (size_t i = 0; c && i < c->n_secrets; i++)
        if (!listed(withheld, c->secrets[i].alias))
            yarn_credentials_add_secret(tasks, c->secrets[i].alias, c->secrets[i].data, c->secrets[i].len);
    bool any = tasks->n_tokens > 0 || tasks->n_secrets > 0;
    if (any) yarn_credentials_write(tasks, out);
    yarn_credentials_free(tasks);
    return any;
}

void yarn_credentials_write(const yarn_credentials *c, tony_buf *out) {
    tony_buf_append(out, "HDTS\0", 5);
    yarn_vlong_write(out, (int64_t)c->n_tokens);
    for (size_t i = 0; i < c->n_tokens; i++) {
        write_text(out, c->tokens[i].alias);
        yarn_token_write(c->tokens[i].token, out);
    }
    yarn_vlong_write(out, (int64_t)c->n_secrets);
    for (size_t i = 0; i < c->n_secrets; i++) {
        write_text(out, c->secrets[i].alias);
        write_bytes(out, c->secrets[i].data, c->secrets[i].len);
    }
}
