/* Fuzzes the coordinator's HTTP API (am/api.c: am_api_handle, the
 * handler the coordinator's server runs for every request): paths, query
 * strings, headers and JSON bodies of /v1/job, /v1/events, /v1/tasks/...
 * (register, heartbeat, started, metrics, finished, log), /v1/job/kill and
 * /finish, /tensorboard and the web UI, against a real tony_am of a
 * 1 ps + 2 worker TensorFlow job. A request is built as evhttp would have
 * parsed it off a socket and handed to the handler; with no connection
 * behind it, evhttp frees it when it is answered. Input format: the method
 * (GET, POST, ...) on the first line, the URI on the second, "Name: value"
 * header lines up to an empty line, then the body; a Host header the
 * coordinator answers, the read token and a valid signature (X-Tony-Auth,
 * as executors sign) are added unless the input sets them. Properties: no
 * crash, leak or UB;
 * every request is answered exactly once (one left unanswered is a leak
 * LeakSanitizer reports; one answered twice, a use after free). A stand-in
 * backend (launch, stop and log reads refused) keeps the job in this
 * process: the backend's own code is not what this fuzzes. An input with
 * the word "adopt" in it meets a coordinator that replaced a lost one and
 * waits for its tasks to come back (container "c1" is one left running). */
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <stdint.h>
#include <string.h>

#include "am/am_internal.h"
#include "am/api.h"
#include "am/record.h"
#include "common/amapi.h"
#include "common/apiauth.h"
#include "common/clock.h"
#include "common/jobdir.h"
#include "fuzz_util.h"
#include "runtime/runtime.h"

#define SECRET "fuzz-secret-0123456789"
#define READ_TOKEN "fuzz-read-token" /* the gate's (common/readtoken.h); not derived here */

static tony_conf *conf;
static tony_plan plan;
static char *job_dir;

static int be_launch(tony_backend *b, const tony_launch *l, tony_error *err) {
    (void)b, (void)l;
    return tony_err(err, "the fuzzer's backend launches nothing");
}
static void be_stop(tony_backend *b, const char *role, int index, int attempt) { (void)b, (void)role, (void)index, (void)attempt; }
/* Containers always still running: an ended attempt waits for them and
 * never reaches restart or exit, which would leave this process's loop. */
static int be_active(const tony_backend *b) { return (void)b, 1; }
static int be_check_log_url(const tony_backend *b, const char *link, tony_error *err) {
    (void)b;
    return strncmp(link, "http://nm:8042/", 15) == 0 ? 0 : tony_err(err, "not a NodeManager link: %s", link);
}
static int be_read_log(tony_backend *b, const tony_log_request *r, tony_log_cb cb, void *ctx, tony_log_read **out,
                       tony_error *err) {
    (void)b, (void)cb, (void)ctx, (void)out;
    return tony_err(err, "cannot read %s's %s here", r->who, r->stream);
}
static void be_free(tony_backend *b) { (void)b; }
/* Coordinator loss: container "c1" is the one the last coordinator left. */
static int be_adopt(tony_backend *b, const char *role, int index, int attempt, const char *container, tony_error *err) {
    (void)b, (void)role, (void)index, (void)attempt;
    return container && strcmp(container, "c1") == 0 ? 0 : tony_err(err, "no such container left running");
}
static const tony_backend_ops be_ops = {.name = "fuzz", .launch = be_launch, .stop = be_stop, .active = be_active,
                                        .check_log_url = be_check_log_url, .read_log = be_read_log,
                                        .adopt = be_adopt, .free = be_free};
static tony_backend backend = {.ops = &be_ops};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet();
    conf = fuzz_tf_conf();
    tony_error err;
    FUZZ_CHECK(tony_runtime_plan(conf, &plan, &err) == 0, "the fuzzer's plan: %s", err.msg);
    /* worker:0 of attempt 0 has some output for GET .../log to read. */
    job_dir = tony_path_join(fuzz_scratch(), "job");
    char *dir = tony_jobdir_task_dir(job_dir, 0, "worker", 0);
    FUZZ_CHECK(tony_mkdir_p(dir, 0700, &err) == 0, "%s", err.msg);
    char *out = tony_path_join(dir, "stdout");
    FUZZ_CHECK(tony_write_file(out, "epoch 1\nepoch 2\n", 16, 0600, &err) == 0, "%s", err.msg);
    free(out);
    free(dir);
    return 0;
}

static void on_kick(evutil_socket_t fd, short what, void *arg) { (void)fd, (void)what, (void)arg; }

/* recover: the coordinator replaced a lost one and waits for its tasks
 * to come back (fsm.h, am_fsm_recover). */
