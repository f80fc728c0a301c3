/* HMAC-SHA256 proofs between a job's coordinator and its callers (see
 * apiauth.h): signing and checking requests and answers, the caller's
 * clock, and the coordinator's bounded replay cache. */
#include "common/apiauth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/strv.h"

#define MAC_BYTES 32

static void derive(const char *secret, const char *label, unsigned char out[MAC_BYTES]) {
    unsigned int n = 0;
    HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)label, strlen(label), out, &n);
}

void tony_apiauth_key_from_secret(const char *secret, tony_apiauth_key *key) {
    derive(secret, TONY_APIAUTH_KEY_LABEL, key->k);
}

static void hex(const unsigned char *in, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

void tony_apiauth_derive_hex(const char *secret, const char *label, char out[2 * MAC_BYTES + 1]) {
    unsigned char mac[MAC_BYTES];
    derive(secret, label, mac);
    hex(mac, sizeof mac, out);
    OPENSSL_cleanse(mac, sizeof mac);
}

/* n bytes from exactly 2n lowercase hex digits at s; false otherwise. */
static bool unhex(const char *s, size_t n, unsigned char *out) {
    for (size_t i = 0; i < 2 * n; i++) {
        char c = s[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0) return false;
        if (i % 2 == 0) out[i / 2] = (unsigned char)(v << 4);
        else out[i / 2] |= (unsigned char)v;
    }
    return true;
}

static void body_digest_hex(const void *body, size_t len, char out[2 * 32 + 1]) {
    unsigned char d[32];
    unsigned int n = 0;
    EVP_Digest(len ? body : "", len, d, &n, EVP_sha256(), NULL);
    hex(d, sizeof d, out);
}

/* HMAC over the fields, one a line (none may hold a newline: a field's
 * bytes cannot pass for the next field's). */
static void mac_lines(const tony_apiauth_key *key, const char *const *fields, size_t n, unsigned char out[MAC_BYTES]) {
    tony_buf m = {0};
    for (size_t i = 0; i < n; i++) {
        if (i) tony_buf_append(&m, "\n", 1);
        tony_buf_puts(&m, fields[i]);
    }
    unsigned int len = 0;
    HMAC(EVP_sha256(), key->k, sizeof key->k, (const unsigned char *)(m.data ? m.data : ""), m.len, out, &len);
    tony_buf_free(&m);
}

static void request_mac(const tony_apiauth_key *key, const char *method, const char *host, const char *target,
                        long long ts, const char *nonce_hex, const void *body, size_t len,
                        unsigned char out[MAC_BYTES]) {
    char tsbuf[24], digest[65];
    snprintf(tsbuf, sizeof tsbuf, "%lld", ts);
    body_digest_hex(body, len, digest);
    const char *f[] = {TONY_APIAUTH_REQUEST_LABEL, method, host ? host : "", target, tsbuf, nonce_hex, digest};
    mac_lines(key, f, sizeof f / sizeof *f, out);
}

static void reply_mac(const tony_apiauth_key *key, const char *nonce_hex, long status, const void *body, size_t len,
                      unsigned char out[MAC_BYTES]) {
    char st[24], digest[65];
    snprintf(st, sizeof st, "%ld", status);
    body_digest_hex(body, len, digest);
    const char *f[] = {TONY_APIAUTH_REPLY_LABEL, nonce_hex, st, digest};
    mac_lines(key, f, sizeof f / sizeof *f, out);
}

long long tony_apiauth_clock_next(tony_apiauth_clock *c, long long now_ms) {
    long long ts = now_ms + c->offset_ms;
    if (ts <= c->last_ts) ts = c->last_ts + 1;
    c->last_ts = ts;
    return ts;
}

void tony_apiauth_clock_correct(tony_apiauth_clock *c, long long now_ms, long long server_now_ms, long long floor_ms) {
    c->offset_ms = server_now_ms - now_ms;
    /* the next timestamp is at least the coordinator's time, and above the floor */
    long long at_least = server_now_ms - 1 > floor_ms ? server_now_ms - 1 : floor_ms;
    if (c->last_ts > at_least + TONY_APIAUTH_WINDOW_MS) c->last_ts = at_least; /* ours ran ahead: back in the window */
    if (c->last_ts < at_least) c->last_ts = at_least;
}

int tony_apiauth_sign_request(const tony_apiauth_key *key, const char *method, const char *host, const char *target,
                              const void *body, size_t len, long long ts, tony_apiauth_request *out) {
    unsigned char nonce[TONY_APIAUTH_NONCE_BYTES], mac[MAC_BYTES];
    if (RAND_bytes(nonce, sizeof nonce) != 1) return -1;
    hex(nonce, sizeof nonce, out->nonce);
    request_mac(key, method, host, target, ts, out->nonce, body, len, mac);
    char machex[2 * MAC_BYTES + 1];
    hex(mac, sizeof mac, machex);
    snprintf(out->header, sizeof out->header, TONY_APIAUTH_VERSION " ts=%lld nonce=%s mac=%s", ts, out->nonce, machex);
    return 0;
}

bool tony_apiauth_reply_ok(const tony_apiauth_key *key, const char *nonce, long status, const void *body, size_t len,
                           const char *header) {
    static const char prefix[] = TONY_APIAUTH_VERSION " mac=";
    unsigned char got[MAC_BYTES], want[MAC_BYTES];
    if (!header || strncmp(header, prefix, strlen(prefix)) != 0) return false;
    const char *m = header + strlen(prefix);
    if (strlen(m) != 2 * MAC_BYTES || !unhex(m, MAC_BYTES, got)) return false;
    reply_mac(key, nonce, status, body, len, want);
    return CRYPTO_memcmp(got, want, MAC_BYTES) == 0;
}

void tony_apiauth_sign_reply(const tony_apiauth_key *key, const char *nonce_hex, long status, const void *body,
                             size_t len, char out[80]) {
    unsigned char mac[MAC_BYTES];
    char machex[2 * MAC_BYTES + 1];
    reply_mac(key, nonce_hex, status, body, len, mac);
    hex(mac, sizeof mac, machex);
    snprintf(out, 80, TONY_APIAUTH_VERSION " mac=%s", machex);
}

/* "v1 ts=<1-15 digits> nonce=<32 hex> mac=<64 hex>", nothing else. */
static bool parse_header(const char *h, long long *ts, unsigned char nonce[TONY_APIAUTH_NONCE_BYTES],
                         char nonce_hex[2 * TONY_APIAUTH_NONCE_BYTES + 1], unsigned char mac[MAC_BYTES]) {
    static const char p1[] = TONY_APIAUTH_VERSION " ts=", p2[] = " nonce=", p3[] = " mac=";
    if (!h || strncmp(h, p1, strlen(p1)) != 0) return false;
    h += strlen(p1);
    size_t digits = strspn(h, "0123456789");
    if (digits == 0 || digits > 15 || (digits > 1 && h[0] == '0')) return false;
    *ts = 0;
    for (size_t i = 0; i < digits; i++) *ts = *ts * 10 + (h[i] - '0');
    h += digits;
    if (strncmp(h, p2, strlen(p2)) != 0) return false;
    h += strlen(p2);
    if (strlen(h) < 2 * TONY_APIAUTH_NONCE_BYTES || !unhex(h, TONY_APIAUTH_NONCE_BYTES, nonce)) return false;
    memcpy(nonce_hex, h, 2 * TONY_APIAUTH_NONCE_BYTES);
    nonce_hex[2 * TONY_APIAUTH_NONCE_BYTES] = '\0';
    h += 2 * TONY_APIAUTH_NONCE_BYTES;
    if (strncmp(h, p3, strlen(p3)) != 0) return false;
    h += strlen(p3);
    return strlen(h) == 2 * MAC_BYTES && unhex(h, MAC_BYTES, mac);
}

tony_apiauth_verdict tony_apiauth_verify(const tony_apiauth_key *key, const char *header, const char *method,
                                         const char *host, const char *target, const void *body, size_t len,
                                         long long now_ms, tony_apiauth_claim *claim) {
    unsigned char got[MAC_BYTES], want[MAC_BYTES];
    tony_apiauth_claim c;
    if (!parse_header(header, &c.ts, c.nonce, c.nonce_hex, got)) return TONY_APIAUTH_BAD_MISSING;
    request_mac(key, method, host, target, c.ts, c.nonce_hex, body, len, want);
    /* constant time: the MAC guards every state change */
    if (CRYPTO_memcmp(got, want, MAC_BYTES) != 0) return TONY_APIAUTH_BAD_WRONG;
    *claim = c;
    long long d = c.ts - now_ms;
    if (d > TONY_APIAUTH_WINDOW_MS || d < -TONY_APIAUTH_WINDOW_MS) return TONY_APIAUTH_BAD_CLOCK;
    return TONY_APIAUTH_OK;
}

const char *tony_apiauth_verdict_word(tony_apiauth_verdict v) {
    switch (v) {
    case TONY_APIAUTH_BAD_MISSING: return TONY_APIAUTH_MISSING;
    case TONY_APIAUTH_BAD_WRONG: return TONY_APIAUTH_WRONG;
    case TONY_APIAUTH_BAD_CLOCK: return TONY_APIAUTH_CLOCK;
    case TONY_APIAUTH_BAD_REPLAY: return TONY_APIAUTH_REPLAY;
    default: return "ok";
    }
}

typedef struct seen {
    long long ts;
    unsigned char nonce[TONY_APIAUTH_NONCE_BYTES];
} seen;

typedef struct sender {
    long long floor;
    size_t n;
    seen ring[TONY_APIAUTH_RING];
} sender;

struct tony_apiauth_replay {
    sender **slots; /* NULL until that sender's first genuine request */
    size_t nslots;
};

tony_apiauth_replay *tony_apiauth_replay_new(void) { return tony_xcalloc(1, sizeof(tony_apiauth_replay)); }

bool tony_apiauth_replay_check(tony_apiauth_replay *r, size_t who, const tony_apiauth_claim *c) {
    if (who >= r->nslots) {
        size_t n = who + 1 > 2 * r->nslots ? who + 1 : 2 * r->nslots;
        r->slots = tony_xrealloc(r->slots, n * sizeof *r->slots);
        memset(r->slots + r->nslots, 0, (n - r->nslots) * sizeof *r->slots);
        r->nslots = n;
    }
    if (!r->slots[who]) r->slots[who] = tony_xcalloc(1, sizeof(sender));
    sender *s = r->slots[who];
    if (c->ts <= s->floor) return false;
    for (size_t i = 0; i < s->n; i++)
        if (memcmp(s->ring[i].nonce, c->nonce, sizeof c->nonce) == 0) return false;
    if (s->n < TONY_APIAUTH_RING) {
        s->ring[s->n].ts = c->ts;
        memcpy(s->ring[s->n++].nonce, c->nonce, sizeof c->nonce);
        return true;
    }
    /* full: the oldest by timestamp leaves (this one, when it is older than
     * all), and the floor rises to it, so that it stays refused */
    size_t oldest = 0;
    for (size_t i = 1; i < s->n; i++)
        if (s->ring[i].ts < s->ring[oldest].ts) oldest = i;
    if (c->ts <= s->ring[oldest].ts) {
        s->floor = c->ts;
        return true;
    }
    s->floor = s->ring[oldest].ts;
    s->ring[oldest].ts = c->ts;
    memcpy(s->ring[oldest].nonce, c->nonce, sizeof c->nonce);
    return true;
}

long long tony_apiauth_replay_floor(const tony_apiauth_replay *r, size_t who) {
    return who < r->nslots && r->slots[who] ? r->slots[who]->floor : 0;
}

void tony_apiauth_replay_free(tony_apiauth_replay *r) {
    if (!r) return;
    for (size_t i = 0; i < r->nslots; i++) free(r->slots[i]);
    free(r->slots);
    free(r);
}
