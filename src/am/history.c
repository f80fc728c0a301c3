/* The history directory's life: created at start, written as events come,
 * renamed and moved once when the job ends, and copied to a mirror (HDFS)
 * at those moments. A copy is a batch of steps over a private snapshot of
 * the files, which the mirror runs off the loop: one batch out at a time;
 * copies asked for meanwhile become one, of the files as they are when it
 * goes out (the newest state holds everything older ones would copy).
 * Failing to write history never fails a job: callers log the error and
 * carry on without it. */
#include "am/history.h"

#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fs.h"
#include "common/jobdir.h"
#include "common/log.h"
#include "common/strv.h"

/* The job's history dirs: its files are 0640 (the group may read them, as
 * TonY's portal's), nobody but the owner writes; set whatever the umask. */
#define AM_HISTORY_DIR_MODE 0750

/* One batch for the mirror and what it needs. */
typedef struct am_copy {
    tony_am_mirror_batch batch;
    char *snap;     /* the snapshot its PUTs read, removed when done */
    char *shown;    /* the job's dir on the mirror it writes, for the log */
    bool final;     /* moves the job into the finished tree */
    bool makes_dir; /* creates the job's intermediate dir and copies tony-final.xml */
    long long t0;   /* when it went out */
} am_copy;

struct am_history {
    char *app_id, *user, *dir, *file, *finished_root;
    char *fallback_finished;              /* the owner's own finished tree, when finished_root refuses us */
    long long start_ms;
    tony_jhist_writer *writer;
    bool finished;                        /* am_history_finish ran */
    struct event_base *base;              /* where the mirror's answers come */
    const tony_am_history_mirror *mirror; /* NULL: none */
    bool mirror_off;                      /* it failed once: not used again */
    bool closing;                         /* being freed: answers start nothing */
    char *remote_dir;                     /* the job's dir on the mirror */
    char *remote_finished;                /* the mirror's finished root */
    char *inprogress_name;                /* our file's name on the mirror while running */
    bool remote_used;                     /* a copy to the intermediate dir went out */
    bool remote_ready;                    /* remote_dir made and tony-final.xml copied */
    char *snap_root;                      /* the snapshots of batches out or waiting */
    unsigned snap_seq;
    am_copy *flying;                      /* the batch out */
    am_copy *final;                       /* the end's batch, waiting for the one out */
    bool sync_wanted;                     /* a copy was asked for while one was out */
};

char *am_history_user(void) {
    struct passwd *pw = getpwuid(getuid());
    const char *name = pw ? pw->pw_name : getenv("USER");
    char *u = tony_strdup(name && *name ? name : "unknown");
    for (char *p = u; *p; p++) *p = (char)tolower((unsigned char)*p);
    return u;
}

am_history *am_history_new(const tony_jhist_dirs *local, struct event_base *base,
                           const tony_am_history_mirror *mirror, const tony_jhist_dirs *remote, const char *conf_path,
                           const char *app_id, long long start_ms, tony_error *err) {
    am_history *h = tony_xcalloc(1, sizeof *h);
    h->app_id = tony_strdup(app_id);
    h->user = am_history_user();
    h->start_ms = start_ms;
    h->finished_root = tony_strdup(local->finished);
    h->dir = tony_path_join(local->intermediate, app_id);
    h->inprogress_name = tony_jhist_inprogress_name(app_id, start_ms, h->user);
    h->file = tony_path_join(h->dir, h->inprogress_name);
    if (mirror) {
        h->base = base;
        h->mirror = mirror;
        h->remote_dir = tony_path_join(remote->intermediate, app_id);
        h->remote_finished = tony_strdup(remote->finished);
        h->snap_root = tony_sprintf("%s/.%s.mirror", local->intermediate, app_id);
    }
    char *conf_copy = tony_path_join(h->dir, TONY_JOBDIR_CONF);
    /* The location may be shared with other users (file:///shared/history):
     * the job's own dir is made here, or refused when someone else's is at
     * its name; nothing is written into what another user made. */
    int rc = tony_mkdir_safe(local->finished, AM_HISTORY_DIR_MODE, err);
    if (rc == 0) rc = tony_mkdir_own(h->dir, AM_HISTORY_DIR_MODE, err);
    if (rc == 0) rc = tony_copy_file(conf_path, conf_copy, err);
    if (rc == 0) h->writer = tony_jhist_writer_new(h->file, err);
    free(conf_copy);
    if (!h->writer) {
        tony_err_wrap(err, "job history is not written (tony.history.location)");
        am_history_free(h);
        return NULL;
    }
    return h;
}

