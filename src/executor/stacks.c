/* The stacks of a hung task's processes (see stacks.h): found through
 * /proc, each described from /proc, each Python one dumped by py-spy (or
 * gdb) with a deadline, all of it within one budget so that the executor's
 * heartbeats resume soon. */
#include "executor/stacks.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fs.h"
#include "common/proc.h"
#include "common/strv.h"

/* One helper run may take this long at most (within the budget). */
#define RUN_MAX_MS 5000

typedef struct members {
    pid_t *pids, *ppids, *pgrps;
    size_t len, cap;
} members;

static void collect(void *ctx, const tony_proc_info *p) {
    members *m = ctx;
    if (m->len == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 256;
        m->pids = tony_xrealloc(m->pids, m->cap * sizeof *m->pids);
        m->ppids = tony_xrealloc(m->ppids, m->cap * sizeof *m->ppids);
        m->pgrps = tony_xrealloc(m->pgrps, m->cap * sizeof *m->pgrps);
    }
    m->pids[m->len] = p->pid;
    m->ppids[m->len] = p->ppid;
    m->pgrps[m->len++] = p->pgrp;
}

/* Whether pid is one of the task's processes the executor started (each
 * leads its own group unless the container's group is shared). */
static bool started(pid_t pid, const pid_t *user_pids, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (user_pids[k] == pid) return true;
    return false;
}

/* The task's processes, in pid order (the scan's): its groups, then
 * descendants that left them (a grown list, to a fixed point). */
static bool *select_task(const members *m, const pid_t *user_pids, size_t n, bool share_group) {
    bool *in = tony_xcalloc(m->len ? m->len : 1, sizeof *in);
    pid_t me = getpid(), mine = getpgrp();
    for (size_t i = 0; i < m->len; i++)
        in[i] = m->pids[i] != me && (share_group ? m->pgrps[i] == mine : started(m->pgrps[i], user_pids, n));
    for (size_t i = 0; i < m->len; i++) in[i] = in[i] || started(m->pids[i], user_pids, n);
    for (bool grew = true; grew;) {
        grew = false;
        for (size_t i = 0; i < m->len; i++)
            for (size_t j = 0; j < m->len && !in[i]; j++)
                if (in[j] && m->ppids[i] == m->pids[j] && m->pids[i] != me) in[i] = grew = true;
    }
    return in;
}

/* /proc/<pid>/<name> as one line (NULs as spaces, at most n-1 bytes). */
static void proc_text(pid_t pid, const char *name, char *out, size_t n) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    size_t len = fread(out, 1, n - 1, f);
    fclose(f);
    out[len] = '\0';
    for (size_t i = 0; i < len; i++)
        if (out[i] == '\0' || out[i] == '\n') out[i] = ' ';
    while (len && out[len - 1] == ' ') out[--len] = '\0';
}

/* The state letter of /proc/<pid>/stat (after the command's closing paren). */
static char proc_state(pid_t pid) {
    char stat[512];
    proc_text(pid, "stat", stat, sizeof stat);
    const char *p = strrchr(stat, ')');
    return p && p[1] == ' ' && p[2] ? p[2] : '?';
}

static const char *state_words(char s) {
    switch (s) {
    case 'R': return "running";
    case 'S': return "sleeping";
    case 'D': return "in uninterruptible I/O";
    case 'T': return "stopped (SIGSTOP or similar)";
    case 't': return "stopped by a tracer";
    case 'Z': return "a zombie";
    default: return "in state ?";
    }
}

static char *exe_of(pid_t pid) {
    char link[64], buf[PATH_MAX];
    snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(link, buf, sizeof buf - 1);
    if (n <= 0) return NULL;
    buf[n] = '\0';
    return tony_strdup(buf);
}

static bool is_python(const char *exe) {
    return exe && tony_str_starts_with(tony_basename(exe), "python");
}

static char *executable_in(const char *dir, const char *name) {
    char *p = tony_path_join(dir, name);
    if (access(p, X_OK) == 0) return p;
    free(p);
    return NULL;
}

/* The py-spy to use for pid: a path as given, else on PATH, else beside the
 * python the process was started as (a venv's bin/), else beside its
 * executable. NULL when none is found. */
static char *find_py_spy(const char *spy, pid_t pid, const char *exe) {
    if (strchr(spy, '/')) return access(spy, X_OK) == 0 ? tony_strdup(spy) : NULL;
    char *found = tony_proc_which(spy);
    if (found) return found;
    char argv0[PATH_MAX], cwd[PATH_MAX], link[64];
    proc_text(pid, "cmdline", argv0, sizeof argv0);
    argv0[strcspn(argv0, " ")] = '\0';
    if (strchr(argv0, '/')) {
        snprintf(link, sizeof link, "/proc/%d/cwd", (int)pid);
        ssize_t n = readlink(link, cwd, sizeof cwd - 1);
        cwd[n > 0 ? n : 0] = '\0';
        char *full = argv0[0] == '/' ? tony_strdup(argv0) : tony_path_join(cwd, argv0);
        char *dir = tony_strdup(full);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = '\0';
        found = executable_in(dir, spy);
        free(dir);
        free(full);
        if (found) return found;
    }
    char *dir = tony_strdup(exe);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    found = executable_in(dir, spy);
    free(dir);
    return found;
}

