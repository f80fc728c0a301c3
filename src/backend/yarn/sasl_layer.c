/* The DIGEST-MD5 security layer (see sasl_layer.h), with OpenSSL. */
#include "backend/yarn/sasl_layer.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAC_LEN 10  /* the first 10 bytes of the HMAC-MD5 */
#define TRAILER 6   /* message type (2 bytes, 1) and sequence number (4) */
#define BLOCK 8     /* 3des */

static const char CLIENT_SIGN[] = "Digest session key to client-to-server signing key magic constant";
static const char SERVER_SIGN[] = "Digest session key to server-to-client signing key magic constant";
static const char CLIENT_SEAL[] = "Digest H(A1) to client-to-server sealing key magic constant";
static const char SERVER_SEAL[] = "Digest H(A1) to server-to-client sealing key magic constant";

struct yarn_sasl_layer {
    yarn_qop qop;
    unsigned char my_ki[16], peer_ki[16]; /* integrity keys: ours signs, the peer's checks */
    uint32_t my_seq, peer_seq;
    EVP_CIPHER_CTX *enc, *dec;            /* auth-conf only */
};

/* MD5(prefix of H(A1) || magic). */
static void derive(const unsigned char ha1[16], size_t n, const char *magic, unsigned char out[16]) {
    unsigned char buf[16 + 80];
    size_t m = strlen(magic);
    memcpy(buf, ha1, n);
    memcpy(buf + n, magic, m);
    EVP_Digest(buf, n + m, out, NULL, EVP_md5(), NULL);
}

/* A DES key from 7 bytes: eight groups of 7 bits, each shifted left over
 * a parity bit (which DES ignores), as Java's DigestMD5Base builds it. */
static void des_key(const unsigned char in[7], unsigned char out[8]) {
    uint64_t bits = 0;
    for (int i = 0; i < 7; i++) bits = bits << 8 | in[i];
    for (int i = 7; i >= 0; i--) {
        unsigned char b = (unsigned char)((bits & 0x7f) << 1);
        int ones = __builtin_popcount(b);
        out[i] = (unsigned char)(b | (ones % 2 == 0)); /* odd parity */
        bits >>= 7;
    }
}

/* 3des for a sealing key Kc: EDE with K1, K2, K1 from its first 14 bytes,
 * the IV its last 8. */
static EVP_CIPHER_CTX *des3(const unsigned char kc[16], bool encrypt) {
    unsigned char key[24], iv[8];
    des_key(kc, key);
    des_key(kc + 7, key + 8);
    memcpy(key + 16, key, 8);
    memcpy(iv, kc + 8, 8);
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (c && EVP_CipherInit_ex(c, EVP_des_ede3_cbc(), NULL, key, iv, encrypt ? 1 : 0) == 1 &&
        EVP_CIPHER_CTX_set_padding(c, 0) == 1)
        return c;
    EVP_CIPHER_CTX_free(c);
    return NULL;
}

static yarn_sasl_layer *layer_new(const yarn_sasl_negotiated *n, bool client, tony_error *err) {
    if (n->qop == YARN_QOP_AUTH) return NULL;
    yarn_sasl_layer *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->qop = n->qop;
    derive(n->ha1, 16, client ? CLIENT_SIGN : SERVER_SIGN, l->my_ki);
    derive(n->ha1, 16, client ? SERVER_SIGN : CLIENT_SIGN, l->peer_ki);
    if (n->qop == YARN_QOP_CONF) {
        unsigned char mine[16], peer[16];
        derive(n->ha1, 16, client ? CLIENT_SEAL : SERVER_SEAL, mine);
        derive(n->ha1, 16, client ? SERVER_SEAL : CLIENT_SEAL, peer);
        l->enc = des3(mine, true);
        l->dec = des3(peer, false);
        if (!l->enc || !l->dec) {
            yarn_sasl_layer_free(l);
            tony_err(err, "OpenSSL has no 3DES (DES-EDE3-CBC) for hadoop.rpc.protection=privacy");
            return NULL;
        }
    }
    return l;
}

yarn_sasl_layer *yarn_sasl_layer_new(const yarn_sasl_negotiated *n, tony_error *err) { return layer_new(n, true, err); }
yarn_sasl_layer *yarn_sasl_layer_new_server(const yarn_sasl_negotiated *n, tony_error *err) {
    return layer_new(n, false, err);
}

