/* A failed task's stderr tail read through the backend (see lastfetch.h):
 * one read of the file's end when it is short, else a second one from
 * TONY_LASTWORDS_BYTES before its end, which the first read's size tells. */
#include "am/lastfetch.h"

#include <stdlib.h>
#include <string.h>

#include "am/logfetch.h"
#include "common/lastwords.h"
#include "common/log.h"
#include "common/strv.h"

struct am_lastfetch {
    tony_am *am;
    tony_log_read *read; /* the backend's, until its callback */
    char *role, *diagnostics, *url;
    int index, attempt, exit_status;
    long long exit_ms;
    am_lastfetch_done done;
    am_lastfetch *next;
};

/* A byte more than kept, to tell whether the window's first line is whole. */
#define WINDOW ((long long)TONY_LASTWORDS_BYTES + 1)

static void unlink_fetch(am_lastfetch *f) {
    for (am_lastfetch **p = &f->am->lastfetches; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
}

static void fetch_free(am_lastfetch *f) {
    free(f->role), free(f->diagnostics), free(f->url);
    free(f);
}

static void finish(am_lastfetch *f, const char *tail) {
    unlink_fetch(f);
    f->done(f->am, f->role, f->index, f->attempt, f->exit_status, f->diagnostics, f->exit_ms, tail);
    fetch_free(f);
}

static int ask(am_lastfetch *f, long long offset, tony_error *err);

static void on_read(void *ctx, int code, const char *msg, const tony_log_chunk *c) {
    am_lastfetch *f = ctx;
    f->read = NULL; /* over: the backend frees it */
    if (!c) {
        tony_warn("%s:%d: its stderr could not be read for the root cause (%d: %s)", f->role, f->index, code, msg);
        finish(f, NULL);
        return;
    }
    /* the file goes on past this window: read its end instead */
    long long end_from = c->size > WINDOW ? c->size - WINDOW : 0;
    if (c->offset < end_from) {
        tony_error err;
        if (ask(f, end_from, &err) == 0) return;
        tony_warn("%s:%d: %s", f->role, f->index, err.msg);
        finish(f, NULL);
        return;
    }
    char *tail = c->exists ? tony_lastwords_text(c->data, c->n, c->offset > 0, TONY_LASTWORDS_LINES,
                                                 TONY_LASTWORDS_BYTES)
                           : NULL;
    finish(f, tail);
    free(tail);
}

static int ask(am_lastfetch *f, long long offset, tony_error *err) {
    char *who = tony_sprintf("%s:%d", f->role, f->index);
    tony_log_request r = {.url = f->url, .who = who, .stream = "stderr", .offset = offset, .max = WINDOW};
    int rc = tony_backend_read_log(f->am->backend, &r, on_read, f, &f->read, err);
    free(who);
    return rc;
}

bool am_lastfetch_start(tony_am *am, const am_task *t, int exit_status, const char *diagnostics, long long exit_ms,
                        am_lastfetch_done done) {
    tony_error err;
    /* a lost node or failed disks: nothing there to ask, and the ask would
     * hold the exit for the read's whole timeout */
    if (exit_status == TONY_EXIT_ABORTED || exit_status == TONY_EXIT_DISKS_FAILED) return false;
    if (!t->log_url || am_backend_reads_log_url(am, t->log_url, &err)) return false;
    am_lastfetch *f = tony_xcalloc(1, sizeof *f);
    *f = (am_lastfetch){.am = am, .role = tony_strdup(t->role->name), .diagnostics = tony_strdup(diagnostics),
                        .url = tony_strdup(t->log_url), .index = t->index, .attempt = am->fsm.job.attempt,
                        .exit_status = exit_status, .exit_ms = exit_ms, .done = done, .next = am->lastfetches};
    if (ask(f, 0, &err)) {
        tony_warn("%s:%d: %s", f->role, f->index, err.msg);
        fetch_free(f);
        return false;
    }
    am->lastfetches = f;
    return true;
}

void am_lastfetch_free_all(tony_am *am) {
    while (am->lastfetches) {
        am_lastfetch *f = am->lastfetches;
        am->lastfetches = f->next;
        tony_backend_cancel_log(am->backend, f->read);
        fetch_free(f);
    }
}
