/* Unit tests of the proofs between a job's coordinator and its callers
 * (common/apiauth.h): a signed request verifies and any change to what it
 * covers does not; an answer verifies only for its own request, status and
 * body; the window, the replay cache and its floor; the caller's clock
 * corrected by a refusal. (That every answer of the API is signed is
 * shown end to end: executors act on no other, tests/e2e.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "common/apiauth.h"

#define NOW 1800000000000LL

static tony_apiauth_key key, other;

static int setup(void **state) {
    (void)state;
    tony_apiauth_key_from_secret("the-job-secret", &key);
    tony_apiauth_key_from_secret("another-secret", &other);
    return 0;
}

static tony_apiauth_verdict check(const tony_apiauth_key *k, const char *header, const char *method, const char *host,
                                  const char *target, const char *body, long long now, tony_apiauth_claim *c) {
    return tony_apiauth_verify(k, header, method, host, target, body, strlen(body), now, c);
}

static void test_sign_and_verify(void **state) {
    (void)state;
    tony_apiauth_request r;
    const char *body = "{\"attempt\":0}";
    assert_int_equal(tony_apiauth_sign_request(&key, "POST", "127.0.0.1:4242", "/v1/tasks/worker/0/heartbeat", body,
                                               strlen(body), NOW, &r), 0);
    assert_non_null(strstr(r.header, "v1 ts=1800000000000 nonce="));
    /* the secret itself is nowhere in what travels */
    assert_null(strstr(r.header, "the-job-secret"));
    tony_apiauth_claim c;
    memset(&c, 0, sizeof c);
    assert_int_equal(check(&key, r.header, "POST", "127.0.0.1:4242", "/v1/tasks/worker/0/heartbeat", body, NOW + 5, &c),
                     TONY_APIAUTH_OK);
    assert_string_equal(c.nonce_hex, r.nonce);
    assert_int_equal(c.ts, NOW);
    /* another key, method, Host, target or body */
    assert_int_equal(check(&other, r.header, "POST", "127.0.0.1:4242", "/v1/tasks/worker/0/heartbeat", body, NOW, &c),
                     TONY_APIAUTH_BAD_WRONG);
    assert_int_equal(check(&key, r.header, "GET", "127.0.0.1:4242", "/v1/tasks/worker/0/heartbeat", body, NOW, &c),
                     TONY_APIAUTH_BAD_WRONG);
    assert_int_equal(check(&key, r.header, "POST", "127.0.0.1:4243", "/v1/tasks/worker/0/heartbeat", body, NOW, &c),
                     TONY_APIAUTH_BAD_WRONG);
    assert_int_equal(check(&key, r.header, "POST", "127.0.0.1:4242", "/v1/tasks/worker/1/heartbeat", body, NOW, &c),
                     TONY_APIAUTH_BAD_WRONG);
    assert_int_equal(check(&key, r.header, "POST", "127.0.0.1:4242", "/v1/tasks/worker/0/heartbeat",
                           "{\"attempt\":1}", NOW, &c),
                     TONY_APIAUTH_BAD_WRONG);
    /* a timestamp or nonce changed in the header */
    char h[sizeof r.header];
    strcpy(h, r.header);
    h[8] = h[8] == '1' ? '2' : '1'; /* a digit of ts */
    assert_int_equal(check(&key, h, "POST", "127.0.0.1:4242", "/v1/tasks/worker/0/heartbeat", body, NOW, &c),
                     TONY_APIAUTH_BAD_WRONG);
    strcpy(h, r.header);
    char *n = strstr(h, "nonce=") + 6;
    *n = *n == 'a' ? 'b' : 'a';
    assert_int_equal(check(&key, h, "POST", "127.0.0.1:4242", "/v1/tasks/worker/0/heartbeat", body, NOW, &c),
                     TONY_APIAUTH_BAD_WRONG);
    /* malformed or missing */
    const char *bad[] = {NULL, "", "v1", "v2 ts=1 nonce=00000000000000000000000000000000 mac=00",
                         "v1 ts=-1 nonce=00000000000000000000000000000000 mac=0000000000000000000000000000000000000000000000000000000000000000",
                         "v1 ts=01 nonce=00000000000000000000000000000000 mac=0000000000000000000000000000000000000000000000000000000000000000",
                         "v1 ts=1 nonce=0000000000000000000000000000000G mac=0000000000000000000000000000000000000000000000000000000000000000",
                         "v1 ts=1 nonce=00000000000000000000000000000000 mac=00000000000000000000000000000000000000000000000000000000000000000"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(check(&key, bad[i], "POST", "h", "/", "", NOW, &c), TONY_APIAUTH_BAD_MISSING);
}

