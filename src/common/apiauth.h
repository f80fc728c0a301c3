/* Mutual authentication between a job's coordinator and those who change its
 * state (executors, the client's kill): both prove they hold the job's
 * secret without sending it. A request carries an HMAC-SHA256, under a key
 * derived from the secret, over its method, Host, target, a timestamp, a
 * random nonce and its body's SHA-256; the answer carries one over that
 * nonce, its status and its body's SHA-256, so that an answer is good for
 * the one request it answers. A process that took over a dead coordinator's
 * port learns nothing it can replay elsewhere and cannot forge an answer.
 * Nothing is encrypted: bodies (commands, the cluster spec) travel in clear.
 * This header owns the contract both sides (C and tests/e2e/conftest.py)
 * must agree on: header names, labels, fields and the window. */
#ifndef TONY_APIAUTH_H
#define TONY_APIAUTH_H

#include <stdbool.h>
#include <stddef.h>

/* The request's proof: "v1 ts=<ms since the epoch> nonce=<32 hex> mac=<64 hex>". */
#define TONY_APIAUTH_HEADER "X-Tony-Auth"
/* The answer's proof: "v1 mac=<64 hex>". */
#define TONY_APIAUTH_REPLY_HEADER "X-Tony-Auth-Reply"
#define TONY_APIAUTH_VERSION "v1"
/* The control key is HMAC-SHA256(secret, this label): the secret itself
 * keys nothing else, so a later use of it (another key) stays apart. */
#define TONY_APIAUTH_KEY_LABEL "tony api control key v1"
/* What a request's MAC covers, one field a line:
 * label, method, Host, target (path?query), ts, nonce, hex SHA-256 of the body. */
#define TONY_APIAUTH_REQUEST_LABEL "tony api request v1"
/* What an answer's MAC covers: label, the request's nonce, the status,
 * hex SHA-256 of the body. */
#define TONY_APIAUTH_REPLY_LABEL "tony api reply v1"
/* A request whose timestamp is further than this from the coordinator's
 * clock is refused (and told the coordinator's time: the caller corrects
 * its clock's offset and tries again once). */
#define TONY_APIAUTH_WINDOW_MS 60000LL
#define TONY_APIAUTH_NONCE_BYTES 16

/* Fields of a refusal's JSON (403), beside "error": */
#define TONY_APIAUTH_REFUSED "auth"       /* why, one of the words below */
#define TONY_APIAUTH_NOW_MS "now_ms"      /* clock, replay: the coordinator's time (signed answer) */
#define TONY_APIAUTH_FLOOR_MS "floor_ms"  /* replay: this sender's timestamps must be above this */
#define TONY_APIAUTH_MISSING "missing"    /* no or a malformed X-Tony-Auth (unsigned answer) */
#define TONY_APIAUTH_WRONG "wrong"        /* a MAC that is not the job's (unsigned answer) */
#define TONY_APIAUTH_CLOCK "clock"        /* a timestamp outside the window (signed answer) */
#define TONY_APIAUTH_REPLAY "replay"      /* seen before, or older than its sender's floor (signed answer) */

typedef struct tony_apiauth_key {
    unsigned char k[32];
} tony_apiauth_key;

void tony_apiauth_key_from_secret(const char *secret, tony_apiauth_key *key);
/* Another value derived from the secret for a use of its own: HMAC-SHA256
 * (secret, label) as 64 lowercase hex digits (the read token, readtoken.h). */
void tony_apiauth_derive_hex(const char *secret, const char *label, char out[2 * 32 + 1]);

/* ---- The caller's side. */

/* A caller's clock: its offset from the coordinator's and the last
 * timestamp it used. Timestamps never go back within a process (a clock
 * stepped back would otherwise fall under the coordinator's floor). */
typedef struct tony_apiauth_clock {
    long long offset_ms;
    long long last_ts;
} tony_apiauth_clock;
/* The timestamp of the next request at wall time now_ms. */
long long tony_apiauth_clock_next(tony_apiauth_clock *c, long long now_ms);
/* A signed refusal said the coordinator's time was server_now_ms (at our
 * now_ms) and, for a replay, that this sender's floor is floor_ms (0: none). */
