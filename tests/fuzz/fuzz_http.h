/* A stand-in HTTP server for the harnesses that fuzz what tony reads from
 * a cluster's web services (the ResourceManager's REST API, WebHDFS, a
 * NodeManager, a coordinator's API): a thread on 127.0.0.1 that answers
 * each request, in order, with the next of the replies the input gives,
 * so that the client code under test runs whole (libcurl, its status
 * checks, its JSON parsing) as it does against a cluster.
 *
 * An input is replies separated by FUZZ_HTTP_SEP lines; each reply is its
 * HTTP status on the first line, then the body. Past the last reply every
 * request gets the last one again. "@@" in a body becomes this server's
 * 127.0.0.1:port, so that a link a reply gives (a NodeManager's, a
 * coordinator's address) leads back here rather than off the machine;
 * and a harness that includes this connects to nothing but 127.0.0.1
 * (connect and getaddrinfo below), whatever address a reply names.
 * Header-only, like fuzz_util.h: one harness, one program. */
#ifndef TONY_FUZZ_HTTP_H
#define TONY_FUZZ_HTTP_H

#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/strv.h"
#include "fuzz_util.h"

#define FUZZ_HTTP_SEP "\n===\n"
#define FUZZ_HTTP_MAX_REPLIES 16
/* Where a reply's body says "here". */
#define FUZZ_HTTP_HERE "@@"

typedef struct fuzz_http_reply {
    int status;
    tony_buf body;
} fuzz_http_reply;

static struct {
    pthread_mutex_t mu;
    int listen_fd;
    int port;
    char here[32];
    fuzz_http_reply replies[FUZZ_HTTP_MAX_REPLIES];
    size_t nreplies, next;
    size_t served; /* requests answered for this input */
} fuzz_http = {.mu = PTHREAD_MUTEX_INITIALIZER, .listen_fd = -1};

/* Reads a request's head and as much of its body as Content-Length says
 * (tony's requests are small; a file upload is read and dropped). */
static void fuzz_http_drain(int fd) {
    tony_buf b = {0};
    char chunk[4096];
    const char *end = NULL;
    while (!end) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        tony_buf_append(&b, chunk, (size_t)n);
        end = memmem(b.data, b.len, "\r\n\r\n", 4);
    }
    if (end) {
        size_t have = b.len - (size_t)(end + 4 - b.data);
        long long want = 0;
        const char *cl = strcasestr(b.data, "\r\nContent-Length:");
        if (cl && cl < end) want = atoll(cl + 17);
        while ((long long)have < want) {
            ssize_t n = read(fd, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            have += (size_t)n;
        }
    }
    tony_buf_free(&b);
}

static void fuzz_http_answer(int fd) {
    fuzz_http_drain(fd);
    tony_buf out = {0};
    pthread_mutex_lock(&fuzz_http.mu);
    int status = 404;
    const char *body = "";
    size_t len = 0;
    if (fuzz_http.nreplies) {
        size_t i = fuzz_http.next < fuzz_http.nreplies ? fuzz_http.next++ : fuzz_http.nreplies - 1;
        status = fuzz_http.replies[i].status;
        body = fuzz_http.replies[i].body.data ? fuzz_http.replies[i].body.data : "";
        len = fuzz_http.replies[i].body.len;
    }
    fuzz_http.served++;
    /* libcurl takes any three digits; other statuses it refuses as a bad reply */
    tony_buf_printf(&out, "HTTP/1.1 %03d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                          "Connection: close\r\n\r\n", status, len);
    tony_buf_append(&out, body, len);
    pthread_mutex_unlock(&fuzz_http.mu);
    for (size_t off = 0; off < out.len;) {
        ssize_t n = write(fd, out.data + off, out.len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        off += (size_t)n;
    }
    tony_buf_free(&out);
}

static void *fuzz_http_main(void *arg) {
    (void)arg;
    for (;;) {
        int fd = accept(fuzz_http.listen_fd, NULL, NULL);
        if (fd < 0) continue;
        fuzz_http_answer(fd);
        close(fd);
    }
    return NULL;
}

/* The harnesses follow links that replies give (a NodeManager's, a
 * coordinator's, a DataNode's): an input that names another host must not
 * have the fuzzer wait on the network, nor reach it. This process connects
 * to 127.0.0.1 only, and resolves no name but 127.0.0.1 and localhost:
 * these definitions take the place of libc's for libcurl, libevent and
 * tony alike (an executable's own symbols come first). */
int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)addr;
    if (addr && addr->sa_family == AF_INET && len >= sizeof *in && in->sin_addr.s_addr == htonl(INADDR_LOOPBACK))
        return (int)syscall(SYS_connect, fd, addr, len);
    errno = ECONNREFUSED;
    return -1;
}

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res) {
    static int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
    if (node && strcmp(node, "127.0.0.1") != 0 && strcmp(node, "localhost") != 0) return EAI_NONAME;
    if (!real) real = (int (*)(const char *, const char *, const struct addrinfo *, struct addrinfo **))dlsym(
                   RTLD_NEXT, "getaddrinfo");
    struct addrinfo h = hints ? *hints : (struct addrinfo){0};
    h.ai_family = AF_INET; /* 127.0.0.1, never ::1 */
    return real(node, service, &h, res);
}

