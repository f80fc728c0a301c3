/* The history directory's life: created at start, written as events come,
 * renamed and moved once when the job ends, and copied to a mirror (HDFS)
 * at those moments. Failing to write history never fails a job: callers log
 * the error and carry on without it. */
#include "am/history.h"

#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "am/am_internal.h"
#include "common/fs.h"
#include "common/jobdir.h"
#include "common/log.h"
#include "common/strv.h"

struct am_history {
    char *app_id, *user, *dir, *file, *finished_root;
    long long start_ms;
    tony_jhist_writer *writer;
    const tony_am_history_mirror *mirror; /* NULL once it failed */
    char *remote_dir;                     /* the job's dir on the mirror */
    char *remote_finished;                /* the mirror's finished root */
    char *inprogress_name;                /* our file's name on the mirror while running */
    bool remote_ready;                    /* remote_dir made and tony-final.xml copied */
};

char *am_history_user(void) {
    struct passwd *pw = getpwuid(getuid());
    const char *name = pw ? pw->pw_name : getenv("USER");
    char *u = tony_strdup(name && *name ? name : "unknown");
    for (char *p = u; *p; p++) *p = (char)tolower((unsigned char)*p);
    return u;
}

am_history *am_history_new(const tony_jhist_dirs *local, const tony_am_history_mirror *mirror,
                           const tony_jhist_dirs *remote, const char *conf_path, const char *app_id, long long start_ms,
                           tony_error *err) {
    am_history *h = tony_xcalloc(1, sizeof *h);
    h->app_id = tony_strdup(app_id);
    h->user = am_history_user();
    h->start_ms = start_ms;
    h->finished_root = tony_strdup(local->finished);
    h->dir = tony_path_join(local->intermediate, app_id);
    h->inprogress_name = tony_jhist_inprogress_name(app_id, start_ms, h->user);
    h->file = tony_path_join(h->dir, h->inprogress_name);
    if (mirror) {
        h->mirror = mirror;
        h->remote_dir = tony_path_join(remote->intermediate, app_id);
        h->remote_finished = tony_strdup(remote->finished);
    }
    char *conf_copy = tony_path_join(h->dir, TONY_JOBDIR_CONF);
    int rc = tony_mkdir_p(local->finished, 0770, err);
    if (rc == 0) rc = tony_mkdir_p(h->dir, 0770, err);
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

void am_history_free(am_history *h) {
    if (!h) return;
    tony_jhist_writer_free(h->writer);
    free(h->app_id);
    free(h->user);
    free(h->dir);
    free(h->file);
    free(h->finished_root);
    free(h->remote_dir);
    free(h->remote_finished);
    free(h->inprogress_name);
    free(h);
}

const char *am_history_dir(const am_history *h) { return h->dir; }
const char *am_history_file(const am_history *h) { return h->file; }
tony_jhist_writer *am_history_writer(am_history *h) { return h->writer; }

char *am_history_where(const am_history *h) {
    if (h->mirror) return tony_sprintf("hdfs://%s%s", h->mirror->authority, h->remote_dir);
    return tony_strdup(h->dir);
}

static void mirror_failed(am_history *h, const tony_error *err) {
    tony_warn("history: not copied to HDFS any more: %s. It stays in the coordinator's container (%s), which YARN "
              "deletes after the job", err->msg, h->dir);
    h->mirror = NULL;
}

/* Copies the named files of the local job dir that exist into remote_dir. */
static int put_files(am_history *h, const char *remote_dir, const char *const *names, size_t n, tony_error *err) {
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *local = tony_path_join(h->dir, names[i]), *remote = tony_path_join(remote_dir, names[i]);
        if (tony_file_exists(local)) rc = h->mirror->put(h->mirror->ctx, local, remote, err);
        free(local);
        free(remote);
    }
    return rc;
}

