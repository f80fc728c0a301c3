/* Growable string lists and string helpers shared by every module. A tony_strv
 * owns its strings; a zeroed tony_strv is a valid empty list. */
#ifndef TONY_STRV_H
#define TONY_STRV_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tony_strv {
    char **items; /* always NULL-terminated when len > 0 (usable as argv) */
    size_t len;
    size_t cap;
} tony_strv;

void tony_strv_push(tony_strv *v, const char *s);
void tony_strv_pushf(tony_strv *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tony_strv_free(tony_strv *v);
int tony_strv_index(const tony_strv *v, const char *s); /* -1 if absent */
bool tony_strv_contains(const tony_strv *v, const char *s);
void tony_strv_sort(tony_strv *v);
/* Joins with sep into a new string (caller frees). */
char *tony_strv_join(const tony_strv *v, const char *sep);

/* Appends to out the comma-separated entries of s, trimmed, skipping empty
 * ones (TonY tolerates "a,,b"). s may be NULL. */
void tony_split_csv(const char *s, tony_strv *out);

/* malloc'ed printf; aborts on out-of-memory like the other allocators here. */
char *tony_sprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *tony_strdup(const char *s); /* NULL-safe */
void *tony_xmalloc(size_t n);
void *tony_xcalloc(size_t n, size_t size);
void *tony_xrealloc(void *p, size_t n);
/* Trims ASCII whitespace in place and returns s. */
char *tony_trim(char *s);
bool tony_str_starts_with(const char *s, const char *prefix);
bool tony_str_ends_with(const char *s, const char *suffix);
/* Case-insensitive Levenshtein distance, for "did you mean" suggestions. */
size_t tony_edit_distance(const char *a, const char *b);
/* Sleeps ms milliseconds (a signal may cut it short, which callers want). */
void tony_sleep_ms(long long ms);
/* Parses a whole string as a base-10 integer; false on junk or overflow. */
bool tony_parse_ll(const char *s, long long *out);

/* Base64 of len bytes (malloc'ed): the standard alphabet with '=' padding,
 * or url_safe ('-', '_', no padding) as Hadoop's URL-string encodings. */
char *tony_base64_encode(const void *data, size_t len, bool url_safe);

/* Appends to out the bytes that len characters of base64 stand for, in
 * either alphabet, padded or not; -1 (out partly filled) on a character of
 * neither or a length no encoding gives. */
struct tony_buf;
int tony_base64_decode(const char *s, size_t len, struct tony_buf *out);

/* A growable byte/char buffer, always NUL-terminated. */
typedef struct tony_buf {
    char *data;
    size_t len;
    size_t cap;
} tony_buf;
void tony_buf_append(tony_buf *b, const char *s, size_t n);
void tony_buf_puts(tony_buf *b, const char *s);
void tony_buf_printf(tony_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tony_buf_free(tony_buf *b);

/* A copy of the n bytes at s as valid UTF-8 (malloc'ed, NUL-terminated):
 * bytes that are not UTF-8, and NULs, become U+FFFD. A sequence cut short
 * by the end of the bytes is left out, for a later read to complete, so
 * *used (how many input bytes the copy stands for) may be up to 3 less
 * than n. */
char *tony_utf8_sanitize(const char *s, size_t n, size_t *used);
/* The offset of the first byte of the string s that is not text an XML
 * file can carry: not UTF-8 (or cut short), or a control character other
 * than tab, newline and carriage return. -1 when there is none. */
long tony_text_bad_byte(const char *s);
/* FNV-1a, 64 bits: a cheap fingerprint (ETags), not for security. */
unsigned long long tony_hash64(const void *data, size_t n);

#endif
