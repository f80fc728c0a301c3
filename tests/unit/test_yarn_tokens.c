/* Unit tests of the YARN token and id code: Hadoop VLongs at every edge,
 * token storage in both formats (built byte by byte here, plus truncated and
 * corrupt files), the Writable/base64 encodings for REST, and container ids
 * with and without epochs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/yarn/ids.h"
#include "backend/yarn/ids_pb.h"
#include "backend/yarn/tokens.h"

#define assert_contains(haystack, needle)                                                                   \
    do {                                                                                                    \
        const char *h_ = (haystack), *n_ = (needle);                                                        \
        if (!h_ || !strstr(h_, n_)) fail_msg("expected \"%s\" to contain \"%s\"", h_ ? h_ : "(null)", n_); \
    } while (0)

/* --- VLong */

typedef struct {
    int64_t v;
    const char *hex;
} vcase;

static void hex_of(const tony_buf *b, char *out) {
    out[0] = '\0';
    for (size_t i = 0; i < b->len; i++) sprintf(out + strlen(out), "%s%02x", i ? " " : "", (unsigned char)b->data[i]);
}

static void test_vlong_encodings(void **state) {
    (void)state;
    static const vcase cases[] = {
        {0, "00"},
        {1, "01"},
        {127, "7f"},
        {128, "8f 80"},
        {-1, "ff"},
        {-112, "90"},
        {-113, "87 70"},
        {255, "8f ff"},
        {256, "8e 01 00"},
        {-256, "87 ff"},
        {-257, "86 01 00"},
        {2147483647LL, "8c 7f ff ff ff"},
        {2147483648LL, "8c 80 00 00 00"},
        {-2147483648LL, "84 7f ff ff ff"},
        {INT64_MAX, "88 7f ff ff ff ff ff ff ff"},
        {INT64_MIN, "80 7f ff ff ff ff ff ff ff"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tony_buf b = {0};
        yarn_vlong_write(&b, cases[i].v);
        char hex[64];
        hex_of(&b, hex);
        if (strcmp(hex, cases[i].hex) != 0) fail_msg("%lld: got %s want %s", (long long)cases[i].v, hex, cases[i].hex);
        size_t pos = 0;
        int64_t back;
        assert_int_equal(yarn_vlong_read((unsigned char *)b.data, b.len, &pos, &back), 0);
        assert_int_equal(pos, b.len);
        assert_true(back == cases[i].v);
        /* every proper prefix of a multi-byte number is a clean failure */
        for (size_t cut = 0; cut < b.len; cut++) {
            pos = 0;
            assert_int_equal(yarn_vlong_read((unsigned char *)b.data, cut, &pos, &back), -1);
            assert_int_equal(pos, 0);
        }
        tony_buf_free(&b);
    }
}

static void test_vlong_round_trips(void **state) {
    (void)state;
    for (int i = 0; i < 63; i++) {
        int64_t v = (int64_t)1 << i;
        const int64_t probes[] = {v, v - 1, v + 1, -v, -v - 1, -v + 1};
        for (size_t k = 0; k < 6; k++) {
            tony_buf b = {0};
            yarn_vlong_write(&b, probes[k]);
            size_t pos = 0;
            int64_t back;
            assert_int_equal(yarn_vlong_read((unsigned char *)b.data, b.len, &pos, &back), 0);
            assert_true(back == probes[k]);
            tony_buf_free(&b);
        }
    }
}

static void test_vint_range(void **state) {
    (void)state;
    tony_buf b = {0};
    yarn_vlong_write(&b, 2147483648LL);
    size_t pos = 0;
    int32_t v;
    assert_int_equal(yarn_vint_read((unsigned char *)b.data, b.len, &pos, &v), -1);
    assert_int_equal(pos, 0);
    tony_buf_free(&b);
    b = (tony_buf){0};
    yarn_vlong_write(&b, INT32_MIN);
    assert_int_equal(yarn_vint_read((unsigned char *)b.data, b.len, &pos, &v), 0);
    assert_int_equal(v, INT32_MIN);
    tony_buf_free(&b);
}

/* --- token storage, Writable (format 0), assembled by hand */

static void put(tony_buf *b, const void *p, size_t n) { tony_buf_append(b, p, n); }
static void put_byte(tony_buf *b, int v) {
    char c = (char)v;
    put(b, &c, 1);
}

/* A 200-byte identifier makes its VInt length two bytes (8f c8). */
static tony_buf writable_file(void) {
    tony_buf b = {0};
    put(&b, "HDTS\0", 5);
    put_byte(&b, 2); /* two tokens */
    put_byte(&b, 0); /* alias "" */
    put_byte(&b, 0x8f);
    put_byte(&b, 200);
    for (int i = 0; i < 200; i++) put_byte(&b, i);
    put_byte(&b, 3);
    put(&b, "pw1", 3);
    put_byte(&b, 16);
    put(&b, "YARN_AM_RM_TOKEN", 16);
    put_byte(&b, 0); /* service "" */
    put_byte(&b, 9);
    put(&b, "hdfs:9000", 9); /* alias */
    put_byte(&b, 2);
    put(&b, "\x01\x02", 2);
    put_byte(&b, 2);
    put(&b, "pp", 2);
    put_byte(&b, 21);
    put(&b, "HDFS_DELEGATION_TOKEN", 21);
    put_byte(&b, 9);
    put(&b, "hdfs:9000", 9);
    put_byte(&b, 1); /* one secret */
    put_byte(&b, 15);
    put(&b, "tony.job.secret", 15);
    put_byte(&b, 4);
    put(&b, "\x00s3\xff", 4);
    return b;
}

static void test_credentials_writable(void **state) {
    (void)state;
    tony_buf b = writable_file();
    yarn_credentials *c;
    tony_error err;
    assert_int_equal(yarn_credentials_parse(b.data, b.len, "test", &c, &err), 0);
    assert_int_equal(c->n_tokens, 2);
    const yarn_token *t = yarn_credentials_find_kind(c, YARN_AMRM_TOKEN_KIND);
    assert_non_null(t);
    assert_int_equal(t->identifier_len, 200);
    assert_int_equal(t->identifier[199], 199);
    assert_memory_equal(t->password, "pw1", 3);
    assert_string_equal(t->service, "");
    t = yarn_credentials_find_kind(c, "HDFS_DELEGATION_TOKEN");
    assert_non_null(t);
    assert_string_equal(t->service, "hdfs:9000");
    assert_string_equal(c->tokens[1].alias, "hdfs:9000");
    assert_null(yarn_credentials_find_kind(c, "NMToken"));
    const yarn_secret *s = yarn_credentials_find_secret(c, "tony.job.secret");
    assert_non_null(s);
    assert_int_equal(s->len, 4);
    assert_memory_equal(s->data, "\x00s3\xff", 4);
    assert_null(yarn_credentials_find_secret(c, "other"));

    /* writing it back gives the very same bytes */
    tony_buf again = {0};
    yarn_credentials_write(c, &again);
    assert_int_equal(again.len, b.len);
    assert_memory_equal(again.data, b.data, b.len);
    tony_buf_free(&again);
    yarn_credentials_free(c);

    /* every truncation is a clean error naming the source, never a crash */
    for (size_t cut = 0; cut < b.len; cut++) {
        assert_int_equal(yarn_credentials_parse(b.data, cut, "tokfile", &c, &err), -1);
        assert_null(c);
        assert_contains(err.msg, "tokfile");
    }
    /* a length that claims more than the file has */
    b.data[7] = (char)0x8e; /* identifier length becomes 2 bytes: 0xc8 0x00 = 51200 */
    assert_int_equal(yarn_credentials_parse(b.data, b.len, "tokfile", &c, &err), -1);
    assert_contains(err.msg, "token identifier");
    /* a negative length */
    b.data[7] = (char)0x87; /* ~200: negative */
    assert_int_equal(yarn_credentials_parse(b.data, b.len, "tokfile", &c, &err), -1);
    assert_contains(err.msg, "token identifier");
    tony_buf_free(&b);
}

static void test_credentials_bad_headers(void **state) {
    (void)state;
    yarn_credentials *c;
    tony_error err;
    assert_int_equal(yarn_credentials_parse("HDTX\0\0\0", 7, "f", &c, &err), -1);
    assert_contains(err.msg, "not a Hadoop token storage");
    assert_int_equal(yarn_credentials_parse("HDTS\x07\0\0", 7, "f", &c, &err), -1);
    assert_contains(err.msg, "unknown token storage format 7");
    assert_int_equal(yarn_credentials_parse("HDTS\0\0\0", 7, "f", &c, &err), 0);
    assert_int_equal(c->n_tokens + c->n_secrets, 0);
    yarn_credentials_free(c);
    assert_int_equal(yarn_credentials_parse("HDTS\0\0\0\0", 8, "f", &c, &err), -1);
    assert_contains(err.msg, "trailing");
    assert_int_equal(yarn_credentials_read_file("/nonexistent/container_tokens", &c, &err), -1);
    assert_contains(err.msg, "/nonexistent/container_tokens");
}

/* --- token storage, protobuf (format 1), assembled by hand */

static void test_credentials_protobuf(void **state) {
    (void)state;
    static const unsigned char token[] = {0x0a, 2, 1, 2, 0x12, 2, 'p', 'w', 0x1a, 16, 'Y', 'A', 'R', 'N', '_',
                                          'A', 'M', '_', 'R', 'M', '_', 'T', 'O', 'K', 'E', 'N', 0x22, 0};
    tony_buf kv = {0}, file = {0};
    put(&kv, "\x0a\x01" "a\x12", 4);
    put_byte(&kv, sizeof token);
    put(&kv, token, sizeof token);
    tony_buf msg = {0};
    put_byte(&msg, 0x0a);
    put_byte(&msg, (int)kv.len);
    put(&msg, kv.data, kv.len);
    put(&msg, "\x12\x15\x0a\x0ftony.job.secret\x1a\x02s3", 23);
    put(&file, "HDTS\x01", 5);
    put_byte(&file, (int)msg.len);
    put(&file, msg.data, msg.len);

    yarn_credentials *c;
    tony_error err;
    assert_int_equal(yarn_credentials_parse(file.data, file.len, "pb", &c, &err), 0);
    assert_int_equal(c->n_tokens, 1);
    assert_string_equal(c->tokens[0].alias, "a");
    const yarn_token *t = yarn_credentials_find_kind(c, YARN_AMRM_TOKEN_KIND);
    assert_non_null(t);
    assert_int_equal(t->identifier_len, 2);
    assert_memory_equal(t->identifier, "\x01\x02", 2);
    assert_memory_equal(t->password, "pw", 2);
    const yarn_secret *s = yarn_credentials_find_secret(c, "tony.job.secret");
    assert_non_null(s);
    assert_memory_equal(s->data, "s3", 2);
    yarn_credentials_free(c);

    for (size_t cut = 5; cut < file.len; cut++) {
        assert_int_equal(yarn_credentials_parse(file.data, cut, "pb", &c, &err), -1);
        assert_contains(err.msg, "pb");
    }
    /* garbage inside a well-delimited message */
    file.data[7] = (char)0xff;
    assert_int_equal(yarn_credentials_parse(file.data, file.len, "pb", &c, &err), -1);
    tony_buf_free(&kv);
    tony_buf_free(&msg);
    tony_buf_free(&file);
}

static void test_token_writable_and_base64(void **state) {
    (void)state;
    yarn_token *t = yarn_token_new("\xfb\xff", 2, "\x3e", 1, "K", "svc");
    tony_buf b = {0};
    yarn_token_write(t, &b);
    assert_int_equal(b.len, 1 + 2 + 1 + 1 + 1 + 1 + 1 + 3);
    assert_memory_equal(b.data, "\x02\xfb\xff\x01\x3e\x01K\x03svc", b.len);
    char *u = tony_base64_encode(b.data, b.len, true);
    char *s = tony_base64_encode(b.data, b.len, false);
    assert_string_equal(s, "Avv/AT4BSwNzdmM=");
    assert_string_equal(u, "Avv_AT4BSwNzdmM");
    free(u);
    free(s);
    s = tony_base64_encode("", 0, false);
    assert_string_equal(s, "");
    free(s);
    tony_buf_free(&b);
    char *url = yarn_token_url_string(t);
    assert_string_equal(url, "Avv_AT4BSwNzdmM"); /* Token.encodeToUrlString's form */
    free(url);
    yarn_token *d = yarn_token_dup(t);
    assert_string_equal(d->service, "svc");
    yarn_token_free(d);
    yarn_token_free(t);
    assert_null(yarn_token_dup(NULL));
}

/* A task container gets every token and secret of the AM's but its
 * AMRMToken: the job's HDFS tokens for the user's code, the job's secret for
 * the executor (which must not travel in the env, written to YARN's logs). */
static void test_credentials_for_tasks(void **state) {
    (void)state;
    yarn_credentials *c = yarn_credentials_new();
    yarn_token *amrm = yarn_token_new("a", 1, "p", 1, YARN_AMRM_TOKEN_KIND, "127.0.0.1:8030");
    yarn_token *hdfs = yarn_token_new("h", 1, "q", 1, YARN_HDFS_TOKEN_KIND, "127.0.0.1:8020");
    tony_buf out = {0};
    static const char *const withheld[] = {"tony.keytab", NULL};
    assert_false(yarn_credentials_write_for_tasks(c, withheld, &out)); /* nothing to give */
    assert_int_equal(out.len, 0);
    yarn_credentials_add_token(c, "amrm", amrm);
    yarn_credentials_add_secret(c, "tony.keytab", "KT", 2);
    assert_false(yarn_credentials_write_for_tasks(c, withheld, &out)); /* only the AM's own */
    yarn_credentials_add_secret(c, "tony.job.secret", "s3cret", 6);
    yarn_credentials_add_token(c, "127.0.0.1:8020", hdfs);
    assert_true(yarn_credentials_write_for_tasks(c, withheld, &out));
    yarn_credentials *back = NULL;
    tony_error err;
    assert_int_equal(yarn_credentials_parse(out.data, out.len, "the tasks' tokens", &back, &err), 0);
    assert_int_equal(back->n_tokens, 1);
    assert_string_equal(back->tokens[0].alias, "127.0.0.1:8020");
    assert_string_equal(back->tokens[0].token->kind, YARN_HDFS_TOKEN_KIND);
    assert_null(yarn_credentials_find_kind(back, YARN_AMRM_TOKEN_KIND));
    const yarn_secret *sec = yarn_credentials_find_secret(back, "tony.job.secret");
    assert_non_null(sec);
    assert_int_equal(sec->len, 6);
    assert_memory_equal(sec->data, "s3cret", 6);
    assert_null(yarn_credentials_find_secret(back, "tony.keytab"));
    assert_int_equal(back->n_secrets, 1);
    yarn_credentials_free(back);
    yarn_credentials_free(c);
    yarn_token_free(amrm);
    yarn_token_free(hdfs);
    tony_buf_free(&out);
}

/* A URL string back into the token it encodes, and set_token replacing the
 * token under an alias in place (the first HDFS token stays the first). */
static void test_token_from_url_string(void **state) {
    (void)state;
    tony_error err;
    yarn_token *t = NULL;
    assert_int_equal(yarn_token_from_url_string("Avv_AT4BSwNzdmM", &t, &err), 0);
    assert_int_equal(t->identifier_len, 2);
    assert_memory_equal(t->identifier, "\xfb\xff", 2);
    assert_int_equal(t->password_len, 1);
    assert_int_equal(t->password[0], 0x3e);
    assert_string_equal(t->kind, "K");
    assert_string_equal(t->service, "svc");
    char *again = yarn_token_url_string(t);
    assert_string_equal(again, "Avv_AT4BSwNzdmM");
    free(again);
    yarn_token *bad = NULL;
    assert_int_equal(yarn_token_from_url_string("Avv_AT4BSwNzdm!", &bad, &err), -1);
    assert_int_equal(yarn_token_from_url_string("Avv_AT4B", &bad, &err), -1); /* cut short */
    assert_int_equal(yarn_token_from_url_string("Avv_AT4BSwNzdmMA", &bad, &err), -1); /* trailing */
    assert_null(bad);

    yarn_credentials *c = yarn_credentials_new();
    yarn_token *a = yarn_token_new("a", 1, "p", 1, YARN_HDFS_TOKEN_KIND, "nn1:8020");
    yarn_token *b = yarn_token_new("b", 1, "q", 1, YARN_HDFS_TOKEN_KIND, "nn2:8020");
    yarn_credentials_set_token(c, "nn1:8020", a);
    yarn_credentials_set_token(c, "nn2:8020", b);
    yarn_credentials_set_token(c, "nn1:8020", t);
    assert_int_equal(c->n_tokens, 2);
    assert_string_equal(c->tokens[0].alias, "nn1:8020");
    assert_string_equal(c->tokens[0].token->kind, "K");
    assert_string_equal(c->tokens[1].token->service, "nn2:8020");
    yarn_credentials_free(c);
    yarn_token_free(a);
    yarn_token_free(b);
    yarn_token_free(t);
}

/* The dates in a delegation token's identifier: version, owner, renewer,
 * real user, issueDate, maxDate, sequence number, master key id. These are
 * the identifier bytes of an HDFS token the kerberized test cluster issued
 * (owner and renewer tony, max lifetime 90 s). */
static void test_delegation_token_dates(void **state) {
    (void)state;
    static const unsigned char id[] = {0x00, 0x04, 't',  'o',  'n',  'y',  0x04, 't',  'o',  'n',
                                       'y',  0x00, 0x8a, 0x01, 0xa2, 0x0b, 0x1e, 0x91, 0x91, 0x8a,
                                       0x01, 0xa2, 0x0b, 0x1f, 0xf1, 0x21, 0x01, 0x02};
    yarn_token *t = yarn_token_new(id, sizeof id, "p", 1, YARN_HDFS_TOKEN_KIND, "127.0.0.1:8020");
    int64_t issue = 0, max = 0;
    assert_int_equal(yarn_delegation_token_dates(t, &issue, &max), 0);
    assert_true(issue == 1795482882449LL);
    assert_true(max == 1795482972449LL);
    yarn_token_free(t);
    /* Cut inside maxDate, or not a delegation token at all. */
    t = yarn_token_new(id, sizeof id - 4, "p", 1, YARN_HDFS_TOKEN_KIND, "");
    assert_int_equal(yarn_delegation_token_dates(t, &issue, &max), -1);
    yarn_token_free(t);
    t = yarn_token_new("\0\x7f", 2, "p", 1, YARN_AMRM_TOKEN_KIND, "");
    assert_int_equal(yarn_delegation_token_dates(t, &issue, &max), -1);
    yarn_token_free(t);
}

/* --- ids */

static void test_container_ids(void **state) {
    (void)state;
    tony_error err;
    yarn_container_id c;
    char buf[YARN_ID_MAX];
    assert_int_equal(yarn_container_id_parse("container_1700000000123_0007_01_000002", &c, &err), 0);
    assert_true(c.attempt.app.cluster_ts == 1700000000123LL);
    assert_int_equal(c.attempt.app.id, 7);
    assert_int_equal(c.attempt.attempt, 1);
    assert_int_equal(c.id, 2);
    assert_string_equal(yarn_container_id_format(&c, buf, sizeof buf), "container_1700000000123_0007_01_000002");

    assert_int_equal(yarn_container_id_parse("container_e17_1700000000123_12345_03_1234567", &c, &err), 0);
    assert_true(c.id == ((int64_t)17 << 40 | 1234567));
    assert_int_equal(c.attempt.app.id, 12345);
    assert_string_equal(yarn_container_id_format(&c, buf, sizeof buf), "container_e17_1700000000123_12345_03_1234567");
    assert_int_equal(yarn_container_id_parse("container_e00_1_0001_01_000001", &c, &err), 0);
    assert_string_equal(yarn_container_id_format(&c, buf, sizeof buf), "container_1_0001_01_000001");

    const char *bad[] = {"",
                         "container_",
                         "container_1_2_3",
                         "container_1_2_3_4_5",
                         "container_ex_1_2_3_4",
                         "container_1_2_3_-4",
                         "container_1_2_3_4x",
                         "container_1__3_4",
                         "appattempt_1_2_3",
                         "container_1_99999999999_01_000001",
                         NULL};
    for (int i = 0; bad[i]; i++) {
        if (yarn_container_id_parse(bad[i], &c, &err) != -1) fail_msg("accepted '%s'", bad[i]);
        assert_contains(err.msg, "is not a YARN container id");
    }
    assert_int_equal(yarn_container_id_parse(NULL, &c, &err), -1);
}

static void test_app_and_attempt_ids(void **state) {
    (void)state;
    tony_error err;
    yarn_app_id a;
    yarn_attempt_id at;
    char buf[YARN_ID_MAX];
    assert_int_equal(yarn_app_id_parse("application_1700000000123_0042", &a, &err), 0);
    assert_int_equal(a.id, 42);
    assert_string_equal(yarn_app_id_format(&a, buf, sizeof buf), "application_1700000000123_0042");
    assert_int_equal(yarn_app_id_parse("application_17_42_1", &a, &err), -1);
    assert_contains(err.msg, "application_<timestamp>_<number>");
    assert_int_equal(yarn_attempt_id_parse("appattempt_1700000000123_0042_000002", &at, &err), 0);
    assert_int_equal(at.attempt, 2);
    assert_string_equal(yarn_attempt_id_format(&at, buf, sizeof buf), "appattempt_1700000000123_0042_000002");
    assert_int_equal(yarn_attempt_id_parse("appattempt_1700000000123_0042", &at, &err), -1);
}

static void test_container_id_pb(void **state) {
    (void)state;
    tony_error err;
    yarn_container_id c, back;
    assert_int_equal(yarn_container_id_parse("container_e02_1700000000123_0007_01_000002", &c, &err), 0);
    yarn_container_id_pb store;
    Hadoop__Yarn__ContainerIdProto *pb = yarn_container_id_to_pb(&c, &store);
    uint8_t wire[128];
    size_t n = hadoop__yarn__container_id_proto__pack(pb, wire);
    Hadoop__Yarn__ContainerIdProto *u = hadoop__yarn__container_id_proto__unpack(NULL, n, wire);
    assert_non_null(u);
    yarn_container_id_from_pb(u, &back);
    assert_true(back.id == c.id && back.attempt.attempt == 1 && back.attempt.app.id == 7 &&
                back.attempt.app.cluster_ts == c.attempt.app.cluster_ts);
    /* only the legacy app_id field present (old servers) */
    Hadoop__Yarn__ApplicationIdProto *saved = u->app_attempt_id->application_id;
    u->app_attempt_id->application_id = NULL;
    yarn_container_id_from_pb(u, &back);
    assert_true(back.attempt.app.cluster_ts == 1700000000123LL);
    u->app_attempt_id->application_id = saved; /* for free_unpacked */
    hadoop__yarn__container_id_proto__free_unpacked(u, NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vlong_encodings),      cmocka_unit_test(test_vlong_round_trips),
        cmocka_unit_test(test_vint_range),           cmocka_unit_test(test_credentials_writable),
        cmocka_unit_test(test_credentials_bad_headers), cmocka_unit_test(test_credentials_protobuf),
        cmocka_unit_test(test_token_writable_and_base64),
        cmocka_unit_test(test_credentials_for_tasks), cmocka_unit_test(test_container_ids),
        cmocka_unit_test(test_token_from_url_string), cmocka_unit_test(test_delegation_token_dates),
        cmocka_unit_test(test_app_and_attempt_ids),  cmocka_unit_test(test_container_id_pb),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
