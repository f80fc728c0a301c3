/* Unit tests of the yarn backend's log reads (nmlog.h) against a stand-in
 * NodeManager on the test's own loop: it answers as Hadoop 3.4.1's log REST
 * does (header with LogLength, the head or tail of `size` bytes, footer;
 * the real one is exercised by tests/e2e/test_yarn_logs.py), or fails in
 * the ways a node can: refused, closed, silent, an error page, garbage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "backend/yarn/nmlog.h"
#include "common/strv.h"

#define CID "container_1700000000000_0001_01_000002"
#define CHUNK (64 * 1024)

/* The stand-in NodeManager and what it saw. */
typedef struct stand_in {
    struct event_base *base;
    struct evhttp *http;
    int port;
    tony_buf out, err; /* the container's stdout and stderr; err.data NULL: not written */
    long long sizes[8];
    int nreads;
    long long grow;   /* bytes appended to stdout after each read */
    int fail_code;    /* answer this HTTP code with an error page instead */
    bool garbage;     /* answer 200 without the log header */
    const char *need_cookie; /* a kerberized NodeManager: 401 without this Cookie */
} stand_in;

static void answer(struct evhttp_request *req, int code, const char *body, size_t len) {
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, body, len);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain");
    evhttp_send_reply(req, code, NULL, b);
    evbuffer_free(b);
}

static void on_nm_request(struct evhttp_request *req, void *arg) {
    stand_in *s = arg;
    const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
    const char *path = evhttp_uri_get_path(u), *prefix = "/ws/v1/node/containerlogs/" CID "/";
    const char *name = tony_str_starts_with(path, prefix) ? path + strlen(prefix) : "";
    const char *accept = evhttp_find_header(evhttp_request_get_input_headers(req), "Accept");
    if (accept && tony_str_starts_with(accept, "application/json")) return answer(req, 503, "{}", 2);
    const char *cookie = evhttp_find_header(evhttp_request_get_input_headers(req), "Cookie");
    if (s->need_cookie && !(cookie && strcmp(cookie, s->need_cookie) == 0))
        return answer(req, 401, "Authentication required", 23);
    tony_buf *f = strcmp(name, "stdout") == 0 ? &s->out : strcmp(name, "stderr") == 0 ? &s->err : NULL;
    if (!f || !f->data) {
        static const char missing[] = "java.lang.Exception: Cannot find this log on the local disk.";
        return answer(req, 404, missing, sizeof missing - 1);
    }
    if (s->fail_code) {
        static const char page[] = "<html>\nboom\n</html>";
        return answer(req, s->fail_code, page, sizeof page - 1);
    }
    if (s->garbage) return answer(req, 200, "hello", 5);
    struct evkeyvalq q;
    evhttp_parse_query_str(evhttp_uri_get_query(u) ? evhttp_uri_get_query(u) : "", &q);
    const char *sz = evhttp_find_header(&q, "size");
    long long len = (long long)f->len, size = sz ? atoll(sz) : len;
    evhttp_clear_headers(&q);
    if (s->nreads < 8) s->sizes[s->nreads] = size;
    s->nreads++;
    long long from = size >= 0 ? 0 : (len + size > 0 ? len + size : 0), to = size >= 0 && size < len ? size : len;
    char *head = tony_sprintf("Container: " CID " on localhost:1\nLogAggregationType: LOCAL\n====\nLogType:%s\n"
                              "LogLastModifiedTime:now\nLogLength:%lld\nLogContents:\n",
                              name, len);
    char *foot = tony_sprintf("End of LogType:%s.\n****\n\n", name);
    tony_buf body = {0};
    tony_buf_append(&body, head, strlen(head));
    tony_buf_append(&body, f->data + from, (size_t)(to - from));
    tony_buf_append(&body, foot, strlen(foot));
    answer(req, 200, body.data, body.len);
    tony_buf_free(&body);
    free(head);
    free(foot);
    for (long long i = 0; f == &s->out && i < s->grow; i++) tony_buf_append(&s->out, "g", 1);
}

static int port_of(evutil_socket_t fd) {
    struct sockaddr_in a;
    socklen_t n = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &n);
    return ntohs(a.sin_port);
}