static void copy_free(am_copy *c) {
    if (!c) return;
    for (size_t i = 0; i < c->batch.n; i++) {
        tony_am_mirror_step *st = &c->batch.steps[i];
        free(st->path);
        free(st->local);
        free(st->from);
        free(st->keep);
    }
    free(c->batch.steps);
    if (c->snap) tony_rm_rf(c->snap, NULL);
    free(c->snap);
    free(c->shown);
    free(c);
}

static void mirror_failed(am_history *h, const tony_error *err) {
    if (h->mirror_off) return;
    tony_warn("history: not copied to HDFS any more: %s. It stays in the coordinator's container (%s), which YARN "
              "deletes after the job", err->msg, h->dir);
    h->mirror_off = true;
    h->sync_wanted = false;
    copy_free(h->final);
    h->final = NULL;
}

/* A copy the coordinator could not wait for. */
static void cut_short(am_history *h, const am_copy *c) {
    tony_error err;
    tony_err(&err, "the copy to hdfs://%s%s had not finished when the coordinator stopped waiting for it",
             h->mirror->authority, c->shown);
    mirror_failed(h, &err);
}

void am_history_free(am_history *h) {
    if (!h) return;
    h->closing = true;
    h->sync_wanted = false;
    /* The end's batch never goes out; the batch out stops after its current
     * call, and its answer comes now. */
    if (h->final) cut_short(h, h->final);
    copy_free(h->final);
    h->final = NULL;
    if (h->mirror) h->mirror->stop(h->mirror->ctx);
    copy_free(h->flying);
    if (h->snap_root) tony_rm_rf(h->snap_root, NULL);
    tony_jhist_writer_free(h->writer);
    free(h->app_id);
    free(h->user);
    free(h->dir);
    free(h->file);
    free(h->finished_root);
    free(h->fallback_finished);
    free(h->remote_dir);
    free(h->remote_finished);
    free(h->inprogress_name);
    free(h->snap_root);
    free(h);
}

void am_history_set_fallback(am_history *h, const char *finished) {
    free(h->fallback_finished);
    h->fallback_finished = finished ? tony_strdup(finished) : NULL;
}

const char *am_history_dir(const am_history *h) { return h->dir; }
const char *am_history_file(const am_history *h) { return h->file; }
tony_jhist_writer *am_history_writer(am_history *h) { return h->writer; }

void am_history_stop_writing(am_history *h) {
    tony_jhist_writer_free(h->writer);
    h->writer = NULL;
}

char *am_history_where(const am_history *h) {
    if (h->mirror && !h->mirror_off) return tony_sprintf("hdfs://%s%s", h->mirror->authority, h->remote_dir);
    return tony_strdup(h->dir);
}

bool am_history_settled(const am_history *h) { return !h->flying && !h->final && !h->sync_wanted; }

static tony_am_mirror_step *add_step(am_copy *c, tony_am_mirror_step_kind kind, const char *path) {
    tony_am_mirror_batch *b = &c->batch;
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 8;
        b->steps = tony_xrealloc(b->steps, b->cap * sizeof *b->steps);
    }
    tony_am_mirror_step *st = &b->steps[b->n++];
    *st = (tony_am_mirror_step){.kind = kind, .path = tony_strdup(path)};
    return st;
}

static am_copy *copy_new(am_history *h, const char *shown, bool final) {
    am_copy *c = tony_xcalloc(1, sizeof *c);
    c->shown = tony_strdup(shown);
    c->final = final;
    char seq[16];
    snprintf(seq, sizeof seq, "%u", h->snap_seq++);
    c->snap = tony_path_join(h->snap_root, seq);
    return c;
}

