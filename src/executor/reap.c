/* The executor's subreaper (reap.h): finds its descendants by parentage in
 * /proc (every orphan of the task is re-parented to it, whatever its
 * session or group), signals them and waits for them. */
#include "executor/reap.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/proc.h"
#include "common/strv.h"

/* Bounds the rounds of SIGKILL against a fork bomb racing it: each round
 * kills every descendant seen, so only forks faster than a /proc scan
 * keep it going. */
#define KILL_ROUNDS 200
#define WAIT_STEP_MS 20

int tony_reap_become_subreaper(void) { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 ? 0 : -1; }

/* The process table (tony_proc_snapshot), sorted by pid, to walk parentage. */
typedef struct table {
    tony_proc_info *p;
    size_t n;
} table;

static int by_pid(const void *a, const void *b) {
    pid_t x = ((const tony_proc_info *)a)->pid, y = ((const tony_proc_info *)b)->pid;
    return (x > y) - (x < y);
}

/* The index of pid in the sorted table, or -1. */
static long find(const table *t, pid_t pid) {
    tony_proc_info key = {.pid = pid};
    const tony_proc_info *hit = bsearch(&key, t->p, t->n, sizeof *t->p, by_pid);
    return hit ? (long)(hit - t->p) : -1;
}

/* 1 when process i descends from me; memo: 0 unknown, 1 yes, 2 no. The
 * walk up is bounded: a table read while processes change may hold a
 * cycle of reused pids. */
static bool descends(const table *t, size_t i, pid_t me, char *memo) {
    long cur = (long)i;
    char answer = 2;
    for (int depth = 0; depth < 4096 && cur >= 0; depth++) {
        if (memo[cur]) {
            answer = memo[cur];
            break;
        }
        if (t->p[cur].ppid == me) {
            answer = 1;
            break;
        }
        if (t->p[cur].ppid <= 1) break;
        cur = find(t, t->p[cur].ppid);
    }
    memo[i] = answer;
    return answer == 1;
}

/* Signals (sig > 0) the live descendants of me; returns how many there are. */
static int descendants(pid_t me, int sig) {
    table t;
    t.p = tony_proc_snapshot(&t.n);
    if (t.n) qsort(t.p, t.n, sizeof *t.p, by_pid);
    char *memo = tony_xcalloc(t.n ? t.n : 1, 1);
    int count = 0;
    for (size_t i = 0; i < t.n; i++) {
        if (t.p[i].pid == me || !descends(&t, i, me, memo)) continue;
        count++;
        if (sig > 0) kill(t.p[i].pid, sig);
    }
    free(memo);
    free(t.p);
    return count;
}

/* Reaps what has ended of the caller's children (zombies hold no memory
 * but a pid each). */
static void reap_zombies(void) {
    while (waitpid(-1, NULL, WNOHANG) > 0) {}
}

void tony_reap_orphans(const pid_t *keep, size_t nkeep) {
    for (int i = 0; i < 1024; i++) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        /* a look at which child ended, without reaping it: keep's status is its wait's */
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0) return;
        for (size_t k = 0; k < nkeep; k++)
            if (si.si_pid == keep[k]) return;
        waitpid(si.si_pid, NULL, WNOHANG);
    }
}

int tony_reap_descendants(long long grace_ms) {
    pid_t me = getpid();
    reap_zombies();
    int found = descendants(me, SIGTERM);
    if (found == 0) return 0;
    for (long long waited = 0; waited < grace_ms; waited += WAIT_STEP_MS) {
        reap_zombies();
        if (descendants(me, 0) == 0) return found;
        tony_sleep_ms(WAIT_STEP_MS);
    }
    for (int round = 0; round < KILL_ROUNDS && descendants(me, SIGKILL) > 0; round++) {
        tony_sleep_ms(WAIT_STEP_MS / 4);
        reap_zombies();
    }
    reap_zombies();
    return found;
}
