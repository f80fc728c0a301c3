/* libcurl easy handles. A thread's plain calls (the executor's heartbeats,
 * its watch long poll, the CLI's reads) share one kept handle, so that they
 * reuse its connection: a new TCP connection per heartbeat was most of the
 * coordinator's cost per heartbeat at scale (bench/REPORT.md). Calls with
 * the job's secret are signed, and their answers checked, with
 * common/apiauth.h. */
#include "common/http.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "common/amapi.h"
#include "common/apiauth.h"
#include "common/clock.h"
#include "common/fs.h"
#include "common/strv.h"

static size_t collect(char *data, size_t size, size_t nmemb, void *userp) {
    tony_buf_append(userp, data, size * nmemb);
    return size * nmemb;
}

/* The CA bundle for HTTPS: $SSL_CERT_FILE when set; else libcurl's own,
 * which knows only the path of the system it was built on (Debian's), so
 * the self-contained tony looks where other distributions keep theirs. */
static const char *ca_file;

const char *tony_http_pick_ca_file(const char *builtin, const char *const *others) {
    if (!builtin || access(builtin, R_OK) == 0) return NULL;
    for (size_t i = 0; others[i]; i++)
        if (access(others[i], R_OK) == 0) return others[i];
    return NULL;
}

static void init_once(void) {
    static int curl_ready = 0;
    if (!curl_ready) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        static const char *const elsewhere[] = {
            "/etc/pki/tls/certs/ca-bundle.crt",                  /* RHEL, Fedora, Amazon Linux */
            "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", /* RHEL 7+ */
            "/etc/ssl/ca-bundle.pem",                            /* SUSE */
            "/etc/ssl/cert.pem",                                 /* Alpine */
            "/etc/ssl/certs/ca-certificates.crt",                /* Debian, Ubuntu */
            NULL};
        /* OpenSSL's own variable names the bundle outright (a cluster whose
         * HTTPS endpoints use a private CA). */
        const char *env = getenv("SSL_CERT_FILE");
        ca_file = env && *env ? env : tony_http_pick_ca_file(curl_version_info(CURLVERSION_NOW)->cainfo, elsewhere);
        curl_ready = 1;
    }
}

static CURL *new_handle(void) {
    init_once();
    CURL *h = curl_easy_init();
    if (h && ca_file) curl_easy_setopt(h, CURLOPT_CAINFO, ca_file);
    return h;
}

/* This thread's kept handle (libcurl's handles are not to be shared by
 * threads: the executor's watch thread gets its own). The key only frees it
 * when its thread ends; the thread-local copy is how it is found. */
static _Thread_local CURL *kept;
static pthread_key_t kept_key;
static pthread_once_t kept_key_once = PTHREAD_ONCE_INIT;

static void free_kept(void *h) { curl_easy_cleanup(h); }
static void make_kept_key(void) { pthread_key_create(&kept_key, free_kept); }

/* The kept handle, its options back to the defaults: curl_easy_reset keeps
 * its open connections, which libcurl checks before reusing one, and a
 * request that finds its reused connection closed by the server (idle
 * timeout, a restarted coordinator) is sent again on a new one. */
static CURL *kept_handle(void) {
    if (kept) {
        curl_easy_reset(kept);
        if (ca_file) curl_easy_setopt(kept, CURLOPT_CAINFO, ca_file);
        return kept;
    }
    pthread_once(&kept_key_once, make_kept_key);
    kept = new_handle();
    if (kept) pthread_setspecific(kept_key, kept);
    return kept;
}

/* libcurl's words for a failed call, and for a certificate it could not
 * verify what to do: a cluster whose HTTPS certificates come from a
 * private CA needs that CA's PEM bundle in SSL_CERT_FILE. */
static int call_failed(tony_error *err, const char *method, const char *url, CURLcode rc) {
    bool certificate = rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
                       rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_ISSUER_ERROR;
    const char *ca = getenv("SSL_CERT_FILE");
    if (!certificate) return tony_err(err, "%s %s: %s", method, url, curl_easy_strerror(rc));
    if (ca && *ca)
        return tony_err(err, "%s %s: %s (with the CA bundle SSL_CERT_FILE=%s: does it hold the CA that signed "
                             "this server's certificate?)", method, url, curl_easy_strerror(rc), ca);
    return tony_err(err, "%s %s: %s (a server whose certificate comes from a private CA needs that CA's PEM "
                         "bundle in SSL_CERT_FILE, e.g. export SSL_CERT_FILE=/etc/hadoop/ca.pem)",
                    method, url, curl_easy_strerror(rc));
}

