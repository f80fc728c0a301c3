/* Unit tests of common/http.c's signed calls against a real HTTP server on
 * loopback (a thread of this process) that checks requests and signs
 * answers as the coordinator does (common/apiauth.h, httpreply.c): a
 * signed answer is taken; an unsigned one, or one signed with another key,
 * is refused with unsigned_answer set and no body or status left to act
 * on; a coordinator whose clock is 10 minutes ahead answers the first try
 * with its time, and the call goes through on the second. Calls reuse one
 * kept connection, and a connection the server closed while idle is
 * replaced unasked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <string.h>

#include "common/apiauth.h"
#include "common/clock.h"
#include "common/http.h"
#include "common/httpreply.h"
#include "common/strv.h"

#define SECRET "unit-test-secret"
#define SKEW_MS 600000LL

static struct event_base *base;
static struct evhttp *http;
static int port;
static pthread_t thread;
static int requests_seen;
/* the client port of each request seen: one per connection the client made */
#define MAX_PORTS 64
static unsigned short client_ports[MAX_PORTS];
static int nports;
/* the server closes a connection idle this long (evhttp's timeout) */
#define IDLE_CLOSE_S 1

static void note_client_port(struct evhttp_request *req) {
    char *addr = NULL;
    ev_uint16_t p = 0;
    evhttp_connection_get_peer(evhttp_request_get_connection(req), &addr, &p);
    for (int i = 0; i < nports; i++)
        if (client_ports[i] == p) return;
    if (nports < MAX_PORTS) client_ports[nports++] = p;
}

static void handle(struct evhttp_request *req, void *arg) {
    (void)arg;
    const char *path = evhttp_request_get_uri(req);
    if (strcmp(path, "/quit") == 0) {
        tony_http_reply_json(req, 200, json_object());
        /* not at once: the answer is still to be written (the caller would
         * wait for it to its timeout) */
        struct timeval soon = {0, 50000};
        event_base_loopexit(base, &soon);
        return;
    }
    requests_seen++;
    note_client_port(req);
    tony_apiauth_key key, other;
    tony_apiauth_key_from_secret(SECRET, &key);
    tony_apiauth_key_from_secret("someone else", &other);
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    struct evbuffer *body = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(body);
    long long now = tony_wall_ms() + (strcmp(path, "/skew") == 0 ? SKEW_MS : 0);
    tony_apiauth_claim c;
    tony_apiauth_verdict v = tony_apiauth_verify(&key, evhttp_find_header(in, TONY_APIAUTH_HEADER), "POST",
                                                 evhttp_find_header(in, "Host"), path,
                                                 n ? evbuffer_pullup(body, -1) : NULL, n, now, &c);
    if (v == TONY_APIAUTH_BAD_CLOCK) {
        tony_http_reply_sign(req, &key, c.nonce_hex);
        tony_http_reply_json(req, 403, json_pack("{s:s,s:s,s:I,s:I}", "error", "clock", TONY_APIAUTH_REFUSED,
                                                 TONY_APIAUTH_CLOCK, TONY_APIAUTH_NOW_MS, (json_int_t)now,
                                                 TONY_APIAUTH_FLOOR_MS, (json_int_t)0));
        return;
    }
    if (v != TONY_APIAUTH_OK) {
        tony_http_reply_error(req, 403, "not signed");
        return;
    }
    if (strcmp(path, "/wrong-key") == 0) tony_http_reply_sign(req, &other, c.nonce_hex);
    else if (strcmp(path, "/unsigned") != 0) tony_http_reply_sign(req, &key, c.nonce_hex);
    tony_http_reply_json(req, 200, json_pack("{s:s}", "status", "go"));
}

static void *serve(void *arg) {
    (void)arg;
    event_base_dispatch(base);
    return NULL;
}

