/* The executor's reading of its coordinator's answers (executor/reply.h):
 * each kind of answer as am/api.c writes it, and each answer the executor
 * must refuse (issue 20: a forged "next" made it write where it said). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "common/amapi.h"
#include "executor/reply.h"

#define JOB "/tmp/tony/jobs/app_1"

static const tony_exec_held held = {.attempt = 1, .credentials = 2, .job_dir = JOB};

/* Reads text (JSON) as the answer to verb with HTTP status http. */
static tony_exec_kind read_text(const char *verb, long http, const char *text, tony_exec_answer *a) {
    json_error_t e;
    json_t *j = json_loads(text, JSON_ALLOW_NUL, &e);
    if (!j) fail_msg("bad test JSON %s: %s", text, e.text);
    tony_exec_kind k = tony_exec_reply_read(verb, http, j, &held, a);
    json_decref(j);
    return k;
}

static void expect_invalid(const char *verb, long http, const char *text, const char *why_part) {
    tony_exec_answer a;
    assert_int_equal(read_text(verb, http, text, &a), EXEC_ANS_INVALID);
    assert_non_null(a.why);
    if (!strstr(a.why, why_part)) fail_msg("why \"%s\" does not say \"%s\"", a.why, why_part);
    tony_exec_answer_free(&a);
}

static void test_go(void **state) {
    (void)state;
    tony_exec_answer a;
    assert_int_equal(read_text(AM_API_REGISTER, 200,
                               "{\"status\":\"go\",\"command\":\"python train.py\",\"env\":{\"TF_CONFIG\":\"{}\","
                               "\"RANK\":\"0\"},\"cluster_spec\":{},\"execution_timeout_ms\":5000,"
                               "\"log_policies\":\"OOM:fail\"}",
                               &a),
                     EXEC_ANS_GO);
    assert_string_equal(a.command, "python train.py");
    assert_string_equal(tony_env_get(&a.env, "TF_CONFIG"), "{}");
    assert_string_equal(tony_env_get(&a.env, "RANK"), "0");
    assert_int_equal(a.timeout_ms, 5000);
    assert_string_equal(a.log_policies, "OOM:fail");
    tony_exec_answer_free(&a);
    /* no env, no timeout, no policies: none of them */
    assert_int_equal(read_text(AM_API_REGISTER, 200, "{\"status\":\"go\",\"command\":\"x\"}", &a), EXEC_ANS_GO);
    assert_int_equal(a.env.kv.len, 0);
    assert_int_equal(a.timeout_ms, 0);
    assert_string_equal(a.log_policies, "");
    tony_exec_answer_free(&a);
}

static void test_go_refused(void **state) {
    (void)state;
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"go\"}", "no command");
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"go\",\"command\":\"\"}", "no command");
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"go\",\"command\":7}", "no command");
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"go\",\"command\":\"id\\u0000x\"}", "no command");
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"go\",\"command\":\"x\",\"env\":{\"\":\"v\"}}", "variable");
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"go\",\"command\":\"x\",\"env\":{\"A=B\":\"v\"}}", "variable");
    /* a key with a NUL (jansson reads none from text; one built is possible) */
    json_t *j = json_pack("{s:s,s:s,s:{}}", AM_API_STATUS, AM_API_GO, AM_API_COMMAND, "x", AM_API_ENV);
    json_object_setn_new(json_object_get(j, AM_API_ENV), "A\0B", 3, json_string("v"));
    tony_exec_answer a;
    assert_int_equal(tony_exec_reply_read(AM_API_REGISTER, 200, j, &held, &a), EXEC_ANS_INVALID);
    tony_exec_answer_free(&a);
    json_decref(j);
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"go\",\"command\":\"x\",\"env\":{\"A\":3}}", "no text");
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"go\",\"command\":\"x\",\"env\":{\"A\":\"a\\u0000b\"}}",
                   "no text");
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"go\",\"command\":\"x\",\"env\":[]}", "not an object");
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"go\",\"command\":\"x\",\"execution_timeout_ms\":\"9\"}",
                   "not a number");
    /* nothing of a refused go is kept (the fuzzer found variables read before the bad one) */
    assert_int_equal(read_text(AM_API_REGISTER, 200,
                               "{\"status\":\"go\",\"command\":\"x\",\"env\":{\"A\":\"1\",\"B=\":\"2\"}}", &a),
                     EXEC_ANS_INVALID);
    assert_int_equal(a.env.kv.len, 0);
    assert_null(a.command);
    tony_exec_answer_free(&a);
}