/* Runs a prepared request whose body collects into out; on success the
 * response takes out's bytes, else out is freed and err names the call. */
static int perform(CURL *h, const char *method, const char *url, tony_buf *out, tony_http_response *resp,
                   tony_error *err) {
    CURLcode rc = curl_easy_perform(h);
    if (rc != CURLE_OK) {
        tony_buf_free(out);
        return call_failed(err, method, url, rc);
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
    resp->body = out->data;
    resp->len = out->len;
    return 0;
}

/* The value of the cookie called name that the server set, as "name=value"
 * (malloc'ed), or NULL. */
static char *cookie_set(CURL *h, const char *name) {
    struct curl_slist *list = NULL;
    char *found = NULL;
    if (curl_easy_getinfo(h, CURLINFO_COOKIELIST, &list) != CURLE_OK) return NULL;
    for (struct curl_slist *c = list; c && !found; c = c->next) {
        /* Netscape format: domain, flag, path, secure, expiry, name, value */
        const char *f = c->data;
        for (int i = 0; i < 5 && f; i++) {
            f = strchr(f, '\t');
            if (f) f++;
        }
        const char *tab = f ? strchr(f, '\t') : NULL;
        if (tab && (size_t)(tab - f) == strlen(name) && strncmp(f, name, (size_t)(tab - f)) == 0)
            found = tony_sprintf("%s=%s", name, tab + 1);
    }
    curl_slist_free_all(list);
    return found;
}

/* What a header callback keeps: the value of the reply's signature header,
 * of the last response (a 100 Continue's headers come first). */
typedef struct reply_headers {
    char *sig;
} reply_headers;

static size_t on_header(char *data, size_t size, size_t nmemb, void *userp) {
    reply_headers *h = userp;
    size_t n = size * nmemb;
    static const char name[] = TONY_APIAUTH_REPLY_HEADER ":";
    if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
        free(h->sig);
        h->sig = NULL;
    } else if (n > strlen(name) && strncasecmp(data, name, strlen(name)) == 0) {
        const char *v = data + strlen(name);
        size_t len = n - strlen(name);
        while (len && (*v == ' ' || *v == '\t')) v++, len--;
        while (len && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' ')) len--;
        free(h->sig);
        h->sig = strndup(v, len);
    }
    return n;
}

/* The URL's host[:port] (what the Host header says) and its target (path
 * and query): both are signed, so both are sent as computed here. */
static void split_url(const char *url, char **authority, char **target) {
    const char *a = strstr(url, "://");
    a = a ? a + 3 : url;
    size_t alen = strcspn(a, "/?#");
    *authority = strndup(a, alen);
    const char *t = a + alen;
    size_t tlen = strcspn(t, "#");
    *target = tlen == 0 ? tony_strdup("/") : *t == '?' ? tony_sprintf("/%.*s", (int)tlen, t) : strndup(t, tlen);
}

/* This process's clock as the coordinator sees it (apiauth.h); the
 * executor's watch thread calls too. */
static tony_apiauth_clock auth_clock;
static pthread_mutex_t auth_clock_lock = PTHREAD_MUTEX_INITIALIZER;

static long long next_ts(void) {
    pthread_mutex_lock(&auth_clock_lock);
    long long ts = tony_apiauth_clock_next(&auth_clock, tony_wall_ms());
    pthread_mutex_unlock(&auth_clock_lock);
    return ts;
}

/* A signed 403 about our clock or a replay (apiauth.h): the clock is set by
 * the coordinator's and true is returned (worth one more try). */
static bool corrected_clock(const tony_http_response *r) {
    if (r->status != 403) return false;
    json_t *j = json_loadb(r->body, r->len, 0, NULL);
    const char *why = json_string_value(json_object_get(j, TONY_APIAUTH_REFUSED));
    json_t *now = json_object_get(j, TONY_APIAUTH_NOW_MS);
    bool fix = why && json_is_integer(now) &&
               (strcmp(why, TONY_APIAUTH_CLOCK) == 0 || strcmp(why, TONY_APIAUTH_REPLAY) == 0);
    if (fix) {
        pthread_mutex_lock(&auth_clock_lock);
        tony_apiauth_clock_correct(&auth_clock, tony_wall_ms(), json_integer_value(now),
                                   json_integer_value(json_object_get(j, TONY_APIAUTH_FLOOR_MS)));
        pthread_mutex_unlock(&auth_clock_lock);
    }
    json_decref(j);
    return fix;
}

