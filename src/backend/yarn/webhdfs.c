/* WebHDFS calls over common/http. Uploads use CREATE with noredirect=true:
 * the NameNode answers with the DataNode URL in JSON and the bytes go there
 * in a second PUT, so no redirect with a body has to be replayed. */
#include "backend/yarn/webhdfs.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "backend/yarn/rest.h"
#include "common/http.h"

#define WEBHDFS_TIMEOUT_MS 30000
#define UPLOAD_STALL_S 120

struct tony_webhdfs {
    tony_strv http, http_from; /* each NameNode's web address and where it was set */
    char *default_fs, *default_fs_from;
    char *user;
    bool kerberos;    /* SPNEGO (the client, logged in) instead of user.name= */
    char *delegation; /* a delegation token's URL string (the coordinator) */
    size_t active; /* index into http */
    long timeout_ms, stall_s, transfer_max_s; /* transfer_max_s 0: no overall limit */
};

static tony_webhdfs *alloc(const char *default_fs, const char *default_fs_from, const char *user) {
    tony_webhdfs *w = tony_xcalloc(1, sizeof *w);
    w->default_fs = tony_strdup(default_fs);
    w->default_fs_from = tony_strdup(default_fs_from);
    w->user = tony_strdup(user);
    w->timeout_ms = WEBHDFS_TIMEOUT_MS;
    w->stall_s = UPLOAD_STALL_S;
    return w;
}

tony_webhdfs *tony_webhdfs_new(const tony_hadoop_conf *h, const char *user) {
    tony_webhdfs *w = alloc(h->default_fs, h->default_fs_from, user);
    for (size_t i = 0; i < h->nnns; i++) {
        tony_strv_push(&w->http, h->nns[i].http);
        tony_strv_push(&w->http_from, h->nns[i].http_from);
    }
    return w;
}

tony_webhdfs *tony_webhdfs_new_at(const char *http_csv, const char *from, const char *default_fs,
                                  const char *default_fs_from, const char *user) {
    tony_webhdfs *w = alloc(default_fs, default_fs_from, user);
    tony_split_csv(http_csv, &w->http);
    for (size_t i = 0; i < w->http.len; i++) {
        if (!strstr(w->http.items[i], "://")) {
            char *u = tony_sprintf("http://%s", w->http.items[i]);
            free(w->http.items[i]);
            w->http.items[i] = u;
        }
        tony_strv_push(&w->http_from, from);
    }
    return w;
}

void tony_webhdfs_set_timeouts(tony_webhdfs *w, long call_ms, long stall_s, long transfer_max_s) {
    w->timeout_ms = call_ms;
    w->stall_s = stall_s;
    w->transfer_max_s = transfer_max_s;
}

void tony_webhdfs_free(tony_webhdfs *w) {
    if (!w) return;
    tony_strv_free(&w->http);
    tony_strv_free(&w->http_from);
    free(w->default_fs);
    free(w->default_fs_from);
    free(w->user);
    free(w->delegation);
    free(w);
}

const char *tony_webhdfs_namenode(const tony_webhdfs *w) { return w->http.len ? w->http.items[w->active] : ""; }
const char *tony_webhdfs_default_fs(const tony_webhdfs *w) { return w->default_fs; }
const char *tony_webhdfs_user(const tony_webhdfs *w) { return w->user; }

static const char *nn_url(const tony_webhdfs *w) { return tony_webhdfs_namenode(w); }

void tony_webhdfs_use_kerberos(tony_webhdfs *w) { w->kerberos = true; }

void tony_webhdfs_use_delegation(tony_webhdfs *w, const char *url_string) {
    free(w->delegation);
    w->delegation = tony_strdup(url_string);
}

/* Percent-encodes all but unreserved characters and those of keep. */
static void escape(tony_buf *b, const char *v, const char *keep) {
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("._-~", *p) ||
            strchr(keep, *p))
            tony_buf_append(b, (const char *)p, 1);
        else
            tony_buf_printf(b, "%%%02X", *p);
    }
}

static void escape_path(tony_buf *b, const char *path) { escape(b, path, "/"); }
static void escape_query(tony_buf *b, const char *v) { escape(b, v, ""); }

