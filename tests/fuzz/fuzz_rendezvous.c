/* Fuzzes the coordinator's Horovod rendezvous store (am/rendezvous.c: GET,
 * PUT and DELETE /<scope>/<key>, scopes cleared when all their workers
 * DELETEd), through its public entry point: am_rendezvous_start's server on
 * 127.0.0.1, which gets the input as the bytes of HTTP requests on a real
 * connection, so that libevent's own parsing comes first as it does for a
 * worker. Input format: raw HTTP/1.1 (one request or several pipelined);
 * the store is emptied and its scopes set ({"global": 2, ...}) before each
 * input. Properties: no crash, leak or UB; every answer is an HTTP
 * status line; a request that never completes is given up by the client
 * (the connection closed) and the server frees what it held for it
 * (LeakSanitizer). */
#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "am/rendezvous.h"
#include "fuzz_util.h"

static struct event_base *base;
static am_rendezvous *rdv;
/* The local backend's store: it answers processes of this user, as the
 * harness is (an empty task table: peers are judged by their uid). */
static am_job job;
static json_t *scopes;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet();
    signal(SIGPIPE, SIG_IGN);
    base = event_base_new();
    tony_error err;
    rdv = am_rendezvous_start(base, "127.0.0.1", &job, true, &err);
    FUZZ_CHECK(rdv != NULL, "the rendezvous did not start: %s", err.msg);
    scopes = json_pack("{s:i,s:i,s:i}", "global", 2, "local_127.0.0.1", 2, "cross_0", 1);
    return 0;
}

/* Runs the loop until fd has something to read or nothing moves: client
 * and server are this one thread, and a send on 127.0.0.1 has arrived when
 * it returns, so a few rounds that find nothing to do mean nothing comes. */
static bool pump(int fd, int rounds) {
    for (int i = 0; i < rounds; i++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 0) > 0) return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    am_rendezvous_reset(rdv);
    am_rendezvous_set_scopes(rdv, scopes);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)am_rendezvous_port(rdv))};
    int fd;
    /* a signal (libFuzzer's timers) that cuts a connect short: again */
    for (;;) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        FUZZ_CHECK(fd >= 0, "no socket: %s", strerror(errno));
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) break;
        FUZZ_CHECK(errno == EINTR, "cannot connect: %s", strerror(errno));
        close(fd);
    }
    for (size_t off = 0; off < size;) {
        ssize_t n = send(fd, data + off, size - off, MSG_DONTWAIT);
        if (n > 0) off += (size_t)n;
        else if (errno == EAGAIN || errno == EINTR) pump(fd, 1);
        else break;
    }
    tony_buf got = {0};
    char chunk[8192];
    /* what the server answers, until it closes or says nothing more */
    while (pump(fd, 3)) {
        ssize_t n = recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
        if (n <= 0) break;
        tony_buf_append(&got, chunk, (size_t)n);
    }
    if (got.len) FUZZ_CHECK(got.len >= 9 && memcmp(got.data, "HTTP/", 5) == 0, "an answer that is not HTTP: %.40s",
                            got.data);
    tony_buf_free(&got);
    close(fd);
    /* the server sees the close and frees the connection */
    for (int i = 0; i < 5; i++) event_base_loop(base, EVLOOP_NONBLOCK);
    return 0;
}