static stand_in *stand_in_new(void) {
    stand_in *s = tony_xcalloc(1, sizeof *s);
    s->base = event_base_new();
    s->http = evhttp_new(s->base);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(s->http, "127.0.0.1", 0);
    assert_non_null(bs);
    s->port = port_of(evhttp_bound_socket_get_fd(bs));
    evhttp_set_gencb(s->http, on_nm_request, s);
    return s;
}

static void stand_in_free(stand_in *s) {
    evhttp_free(s->http);
    event_base_free(s->base);
    tony_buf_free(&s->out);
    tony_buf_free(&s->err);
    free(s);
}

/* One read's outcome. */
typedef struct outcome {
    int calls, code;
    char msg[1024];
    tony_buf data;
    tony_log_chunk c;
    struct event_base *stop; /* broken out of when the callback runs */
} outcome;

static void on_done(void *ctx, int code, const char *msg, const tony_log_chunk *c) {
    outcome *o = ctx;
    o->calls++;
    o->code = code;
    snprintf(o->msg, sizeof o->msg, "%s", msg ? msg : "");
    tony_buf_free(&o->data);
    if (c) {
        o->c = *c;
        tony_buf_append(&o->data, c->data, c->n);
        o->c.data = NULL;
    }
    if (o->stop) event_base_loopbreak(o->stop);
}

static char *link_to(int port) { return tony_sprintf("http://127.0.0.1:%d/node/containerlogs/" CID "/alice", port); }

/* Reads stream from offset through the link to port and runs the loop
 * until the callback (or 30 s). */
static void read_log(struct event_base *base, yarn_nmlog *nl, int port, const char *stream, long long offset,
                     outcome *o) {
    char *link = link_to(port);
    tony_log_request r = {.url = link, .who = "worker:0", .stream = stream, .offset = offset, .max = CHUNK};
    tony_log_read *rd = NULL;
    tony_error err;
    o->calls = 0;
    o->stop = base;
    assert_int_equal(yarn_nmlog_read(nl, &r, on_done, o, &rd, &err), 0);
    assert_non_null(rd);
    free(link);
    struct timeval limit = {30, 0};
    event_base_loopexit(base, &limit);
    event_base_dispatch(base);
    assert_int_equal(o->calls, 1);
}

static void test_ranges(void **state) {
    (void)state;
    stand_in *s = stand_in_new();
    yarn_nmlog *nl = yarn_nmlog_new(s->base);
    for (int i = 0; i < 30000; i++) {
        char line[16];
        snprintf(line, sizeof line, "line %06d\n", i);
        tony_buf_append(&s->out, line, strlen(line));
    }
    long long len = (long long)s->out.len; /* 330000 */
    long long offsets[] = {0, 100, 200000, len - 5000, len - CHUNK - 17, len};
    outcome o = {0};
    for (size_t i = 0; i < sizeof offsets / sizeof *offsets; i++) {
        long long off = offsets[i];
        s->nreads = 0;
        read_log(s->base, nl, s->port, "stdout", off, &o);
        assert_int_equal(o.code, 200);
        long long want = len - off < CHUNK ? len - off : CHUNK;
        assert_int_equal(o.data.len, want);
        assert_memory_equal(o.data.data, s->out.data + off, (size_t)want);
        assert_int_equal(o.c.offset, off);
        assert_int_equal(o.c.size, len);
        assert_true(o.c.exists);
        /* a reader near the end costs one tail read; else a second read */
        assert_int_equal(s->nreads, off == 0 || len - off <= 2 * CHUNK ? 1 : 2);
    }
    /* from the start, the head; near the end, a tail of two chunks */
    s->nreads = 0;
    read_log(s->base, nl, s->port, "stdout", 0, &o);
    assert_int_equal(s->sizes[0], CHUNK);
    s->nreads = 0;
    read_log(s->base, nl, s->port, "stdout", len - 10, &o);
    assert_int_equal(s->sizes[0], -2 * CHUNK);

    read_log(s->base, nl, s->port, "stdout", len + 1, &o);
    assert_int_equal(o.code, 400);
    assert_non_null(strstr(o.msg, "past the end"));

    /* nothing written to stderr yet: as a file that does not exist */
    read_log(s->base, nl, s->port, "stderr", 0, &o);
    assert_int_equal(o.code, 200);
    assert_false(o.c.exists);
    assert_int_equal(o.c.size, 0);
    assert_int_equal(o.data.len, 0);
    read_log(s->base, nl, s->port, "stderr", 3, &o);
    assert_int_equal(o.code, 400);

    /* a log that outgrows the tails (past the first, and past the wider
     * one sized by the length the first saw): the head finds it */
    s->grow = 4 * CHUNK;
    s->nreads = 0;
    long long off = len - 2 * CHUNK - 9000;
    read_log(s->base, nl, s->port, "stdout", off, &o);
    assert_int_equal(o.code, 200);
    assert_int_equal(s->nreads, 3);
    assert_int_equal(s->sizes[1], -(len - off + CHUNK));
    assert_int_equal(s->sizes[2], off + CHUNK);
    assert_int_equal(o.data.len, CHUNK);
    assert_memory_equal(o.data.data, s->out.data + off, CHUNK);
    tony_buf_free(&o.data);
    yarn_nmlog_free(nl);
    stand_in_free(s);
}

