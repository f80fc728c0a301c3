/* A failed task's last words: stderr's tail and torch's error file (see
 * lastwords.h). */
#include "common/lastwords.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/strv.h"

/* The longest error file read: torch's holds one traceback. */
#define TORCH_ERROR_FILE_MAX (1 << 20)

/* Bytes that are not UTF-8 become '?', so that the text goes into JSON
 * (a tail may start inside a character; a script may print anything). */
static void make_utf8(char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        bool ok = len > 0 && i + len <= n && (len != 2 || c >= 0xc2);
        for (size_t k = 1; ok && k < len; k++) ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
        if (c == 0) ok = false; /* a NUL would end the text early */
        if (!ok) {
            s[i++] = '?';
            continue;
        }
        i += len;
    }
}

/* What a terminal would show of s[0..n), in place; returns the new length.
 * A colored traceback or a progress bar writes escape sequences and
 * carriage returns, which would show as garbage on the page and in JSON:
 * CSI (ESC [ ... final byte) and OSC (ESC ] ... BEL or ESC \) sequences
 * and other escapes (ESC, intermediates, a final byte) go, a carriage return starts its line over, other
 * control bytes go (a NUL is left for make_utf8 to show). */
static size_t strip_terminal_codes(char *s, size_t n) {
    size_t out = 0, line = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0x1b && i + 1 < n && s[i + 1] == '[') {
            for (i += 2; i < n && !((unsigned char)s[i] >= 0x40 && (unsigned char)s[i] <= 0x7e); i++) {}
        } else if (c == 0x1b && i + 1 < n && s[i + 1] == ']') {
            for (i += 2; i < n && s[i] != '\a' && !(s[i] == 0x1b && i + 1 < n && s[i + 1] == '\\'); i++) {}
            if (i < n && s[i] == 0x1b) i++;
        } else if (c == 0x1b) {
            /* ESC, its intermediate bytes (ESC ( B) and its final byte */
            for (i++; i + 1 < n && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] <= 0x2f; i++) {}
        } else if (c == '\r' && !(i + 1 < n && s[i + 1] == '\n')) {
            out = line;
        } else if (c == '\n' || c == '\t' || c == 0 || (c >= 0x20 && c != 0x7f)) {
            s[out++] = (char)c;
            if (c == '\n') line = out;
        }
    }
    return out;
}

/* The last `lines` whole lines of text[0..n) that fit in max_bytes, as a
 * new string without trailing blank space; NULL when nothing is left. */
static char *last_lines(const char *text, size_t n, int lines, size_t max_bytes) {
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' ' || text[n - 1] == '\t')) n--;
    if (n == 0) return NULL;
    size_t start = n;
    int seen = 0;
    while (start > 0 && seen < lines) {
        size_t nl = start - 1;
        while (nl > 0 && text[nl - 1] != '\n') nl--;
        if (n - nl > max_bytes) break; /* this line would not fit whole */
        start = nl;
        seen++;
    }
    if (seen == 0) start = n - max_bytes; /* one line longer than max_bytes: its end */
    char *out = tony_xmalloc(n - start + 1);
    memcpy(out, text + start, n - start);
    size_t len = strip_terminal_codes(out, n - start);
    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == ' ' || out[len - 1] == '\t')) len--;
    out[len] = '\0';
    make_utf8(out, len);
    if (len == 0) {
        free(out);
        return NULL;
    }
    return out;
}

char *tony_lastwords_text(const char *text, size_t n, bool cut, int lines, size_t max_bytes) {
    size_t skip = 0;
    /* a line cut by the start of the window is not shown */
    if (cut)
        while (skip < n && text[skip++] != '\n') {}
    return last_lines(text + skip, n - skip, lines, max_bytes);
}

/* An fd on path when it is a regular file with something in it (a FIFO
 * planted there must not block the reader), *size its size; else -1. */
static int open_nonempty(const char *path, off_t *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        *size = st.st_size;
        return fd;
    }
    close(fd);
    return -1;
}

char *tony_lastwords_tail(const char *path, int lines, size_t max_bytes) {
    off_t size;
    int fd = open_nonempty(path, &size);
    if (fd < 0) return NULL;
    /* a byte more than kept, to see whether the first line is whole */
    off_t from = size > (off_t)max_bytes + 1 ? size - (off_t)max_bytes - 1 : 0;
    size_t want = (size_t)(size - from);
    char *buf = tony_xmalloc(want + 1), *out = NULL;
    ssize_t got = pread(fd, buf, want, from);
    if (got > 0) out = tony_lastwords_text(buf, (size_t)got, from > 0, lines, max_bytes);
    free(buf);
    close(fd);
    return out;
}

char *tony_lastwords_torch_error(const char *path, int lines, size_t max_bytes) {
    off_t size;
    int fd = open_nonempty(path, &size);
    if (fd < 0) return NULL;
    json_t *root = NULL;
    if (size <= TORCH_ERROR_FILE_MAX) {
        FILE *f = fdopen(fd, "r");
        if (f) {
            root = json_loadf(f, 0, NULL);
            fclose(f);
            fd = -1;
        }
    }
    if (fd >= 0) close(fd);
    /* {"message": {"message": "Exc: text", "extraInfo": {"py_callstack": "Traceback..."}}}
     * or, from older torch and other writers, {"message": "text"} */
    json_t *m = json_object_get(root, "message");
    const char *text = json_string_value(m), *stack = NULL;
    if (json_is_object(m)) {
        text = json_string_value(json_object_get(m, "message"));
        stack = json_string_value(json_object_get(json_object_get(m, "extraInfo"), "py_callstack"));
    }
    char *out = NULL;
    /* the traceback ends with the exception's line: it says it all */
    const char *best = stack && *stack ? stack : text;
    if (best) out = last_lines(best, strlen(best), lines, max_bytes);
    json_decref(root);
    return out;
}
