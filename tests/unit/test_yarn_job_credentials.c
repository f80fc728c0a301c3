/* The coordinator's job credentials (backend/yarn/job_credentials.h): what a
 * task container gets and what it never gets (the keytab the client handed
 * the coordinator), which tokens are refreshable, and the refresh schedule.
 * The refresh's calls themselves (KDC, NameNode) are proven on the
 * kerberized test cluster (tests/e2e/test_yarn_secure.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/yarn/job_credentials.h"
#include "backend/yarn/yarn_backend.h"
#include "common/fs.h"
#include "common/strv.h"

/* A delegation token identifier with these dates (see test_yarn_tokens.c). */
static yarn_token *dt(const char *service, long long issue, long long max) {
    tony_buf id = {0};
    tony_buf_append(&id, "\0", 1);
    const char *texts[] = {"tony@EXAMPLE.COM", "yarn", ""};
    for (int i = 0; i < 3; i++) {
        yarn_vlong_write(&id, (int64_t)strlen(texts[i]));
        tony_buf_puts(&id, texts[i]);
    }
    yarn_vlong_write(&id, issue);
    yarn_vlong_write(&id, max);
    yarn_vlong_write(&id, 1);
    yarn_vlong_write(&id, 1);
    yarn_token *t = yarn_token_new(id.data, id.len, "pw", 2, YARN_HDFS_TOKEN_KIND, service);
    tony_buf_free(&id);
    return t;
}

/* Writes an AM container's token file: AMRMToken, HDFS token, the job's
 * secret, and (keytab) what `tony submit` adds for a keytab login. */
static char *am_token_file(bool keytab, const char *sources) {
    yarn_credentials *c = yarn_credentials_new();
    yarn_token *amrm = yarn_token_new("a", 1, "p", 1, YARN_AMRM_TOKEN_KIND, "127.0.0.1:8030");
    yarn_token *hdfs = dt("127.0.0.1:8020", 1795000000000LL, 1795000090000LL);
    yarn_credentials_add_token(c, "amrm", amrm);
    yarn_credentials_add_token(c, "127.0.0.1:8020", hdfs);
    yarn_credentials_add_secret(c, TONY_YARN_SECRET_ALIAS, "s3cret", 6);
    if (keytab) {
        yarn_credentials_add_secret(c, TONY_YARN_KEYTAB_ALIAS, "\x05\x02keytab-bytes", 14);
        yarn_credentials_add_secret(c, TONY_YARN_KEYTAB_PRINCIPAL_ALIAS, "tony@EXAMPLE.COM", 16);
        yarn_credentials_add_secret(c, TONY_YARN_TOKEN_SOURCES_ALIAS, sources, strlen(sources));
    }
    tony_buf b = {0};
    yarn_credentials_write(c, &b);
    char tmpl[] = "/tmp/tony-test-creds-XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b.data, b.len), (ssize_t)b.len);
    close(fd);
    tony_buf_free(&b);
    yarn_credentials_free(c);
    yarn_token_free(amrm);
    yarn_token_free(hdfs);
    return strdup(tmpl);
}

static void test_what_tasks_get(void **state) {
    (void)state;
    char *path = am_token_file(true, "{\"127.0.0.1:8020\": \"http://127.0.0.1:9870\"}");
    yarn_job_credentials *c = NULL;
    tony_error err;
    assert_int_equal(yarn_job_credentials_load(path, &c, &err), 0);
    assert_true(yarn_job_credentials_refreshable(c));
    char *secret = NULL;
    assert_int_equal(yarn_job_credentials_secret(c, &secret, &err), 0);
    assert_string_equal(secret, "s3cret");
    free(secret);
    yarn_token *amrm = yarn_job_credentials_amrm(c, &err);
    assert_non_null(amrm);
    yarn_token_free(amrm);
    char *hdfs = yarn_job_credentials_hdfs_token(c);
    assert_non_null(hdfs);
    free(hdfs);

    /* A new container gets them whatever it holds; a running executor
     * (have = 0) gets nothing until a refresh bumps the generation. */
    tony_buf out = {0};
    assert_int_equal(yarn_job_credentials_for_tasks(c, -1, &out), 0);
    assert_true(out.len > 0);
    yarn_credentials *tasks = NULL;
    assert_int_equal(yarn_credentials_parse(out.data, out.len, "tasks", &tasks, &err), 0);
    assert_null(yarn_credentials_find_kind(tasks, YARN_AMRM_TOKEN_KIND));
    assert_non_null(yarn_credentials_find_kind(tasks, YARN_HDFS_TOKEN_KIND));
    assert_non_null(yarn_credentials_find_secret(tasks, TONY_YARN_SECRET_ALIAS));
    /* The keytab and what goes with it never leave the coordinator. */
    assert_null(yarn_credentials_find_secret(tasks, TONY_YARN_KEYTAB_ALIAS));
    assert_null(yarn_credentials_find_secret(tasks, TONY_YARN_KEYTAB_PRINCIPAL_ALIAS));
    assert_null(yarn_credentials_find_secret(tasks, TONY_YARN_TOKEN_SOURCES_ALIAS));
    assert_null(memmem(out.data, out.len, "keytab-bytes", 12));
    yarn_credentials_free(tasks);
    tony_buf_free(&out);
    assert_int_equal(yarn_job_credentials_for_tasks(c, 0, &out), 0);
    assert_int_equal(out.len, 0);
    yarn_job_credentials_free(c);
    unlink(path);
    free(path);
}