static void am_init(tony_am *am, bool recover) {
    memset(am, 0, sizeof *am);
    am->base = event_base_new();
    am->conf = conf;
    am->plan = plan;
    am->runtime = tony_runtime_find(plan.framework);
    am->backend = &backend;
    am->id.job_dir = job_dir;
    am->id.app_id = "application_1_0001";
    am->id.secret = SECRET;
    am->id.host = "127.0.0.1";
    am->id.port = 4242;
    am->id.url = "http://127.0.0.1:4242";
    am->id.read_token = READ_TOKEN;
    am->id.started_ms = am_now_ms();
    am->id.wall_offset_ms = am_wall_clock_ms() - am->id.started_ms;
    /* The state machine started: every task asked for, as the
     * coordinator's loop leaves it before executors call in; what it
     * decides later stays pending (the loop would carry it out). */
    am_fsm_init(&am->fsm, &am->plan, AM_REGISTER_POLL_MS + 5000, am->id.started_ms);
    if (recover) am_fsm_recover(&am->fsm, 0, am->id.started_ms + 60000, am->id.started_ms, &am->pending);
    else am_fsm_start(&am->fsm, am->id.started_ms, &am->pending);
    am->act_ev = event_new(am->base, -1, 0, on_kick, NULL);
    am_api_init(am);
    am_record_init(am, 64);
}

static void am_fini(tony_am *am) {
    /* Every executor still waiting (at the barrier, for a next attempt, on
     * its watch) is answered, as the coordinator does when it ends. */
    am_fsm_abandon(&am->fsm, am_now_ms(), &am->pending);
    am_api_release_waiters(am);
    am_api_free(am);
    am_record_free(am);
    am_actions_free(&am->pending);
    am_fsm_free(&am->fsm);
    event_free(am->act_ev);
    event_base_free(am->base);
}

static enum evhttp_cmd_type method(const char *s) {
    static const struct {
        const char *name;
        enum evhttp_cmd_type type;
    } m[] = {{"GET", EVHTTP_REQ_GET},   {"POST", EVHTTP_REQ_POST},       {"HEAD", EVHTTP_REQ_HEAD},
             {"PUT", EVHTTP_REQ_PUT},   {"DELETE", EVHTTP_REQ_DELETE},   {"OPTIONS", EVHTTP_REQ_OPTIONS},
             {"PATCH", EVHTTP_REQ_PATCH}};
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        if (strcmp(s, m[i].name) == 0) return m[i].type;
    return EVHTTP_REQ_GET;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = (const char *)data, *end = p + size;
    char *m = fuzz_next_line(&p, end);
    char *uri = fuzz_next_line(&p, end);
    /* evhttp refuses request lines with a NUL or without a URI. */
    if (!m || !uri || !*uri || strlen(uri) != strcspn(uri, "\r") || memchr(data, 0, (size_t)(p - (const char *)data))) {
        free(m);
        free(uri);
        return 0;
    }
    struct evhttp_request *req = evhttp_request_new(NULL, NULL);
    req->kind = EVHTTP_REQUEST;
    req->type = method(m);
    req->uri = uri;
    /* As evhttp does on reading the request line: no parse, no request. */
    req->uri_elems = evhttp_uri_parse_with_flags(uri, 0);
    if (!req->uri_elems) {
        evhttp_request_free(req);
        free(m);
        return 0;
    }
    bool auth_given = false, host_given = false, token_given = false;
    char *line;
    while ((line = fuzz_next_line(&p, end)) && *line) {
        char *colon = strchr(line, ':');
        if (colon) {
            *colon = '\0';
            const char *v = colon + 1 + strspn(colon + 1, " ");
            evhttp_add_header(req->input_headers, line, v);
            if (strcasecmp(line, TONY_APIAUTH_HEADER) == 0) auth_given = true;
            if (strcasecmp(line, "Host") == 0) host_given = true;
            if (strcasecmp(line, AM_API_TOKEN_HEADER) == 0) token_given = true;
        }
        free(line);
    }
    free(line);
    if (!host_given) evhttp_add_header(req->input_headers, "Host", "127.0.0.1:4242");
    if (!token_given) evhttp_add_header(req->input_headers, AM_API_TOKEN_HEADER, READ_TOKEN);
    evbuffer_add(req->input_buffer, p, (size_t)(end - p));
    /* signed as an executor signs (common/apiauth.h), over what the handler
     * will see; an input with its own X-Tony-Auth tries its luck */
    if (!auth_given) {
        tony_apiauth_key key;
        tony_apiauth_request signed_req;
        tony_apiauth_key_from_secret(SECRET, &key);
        const char *host = evhttp_find_header(req->input_headers, "Host");
        if (tony_apiauth_sign_request(&key, m, host, uri, p, (size_t)(end - p), tony_wall_ms(), &signed_req) == 0)
            evhttp_add_header(req->input_headers, TONY_APIAUTH_HEADER, signed_req.header);
    }

    tony_am am;
    /* an input that speaks of adoption meets a coordinator that adopts */
    am_init(&am, memmem(data, size, AM_API_ADOPT, strlen(AM_API_ADOPT)) != NULL);
    am_api_handle(req, &am);
    am_fini(&am);
    free(m);
    return 0;
}
