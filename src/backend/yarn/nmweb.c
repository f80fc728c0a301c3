/* Links to and reads of container logs through a NodeManager's web service.
 * The NodeManager's log REST wraps the bytes in a text header (which file,
 * its length) and footer; reading a range means choosing a head or tail
 * size and locating the bytes by the length the header states. */
#include "backend/yarn/nmweb.h"

#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/strv.h"

/* Host names, container ids and user names are plain: refusing anything else
 * keeps a link from being bent into another URL. */
static bool plain(const char *s, const char *extra) {
    if (!s || !*s) return false;
    for (const char *p = s; *p; p++) {
        bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                  strchr(extra, *p) != NULL;
        if (!ok) return false;
    }
    return true;
}

static bool valid_port(const char *s, long long *port) {
    return s && *s && strspn(s, "0123456789") == strlen(s) && strlen(s) <= 5 && tony_parse_ll(s, port) && *port > 0 &&
           *port <= 65535;
}

char *tony_nmweb_log_link(const char *nm_host, const char *nm_http_port, const char *container, const char *user) {
    long long port;
    if (!valid_port(nm_http_port, &port) || !plain(nm_host, ".-") || !plain(container, "_") ||
        !plain(user, "._-@$"))
        return NULL;
    return tony_sprintf("http://%s:%lld/node/containerlogs/%s/%s", nm_host, port, container, user);
}

char *tony_nmweb_container_log_link(const char *node_http_address, const char *container) {
    const char *colon = node_http_address ? strrchr(node_http_address, ':') : NULL;
    if (!colon) return NULL;
    /* The NodeManager sets USER to the application's owner; the process's
     * own user is the same with the default container executor. */
    const char *user = getenv("USER");
    struct passwd *pw = (!user || !*user) ? getpwuid(getuid()) : NULL;
    if (pw) user = pw->pw_name;
    char *host = tony_sprintf("%.*s", (int)(colon - node_http_address), node_http_address);
    char *link = tony_nmweb_log_link(host, colon + 1, container, user);
    free(host);
    return link;
}

int tony_nmweb_parse_link(const char *link, char **base, char **container, tony_error *err) {
    static const char scheme[] = "http://", path[] = "/node/containerlogs/";
    *base = *container = NULL;
    if (!link || !tony_str_starts_with(link, scheme))
        return tony_err(err, "'%s' is not a NodeManager log link (http://HOST:PORT%sCONTAINER/USER)",
                        link ? link : "", path);
    const char *host = link + strlen(scheme), *p = strstr(host, path);
    const char *colon = p ? memchr(host, ':', (size_t)(p - host)) : NULL;
    if (!p || !colon || colon == host)
        return tony_err(err, "'%s' is not a NodeManager log link (http://HOST:PORT%sCONTAINER/USER)", link, path);
    char *h = tony_sprintf("%.*s", (int)(colon - host), host);
    char *port = tony_sprintf("%.*s", (int)(p - colon - 1), colon + 1);
    const char *cid = p + strlen(path), *slash = strchr(cid, '/');
    char *c = tony_sprintf("%.*s", slash ? (int)(slash - cid) : (int)strlen(cid), cid);
    long long n;
    int rc = 0;
    if (!valid_port(port, &n)) {
        rc = tony_err(err, "the log link %s names no web port (the node's web UI is off: port '%s')", link, port);
    } else if (!plain(h, ".-") || !plain(c, "_")) {
        rc = tony_err(err, "the log link %s has an unexpected host or container id", link);
    } else {
        *base = tony_sprintf("http://%s:%lld", h, n);
        *container = c;
        c = NULL;
    }
    free(h);
    free(port);
    free(c);
    return rc;
}

char *tony_nmweb_file_url(const char *base, const char *container, const char *file, long long size) {
    if (size == 0) return tony_sprintf("%s/ws/v1/node/containerlogs/%s/%s", base, container, file);
    return tony_sprintf("%s/ws/v1/node/containerlogs/%s/%s?size=%lld", base, container, file, size);
}

long long tony_nmweb_first_size(long long offset, long long chunk) { return offset <= 0 ? chunk : -2 * chunk; }

/* The value of "\nKEY" up to the end of its line, within body. */
static const char *header_line(const char *body, size_t len, const char *key, size_t *vlen) {
    size_t klen = strlen(key);
    for (size_t i = 0; i + klen <= len; i++) {
        if ((i == 0 || body[i - 1] == '\n') && memcmp(body + i, key, klen) == 0) {
            const char *v = body + i + klen, *nl = memchr(v, '\n', len - (size_t)(v - body));
            if (!nl) return NULL;
            *vlen = (size_t)(nl - v);
            return v;
        }
    }
    return NULL;
}

int tony_nmweb_parse_log(const char *body, size_t body_len, long long req_size, tony_nmweb_log *out,
                         tony_error *err) {
    memset(out, 0, sizeof *out);
    size_t vlen = 0, clen = 0;
    const char *v = header_line(body, body_len, "LogLength:", &vlen);
    const char *contents = header_line(body, body_len, "LogContents:", &clen);
    char num[24];
    long long file_len = -1;
    if (v && vlen > 0 && vlen < sizeof num) {
        memcpy(num, v, vlen);
        num[vlen] = '\0';
        if (!tony_parse_ll(num, &file_len)) file_len = -1;
    }
    static const char footer[] = "End of LogType:";
    /* Hadoop 3.2's NodeManager answers an empty file with the footer alone
     * (3.3 and later with the header, LogLength:0). */
    if (!v && !contents && body_len >= sizeof footer - 1 && memcmp(body, footer, sizeof footer - 1) == 0) {
        out->data = body;
        return 0;
    }
    if (file_len < 0 || !contents || clen != 0)
        return tony_err(err, "the NodeManager's log answer has no LogLength/LogContents header (is it Hadoop 2.8+?)");
    const char *data = contents + 1; /* past the header line's newline */
    long long want = req_size == 0 ? file_len : req_size > 0 ? req_size : -req_size;
    if (want > file_len) want = file_len;
    size_t have = body_len - (size_t)(data - body);
    /* The footer right after the bytes proves the length was read right. */
    if ((long long)have < want || (have - (size_t)want >= sizeof footer - 1 &&
                                   memcmp(data + want, footer, sizeof footer - 1) != 0))
        return tony_err(err, "the NodeManager's log answer is cut short or malformed (%zu bytes for a %lld-byte read)",
                        have, want);
    out->file_len = file_len;
    out->start = req_size < 0 ? file_len - want : 0;
    out->data = data;
    out->len = (size_t)want;
    return 0;
}

int tony_nmweb_slice(const tony_nmweb_log *log, long long offset, long long chunk, size_t *from, size_t *n) {
    *from = *n = 0;
    if (offset > log->file_len) return -1;
    if (offset < log->start) return 1;
    long long f = offset - log->start, left = (long long)log->len - f;
    if (left < 0) return 1; /* the answer did not reach offset: cannot happen with a well-formed one */
    *from = (size_t)f;
    *n = (size_t)(left < chunk ? left : chunk);
    return 0;
}
