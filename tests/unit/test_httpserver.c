/* Unit tests of common/httpserver: silent connections are closed after the
 * timeout (a long poll the handler holds is not); at the connection cap
 * the one idle longest makes room for a new one, never one whose request
 * the handler holds (a long poll); oversized headers are refused; and a
 * server out of descriptors stops accepting for a moment, saying so in one
 * log line, instead of spinning on accept(); a user is told when an answer
 * it sent was written out, or its connection closed first. The clients are real sockets
 * of this process on the loopback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <event2/buffer.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/httpserver.h"
#include "common/log.h"

typedef struct fixture {
    struct event_base *base;
    tony_http_server *srv;
    int port;
    struct evhttp_request *held[8]; /* requests to /hold, answered when the test says */
    int nheld;
} fixture;

static void handler(struct evhttp_request *req, void *arg) {
    fixture *f = arg;
    if (strcmp(evhttp_request_get_uri(req), "/hold") == 0 && f->nheld < 8) {
        f->held[f->nheld++] = req;
        return;
    }
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, "ok", 2);
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}

static void start(fixture *f, int max_conns, int timeout_s) {
    memset(f, 0, sizeof *f);
    f->base = event_base_new();
    tony_http_server_opts o = {.what = "the test server",
                               .max_conns = max_conns,
                               .timeout_s = timeout_s,
                               .max_headers = 8192,
                               .handler = handler,
                               .arg = f};
    f->srv = tony_http_server_new(f->base, &o);
    tony_error err;
    assert_int_equal(tony_http_server_listen(f->srv, "127.0.0.1", 0, &f->port, &err), 0);
}

static void stop(fixture *f) {
    tony_http_server_free(f->srv);
    event_base_free(f->base);
}

static void run_ms(fixture *f, int ms) {
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_loopexit(f->base, &tv);
    event_base_dispatch(f->base);
}

