/* Unit tests of the YARN AM protocol clients that need no server: the ask
 * table (totals per priority/size/label, only changed entries sent),
 * argument checks, launch-context validation before any NM is called, and
 * the async NodeManager calls against a node that hangs (a socket that
 * accepts and never answers) and one that is down. Their wire behaviour is
 * proven live by tests/e2e/test_yarn_wire.py and test_yarn_jobs.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

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

/* Bad-node exclusion's blacklist additions wait for the next allocate, in
 * order (the RM's answer to it is proven live by test_yarn_bad_node.py). */
static void test_blacklist_additions_queue(void **state) {
    (void)state;
    yarn_amrm *am = new_am();
    char *got = yarn_amrm_pending_blacklist(am);
    assert_string_equal(got, "");
    free(got);
    yarn_amrm_blacklist(am, "nm7.example.com:8041");
    yarn_amrm_blacklist(am, "nm7.example.com");
    got = yarn_amrm_pending_blacklist(am);
    assert_string_equal(got, "nm7.example.com:8041\nnm7.example.com\n");
    free(got);
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

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A loopback port; listening: connections are accepted by the kernel and
 * never answered (a hung NodeManager); not listening: refused (a dead one). */
static int loopback_port(bool listening, int *fd_out) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    if (listening) assert_int_equal(listen(fd, 8), 0);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    if (listening) {
        *fd_out = fd;
    } else {
        close(fd);
        *fd_out = -1;
    }
    return ntohs(a.sin_port);
}

typedef struct nm_seen {
    struct event_base *base;
    pthread_t loop;
    int64_t t0;
    int ticks, n;
    struct {
        char id[YARN_ID_MAX];
        int rc;
        char err[sizeof(tony_error)];
        int64_t at;
        int ticks;
        bool on_loop;
    } got[3];
} nm_seen;

static void nm_done(void *arg, const yarn_nm_reply *r) {
    nm_seen *s = arg;
    int k = s->n++;
    snprintf(s->got[k].id, sizeof s->got[k].id, "%s", r->container_id);
    s->got[k].rc = r->rc;
    snprintf(s->got[k].err, sizeof s->got[k].err, "%s", r->rc ? r->err.msg : "");
    s->got[k].at = now_ms() - s->t0;
    s->got[k].ticks = s->ticks;
    s->got[k].on_loop = pthread_equal(pthread_self(), s->loop);
    if (s->n == 3) event_base_loopbreak(s->base);
}

static void nm_tick(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    ((nm_seen *)arg)->ticks++;
}

static void test_nm_async_hung_node_delays_no_other(void **state) {
    (void)state;
    nm_seen s = {.base = event_base_new(), .loop = pthread_self()};
    int hung_fd, dead_fd;
    int hung = loopback_port(true, &hung_fd), dead = loopback_port(false, &dead_fd);
    yarn_amrm *am = new_am();
    yarn_token *nmt = yarn_token_new("n", 1, "p", 1, YARN_NM_TOKEN_KIND, "");
    yarn_amrm_put_nm_token(am, "127.0.0.1", hung, nmt);
    yarn_amrm_put_nm_token(am, "127.0.0.1", dead, nmt);
    yarn_token_free(nmt);
    tony_error err;
    tony_workq *q = tony_workq_new(s.base, 4, &err);
    assert_non_null(q);
    yarn_nm_pool *p = yarn_nm_pool_new(am, q);
    yarn_nm_pool_set_timeout(p, 1000);
    struct event *tick = event_new(s.base, -1, EV_PERSIST, nm_tick, &s);
    struct timeval tv = {0, 20000};
    event_add(tick, &tv);

    yarn_container c1 = {.id = "container_1_0001_01_000002", .node_host = tony_strdup("127.0.0.1"), .node_port = hung,
                         .token = yarn_token_new("c", 1, "p", 1, "ContainerToken", "")};
    yarn_container c2 = {.id = "container_1_0001_01_000003", .node_host = tony_strdup("127.0.0.1"), .node_port = dead};
    /* The launch context is freed right after the call: the job has a copy. */
    yarn_local_resource *r = calloc(1, sizeof *r);
    *r = (yarn_local_resource){tony_strdup("f"), tony_strdup("hdfs://nn:8020/a"), 1, 1, YARN_LR_FILE,
                               YARN_LR_APPLICATION};
    tony_env env = {0};
    tony_env_set(&env, "A", "1");
    char *cmd = tony_strdup("true");
    yarn_launch_ctx ctx = {.resources = r, .n_resources = 1, .env = &env, .command = cmd};
    s.t0 = now_ms();
    yarn_nm_start_async(p, &c1, &ctx, nm_done, &s);
    yarn_nm_stop_async(p, &c1, nm_done, &s); /* same node: after the start */
    yarn_nm_status_async(p, &c2, nm_done, &s);
    free((char *)r->name);
    free((char *)r->uri);
    free(r);
    free(cmd);
    tony_env_free(&env);
    event_base_dispatch(s.base);

    assert_int_equal(s.n, 3);
    for (int k = 0; k < 3; k++) assert_true(s.got[k].on_loop);
    /* first back: the dead node's refusal, long before the hung node's timeout */
    assert_string_equal(s.got[0].id, c2.id);
    assert_int_equal(s.got[0].rc, -1);
    assert_contains(s.got[0].err, "cannot connect");
    if (s.got[0].at > 500) fail_msg("the dead node's answer took %lld ms", (long long)s.got[0].at);
    /* then the hung node's start, after its 1 s timeout, then its stop */
    assert_string_equal(s.got[1].id, c1.id);
    assert_contains(s.got[1].err, "no answer within 1000 ms");
    assert_contains(s.got[1].err, "NodeManager 127.0.0.1");
    assert_true(s.got[1].at >= 950);
    assert_string_equal(s.got[2].id, c1.id);
    assert_true(s.got[2].at >= s.got[1].at + 950);
    /* and the loop ran its 20 ms timer all the while */
    if (s.got[1].ticks < 30) fail_msg("only %d loop ticks in %lld ms", s.got[1].ticks, (long long)s.got[1].at);

    tony_workq_free(q);
    yarn_nm_pool_free(p);
    yarn_container_free(&c1);
    yarn_container_free(&c2);
    yarn_amrm_free(am);
    event_free(tick);
    event_base_free(s.base);
    close(hung_fd);
}

