/* Unit tests of common/reaper: a watched child's exit reaches its callback;
 * a child that another thread of the process waits for itself (the local
 * backend's container removals run `podman rm` on a worker thread through
 * tony_proc_run) is left to that thread, so its exit code is not lost to
 * the loop's SIGCHLD handler, nor its pid reaped for someone else to wait on
 * once reused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/proc.h"
#include "common/reaper.h"
#include "common/strv.h"

static void on_exit_cb(void *ctx, pid_t pid, int wait_status) {
    (void)pid;
    *(int *)ctx = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
}

static void test_watched_child_is_delivered(void **state) {
    (void)state;
    struct event_base *base = event_base_new();
    tony_reaper *r = tony_reaper_new(base);
    pid_t pid = fork();
    if (pid == 0) _exit(7);
    int got = -2;
    tony_reaper_watch(r, pid, on_exit_cb, &got);
    for (int i = 0; i < 200 && got == -2; i++) {
        struct timeval tv = {0, 10000};
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
    assert_int_equal(got, 7);
    tony_reaper_free(r);
    event_base_free(base);
}

#define RUNS 30

typedef struct {
    atomic_int done;
    int wrong; /* runs whose exit code was not the child's */
} runner;

static void *run_children(void *arg) {
    runner *rn = arg;
    char *argv[] = {"/bin/sh", "-c", "exit 3", NULL};
    for (int i = 0; i < RUNS; i++) {
        tony_buf out = {0}, err_out = {0};
        int code = -1;
        tony_error err;
        if (tony_proc_run(argv, 10000, &out, &err_out, &code, &err) != 0 || code != 3) rn->wrong++;
        tony_buf_free(&out);
        tony_buf_free(&err_out);
    }
    atomic_store(&rn->done, 1);
    return NULL;
}

/* The loop's SIGCHLD handler runs while a worker thread runs children of
 * its own and waits for each: every exit code must reach the thread. */
static void test_other_threads_children_are_left_to_them(void **state) {
    (void)state;
    struct event_base *base = event_base_new();
    tony_reaper *r = tony_reaper_new(base);
    runner rn = {0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, run_children, &rn), 0);
    while (!atomic_load(&rn.done)) {
        struct timeval tv = {0, 2000};
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
    pthread_join(th, NULL);
    assert_int_equal(rn.wrong, 0);
    tony_reaper_free(r);
    event_base_free(base);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_watched_child_is_delivered),
        cmocka_unit_test(test_other_threads_children_are_left_to_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