/* Snapshots the named files of the local job dir that exist (the .jhist
 * keeps growing while the copy runs) and adds a PUT of each into dir. */
static int add_files(am_history *h, am_copy *c, const char *dir, const char *const *names, size_t n,
                     tony_error *err) {
    if (tony_mkdir_p(c->snap, 0700, err)) return tony_err_wrap(err, "no snapshot of the history to copy");
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *src = tony_path_join(h->dir, names[i]), *snap = tony_path_join(c->snap, names[i]);
        if (tony_file_exists(src) && (rc = tony_copy_file(src, snap, err)) == 0) {
            char *path = tony_path_join(dir, names[i]);
            add_step(c, TONY_AM_MIRROR_PUT, path)->local = tony_strdup(snap);
            free(path);
        }
        free(src);
        free(snap);
    }
    return rc;
}

static void start(am_history *h, am_copy *c);
static void sync_now(am_history *h);

static void on_copied(void *arg, int rc, const tony_error *err) {
    am_history *h = arg;
    am_copy *c = h->flying;
    h->flying = NULL;
    if (rc == 0) {
        if (c->makes_dir) h->remote_ready = true;
        tony_info("history: %s to hdfs://%s%s in %lld ms", c->final ? "moved" : "copied", h->mirror->authority,
                  c->shown, tony_now_ms() - c->t0);
    } else if (h->closing) {
        cut_short(h, c);
    } else {
        mirror_failed(h, err);
    }
    copy_free(c);
    if (h->closing) return;
    if (h->final) {
        am_copy *f = h->final;
        h->final = NULL;
        start(h, f);
    } else if (h->sync_wanted) {
        h->sync_wanted = false;
        sync_now(h);
    }
}

static void start(am_history *h, am_copy *c) {
    tony_error err;
    c->t0 = tony_now_ms();
    if (h->mirror->run(h->mirror->ctx, h->base, &c->batch, on_copied, h, &err)) {
        copy_free(c);
        mirror_failed(h, &err);
        return;
    }
    h->flying = c;
}

static void sync_now(am_history *h) {
    tony_error err;
    am_copy *c = copy_new(h, h->remote_dir, false);
    const char *names[] = {TONY_JOBDIR_CONF, tony_basename(h->file), TONY_JHIST_EVENTS_LOG, TONY_JHIST_METRICS};
    size_t skip = h->remote_ready ? 1 : 0; /* tony-final.xml does not change */
    if (!h->remote_ready) {
        add_step(c, TONY_AM_MIRROR_MKDIRS, h->remote_dir);
        c->makes_dir = true;
    }
    if (add_files(h, c, h->remote_dir, names + skip, sizeof names / sizeof *names - skip, &err)) {
        copy_free(c);
        mirror_failed(h, &err);
        return;
    }
    h->remote_used = true;
    start(h, c);
}

void am_history_sync(am_history *h) {
    if (!h->mirror || h->mirror_off || h->finished) return;
    if (h->flying) h->sync_wanted = true; /* taken when the one out is done */
    else sync_now(h);
}

/* The mirror's side of finishing: our files into the finished dir, the
 * .jhist files earlier coordinators of the job left (a YARN AM retry) moved
 * beside them, the intermediate dir removed. */
static void finish_remote(am_history *h, long long end_ms) {
    char *target = tony_jhist_finished_dir(h->remote_finished, end_ms, h->app_id);
    am_copy *c = copy_new(h, target, true);
    const char *names[] = {tony_basename(h->file), TONY_JOBDIR_CONF, TONY_JHIST_EVENTS_LOG, TONY_JHIST_METRICS};
    tony_error err;
    add_step(c, TONY_AM_MIRROR_MKDIRS, target);
    if (add_files(h, c, target, names, sizeof names / sizeof *names, &err)) {
        copy_free(c);
        free(target);
        mirror_failed(h, &err);
        return;
    }
    if (h->remote_used) {
        tony_am_mirror_step *st = add_step(c, TONY_AM_MIRROR_MOVE_JHIST, target);
        st->from = tony_strdup(h->remote_dir);
        st->keep = tony_strdup(h->inprogress_name);
        add_step(c, TONY_AM_MIRROR_REMOVE, h->remote_dir);
    }
    free(h->remote_dir);
    h->remote_dir = target;
    /* It holds all a waiting copy would have. */
    h->sync_wanted = false;
    if (h->flying) h->final = c;
    else start(h, c);
}

