/* Fuzzes the executor's reading of its coordinator's answers
 * (executor/reply.c: tony_exec_reply_read, what executor.c acts on for
 * register, heartbeat, watch and finished, and tony_exec_job_dir_of), as
 * an executor of worker 0 in attempt 1 holding credentials of generation
 * 2 reads them, once in a local job dir and once in a cluster's container
 * (no job dir). Input format: the verb on the first line (register,
 * heartbeat, watch, finished, ...), the HTTP status on the second, then
 * the JSON body (any JSON value, NULs in strings kept; none where it does
 * not parse). Properties: no crash, leak or UB; an answer is one of its
 * verb's kinds; a refused one says why; a "next" names a later attempt and
 * a log dir that is absolute, has no ".." component and lies inside the
 * job dir (none without a job dir); a "go" has a command and every
 * variable it sets has a name without '=' and the value the body gave;
 * credentials taken are newer than the ones held and decode to their
 * bytes. */
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "backend/backend.h"
#include "common/amapi.h"
#include "executor/reply.h"
#include "fuzz_util.h"

#define JOB_DIR "/tmp/tony/jobs/application_1_0001"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet();
    return 0;
}

static bool is(const char *verb, const char *name) { return strcmp(verb, name) == 0; }

static void check_next(const tony_exec_answer *a, const tony_exec_held *h) {
    FUZZ_CHECK(a->next_attempt > h->attempt, "a next to attempt %d from %d", a->next_attempt, h->attempt);
    const char *d = a->next_log_dir;
    if (!d) return;
    FUZZ_CHECK(h->job_dir, "a next log dir %s where no job dir is known", d);
    size_t n = strlen(h->job_dir);
    FUZZ_CHECK(d[0] == '/' && strncmp(d, h->job_dir, n) == 0 && d[n] == '/' && d[n + 1],
               "a next log dir %s outside %s", d, h->job_dir);
    for (const char *p = d; (p = strstr(p, "..")) != NULL; p++)
        FUZZ_CHECK(!(p[-1] == '/' && (p[2] == '/' || !p[2])), "a next log dir %s with ..", d);
}

/* What a [prefix, suffix] value reads as (amapi.h, AM_API_ENV): the two
 * around the compact text of the answer's cluster spec, which the executor
 * took only if its length is cluster_spec_bytes. */
static char *spliced(const json_t *v, const json_t *body) {
    const char *pre = json_string_value(json_array_get(v, 0)), *post = json_string_value(json_array_get(v, 1));
    char *spec = json_dumps(json_object_get(body, AM_API_CLUSTER_SPEC), JSON_COMPACT);
    FUZZ_CHECK(json_array_size(v) == 2 && pre && post && spec, "a variable taken from neither text nor a pair");
    FUZZ_CHECK((json_int_t)strlen(spec) == json_integer_value(json_object_get(body, AM_API_CLUSTER_SPEC_BYTES)),
               "a spliced variable taken with a spec of %zu bytes, not cluster_spec_bytes", strlen(spec));
    char *out = tony_sprintf("%s%s%s", pre, spec, post);
    free(spec);
    return out;
}

static void check_go(const tony_exec_answer *a, const json_t *body) {
    FUZZ_CHECK(a->command && *a->command, "a go without a command");
    json_t *env = json_object_get(body, AM_API_ENV);
    FUZZ_CHECK(a->env.kv.len == json_object_size(env), "%zu variables of %zu", a->env.kv.len, json_object_size(env));
    for (size_t i = 0; i < a->env.kv.len; i++) {
        const char *kv = a->env.kv.items[i], *eq = strchr(kv, '=');
        FUZZ_CHECK(eq && eq > kv, "a variable without a name: %s", kv);
        char *k = tony_sprintf("%.*s", (int)(eq - kv), kv);
        json_t *v = json_object_get(env, k);
        char *want = json_is_string(v) ? tony_strdup(json_string_value(v)) : spliced(v, body);
        FUZZ_CHECK(want && strcmp(want, eq + 1) == 0, "%s is not what the answer set", kv);
        free(want);
        free(k);
    }
}