static void test_bad_answers(void **state) {
    (void)state;
    stand_in *s = stand_in_new();
    yarn_nmlog *nl = yarn_nmlog_new(s->base);
    tony_buf_append(&s->out, "hello\n", 6);
    outcome o = {0};
    s->fail_code = 500;
    read_log(s->base, nl, s->port, "stdout", 0, &o);
    assert_int_equal(o.code, 502);
    assert_non_null(strstr(o.msg, "answered HTTP 500 for worker:0's stdout (container " CID "): <html>"));
    assert_null(strstr(o.msg, "boom")); /* the first line only */
    s->fail_code = 0;
    s->garbage = true;
    read_log(s->base, nl, s->port, "stdout", 0, &o);
    assert_int_equal(o.code, 502);
    assert_non_null(strstr(o.msg, "LogLength/LogContents"));
    char *from = tony_sprintf("(from http://127.0.0.1:%d)", s->port);
    assert_non_null(strstr(o.msg, from));
    free(from);
    tony_buf_free(&o.data);
    yarn_nmlog_free(nl);
    stand_in_free(s);
}

/* What the coordinator's NodeManager logins (nm_spnego.h) saw and give. */
typedef struct auth_seen {
    const char *cookie; /* what cookie_for gives; NULL: no login yet */
    int refused;
    char base[128];
} auth_seen;

static const char *auth_cookie(void *ctx, const char *base) {
    (void)base;
    return ((auth_seen *)ctx)->cookie;
}

static void auth_refused(void *ctx, const char *base) {
    auth_seen *a = ctx;
    a->refused++;
    snprintf(a->base, sizeof a->base, "%s", base);
}

/* A kerberized NodeManager answers 401 without its session cookie: without
 * a login the read says what to do; with one, the first 401 asks for a
 * login (and the read says to try again), and once the cookie is there
 * every read carries it. */
static void test_kerberized_nodemanager(void **state) {
    (void)state;
    stand_in *s = stand_in_new();
    yarn_nmlog *nl = yarn_nmlog_new(s->base);
    tony_buf_append(&s->out, "hello\n", 6);
    s->need_cookie = "hadoop.auth=\"u=tony&t=kerberos\"";
    outcome o = {0};
    read_log(s->base, nl, s->port, "stdout", 0, &o);
    assert_int_equal(o.code, 502);
    assert_non_null(strstr(o.msg, "wants Kerberos (SPNEGO), and the coordinator has no login"));
    assert_non_null(strstr(o.msg, "tony.keytab.user"));
    auth_seen a = {0};
    yarn_nmlog_auth auth = {.cookie = auth_cookie, .refused = auth_refused, .ctx = &a};
    yarn_nmlog_set_auth(nl, &auth);
    read_log(s->base, nl, s->port, "stdout", 0, &o);
    assert_int_equal(o.code, 502);
    assert_non_null(strstr(o.msg, "logging in to it"));
    assert_int_equal(a.refused, 1);
    char *base = tony_sprintf("http://127.0.0.1:%d", s->port);
    assert_string_equal(a.base, base);
    free(base);
    a.cookie = "hadoop.auth=\"stale\"";
    read_log(s->base, nl, s->port, "stdout", 0, &o);
    assert_int_equal(o.code, 502);
    assert_int_equal(a.refused, 2); /* an expired cookie: another login */
    a.cookie = s->need_cookie;
    read_log(s->base, nl, s->port, "stdout", 0, &o);
    assert_int_equal(o.code, 200);
    assert_int_equal(o.data.len, 6);
    assert_memory_equal(o.data.data, "hello\n", 6);
    assert_int_equal(a.refused, 2);
    tony_buf_free(&o.data);
    yarn_nmlog_free(nl);
    stand_in_free(s);
}

