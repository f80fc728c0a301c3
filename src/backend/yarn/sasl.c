/* DIGEST-MD5 for Hadoop tokens: challenge parsing, the response and rspauth
 * computations (RFC 2831 with md5-sess; qop auth, auth-int or auth-conf
 * with 3des, as the cluster's hadoop.rpc.protection asks). */
#include "backend/yarn/sasl.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strv.h"

void yarn_digest_challenge_free(yarn_digest_challenge *c) {
    if (!c) return;
    free(c->realm);
    free(c->nonce);
    free(c->qop);
    free(c->algorithm);
    free(c->charset);
    free(c->cipher);
    memset(c, 0, sizeof *c);
}

static void set_once(char **slot, tony_buf *v) {
    if (*slot) return; /* several realms may be offered: the first is the default */
    *slot = tony_strdup(v->data ? v->data : "");
}

static bool offers(const char *csv, const char *what) {
    tony_strv v = {0};
    tony_split_csv(csv, &v);
    bool yes = tony_strv_contains(&v, what);
    tony_strv_free(&v);
    return yes;
}

/* The strongest qop offered that tony speaks; -1 when none. */
static int choose_qop(const yarn_digest_challenge *ch) {
    if (!ch->qop) return YARN_QOP_AUTH; /* RFC 2831: absent qop means "auth" */
    if (offers(ch->qop, "auth-conf") && ch->cipher && offers(ch->cipher, "3des")) return YARN_QOP_CONF;
    if (offers(ch->qop, "auth-int")) return YARN_QOP_INT;
    if (offers(ch->qop, "auth")) return YARN_QOP_AUTH;
    return -1;
}

static const char *qop_name(yarn_qop q) { return q == YARN_QOP_CONF ? "auth-conf" : q == YARN_QOP_INT ? "auth-int" : "auth"; }

int yarn_sasl_parse_challenge(const void *buf, size_t len, yarn_digest_challenge *out, tony_error *err) {
    memset(out, 0, sizeof *out);
    /* An empty challenge comes as NULL from protobuf-c: NULL + 0 is UB. */
    const char *s = buf ? buf : "", *end = s + (buf ? len : 0);
    while (s < end) {
        while (s < end && (*s == ',' || *s == ' ' || *s == '\t')) s++;
        if (s >= end) break;
        const char *k = s;
        while (s < end && *s != '=' && *s != ',') s++;
        if (s >= end || *s != '=') goto malformed;
        size_t klen = (size_t)(s - k);
        while (klen && (k[klen - 1] == ' ' || k[klen - 1] == '\t')) klen--;
        s++;
        tony_buf v = {0};
        tony_buf_append(&v, "", 0);
        if (s < end && *s == '"') {
            s++;
            while (s < end && *s != '"') {
                if (*s == '\\' && s + 1 < end) s++;
                tony_buf_append(&v, s, 1);
                s++;
            }
            if (s >= end) {
                tony_buf_free(&v);
                goto malformed;
            }
            s++;
        } else {
            const char *vs = s;
            while (s < end && *s != ',') s++;
            tony_buf_append(&v, vs, (size_t)(s - vs));
            tony_trim(v.data);
        }
#define KEY(name) (klen == strlen(name) && strncmp(k, name, klen) == 0)
        if (KEY("realm")) set_once(&out->realm, &v);
        else if (KEY("nonce")) set_once(&out->nonce, &v);
        else if (KEY("qop")) set_once(&out->qop, &v);
        else if (KEY("algorithm")) set_once(&out->algorithm, &v);
        else if (KEY("charset")) set_once(&out->charset, &v);
        else if (KEY("cipher")) set_once(&out->cipher, &v);
#undef KEY
        tony_buf_free(&v);
    }
    if (!out->nonce || !*out->nonce) {
        yarn_digest_challenge_free(out);
        return tony_err(err, "the server's DIGEST-MD5 challenge has no nonce");
    }
    if (!out->algorithm || strcmp(out->algorithm, "md5-sess") != 0) {
        tony_err(err, "the server's DIGEST-MD5 challenge asks for algorithm '%s'; only md5-sess is supported",
                 out->algorithm ? out->algorithm : "(none)");
        yarn_digest_challenge_free(out);
        return -1;
    }
    if (choose_qop(out) < 0) {
        tony_err(err, "the server offers SASL qop '%s'%s%s%s: tony speaks auth, auth-int and auth-conf with the 3des "
                 "cipher (hadoop.rpc.protection authentication, integrity and privacy)", out->qop,
                 out->cipher ? " with ciphers '" : "", out->cipher ? out->cipher : "", out->cipher ? "'" : "");
        yarn_digest_challenge_free(out);
        return -1;
    }
    return 0;
malformed:
    yarn_digest_challenge_free(out);
    return tony_err(err, "the server's DIGEST-MD5 challenge is malformed near byte %zu",
                    (size_t)(s - (const char *)buf));
}

static void md5(const void *data, size_t len, unsigned char out[16]) { EVP_Digest(data, len, out, NULL, EVP_md5(), NULL); }

