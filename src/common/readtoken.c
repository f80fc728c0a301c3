/* The job's read token and the check of a GET against it (readtoken.h):
 * shared by the coordinator's API, its notebook proxy and the history
 * portal, and derived on the client's side from the job's secret. */
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

bool tony_read_header_has(struct evhttp_request *req, const char *token) {
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *v = evhttp_find_header(in, "Authorization");
    if (v && strncasecmp(v, "Bearer ", 7) == 0 && tony_read_token_equal(token, v + 7, strlen(v + 7))) return true;
    v = evhttp_find_header(in, AM_API_TOKEN_HEADER);
    return v && tony_read_token_equal(token, v, strlen(v));
}

bool tony_read_cookie_has(struct evhttp_request *req, const char *name, const char *value) {
    size_t cn = strlen(name);
    for (struct evkeyval *h = evhttp_request_get_input_headers(req)->tqh_first; h; h = h->next.tqe_next) {
        if (strcasecmp(h->key, "Cookie") != 0) continue;
        for (const char *c = h->value; c && *c;) {
            while (*c == ' ' || *c == ';') c++;
            size_t n = strcspn(c, ";");
            if (n > cn && strncmp(c, name, cn) == 0 && c[cn] == '=' && tony_read_token_equal(value, c + cn + 1, n - cn - 1))
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

void tony_read_redirect(struct evhttp_request *req, const char *path, const char *to_path, const struct evkeyvalq *q,
                        const char *fragment, const char *cookie) {
    tony_buf b = {0};
    if (to_path) {
        tony_buf_printf(&b, "%s?", to_path);
    } else {
        const char *last = strrchr(path, '/');
        tony_buf_printf(&b, "./%s?", last ? last + 1 : path);
    }
    put_without_token(&b, q);
    if (b.data[b.len - 1] == '?') b.data[--b.len] = '\0';
    if (fragment) tony_buf_printf(&b, "#%s", fragment);
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    if (cookie) evhttp_add_header(out, "Set-Cookie", cookie);
    evhttp_add_header(out, "Location", b.data);
    evhttp_add_header(out, "Cache-Control", "no-store");
    /* the link's address (token and all) is not passed on as a Referer */
    evhttp_add_header(out, "Referrer-Policy", "no-referrer");
    evhttp_send_reply(req, 302, tony_http_reason(302), NULL);
    free(b.data);
}

tony_read_verdict tony_read_check(const tony_read_gate *g, struct evhttp_request *req, const char *path,
                                  const struct evkeyvalq *q) {
    if (!g->token) return TONY_READ_REFUSED; /* no token to compare with: nothing opens */
    bool page = g->page && g->page(path);
    const char *t = q ? evhttp_find_header(q, AM_API_TOKEN_PARAM) : NULL;
    bool good = t && tony_read_token_equal(g->token, t, strlen(t));
    if (page && good) {
        /* A link to the page: the token goes on in the fragment, which no
         * browser sends to any server, and the page's script keeps it for
         * its own origin (sessionStorage) and sends it as the header. */
        char *frag = tony_sprintf(AM_API_TOKEN_PARAM "=%s", g->token);
        tony_read_redirect(req, path, NULL, q, frag, NULL);
        free(frag);
        return TONY_READ_ANSWERED;
    }
    if (t && !good) return TONY_READ_REFUSED; /* a wrong token is not taken for none */
    return page || good || tony_read_header_has(req, g->token) ? TONY_READ_ALLOWED : TONY_READ_REFUSED;
}