void tony_apiauth_clock_correct(tony_apiauth_clock *c, long long now_ms, long long server_now_ms, long long floor_ms);

typedef struct tony_apiauth_request {
    char nonce[2 * TONY_APIAUTH_NONCE_BYTES + 1];
    char header[160]; /* the value of TONY_APIAUTH_HEADER */
} tony_apiauth_request;

/* Signs a request with a fresh random nonce. host: the Host header as sent;
 * target: path and query as in the request line. -1 only when no random
 * bytes could be had. */
int tony_apiauth_sign_request(const tony_apiauth_key *key, const char *method, const char *host, const char *target,
                              const void *body, size_t len, long long ts, tony_apiauth_request *out);
/* Whether header (TONY_APIAUTH_REPLY_HEADER's value, NULL when absent)
 * proves that the job's coordinator answered the request of nonce with
 * this status and body. */
bool tony_apiauth_reply_ok(const tony_apiauth_key *key, const char *nonce, long status, const void *body, size_t len,
                           const char *header);

/* ---- The coordinator's side. */

typedef enum {
    TONY_APIAUTH_OK,
    TONY_APIAUTH_BAD_MISSING, /* no header, or not of the form above */
    TONY_APIAUTH_BAD_WRONG,   /* the MAC is not the job's */
    TONY_APIAUTH_BAD_CLOCK,   /* genuine, but its timestamp is outside the window */
    TONY_APIAUTH_BAD_REPLAY,  /* genuine, but seen before (tony_apiauth_replay_check) */
} tony_apiauth_verdict;

typedef struct tony_apiauth_claim {
    long long ts;
    unsigned char nonce[TONY_APIAUTH_NONCE_BYTES];
    char nonce_hex[2 * TONY_APIAUTH_NONCE_BYTES + 1];
} tony_apiauth_claim;

/* Checks a request's header (NULL: none) against its method, Host, target
 * and body, and its timestamp against now_ms. claim is filled whenever the
 * MAC is good (OK, BAD_CLOCK): its answer is then signed over its nonce. */
tony_apiauth_verdict tony_apiauth_verify(const tony_apiauth_key *key, const char *header, const char *method,
                                         const char *host, const char *target, const void *body, size_t len,
                                         long long now_ms, tony_apiauth_claim *claim);
/* The "auth" word of a verdict (TONY_APIAUTH_MISSING ...). */
const char *tony_apiauth_verdict_word(tony_apiauth_verdict v);

/* Replays: per sender (a task slot, or the job's clients as one), a ring of
 * the last TONY_APIAUTH_RING accepted (timestamp, nonce) and a floor: the
 * newest timestamp that fell out of the ring. A request at or under its
 * sender's floor, or whose nonce is in the ring, is a replay. A genuine
 * sender's requests are refused only if TONY_APIAUTH_RING later ones of the
 * same sender arrived first; an executor has at most three in flight.
 * Memory: about 220 bytes per sender that ever authenticated, allocated on
 * its first request: 2.2 MB at 10,000 tasks, whatever the rate. */
#define TONY_APIAUTH_RING 8
typedef struct tony_apiauth_replay tony_apiauth_replay;
tony_apiauth_replay *tony_apiauth_replay_new(void);
/* Whether the claim is fresh for sender (any index; slots grow on demand);
 * a fresh one is recorded. */
bool tony_apiauth_replay_check(tony_apiauth_replay *r, size_t sender, const tony_apiauth_claim *c);
/* The sender's floor (0 before any). */
long long tony_apiauth_replay_floor(const tony_apiauth_replay *r, size_t sender);
void tony_apiauth_replay_free(tony_apiauth_replay *r);

/* The value of TONY_APIAUTH_REPLY_HEADER for an answer; out holds 80 bytes. */
void tony_apiauth_sign_reply(const tony_apiauth_key *key, const char *nonce_hex, long status, const void *body,
                             size_t len, char out[80]);

#endif
