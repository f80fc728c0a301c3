/* The history cache (see histcache.h). Listing costs one call of the
 * cluster's file system (YARN: WebHDFS) per directory down to the day
 * dirs; a job dir whose remote mtime equals its copy's (set after each
 * complete sync of it) is not listed again, so a refresh of an unchanged
 * tree downloads nothing. The file system is its backend's
 * (backend/client.h's open_history_fs). */
#include "client/histcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/client.h"
#include "common/fs.h"
#include "common/strv.h"
#include "conf/keys.h"

char *tony_hist_cache_path(const char *cache_root, const char *authority, const char *remote_path) {
    char *a = tony_strdup(authority && *authority ? authority : "default");
    for (char *p = a; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-", *p)) *p = '_';
    if (a[0] == '.') a[0] = '_';
    char *dir = tony_path_join(cache_root, a);
    char *out = tony_sprintf("%s%s", dir, remote_path);
    free(dir);
    free(a);
    return out;
}

bool tony_hist_cache_name_ok(const char *name) { return name && *name && name[0] != '.' && !strchr(name, '/'); }

static long long mtime_ms(const struct stat *st) {
    return (long long)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

static int set_mtime(const char *path, long long ms, tony_error *err) {
    struct timespec t[2] = {{0, UTIME_NOW}, {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000}};
    if (utimensat(AT_FDCWD, path, t, 0)) return tony_err(err, "cannot set the time of %s: %s", path, strerror(errno));
    return 0;
}

static bool fresh(const char *local, const tony_client_remote_entry *e) {
    struct stat ls;
    if (stat(local, &ls)) return false;
    if (e->is_dir) return S_ISDIR(ls.st_mode) && mtime_ms(&ls) == e->mtime_ms;
    return S_ISREG(ls.st_mode) && ls.st_size == e->length && mtime_ms(&ls) == e->mtime_ms;
}

static int fetch(const tony_client_remote_fs *r, const char *rp, const char *ldir, const tony_client_remote_entry *e,
                 tony_error *err) {
    char *tmp = tony_sprintf("%s/.%s.part", ldir, e->name), *lp = tony_path_join(ldir, e->name);
    if (tony_is_dir(lp)) tony_rm_rf(lp, NULL);
    int rc = r->fetch(r->ctx, rp, tmp, err);
    if (rc == 0) rc = set_mtime(tmp, e->mtime_ms, err);
    if (rc == 0 && rename(tmp, lp)) rc = tony_err(err, "cannot write %s: %s", lp, strerror(errno));
    if (rc) unlink(tmp);
    free(tmp);
    free(lp);
    return rc;
}

/* Drops what the remote no longer has (and leftovers of cut-off downloads). */
static void prune(const char *ldir, const tony_strv *keep, tony_hist_sync_stats *stats) {
    DIR *d = opendir(ldir);
    if (!d) return;
    struct dirent *de;
    tony_strv gone = {0};
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && !tony_strv_contains(keep, de->d_name))
            tony_strv_push(&gone, de->d_name);
    closedir(d);
    for (size_t i = 0; i < gone.len; i++) {
        char *p = tony_path_join(ldir, gone.items[i]);
        if (tony_rm_rf(p, NULL) == 0) stats->removed++;
        free(p);
    }
    tony_strv_free(&gone);
}

/* depth as histdir's scan: 0 is a job's own dir (files only); above it
 * only directories and .jhist files matter. */
static int sync_dir(const tony_client_remote_fs *r, const char *rdir, const char *ldir, int depth,
                    tony_hist_sync_stats *stats, bool *exists, tony_error *err) {
    tony_client_remote_entry *es = NULL;
    size_t n = 0;
    bool missing = false;
    stats->listed++;
    if (r->list(r->ctx, rdir, &es, &n, &missing, err)) return -1;
    if (exists) *exists = !missing;
    if (missing) {
        tony_client_remote_entries_free(es, n);
        if (tony_file_exists(ldir) && tony_rm_rf(ldir, NULL) == 0) stats->removed++;
        return 0;
    }
    int rc = tony_mkdir_p(ldir, 0755, err);
    tony_strv keep = {0};
    for (size_t i = 0; i < n && rc == 0; i++) {
        const tony_client_remote_entry *e = &es[i];
        tony_jhist_meta m;
        if (!tony_hist_cache_name_ok(e->name) || (e->is_dir && depth == 0) ||
            (!e->is_dir && depth > 0 && !tony_jhist_parse_name(e->name, &m)))
            continue;
        tony_strv_push(&keep, e->name);
        char *rp = tony_path_join(rdir, e->name), *lp = tony_path_join(ldir, e->name);
        if (e->is_dir) {
            if (!tony_is_dir(lp)) tony_rm_rf(lp, NULL);
            /* A job dir's mtime changes whenever a file in it is created,
             * replaced, renamed or removed. */
            if (!(depth == 1 && fresh(lp, e))) {
                rc = sync_dir(r, rp, lp, depth - 1, stats, NULL, err);
                if (rc == 0 && depth == 1) rc = set_mtime(lp, e->mtime_ms, err);
            }
        } else if (!fresh(lp, e)) {
            rc = fetch(r, rp, ldir, e, err);
            if (rc == 0) stats->downloaded++;
        }
        free(rp);
        free(lp);
    }
    if (rc == 0) prune(ldir, &keep, stats);
    tony_strv_free(&keep);
    tony_client_remote_entries_free(es, n);
    return rc;
}

int tony_hist_cache_sync(const tony_client_remote_fs *remote, const tony_jhist_dirs *remote_dirs,
                         const tony_jhist_dirs *cache_dirs, tony_hist_sync_stats *stats, tony_error *err) {
    memset(stats, 0, sizeof *stats);
    bool fin = false, inter = false;
    if (sync_dir(remote, remote_dirs->finished, cache_dirs->finished, 4, stats, &fin, err)) return -1;
    if (sync_dir(remote, remote_dirs->intermediate, cache_dirs->intermediate, 1, stats, &inter, err)) return -1;
    stats->found = fin || inter;
    return 0;
}

/* What a bare history path means: on the cluster's file system when the
 * backend `tony submit` would pick (tony.application.backend, else the one
 * configured here) keeps its history there. */
static bool history_on_cluster_fs(const tony_conf *conf) {
    const char *b = tony_conf_get(conf, TONY_KEY_APP_BACKEND);
    char why[512];
    const tony_client_backend_ops *ops =
        b && *b ? tony_client_backend_find(b) : tony_client_backend_choose(why, sizeof why);
    return ops && ops->history_on_cluster_fs;
}

int tony_hist_source_open(tony_hist_source *s, const tony_conf *conf, const char *location_flag, const char *root,
                          tony_error *err) {
    memset(s, 0, sizeof *s);
    const char *key = location_flag ? "--location" : TONY_KEY_HISTORY_LOCATION;
    s->key = key;
    int rc = location_flag
                 ? tony_histloc_resolve(location_flag, NULL, NULL, key, false, root, &s->where, err)
                 : tony_histloc_resolve(tony_conf_get(conf, TONY_KEY_HISTORY_LOCATION),
                                        tony_conf_get(conf, TONY_KEY_HISTORY_INTERMEDIATE),
                                        tony_conf_get(conf, TONY_KEY_HISTORY_FINISHED), key,
                                        history_on_cluster_fs(conf), root, &s->where, err);
    if (rc) return -1;
    if (s->where.fs == TONY_HISTLOC_LOCAL) {
        s->scan.location = tony_strdup(s->where.dirs.location);
        s->scan.intermediate = tony_strdup(s->where.dirs.intermediate);
        s->scan.finished = tony_strdup(s->where.dirs.finished);
    } else {
        rc = tony_client_history_fs_open(&s->where, conf, key, &s->fs, err);
    }
    s->shown = tony_histloc_uri(&s->where, s->where.dirs.location);
    s->shown_intermediate = tony_histloc_uri(&s->where, s->where.dirs.intermediate);
    s->shown_finished = tony_histloc_uri(&s->where, s->where.dirs.finished);
    if (rc || !s->fs.ctx) return rc;
    if (s->fs.connect(s->fs.ctx, err)) {
        s->unreachable = true;
        return tony_err_wrap(err, "%s %s", key, s->shown);
    }
    char *cache_root = tony_path_join(root, "history-cache");
    const char *auth = s->where.authority;
    char *cauth = s->where.fs == TONY_HISTLOC_WEBHDFS ? tony_sprintf("webhdfs-%s", auth) : tony_strdup(auth);
    s->scan.location = tony_hist_cache_path(cache_root, cauth, s->where.dirs.location);
    s->scan.intermediate = tony_hist_cache_path(cache_root, cauth, s->where.dirs.intermediate);
    s->scan.finished = tony_hist_cache_path(cache_root, cauth, s->where.dirs.finished);
    free(cauth);
    free(cache_root);
    return 0;
}

bool tony_hist_source_remote(const tony_hist_source *s) { return s->fs.ctx != NULL; }

int tony_hist_source_refresh(tony_hist_source *s, tony_hist_sync_stats *stats, tony_error *err) {
    tony_hist_sync_stats ignored;
    if (!stats) stats = &ignored;
    memset(stats, 0, sizeof *stats);
    if (!s->fs.ctx) return 0;
    if (tony_hist_cache_sync(&s->fs, &s->where.dirs, &s->scan, stats, err)) {
        s->unreachable = true;
        return -1;
    }
    s->unreachable = false;
    if (!stats->found)
        return tony_err(err, "%s %s: no history there: neither %s nor %s exists in HDFS (NameNode %s)", s->key,
                        s->shown, s->where.dirs.intermediate, s->where.dirs.finished, s->fs.server(s->fs.ctx));
    return 0;
}

char *tony_hist_source_shown_path(const tony_hist_source *s, const char *path) {
    if (!s->fs.ctx || !path) return tony_strdup(path);
    const char *locals[] = {s->scan.finished, s->scan.intermediate, s->scan.location};
    const char *shown[] = {s->shown_finished, s->shown_intermediate, s->shown};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(locals[i]);
        if (strncmp(path, locals[i], n) == 0 && (path[n] == '/' || path[n] == '\0'))
            return tony_sprintf("%s%s", shown[i], path + n);
    }
    return tony_strdup(path);
}

void tony_hist_source_free(tony_hist_source *s) {
    tony_histloc_free(&s->where);
    tony_jhist_dirs_free(&s->scan);
    free(s->shown);
    free(s->shown_intermediate);
    free(s->shown_finished);
    if (s->fs.ctx) s->fs.close(s->fs.ctx);
    memset(s, 0, sizeof *s);
}
