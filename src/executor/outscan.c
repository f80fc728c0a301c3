/* Log policies' scanner (see outscan.h): per file, an offset and the part
 * of a line read so far; per policy, its first match. */
#include "executor/outscan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/strv.h"

typedef struct scanned_file {
    char *path;
    char *stream;
    int fd; /* -1 until the file exists */
    char line[TONY_OUTSCAN_LINE_MAX + 1];
    size_t len;
} scanned_file;

struct tony_outscan {
    const tony_logpolicies *policies;
    tony_outscan_match *matches; /* per policy; line NULL until matched */
    size_t unmatched;
    scanned_file *files;
    size_t nfiles;
};

tony_outscan *tony_outscan_new(const tony_logpolicies *policies) {
    tony_outscan *s = tony_xcalloc(1, sizeof *s);
    s->policies = policies;
    s->matches = tony_xcalloc(policies->len + 1, sizeof *s->matches);
    s->unmatched = policies->len;
    return s;
}

void tony_outscan_free(tony_outscan *s) {
    if (!s) return;
    for (size_t i = 0; i < s->policies->len; i++) free((char *)s->matches[i].line);
    free(s->matches);
    for (size_t i = 0; i < s->nfiles; i++) {
        if (s->files[i].fd >= 0) close(s->files[i].fd);
        free(s->files[i].path);
        free(s->files[i].stream);
    }
    free(s->files);
    free(s);
}

int tony_outscan_add_file(tony_outscan *s, const char *path, const char *stream) {
    s->files = tony_xrealloc(s->files, (s->nfiles + 1) * sizeof *s->files);
    scanned_file *f = &s->files[s->nfiles];
    memset(f, 0, sizeof *f);
    f->path = tony_strdup(path);
    f->stream = tony_strdup(stream);
    f->fd = -1;
    return (int)s->nfiles++;
}

/* One whole line (or a piece of a long one) against the policies not
 * matched yet. */
static void match_line(tony_outscan *s, scanned_file *f) {
    if (f->len == 0) return;
    f->line[f->len] = '\0';
    for (size_t i = 0; i < s->policies->len; i++) {
        if (s->matches[i].line || regexec(&s->policies->items[i].re, f->line, 0, NULL, 0) != 0) continue;
        s->matches[i].stream = f->stream;
        s->matches[i].line = tony_sprintf("%.*s", TONY_OUTSCAN_KEEP, f->line);
        s->unmatched--;
    }
    f->len = 0;
}

void tony_outscan_feed(tony_outscan *s, int file, const char *data, size_t n) {
    scanned_file *f = &s->files[file];
    for (size_t i = 0; i < n && s->unmatched; i++) {
        char c = data[i];
        if (c == '\n' || c == '\r') {
            match_line(s, f);
            continue;
        }
        /* a NUL would end the line early for regexec: read it as a space */
        f->line[f->len++] = c ? c : ' ';
        if (f->len == TONY_OUTSCAN_LINE_MAX) match_line(s, f);
    }
}

void tony_outscan_finish(tony_outscan *s, int file) {
    if (s->unmatched) match_line(s, &s->files[file]);
}

void tony_outscan_poll(tony_outscan *s, int drain) {
    char buf[64 * 1024];
    for (size_t k = 0; k < s->nfiles && s->unmatched; k++) {
        scanned_file *f = &s->files[k];
        if (f->fd < 0) f->fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (f->fd < 0) continue; /* not written yet */
        /* The log cap (logcap.h) cut the file back under our offset: go on
         * from its new end (what it kept was read before the cut). */
        struct stat st;
        off_t at = lseek(f->fd, 0, SEEK_CUR);
        if (at > 0 && fstat(f->fd, &st) == 0 && st.st_size < at) lseek(f->fd, 0, SEEK_END);
        size_t got = 0;
        while (s->unmatched && (drain || got < TONY_OUTSCAN_POLL_MAX)) {
            ssize_t r = read(f->fd, buf, sizeof buf);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break; /* the end, for now */
            tony_outscan_feed(s, (int)k, buf, (size_t)r);
            got += (size_t)r;
        }
        if (drain) tony_outscan_finish(s, (int)k);
    }
}

const tony_outscan_match *tony_outscan_matched(const tony_outscan *s, size_t policy) {
    return policy < s->policies->len && s->matches[policy].line ? &s->matches[policy] : NULL;
}
