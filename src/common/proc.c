/* Process helpers over fork/exec and /proc. The session is our unit of a
 * "container" on the local backend: every process a task starts stays in the
 * session its executor opened, even when the user's code makes its own
 * process groups. */
#include "common/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fs.h"
#include "common/strv.h"

static void child_fail(int fd, const char *what) {
    char msg[512];
    int n = snprintf(msg, sizeof msg, "%s: %s", what, strerror(errno));
    if (write(fd, msg, (size_t)n) < 0) { /* nothing left to report to */ }
    _exit(127);
}

static void redirect(int target, const char *path, int errfd, bool private_output) {
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, private_output ? 0600 : 0644);
    if (fd < 0) child_fail(errfd, path);
    if (dup2(fd, target) < 0) child_fail(errfd, "dup2");
    close(fd);
}

/* posix_spawn (a vfork underneath): the coordinator starts a container per
 * task, and fork() copies its page tables, which grow with the job, each
 * time: starting N containers was O(N^2) (issue 26; the kernel's
 * copy_page_range was the top symbol while 2,000 started). What the child
 * does is the fork path's, as file actions and attributes, in its order:
 * a session or a process group, no signal blocked and every one at its
 * default, the cwd, stdin from /dev/null, stdout/stderr appended, nothing
 * but 0-2 inherited. posix_spawn reports a failed step by its errno only:
 * the message names what the child was to use. */
static int spawn_posix(const tony_spawn *s, pid_t *pid_out, tony_error *err) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (s->new_session) flags |= POSIX_SPAWN_SETSID;
    else if (!s->keep_group) flags |= POSIX_SPAWN_SETPGROUP; /* pgroup 0: its own */
    posix_spawnattr_setflags(&at, flags);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    if (s->cwd) posix_spawn_file_actions_addchdir_np(&fa, s->cwd);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    mode_t mode = s->private_output ? 0600 : 0644;
    if (s->stdout_path) posix_spawn_file_actions_addopen(&fa, 1, s->stdout_path, O_WRONLY | O_CREAT | O_APPEND, mode);
    if (s->stderr_path) posix_spawn_file_actions_addopen(&fa, 2, s->stderr_path, O_WRONLY | O_CREAT | O_APPEND, mode);
    /* Only stdin/out/err cross into a container or a user process: a
     * caller's stray pipe must not be held open for a whole job. */
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    extern char **environ;
    int rc = posix_spawnp(pid_out, s->argv[0], &fa, &at, s->argv, s->envp ? s->envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc == 0) return 0;
    return tony_err(err, "cannot start %s (in %s, output to %s): %s", s->argv[0], s->cwd ? s->cwd : ".",
                    s->stdout_path ? s->stdout_path : "the caller's", strerror(rc));
}

int tony_proc_spawn(const tony_spawn *s, pid_t *pid_out, tony_error *err) {
    /* PR_SET_PDEATHSIG is no spawn attribute: only such a child is forked */
    if (!s->die_with_parent) return spawn_posix(s, pid_out, err);
    /* A close-on-exec pipe tells the parent whether exec worked, so a missing
     * program is an error here and not a mysterious exit code 127 later. */
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC)) return tony_err(err, "pipe: %s", strerror(errno));
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return tony_err(err, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(pfd[0]);
        /* the parent may have died before the request: then at once */
        int death = s->parent_death_signal ? s->parent_death_signal : SIGKILL;
        if (s->die_with_parent && (prctl(PR_SET_PDEATHSIG, death) || getppid() != parent)) _exit(137);
        if (s->new_session) {
            if (setsid() < 0) child_fail(pfd[1], "setsid");
        } else if (!s->keep_group && setpgid(0, 0) < 0) {
            child_fail(pfd[1], "setpgid");
        }
        /* Only stdin/out/err cross into a container or a user process: a
         * caller's stray pipe must not be held open for a whole job. */
        close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
        if (s->cwd && chdir(s->cwd)) child_fail(pfd[1], s->cwd);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) {
            dup2(devnull, 0);
            close(devnull);
        }
        if (s->stdout_path) redirect(1, s->stdout_path, pfd[1], s->private_output);
        if (s->stderr_path) redirect(2, s->stderr_path, pfd[1], s->private_output);
        if (s->envp) execvpe(s->argv[0], s->argv, s->envp);
        else execvp(s->argv[0], s->argv);
        child_fail(pfd[1], s->argv[0]);
    }
    close(pfd[1]);
    char msg[512];
    ssize_t n;
    do n = read(pfd[0], msg, sizeof msg - 1);
    while (n < 0 && errno == EINTR);
    close(pfd[0]);
    if (n > 0) {
        msg[n] = '\0';
        waitpid(pid, NULL, 0);
        return tony_err(err, "cannot start %s: %s", s->argv[0], msg);
    }
    *pid_out = pid;
    return 0;
}