static char *op_url(const tony_webhdfs *w, const char *path, const char *op, const char *extra) {
    tony_buf b = {0};
    tony_buf_printf(&b, "%s/webhdfs/v1", nn_url(w));
    escape_path(&b, path);
    /* Who we are: a delegation token, SPNEGO (nothing in the URL), or the
     * name an insecure cluster takes on trust. */
    if (w->delegation) tony_buf_printf(&b, "?op=%s&delegation=%s", op, w->delegation);
    else if (w->kerberos) tony_buf_printf(&b, "?op=%s", op);
    else tony_buf_printf(&b, "?op=%s&user.name=%s", op, w->user);
    tony_buf_printf(&b, "%s%s", extra ? "&" : "", extra ? extra : "");
    return b.data;
}

/* One NameNode call; ok lists accepted statuses (0-ended). 404 is reported
 * through *missing when the caller passes it. */
static int call(tony_webhdfs *w, const char *method, const char *path, const char *op, const char *extra,
                const long *ok, bool *missing, json_t **out, tony_error *err) {
    char *url = op_url(w, path, op, extra);
    tony_http_response r;
    tony_error herr;
    const char *body = strcmp(method, "GET") ? "" : NULL;
    int rc = w->kerberos && !w->delegation ? tony_http_call_negotiate(method, url, body, w->timeout_ms, &r, &herr)
                                           : tony_http_call(method, url, NULL, body, w->timeout_ms, &r, &herr);
    free(url);
    if (rc && !w->default_fs_from)
        return tony_err(err, "cannot reach HDFS's NameNode at %s (from %s): %s", nn_url(w),
                        w->http_from.items[w->active], herr.msg);
    if (rc)
        return tony_err(err, "cannot reach HDFS's NameNode at %s (from %s; fs.defaultFS %s from %s): %s", nn_url(w),
                        w->http_from.items[w->active], w->default_fs, w->default_fs_from, herr.msg);
    if (missing) *missing = r.status == 404;
    if (missing && *missing) {
        tony_http_response_free(&r);
        return 0;
    }
    bool good = false;
    for (const long *s = ok; *s; s++) good = good || r.status == *s;
    if (!good && r.status == 401 && w->kerberos && !w->delegation) {
        tony_err(err, "HDFS %s %s: the NameNode at %s refused Kerberos (SPNEGO) authentication (HTTP 401); check "
                 "`klist`, and that the KDC knows HTTP/<NameNode host> (its web principal)", op, path, nn_url(w));
        tony_http_response_free(&r);
        return -1;
    }
    if (!good) {
        char *re = tony_yarn_remote_exception(r.body);
        size_t blen = strcspn(r.body, "\n");
        tony_err(err, "HDFS %s %s failed (HTTP %ld from %s): %s%.*s", op, path, r.status, nn_url(w), re ? re : "",
                 re ? 0 : (int)(blen > 300 ? 300 : blen), r.body);
        free(re);
        tony_http_response_free(&r);
        return -1;
    }
    rc = 0;
    if (out) {
        json_error_t je;
        *out = json_loads(r.body, 0, &je);
        if (!*out) rc = tony_err(err, "HDFS %s %s: the NameNode at %s answered with invalid JSON: %s", op, path, nn_url(w), je.text);
    }
    tony_http_response_free(&r);
    return rc;
}

static const long OK200[] = {200, 0};

int tony_webhdfs_connect(tony_webhdfs *w, tony_error *err) {
    tony_strv problems = {0};
    if (!w->http.len) return tony_err(err, "no NameNode web address is known for %s", w->default_fs);
    for (size_t i = 0; i < w->http.len; i++) {
        w->active = i;
        json_t *j = NULL;
        tony_error e;
        /* A standby NameNode refuses reads with a StandbyException. */
        if (call(w, "GET", "/", "GETFILESTATUS", NULL, OK200, NULL, &j, &e) == 0 &&
            json_object_get(j, "FileStatus")) {
            json_decref(j);
            tony_strv_free(&problems);
            return 0;
        }
        if (j) tony_strv_pushf(&problems, "%s (from %s) does not speak WebHDFS", nn_url(w), w->http_from.items[i]);
        else tony_strv_push(&problems, e.msg);
        json_decref(j);
    }
    w->active = 0;
    char *all = tony_strv_join(&problems, "; ");
    tony_err(err, "%s", all);
    free(all);
    tony_strv_free(&problems);
    return -1;
}

char *tony_webhdfs_uri(const tony_webhdfs *w, const char *path) { return tony_sprintf("%s%s", w->default_fs, path); }

int tony_webhdfs_path_of(const tony_webhdfs *w, const char *uri, char **path, tony_error *err) {
    if (tony_str_starts_with(uri, "hdfs:///")) {
        *path = tony_strdup(uri + 7);
        return 0;
    }
    const char *fs = w->default_fs;
    size_t n = strlen(fs);
    if (strncmp(uri, fs, n) == 0 && uri[n] == '/') {
        *path = tony_strdup(uri + n);
        return 0;
    }
    return tony_err(err, "%s is not on this cluster's HDFS (%s, from %s); only hdfs:// paths of fs.defaultFS can be "
                         "used in place", uri, fs, w->default_fs_from);
}

