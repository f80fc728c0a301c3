/* Hang diagnosis: which task is idle past tony.task.progress-timeout, which
 * tasks' stacks are wanted, how long to wait for them (see hang.h). The
 * state machine (fsm.c) asks; it alone changes states. */
#include "am/hang.h"

#include <stdio.h>

/* What an executor may take to dump its task's stacks
 * (executor/stacks.h's budget), plus its answer's way back. */
#define HANG_DUMP_MS 15000

long long am_hang_stacks_wait_ms(const tony_plan *p) {
    /* one heartbeat to carry the ask (and one late one), then the dump */
    return 2 * p->heartbeat_interval_ms + HANG_DUMP_MS;
}

static bool running(const am_task *t) {
    return t->state == AM_TASK_RUNNING && !t->exited && !t->result_reported;
}

long long am_hang_idle_ms(const am_task *t, long long now_ms) {
    if (!running(t) || t->role->kind != TONY_ROLE_TRACKED) return -1;
    long long idle = t->idle_seen_ms ? (t->idle_ms > 0 ? t->idle_ms : 0) + (now_ms - t->idle_seen_ms)
                                     : now_ms - t->started_ms;
    return idle < 0 ? 0 : idle;
}

am_task *am_hang_find(am_job *j, long long limit_ms, long long now_ms, long long *idle_ms) {
    am_task *worst = NULL;
    long long most = -1;
    if (limit_ms <= 0) return NULL;
    for (size_t i = 0; i < j->ntasks; i++) {
        long long idle = am_hang_idle_ms(&j->tasks[i], now_ms);
        if (idle >= limit_ms && idle > most) {
            most = idle;
            worst = &j->tasks[i];
        }
    }
    if (worst) *idle_ms = most;
    return worst;
}

bool am_hang_wants_stacks(const am_task *t) { return running(t); }

void am_hang_count_stacks(const am_job *j, int *wanted, int *in) {
    *wanted = *in = 0;
    for (size_t i = 0; i < j->ntasks; i++) {
        const am_task *t = &j->tasks[i];
        /* a task that ended meanwhile but had sent them counts as in */
        if (t->stacks_in) (*wanted)++, (*in)++;
        else if (am_hang_wants_stacks(t)) (*wanted)++;
    }
}

void am_hang_format_ms(long long ms, char *buf, size_t n) {
    if (ms < 0) ms = 0;
    if (ms < 1000) snprintf(buf, n, "%lld ms", ms);
    else if (ms < 60000) snprintf(buf, n, "%.1f s", (double)ms / 1000.0);
    else if (ms < 3600000) snprintf(buf, n, "%lld min %lld s", ms / 60000, ms / 1000 % 60);
    else snprintf(buf, n, "%lld h %lld min", ms / 3600000, ms / 60000 % 60);
}
