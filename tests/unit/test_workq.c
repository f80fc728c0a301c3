/* Unit tests of common/workq: a job stuck on a server that never answers
 * delays neither the event loop nor jobs of other lanes; one lane's jobs run
 * in order and never overlap; done callbacks run on the loop thread; drain
 * and free account for every job exactly once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/workq.h"

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A TCP port that accepts connections (the kernel's backlog does) and never
 * says a word: what a hung server looks like to a client. */
static int silent_listener(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 16), 0);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    *port = ntohs(a.sin_port);
    return fd;
}

typedef struct ctx {
    struct event_base *base;
    pthread_t loop_thread;
    int64_t t0;
    int port;
    int wait_ms;
    /* results */
    int64_t done_at[8];
    bool ran[8];
    int dones;
    int expected;
    bool done_off_loop;
    int ticks, ticks_at_first_done;
    atomic_int in_lane, overlap;
    int order[64], norder;
    pthread_mutex_t mu;
} ctx;

typedef struct job {
    ctx *c;
    int id;
    int got; /* bytes the stuck job read: 0, the server never answered */
} job;

/* Connects to the silent server, sends a request, waits wait_ms for an
 * answer (on a worker thread: no cmocka asserts here, the test checks got). */
static void run_stuck(void *arg) {
    job *j = arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)j->c->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0 || write(fd, "ping", 4) != 4) {
        j->got = -2;
    } else {
        struct pollfd p = {fd, POLLIN, 0};
        j->got = poll(&p, 1, j->c->wait_ms);
    }
    if (fd >= 0) close(fd);
}

static void run_quick(void *arg) { (void)arg; }

static void on_done(void *arg, bool ran) {
    job *j = arg;
    ctx *c = j->c;
    if (!pthread_equal(pthread_self(), c->loop_thread)) c->done_off_loop = true;
    c->done_at[j->id] = now_ms() - c->t0;
    c->ran[j->id] = ran;
    if (c->dones++ == 0) c->ticks_at_first_done = c->ticks;
    if (c->dones == c->expected && c->base) event_base_loopbreak(c->base);
}

static void on_tick(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    ((ctx *)arg)->ticks++;
}

static void test_stuck_lane_blocks_nothing_else(void **state) {
    (void)state;
    ctx c = {.base = event_base_new(), .loop_thread = pthread_self(), .wait_ms = 1500, .expected = 3};
    int lfd = silent_listener(&c.port);
    tony_error err;
    tony_workq *q = tony_workq_new(c.base, 4, &err);
    assert_non_null(q);
    struct event *tick = event_new(c.base, -1, EV_PERSIST, on_tick, &c);
    struct timeval tv = {0, 20000};
    event_add(tick, &tv);
    job stuck = {&c, 0, -1}, quick = {&c, 1, 0}, behind = {&c, 2, 0};
    c.t0 = now_ms();
    tony_workq_submit(q, "nm stuck:1", run_stuck, on_done, &stuck);
    tony_workq_submit(q, "nm quick:2", run_quick, on_done, &quick);
    tony_workq_submit(q, "nm stuck:1", run_quick, on_done, &behind); /* waits for its lane */
    assert_int_equal(tony_workq_pending(q), 3);
    event_base_dispatch(c.base);

    assert_int_equal(stuck.got, 0); /* it really waited for an answer that never came */
    assert_true(c.ran[0] && c.ran[1] && c.ran[2]);
    assert_false(c.done_off_loop);
    /* the quick job came back at once, the stuck one after its wait, and the
     * one queued behind it on its lane only after it */
    if (c.done_at[1] > 500) fail_msg("quick job done after %lld ms", (long long)c.done_at[1]);
    assert_true(c.done_at[0] >= 1400);
    assert_true(c.done_at[2] >= c.done_at[0]);
    /* the loop kept running its 20 ms timer all along */
    if (c.ticks < 40) fail_msg("only %d ticks of the loop's 20 ms timer in %lld ms", c.ticks, (long long)c.done_at[0]);
    assert_int_equal(tony_workq_pending(q), 0);
    tony_workq_free(q);
    event_free(tick);
    event_base_free(c.base);
    close(lfd);
}