static void count_reply(void *arg, const yarn_nm_reply *r) {
    int *n = arg;
    if (r->rc) (*n)++;
}

/* The end's stops: two hung nodes with two containers each (and an earlier
 * call already stuck on one of them) cost one bound in all, not a call
 * timeout per container; they are named, a dead node's refusal is an
 * error, not silence. */
static void test_nm_stop_all_bounded_across_hung_nodes(void **state) {
    (void)state;
    struct event_base *base = event_base_new();
    int fd1, fd2, dead_fd;
    int hung1 = loopback_port(true, &fd1), hung2 = loopback_port(true, &fd2), dead = loopback_port(false, &dead_fd);
    yarn_amrm *am = new_am();
    yarn_token *nmt = yarn_token_new("n", 1, "p", 1, YARN_NM_TOKEN_KIND, "");
    int ports[] = {hung1, hung1, hung2, hung2, dead};
    for (size_t i = 0; i < 3; i++) yarn_amrm_put_nm_token(am, "127.0.0.1", i == 0 ? hung1 : i == 1 ? hung2 : dead, nmt);
    yarn_token_free(nmt);
    tony_error err;
    tony_workq *q = tony_workq_new(base, 8, &err);
    assert_non_null(q);
    yarn_nm_pool *p = yarn_nm_pool_new(am, q);
    yarn_nm_pool_set_timeout(p, 5000); /* each call's own limit: far beyond the bound */
    yarn_container cs[5];
    const yarn_container *ptrs[5];
    for (int i = 0; i < 5; i++) {
        cs[i] = (yarn_container){.node_host = tony_strdup("127.0.0.1"), .node_port = ports[i]};
        snprintf(cs[i].id, sizeof cs[i].id, "container_1_0001_01_%06d", i + 2);
        ptrs[i] = &cs[i];
    }
    int earlier_failed = 0;
    yarn_nm_status_async(p, &cs[0], count_reply, &earlier_failed); /* already out on hung1 */
    tony_strv silent = {0}, failed = {0};
    int64_t t0 = now_ms();
    yarn_nm_stop_all(p, ptrs, 5, 1000, &silent, &failed);
    int64_t took = now_ms() - t0;
    if (took < 950 || took > 1600) fail_msg("the final stops took %lld ms for a 1000 ms bound", (long long)took);
    assert_int_equal(silent.len, 2);
    char n1[32], n2[32];
    snprintf(n1, sizeof n1, "127.0.0.1:%d", hung1);
    snprintf(n2, sizeof n2, "127.0.0.1:%d", hung2);
    assert_true(tony_strv_contains(&silent, n1));
    assert_true(tony_strv_contains(&silent, n2));
    assert_int_equal(failed.len, 1);
    assert_contains(failed.items[0], "cannot connect");
    /* the earlier call was cut short too, and nothing is left out */
    tony_workq_drain(q);
    assert_int_equal(earlier_failed, 1);
    assert_int_equal(tony_workq_pending(q), 0);
    tony_strv_free(&silent);
    tony_strv_free(&failed);
    tony_workq_free(q);
    yarn_nm_pool_free(p);
    for (int i = 0; i < 5; i++) yarn_container_free(&cs[i]);
    yarn_amrm_free(am);
    event_base_free(base);
    close(fd1);
    close(fd2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ask_table),
        cmocka_unit_test(test_amrm_args),
        cmocka_unit_test(test_blacklist_additions_queue),
        cmocka_unit_test(test_nm_checks_before_calling),
        cmocka_unit_test(test_nm_async_hung_node_delays_no_other),
        cmocka_unit_test(test_nm_stop_all_bounded_across_hung_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