/* rename(2), or copy and delete when the trees are on different file
 * systems (an NFS finished dir, say). */
static int move(const char *from, const char *to, tony_error *err) {
    if (rename(from, to) == 0) return 0;
    if (errno != EXDEV) return tony_err(err, "cannot move %s to %s: %s", from, to, strerror(errno));
    if (tony_copy_tree(from, to, err)) return -1;
    return tony_rm_rf(from, err);
}

/* Moves the job's dir to target in the finished tree: 0, 1 when the tree
 * refuses it (a dir on the way or at target that is not ours to trust),
 * -1 on another failure (err says which). */
static int move_to(am_history *h, const char *target, tony_error *err) {
    char *parent = tony_strdup(target);
    *strrchr(parent, '/') = '\0';
    int rc = tony_mkdir_safe(parent, AM_HISTORY_DIR_MODE, err) ? 1 : 0;
    free(parent);
    struct stat st;
    bool there = rc == 0 && lstat(target, &st) == 0;
    if (there && tony_fs_check_own_dir(target, "the finished job's history directory", err)) rc = 1;
    /* A job dir of ours already there (an earlier coordinator of the same
     * job, as TonY's AM retries write one file each): add ours beside it. */
    if (rc == 0 && there) {
        char *dst = tony_path_join(target, tony_basename(h->file));
        rc = move(h->file, dst, err);
        free(dst);
        /* The event log keeps the first coordinator's; the metrics are
         * this one's, as its .jhist is the one readers pick (the newest). */
        static const struct {
            const char *name;
            bool replace;
        } side[] = {{TONY_JHIST_EVENTS_LOG, false}, {TONY_JHIST_METRICS, true}};
        for (size_t i = 0; rc == 0 && i < sizeof side / sizeof *side; i++) {
            char *src = tony_path_join(h->dir, side[i].name), *dst = tony_path_join(target, side[i].name);
            tony_error ignored;
            if (tony_file_exists(src) && (side[i].replace || !tony_file_exists(dst))) move(src, dst, &ignored);
            free(src);
            free(dst);
        }
        if (rc == 0) tony_rm_rf(h->dir, NULL);
    } else if (rc == 0) {
        rc = move(h->dir, target, err);
    }
    return rc;
}

int am_history_finish(am_history *h, long long end_ms, const char *status, tony_error *err) {
    if (h->finished) return 0;
    h->finished = true;
    am_history_stop_writing(h);
    char *name = tony_jhist_final_name(h->app_id, h->start_ms, end_ms, h->user, status);
    char *final = tony_path_join(h->dir, name);
    free(name);
    if (rename(h->file, final)) {
        int rc = tony_err(err, "cannot rename %s to %s: %s", h->file, final, strerror(errno));
        free(final);
        return rc;
    }
    free(h->file);
    h->file = final;
    char *target = tony_jhist_finished_dir(h->finished_root, end_ms, h->app_id);
    int rc = move_to(h, target, err);
    if (rc == 1 && h->fallback_finished) {
        /* Refused (a day dir or job dir there another user made): the
         * owner's own tree has it instead of nobody. */
        char *other = tony_jhist_finished_dir(h->fallback_finished, end_ms, h->app_id);
        tony_warn("history: %s; the job's history goes to %s instead", err->msg, other);
        free(target);
        target = other;
        rc = move_to(h, target, err);
    }
    if (rc) rc = -1;
    if (rc == 0) {
        char *f = tony_path_join(target, tony_basename(h->file));
        free(h->file);
        h->file = f;
        free(h->dir);
        h->dir = target;
        if (h->mirror && !h->mirror_off) finish_remote(h, end_ms);
    } else {
        free(target);
    }
    return rc;
}