static void test_window(void **state) {
    (void)state;
    tony_apiauth_request r;
    tony_apiauth_claim c;
    assert_int_equal(tony_apiauth_sign_request(&key, "POST", "h:1", "/v1/job/kill", "{}", 2, NOW, &r), 0);
    assert_int_equal(check(&key, r.header, "POST", "h:1", "/v1/job/kill", "{}", NOW + TONY_APIAUTH_WINDOW_MS, &c),
                     TONY_APIAUTH_OK);
    assert_int_equal(check(&key, r.header, "POST", "h:1", "/v1/job/kill", "{}", NOW - TONY_APIAUTH_WINDOW_MS, &c),
                     TONY_APIAUTH_OK);
    memset(&c, 0, sizeof c);
    /* genuine but late: the claim is filled, its answer is signed */
    assert_int_equal(check(&key, r.header, "POST", "h:1", "/v1/job/kill", "{}", NOW + TONY_APIAUTH_WINDOW_MS + 1, &c),
                     TONY_APIAUTH_BAD_CLOCK);
    assert_string_equal(c.nonce_hex, r.nonce);
    assert_int_equal(check(&key, r.header, "POST", "h:1", "/v1/job/kill", "{}", NOW - TONY_APIAUTH_WINDOW_MS - 1, &c),
                     TONY_APIAUTH_BAD_CLOCK);
}

static void test_reply(void **state) {
    (void)state;
    char sig[80];
    const char *nonce = "0123456789abcdef0123456789abcdef", *body = "{\"status\":\"go\",\"command\":\"id\"}\n";
    tony_apiauth_sign_reply(&key, nonce, 200, body, strlen(body), sig);
    assert_true(tony_apiauth_reply_ok(&key, nonce, 200, body, strlen(body), sig));
    /* another request's nonce, status, body or key; none at all */
    assert_false(tony_apiauth_reply_ok(&key, "0123456789abcdef0123456789abcdee", 200, body, strlen(body), sig));
    assert_false(tony_apiauth_reply_ok(&key, nonce, 409, body, strlen(body), sig));
    assert_false(tony_apiauth_reply_ok(&key, nonce, 200, body, strlen(body) - 1, sig));
    assert_false(tony_apiauth_reply_ok(&other, nonce, 200, body, strlen(body), sig));
    assert_false(tony_apiauth_reply_ok(&key, nonce, 200, body, strlen(body), NULL));
    assert_false(tony_apiauth_reply_ok(&key, nonce, 200, body, strlen(body), "v1 mac=00"));
    /* a request's MAC is no answer's: the labels differ */
    tony_apiauth_request r;
    assert_int_equal(tony_apiauth_sign_request(&key, "POST", "h", "/", body, strlen(body), NOW, &r), 0);
    char as_reply[100];
    snprintf(as_reply, sizeof as_reply, "v1 mac=%s", strstr(r.header, "mac=") + 4);
    assert_false(tony_apiauth_reply_ok(&key, r.nonce, 200, body, strlen(body), as_reply));
}