int tony_webhdfs_mkdirs(tony_webhdfs *w, const char *path, const char *permission, tony_error *err) {
    char *extra = tony_sprintf("permission=%s", permission);
    json_t *j = NULL;
    int rc = call(w, "PUT", path, "MKDIRS", extra, OK200, NULL, &j, err);
    free(extra);
    if (rc == 0 && !json_is_true(json_object_get(j, "boolean")))
        rc = tony_err(err, "HDFS MKDIRS %s: the NameNode at %s said no (is a file in the way?)", path, nn_url(w));
    json_decref(j);
    return rc;
}

static int parse_status(json_t *fs, tony_hdfs_status *st) {
    if (!json_is_object(fs)) return -1;
    st->length = json_integer_value(json_object_get(fs, "length"));
    st->mtime_ms = json_integer_value(json_object_get(fs, "modificationTime"));
    const char *type = json_string_value(json_object_get(fs, "type"));
    st->is_dir = type && strcmp(type, "DIRECTORY") == 0;
    return 0;
}

int tony_webhdfs_stat(tony_webhdfs *w, const char *path, tony_hdfs_status *st, bool *exists, tony_error *err) {
    json_t *j = NULL;
    bool missing = false;
    if (call(w, "GET", path, "GETFILESTATUS", NULL, OK200, &missing, &j, err)) return -1;
    *exists = !missing;
    if (missing) return 0;
    int rc = parse_status(json_object_get(j, "FileStatus"), st);
    json_decref(j);
    if (rc) return tony_err(err, "HDFS GETFILESTATUS %s: no FileStatus in the answer of the NameNode at %s", path, nn_url(w));
    return 0;
}

int tony_webhdfs_delegation_token(tony_webhdfs *w, const char *renewer, const char *service, char **url_string,
                                  tony_error *err) {
    tony_buf q = {0};
    tony_buf_puts(&q, "kind=HDFS_DELEGATION_TOKEN&renewer=");
    escape_query(&q, renewer);
    tony_buf_puts(&q, "&service=");
    escape_query(&q, service);
    json_t *j = NULL;
    int rc = call(w, "GET", "/", "GETDELEGATIONTOKEN", q.data, OK200, NULL, &j, err);
    tony_buf_free(&q);
    if (rc) return -1;
    const char *t = json_string_value(json_object_get(json_object_get(j, "Token"), "urlString"));
    if (t && *t) *url_string = tony_strdup(t);
    else rc = tony_err(err, "HDFS GETDELEGATIONTOKEN: the NameNode at %s gave no token (is security on?)", nn_url(w));
    json_decref(j);
    return rc;
}

int tony_webhdfs_renew_delegation_token(tony_webhdfs *w, const char *url_string, long long *expiry_ms,
                                        tony_error *err) {
    tony_buf q = {0};
    tony_buf_puts(&q, "token=");
    escape_query(&q, url_string);
    json_t *j = NULL;
    int rc = call(w, "PUT", "/", "RENEWDELEGATIONTOKEN", q.data, OK200, NULL, &j, err);
    tony_buf_free(&q);
    if (rc) return -1;
    json_t *v = json_object_get(j, "long");
    if (json_is_integer(v) && json_integer_value(v) > 0) *expiry_ms = (long long)json_integer_value(v);
    else rc = tony_err(err, "HDFS RENEWDELEGATIONTOKEN: the NameNode at %s gave no new expiry", nn_url(w));
    json_decref(j);
    return rc;
}