/* A spec as the coordinator writes it (json_dumps, JSON_COMPACT): 48 bytes. */
#define SPEC "{\"worker\":[\"h:1\",\"h:2\"],\"ps\":[\"p:1\"],\"chief\":[]}"
#define GO_SPLICED(env, bytes)                                                                                   \
    "{\"status\":\"go\",\"command\":\"x\",\"env\":{" env "},\"cluster_spec\":" SPEC ",\"log_policies\":\"\"" \
    bytes "}"

static void test_go_spliced(void **state) {
    (void)state;
    tony_exec_answer a;
    /* CLUSTER_SPEC and TF_CONFIG around the spec, in env's order, beside a whole value */
    assert_int_equal(read_text(AM_API_REGISTER, 200,
                               GO_SPLICED("\"A\":\"1\",\"CLUSTER_SPEC\":[\"\",\"\"],\"TF_CONFIG\":[\"{\\\"cluster\\\":\","
                                          "\",\\\"task\\\":{\\\"type\\\":\\\"ps\\\",\\\"index\\\":0}}\"],\"Z\":\"2\"",
                                          ",\"cluster_spec_bytes\":48"),
                               &a),
                     EXEC_ANS_GO);
    assert_int_equal(strlen(SPEC), 48);
    assert_int_equal(a.env.kv.len, 4);
    assert_string_equal(a.env.kv.items[0], "A=1");
    assert_string_equal(a.env.kv.items[1], "CLUSTER_SPEC=" SPEC);
    assert_string_equal(a.env.kv.items[2], "TF_CONFIG={\"cluster\":" SPEC ",\"task\":{\"type\":\"ps\",\"index\":0}}");
    assert_string_equal(a.env.kv.items[3], "Z=2");
    tony_exec_answer_free(&a);
    /* no spliced value: the byte count is not needed, nor read */
    assert_int_equal(read_text(AM_API_REGISTER, 200, GO_SPLICED("\"CLUSTER_SPEC\":\"" "{}" "\"", ""), &a),
                     EXEC_ANS_GO);
    assert_string_equal(tony_env_get(&a.env, "CLUSTER_SPEC"), "{}");
    tony_exec_answer_free(&a);
    assert_int_equal(read_text(AM_API_REGISTER, 200, GO_SPLICED("\"A\":\"1\"", ",\"cluster_spec_bytes\":\"no\""), &a),
                     EXEC_ANS_GO);
    tony_exec_answer_free(&a);
}

static void test_go_spliced_refused(void **state) {
    (void)state;
    /* the spec reads back to other bytes than the coordinator's (another
     * encoder, a forged count): nothing of the env is kept */
    tony_exec_answer a;
    assert_int_equal(read_text(AM_API_REGISTER, 200,
                               GO_SPLICED("\"A\":\"1\",\"CLUSTER_SPEC\":[\"\",\"\"]", ",\"cluster_spec_bytes\":49"), &a),
                     EXEC_ANS_INVALID);
    assert_int_equal(a.env.kv.len, 0);
    assert_non_null(strstr(a.why, "reads back as 48 bytes of JSON, not the 49 \"cluster_spec_bytes\" says"));
    tony_exec_answer_free(&a);
    expect_invalid(AM_API_REGISTER, 200, GO_SPLICED("\"CLUSTER_SPEC\":[\"\",\"\"]", ""),
                   "\"cluster_spec_bytes\" is not a number");
    expect_invalid(AM_API_REGISTER, 200,
                   "{\"status\":\"go\",\"command\":\"x\",\"env\":{\"CLUSTER_SPEC\":[\"\",\"\"]},\"cluster_spec\":[],"
                   "\"cluster_spec_bytes\":2}",
                   "which is not an object");
    expect_invalid(AM_API_REGISTER, 200,
                   "{\"status\":\"go\",\"command\":\"x\",\"env\":{\"CLUSTER_SPEC\":[\"\",\"\"]},\"cluster_spec_bytes\":2}",
                   "which is not an object");
    /* only a pair of plain strings is spliced */
    expect_invalid(AM_API_REGISTER, 200, GO_SPLICED("\"C\":[\"\"]", ",\"cluster_spec_bytes\":48"), "C no text");
    expect_invalid(AM_API_REGISTER, 200, GO_SPLICED("\"C\":[\"\",\"\",\"\"]", ",\"cluster_spec_bytes\":48"),
                   "C no text");
    expect_invalid(AM_API_REGISTER, 200, GO_SPLICED("\"C\":[\"\",3]", ",\"cluster_spec_bytes\":48"), "C no text");
    expect_invalid(AM_API_REGISTER, 200, GO_SPLICED("\"C\":[\"a\\u0000\",\"\"]", ",\"cluster_spec_bytes\":48"),
                   "C no text");
    /* a spliced name is a variable's name as any other */
    expect_invalid(AM_API_REGISTER, 200, GO_SPLICED("\"C=\":[\"\",\"\"]", ",\"cluster_spec_bytes\":48"), "variable");
    /* a name given twice, whole and spliced: a JSON object keeps one value
     * a name (jansson, as the executor parses: the last), so the task gets
     * one value, never both */
    assert_int_equal(read_text(AM_API_REGISTER, 200,
                               GO_SPLICED("\"C\":\"1\",\"C\":[\"<\",\">\"]", ",\"cluster_spec_bytes\":48"), &a),
                     EXEC_ANS_GO);
    assert_int_equal(a.env.kv.len, 1);
    assert_string_equal(a.env.kv.items[0], "C=<" SPEC ">");
    tony_exec_answer_free(&a);
}