/* Runs argv within what is left of the budget; appends its output, and on
 * failure why. true when it worked. */
static bool run(char *const argv[], long long deadline, tony_buf *out) {
    long long left = deadline - tony_now_ms();
    if (left <= 0) {
        tony_buf_puts(out, "(not run: the dump's time budget is spent)\n");
        return false;
    }
    tony_buf got = {0};
    tony_buf_puts(&got, "");
    tony_error err;
    int rc = tony_proc_capture(argv, true, left < RUN_MAX_MS ? left : RUN_MAX_MS, &got, &err);
    if (rc == 0) tony_buf_append(out, got.data, got.len);
    tony_buf_free(&got);
    return rc == 0;
}

/* A Python process's frames: py-spy with native frames, which pauses it;
 * a stopped process cannot be paused, and where pausing fails the frames
 * are read as they are (--nonblocking). gdb's native frames without py-spy. */
static void dump_python(pid_t pid, char state, const char *spy_conf, const char *exe, long long deadline,
                        tony_buf *out) {
    char pidtext[16];
    snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
    char *spy = find_py_spy(spy_conf, pid, exe);
    if (spy) {
        char *native[] = {spy, "dump", "--native", "--pid", pidtext, NULL};
        char *plain[] = {spy, "dump", "--pid", pidtext, NULL};
        char *nonblocking[] = {spy, "dump", "--nonblocking", "--pid", pidtext, NULL};
        bool stopped = state == 'T' || state == 't';
        if (stopped) tony_buf_puts(out, "(stopped: its Python frames are read without pausing it)\n");
        if (stopped ? !run(nonblocking, deadline, out)
                    : !run(native, deadline, out) && !run(plain, deadline, out) && !run(nonblocking, deadline, out))
            tony_buf_printf(out, "(%s could not dump pid %d: see kernel.yama.ptrace_scope in docs/failures.md)\n", spy,
                            (int)pid);
        free(spy);
        return;
    }
    char *gdb = tony_proc_which("gdb");
    if (gdb) {
        tony_buf_printf(out, "(no %s found: native frames from gdb; pip install py-spy for Python frames)\n",
                        spy_conf);
        char *argv[] = {gdb, "-p", pidtext, "-batch", "-nx", "-ex", "thread apply all bt", NULL};
        if (!run(argv, deadline, out)) tony_buf_printf(out, "(gdb could not dump pid %d)\n", (int)pid);
        free(gdb);
        return;
    }
    tony_buf_printf(out, "(no %s on the executor's PATH or beside the task's python, and no gdb: pip install "
                         "py-spy, or set tony.task.py-spy-path)\n", spy_conf);
}

char *tony_stacks_dump(const pid_t *user_pids, size_t npids, bool share_group, const char *py_spy,
                       long long budget_ms) {
    long long deadline = tony_now_ms() + budget_ms;
    const char *spy = py_spy && *py_spy ? py_spy : "py-spy";
    members m = {0};
    tony_proc_scan(collect, &m);
    bool *in = select_task(&m, user_pids, npids, share_group);
    tony_buf out = {0};
    tony_buf_puts(&out, "");
    int n = 0;
    for (size_t i = 0; i < m.len; i++) {
        if (!in[i]) continue;
        pid_t pid = m.pids[i];
        char cmd[512], wchan[64];
        proc_text(pid, "cmdline", cmd, sizeof cmd);
        proc_text(pid, "wchan", wchan, sizeof wchan);
        char state = proc_state(pid);
        char *exe = exe_of(pid);
        tony_buf_printf(&out, "%s=== pid %d: %s\n    %s%s%s\n", n++ ? "\n" : "", (int)pid, cmd, state_words(state),
                        *wchan && strcmp(wchan, "0") != 0 ? ", waiting in " : "",
                        strcmp(wchan, "0") != 0 ? wchan : "");
        if (is_python(exe)) dump_python(pid, state, spy, exe, deadline, &out);
        free(exe);
        if (out.len > TONY_STACKS_MAX_BYTES) {
            tony_buf_puts(&out, "\n(cut short: more than the most stacks one task sends)\n");
            break;
        }
    }
    if (n == 0)
        tony_buf_printf(&out, "no process of the task runs (user process %d)\n", npids ? (int)user_pids[0] : -1);
    free(in);
    free(m.pids), free(m.ppids), free(m.pgrps);
    /* JSON carries text: whatever a helper printed that is not UTF-8 is replaced */
    size_t used;
    char *text = tony_utf8_sanitize(out.data, out.len, &used);
    tony_buf_free(&out);
    return text;
}
