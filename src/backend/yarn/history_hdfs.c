/* tony_am_history_mirror over WebHDFS. The active NameNode is found on the
 * first call, so a coordinator whose job writes no history makes none. */
#include "backend/yarn/history_hdfs.h"

#include <stdlib.h>
#include <string.h>

#include "backend/yarn/webhdfs.h"
#include "common/log.h"
#include "common/strv.h"

typedef struct hdfs_ctx {
    tony_webhdfs *w;
    bool connected;
    char *authority;
} hdfs_ctx;

static int ready(hdfs_ctx *c, tony_error *err) {
    if (c->connected) return 0;
    if (tony_webhdfs_connect(c->w, err)) return -1;
    c->connected = true;
    return 0;
}

static int h_mkdirs(void *ctx, const char *dir, tony_error *err) {
    hdfs_ctx *c = ctx;
    return ready(c, err) ? -1 : tony_webhdfs_mkdirs(c->w, dir, "770", err);
}

static int h_put(void *ctx, const char *local, const char *path, tony_error *err) {
    hdfs_ctx *c = ctx;
    return ready(c, err) ? -1 : tony_webhdfs_put(c->w, local, path, NULL, err);
}

static int h_list(void *ctx, const char *dir, tony_strv *names, tony_error *err) {
    hdfs_ctx *c = ctx;
    return ready(c, err) ? -1 : tony_webhdfs_list(c->w, dir, names, err);
}

static int h_rename(void *ctx, const char *from, const char *to, tony_error *err) {
    hdfs_ctx *c = ctx;
    return ready(c, err) ? -1 : tony_webhdfs_rename(c->w, from, to, err);
}

static int h_remove(void *ctx, const char *path, tony_error *err) {
    hdfs_ctx *c = ctx;
    return ready(c, err) ? -1 : tony_webhdfs_delete(c->w, path, true, err);
}

tony_am_history_mirror *tony_yarn_history_mirror_new(void) {
    const char *nns = getenv(TONY_YARN_WEBHDFS_ENV), *fs = getenv(TONY_YARN_DEFAULT_FS_ENV);
    const char *user = getenv(TONY_YARN_HDFS_USER_ENV);
    if (!nns || !*nns || !fs || !tony_str_starts_with(fs, "hdfs://") || !user || !*user) {
        tony_info("history: no HDFS for it (%s, %s or %s missing from the environment: submitted by an older tony?)",
                  TONY_YARN_WEBHDFS_ENV, TONY_YARN_DEFAULT_FS_ENV, TONY_YARN_HDFS_USER_ENV);
        return NULL;
    }
    hdfs_ctx *c = tony_xcalloc(1, sizeof *c);
    c->w = tony_webhdfs_new_at(nns, TONY_YARN_WEBHDFS_ENV " in the AM's environment", fs,
                               TONY_YARN_DEFAULT_FS_ENV " in the AM's environment", user);
    tony_webhdfs_set_timeouts(c->w, TONY_YARN_HISTORY_CALL_MS, TONY_YARN_HISTORY_STALL_S);
    c->authority = tony_strdup(fs + strlen("hdfs://"));
    size_t n = strlen(c->authority);
    if (n && c->authority[n - 1] == '/') c->authority[n - 1] = '\0';
    tony_am_history_mirror *m = tony_xcalloc(1, sizeof *m);
    *m = (tony_am_history_mirror){.ctx = c, .authority = c->authority, .mkdirs = h_mkdirs, .put = h_put,
                                  .list = h_list, .rename = h_rename, .remove = h_remove};
    return m;
}

void tony_yarn_history_mirror_free(tony_am_history_mirror *m) {
    if (!m) return;
    hdfs_ctx *c = m->ctx;
    tony_webhdfs_free(c->w);
    free(c->authority);
    free(c);
    free(m);
}
