/* tony_proc_spawn (common/proc.c) on both of its paths, posix_spawn (every
 * caller but die_with_parent's, issue 26) and fork (die_with_parent): the
 * child is in its own session or process group, blocks and ignores no
 * signal, runs in its cwd with its env, reads /dev/null, appends to its
 * output files (0600 when private), inherits no descriptor beyond 0-2, and
 * a program that cannot start is an error naming it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fs.h"
#include "common/proc.h"

/* What the child says of itself, one fact a line. */
/* What the child says of itself, one fact a line; its signal state last,
 * read by the process it execs (the shell itself blocks every signal while
 * it waits for a child). */
static const char *SCRIPT = "echo cwd=$(pwd); ls /proc/$$/fd > fds; echo fds=$(cat fds | sort -n | tr '\\n' ' ');"
                            "read line; echo stdin=$line;"
                            "echo pgrp=$(cut -d' ' -f5 /proc/$$/stat) sid=$(cut -d' ' -f6 /proc/$$/stat) me=$$;"
                            "echo v=$TONY_T; echo to-stderr >&2; exec grep -E '^(SigIgn|SigBlk):' /proc/self/status";

static char *run(bool die_with_parent, bool new_session, const char *dir, pid_t *pid, char stray_no[16]) {
    char *out = tony_path_join(dir, "out");
    char *const argv[] = {"sh", "-c", (char *)SCRIPT, NULL};
    char *const envp[] = {"TONY_T=spawned", "PATH=/usr/bin:/bin", NULL};
    tony_spawn s = {.argv = argv, .envp = envp, .cwd = dir, .stdout_path = out, .stderr_path = out,
                    .new_session = new_session, .private_output = true, .die_with_parent = die_with_parent};
    /* what the child must not get: a descriptor without CLOEXEC, a blocked
     * and an ignored signal */
    int stray = open("/dev/null", O_RDONLY);
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR2);
    sigprocmask(SIG_BLOCK, &block, &old);
    signal(SIGUSR1, SIG_IGN);
    tony_error err;
    if (tony_proc_spawn(&s, pid, &err)) fail_msg("spawn: %s", err.msg);
    sigprocmask(SIG_SETMASK, &old, NULL);
    signal(SIGUSR1, SIG_DFL);
    close(stray);
    int status;
    assert_int_equal(waitpid(*pid, &status, 0), *pid);
    struct stat st;
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    char *text = NULL;
    size_t len;
    if (tony_read_file(out, &text, &len, &err)) fail_msg("%s", err.msg);
    free(out);
    if (tony_proc_exit_code(status) != 0) fail_msg("the child exited %d:\n%s", tony_proc_exit_code(status), text);
    snprintf(stray_no, 16, " %d ", stray);
    return text;
}

static void expect(const char *text, const char *line) {
    if (!strstr(text, line)) fail_msg("no '%s' in:\n%s", line, text);
}

static void check_both(bool die_with_parent) {
    for (int session = 0; session < 2; session++) {
        char tmpl[] = "/tmp/tony-spawn-XXXXXX";
        char *dir = mkdtemp(tmpl);
        assert_non_null(dir);
        pid_t pid;
        char stray[16];
        char *text = run(die_with_parent, session, dir, &pid, stray);
        char want[128];
        snprintf(want, sizeof want, "cwd=%s\n", dir);
        expect(text, want);
        /* (the shell keeps a descriptor of its own, 10 for dash) */
        expect(text, "fds=0 1 2 ");
        if (strstr(text, stray)) fail_msg("the caller's descriptor%sleaked into the child:\n%s", stray, text);
        /* no signal ignored but glibc's two internal ones (32, 33: its
         * posix_spawn leaves them SIG_IGN; a glibc program sets its own
         * handlers for them at start) */
        const char *ign = strstr(text, "SigIgn:\t");
        assert_non_null(ign);
        unsigned long long mask = strtoull(ign + 8, NULL, 16);
        assert_int_equal(mask & ~(3ULL << 31), 0);
        expect(text, "SigBlk:\t0000000000000000\n");
        expect(text, "stdin=\n");
        expect(text, "v=spawned\n");
        expect(text, "to-stderr\n");
        snprintf(want, sizeof want, "pgrp=%d sid=%d me=%d", pid, session ? pid : getsid(0), pid);
        expect(text, want);
        free(text);
        char *out = tony_path_join(dir, "out"), *fds = tony_path_join(dir, "fds");
        unlink(out);
        unlink(fds);
        free(out);
        free(fds);
        rmdir(dir);
    }
}

static void test_posix_spawn_path(void **state) {
    (void)state;
    check_both(false);
}

static void test_fork_path(void **state) {
    (void)state;
    check_both(true);
}

static void test_cannot_start_names_program(void **state) {
    (void)state;
    for (int die = 0; die < 2; die++) {
        char *const argv[] = {"tony-no-such-program", NULL};
        tony_spawn s = {.argv = argv, .die_with_parent = die};
        pid_t pid;
        tony_error err;
        assert_int_equal(tony_proc_spawn(&s, &pid, &err), -1);
        if (!strstr(err.msg, "tony-no-such-program") || !strstr(err.msg, "No such file"))
            fail_msg("the error names neither the program nor why: %s", err.msg);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_posix_spawn_path),
        cmocka_unit_test(test_fork_path),
        cmocka_unit_test(test_cannot_start_names_program),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