int tony_proc_capture(char *const argv[], bool with_stderr, long long timeout_ms, tony_buf *out, tony_error *err) {
    int code = 0;
    if (tony_proc_run(argv, timeout_ms, out, with_stderr ? out : NULL, &code, err)) return -1;
    return code == 0 ? 0 : tony_err(err, "%s failed (exit code %d)", argv[0], code);
}

int tony_proc_exit_code(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 255;
}

/* /proc/<pid>/stat: "pid (comm) state ppid pgrp session ... utime(14) stime(15)
 * ... rss(24)"; comm may hold spaces and parentheses, so parse after the last ')'. */
static bool read_stat(pid_t pid, tony_proc_info *out) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p) return false;
    char state;
    int ppid, pgrp, session;
    unsigned long utime, stime;
    long rss;
    /* fields 3.. : state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
       cutime cstime priority nice num_threads itrealvalue starttime vsize rss */
    if (sscanf(p + 2,
               "%c %d %d %d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %*d %*d %*u %*u %ld",
               &state, &ppid, &pgrp, &session, &utime, &stime, &rss) != 7)
        return false;
    if (state == 'Z') return false;
    static long page_kb = 0, ticks = 0;
    if (!page_kb) page_kb = sysconf(_SC_PAGESIZE) / 1024;
    if (!ticks) ticks = sysconf(_SC_CLK_TCK);
    *out = (tony_proc_info){.pid = pid, .ppid = ppid, .pgrp = pgrp, .sid = session, .rss_kb = rss * page_kb,
                            .cpu_seconds = (double)(utime + stime) / (double)ticks};
    return true;
}

typedef struct snapshot {
    tony_proc_info *p;
    size_t n, cap;
} snapshot;

static void snapshot_add(void *ctx, const tony_proc_info *info) {
    snapshot *s = ctx;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->p = tony_xrealloc(s->p, s->cap * sizeof *s->p);
    }
    s->p[s->n++] = *info;
}

tony_proc_info *tony_proc_snapshot(size_t *n) {
    snapshot s = {0};
    tony_proc_scan(snapshot_add, &s);
    *n = s.n;
    return s.p ? s.p : tony_xcalloc(1, sizeof *s.p);
}

void tony_proc_scan(tony_proc_visit_fn fn, void *ctx) {
    DIR *d = opendir("/proc");
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
        tony_proc_info info;
        if (read_stat((pid_t)atoi(de->d_name), &info)) fn(ctx, &info);
    }
    closedir(d);
}

typedef struct {
    pid_t sid;
    int sig;
    int count;
} kill_target;

static void kill_visit(void *ctx, const tony_proc_info *p) {
    kill_target *v = ctx;
    if (p->sid == v->sid && p->pid != getpid() && kill(p->pid, v->sig) == 0) v->count++;
}

int tony_proc_kill_session(pid_t sid, int sig) {
    if (sid <= 1) return 0;
    kill_target v = {sid, sig, 0};
    tony_proc_scan(kill_visit, &v);
    return v.count;
}

/* The caller and its ancestors, by ppid links: the ones a group kill spares. */
#define LINEAGE_MAX 64
typedef struct group_target {
    pid_t pgrp;
    int sig;
    int count;
    pid_t lineage[LINEAGE_MAX];
    int nlineage;
} group_target;

static void group_visit(void *ctx, const tony_proc_info *p) {
    group_target *v = ctx;
    if (p->pgrp != v->pgrp) return;
    for (int i = 0; i < v->nlineage; i++)
        if (v->lineage[i] == p->pid) return;
    if (kill(p->pid, v->sig) == 0) v->count++;
}

int tony_proc_kill_group_but_me(pid_t pgrp, int sig) {
    if (pgrp <= 1) return 0;
    group_target v = {.pgrp = pgrp, .sig = sig};
    /* The shell that started the caller may lead the group and wait for it
     * (YARN's launch runs `bash -c "<command> 1>… 2>…"`, which forks):
     * killing it would end the container under the caller. */
    for (pid_t cur = getpid(); cur > 1 && v.nlineage < LINEAGE_MAX;) {
        v.lineage[v.nlineage++] = cur;
        tony_proc_info info;
        if (!read_stat(cur, &info)) break;
        cur = info.ppid;
    }
    tony_proc_scan(group_visit, &v);
    return v.count;
}

#define ENVIRON_MAX (1 << 20)

bool tony_proc_env_has(pid_t pid, const char *prefix) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    tony_buf env = {0};
    char chunk[8192];
    ssize_t r;
    while (env.len < ENVIRON_MAX && ((r = read(fd, chunk, sizeof chunk)) > 0 || (r < 0 && errno == EINTR)))
        if (r > 0) tony_buf_append(&env, chunk, (size_t)r);
    close(fd);
    size_t n = strlen(prefix);
    bool found = false;
    for (size_t at = 0; !found && at < env.len;) {
        const char *entry = env.data + at;
        size_t len = strnlen(entry, env.len - at);
        found = len >= n && memcmp(entry, prefix, n) == 0;
        at += len + 1;
    }
    tony_buf_free(&env);
    return found;
}

