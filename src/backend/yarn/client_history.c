/* The YARN backend's reader of history on HDFS (client.h's open_history_fs),
 * for `tony history` and `tony portal`: WebHDFS to the NameNodes of
 * HADOOP_CONF_DIR's cluster (hdfs://), with the user's Kerberos login where
 * that cluster is secure, or to the one NameNode a webhdfs:// location
 * names. */
#include <stdlib.h>
#include <string.h>

#include "backend/yarn/hadoop_conf.h"
#include "backend/yarn/kerberos.h"
#include "backend/yarn/rest.h"
#include "backend/yarn/webhdfs.h"
#include "backend/yarn/yarn_client.h"
#include "common/strv.h"

typedef struct history_fs {
    tony_webhdfs *w;
    tony_hadoop_conf *hadoop; /* hdfs:// only: where its NameNodes came from */
} history_fs;

static int fs_connect(void *ctx, tony_error *err) { return tony_webhdfs_connect(((history_fs *)ctx)->w, err); }

static int fs_list(void *ctx, const char *dir, tony_client_remote_entry **out, size_t *n, bool *missing,
                   tony_error *err) {
    tony_hdfs_entry *es = NULL;
    *out = NULL;
    *n = 0;
    size_t count = 0;
    if (tony_webhdfs_list_status(((history_fs *)ctx)->w, dir, &es, &count, missing, err)) return -1;
    *out = tony_xcalloc(count ? count : 1, sizeof **out);
    for (size_t i = 0; i < count; i++) {
        (*out)[i] = (tony_client_remote_entry){.name = es[i].name, .is_dir = es[i].st.is_dir,
                                               .length = es[i].st.length, .mtime_ms = es[i].st.mtime_ms};
        es[i].name = NULL; /* now the caller's */
    }
    *n = count;
    tony_hdfs_entries_free(es, count);
    return 0;
}

static int fs_fetch(void *ctx, const char *path, const char *local, tony_error *err) {
    return tony_webhdfs_get(((history_fs *)ctx)->w, path, local, err);
}

static const char *fs_server(void *ctx) { return tony_webhdfs_namenode(((history_fs *)ctx)->w); }

static void fs_close(void *ctx) {
    history_fs *f = ctx;
    tony_webhdfs_free(f->w);
    tony_hadoop_conf_free(f->hadoop);
    free(f);
}

/* The NameNodes of an hdfs:// location: HADOOP_CONF_DIR's cluster, whose
 * fs.defaultFS it must be on. */
static int hdfs_namenodes(history_fs *f, tony_histloc *where, const tony_conf *conf, const char *key,
                          tony_error *err) {
    char *uri = tony_histloc_uri(where, where->dirs.location);
    const char *hc = getenv("HADOOP_CONF_DIR");
    int rc = 0;
    if (!hc || !*hc) {
        rc = tony_err(err, "%s %s: reading history on HDFS needs HADOOP_CONF_DIR (the cluster's client "
                           "configuration, for its NameNodes' web addresses), or give webhdfs://NAMENODE:HTTP_PORT/path",
                      key, uri);
    } else {
        f->hadoop = tony_hadoop_conf_new();
        rc = tony_hadoop_conf_load(f->hadoop, hc, conf, err);
    }
    if (rc == 0) {
        const char *fs = f->hadoop->default_fs;
        const char *auth = tony_str_starts_with(fs, "hdfs://") ? fs + 7 : "";
        if (!*where->authority) {
            free(where->authority);
            where->authority = tony_strdup(auth);
        } else if (strcmp(where->authority, auth) != 0) {
            rc = tony_err(err, "%s %s: not on the cluster HADOOP_CONF_DIR=%s describes (fs.defaultFS %s, from %s); for "
                               "another cluster give webhdfs://NAMENODE:HTTP_PORT/path",
                          key, uri, hc, fs, f->hadoop->default_fs_from);
        }
    }
    bool secure = false;
    char *user = NULL;
    if (rc == 0) rc = tony_yarn_client_login(f->hadoop, conf, &user, &secure, err);
    if (rc == 0) {
        f->w = tony_webhdfs_new(f->hadoop, user);
        if (secure) tony_webhdfs_use_kerberos(f->w);
    }
    free(user);
    free(uri);
    return rc;
}

int tony_yarn_open_history_fs(tony_histloc *where, const tony_conf *conf, const char *key, tony_client_remote_fs *out,
                              tony_error *err) {
    *out = (tony_client_remote_fs){0};
    history_fs *f = tony_xcalloc(1, sizeof *f);
    int rc = 0;
    if (where->fs == TONY_HISTLOC_HDFS) {
        rc = hdfs_namenodes(f, where, conf, key, err);
    } else {
        char *user = tony_yarn_user(), *fs = tony_sprintf("webhdfs://%s", where->authority);
        f->w = tony_webhdfs_new_at(where->authority, key, fs, NULL, user);
        free(user);
        free(fs);
    }
    if (rc) {
        fs_close(f);
        return rc;
    }
    *out = (tony_client_remote_fs){.ctx = f, .connect = fs_connect, .list = fs_list, .fetch = fs_fetch,
                                   .server = fs_server, .close = fs_close};
    return 0;
}
