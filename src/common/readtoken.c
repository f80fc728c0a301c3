/* The job's read token and the check of a GET against it (readtoken.h):
 * shared by the coordinator's API and the history portal, and derived on
 * the client's side from the job's secret. */
#include "common/readtoken.h"

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include "common/amapi.h"
#include "common/apiauth.h"
#include "common/httpreply.h"
#include "common/strv.h"

/* A label of its own: the token is the secret's HMAC over it, so knowing
 * the token tells nothing of the secret (which signs state changes). */
#define READ_TOKEN_LABEL "tony read token v1"

char *tony_read_token(const char *secret) {
    char *hex = tony_xmalloc(2 * 32 + 1);
    tony_apiauth_derive_hex(secret, READ_TOKEN_LABEL, hex);
    return hex;
}

bool tony_read_token_equal(const char *token, const char *s, size_t len) {
    return token && s && len == strlen(token) && CRYPTO_memcmp(s, token, len) == 0;
}

/* The request's header or cookie holds the token. */
static bool carries_token(const tony_read_gate *g, struct evhttp_request *req) {
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *v = evhttp_find_header(in, "Authorization");
    if (v && strncasecmp(v, "Bearer ", 7) == 0 && tony_read_token_equal(g->token, v + 7, strlen(v + 7))) return true;
    v = evhttp_find_header(in, AM_API_TOKEN_HEADER);
    if (v && tony_read_token_equal(g->token, v, strlen(v))) return true;
    size_t cn = strlen(g->cookie);
    for (struct evkeyval *h = in->tqh_first; h; h = h->next.tqe_next) {
        if (strcasecmp(h->key, "Cookie") != 0) continue;
        for (const char *c = h->value; c && *c;) {
            while (*c == ' ' || *c == ';') c++;
            size_t n = strcspn(c, ";");
            if (n > cn && strncmp(c, g->cookie, cn) == 0 && c[cn] == '=' &&
                tony_read_token_equal(g->token, c + cn + 1, n - cn - 1))
                return true;
            c += n;
        }
    }
    return false;
}

static void put_without_token(tony_buf *b, const struct evkeyvalq *q) {
    const char *sep = "";
    for (const struct evkeyval *kv = q->tqh_first; kv; kv = kv->next.tqe_next) {
        if (strcmp(kv->key, AM_API_TOKEN_PARAM) == 0) continue;
        char *k = evhttp_encode_uri(kv->key), *v = evhttp_encode_uri(kv->value);
        tony_buf_printf(b, "%s%s=%s", sep, k, v);
        free(k);
        free(v);
        sep = "&";
    }
}

char *tony_read_query_without_token(const char *query) {
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    tony_buf b = {0};
    tony_buf_puts(&b, "");
    if (query && evhttp_parse_query_str(query, &q) == 0) put_without_token(&b, &q);
    evhttp_clear_headers(&q);
    return b.data;
}

/* path?<q without the token>, relative to path (./<its last segment>):
 * where the link's redirect goes, under whatever prefix a reverse proxy
 * serves the page. */
static char *without_token(const char *path, const struct evkeyvalq *q) {
    tony_buf b = {0};
    const char *last = strrchr(path, '/');
    tony_buf_printf(&b, "./%s?", last ? last + 1 : path);
    put_without_token(&b, q);
    if (b.data[b.len - 1] == '?') b.data[--b.len] = '\0';
    return b.data;
}

tony_read_verdict tony_read_check(const tony_read_gate *g, struct evhttp_request *req, const char *path,
                                  const struct evkeyvalq *q) {
    if (!g->token || !g->cookie) return TONY_READ_REFUSED; /* no token to compare with: nothing opens */
    if (carries_token(g, req)) return TONY_READ_ALLOWED;
    const char *t = q ? evhttp_find_header(q, AM_API_TOKEN_PARAM) : NULL;
    if (!t || !tony_read_token_equal(g->token, t, strlen(t))) return TONY_READ_REFUSED;
    if (g->redirects && !g->redirects(path)) return TONY_READ_ALLOWED;
    /* The browser keeps the token in a cookie that scripts cannot read nor
     * other sites send, and the address bar (history, a shared screen)
     * loses it. */
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    char *cookie = tony_sprintf("%s=%s; Path=/; HttpOnly; SameSite=Strict", g->cookie, g->token);
    char *to = without_token(path, q);
    evhttp_add_header(out, "Set-Cookie", cookie);
    evhttp_add_header(out, "Location", to);
    evhttp_add_header(out, "Cache-Control", "no-store");
    evhttp_send_reply(req, 302, tony_http_reason(302), NULL);
    free(to);
    free(cookie);
    return TONY_READ_ANSWERED;
}