static void hex16(const unsigned char in[16], char out[33]) {
    for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", in[i]);
}

/* HEX(KD(HEX(H(A1)), nonce:nc:cnonce:qop:HEX(H(A2)))) with A2 = prefix +
 * uri, and 32 zeros after it with a security layer (RFC 2831 2.1.2.1). */
static void digest(const unsigned char ha1_raw[16], const char *nonce, const char *cnonce, const char *a2_prefix,
                   yarn_qop qop, char out[33]) {
    char ha1[33], ha2[33];
    unsigned char h[16];
    hex16(ha1_raw, ha1);
    char *a2 = tony_sprintf("%s%s%s", a2_prefix, YARN_SASL_DIGEST_URI,
                            qop == YARN_QOP_AUTH ? "" : ":00000000000000000000000000000000");
    md5(a2, strlen(a2), h);
    hex16(h, ha2);
    char *kd = tony_sprintf("%s:%s:00000001:%s:%s:%s", ha1, nonce, cnonce, qop_name(qop), ha2);
    md5(kd, strlen(kd), h);
    hex16(h, out);
    free(a2);
    free(kd);
}

int yarn_sasl_digest_response(const yarn_digest_challenge *ch, const yarn_token *t, const char *cnonce,
                              char **response, char rspauth[33], tony_error *err) {
    yarn_digest_challenge auth_only = *ch;
    auth_only.qop = "auth";
    return yarn_sasl_digest_respond(&auth_only, t, cnonce, response, rspauth, NULL, err);
}

int yarn_sasl_digest_respond(const yarn_digest_challenge *ch, const yarn_token *t, const char *cnonce,
                             char **response, char rspauth[33], yarn_sasl_negotiated *neg, tony_error *err) {
    *response = NULL;
    int q = choose_qop(ch);
    if (q < 0) return tony_err(err, "the server offers no SASL qop tony speaks (%s)", ch->qop);
    yarn_qop qop = (yarn_qop)q;
    if (!t) return tony_err(err, "no token to authenticate with");
    char own_cnonce[32];
    if (!cnonce) {
        unsigned char rnd[12];
        if (RAND_bytes(rnd, sizeof rnd) != 1) return tony_err(err, "OpenSSL could not produce random bytes");
        char *b = tony_base64_encode(rnd, sizeof rnd, false);
        snprintf(own_cnonce, sizeof own_cnonce, "%s", b);
        free(b);
        cnonce = own_cnonce;
    }
    const char *realm = ch->realm ? ch->realm : "";
    char *user = tony_base64_encode(t->identifier, t->identifier_len, false);
    char *pass = tony_base64_encode(t->password, t->password_len, false);

    /* A1 = H(user:realm:pass) as 16 raw bytes, then ":nonce:cnonce". */
    unsigned char inner[16];
    char *upr = tony_sprintf("%s:%s:%s", user, realm, pass);
    md5(upr, strlen(upr), inner);
    tony_buf a1 = {0};
    tony_buf_append(&a1, (const char *)inner, 16);
    tony_buf_printf(&a1, ":%s:%s", ch->nonce, cnonce);
    unsigned char ha1[16];
    md5(a1.data, a1.len, ha1);

    char resp[33];
    digest(ha1, ch->nonce, cnonce, "AUTHENTICATE:", qop, resp);
    digest(ha1, ch->nonce, cnonce, ":", qop, rspauth);
    if (neg) {
        neg->qop = qop;
        memcpy(neg->ha1, ha1, 16);
    }

    tony_buf r = {0};
    if (ch->charset) tony_buf_printf(&r, "charset=%s,", ch->charset);
    tony_buf_printf(&r, "username=\"%s\",", user);
    if (ch->realm) tony_buf_printf(&r, "realm=\"%s\",", realm);
    tony_buf_printf(&r, "nonce=\"%s\",nc=00000001,cnonce=\"%s\",digest-uri=\"%s\",maxbuf=65536,response=%s,qop=%s",
                    ch->nonce, cnonce, YARN_SASL_DIGEST_URI, resp, qop_name(qop));
    if (qop == YARN_QOP_CONF) tony_buf_puts(&r, ",cipher=3des");
    *response = r.data;
    free(user);
    free(pass);
    free(upr);
    tony_buf_free(&a1);
    return 0;
}

int yarn_sasl_check_rspauth(const void *token, size_t len, const char rspauth[33], tony_error *err) {
    static const char prefix[] = "rspauth=";
    size_t pl = sizeof prefix - 1;
    if (!token || len != pl + 32 || memcmp(token, prefix, pl) != 0)
        return tony_err(err, "the server's SASL SUCCESS carries no DIGEST-MD5 rspauth (got %zu bytes)", len);
    if (memcmp((const char *)token + pl, rspauth, 32) != 0)
        return tony_err(err, "the server's DIGEST-MD5 rspauth does not match: it does not hold this token's "
                        "password (a stale or foreign token?)");
    return 0;
}
