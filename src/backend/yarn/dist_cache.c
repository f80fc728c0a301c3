/* tony's own archive in HDFS, once per build (see dist_cache.h). */
#include "backend/yarn/dist_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/self.h"
#include "common/strv.h"

/* Where the archive goes: the cache dir (from the key, else the default), or
 * the staging dir when the key is set empty. */
static int dist_dir(tony_webhdfs *w, const tony_conf *conf, const char *user, const char *staging_path, char **dir,
                    bool *shared, tony_error *err) {
    const char *v = tony_conf_get(conf, TONY_YARN_DIST_CACHE_KEY);
    *shared = !v || *v;
    if (!v) {
        *dir = tony_sprintf("/user/%s/.tony/cache", user);
    } else if (!*v) {
        *dir = tony_strdup(staging_path);
    } else if (strstr(v, "://")) {
        if (tony_webhdfs_path_of(w, v, dir, err)) return tony_err_wrap(err, "%s", TONY_YARN_DIST_CACHE_KEY);
    } else if (v[0] == '/') {
        *dir = tony_strdup(v);
    } else {
        return tony_err(err, "%s: %s is not an absolute HDFS path (e.g. /user/%s/.tony/cache or hdfs:///apps/tony)",
                        TONY_YARN_DIST_CACHE_KEY, v, user);
    }
    return 0;
}

static int upload(tony_webhdfs *w, const tony_self *self, const char *dir, const char *path, const char *name,
                  bool shared, bool *cluster_failed, tony_error *err) {
    char tmpl[] = "/tmp/tony-dist-XXXXXX";
    char *tmp = mkdtemp(tmpl);
    if (!tmp) return tony_err(err, "cannot create a temporary directory under /tmp: %s", strerror(errno));
    char *local = tony_path_join(tmp, name);
    int rc = tony_self_pack(self, local, "", err);
    char *uri = tony_webhdfs_uri(w, path);
    struct stat st;
    if (rc == 0 && stat(local, &st) == 0)
        fprintf(stderr, "tony: uploading tony %s (%.1f MiB) to %s%s\n", TONY_VERSION, (double)st.st_size / (1 << 20),
                uri, shared ? ", once for this build" : "");
    /* Uploaded under a name of its own, then renamed into place. */
    char *part = tony_sprintf("%s/.%s.%d.part", dir, name, (int)getpid());
    if (rc == 0 && ((rc = tony_webhdfs_mkdirs(w, dir, "700", err)) || (rc = tony_webhdfs_put(w, local, part, "600", NULL, err))))
        *cluster_failed = true;
    /* A refused rename most likely means another submit renamed its copy
     * (the same bytes) first; the caller checks that the archive is there. */
    if (rc == 0 && tony_webhdfs_rename(w, part, path, NULL) != 0) tony_webhdfs_delete(w, part, false, NULL);
    free(part);
    free(uri);
    free(local);
    tony_rm_rf(tmp, NULL);
    return rc;
}

int tony_yarn_dist_stage(tony_webhdfs *w, const tony_conf *conf, const char *user, const char *staging_path,
                         tony_yarn_dist *out, bool *cluster_failed, tony_error *err) {
    memset(out, 0, sizeof *out);
    *cluster_failed = false;
    tony_self self;
    char *dir = NULL, *id = NULL, *name = NULL, *path = NULL;
    int rc = tony_self_find(&self, err);
    if (rc == 0) rc = dist_dir(w, conf, user, staging_path, &dir, &out->shared, err);
    if (rc == 0) rc = tony_self_build_id(&self, &id, err);
    if (rc == 0) {
        name = tony_sprintf("tony-%s.tar.gz", id);
        path = tony_sprintf("%s/%s", dir, name);
        bool exists = false;
        if (out->shared && tony_webhdfs_stat(w, path, &out->st, &exists, err)) {
            *cluster_failed = true;
            rc = -1;
        } else if (!exists) {
            rc = upload(w, &self, dir, path, name, out->shared, cluster_failed, err);
            if (rc == 0 && tony_webhdfs_stat(w, path, &out->st, &exists, err) == 0 && !exists)
                tony_err(err, "%s did not appear in HDFS after its upload", path);
            if (rc == 0 && !exists) {
                *cluster_failed = true;
                rc = -1;
            }
            out->uploaded = rc == 0;
        }
    }
    if (rc == 0) out->uri = tony_webhdfs_uri(w, path);
    free(dir);
    free(id);
    free(name);
    free(path);
    tony_self_free(&self);
    return rc;
}

void tony_yarn_dist_free(tony_yarn_dist *d) {
    free(d->uri);
    memset(d, 0, sizeof *d);
}