bool tony_proc_cwd_is(pid_t pid, const char *dir) {
    char link[64], cwd[PATH_MAX];
    snprintf(link, sizeof link, "/proc/%d/cwd", (int)pid);
    ssize_t n = readlink(link, cwd, sizeof cwd - 1);
    char *real = realpath(dir, NULL);
    bool same = n > 0 && real && (size_t)n == strlen(real) && memcmp(cwd, real, (size_t)n) == 0;
    free(real);
    return same;
}

bool tony_proc_alive(pid_t pid) {
    if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM)) return false;
    /* A zombie still takes signals but runs nothing: a coordinator killed
     * after its client detached waits there until its new parent reaps it. */
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return true;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return !(paren && paren[1] == ' ' && paren[2] == 'Z');
}

long long tony_proc_start_ticks(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Field 22; the fields after the command name's closing parenthesis
     * start at 3 (the name itself may hold spaces and parentheses). */
    char *p = strrchr(buf, ')');
    for (int field = 2; p && field < 22; field++) p = strchr(p + 1, ' ');
    long long ticks;
    return p && sscanf(p + 1, "%lld", &ticks) == 1 ? ticks : -1;
}

void tony_proc_boot_id(char out[40]) {
    out[0] = '\0';
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f) return;
    if (!fgets(out, 40, f)) out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

bool tony_proc_same(pid_t pid, long long start, const char *boot_id) {
    char boot[40];
    tony_proc_boot_id(boot);
    if (boot_id && *boot_id && *boot && strcmp(boot, boot_id) != 0) return false;
    return tony_proc_alive(pid) && tony_proc_start_ticks(pid) == start;
}

int tony_proc_signal_same(pid_t pid, long long start, const char *boot_id, int sig) {
    /* The pidfd pins the process: checked through /proc after it is open,
     * the signal cannot reach a process that took the pid meanwhile. */
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0 && errno != ENOSYS) return -1;
    int rc;
    if (!tony_proc_same(pid, start, boot_id)) {
        errno = ESRCH;
        rc = -1;
    } else {
        rc = fd >= 0 ? (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) : kill(pid, sig);
    }
    if (fd >= 0) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return rc;
}

#define RUN_OUTPUT_MAX (1 << 20)

int tony_proc_run(char *const *argv, long long timeout_ms, tony_buf *out, tony_buf *errout, int *exit_code,
                  tony_error *err) {
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC)) return tony_err(err, "pipe: %s", strerror(errno));
    if (pipe2(pe, O_CLOEXEC)) {
        close(po[0]);
        close(po[1]);
        return tony_err(err, "pipe: %s", strerror(errno));
    }
    char outp[32], errp[32];
    snprintf(outp, sizeof outp, "/dev/fd/%d", po[1]);
    snprintf(errp, sizeof errp, "/dev/fd/%d", pe[1]);
    /* The child opens its ends by name before exec closes the originals. */
    tony_spawn s = {.argv = argv, .stdout_path = outp, .stderr_path = errp, .keep_group = true};
    pid_t pid;
    int rc = tony_proc_spawn(&s, &pid, err);
    close(po[1]);
    close(pe[1]);
    if (rc) {
        close(po[0]);
        close(pe[0]);
        return -1;
    }
    struct pollfd fds[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
    tony_buf *bufs[2] = {out, errout};
    long long deadline = tony_now_ms() + timeout_ms;
    bool timed_out = false;
    int open_fds = 2;
    while (open_fds > 0) {
        long long left = deadline - tony_now_ms();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        int n = poll(fds, 2, (int)(left > 1000 ? 1000 : left));
        if (n < 0 && errno != EINTR) break;
        for (int i = 0; i < 2 && n > 0; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char chunk[4096];
            ssize_t r = read(fds[i].fd, chunk, sizeof chunk);
            if (r > 0 && bufs[i] && bufs[i]->len < RUN_OUTPUT_MAX) tony_buf_append(bufs[i], chunk, (size_t)r);
            if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0) close(fds[i].fd);
    if (timed_out) kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (timed_out) return tony_err(err, "%s did not answer within %lld s", argv[0], timeout_ms / 1000);
    *exit_code = tony_proc_exit_code(status);
    return 0;
}

const char *tony_proc_command_shell(void) {
    char *bash = tony_proc_which("bash");
    bool have = bash != NULL;
    free(bash);
    return have ? "bash" : TONY_PROC_POSIX_SHELL;
}

char *tony_proc_which(const char *name) {
    const char *path = getenv("PATH");
    char *copy = tony_strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin"), *save = NULL, *found = NULL;
    for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char *p = tony_path_join(d, name);
        if (access(p, X_OK) == 0) found = p;
        else free(p);
    }
    free(copy);
    return found;
}