typedef struct lane_job {
    ctx *c;
    int n;
} lane_job;

static void run_in_lane(void *arg) {
    lane_job *j = arg;
    if (atomic_fetch_add(&j->c->in_lane, 1) > 0) atomic_store(&j->c->overlap, 1);
    usleep(2000);
    pthread_mutex_lock(&j->c->mu);
    j->c->order[j->c->norder++] = j->n;
    pthread_mutex_unlock(&j->c->mu);
    atomic_fetch_sub(&j->c->in_lane, 1);
}

static void run_sleep(void *arg) {
    (void)arg;
    usleep(200000);
}

static void count_done(void *arg, bool ran) {
    ctx *c = arg;
    assert_true(ran);
    c->dones++;
}

static void test_lanes_run_in_parallel(void **state) {
    (void)state;
    ctx c = {.base = event_base_new()};
    tony_error err;
    tony_workq *q = tony_workq_new(c.base, 4, &err);
    assert_non_null(q);
    /* three lanes, three 200 ms jobs: in parallel, well under 600 ms */
    int64_t t0 = now_ms();
    const char *lanes[] = {"nm a:1", "nm b:1", "nm c:1"};
    for (int i = 0; i < 3; i++) tony_workq_submit(q, lanes[i], run_sleep, count_done, &c);
    tony_workq_drain(q);
    int64_t took = now_ms() - t0;
    if (took > 500) fail_msg("3 lanes x 200 ms took %lld ms: not parallel", (long long)took);
    assert_int_equal(c.dones, 3);
    /* the cap holds: 6 lanes on 2 threads take 3 rounds */
    tony_workq *two = tony_workq_new(c.base, 2, &err);
    t0 = now_ms();
    const char *six[] = {"1", "2", "3", "4", "5", "6"};
    for (int i = 0; i < 6; i++) tony_workq_submit(two, six[i], run_sleep, count_done, &c);
    tony_workq_drain(two);
    took = now_ms() - t0;
    if (took < 590) fail_msg("6 jobs x 200 ms on 2 threads took only %lld ms", (long long)took);
    assert_int_equal(c.dones, 9);
    tony_workq_free(two);
    tony_workq_free(q);
    event_base_free(c.base);
}

/* Each job records its own index: the lane ran them in submission order. */
static void run_record(void *arg) { run_in_lane(arg); }
static void done_record(void *arg, bool ran) {
    lane_job *j = arg;
    assert_true(ran);
    j->c->dones++;
}

static void test_lane_keeps_submission_order(void **state) {
    (void)state;
    ctx c = {.base = event_base_new()};
    pthread_mutex_init(&c.mu, NULL);
    tony_error err;
    tony_workq *q = tony_workq_new(c.base, 6, &err);
    assert_non_null(q);
    lane_job jobs[30];
    for (int i = 0; i < 30; i++) {
        jobs[i] = (lane_job){&c, i};
        tony_workq_submit(q, "nm h:1", run_record, done_record, &jobs[i]);
    }
    tony_workq_drain(q);
    assert_int_equal(c.dones, 30);
    assert_int_equal(c.norder, 30);
    for (int i = 0; i < 30; i++) assert_int_equal(c.order[i], i);
    assert_int_equal(atomic_load(&c.overlap), 0);
    tony_workq_free(q);
    event_base_free(c.base);
    pthread_mutex_destroy(&c.mu);
}

/* A done callback that submits a follow-up, as the backend's do. */
typedef struct chain {
    tony_workq *q;
    int left, runs, dones;
} chain;

static void run_chain(void *arg) { ((chain *)arg)->runs++; }
static void done_chain(void *arg, bool ran) {
    chain *ch = arg;
    assert_true(ran);
    ch->dones++;
    if (--ch->left > 0) tony_workq_submit(ch->q, "chain", run_chain, done_chain, ch);
}