static void test_wait_adopted_unknown_refused(void **state) {
    (void)state;
    tony_exec_answer a;
    assert_int_equal(read_text(AM_API_REGISTER, 200, "{\"status\":\"wait\"}", &a), EXEC_ANS_WAIT);
    tony_exec_answer_free(&a);
    assert_int_equal(read_text(AM_API_REGISTER, 200, "{\"status\":\"adopted\"}", &a), EXEC_ANS_ADOPTED);
    tony_exec_answer_free(&a);
    assert_int_equal(read_text(AM_API_REGISTER, 200, "{\"status\":\"dance\"}", &a), EXEC_ANS_UNKNOWN);
    tony_exec_answer_free(&a);
    assert_int_equal(read_text(AM_API_REGISTER, 200, "{}", &a), EXEC_ANS_UNKNOWN);
    tony_exec_answer_free(&a);
    /* a register 409 (adoption refused) is a refusal, whatever its status */
    assert_int_equal(read_text(AM_API_REGISTER, 409, "{\"status\":\"stop\",\"error\":\"the job is over\"}", &a),
                     EXEC_ANS_REFUSED);
    assert_string_equal(a.error, "the job is over");
    tony_exec_answer_free(&a);
    assert_int_equal(read_text(AM_API_REGISTER, 400, "{\"error\":\"bad port\"}", &a), EXEC_ANS_REFUSED);
    assert_string_equal(a.error, "bad port");
    tony_exec_answer_free(&a);
    /* no JSON object at all */
    assert_int_equal(tony_exec_reply_read(AM_API_REGISTER, 200, NULL, &held, &a), EXEC_ANS_INVALID);
    tony_exec_answer_free(&a);
    expect_invalid(AM_API_REGISTER, 200, "[\"go\"]", "no JSON object");
}

static void test_next(void **state) {
    (void)state;
    tony_exec_answer a;
    assert_int_equal(read_text(AM_API_REGISTER, 200,
                               "{\"status\":\"next\",\"attempt\":2,\"log_dir\":\"" JOB "/attempts/2/worker-0\"}", &a),
                     EXEC_ANS_NEXT);
    assert_int_equal(a.next_attempt, 2);
    assert_string_equal(a.next_log_dir, JOB "/attempts/2/worker-0");
    tony_exec_answer_free(&a);
    /* in a cluster's container: no log dir, and none is needed */
    tony_exec_held cluster = {.attempt = 0};
    json_t *j = json_pack("{s:s,s:i}", AM_API_STATUS, AM_API_NEXT, AM_API_NEXT_ATTEMPT, 1);
    assert_int_equal(tony_exec_reply_read(AM_API_FINISHED, 200, j, &cluster, &a), EXEC_ANS_NEXT);
    assert_int_equal(a.next_attempt, 1);
    assert_null(a.next_log_dir);
    tony_exec_answer_free(&a);
    json_decref(j);
    assert_int_equal(read_text(AM_API_FINISHED, 200, "{\"status\":\"next\",\"attempt\":5,\"log_dir\":\"\"}", &a),
                     EXEC_ANS_NEXT);
    assert_null(a.next_log_dir);
    tony_exec_answer_free(&a);
    /* a finished answer that says nothing more: exit */
    assert_int_equal(read_text(AM_API_FINISHED, 200, "{}", &a), EXEC_ANS_OK);
    assert_int_equal(a.next_attempt, -1);
    tony_exec_answer_free(&a);
}

