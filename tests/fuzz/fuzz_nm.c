/* Fuzzes what tony reads from a NodeManager's web server: a task's log
 * link (backend/yarn/nmweb.c: tony_nmweb_parse_link, as executors report
 * it and the RM's amContainerLogs gives it), a container log file's answer
 * (tony_nmweb_parse_log: its LogType/LogLength header, the bytes, the
 * footer, in Hadoop 3.2's and 3.3's layouts) and the slice a reader takes
 * of it (tony_nmweb_slice), and the coordinator's non-blocking log reader
 * (nmlog.c: yarn_nmlog_read, over libevent, with its rounds when the file
 * grew past the tail it asked for) against a stand-in NodeManager
 * (fuzz_http.h). Input format: replies separated by "\n===\n", each its
 * HTTP status on the first line then its body, answering the reader's
 * requests in turn; the first body is also parsed directly, for each
 * request size, and the first line is also parsed as a log link.
 * Properties: no crash, leak or UB; a parsed answer's bytes lie inside the
 * body and a slice inside them; a link parsed gives an http base and a
 * container; the reader calls back exactly once, with at most the bytes
 * asked for, from the offset asked for. */
#include <event2/event.h>
#include <stdint.h>
#include <string.h>

#include "backend/yarn/nmlog.h"
#include "backend/yarn/nmweb.h"
#include "fuzz_http.h"

static struct event_base *base;
static char *link_here;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet();
    base = event_base_new();
    link_here = tony_sprintf("http://%s/node/containerlogs/container_1700000000000_0001_01_000002/fuzz",
                             fuzz_http_start());
    return 0;
}

typedef struct answer {
    int calls;
    long long offset, max;
} answer;

static void on_log(void *ctx, int code, const char *msg, const tony_log_chunk *c) {
    answer *a = ctx;
    a->calls++;
    /* the reader keeps events of its own (its resolver): the loop would
     * not end by itself */
    event_base_loopbreak(base);
    if (code == 200) {
        FUZZ_CHECK(c != NULL, "a 200 with no chunk");
        FUZZ_CHECK((long long)c->n <= a->max, "%zu bytes for a read of at most %lld", c->n, a->max);
        if (c->exists) FUZZ_CHECK(c->offset == a->offset, "bytes from %lld for a read from %lld", c->offset, a->offset);
        if (c->n) FUZZ_CHECK(c->data != NULL, "bytes with no data");
    } else {
        FUZZ_CHECK(msg && *msg, "a failed read (%d) with no reason", code);
    }
}

static void parse_direct(const char *body, size_t len) {
    static const long long sizes[] = {0, 10, 4096, -10, -8192};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        tony_nmweb_log log;
        tony_error err;
        if (tony_nmweb_parse_log(body, len, sizes[k], &log, &err)) continue;
        FUZZ_CHECK(log.data >= body && log.data + log.len <= body + len, "the log's bytes lie outside the answer");
        static const long long offsets[] = {0, 5, 4096};
        for (size_t o = 0; o < sizeof offsets / sizeof *offsets; o++) {
            size_t from = 0, n = 0;
            if (tony_nmweb_slice(&log, offsets[o], 100, &from, &n) == 0)
                FUZZ_CHECK(from <= log.len && n <= log.len - from && n <= 100, "a slice [%zu, +%zu) of %zu bytes", from,
                           n, log.len);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* the first line as a log link */
    const char *nl = memchr(data, '\n', size);
    char *link = tony_sprintf("%.*s", (int)(nl ? (size_t)(nl - (const char *)data) : size), (const char *)data);
    char *b = NULL, *container = NULL;
    tony_error err;
    if (!memchr(data, 0, size) && tony_nmweb_parse_link(link, &b, &container, &err) == 0) {
        FUZZ_CHECK(strncmp(b, "http://", 7) == 0 || strncmp(b, "https://", 8) == 0, "a base that is not http: %s", b);
        FUZZ_CHECK(*container, "a link with an empty container");
        free(tony_nmweb_file_url(b, container, "stdout", -4096));
        free(b);
        free(container);
    }
    free(link);

    fuzz_http_set(data, size);
    pthread_mutex_lock(&fuzz_http.mu);
    tony_buf first = {0};
    tony_buf_append(&first, fuzz_http.replies[0].body.data ? fuzz_http.replies[0].body.data : "",
                    fuzz_http.replies[0].body.len);
    pthread_mutex_unlock(&fuzz_http.mu);
    parse_direct(first.data, first.len);
    tony_buf_free(&first);

    /* the coordinator's reader: a head, then a read further on */
    static const long long offsets[] = {0, 100};
    for (size_t k = 0; k < 2; k++) {
        yarn_nmlog *nlog = yarn_nmlog_new(base);
        yarn_nmlog_set_timeout(nlog, 5);
        answer a = {.offset = offsets[k], .max = 64};
        tony_log_request r = {.url = link_here, .who = "worker:0", .stream = "stdout", .offset = a.offset, .max = a.max};
        tony_log_read *rd = NULL;
        if (yarn_nmlog_read(nlog, &r, on_log, &a, &rd, &err) == 0) {
            event_base_dispatch(base);
            event_base_loop(base, EVLOOP_NONBLOCK);
            FUZZ_CHECK(a.calls == 1, "the reader called back %d times", a.calls);
        }
        yarn_nmlog_free(nlog);
    }
    fuzz_http_done();
    return 0;
}
