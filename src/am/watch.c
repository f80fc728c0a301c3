/* Executors' watches: held polls answered when their task must stop (see
 * watch.h). One per task at most: a new poll replaces the old one. */
#include "am/watch.h"

#include <stdlib.h>

#include "am/reply.h"
#include "common/amapi.h"
#include "common/strv.h"

typedef struct am_watch {
    struct evhttp_request *req;
    am_task *task;
    long long deadline_ms;
} am_watch;

/* The watches' part of the handle (am_internal.h): written here only. */
struct am_watches {
    am_watch *v;
    size_t n;
    /* each task's watch: its place in v plus 1 (0: none), so that a renewed
     * watch finds the one it replaces without a walk over every watch
     * (issue 26: each of thousands of executors renews its own) */
    size_t *slot;
};

static size_t *slot_of(tony_am *am, const am_task *t) {
    am_watches *w = am->watches;
    if (!w->slot) w->slot = tony_xcalloc(am->fsm.job.ntasks + 1, sizeof *w->slot);
    return &w->slot[t - am->fsm.job.tasks];
}

static bool due(const tony_am *am, const am_task *t) {
    return am->fsm.job.attempt_over || am->fsm.state == AM_JOB_DONE || t->result_reported;
}

static void answer_stop(struct evhttp_request *req) {
    am_reply_json(req, 200, json_pack("{s:s}", AM_API_STATUS, AM_API_STOP));
}

void am_watch_add(tony_am *am, struct evhttp_request *req, am_task *t) {
    if (due(am, t)) {
        answer_stop(req);
        return;
    }
    if (!am->watches) am->watches = tony_xcalloc(1, sizeof *am->watches);
    am_watches *w = am->watches;
    size_t *slot = slot_of(am, t);
    if (*slot) {
        am_watch *old = &w->v[*slot - 1];
        am_reply_json(old->req, 200, json_pack("{s:s}", AM_API_STATUS, AM_API_WAIT));
        old->req = req;
        old->deadline_ms = am_now_ms() + AM_WATCH_POLL_MS;
        return;
    }
    w->v = tony_xrealloc(w->v, (w->n + 1) * sizeof *w->v);
    w->v[w->n++] = (am_watch){req, t, am_now_ms() + AM_WATCH_POLL_MS};
    *slot = w->n;
}

/* Takes watch i out (the last one takes its place). */
static void drop(tony_am *am, size_t i) {
    am_watches *w = am->watches;
    *slot_of(am, w->v[i].task) = 0;
    w->v[i] = w->v[--w->n];
    if (i < w->n) *slot_of(am, w->v[i].task) = i + 1;
}

/* Answers (with stop or wait) and drops the watches pick selects. */
static void answer_where(tony_am *am, bool (*pick)(const tony_am *, const am_watch *, long long), long long now_ms,
                         bool stop) {
    am_watches *w = am->watches;
    for (size_t i = 0; w && i < w->n;) {
        if (!pick(am, &w->v[i], now_ms)) {
            i++;
            continue;
        }
        if (stop) answer_stop(w->v[i].req);
        else am_reply_json(w->v[i].req, 200, json_pack("{s:s}", AM_API_STATUS, AM_API_WAIT));
        drop(am, i);
    }
}

static bool pick_due(const tony_am *am, const am_watch *w, long long now_ms) {
    (void)now_ms;
    return due(am, w->task);
}

static bool pick_expired(const tony_am *am, const am_watch *w, long long now_ms) {
    (void)am;
    return w->deadline_ms <= now_ms;
}

void am_watch_release(tony_am *am) { answer_where(am, pick_due, 0, true); }

void am_watch_release_task(tony_am *am, const am_task *t) {
    if (am->fsm.job.attempt_over || am->fsm.state == AM_JOB_DONE) {
        am_watch_release(am);
        return;
    }
    size_t i = am->watches ? *slot_of(am, t) : 0;
    if (!i || !due(am, t)) return;
    answer_stop(am->watches->v[i - 1].req);
    drop(am, i - 1);
}

void am_watch_expire(tony_am *am, long long now_ms) { answer_where(am, pick_expired, now_ms, false); }

void am_watch_free(tony_am *am) {
    if (am->watches) {
        free(am->watches->v);
        free(am->watches->slot);
    }
    free(am->watches);
    am->watches = NULL;
}