static void test_next_refused(void **state) {
    (void)state;
    /* only to a later attempt */
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"next\",\"attempt\":1}", "no later attempt");
    expect_invalid(AM_API_FINISHED, 200, "{\"status\":\"next\",\"attempt\":0}", "no later attempt");
    expect_invalid(AM_API_FINISHED, 200, "{\"status\":\"next\"}", "no later attempt");
    expect_invalid(AM_API_FINISHED, 200, "{\"status\":\"next\",\"attempt\":\"2\"}", "no later attempt");
    expect_invalid(AM_API_FINISHED, 200, "{\"status\":\"next\",\"attempt\":4294967298}", "no later attempt");
    /* the log dir: absolute, no "..", inside the job's dir */
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"next\",\"attempt\":2,\"log_dir\":\"/etc/cron.d\"}",
                   "outside the job's dir");
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"next\",\"attempt\":2,\"log_dir\":\"" JOB "x/a\"}",
                   "outside the job's dir");
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"next\",\"attempt\":2,\"log_dir\":\"" JOB "\"}",
                   "outside the job's dir");
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"next\",\"attempt\":2,\"log_dir\":\"" JOB "/\"}",
                   "outside the job's dir");
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"next\",\"attempt\":2,\"log_dir\":\"" JOB "/../../x\"}",
                   "without \"..\"");
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"next\",\"attempt\":2,\"log_dir\":\"" JOB "/a/..\"}",
                   "without \"..\"");
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"next\",\"attempt\":2,\"log_dir\":\"attempts/2\"}",
                   "not an absolute path");
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"next\",\"attempt\":2,\"log_dir\":\"" JOB "/a\\u0000/x\"}",
                   "not a path");
    expect_invalid(AM_API_REGISTER, 200, "{\"status\":\"next\",\"attempt\":2,\"log_dir\":[]}", "not a path");
    /* a name with dots that is no ".." component is a name */
    tony_exec_answer a;
    assert_int_equal(read_text(AM_API_REGISTER, 200, "{\"status\":\"next\",\"attempt\":2,\"log_dir\":\"" JOB "/a..b/..c\"}",
                               &a),
                     EXEC_ANS_NEXT);
    tony_exec_answer_free(&a);
    /* where the executor knows no job dir (a cluster's container), no log dir may be named */
    tony_exec_held cluster = {.attempt = 0};
    json_t *j = json_pack("{s:s,s:i,s:s}", AM_API_STATUS, AM_API_NEXT, AM_API_NEXT_ATTEMPT, 1, AM_API_NEXT_LOG_DIR,
                          JOB "/attempts/1/worker-0");
    assert_int_equal(tony_exec_reply_read(AM_API_REGISTER, 200, j, &cluster, &a), EXEC_ANS_INVALID);
    tony_exec_answer_free(&a);
    json_decref(j);
}

static void test_heartbeat(void **state) {
    (void)state;
    tony_exec_answer a;
    assert_int_equal(read_text(AM_API_HEARTBEAT, 200, "{}", &a), EXEC_ANS_OK);
    assert_false(a.dump_stacks);
    assert_int_equal(a.credentials, 0);
    assert_null(a.why);
    tony_exec_answer_free(&a);
    /* "aGVsbG8=" is "hello" */
    assert_int_equal(read_text(AM_API_HEARTBEAT, 200,
                               "{\"dump_stacks\":true,\"credentials\":{\"generation\":3,\"data\":\"aGVsbG8=\"}}", &a),
                     EXEC_ANS_OK);
    assert_true(a.dump_stacks);
    assert_int_equal(a.credentials, 3);
    assert_int_equal(a.credentials_data.len, 5);
    assert_memory_equal(a.credentials_data.data, "hello", 5);
    tony_exec_answer_free(&a);
    /* a stop and a stale attempt (409) */
    assert_int_equal(read_text(AM_API_HEARTBEAT, 409, "{\"status\":\"stop\",\"error\":\"finishing\"}", &a),
                     EXEC_ANS_STOP);
    assert_string_equal(a.error, "finishing");
    tony_exec_answer_free(&a);
    assert_int_equal(read_text(AM_API_HEARTBEAT, 409, "{\"status\":\"stale\"}", &a), EXEC_ANS_STALE);
    tony_exec_answer_free(&a);
    assert_int_equal(read_text(AM_API_HEARTBEAT, 409, "{}", &a), EXEC_ANS_STALE);
    tony_exec_answer_free(&a);
    assert_int_equal(read_text(AM_API_HEARTBEAT, 500, "{\"error\":\"x\"}", &a), EXEC_ANS_REFUSED);
    tony_exec_answer_free(&a);
}