static int call_once(const char *method, const char *url, const tony_apiauth_key *key, const char *read_token,
                     const char *body, long timeout_ms, bool negotiate, const char *cookie_name, char **cookie,
                     tony_http_response *resp, tony_error *err) {
    resp->status = 0;
    resp->body = NULL;
    resp->len = 0;
    resp->unsigned_answer = false;
    /* SPNEGO and cookie logins keep state per connection and per handle:
     * those get a handle of their own. */
    bool keep = !negotiate && !cookie_name;
    CURL *h = keep ? kept_handle() : new_handle();
    if (!h) return tony_err(err, "cannot create an HTTP handle");
    tony_buf out = {0};
    tony_buf_puts(&out, "");
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    char *auth = NULL, *host = NULL, *authority = NULL, *target = NULL;
    tony_apiauth_request signed_req;
    reply_headers rh = {0};
    if (key) {
        split_url(url, &authority, &target);
        const char *b = body ? body : "";
        if (tony_apiauth_sign_request(key, method, authority, target, b, strlen(b), next_ts(), &signed_req)) {
            curl_slist_free_all(headers);
            if (!keep) curl_easy_cleanup(h);
            tony_buf_free(&out);
            free(authority), free(target);
            return tony_err(err, "%s %s: OpenSSL could not produce random bytes to sign the call", method, url);
        }
        host = tony_sprintf("Host: %s", authority);
        auth = tony_sprintf("%s: %s", TONY_APIAUTH_HEADER, signed_req.header);
        headers = curl_slist_append(headers, host);
        headers = curl_slist_append(headers, auth);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, &rh);
        /* the signed target is sent as it is */
        curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 3000 ? timeout_ms : 3000);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    if (negotiate) {
        /* Answer the server's 401 "Negotiate" with a Kerberos service ticket;
         * the empty user makes libcurl take the ticket cache's identity. */
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_NEGOTIATE);
        curl_easy_setopt(h, CURLOPT_USERPWD, ":");
    }
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    } else if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
    }
    if (cookie_name) curl_easy_setopt(h, CURLOPT_COOKIEFILE, ""); /* the cookie engine, in memory */
    char *read_auth = NULL;
    if (read_token) {
        read_auth = tony_sprintf("%s: %s", AM_API_TOKEN_HEADER, read_token);
        headers = curl_slist_append(headers, read_auth);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    }
    int ret = perform(h, method, url, &out, resp, err);
    if (ret == 0 && cookie_name) *cookie = cookie_set(h, cookie_name);
    if (ret == 0 && key && !tony_apiauth_reply_ok(key, signed_req.nonce, resp->status, resp->body, resp->len, rh.sig)) {
        /* Nothing of it is acted on, not even its status. */
        ret = tony_err(err, "the answer (HTTP %ld) from %s is not signed by the job's coordinator (%s; a process that "
                            "took over its port?)",
                       resp->status, authority,
                       rh.sig ? "a wrong " TONY_APIAUTH_REPLY_HEADER : "no " TONY_APIAUTH_REPLY_HEADER);
        tony_http_response_free(resp);
        resp->status = 0;
        resp->len = 0;
        resp->unsigned_answer = true;
    }
    curl_slist_free_all(headers);
    free(auth), free(read_auth), free(host), free(authority), free(target), free(rh.sig);
    if (keep) curl_easy_reset(h); /* nothing in it points at what was just freed */
    else curl_easy_cleanup(h);
    return ret;
}

static int call(const char *method, const char *url, const char *secret, const char *read_token, const char *body,
                long timeout_ms, bool negotiate, const char *cookie_name, char **cookie, tony_http_response *resp,
                tony_error *err) {
    if (!secret)
        return call_once(method, url, NULL, read_token, body, timeout_ms, negotiate, cookie_name, cookie, resp, err);
    tony_apiauth_key key;
    tony_apiauth_key_from_secret(secret, &key);
    int rc = call_once(method, url, &key, read_token, body, timeout_ms, negotiate, cookie_name, cookie, resp, err);
    if (rc == 0 && corrected_clock(resp)) {
        tony_http_response_free(resp);
        rc = call_once(method, url, &key, read_token, body, timeout_ms, negotiate, cookie_name, cookie, resp, err);
    }
    OPENSSL_cleanse(&key, sizeof key);
    return rc;
}

