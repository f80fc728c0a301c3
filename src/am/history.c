/* The history directory's life: created at start, written as events come,
 * renamed and moved once when the job ends. Failing to write history never
 * fails a job: callers log the error and carry on without it. */
#include "am/history.h"

#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/log.h"
#include "common/strv.h"

struct am_history {
    char *app_id, *user, *dir, *file, *finished_root;
    long long start_ms;
    tony_jhist_writer *writer;
};

char *am_history_user(void) {
    struct passwd *pw = getpwuid(getuid());
    const char *name = pw ? pw->pw_name : getenv("USER");
    char *u = tony_strdup(name && *name ? name : "unknown");
    for (char *p = u; *p; p++) *p = (char)tolower((unsigned char)*p);
    return u;
}

am_history *am_history_new(const tony_conf *conf, const char *conf_path, const char *local_root, const char *app_id,
                           long long start_ms, tony_error *err) {
    tony_jhist_dirs d;
    tony_jhist_dirs_resolve(tony_conf_get(conf, "tony.history.location"), tony_conf_get(conf, "tony.history.intermediate"),
                            tony_conf_get(conf, "tony.history.finished"), local_root, &d);
    const char *tz = tony_conf_get(conf, "tony.history.finished-dir-timezone");
    if (tz && *tz && strcmp(tz, "UTC") != 0 && strcmp(tz, "GMT") != 0)
        tony_warn("tony.history.finished-dir-timezone=%s: only UTC is supported; finished/yyyy/mm/dd uses UTC", tz);
    am_history *h = tony_xcalloc(1, sizeof *h);
    h->app_id = tony_strdup(app_id);
    h->user = am_history_user();
    h->start_ms = start_ms;
    h->finished_root = tony_strdup(d.finished);
    h->dir = tony_path_join(d.intermediate, app_id);
    char *name = tony_jhist_inprogress_name(app_id, start_ms, h->user);
    h->file = tony_path_join(h->dir, name);
    free(name);
    char *conf_copy = tony_path_join(h->dir, "tony-final.xml");
    int rc = tony_mkdir_p(d.finished, 0770, err);
    if (rc == 0) rc = tony_mkdir_p(h->dir, 0770, err);
    if (rc == 0) rc = tony_copy_file(conf_path, conf_copy, err);
    if (rc == 0) h->writer = tony_jhist_writer_new(h->file, err);
    free(conf_copy);
    tony_jhist_dirs_free(&d);
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
    free(h);
}

const char *am_history_dir(const am_history *h) { return h->dir; }
const char *am_history_file(const am_history *h) { return h->file; }
tony_jhist_writer *am_history_writer(am_history *h) { return h->writer; }

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
    } else {
        free(target);
    }
    return rc;
}
