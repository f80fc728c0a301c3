/* Fuzzes the history portal's request handler (client/portal.c: its Host
 * check, the access token, /v1/jobs and /v1/jobs/<app>[/tasks/<role>/<index>
 * /log|metrics][/am/log] with their query strings, the web UI's files,
 * TonY's /jobs/ /config/ /logs/ paths) through its public entry point:
 * `tony portal` (tony_cmd_portal) runs in a thread of this process on a
 * history dir of two jobs written with tony's own writers (one finished,
 * one in progress, with task logs under a tony root), and each input
 * becomes a request on a real connection to it. Input format: as
 * fuzz_api's, the method on the first line, the URI on the second, "Name:
 * value" header lines up to an empty line, then the body; the Host header
 * the portal answers is added unless the input sets one, and the body's
 * framing is the harness's (Content-Length, "Connection: close"; the
 * input's own Content-Length, Connection, Transfer-Encoding and Expect are
 * dropped). Properties: no crash, leak or UB in the
 * portal; every request is answered (an HTTP status line, then the
 * connection closed) within the harness's wait; nothing outside the
 * history root and the tony root is served (a file planted beside them
 * never shows in an answer). */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/client.h"
#include "common/jhist.h"
#include "common/jobdir.h"
#include "conf/conf.h"
#include "fuzz_util.h"

#define APP "application_1700000000000_0001"
#define APP2 "application_1700000000000_0002"
/* in a file beside the roots: an answer that quotes it served what it must not */
#define SECRET_MARK "fuzz-portal-private-4b1d"

static int port;
static char host_header[64];

static void write_or_die(const char *path, const char *s) {
    tony_error err;
    char *dir = tony_strdup(path);
    *strrchr(dir, '/') = '\0';
    FUZZ_CHECK(tony_mkdir_p(dir, 0700, &err) == 0, "%s", err.msg);
    FUZZ_CHECK(tony_write_file(path, s, strlen(s), 0600, &err) == 0, "%s", err.msg);
    free(dir);
}

/* history/finished/2023/11/14/APP (a .jhist, tony-final.xml), history/
 * intermediate/APP2 (in progress), root/jobs/APP (task logs, am.log). */
static void make_history(const char *hist, const char *root) {
    tony_error err;
    char *dir = tony_sprintf("%s/finished/2023/11/14/%s", hist, APP);
    FUZZ_CHECK(tony_mkdir_p(dir, 0700, &err) == 0, "%s", err.msg);
    char *name = tony_jhist_final_name(APP, 1700000000000LL, 1700000100000LL, "fuzz", "FAILED");
    char *path = tony_path_join(dir, name);
    tony_jhist_writer *w = tony_jhist_writer_new(path, &err);
    FUZZ_CHECK(w != NULL, "%s", err.msg);
    tony_jhist_metric ms[] = {{"MAX_MEMORY_BYTES", 1e8}};
    FUZZ_CHECK(tony_jhist_application_inited(w, 1700000000000LL, APP, 2, "nm1", NULL, &err) == 0 &&
                   tony_jhist_task_started(w, 1700000001000LL, "worker", 0, "nm2", NULL, &err) == 0 &&
                   tony_jhist_task_finished(w, 1700000090000LL, "worker", 0, "FAILED", ms, 1, "exit 1", &err) == 0 &&
                   tony_jhist_application_finished(w, 1700000100000LL, APP, 1, 1, &err) == 0,
               "%s", err.msg);
    tony_jhist_writer_free(w);
    free(path);
    free(name);
    tony_conf *c = tony_conf_new();
    tony_conf_set(c, "tony.application.name", "fuzz", "fuzz");
    tony_conf_set(c, "tony.worker.instances", "2", "fuzz");
    char *xml = tony_path_join(dir, TONY_JOBDIR_CONF);
    FUZZ_CHECK(tony_conf_write_file(c, xml, &err) == 0, "%s", err.msg);
    free(xml);
    char *metrics = tony_path_join(dir, TONY_JHIST_METRICS);
    write_or_die(metrics, "{\"app_id\":\"" APP "\",\"attempts\":[{\"attempt\":0,\"interval_ms\":1000,\"tasks\":"
                          "[{\"role\":\"worker\",\"index\":0,\"series\":{\"t_ms\":[1,2],\"rss_bytes\":[10,20]}}]}]}");
    free(metrics);
    free(dir);
    char *inter = tony_sprintf("%s/intermediate/%s", hist, APP2);
    FUZZ_CHECK(tony_mkdir_p(inter, 0700, &err) == 0, "%s", err.msg);
    char *inter_xml = tony_path_join(inter, TONY_JOBDIR_CONF);
    FUZZ_CHECK(tony_conf_write_file(c, inter_xml, &err) == 0, "%s", err.msg);
    free(inter_xml);
    free(inter);
    tony_conf_free(c);
    char *out = tony_sprintf("%s/jobs/%s/attempts/0/worker-0/stdout", root, APP);
    write_or_die(out, "epoch 1\nepoch 2\n");
    free(out);
    char *am = tony_sprintf("%s/jobs/%s/%s", root, APP, TONY_JOBDIR_AM_LOG);
    write_or_die(am, "2023-11-14 INFO coordinator up\n");
    free(am);
    char *private = tony_sprintf("%s/../private.txt", root);
    write_or_die(private, SECRET_MARK "\n");
    free(private);
}