int tony_http_call(const char *method, const char *url, const char *secret, const char *body, long timeout_ms,
                   tony_http_response *resp, tony_error *err) {
    return call(method, url, secret, NULL, body, timeout_ms, false, NULL, NULL, resp, err);
}

int tony_http_read(const char *url, const char *read_token, long timeout_ms, tony_http_response *resp,
                   tony_error *err) {
    return call("GET", url, NULL, read_token, NULL, timeout_ms, false, NULL, NULL, resp, err);
}

int tony_http_call_negotiate(const char *method, const char *url, const char *body, long timeout_ms,
                             tony_http_response *resp, tony_error *err) {
    return call(method, url, NULL, NULL, body, timeout_ms, true, NULL, NULL, resp, err);
}

int tony_http_spnego_cookie(const char *url, const char *name, long timeout_ms, char **cookie, tony_error *err) {
    tony_http_response r;
    *cookie = NULL;
    if (call("GET", url, NULL, NULL, NULL, timeout_ms, true, name, cookie, &r, err)) return -1;
    int rc = 0;
    if (r.status == 200 && !*cookie) {
        rc = tony_err(err, "GET %s with SPNEGO: the server set no %s cookie", url, name);
    } else if (r.status != 200) {
        rc = tony_err(err, "GET %s with SPNEGO: HTTP %ld%s", url, r.status,
                      r.status == 401 || r.status == 403 ? " (Kerberos refused)" : "");
        free(*cookie);
        *cookie = NULL;
    }
    tony_http_response_free(&r);
    return rc;
}

/* A file transfer has no overall limit (files can be large): it fails when
 * it moves nothing for stall_s, or cannot connect within that (10 s at most). */
static void transfer_limits(CURL *h, long stall_s) {
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, stall_s < 10 ? stall_s * 1000 : 10000L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, stall_s);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
}

int tony_http_put_file(const char *url, const char *path, long stall_s, long max_s, tony_http_response *resp,
                       tony_error *err) {
    resp->status = 0;
    resp->body = NULL;
    resp->len = 0;
    resp->unsigned_answer = false;
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        int e = errno;
        if (f) fclose(f);
        return tony_err(err, "cannot read %s: %s", path, strerror(e));
    }
    CURL *h = new_handle();
    if (!h) {
        fclose(f);
        return tony_err(err, "cannot create an HTTP handle");
    }
    tony_buf out = {0};
    tony_buf_puts(&out, "");
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/octet-stream");
    /* Without this curl waits a second for a 100-continue that WebHDFS
     * does not send. */
    headers = curl_slist_append(headers, "Expect:");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READDATA, f);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
    transfer_limits(h, stall_s);
    if (max_s > 0) curl_easy_setopt(h, CURLOPT_TIMEOUT, max_s);
    int ret = perform(h, "PUT", url, &out, resp, err);
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
    fclose(f);
    return ret;
}

int tony_http_get_file(const char *url, const char *path, long stall_s, long *status, tony_error *err) {
    *status = 0;
    FILE *f = fopen(path, "wbe");
    if (!f) return tony_err(err, "cannot write %s: %s", path, strerror(errno));
    CURL *h = new_handle();
    if (!h) {
        fclose(f);
        return tony_err(err, "cannot create an HTTP handle");
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, f);
    transfer_limits(h, stall_s);
    CURLcode rc = curl_easy_perform(h);
    if (rc == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(h);
    bool closed = fclose(f) == 0;
    if (rc != CURLE_OK) return call_failed(err, "GET", url, rc);
    if (!closed) return tony_err(err, "cannot write %s: %s", path, strerror(errno));
    if (*status != 200) {
        /* The body is the server's complaint, not the file. */
        char *body = NULL;
        size_t n = 0;
        tony_read_file(path, &body, &n, NULL);
        unlink(path);
        int r = tony_err(err, "GET %s: HTTP %ld: %.300s", url, *status, body ? body : "");
        free(body);
        return r;
    }
    return 0;
}

void tony_http_response_free(tony_http_response *r) {
    free(r->body);
    r->body = NULL;
}