static tony_apiauth_claim claim(long long ts, unsigned char tag) {
    tony_apiauth_claim c;
    memset(&c, 0, sizeof c);
    c.ts = ts;
    memset(c.nonce, tag, sizeof c.nonce);
    return c;
}

static void test_replay(void **state) {
    (void)state;
    tony_apiauth_replay *r = tony_apiauth_replay_new();
    tony_apiauth_claim a = claim(NOW, 1);
    assert_true(tony_apiauth_replay_check(r, 3, &a));
    assert_false(tony_apiauth_replay_check(r, 3, &a)); /* the same again */
    assert_true(tony_apiauth_replay_check(r, 4, &a));  /* another sender has its own */
    assert_true(tony_apiauth_replay_check(r, 10000, &a)); /* slots grow on demand */
    /* out of order within the ring is fine */
    tony_apiauth_claim b = claim(NOW - 5, 2);
    assert_true(tony_apiauth_replay_check(r, 3, &b));
    /* the ring fills: the oldest leaves, and the floor keeps it refused */
    for (int i = 0; i < 3 * TONY_APIAUTH_RING; i++) {
        tony_apiauth_claim c = claim(NOW + 1 + i, (unsigned char)(10 + i));
        assert_true(tony_apiauth_replay_check(r, 3, &c));
    }
    assert_true(tony_apiauth_replay_floor(r, 3) >= NOW);
    assert_false(tony_apiauth_replay_check(r, 3, &a));
    assert_false(tony_apiauth_replay_check(r, 3, &b));
    tony_apiauth_claim fresh = claim(NOW + 1000, 99);
    assert_true(tony_apiauth_replay_check(r, 3, &fresh));
    assert_int_equal(tony_apiauth_replay_floor(r, 5), 0);
    tony_apiauth_replay_free(r);
}

static void test_clock(void **state) {
    (void)state;
    tony_apiauth_clock c = {0};
    /* timestamps never go back, even when the wall clock does */
    long long t1 = tony_apiauth_clock_next(&c, NOW);
    long long t2 = tony_apiauth_clock_next(&c, NOW - 3000);
    assert_true(t2 > t1);
    /* a node 10 minutes behind: told the coordinator's time, it signs in its window */
    tony_apiauth_clock behind = {0};
    long long local = NOW - 600000;
    tony_apiauth_request r;
    tony_apiauth_claim cl;
    long long ts = tony_apiauth_clock_next(&behind, local);
    assert_int_equal(tony_apiauth_sign_request(&key, "POST", "h", "/", "", 0, ts, &r), 0);
    assert_int_equal(check(&key, r.header, "POST", "h", "/", "", NOW, &cl), TONY_APIAUTH_BAD_CLOCK);
    tony_apiauth_clock_correct(&behind, local, NOW, 0);
    ts = tony_apiauth_clock_next(&behind, local + 10);
    assert_int_equal(tony_apiauth_sign_request(&key, "POST", "h", "/", "", 0, ts, &r), 0);
    assert_int_equal(check(&key, r.header, "POST", "h", "/", "", NOW + 10, &cl), TONY_APIAUTH_OK);
    /* one 10 minutes ahead comes back into the window too */
    tony_apiauth_clock ahead = {0};
    tony_apiauth_clock_next(&ahead, NOW + 600000);
    tony_apiauth_clock_correct(&ahead, NOW + 600000, NOW, 0);
    ts = tony_apiauth_clock_next(&ahead, NOW + 600000);
    assert_true(ts > NOW - 10 && ts - NOW < TONY_APIAUTH_WINDOW_MS);
    /* a floor above the coordinator's time (a sender before us ran ahead): above it */
    tony_apiauth_clock c2 = {0};
    tony_apiauth_clock_correct(&c2, NOW, NOW, NOW + 2000);
    assert_true(tony_apiauth_clock_next(&c2, NOW) > NOW + 2000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sign_and_verify),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_reply),
        cmocka_unit_test(test_replay),
        cmocka_unit_test(test_clock),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