static int client(const fixture *f) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)f->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static void send_str(int fd, const char *s) {
    assert_int_equal(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

/* 1: the peer closed the connection; 0: still open, nothing to read; 2: data. */
static int peer_state(int fd, char *buf, size_t n) {
    ssize_t got = recv(fd, buf, n - 1, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno == ECONNRESET)) return 1;
    if (got < 0) return 0;
    buf[got] = '\0';
    return 2;
}

static void test_silent_connection_closed_after_timeout(void **state) {
    (void)state;
    fixture f;
    start(&f, 0, 1);
    int a = client(&f), b = client(&f), poll = client(&f);
    send_str(b, "GET / HTTP/1.1\r\nHost: x\r\nX-Half: "); /* and never the rest */
    send_str(poll, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");   /* a long poll: silent, but waiting for us */
    run_ms(&f, 300);
    assert_int_equal(tony_http_server_connections(f.srv), 3);
    run_ms(&f, 1200);
    char buf[256];
    assert_int_equal(peer_state(a, buf, sizeof buf), 1);
    assert_int_equal(peer_state(b, buf, sizeof buf), 1);
    assert_int_equal(peer_state(poll, buf, sizeof buf), 0);
    assert_int_equal(tony_http_server_connections(f.srv), 1);
    evhttp_send_reply(f.held[0], 200, "OK", NULL);
    run_ms(&f, 100);
    assert_int_equal(peer_state(poll, buf, sizeof buf), 2);
    assert_non_null(strstr(buf, "200 OK"));
    close(a), close(b), close(poll);
    stop(&f);
}

static void test_cap_closes_the_idlest_for_a_new_one(void **state) {
    (void)state;
    fixture f;
    start(&f, 3, 30);
    int idle[3];
    for (int i = 0; i < 3; i++) {
        idle[i] = client(&f);
        run_ms(&f, 50);
    }
    assert_int_equal(tony_http_server_connections(f.srv), 3);
    int fresh = client(&f);
    send_str(fresh, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    run_ms(&f, 200);
    char buf[512];
    assert_int_equal(peer_state(fresh, buf, sizeof buf), 2);
    assert_non_null(strstr(buf, "200 OK"));
    assert_int_equal(peer_state(idle[0], buf, sizeof buf), 1); /* the oldest made room */
    assert_int_equal(peer_state(idle[1], buf, sizeof buf), 0);
    assert_int_equal(peer_state(idle[2], buf, sizeof buf), 0);
    assert_true(tony_http_server_connections(f.srv) <= 3);
    for (int i = 0; i < 3; i++) close(idle[i]);
    close(fresh);
    stop(&f);
}

static void test_cap_never_closes_a_held_request(void **state) {
    (void)state;
    fixture f;
    start(&f, 2, 30);
    int polls[2];
    for (int i = 0; i < 2; i++) {
        polls[i] = client(&f);
        send_str(polls[i], "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
        run_ms(&f, 50);
    }
    assert_int_equal(f.nheld, 2);
    int third = client(&f); /* connects in the kernel's backlog */
    send_str(third, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    run_ms(&f, 300);
    char buf[512];
    assert_int_equal(peer_state(polls[0], buf, sizeof buf), 0);
    assert_int_equal(peer_state(polls[1], buf, sizeof buf), 0);
    assert_int_equal(peer_state(third, buf, sizeof buf), 0); /* waits: nothing could be closed for it */
    evhttp_send_reply(f.held[0], 200, "OK", NULL);            /* one poll answered: its connection idles */
    run_ms(&f, 300);
    assert_int_equal(peer_state(third, buf, sizeof buf), 2);
    assert_non_null(strstr(buf, "200 OK"));
    assert_int_equal(peer_state(polls[1], buf, sizeof buf), 0); /* still held */
    evhttp_send_reply(f.held[1], 200, "OK", NULL);
    run_ms(&f, 50);
    close(polls[0]), close(polls[1]), close(third);
    stop(&f);
}

/* tony_http_server_when_sent's hook: what it was told, per request. */
typedef struct sent_seen {
    int calls;
    bool written;
} sent_seen;

static void on_sent(void *arg, bool written) {
    sent_seen *s = arg;
    s->calls++;
    s->written = written;
}

static void reply_big(struct evhttp_request *req, size_t n) {
    struct evbuffer *b = evbuffer_new();
    char *body = calloc(1, n);
    evbuffer_add(b, body, n);
    free(body);
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}

static void test_when_sent_tells_written_or_closed(void **state) {
    (void)state;
    fixture f;
    start(&f, 0, 30);
    int read_it = client(&f), gone = client(&f), never = client(&f);
    send_str(read_it, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
    send_str(gone, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
    send_str(never, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
    run_ms(&f, 200);
    assert_int_equal(f.nheld, 3);
    sent_seen seen[3] = {{0}};
    for (int i = 0; i < 3; i++) assert_int_equal(tony_http_server_when_sent(f.srv, f.held[i], on_sent, &seen[i]), 0);
    assert_int_equal(tony_http_server_when_sent(f.srv, f.held[0], on_sent, &seen[0]), -1); /* one per request */
    /* answered and read: written */
    evhttp_send_reply(f.held[0], 200, "OK", NULL);
    run_ms(&f, 200);
    assert_int_equal(seen[0].calls, 1);
    assert_true(seen[0].written);
    /* its peer gone before a large answer: closed, not written */
    close(gone);
    reply_big(f.held[1], 8 << 20);
    run_ms(&f, 500);
    assert_int_equal(seen[1].calls, 1);
    assert_false(seen[1].written);
    assert_int_equal(seen[2].calls, 0);
    /* a server freed with an answer in flight tells nothing */
    reply_big(f.held[2], 8 << 20);
    run_ms(&f, 50);
    assert_int_equal(seen[2].calls, 0);
    close(read_it), close(never);
    stop(&f);
    assert_int_equal(seen[2].calls, 0);
}

static void test_oversized_headers_refused(void **state) {
    (void)state;
    fixture f;
    start(&f, 0, 5);
    int fd = client(&f);
    send_str(fd, "GET / HTTP/1.1\r\nHost: x\r\n");
    char line[1100];
    memset(line, 'a', sizeof line - 3);
    memcpy(line, "X-B: ", 5);
    strcpy(line + sizeof line - 3, "\r\n");
    for (int i = 0; i < 16; i++) { /* 17 KiB of headers, twice the limit: cut off on the way */
        if (send(fd, line, strlen(line), MSG_NOSIGNAL) < 0) break;
        run_ms(&f, 5);
    }
    run_ms(&f, 200);
    char buf[512];
    int st = peer_state(fd, buf, sizeof buf);
    /* evhttp says 400 for headers past the limit, and closes */
    assert_true(st == 1 || (st == 2 && (strstr(buf, " 400 ") || strstr(buf, " 413 "))));
    run_ms(&f, 100);
    assert_int_equal(tony_http_server_connections(f.srv), 0);
    close(fd);
    stop(&f);
}

static int open_fds(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the dir's own */
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* The default cap keeps a reserve of the descriptor limit, not half of it:
 * a coordinator under a hard limit of 20,000 holds the 10,000 long polls
 * and some kept heartbeat connections of a 5,000-task job (issue 26). */
static void test_default_cap_is_the_limit_less_a_reserve(void **state) {
    (void)state;
    assert_int_equal(tony_http_conn_cap_for(20000), 17500);
    assert_int_equal(tony_http_conn_cap_for(1024), 896);
    assert_int_equal(tony_http_conn_cap_for(300), 300 - TONY_HTTP_FD_RESERVE_MIN);
    assert_int_equal(tony_http_conn_cap_for(40), 20); /* under 128: half */
    assert_int_equal(tony_http_conn_cap_for(6), 4);
    assert_int_equal(tony_http_conn_cap_for(-1), TONY_HTTP_MAX_CONNS);
    assert_int_equal(tony_http_conn_cap_for(1L << 20), TONY_HTTP_MAX_CONNS);
}

static void test_out_of_descriptors_backs_off(void **state) {
    (void)state;
    char *logbuf = NULL;
    size_t loglen = 0;
    FILE *log = open_memstream(&logbuf, &loglen);
    tony_log_init("test", log);
    fixture f;
    start(&f, 1000, 30); /* a cap above the limit: accept() is what fails */
    int clients[24];
    for (int i = 0; i < 24; i++) clients[i] = client(&f);
    struct rlimit old;
    getrlimit(RLIMIT_NOFILE, &old);
    struct rlimit low = {(rlim_t)open_fds() + 4, old.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    double cpu0 = cpu_s();
    run_ms(&f, 1500);
    double used = cpu_s() - cpu0;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    fflush(log);
    /* One line for the whole episode, not one per failed accept(). */
    int lines = 0;
    for (const char *p = logbuf; (p = strstr(p, "cannot accept a connection")); p++) lines++;
    assert_int_equal(lines, 1);
    assert_non_null(strstr(logbuf, "the test server cannot accept a connection: Too many open files"));
    assert_true(used < 0.5);
    /* It kept closing the idlest connection to take the next one. */
    char buf[64];
    int closed = 0;
    for (int i = 0; i < 24; i++) closed += peer_state(clients[i], buf, sizeof buf) == 1;
    assert_true(closed >= 3);
    /* With descriptors back, everything waiting is taken. */
    int fresh = client(&f);
    send_str(fresh, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    run_ms(&f, 600);
    char reply[512];
    assert_int_equal(peer_state(fresh, reply, sizeof reply), 2);
    for (int i = 0; i < 24; i++) close(clients[i]);
    close(fresh);
    stop(&f);
    tony_log_init("test", NULL);
    fclose(log);
    free(logbuf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_silent_connection_closed_after_timeout),
        cmocka_unit_test(test_cap_closes_the_idlest_for_a_new_one),
        cmocka_unit_test(test_cap_never_closes_a_held_request),
        cmocka_unit_test(test_when_sent_tells_written_or_closed),
        cmocka_unit_test(test_oversized_headers_refused),
        cmocka_unit_test(test_default_cap_is_the_limit_less_a_reserve),
        cmocka_unit_test(test_out_of_descriptors_backs_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