void yarn_sasl_layer_free(yarn_sasl_layer *l) {
    if (!l) return;
    EVP_CIPHER_CTX_free(l->enc);
    EVP_CIPHER_CTX_free(l->dec);
    free(l);
}

static void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* HMAC-MD5(ki, seq || msg), its first 10 bytes. */
static void mac(const unsigned char ki[16], uint32_t seq, const void *msg, size_t len, unsigned char out[MAC_LEN]) {
    unsigned char *buf = malloc(len + 4);
    unsigned char full[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    put32(buf, seq);
    if (len) memcpy(buf + 4, msg, len);
    HMAC(EVP_md5(), ki, 16, buf, len + 4, full, &n);
    memcpy(out, full, MAC_LEN);
    free(buf);
}

int yarn_sasl_wrap(yarn_sasl_layer *l, const void *msg, size_t len, tony_buf *out, tony_error *err) {
    unsigned char m[MAC_LEN], trailer[TRAILER] = {0, 1};
    put32(trailer + 2, l->my_seq);
    mac(l->my_ki, l->my_seq, msg, len, m);
    if (l->qop == YARN_QOP_INT) {
        tony_buf_append(out, msg, len);
    } else {
        size_t pad = BLOCK - (len + MAC_LEN) % BLOCK, n = len + pad + MAC_LEN;
        unsigned char *plain = malloc(n), *sealed = malloc(n + BLOCK);
        memcpy(plain, msg, len);
        memset(plain + len, (int)pad, pad);
        memcpy(plain + len + pad, m, MAC_LEN);
        int outl = 0;
        bool ok = EVP_CipherUpdate(l->enc, sealed, &outl, plain, (int)n) == 1 && (size_t)outl == n;
        if (ok) tony_buf_append(out, (const char *)sealed, n);
        free(plain);
        free(sealed);
        if (!ok) return tony_err(err, "SASL privacy: encrypting a message failed");
    }
    if (l->qop == YARN_QOP_INT) tony_buf_append(out, (const char *)m, MAC_LEN);
    tony_buf_append(out, (const char *)trailer, TRAILER);
    l->my_seq++;
    return 0;
}

int yarn_sasl_unwrap(yarn_sasl_layer *l, const void *token, size_t len, tony_buf *out, tony_error *err) {
    const unsigned char *t = token;
    if (len < TRAILER + MAC_LEN) return tony_err(err, "SASL: a wrapped message of %zu bytes is too short", len);
    const unsigned char *tr = t + len - TRAILER;
    uint32_t seq = (uint32_t)tr[2] << 24 | (uint32_t)tr[3] << 16 | (uint32_t)tr[4] << 8 | tr[5];
    if (tr[0] != 0 || tr[1] != 1) return tony_err(err, "SASL: a wrapped message of an unknown type");
    if (seq != l->peer_seq)
        return tony_err(err, "SASL: message %u arrived where %u was due (lost, replayed or reordered)", seq,
                        l->peer_seq);
    size_t body = len - TRAILER;
    unsigned char *plain = NULL;
    const unsigned char *msg = t, *got = t + body - MAC_LEN;
    size_t mlen = body - MAC_LEN;
    if (l->qop == YARN_QOP_CONF) {
        if (body % BLOCK) return tony_err(err, "SASL privacy: a sealed message is not whole blocks (%zu bytes)", body);
        plain = malloc(body + BLOCK);
        int outl = 0;
        if (EVP_CipherUpdate(l->dec, plain, &outl, t, (int)body) != 1 || (size_t)outl != body) {
            free(plain);
            return tony_err(err, "SASL privacy: decrypting a message failed");
        }
        size_t pad = plain[body - MAC_LEN - 1];
        if (pad < 1 || pad > BLOCK || pad > body - MAC_LEN) {
            free(plain);
            return tony_err(err, "SASL privacy: a message's padding is corrupt (a wrong key?)");
        }
        msg = plain;
        mlen = body - MAC_LEN - pad;
        got = plain + body - MAC_LEN;
    }
    unsigned char want[MAC_LEN];
    mac(l->peer_ki, seq, msg, mlen, want);
    int rc = 0;
    if (memcmp(want, got, MAC_LEN) != 0) rc = tony_err(err, "SASL: a message's MAC does not match (altered, or a wrong key)");
    else tony_buf_append(out, (const char *)msg, mlen);
    free(plain);
    if (rc == 0) l->peer_seq++;
    return rc;
}
