/* Unit tests of the coordinator's side of GET .../log for a task whose log
 * the backend reads (am/logfetch.c): a real HTTP server and client on the
 * test's loop, and a stand-in backend whose reads the test completes by
 * hand (the yarn backend's real reads are test_yarn_nmlog.c's), so that
 * each moment of a read's life can be chosen: answered, failed, refused at
 * once, its client gone, the coordinator shutting down. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "am/logfetch.h"
#include "am/reply.h"
#include "common/strv.h"

#define LINK "http://node7:8042/node/containerlogs/container_1_0001_01_000002/alice"

/* The stand-in backend: at most one read at a time. */
typedef struct fake_backend {
    tony_backend base;
    bool refuse;           /* read_log fails at once */
    tony_log_read *read;   /* the read in flight */
    tony_log_cb cb;
    void *ctx;
    char url[256], who[64], stream[16];
    long long offset, max;
    int reads, cancels;
} fake_backend;

struct tony_log_read {
    int unused;
};

static int fake_check(const tony_backend *b, const char *link, tony_error *err) {
    (void)b;
    return strcmp(link, LINK) == 0 ? 0 : tony_err(err, "not a link of ours: %s", link);
}

static int fake_read(tony_backend *base, const tony_log_request *r, tony_log_cb cb, void *ctx, tony_log_read **out,
                     tony_error *err) {
    fake_backend *b = (fake_backend *)base;
    b->reads++;
    snprintf(b->url, sizeof b->url, "%s", r->url);
    snprintf(b->who, sizeof b->who, "%s", r->who);
    snprintf(b->stream, sizeof b->stream, "%s", r->stream);
    b->offset = r->offset;
    b->max = r->max;
    if (b->refuse) return tony_err(err, "cannot ask the node for %s's %s", r->who, r->stream);
    assert_null(b->read);
    b->read = tony_xcalloc(1, sizeof *b->read);
    b->cb = cb;
    b->ctx = ctx;
    *out = b->read;
    return 0;
}

static void fake_cancel(tony_backend *base, tony_log_read *read) {
    fake_backend *b = (fake_backend *)base;
    assert_ptr_equal(read, b->read);
    b->cancels++;
    free(b->read);
    b->read = NULL;
}

/* Ends the read in flight as the backend would, from the loop. */
static void fake_complete(fake_backend *b, int code, const char *msg, const tony_log_chunk *c) {
    assert_non_null(b->read);
    free(b->read);
    b->read = NULL;
    b->cb(b->ctx, code, msg, c);
}

static void fake_free(tony_backend *b) { (void)b; }

static const tony_backend_ops fake_ops = {.name = "fake", .check_log_url = fake_check, .read_log = fake_read,
                                          .cancel_log = fake_cancel, .free = fake_free};
static const tony_backend_ops plain_ops = {.name = "local", .free = fake_free};

typedef struct world {
    struct event_base *base;
    struct evhttp *http;
    int port;
    tony_am am;
    fake_backend be;
    struct evhttp_connection *client;
    int code;      /* the client's answer: 0 while none, -1 when it failed */
    json_t *body;
} world;

static void on_server_request(struct evhttp_request *req, void *arg) {
    world *w = arg;
    am_logfetch_start(&w->am, req, LINK, "worker", 0, 2, "stderr", 5);
}

static int setup(void **state) {
    world *w = tony_xcalloc(1, sizeof *w);
    w->base = event_base_new();
    w->http = evhttp_new(w->base);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(w->http, "127.0.0.1", 0);
    assert_non_null(bs);
    struct sockaddr_in a;
    socklen_t n = sizeof a;
    getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&a, &n);
    w->port = ntohs(a.sin_port);
    evhttp_set_gencb(w->http, on_server_request, w);
    w->be.base.ops = &fake_ops;
    w->am.base = w->base;
    w->am.backend = &w->be.base;
    *state = w;
    return 0;
}

static int teardown(void **state) {
    world *w = *state;
    am_logfetch_free_all(&w->am);
    if (w->http) evhttp_free(w->http);
    if (w->client) evhttp_connection_free(w->client);
    json_decref(w->body);
    free(w->be.read);
    event_base_free(w->base);
    free(w);
    return 0;
}

static void on_client_answer(struct evhttp_request *r, void *arg) {
    world *w = arg;
    w->code = r ? evhttp_request_get_response_code(r) : 0;
    if (w->code == 0) w->code = -1;
    if (r && w->code > 0) {
        struct evbuffer *in = evhttp_request_get_input_buffer(r);
        size_t len = evbuffer_get_length(in);
        char *s = tony_xmalloc(len + 1);
        evbuffer_copyout(in, s, len);
        s[len] = '\0';
        json_decref(w->body);
        w->body = json_loads(s, 0, NULL);
        free(s);
    }
}

/* Runs the loop until cond holds (or 10 s pass). */
static void run_until(world *w, bool (*cond)(const world *)) {
    for (int i = 0; i < 1000 && !cond(w); i++) {
        struct timeval t = {0, 10 * 1000};
        event_base_loopexit(w->base, &t);
        event_base_dispatch(w->base);
    }
    assert_true(cond(w));
}