/* A port where nothing listens (it was free a moment ago). */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(fd, (struct sockaddr *)&a, sizeof a);
    int port = port_of(fd);
    close(fd);
    return port;
}

/* A node that accepts and then closes at once, or says nothing at all. */
typedef struct mute {
    struct evconnlistener *l;
    int port;
    bool hang_up;
    int fds[4];
    int nfds;
} mute;

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *a, int n, void *arg) {
    (void)l, (void)a, (void)n;
    mute *m = arg;
    if (m->hang_up || m->nfds == 4) close(fd);
    else m->fds[m->nfds++] = fd;
}

static void mute_start(mute *m, struct event_base *base, bool hang_up) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    m->hang_up = hang_up;
    m->l = evconnlistener_new_bind(base, on_accept, m, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 16,
                                   (struct sockaddr *)&a, sizeof a);
    assert_non_null(m->l);
    m->port = port_of(evconnlistener_get_fd(m->l));
}

static void mute_stop(mute *m) {
    evconnlistener_free(m->l);
    for (int i = 0; i < m->nfds; i++) close(m->fds[i]);
}

static void test_unreachable_nodes(void **state) {
    (void)state;
    struct event_base *base = event_base_new();
    yarn_nmlog *nl = yarn_nmlog_new(base);
    outcome o = {0};
    int port = free_port();
    read_log(base, nl, port, "stdout", 0, &o);
    assert_int_equal(o.code, 502);
    char *want = tony_sprintf("cannot read worker:0's stdout from its NodeManager at http://127.0.0.1:%d: "
                              "the connection failed (refused or unreachable)",
                              port);
    assert_string_equal(o.msg, want);
    free(want);

    mute m = {0};
    mute_start(&m, base, true);
    read_log(base, nl, m.port, "stdout", 0, &o);
    assert_int_equal(o.code, 502);
    assert_non_null(strstr(o.msg, "it closed the connection"));
    mute_stop(&m);

    memset(&m, 0, sizeof m);
    mute_start(&m, base, false);
    yarn_nmlog_set_timeout(nl, 1);
    read_log(base, nl, m.port, "stderr", 0, &o);
    assert_int_equal(o.code, 502);
    assert_non_null(strstr(o.msg, "worker:0's stderr"));
    assert_non_null(strstr(o.msg, "no answer within 1 s"));
    mute_stop(&m);

    /* a refused read's connection is freed just after its callback: the
     * reader may go first */
    read_log(base, nl, free_port(), "stdout", 0, &o);
    yarn_nmlog_free(nl);
    event_base_free(base);
}

static void test_bad_links(void **state) {
    (void)state;
    struct event_base *base = event_base_new();
    yarn_nmlog *nl = yarn_nmlog_new(base);
    tony_error err;
    assert_int_equal(yarn_nmlog_check_link("http://node7:8042/node/containerlogs/" CID "/alice", &err), 0);
    const char *bad[] = {"", "/tmp/x/stdout", "http://node7/node/containerlogs/" CID "/alice",
                         "http://node7:0/node/containerlogs/" CID "/alice", "http://node7:8042/elsewhere"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(yarn_nmlog_check_link(bad[i], &err), -1);
        tony_log_request r = {.url = bad[i], .who = "worker:0", .stream = "stdout", .max = CHUNK};
        tony_log_read *rd = (tony_log_read *)&err;
        assert_int_equal(yarn_nmlog_read(nl, &r, on_done, NULL, &rd, &err), -1);
        assert_null(rd);
        assert_true(strstr(err.msg, "log link") != NULL);
    }
    yarn_nmlog_free(nl);
    event_base_free(base);
}

