/* tony_strv, tony_buf and small string helpers. Allocation failure aborts:
 * a coordinator that cannot allocate a few bytes cannot do anything useful. */
#include "common/strv.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void *tony_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { fputs("tony: out of memory\n", stderr); abort(); }
    return p;
}

void *tony_xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) { fputs("tony: out of memory\n", stderr); abort(); }
    return p;
}

void *tony_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) { fputs("tony: out of memory\n", stderr); abort(); }
    return q;
}

char *tony_strdup(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = tony_xmalloc(n);
    memcpy(d, s, n);
    return d;
}

static char *vsprintf_alloc(const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    char *s = tony_xmalloc((size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *tony_sprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = vsprintf_alloc(fmt, ap);
    va_end(ap);
    return s;
}

static void strv_push_owned(tony_strv *v, char *s) {
    if (v->len + 2 > v->cap) {
        v->cap = v->cap ? v->cap * 2 : 8;
        v->items = tony_xrealloc(v->items, v->cap * sizeof *v->items);
    }
    v->items[v->len++] = s;
    v->items[v->len] = NULL;
}

void tony_strv_push(tony_strv *v, const char *s) { strv_push_owned(v, tony_strdup(s ? s : "")); }

void tony_strv_pushf(tony_strv *v, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    strv_push_owned(v, vsprintf_alloc(fmt, ap));
    va_end(ap);
}

void tony_strv_free(tony_strv *v) {
    for (size_t i = 0; i < v->len; i++) free(v->items[i]);
    free(v->items);
    v->items = NULL;
    v->len = v->cap = 0;
}

int tony_strv_index(const tony_strv *v, const char *s) {
    for (size_t i = 0; i < v->len; i++)
        if (strcmp(v->items[i], s) == 0) return (int)i;
    return -1;
}

bool tony_strv_contains(const tony_strv *v, const char *s) { return tony_strv_index(v, s) >= 0; }

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void tony_strv_sort(tony_strv *v) {
    if (v->len > 1) qsort(v->items, v->len, sizeof *v->items, cmp_str);
}

char *tony_strv_join(const tony_strv *v, const char *sep) {
    tony_buf b = {0};
    tony_buf_puts(&b, "");
    for (size_t i = 0; i < v->len; i++) {
        if (i) tony_buf_puts(&b, sep);
        tony_buf_puts(&b, v->items[i]);
    }
    return b.data;
}

void tony_split_csv(const char *s, tony_strv *out) {
    if (!s) return;
    char *copy = tony_strdup(s), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        tok = tony_trim(tok);
        if (*tok) tony_strv_push(out, tok);
    }
    free(copy);
}

char *tony_trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    return s;
}

bool tony_str_starts_with(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool tony_str_ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

bool tony_parse_ll(const char *s, long long *out) {
    if (!s) return false;
    while (isspace((unsigned char)*s)) s++;
    if (!*s) return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    while (isspace((unsigned char)*end)) end++;
    if (errno || *end) return false;
    *out = v;
    return true;
}

void tony_buf_append(tony_buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1) cap *= 2;
        b->data = tony_xrealloc(b->data, cap);
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void tony_buf_puts(tony_buf *b, const char *s) { tony_buf_append(b, s, strlen(s)); }

void tony_buf_printf(tony_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = vsprintf_alloc(fmt, ap);
    va_end(ap);
    tony_buf_puts(b, s);
    free(s);
}

void tony_buf_free(tony_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

size_t tony_edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    size_t *row = tony_xmalloc((lb + 1) * sizeof *row);
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0]; /* row[i-1][j-1] */
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    size_t d = row[lb];
    free(row);
    return d;
}

void tony_sleep_ms(long long ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

char *tony_base64_encode(const void *data, size_t len, bool url_safe) {
    const char *alphabet = url_safe ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                                    : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = data;
    char *out = tony_xmalloc(4 * ((len + 2) / 3) + 1);
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < len ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < len ? p[i + 2] : 0);
        out[o++] = alphabet[v >> 18 & 63];
        out[o++] = alphabet[v >> 12 & 63];
        if (i + 1 < len) out[o++] = alphabet[v >> 6 & 63];
        else if (!url_safe) out[o++] = '=';
        if (i + 2 < len) out[o++] = alphabet[v & 63];
        else if (!url_safe) out[o++] = '=';
    }
    out[o] = '\0';
    return out;
}

static int base64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
}

int tony_base64_decode(const char *s, size_t len, tony_buf *out) {
    while (len && s[len - 1] == '=') len--;
    if (len % 4 == 1) return -1;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = base64_value((unsigned char)s[i]);
        if (v < 0) return -1;
        acc = (acc << 6 | (unsigned)v) & 0xFFFFFF;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            char c = (char)(acc >> bits & 0xFF);
            tony_buf_append(out, &c, 1);
        }
    }
    return 0;
}

/* Length of the UTF-8 sequence at s (n bytes available): >0 when valid,
 * 0 when it is a valid start cut short by n, -1 when it is not UTF-8. */
static int utf8_seq(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    int len;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c > 0 && c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;       /* overlong */
        if (c == 0xED) hi = 0x9F;       /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;       /* overlong */
        if (c == 0xF4) hi = 0x8F;       /* past U+10FFFF */
    } else return -1;
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n) return 0;
        unsigned char min = i == 1 ? lo : 0x80, max = i == 1 ? hi : 0xBF;
        if (s[i] < min || s[i] > max) return -1;
    }
    return len;
}

char *tony_utf8_sanitize(const char *s, size_t n, size_t *used) {
    const unsigned char *u = (const unsigned char *)s;
    tony_buf out = {0};
    tony_buf_append(&out, "", 0);
    size_t i = 0;
    while (i < n) {
        int len = utf8_seq(u + i, n - i);
        if (len == 0) break;
        if (len < 0) {
            tony_buf_puts(&out, "\xEF\xBF\xBD");
            i++;
        } else {
            tony_buf_append(&out, s + i, (size_t)len);
            i += (size_t)len;
        }
    }
    *used = i;
    return out.data;
}

long tony_text_bad_byte(const char *s) {
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        if (u[i] < 0x20 && u[i] != '\t' && u[i] != '\n' && u[i] != '\r') return (long)i;
        int len = utf8_seq(u + i, n - i);
        if (len <= 0) return (long)i;
        i += (size_t)len;
    }
    return -1;
}

unsigned long long tony_hash64(const void *data, size_t n) {
    const unsigned char *p = data;
    unsigned long long h = 14695981039346656037ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}
