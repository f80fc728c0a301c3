/* One SIGCHLD handler per process, dispatching by pid. Children of the
 * loop's thread that nobody watches are reaped too, so none lingers as a
 * zombie; other threads' children are theirs to wait for. */
#include "common/reaper.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "common/strv.h"

typedef struct watch {
    pid_t pid;
    tony_reaper_cb cb;
    void *ctx;
} watch;

struct tony_reaper {
    struct event *sigchld;
    watch *watches;
    size_t len, cap;
};

static void on_sigchld(evutil_socket_t sig, short what, void *arg) {
    (void)sig, (void)what;
    tony_reaper *r = arg;
    int status;
    pid_t pid;
    /* Only the loop thread's own children: another thread that runs a
     * child and waits for it itself (tony_proc_run on a worker thread, as
     * the local backend's container removals do) would otherwise lose its
     * exit code here, and its pid could be reused before that wait. */
    while ((pid = waitpid(-1, &status, WNOHANG | __WNOTHREAD)) > 0) {
        for (size_t i = 0; i < r->len; i++) {
            if (r->watches[i].pid != pid) continue;
            watch w = r->watches[i];
            r->watches[i] = r->watches[--r->len];
            w.cb(w.ctx, pid, status);
            break;
        }
    }
}

tony_reaper *tony_reaper_new(struct event_base *base) {
    tony_reaper *r = tony_xcalloc(1, sizeof *r);
    r->sigchld = evsignal_new(base, SIGCHLD, on_sigchld, r);
    event_add(r->sigchld, NULL);
    return r;
}

void tony_reaper_watch(tony_reaper *r, pid_t pid, tony_reaper_cb cb, void *ctx) {
    if (r->len == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 16;
        r->watches = tony_xrealloc(r->watches, r->cap * sizeof *r->watches);
    }
    r->watches[r->len++] = (watch){pid, cb, ctx};
    /* The child may have exited before we watched it; its SIGCHLD already
     * fired, so look once now. */
    event_active(r->sigchld, EV_SIGNAL, 1);
}

void tony_reaper_free(tony_reaper *r) {
    if (!r) return;
    event_free(r->sigchld);
    free(r->watches);
    free(r);
}