void am_history_sync(am_history *h) {
    if (!h->mirror || !h->writer) return;
    long long t0 = am_now_ms();
    tony_error err;
    const char *names[] = {TONY_JOBDIR_CONF, tony_basename(h->file), TONY_JHIST_EVENTS_LOG, TONY_JHIST_METRICS};
    size_t skip = h->remote_ready ? 1 : 0; /* tony-final.xml does not change */
    int rc = h->remote_ready ? 0 : h->mirror->mkdirs(h->mirror->ctx, h->remote_dir, &err);
    if (rc == 0) rc = put_files(h, h->remote_dir, names + skip, sizeof names / sizeof *names - skip, &err);
    if (rc) {
        mirror_failed(h, &err);
        return;
    }
    h->remote_ready = true;
    tony_info("history: copied to hdfs://%s%s in %lld ms", h->mirror->authority, h->remote_dir, am_now_ms() - t0);
}

/* The mirror's side of finishing: our files into the finished dir, the
 * .jhist files earlier coordinators of the job left (a YARN AM retry) moved
 * beside them, the intermediate dir removed. */
static void finish_remote(am_history *h, long long end_ms) {
    long long t0 = am_now_ms();
    const tony_am_history_mirror *m = h->mirror;
    char *target = tony_jhist_finished_dir(h->remote_finished, end_ms, h->app_id);
    const char *names[] = {tony_basename(h->file), TONY_JOBDIR_CONF, TONY_JHIST_EVENTS_LOG, TONY_JHIST_METRICS};
    tony_error err;
    tony_strv left = {0};
    int rc = m->mkdirs(m->ctx, target, &err);
    if (rc == 0) rc = put_files(h, target, names, sizeof names / sizeof *names, &err);
    if (rc == 0 && h->remote_ready) rc = m->list(m->ctx, h->remote_dir, &left, &err);
    for (size_t i = 0; rc == 0 && i < left.len; i++) {
        const char *n = left.items[i];
        if (strcmp(n, h->inprogress_name) == 0 ||
            !(tony_str_ends_with(n, TONY_JHIST_SUFFIX) || tony_str_ends_with(n, TONY_JHIST_INPROGRESS_SUFFIX)))
            continue;
        char *from = tony_path_join(h->remote_dir, n), *to = tony_path_join(target, n);
        rc = m->rename(m->ctx, from, to, &err);
        free(from);
        free(to);
    }
    if (rc == 0 && h->remote_ready) rc = m->remove(m->ctx, h->remote_dir, &err);
    tony_strv_free(&left);
    if (rc) {
        mirror_failed(h, &err);
        free(target);
        return;
    }
    free(h->remote_dir);
    h->remote_dir = target;
    tony_info("history: moved to hdfs://%s%s in %lld ms", m->authority, target, am_now_ms() - t0);
}

/* rename(2), or copy and delete when the trees are on different file
 * systems (an NFS finished dir, say). */
static int move(const char *from, const char *to, tony_error *err) {
    if (rename(from, to) == 0) return 0;
    if (errno != EXDEV) return tony_err(err, "cannot move %s to %s: %s", from, to, strerror(errno));
    if (tony_copy_tree(from, to, err)) return -1;
    return tony_rm_rf(from, err);
}

int am_history_finish(am_history *h, long long end_ms, const char *status, tony_error *err) {
    if (!h->writer) return 0;
    tony_jhist_writer_free(h->writer);
    h->writer = NULL;
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
    char *parent = tony_strdup(target);
    *strrchr(parent, '/') = '\0';
    int rc = tony_mkdir_p(parent, 0770, err);
    /* A job dir already there (an earlier coordinator of the same job, as
     * TonY's AM retries write one file each): add ours beside it. */
    if (rc == 0 && tony_is_dir(target)) {
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
    free(parent);
    if (rc == 0) {
        char *f = tony_path_join(target, tony_basename(h->file));
        free(h->file);
        h->file = f;
        free(h->dir);
        h->dir = target;
        if (h->mirror) finish_remote(h, end_ms);
    } else {
        free(target);
    }
    return rc;
}