static void check_credentials(const tony_exec_answer *a, const json_t *body, const tony_exec_held *h) {
    if (!a->credentials) {
        FUZZ_CHECK(a->credentials_data.len == 0, "credential bytes without a generation");
        return;
    }
    FUZZ_CHECK(a->credentials > h->credentials, "credentials %lld taken while holding %lld", a->credentials,
               h->credentials);
    const json_t *c = json_object_get(body, TONY_HEARTBEAT_CREDENTIALS);
    FUZZ_CHECK(json_integer_value(json_object_get(c, TONY_HEARTBEAT_CREDENTIALS_GENERATION)) == a->credentials,
               "credentials of another generation");
    const char *b64 = json_string_value(json_object_get(c, TONY_HEARTBEAT_CREDENTIALS_DATA));
    tony_buf want = {0};
    FUZZ_CHECK(b64 && tony_base64_decode(b64, strlen(b64), &want) >= 0, "credentials taken from no base64");
    FUZZ_CHECK(want.len == a->credentials_data.len && (!want.len || memcmp(want.data, a->credentials_data.data, want.len) == 0),
               "credential bytes that are not the answer's");
    tony_buf_free(&want);
}

static void check(const char *verb, long http, const json_t *body, const tony_exec_held *h) {
    tony_exec_answer a;
    tony_exec_kind k = tony_exec_reply_read(verb, http, body, h, &a);
    FUZZ_CHECK(k == a.kind, "returned %d, filled %d", (int)k, (int)a.kind);
    bool reg = is(verb, AM_API_REGISTER), watch = is(verb, AM_API_WATCH), hb = is(verb, AM_API_HEARTBEAT);
    switch (k) {
    case EXEC_ANS_GO: FUZZ_CHECK(reg && http == 200, "a go to %s (HTTP %ld)", verb, http); check_go(&a, body); break;
    case EXEC_ANS_NEXT:
        FUZZ_CHECK((reg || is(verb, AM_API_FINISHED)) && http == 200, "a next to %s", verb);
        check_next(&a, h);
        break;
    case EXEC_ANS_ADOPTED: FUZZ_CHECK(reg && http == 200, "adopted by %s", verb); break;
    case EXEC_ANS_WAIT: FUZZ_CHECK((reg || watch) && http == 200, "a wait to %s", verb); break;
    case EXEC_ANS_STOP:
    case EXEC_ANS_STALE: FUZZ_CHECK(hb || watch, "a stop to %s", verb); break;
    case EXEC_ANS_REFUSED: FUZZ_CHECK(http != 200, "a refusal with HTTP 200"); break;
    case EXEC_ANS_INVALID: FUZZ_CHECK(a.why && *a.why, "refused without a reason"); break;
    case EXEC_ANS_OK:
    case EXEC_ANS_UNKNOWN: FUZZ_CHECK(http == 200, "%d with HTTP %ld", (int)k, http); break;
    }
    if (k != EXEC_ANS_GO) FUZZ_CHECK(!a.command && a.env.kv.len == 0, "a command outside a go");
    if (k != EXEC_ANS_NEXT) FUZZ_CHECK(a.next_attempt == -1 && !a.next_log_dir, "a next attempt outside a next");
    if (!hb || k != EXEC_ANS_OK) FUZZ_CHECK(!a.credentials && !a.dump_stacks, "heartbeat fields outside a heartbeat");
    check_credentials(&a, body, h);
    tony_exec_answer_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = (const char *)data, *end = p + size;
    char *verb = fuzz_next_line(&p, end), *status = fuzz_next_line(&p, end);
    if (!verb || !status) {
        free(verb), free(status);
        return 0;
    }
    long long http;
    if (!tony_parse_ll(status, &http) || http < 0 || http > 999) http = 200;
    json_t *body = json_loadb(p, (size_t)(end - p), JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    tony_exec_held local = {.attempt = 1, .credentials = 2, .job_dir = JOB_DIR}, cluster = {.attempt = 1, .credentials = 2};
    check(verb, (long)http, body, &local);
    check(verb, (long)http, body, &cluster);
    /* the job dir an executor takes from its log dir is a prefix of it */
    const char *dir = json_string_value(json_object_get(body, AM_API_NEXT_LOG_DIR));
    char *job = tony_exec_job_dir_of(dir, 1, "worker", 0);
    FUZZ_CHECK(!job || (job[0] == '/' && strncmp(dir, job, strlen(job)) == 0), "job dir %s of %s", job, dir);
    free(job);
    json_decref(body);
    free(verb);
    free(status);
    return 0;
}