/* Cancelled reads never call back, whatever state they were in; the reader
 * freed with reads in flight drops them. */
static void test_cancel(void **state) {
    (void)state;
    stand_in *s = stand_in_new();
    yarn_nmlog *nl = yarn_nmlog_new(s->base);
    tony_buf_append(&s->out, "hello\n", 6);
    mute m = {0};
    mute_start(&m, s->base, false);
    char *link = link_to(s->port), *silent = link_to(m.port);
    outcome o = {0};
    tony_log_request r = {.url = link, .who = "worker:0", .stream = "stdout", .max = CHUNK};
    tony_log_read *rd;
    tony_error err;
    /* before it was sent */
    assert_int_equal(yarn_nmlog_read(nl, &r, on_done, &o, &rd, &err), 0);
    yarn_nmlog_cancel(rd);
    /* while the node sits on it */
    r.url = silent;
    assert_int_equal(yarn_nmlog_read(nl, &r, on_done, &o, &rd, &err), 0);
    struct timeval t = {0, 200 * 1000};
    event_base_loopexit(s->base, &t);
    event_base_dispatch(s->base);
    assert_int_equal(m.nfds, 1);
    yarn_nmlog_cancel(rd);
    event_base_loopexit(s->base, &t);
    event_base_dispatch(s->base);
    assert_int_equal(o.calls, 0);
    /* left in flight when the reader goes */
    assert_int_equal(yarn_nmlog_read(nl, &r, on_done, &o, &rd, &err), 0);
    r.url = link;
    assert_int_equal(yarn_nmlog_read(nl, &r, on_done, &o, &rd, &err), 0);
    yarn_nmlog_free(nl);
    event_base_loopexit(s->base, &t);
    event_base_dispatch(s->base);
    assert_int_equal(o.calls, 0);
    free(link);
    free(silent);
    mute_stop(&m);
    stand_in_free(s);
}

/* No file descriptor left (EMFILE): libevent fails the request from inside
 * evhttp_make_request. The callback still comes later, from the loop, once,
 * and names the cause; the read's memory is not touched after it. */
static void test_no_socket_left(void **state) {
    (void)state;
    stand_in *s = stand_in_new();
    yarn_nmlog *nl = yarn_nmlog_new(s->base);
    tony_buf_append(&s->out, "hello\n", 6);
    outcome o = {0};
    read_log(s->base, nl, s->port, "stdout", 0, &o); /* sets up the resolver while fds are free */
    assert_int_equal(o.code, 200);
    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    int lowest_free = dup(0);
    assert_true(lowest_free >= 0);
    close(lowest_free);
    struct rlimit tight = {(rlim_t)lowest_free, old.rlim_max};
    char *link = link_to(s->port);
    tony_log_request r = {.url = link, .who = "worker:0", .stream = "stdout", .offset = 0, .max = CHUNK};
    tony_log_read *rd = NULL;
    tony_error err;
    o.calls = 0;
    o.stop = s->base;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &tight), 0);
    int rc = yarn_nmlog_read(nl, &r, on_done, &o, &rd, &err);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    free(link);
    assert_int_equal(o.calls, 0); /* never from inside the call */
    if (rc == 0) {
        struct timeval limit = {30, 0};
        event_base_loopexit(s->base, &limit);
        event_base_dispatch(s->base);
        assert_int_equal(o.calls, 1);
        assert_int_equal(o.code, 502);
        assert_non_null(strstr(o.msg, "worker:0's stdout"));
    } else {
        assert_non_null(strstr(err.msg, "cannot ask the NodeManager"));
    }
    tony_buf_free(&o.data);
    yarn_nmlog_free(nl);
    stand_in_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranges),  cmocka_unit_test(test_bad_answers), cmocka_unit_test(test_unreachable_nodes),
        cmocka_unit_test(test_bad_links), cmocka_unit_test(test_cancel), cmocka_unit_test(test_no_socket_left),
        cmocka_unit_test(test_kerberized_nodemanager),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
