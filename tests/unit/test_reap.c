/* The executor's subreaper (executor/reap.c): a grandchild that left with
 * setsid is found as a descendant and ended; one that ignores SIGTERM is
 * SIGKILLed after the grace; orphans that ended are reaped without
 * touching the process kept for its own wait. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "common/proc.h"
#include "common/strv.h"
#include "executor/reap.h"

/* Forks a child that starts a setsid'd grandchild (ignoring SIGTERM when
 * stubborn) and exits; returns the grandchild's pid. */
static pid_t start_daemon(bool stubborn) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        if (fork() == 0) {
            setsid();
            if (stubborn) signal(SIGTERM, SIG_IGN);
            pid_t me = getpid();
            if (write(fds[1], &me, sizeof me) != sizeof me) _exit(1);
            for (;;) pause();
        }
        _exit(0);
    }
    pid_t daemon = 0;
    assert_int_equal(read(fds[0], &daemon, sizeof daemon), (ssize_t)sizeof daemon);
    close(fds[0]);
    close(fds[1]);
    waitpid(child, NULL, 0);
    return daemon;
}

static void test_setsid_daemons_are_ended(void **state) {
    (void)state;
    pid_t polite = start_daemon(false), stubborn = start_daemon(true);
    /* re-parented to us (the subreaper), not to init */
    assert_true(tony_proc_alive(polite) && tony_proc_alive(stubborn));
    long long t0 = tony_now_ms();
    assert_int_equal(tony_reap_descendants(300), 2);
    assert_true(tony_now_ms() - t0 >= 300); /* the stubborn one had its grace */
    assert_false(tony_proc_alive(polite));
    assert_false(tony_proc_alive(stubborn));
    /* reaped, not zombies of ours */
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    assert_int_equal(tony_reap_descendants(300), 0);
}

static void test_orphans_reaped_keep_left(void **state) {
    (void)state;
    pid_t keep = fork(); /* the task's main process, running */
    if (keep == 0) {
        for (;;) pause();
    }
    pid_t orphan = start_daemon(false);
    kill(orphan, SIGKILL);
    for (int i = 0; i < 100 && tony_proc_alive(orphan); i++) tony_sleep_ms(10);
    tony_sleep_ms(50);
    tony_reap_orphans(&keep, 1);
    tony_reap_orphans(&keep, 1);
    assert_int_equal(waitpid(orphan, NULL, WNOHANG), -1); /* already reaped */
    /* keep, once it ended, is left for its own wait */
    kill(keep, SIGTERM);
    for (int i = 0; i < 100 && tony_proc_alive(keep); i++) tony_sleep_ms(10);
    tony_reap_orphans(&keep, 1);
    int st = 0;
    assert_int_equal(waitpid(keep, &st, 0), keep);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
}

int main(void) {
    if (tony_reap_become_subreaper()) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_setsid_daemons_are_ended),
        cmocka_unit_test(test_orphans_reaped_keep_left),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
