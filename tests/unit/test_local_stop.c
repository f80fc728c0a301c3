/* The local backend's stop when the coordinator has no file descriptors
 * left (issue 11 #1): finding a container's processes reads /proc, which
 * then fails, so the stop must still reach the container's leader by its
 * pid (on main it never did: the container ran on). Real processes, a real
 * libevent loop; the descriptors are used up for real. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/local/local.h"
#include "common/env.h"
#include "common/fs.h"
#include "common/strv.h"
#include "conf/conf.h"

typedef struct world {
    struct event_base *base;
    tony_reaper *reaper;
    tony_conf *conf;
    tony_backend *b;
    char dir[64];
    int exits, status;
    int fds[256], nfds; /* held open to use descriptors up */
    struct rlimit nofile; /* the limit before */
} world;

static void on_exit_cb(void *ctx, const char *role, int index, int attempt, int exit_status, const char *diag,
                       const char *node) {
    (void)node;
    (void)role, (void)index, (void)attempt, (void)diag;
    world *w = ctx;
    w->exits++;
    w->status = exit_status;
}

static void on_deadline(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    event_base_loopbreak(arg);
}

static void on_poll(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    world *w = arg;
    if (w->exits) event_base_loopbreak(w->base);
}

/* Runs the loop until the container's exit was reported or ms passed. */
static void run_until_exit(world *w, int ms) {
    struct event *deadline = evtimer_new(w->base, on_deadline, w->base);
    struct event *poll = event_new(w->base, -1, EV_PERSIST, on_poll, w);
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000}, p = {0, 20000};
    evtimer_add(deadline, &tv);
    event_add(poll, &p);
    event_base_dispatch(w->base);
    event_free(deadline);
    event_free(poll);
}

/* Lowers the descriptor limit and opens /dev/null until none is left. */
static void use_up_fds(world *w) {
    getrlimit(RLIMIT_NOFILE, &w->nofile);
    struct rlimit low = {256, w->nofile.rlim_max};
    setrlimit(RLIMIT_NOFILE, &low);
    while (w->nfds < 256) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) break;
        w->fds[w->nfds++] = fd;
    }
}

static void release_fds(world *w) {
    if (!w->nfds) return;
    for (int i = 0; i < w->nfds; i++) close(w->fds[i]);
    w->nfds = 0;
    setrlimit(RLIMIT_NOFILE, &w->nofile);
}

static int setup(void **state) {
    world *w = calloc(1, sizeof *w);
    strcpy(w->dir, "/tmp/tony-local-stop-XXXXXX");
    if (!mkdtemp(w->dir)) return -1;
    w->base = event_base_new();
    w->reaper = tony_reaper_new(w->base);
    w->conf = tony_conf_new();
    tony_conf_load_defaults(w->conf);
    tony_conf_set(w->conf, "tony.local.vcores", "4", "test");
    tony_conf_set(w->conf, "tony.local.memory", "4g", "test");
    tony_conf_set(w->conf, "tony.local.gpus", "0", "test");
    tony_error err = {{0}};
    tony_backend_opts o = {.base = w->base, .reaper = w->reaper, .job_dir = w->dir, .conf = w->conf};
    w->b = tony_backend_local_new(&o, &err);
    if (!w->b) return -1;
    w->b->on_exit = on_exit_cb;
    w->b->cb_ctx = w;
    *state = w;
    return 0;
}

/* Also after a failure: nothing the test started outlives it. */
static int teardown(void **state) {
    world *w = *state;
    release_fds(w);
    w->b->ops->shutdown(w->b);
    w->b->ops->free(w->b);
    tony_reaper_free(w->reaper);
    event_base_free(w->base);
    tony_conf_free(w->conf);
    tony_error err;
    tony_rm_rf(w->dir, &err);
    free(w);
    return 0;
}

static void test_stop_reaches_the_container_without_descriptors(void **state) {
    world *w = *state;
    /* The container's leader ignores SIGTERM: only SIGKILL ends it, after
     * the backend's grace period. */
    char *argv[] = {"sh", "-c", "trap '' TERM; while :; do sleep 0.05; done", NULL};
    tony_env env = {0};
    tony_launch l = {.role = "worker", .index = 0, .attempt = 0, .memory_mb = 64, .vcores = 1, .env = &env,
                     .argv = argv};
    tony_error err = {{0}};
    int rc = w->b->ops->launch(w->b, &l, &err);
    tony_env_free(&env);
    if (rc) fail_msg("%s", err.msg);
    assert_int_equal(w->b->ops->active(w->b), 1);
    run_until_exit(w, 300); /* it runs */
    assert_int_equal(w->exits, 0);

    /* No descriptor left, as with a coordinator flooded by connections. */
    use_up_fds(w);
    assert_true(open("/dev/null", O_RDONLY) < 0 && errno == EMFILE);
    w->b->ops->stop(w->b, "worker", 0, 0);
    /* the grace period (3 s) passes: SIGKILL, and the coordinator asks again */
    run_until_exit(w, 3500);
    w->b->ops->stop(w->b, "worker", 0, 0);
    run_until_exit(w, 2000);
    release_fds(w);
    assert_int_equal(w->exits, 1);
    assert_int_equal(w->status, TONY_EXIT_KILLED_BY_APPMASTER);
    assert_int_equal(w->b->ops->active(w->b), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stop_reaches_the_container_without_descriptors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