static bool read_asked(const world *w) { return w->be.reads > 0; }
static bool answered(const world *w) { return w->code != 0; }

static void ask(world *w) {
    w->client = evhttp_connection_base_new(w->base, NULL, "127.0.0.1", (unsigned short)w->port);
    struct evhttp_request *r = evhttp_request_new(on_client_answer, w);
    evhttp_add_header(evhttp_request_get_output_headers(r), "Host", "127.0.0.1");
    assert_int_equal(evhttp_make_request(w->client, r, EVHTTP_REQ_GET, "/v1/tasks/worker/0/log"), 0);
    run_until(w, read_asked);
}

static void test_chunk(void **state) {
    world *w = *state;
    ask(w);
    assert_string_equal(w->be.url, LINK);
    assert_string_equal(w->be.who, "worker:0");
    assert_string_equal(w->be.stream, "stderr");
    assert_int_equal(w->be.offset, 5);
    assert_int_equal(w->be.max, AM_LOG_CHUNK);
    assert_int_equal(w->code, 0); /* no answer before the read's */
    tony_log_chunk c = {.data = "hello", .n = 5, .offset = 5, .size = 12, .exists = true};
    fake_complete(&w->be, 200, NULL, &c);
    run_until(w, answered);
    assert_int_equal(w->code, 200);
    json_t *b = w->body;
    assert_string_equal(json_string_value(json_object_get(b, "data")), "hello");
    assert_string_equal(json_string_value(json_object_get(b, "role")), "worker");
    assert_string_equal(json_string_value(json_object_get(b, "stream")), "stderr");
    assert_int_equal(json_integer_value(json_object_get(b, "attempt")), 2);
    assert_int_equal(json_integer_value(json_object_get(b, "offset")), 5);
    assert_int_equal(json_integer_value(json_object_get(b, "next")), 10);
    assert_int_equal(json_integer_value(json_object_get(b, "size")), 12);
    assert_true(json_is_true(json_object_get(b, "exists")));
    assert_null(w->am.logfetches);
    assert_int_equal(w->be.cancels, 0);
}

static void test_error(void **state) {
    world *w = *state;
    ask(w);
    fake_complete(&w->be, 502, "cannot read worker:0's stderr from its NodeManager", NULL);
    run_until(w, answered);
    assert_int_equal(w->code, 502);
    assert_string_equal(json_string_value(json_object_get(w->body, "error")),
                        "cannot read worker:0's stderr from its NodeManager");
    assert_null(w->am.logfetches);
}

static void test_refused_at_once(void **state) {
    world *w = *state;
    w->be.refuse = true;
    ask(w);
    run_until(w, answered);
    assert_int_equal(w->code, 502);
    assert_string_equal(json_string_value(json_object_get(w->body, "error")),
                        "cannot ask the node for worker:0's stderr");
    assert_null(w->am.logfetches);
}

/* The client leaves while the read runs: its answer goes nowhere, and
 * nothing is used after it went. */
static void test_client_gone(void **state) {
    world *w = *state;
    ask(w);
    evhttp_connection_free(w->client);
    w->client = NULL;
    struct timeval t = {0, 50 * 1000};
    event_base_loopexit(w->base, &t);
    event_base_dispatch(w->base);
    if (w->be.read) {
        tony_log_chunk c = {.data = "late", .n = 4, .offset = 5, .size = 9, .exists = true};
        fake_complete(&w->be, 200, NULL, &c);
    }
    event_base_loopexit(w->base, &t);
    event_base_dispatch(w->base);
    assert_null(w->am.logfetches);
    assert_int_equal(w->code, 0);
}

/* The coordinator stops with a read in flight: the read is cancelled, the
 * client's request goes with the server, unanswered. */
static void test_shutdown(void **state) {
    world *w = *state;
    ask(w);
    assert_non_null(w->am.logfetches);
    am_logfetch_free_all(&w->am);
    assert_null(w->am.logfetches);
    assert_int_equal(w->be.cancels, 1);
    assert_null(w->be.read);
    evhttp_free(w->http);
    w->http = NULL;
    run_until(w, answered);
    assert_int_equal(w->code, -1);
}

static void test_which_links(void **state) {
    world *w = *state;
    tony_error err;
    assert_int_equal(am_backend_reads_log_url(&w->am, LINK, &err), 0);
    assert_int_equal(am_backend_reads_log_url(&w->am, "http://elsewhere/x", &err), -1);
    assert_string_equal(err.msg, "not a link of ours: http://elsewhere/x");
    w->be.base.ops = &plain_ops;
    assert_int_equal(am_backend_reads_log_url(&w->am, LINK, &err), -1);
    assert_non_null(strstr(err.msg, "the local backend reads no log links"));
    w->am.backend = NULL;
    assert_int_equal(am_backend_reads_log_url(&w->am, LINK, &err), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_chunk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_which_links, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