int tony_webhdfs_put(tony_webhdfs *w, const char *local, const char *path, const char *permission,
                     tony_hdfs_status *st, tony_error *err) {
    json_t *j = NULL;
    char *query = tony_sprintf("overwrite=true&permission=%s&noredirect=true", permission);
    int called = call(w, "PUT", path, "CREATE", query, OK200, NULL, &j, err);
    free(query);
    if (called) return -1;
    const char *loc = json_string_value(json_object_get(j, "Location"));
    if (!loc) {
        json_decref(j);
        return tony_err(err, "HDFS CREATE %s: the NameNode at %s gave no DataNode Location", path, nn_url(w));
    }
    tony_http_response r;
    tony_error herr;
    int rc = tony_http_put_file(loc, local, w->stall_s, w->transfer_max_s, &r, &herr);
    if (rc) {
        rc = tony_err(err, "uploading %s to HDFS %s: cannot reach the DataNode the NameNode named: %s", local, path,
                      herr.msg);
    } else {
        if (r.status != 201) {
            char *re = tony_yarn_remote_exception(r.body);
            rc = tony_err(err, "uploading %s to HDFS %s: the DataNode answered HTTP %ld%s%s", local, path, r.status,
                          re ? ": " : "", re ? re : "");
            free(re);
        }
        tony_http_response_free(&r);
    }
    json_decref(j);
    if (rc) return -1;
    if (!st) return 0;
    bool exists = false;
    if (tony_webhdfs_stat(w, path, st, &exists, err)) return -1;
    if (!exists) return tony_err(err, "uploaded %s to HDFS %s, but it is not there", local, path);
    return 0;
}

int tony_webhdfs_delete(tony_webhdfs *w, const char *path, bool recursive, tony_error *err) {
    json_t *j = NULL;
    int rc = call(w, "DELETE", path, "DELETE", recursive ? "recursive=true" : "recursive=false", OK200, NULL, &j, err);
    json_decref(j);
    return rc;
}

int tony_webhdfs_list_status(tony_webhdfs *w, const char *path, tony_hdfs_entry **out, size_t *n, bool *missing,
                             tony_error *err) {
    *out = NULL;
    *n = 0;
    json_t *j = NULL;
    bool gone = false;
    if (call(w, "GET", path, "LISTSTATUS", NULL, OK200, &gone, &j, err)) return -1;
    if (missing) *missing = gone;
    if (gone) return 0;
    json_t *all = json_object_get(json_object_get(j, "FileStatuses"), "FileStatus");
    if (!json_is_array(all)) {
        json_decref(j);
        return tony_err(err, "HDFS LISTSTATUS %s: no FileStatuses in the answer of the NameNode at %s", path, nn_url(w));
    }
    *out = tony_xcalloc(json_array_size(all) + 1, sizeof **out);
    size_t i;
    json_t *fs;
    json_array_foreach(all, i, fs) {
        const char *name = json_string_value(json_object_get(fs, "pathSuffix"));
        /* A file's own listing names it "" */
        if (!name || !*name) continue;
        tony_hdfs_entry *e = &(*out)[(*n)++];
        e->name = tony_strdup(name);
        parse_status(fs, &e->st);
    }
    json_decref(j);
    return 0;
}

void tony_hdfs_entries_free(tony_hdfs_entry *e, size_t n) {
    for (size_t i = 0; i < n; i++) free(e[i].name);
    free(e);
}

int tony_webhdfs_list(tony_webhdfs *w, const char *path, tony_strv *names, tony_error *err) {
    tony_hdfs_entry *e;
    size_t n;
    if (tony_webhdfs_list_status(w, path, &e, &n, NULL, err)) return -1;
    for (size_t i = 0; i < n; i++) tony_strv_push(names, e[i].name);
    tony_hdfs_entries_free(e, n);
    return 0;
}

int tony_webhdfs_get(tony_webhdfs *w, const char *path, const char *local, tony_error *err) {
    json_t *j = NULL;
    if (call(w, "GET", path, "OPEN", "noredirect=true", OK200, NULL, &j, err)) return -1;
    const char *loc = json_string_value(json_object_get(j, "Location"));
    int rc;
    if (!loc) {
        rc = tony_err(err, "HDFS OPEN %s: the NameNode at %s gave no DataNode Location", path, nn_url(w));
    } else {
        long status = 0;
        tony_error herr;
        rc = tony_http_get_file(loc, local, w->stall_s, &status, &herr);
        if (rc) rc = tony_err(err, "downloading HDFS %s to %s: %s", path, local, herr.msg);
    }
    json_decref(j);
    return rc;
}

int tony_webhdfs_rename(tony_webhdfs *w, const char *from, const char *to, tony_error *err) {
    tony_buf extra = {0};
    tony_buf_puts(&extra, "destination=");
    escape_path(&extra, to);
    json_t *j = NULL;
    int rc = call(w, "PUT", from, "RENAME", extra.data, OK200, NULL, &j, err);
    tony_buf_free(&extra);
    if (rc == 0 && !json_is_true(json_object_get(j, "boolean")))
        rc = tony_err(err, "HDFS RENAME %s to %s: the NameNode at %s said no (is %s missing, or %s there already?)", from,
                      to, nn_url(w), from, to);
    json_decref(j);
    return rc;
}
