/* Unit tests of the YARN AM protocol clients that need no server: the ask
 * table (totals per priority/size/label, only changed entries sent),
 * argument checks, and launch-context validation before any NM is called.
 * Their wire behaviour is proven live by tests/e2e/test_yarn_wire.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/yarn/amrm.h"
#include "backend/yarn/nm.h"

#define assert_contains(haystack, needle)                                                                   \
    do {                                                                                                    \
        const char *h_ = (haystack), *n_ = (needle);                                                        \
        if (!h_ || !strstr(h_, n_)) fail_msg("expected \"%s\" to contain \"%s\"", h_ ? h_ : "(null)", n_); \
    } while (0)

static yarn_amrm *new_am(void) {
    yarn_token *t = yarn_token_new("id", 2, "pw", 2, YARN_AMRM_TOKEN_KIND, "");
    tony_error err;
    yarn_amrm *am = yarn_amrm_new("127.0.0.1", 1, t, &err);
    yarn_token_free(t);
    assert_non_null(am);
    return am;
}

static void assert_pending(yarn_amrm *am, const char *want) {
    char *got = yarn_amrm_pending_asks(am);
    if (strcmp(got, want) != 0) fail_msg("pending asks:\n%s\nwant:\n%s", got, want);
    free(got);
}

static void test_ask_table(void **state) {
    (void)state;
    yarn_amrm *am = new_am();
    const yarn_resource small = {256, 1, 0}, gpu = {256, 1, 1};
    assert_pending(am, "");
    yarn_amrm_add_request(am, 1, &small, NULL, 2);
    yarn_amrm_add_request(am, 1, &small, "", 1); /* NULL and "" are the same entry */
    yarn_amrm_add_request(am, 2, &gpu, "gpu", 1);
    yarn_amrm_add_request(am, 2, &gpu, NULL, 1); /* another label: another entry */
    assert_pending(am, "1/256/1/0/=3\n2/256/1/1/gpu=1\n2/256/1/1/=1\n");
    assert_int_equal(yarn_amrm_outstanding(am, 1, &small, NULL), 3);
    assert_int_equal(yarn_amrm_outstanding(am, 2, &gpu, "gpu"), 1);
    assert_int_equal(yarn_amrm_outstanding(am, 3, &gpu, "gpu"), 0);

    /* removing below zero stops at zero, and a zero total is still sent */
    yarn_amrm_remove_request(am, 1, &small, NULL, 5);
    assert_int_equal(yarn_amrm_outstanding(am, 1, &small, NULL), 0);
    assert_pending(am, "1/256/1/0/=0\n2/256/1/1/gpu=1\n2/256/1/1/=1\n");
    /* removing what was never asked for changes nothing */
    yarn_amrm_remove_request(am, 9, &small, NULL, 1);
    yarn_amrm_add_request(am, 9, &small, NULL, 0);
    yarn_amrm_add_request(am, 9, &small, NULL, -4);
    assert_pending(am, "1/256/1/0/=0\n2/256/1/1/gpu=1\n2/256/1/1/=1\n");
    yarn_amrm_free(am);
}

static void test_amrm_args(void **state) {
    (void)state;
    tony_error err;
    yarn_token *t = yarn_token_new("id", 2, "pw", 2, YARN_AMRM_TOKEN_KIND, "");
    assert_null(yarn_amrm_new("", 8030, t, &err));
    assert_contains(err.msg, "scheduler address");
    assert_null(yarn_amrm_new("rm", 0, t, &err));
    assert_null(yarn_amrm_new("rm", 8030, NULL, &err));
    assert_contains(err.msg, "YARN_AM_RM_TOKEN");
    yarn_token_free(t);
    yarn_amrm *am = new_am();
    yarn_allocation a;
    assert_int_equal(yarn_amrm_allocate(am, 0.5f, &a, &err), -1);
    assert_contains(err.msg, "before registerApplicationMaster");
    assert_null(yarn_amrm_nm_token_dup(am, "h", 1));
    yarn_amrm_free(am);
}

static void test_nm_checks_before_calling(void **state) {
    (void)state;
    yarn_amrm *am = new_am();
    yarn_nm_pool *p = yarn_nm_pool_new(am, NULL);
    yarn_container c = {.id = "container_1_0001_01_000002", .node_host = tony_strdup("127.0.0.1"), .node_port = 1};
    yarn_launch_ctx ctx = {.command = "true"};
    tony_error err;
    assert_int_equal(yarn_nm_start(p, &c, &ctx, &err), -1);
    assert_contains(err.msg, "no container token");
    c.token = yarn_token_new("c", 1, "p", 1, "ContainerToken", "");
    const char *bad[] = {"relative/path", "://x", "hdfs://nn:99999/x", NULL};
    for (int i = 0; bad[i]; i++) {
        yarn_local_resource r = {"f", bad[i], 1, 1, YARN_LR_FILE, YARN_LR_APPLICATION};
        ctx.resources = &r;
        ctx.n_resources = 1;
        assert_int_equal(yarn_nm_start(p, &c, &ctx, &err), -1);
        assert_contains(err.msg, bad[i]);
    }
    /* a good context gets as far as the missing NMToken */
    yarn_local_resource r = {"f", "hdfs://user@nn:8020/a/b", 1, 1, YARN_LR_FILE, YARN_LR_APPLICATION};
    ctx.resources = &r;
    tony_env env = {0};
    tony_env_set(&env, "A", "1=2");
    ctx.env = &env;
    assert_int_equal(yarn_nm_start(p, &c, &ctx, &err), -1);
    assert_contains(err.msg, "no NMToken for NodeManager 127.0.0.1:1");
    yarn_container_status st;
    assert_int_equal(yarn_nm_status(p, &c, &st, &err), -1);
    assert_contains(err.msg, "no NMToken");
    tony_env_free(&env);
    yarn_container_free(&c);
    yarn_nm_pool_free(p);
    yarn_amrm_free(am);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ask_table),
        cmocka_unit_test(test_amrm_args),
        cmocka_unit_test(test_nm_checks_before_calling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
