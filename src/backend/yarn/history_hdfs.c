/* tony_am_history_mirror over WebHDFS, off the coordinator's loop: each
 * batch is one job on a workq lane of the mirror's own (one thread, made on
 * the first batch, so a coordinator whose job writes no history starts
 * none). The WebHDFS handle is only used by that thread; the active
 * NameNode is found on its first call. */
#include "backend/yarn/history_hdfs.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/yarn/job_credentials.h"
#include "backend/yarn/webhdfs.h"
#include "common/fs.h"
#include "common/jhist.h"
#include "common/log.h"
#include "common/strv.h"
#include "common/workq.h"

typedef struct hdfs_ctx {
    tony_webhdfs *w; /* the worker's while a batch runs */
    bool connected;  /* worker only */
    char *authority;
    tony_workq *q;   /* loop thread only */
    struct yarn_job_credentials *creds; /* outlives the mirror; NULL in tests */
    char *token;     /* worker only: the delegation token w uses */
    atomic_bool stopping; /* the loop asks the batch out to stop between calls */
} hdfs_ctx;

/* One batch on its way: the worker fills rc/err, the loop reads them in
 * done (the workq hands the job over whole). */
typedef struct hdfs_job {
    hdfs_ctx *c;
    const tony_am_mirror_batch *batch;
    tony_am_mirror_done_fn done;
    void *arg;
    int rc;
    tony_error err;
} hdfs_job;

/* The .jhist files of dir `from` (the intermediate job dir, where earlier
 * coordinators of the job left theirs), all but `keep`, into `to`. */
static int move_jhist(hdfs_ctx *c, const tony_am_mirror_step *st, tony_error *err) {
    tony_webhdfs *w = c->w;
    tony_strv names = {0};
    int rc = tony_webhdfs_list(w, st->from, &names, err);
    for (size_t i = 0; rc == 0 && i < names.len; i++) {
        /* One rename per earlier file, each a NameNode call: a coordinator
         * that is exiting stops between them too. */
        if (atomic_load(&c->stopping)) {
            rc = tony_err(err, "stopped: the coordinator is exiting");
            break;
        }
        const char *n = names.items[i];
        if ((st->keep && strcmp(n, st->keep) == 0) ||
            !(tony_str_ends_with(n, TONY_JHIST_SUFFIX) || tony_str_ends_with(n, TONY_JHIST_INPROGRESS_SUFFIX)))
            continue;
        char *from = tony_path_join(st->from, n), *to = tony_path_join(st->path, n);
        rc = tony_webhdfs_rename(w, from, to, err);
        free(from);
        free(to);
    }
    tony_strv_free(&names);
    return rc;
}

static int run_step(hdfs_ctx *c, const tony_am_mirror_step *st, tony_error *err) {
    if (!c->connected) {
        if (tony_webhdfs_connect(c->w, err)) return -1;
        c->connected = true;
    }
    switch (st->kind) {
    case TONY_AM_MIRROR_MKDIRS: return tony_webhdfs_mkdirs(c->w, st->path, "770", err);
    case TONY_AM_MIRROR_PUT: return tony_webhdfs_put(c->w, st->local, st->path, "644", NULL, err);
    case TONY_AM_MIRROR_MOVE_JHIST: return move_jhist(c, st, err);
    case TONY_AM_MIRROR_REMOVE: return tony_webhdfs_delete(c->w, st->path, true, err);
    }
    return tony_err(err, "unknown history mirror step %d", (int)st->kind);
}

/* On a secure cluster the job's current HDFS delegation token, which WebHDFS
 * takes as delegation= (none on an insecure one: user.name= as ever). */
static void use_job_token(hdfs_ctx *c) {
    char *t = c->creds ? yarn_job_credentials_hdfs_token(c->creds) : NULL;
    if (t && !(c->token && strcmp(t, c->token) == 0)) {
        tony_webhdfs_use_delegation(c->w, t);
        tony_info("history: HDFS calls use the job's %sdelegation token", c->token ? "refreshed " : "");
        free(c->token);
        c->token = t;
        t = NULL;
    }
    free(t);
}

