/* History locations: one value at a time into (file system, authority,
 * path), then the three keys checked to be on one file system, as a job's
 * directory moves from intermediate/ to finished/ with a rename. */
#include "common/histloc.h"

#include <stdlib.h>
#include <string.h>

#include "common/fs.h"
#include "common/strv.h"

typedef struct one {
    tony_histloc_fs fs;
    char *authority, *path;
} one;

static void one_free(one *o) {
    free(o->authority);
    free(o->path);
}

static bool has_dotdot(const char *path) {
    for (const char *p = path; (p = strstr(p, "..")); p += 2)
        if ((p == path || p[-1] == '/') && (p[2] == '\0' || p[2] == '/')) return true;
    return false;
}

/* "key=value" for a config key, "--flag value" for a flag. */
#define KV(key) (key), (key)[0] == '-' ? " " : "="

static int parse_one(const char *key, const char *v, bool bare_is_hdfs, one *o, tony_error *err) {
    memset(o, 0, sizeof *o);
    const char *colon = strstr(v, "://");
    if (colon && strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789+.-") == (size_t)(colon - v)) {
        size_t slen = (size_t)(colon - v);
        const char *rest = colon + 3, *slash = strchr(rest, '/');
        if (slen == 4 && strncmp(v, "file", 4) == 0) {
            if (rest[0] != '/')
                return tony_err(err, "%s%s%s: a file URI names this machine's disk, file:///absolute/path", KV(key), v);
            o->fs = TONY_HISTLOC_LOCAL;
            o->path = tony_strdup(rest);
            o->authority = tony_strdup("");
            return 0;
        }
        if (!((slen == 4 && strncmp(v, "hdfs", 4) == 0) || (slen == 7 && strncmp(v, "webhdfs", 7) == 0)))
            return tony_err(err, "%s%s%s: history can be on HDFS (hdfs://NAMENODE/path, webhdfs://NAMENODE:HTTP_PORT/path, "
                                 "or a bare /path on YARN) or on disk (file:///path), not %.*s://",
                            KV(key), v, (int)slen, v);
        o->fs = v[0] == 'w' ? TONY_HISTLOC_WEBHDFS : TONY_HISTLOC_HDFS;
        if (!slash || !slash[1])
            return tony_err(err, "%s%s%s: no directory after the NameNode; write %.*s://%.*s/path/to/history", KV(key), v,
                            (int)slen, v, (int)(slash ? slash - rest : (long)strlen(rest)), rest);
        if (o->fs == TONY_HISTLOC_WEBHDFS && slash == rest)
            return tony_err(err, "%s%s%s: webhdfs:// needs the NameNode's web address, webhdfs://HOST:PORT/path", KV(key), v);
        o->authority = tony_sprintf("%.*s", (int)(slash - rest), rest);
        o->path = tony_strdup(slash);
    } else if (bare_is_hdfs) {
        if (v[0] != '/')
            return tony_err(err, "%s%s%s: a history path on HDFS must be absolute (/path, or hdfs://NAMENODE/path)",
                            KV(key), v);
        o->fs = TONY_HISTLOC_HDFS;
        o->authority = tony_strdup("");
        o->path = tony_strdup(v);
    } else {
        o->fs = TONY_HISTLOC_LOCAL;
        o->authority = tony_strdup("");
        o->path = tony_strdup(v);
    }
    /* Trailing slashes would double up when dirs are joined below. */
    for (size_t n = strlen(o->path); n > 1 && o->path[n - 1] == '/'; n--) o->path[n - 1] = '\0';
    if (o->fs != TONY_HISTLOC_LOCAL && has_dotdot(o->path))
        return tony_err(err, "%s%s%s: '..' is not allowed in a path on HDFS", KV(key), v);
    return 0;
}

bool tony_histloc_configured(const char *v) { return v && *v && !tony_str_starts_with(v, "/path/to/"); }

static const char *fs_name(const one *o) {
    return o->fs == TONY_HISTLOC_LOCAL ? "local disk" : o->fs == TONY_HISTLOC_HDFS ? "hdfs" : "webhdfs";
}

int tony_histloc_resolve(const char *location, const char *intermediate, const char *finished, const char *location_key,
                         bool bare_is_hdfs, const char *local_root, tony_histloc *out, tony_error *err) {
    memset(out, 0, sizeof *out);
    one loc = {0}, parts[2] = {{0}, {0}};
    const char *keys[2] = {"tony.history.intermediate", "tony.history.finished"};
    const char *vals[2] = {intermediate, finished}, *subdirs[2] = {"intermediate", "finished"};
    int rc = 0;
    if (tony_histloc_configured(location)) {
        rc = parse_one(location_key, location, bare_is_hdfs, &loc, err);
    } else {
        loc.fs = TONY_HISTLOC_LOCAL;
        loc.authority = tony_strdup("");
        loc.path = tony_path_join(local_root, "history");
    }
    for (int i = 0; i < 2 && rc == 0; i++) {
        if (tony_histloc_configured(vals[i])) {
            rc = parse_one(keys[i], vals[i], bare_is_hdfs, &parts[i], err);
        } else {
            parts[i].fs = loc.fs;
            parts[i].authority = tony_strdup(loc.authority);
            parts[i].path = tony_path_join(loc.path, subdirs[i]);
        }
    }
    if (rc == 0 && (parts[0].fs != parts[1].fs || strcmp(parts[0].authority, parts[1].authority) != 0))
        rc = tony_err(err, "tony.history.intermediate (%s%s%s) and tony.history.finished (%s%s%s) must be on one file "
                           "system: a finished job's directory is moved from one to the other",
                      fs_name(&parts[0]), *parts[0].authority ? " " : "", parts[0].authority, fs_name(&parts[1]),
                      *parts[1].authority ? " " : "", parts[1].authority);
    if (rc == 0) {
        out->fs = parts[0].fs;
        out->authority = parts[0].authority;
        parts[0].authority = NULL;
        out->dirs.location = loc.path;
        loc.path = NULL;
        out->dirs.intermediate = parts[0].path;
        out->dirs.finished = parts[1].path;
        parts[0].path = parts[1].path = NULL;
    }
    one_free(&loc);
    one_free(&parts[0]);
    one_free(&parts[1]);
    return rc;
}

void tony_histloc_free(tony_histloc *l) {
    if (!l) return;
    free(l->authority);
    tony_jhist_dirs_free(&l->dirs);
    memset(l, 0, sizeof *l);
}

char *tony_histloc_uri(const tony_histloc *l, const char *path) {
    if (l->fs == TONY_HISTLOC_LOCAL) return tony_strdup(path);
    return tony_sprintf("%s://%s%s", l->fs == TONY_HISTLOC_HDFS ? "hdfs" : "webhdfs", l->authority, path);
}