/* Without a keytab, or with sources naming a token the job does not hold,
 * nothing is refreshed (and load still works). */
static void test_not_refreshable(void **state) {
    (void)state;
    tony_error err;
    yarn_job_credentials *c = NULL;
    char *path = am_token_file(false, "");
    assert_int_equal(yarn_job_credentials_load(path, &c, &err), 0);
    assert_false(yarn_job_credentials_refreshable(c));
    assert_int_equal(yarn_job_credentials_start_refresh(c, NULL, NULL, &err), 0); /* a no-op */
    yarn_job_credentials_free(c);
    unlink(path);
    free(path);
    path = am_token_file(true, "{\"10.0.0.9:8020\": \"http://10.0.0.9:9870\"}");
    assert_int_equal(yarn_job_credentials_load(path, &c, &err), 0);
    assert_false(yarn_job_credentials_refreshable(c));
    yarn_job_credentials_free(c);
    unlink(path);
    free(path);
    assert_int_equal(yarn_job_credentials_load("/nonexistent/container_tokens", &c, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/container_tokens"));
}

static void test_schedule(void **state) {
    (void)state;
    /* Fetch at three quarters of the lifetime: 7 days -> after 5.25 days. */
    long long day = 86400000LL;
    assert_true(yarn_token_fetch_due(0, 7 * day) == 7 * day / 4 * 3);
    assert_true(yarn_token_fetch_due(1000, 91000) == 68500);
    /* Renew at three quarters of the time to expiry; never past the max. */
    assert_true(yarn_token_renew_due(0, 20000, 90000) == 15000);
    assert_true(yarn_token_renew_due(10000, 30000, 90000) == 25000);
    assert_true(yarn_token_renew_due(95000, 90000, 90000) == -1);
    assert_true(yarn_token_renew_due(50000, 40000, 90000) == 50000); /* overdue: now */
    /* Retries: a tenth of what is left, within [1 s, 5 min]. */
    assert_true(yarn_token_retry_due(0, 20000) == 2000);
    assert_true(yarn_token_retry_due(0, 5000) == 1000);
    assert_true(yarn_token_retry_due(0, 7 * day) == 300000);
    assert_true(yarn_token_retry_due(9000, 1000) == 10000);
}

static void test_base64_decode(void **state) {
    (void)state;
    tony_buf b = {0};
    assert_int_equal(tony_base64_decode("aGk=", 4, &b), 0);
    assert_string_equal(b.data, "hi");
    tony_buf_free(&b);
    assert_int_equal(tony_base64_decode("aGk", 3, &b), 0); /* unpadded */
    assert_string_equal(b.data, "hi");
    tony_buf_free(&b);
    const unsigned char bytes[] = {0xfb, 0xff, 0xfe, 0x00};
    char *std = tony_base64_encode(bytes, 4, false), *url = tony_base64_encode(bytes, 4, true);
    assert_string_equal(std, "+//+AA==");
    assert_string_equal(url, "-__-AA");
    for (int i = 0; i < 2; i++) {
        const char *s = i ? url : std;
        assert_int_equal(tony_base64_decode(s, strlen(s), &b), 0);
        assert_int_equal(b.len, 4);
        assert_memory_equal(b.data, bytes, 4);
        tony_buf_free(&b);
    }
    free(std);
    free(url);
    assert_int_equal(tony_base64_decode("a", 1, &b), -1);      /* no encoding gives 1 mod 4 */
    tony_buf_free(&b);
    assert_int_equal(tony_base64_decode("ab$d", 4, &b), -1);   /* not base64 */
    tony_buf_free(&b);
    assert_int_equal(tony_base64_decode("", 0, &b), 0);
    assert_int_equal(b.len, 0);
    tony_buf_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_what_tasks_get),
        cmocka_unit_test(test_not_refreshable),
        cmocka_unit_test(test_schedule),
        cmocka_unit_test(test_base64_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