/* Starts the server (once); its "127.0.0.1:port". */
static inline const char *fuzz_http_start(void) {
    if (fuzz_http.listen_fd >= 0) return fuzz_http.here;
    signal(SIGPIPE, SIG_IGN);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 64) ||
        getsockname(fd, (struct sockaddr *)&a, &alen)) {
        perror("fuzz_http_start");
        abort();
    }
    fuzz_http.listen_fd = fd;
    fuzz_http.port = ntohs(a.sin_port);
    snprintf(fuzz_http.here, sizeof fuzz_http.here, "127.0.0.1:%d", fuzz_http.port);
    pthread_t t;
    if (pthread_create(&t, NULL, fuzz_http_main, NULL)) abort();
    pthread_detach(t);
    return fuzz_http.here;
}

static void fuzz_http_clear_locked(void) {
    for (size_t i = 0; i < fuzz_http.nreplies; i++) tony_buf_free(&fuzz_http.replies[i].body);
    fuzz_http.nreplies = fuzz_http.next = fuzz_http.served = 0;
}

/* Takes this input's replies (see the top); returns how many. */
static inline size_t fuzz_http_set(const uint8_t *data, size_t size) {
    const char *p = (const char *)data, *end = p + size;
    pthread_mutex_lock(&fuzz_http.mu);
    fuzz_http_clear_locked();
    while (p <= end && fuzz_http.nreplies < FUZZ_HTTP_MAX_REPLIES) {
        const char *sep = memmem(p, (size_t)(end - p), FUZZ_HTTP_SEP, strlen(FUZZ_HTTP_SEP));
        const char *stop = sep ? sep : end;
        const char *nl = memchr(p, '\n', (size_t)(stop - p));
        fuzz_http_reply *r = &fuzz_http.replies[fuzz_http.nreplies++];
        *r = (fuzz_http_reply){0};
        /* the input is not NUL-terminated: no atoi */
        for (const char *d = p; d < stop && d < p + 3 && *d >= '0' && *d <= '9'; d++) r->status = r->status * 10 + (*d - '0');
        if (r->status < 100) r->status = 200;
        for (const char *b = nl ? nl + 1 : stop; b < stop;) {
            const char *at = memmem(b, (size_t)(stop - b), FUZZ_HTTP_HERE, strlen(FUZZ_HTTP_HERE));
            const char *upto = at ? at : stop;
            tony_buf_append(&r->body, b, (size_t)(upto - b));
            if (!at) break;
            tony_buf_puts(&r->body, fuzz_http.here);
            b = at + strlen(FUZZ_HTTP_HERE);
        }
        if (!sep) break;
        p = sep + strlen(FUZZ_HTTP_SEP);
    }
    size_t n = fuzz_http.nreplies;
    pthread_mutex_unlock(&fuzz_http.mu);
    return n;
}

/* Forgets this input's replies (the harness's last step: no leak). */
static inline void fuzz_http_done(void) {
    pthread_mutex_lock(&fuzz_http.mu);
    fuzz_http_clear_locked();
    pthread_mutex_unlock(&fuzz_http.mu);
}

/* http://127.0.0.1:port (malloc'ed). */
static inline char *fuzz_http_url(void) { return tony_sprintf("http://%s", fuzz_http_start()); }

#endif