static void test_drain_follows_chains(void **state) {
    (void)state;
    struct event_base *base = event_base_new();
    tony_error err;
    chain ch = {.left = 5};
    ch.q = tony_workq_new(base, 2, &err);
    assert_non_null(ch.q);
    tony_workq_submit(ch.q, "chain", run_chain, done_chain, &ch);
    tony_workq_drain(ch.q);
    assert_int_equal(ch.runs, 5);
    assert_int_equal(ch.dones, 5);
    assert_int_equal(tony_workq_pending(ch.q), 0);
    tony_workq_free(ch.q);
    event_base_free(base);
}

static void test_free_cancels_what_has_not_started(void **state) {
    (void)state;
    ctx c = {.wait_ms = 300, .loop_thread = pthread_self(), .expected = 99};
    struct event_base *base = event_base_new();
    int lfd = silent_listener(&c.port);
    tony_error err;
    tony_workq *q = tony_workq_new(base, 2, &err);
    assert_non_null(q);
    job first = {&c, 0, -1}, second = {&c, 1, 0}, third = {&c, 2, 0};
    c.t0 = now_ms();
    tony_workq_submit(q, "x", run_stuck, on_done, &first);
    tony_workq_submit(q, "x", run_quick, on_done, &second);
    tony_workq_submit(q, "x", run_quick, on_done, &third);
    usleep(100000); /* the first is running, the others wait for its lane */
    tony_workq_free(q); /* waits for the first, cancels the others */
    assert_int_equal(c.dones, 3);
    assert_true(c.ran[0]);
    assert_false(c.ran[1]);
    assert_false(c.ran[2]);
    assert_true(c.done_at[0] >= 250);
    assert_false(c.done_off_loop);
    event_base_free(base);
    close(lfd);
}

/* tony_workq_wait: the end's bounded wait gets what finished in time, and
 * gives up on a stuck job after its limit, not the job's own. */
static void test_wait_gives_up_after_its_limit(void **state) {
    (void)state;
    ctx c = {.wait_ms = 1500, .loop_thread = pthread_self(), .expected = 99};
    struct event_base *base = event_base_new();
    int lfd = silent_listener(&c.port);
    tony_error err;
    tony_workq *q = tony_workq_new(base, 2, &err);
    assert_non_null(q);
    assert_false(tony_workq_wait(q, 10)); /* nothing pending */
    job stuck = {&c, 0, -1}, quick = {&c, 1, 0};
    c.t0 = now_ms();
    tony_workq_submit(q, "stuck", run_stuck, on_done, &stuck);
    tony_workq_submit(q, "quick", run_quick, on_done, &quick);
    while (c.dones == 0) assert_true(tony_workq_wait(q, 1000));
    assert_true(c.ran[1]);
    assert_int_equal(c.dones, 1);
    int64_t t = now_ms();
    assert_false(tony_workq_wait(q, 200)); /* the stuck job is still out */
    int64_t waited = now_ms() - t;
    if (waited < 180 || waited > 700) fail_msg("waited %lld ms for a 200 ms limit", (long long)waited);
    assert_int_equal(c.dones, 1);
    assert_int_equal(tony_workq_pending(q), 1);
    tony_workq_drain(q);
    assert_int_equal(c.dones, 2);
    assert_int_equal(stuck.got, 0);
    assert_false(c.done_off_loop);
    tony_workq_free(q);
    event_base_free(base);
    close(lfd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stuck_lane_blocks_nothing_else),
        cmocka_unit_test(test_lanes_run_in_parallel),
        cmocka_unit_test(test_lane_keeps_submission_order),
        cmocka_unit_test(test_drain_follows_chains),
        cmocka_unit_test(test_free_cancels_what_has_not_started),
        cmocka_unit_test(test_wait_gives_up_after_its_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