static void test_credentials_refused(void **state) {
    (void)state;
    const char *cases[] = {
        "{\"credentials\":{\"generation\":2,\"data\":\"aGVsbG8=\"}}", /* the one held */
        "{\"credentials\":{\"generation\":1,\"data\":\"aGVsbG8=\"}}", /* older */
        "{\"credentials\":{\"generation\":3,\"data\":\"not base64!\"}}",
        "{\"credentials\":{\"generation\":3}}",
        "{\"credentials\":{\"data\":\"aGVsbG8=\"}}",
        "{\"credentials\":{\"generation\":3,\"data\":\"aGVs\\u0000bG8=\"}}",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tony_exec_answer a;
        /* the heartbeat itself is answered; its credentials are left */
        assert_int_equal(read_text(AM_API_HEARTBEAT, 200, cases[i], &a), EXEC_ANS_OK);
        assert_int_equal(a.credentials, 0);
        assert_null(a.credentials_data.data);
        if (i >= 2) assert_non_null(a.why); /* said: not the ones held */
        tony_exec_answer_free(&a);
    }
}

static void test_watch(void **state) {
    (void)state;
    tony_exec_answer a;
    assert_int_equal(read_text(AM_API_WATCH, 200, "{\"status\":\"wait\"}", &a), EXEC_ANS_WAIT);
    tony_exec_answer_free(&a);
    assert_int_equal(read_text(AM_API_WATCH, 200, "{\"status\":\"stop\"}", &a), EXEC_ANS_STOP);
    tony_exec_answer_free(&a);
    assert_int_equal(read_text(AM_API_WATCH, 409, "{\"status\":\"stale\"}", &a), EXEC_ANS_STALE);
    tony_exec_answer_free(&a);
    /* a watch is never a go nor a next */
    assert_int_equal(read_text(AM_API_WATCH, 200, "{\"status\":\"go\",\"command\":\"id\"}", &a), EXEC_ANS_UNKNOWN);
    tony_exec_answer_free(&a);
    assert_int_equal(read_text(AM_API_WATCH, 200, "{\"status\":\"next\",\"attempt\":9}", &a), EXEC_ANS_UNKNOWN);
    tony_exec_answer_free(&a);
    /* nor is a finished answer a go */
    assert_int_equal(read_text(AM_API_FINISHED, 200, "{\"status\":\"go\",\"command\":\"id\"}", &a), EXEC_ANS_OK);
    assert_null(a.command);
    tony_exec_answer_free(&a);
}

static void test_job_dir_of(void **state) {
    (void)state;
    char *d = tony_exec_job_dir_of(JOB "/attempts/0/worker-1", 0, "worker", 1);
    assert_string_equal(d, JOB);
    free(d);
    assert_null(tony_exec_job_dir_of(JOB "/attempts/0/worker-1", 1, "worker", 1));
    assert_null(tony_exec_job_dir_of("/yarn/logs/container_1/", 0, "worker", 1));
    assert_null(tony_exec_job_dir_of("/attempts/0/worker-1", 0, "worker", 1));
    assert_null(tony_exec_job_dir_of("rel/attempts/0/worker-1", 0, "worker", 1));
    assert_null(tony_exec_job_dir_of(NULL, 0, "worker", 1));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_go),          cmocka_unit_test(test_go_refused),
        cmocka_unit_test(test_go_spliced),  cmocka_unit_test(test_go_spliced_refused),
        cmocka_unit_test(test_wait_adopted_unknown_refused),
        cmocka_unit_test(test_next),        cmocka_unit_test(test_next_refused),
        cmocka_unit_test(test_heartbeat),   cmocka_unit_test(test_credentials_refused),
        cmocka_unit_test(test_watch),       cmocka_unit_test(test_job_dir_of),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