static void *portal_main(void *arg) {
    char **argv = arg;
    int argc = 0;
    while (argv[argc]) argc++;
    int code = tony_cmd_portal(argc, argv);
    fprintf(stderr, "fuzz_portal: the portal ended (exit %d)\n", code);
    abort();
    return NULL;
}

static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    FUZZ_CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
                   getsockname(fd, (struct sockaddr *)&a, &alen) == 0,
               "no free port");
    close(fd);
    return ntohs(a.sin_port);
}

/* A connection to the portal; a signal (libFuzzer's timers) that cuts a
 * connect short means a new try. */
static int connect_portal(void) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)port)};
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
        int e = errno;
        if (fd >= 0) close(fd);
        if (e != EINTR) return -1;
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet();
    signal(SIGPIPE, SIG_IGN);
    char *hist = tony_path_join(fuzz_scratch(), "history");
    char *root = tony_path_join(fuzz_scratch(), "root/tony");
    make_history(hist, root);
    port = free_port();
    snprintf(host_header, sizeof host_header, "127.0.0.1:%d", port);
    static char port_s[16];
    snprintf(port_s, sizeof port_s, "%d", port);
    /* the portal's own lines go nowhere */
    FUZZ_CHECK(freopen("/dev/null", "w", stdout) != NULL, "cannot silence stdout");
    static char *args[10];
    /* as main gives a verb its words: those after the verb */
    args[0] = "--port", args[1] = port_s, args[2] = "--location", args[3] = hist, args[4] = "--root", args[5] = root,
    args[6] = NULL;
    pthread_t t;
    FUZZ_CHECK(pthread_create(&t, NULL, portal_main, args) == 0, "no thread");
    pthread_detach(t);
    for (int i = 0; i < 500; i++) {
        int fd = connect_portal();
        if (fd >= 0) {
            close(fd);
            return 0;
        }
        tony_sleep_ms(10);
    }
    FUZZ_CHECK(false, "the portal did not start listening on %d", port);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* the request line and headers travel as text: no NUL, no bare CR */
    const char *p = (const char *)data, *end = p + size;
    const char *body_at = memmem(data, size, "\n\n", 2);
    size_t head_len = body_at ? (size_t)(body_at - p) : size;
    if (memchr(data, 0, head_len) || memchr(data, '\r', head_len)) return 0;
    char *method = fuzz_next_line(&p, end), *uri = fuzz_next_line(&p, end);
    if (!method || !uri || !*method || !*uri || strpbrk(method, " \t") || strpbrk(uri, " \t")) {
        free(method);
        free(uri);
        return 0;
    }
    tony_buf req = {0};
    tony_buf_printf(&req, "%s %s HTTP/1.1\r\n", method, uri);
    bool host = false;
    char *line;
    while ((line = fuzz_next_line(&p, end)) && *line) {
        /* the body's framing and the connection's end are the harness's:
         * a request that leaves the portal waiting for more would only
         * cost the fuzzer its wait */
        bool framing = strncasecmp(line, "Content-Length:", 15) == 0 || strncasecmp(line, "Connection:", 11) == 0 ||
                       strncasecmp(line, "Transfer-Encoding:", 18) == 0 || strncasecmp(line, "Expect:", 7) == 0;
        if (strncasecmp(line, "Host:", 5) == 0) host = true;
        if (!framing) tony_buf_printf(&req, "%s\r\n", line);
        free(line);
    }
    free(line);
    if (!host) tony_buf_printf(&req, "Host: %s\r\n", host_header);
    tony_buf_printf(&req, "Content-Length: %zu\r\n", (size_t)(end - p));
    tony_buf_printf(&req, "Connection: close\r\n\r\n");
    tony_buf_append(&req, p, (size_t)(end - p));
    free(method);
    free(uri);

    int fd = connect_portal();
    FUZZ_CHECK(fd >= 0, "cannot connect to the portal: %s", strerror(errno));
    for (size_t off = 0; off < req.len;) {
        ssize_t n = send(fd, req.data + off, req.len - off, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        off += (size_t)n;
    }
    tony_buf got = {0};
    char chunk[16384];
    bool closed = false;
    for (;;) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int ready = poll(&pf, 1, 5000);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) break;
        ssize_t n = recv(fd, chunk, sizeof chunk, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            closed = true;
            break;
        }
        tony_buf_append(&got, chunk, (size_t)n);
    }
    close(fd);
    /* An input that sets its own Host may be refused before any answer
     * (evhttp's own checks of the header). */
    if (!host) {
        FUZZ_CHECK(closed, "the portal neither answered nor closed within 5 s");
        FUZZ_CHECK(got.len >= 5 && memcmp(got.data, "HTTP/", 5) == 0, "an answer that is not HTTP: %.40s",
                   got.data ? got.data : "");
    }
    /* (an answer may quote the request, which may quote the mark) */
    FUZZ_CHECK(!got.data || memmem(data, size, SECRET_MARK, strlen(SECRET_MARK)) ||
                   !memmem(got.data, got.len, SECRET_MARK, strlen(SECRET_MARK)),
               "the portal served a file outside its roots");
    tony_buf_free(&got);
    tony_buf_free(&req);
    return 0;
}