static void job_run(void *arg) {
    hdfs_job *j = arg;
    use_job_token(j->c);
    for (size_t i = 0; i < j->batch->n && j->rc == 0; i++) {
        if (atomic_load(&j->c->stopping)) j->rc = tony_err(&j->err, "stopped: the coordinator is exiting");
        else j->rc = run_step(j->c, &j->batch->steps[i], &j->err);
    }
}

static void job_done(void *arg, bool ran) {
    hdfs_job *j = arg;
    if (!ran) j->rc = tony_err(&j->err, "not started: the coordinator is exiting");
    j->done(j->arg, j->rc, &j->err);
    free(j);
}

static int h_run(void *ctx, struct event_base *base, const tony_am_mirror_batch *batch, tony_am_mirror_done_fn done,
                 void *arg, tony_error *err) {
    hdfs_ctx *c = ctx;
    /* One thread: batches never overlap, and the handle needs no lock. */
    if (!c->q && !(c->q = tony_workq_new(base, 1, err))) return tony_err_wrap(err, "no thread for the HDFS copies");
    hdfs_job *j = tony_xcalloc(1, sizeof *j);
    *j = (hdfs_job){.c = c, .batch = batch, .done = done, .arg = arg};
    tony_workq_submit(c->q, "hdfs", job_run, job_done, j);
    return 0;
}

static void h_stop(void *ctx) {
    hdfs_ctx *c = ctx;
    if (!c->q) return;
    atomic_store(&c->stopping, true);
    tony_workq_free(c->q); /* waits for the call out; done callbacks run here */
    c->q = NULL;
    atomic_store(&c->stopping, false);
}

tony_am_history_mirror *tony_yarn_history_mirror_new(yarn_job_credentials *creds) {
    const char *nns = getenv(TONY_YARN_WEBHDFS_ENV), *fs = getenv(TONY_YARN_DEFAULT_FS_ENV);
    const char *user = getenv(TONY_YARN_HDFS_USER_ENV);
    if (!nns || !*nns || !fs || !tony_str_starts_with(fs, "hdfs://") || !user || !*user) {
        tony_info("history: no HDFS for it (%s, %s or %s missing from the environment: submitted by an older tony?)",
                  TONY_YARN_WEBHDFS_ENV, TONY_YARN_DEFAULT_FS_ENV, TONY_YARN_HDFS_USER_ENV);
        return NULL;
    }
    hdfs_ctx *c = tony_xcalloc(1, sizeof *c);
    atomic_init(&c->stopping, false);
    c->w = tony_webhdfs_new_at(nns, TONY_YARN_WEBHDFS_ENV " in the AM's environment", fs,
                               TONY_YARN_DEFAULT_FS_ENV " in the AM's environment", user);
    tony_webhdfs_set_timeouts(c->w, TONY_YARN_HISTORY_CALL_MS, TONY_YARN_HISTORY_STALL_S, TONY_YARN_HISTORY_PUT_MAX_S);
    c->creds = creds;
    c->authority = tony_strdup(fs + strlen("hdfs://"));
    size_t n = strlen(c->authority);
    if (n && c->authority[n - 1] == '/') c->authority[n - 1] = '\0';
    tony_am_history_mirror *m = tony_xcalloc(1, sizeof *m);
    *m = (tony_am_history_mirror){.ctx = c, .authority = c->authority, .run = h_run, .stop = h_stop};
    return m;
}

void tony_yarn_history_mirror_free(tony_am_history_mirror *m) {
    if (!m) return;
    hdfs_ctx *c = m->ctx;
    /* The coordinator stopped it before its loop went (am.h). */
    tony_webhdfs_free(c->w);
    free(c->token);
    free(c->authority);
    free(c);
    free(m);
}