static int setup(void **state) {
    (void)state;
    base = event_base_new();
    http = evhttp_new(base);
    evhttp_set_gencb(http, handle, NULL);
    evhttp_set_timeout(http, IDLE_CLOSE_S);
    struct evhttp_bound_socket *s = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
    if (!s) return -1;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    getsockname(evhttp_bound_socket_get_fd(s), (struct sockaddr *)&ss, &len);
    port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return pthread_create(&thread, NULL, serve, http);
}

static int teardown(void **state) {
    (void)state;
    tony_http_response r;
    char *url = tony_sprintf("http://127.0.0.1:%d/quit", port);
    if (tony_http_call("GET", url, NULL, NULL, 5000, &r, NULL) == 0) tony_http_response_free(&r);
    free(url);
    pthread_join(thread, NULL);
    evhttp_free(http);
    event_base_free(base);
    return 0;
}

static int post(const char *path, const char *secret, tony_http_response *r, tony_error *err) {
    char *url = tony_sprintf("http://127.0.0.1:%d%s", port, path);
    int rc = tony_http_call("POST", url, secret, "{\"attempt\":0}", 5000, r, err);
    free(url);
    return rc;
}

static void test_signed_answer_taken(void **state) {
    (void)state;
    tony_http_response r;
    tony_error err;
    assert_int_equal(post("/signed", SECRET, &r, &err), 0);
    assert_int_equal(r.status, 200);
    assert_false(r.unsigned_answer);
    assert_non_null(strstr(r.body, "go"));
    tony_http_response_free(&r);
}

static void test_unsigned_answers_refused(void **state) {
    (void)state;
    const char *paths[] = {"/unsigned", "/wrong-key"};
    for (size_t i = 0; i < 2; i++) {
        tony_http_response r;
        tony_error err;
        assert_int_equal(post(paths[i], SECRET, &r, &err), -1);
        assert_true(r.unsigned_answer);
        assert_null(r.body);
        assert_int_equal(r.status, 0);
        assert_non_null(strstr(err.msg, "not signed by the job's coordinator"));
    }
    /* without the secret a call is not signed, and its answer taken as it is */
    tony_http_response r;
    tony_error err;
    assert_int_equal(post("/unsigned", NULL, &r, &err), 0);
    assert_int_equal(r.status, 403);
    tony_http_response_free(&r);
}

static void test_clock_corrected_once(void **state) {
    (void)state;
    tony_http_response r;
    tony_error err;
    int before = requests_seen;
    assert_int_equal(post("/skew", SECRET, &r, &err), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(requests_seen - before, 2);
    tony_http_response_free(&r);
    /* the offset stays: the next call is in the window at once */
    before = requests_seen;
    assert_int_equal(post("/skew", SECRET, &r, &err), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(requests_seen - before, 1);
    tony_http_response_free(&r);
}

static void test_connection_kept(void **state) {
    (void)state;
    tony_http_response r;
    tony_error err;
    assert_int_equal(post("/signed", SECRET, &r, &err), 0); /* a new connection, or the kept one */
    tony_http_response_free(&r);
    int before = nports;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(post("/signed", SECRET, &r, &err), 0);
        assert_int_equal(r.status, 200);
        tony_http_response_free(&r);
    }
    assert_int_equal(nports, before); /* all five on the first call's connection */
}

static void test_reconnects_after_idle_close(void **state) {
    (void)state;
    tony_http_response r;
    tony_error err;
    assert_int_equal(post("/signed", SECRET, &r, &err), 0);
    tony_http_response_free(&r);
    int before = nports;
    tony_sleep_ms(IDLE_CLOSE_S * 1000 + 700); /* the server closed the idle connection meanwhile */
    assert_int_equal(post("/signed", SECRET, &r, &err), 0);
    assert_int_equal(r.status, 200);
    assert_false(r.unsigned_answer);
    tony_http_response_free(&r);
    assert_int_equal(nports, before + 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signed_answer_taken),
        cmocka_unit_test(test_unsigned_answers_refused),
        cmocka_unit_test(test_clock_corrected_once),
        cmocka_unit_test(test_connection_kept),
        cmocka_unit_test(test_reconnects_after_idle_close),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
