/* The log cap (logcap.h): the head stays where it is; the marker line and
 * the tail are written over what follows it, and the file is truncated
 * after them. */
#include "executor/logcap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/jobdir.h"
#include "common/log.h"
#include "common/strv.h"

/* How far a cut may move to land on a line's end. */
#define LINE_SLACK 4096

void tony_logcap_init(tony_logcap *c, const char *path, long long max) {
    memset(c, 0, sizeof *c);
    c->path = tony_strdup(path);
    c->max = max > 0 && max < TONY_LOGCAP_MIN_BYTES ? TONY_LOGCAP_MIN_BYTES : max;
}

void tony_logcap_free(tony_logcap *c) {
    free(c->path);
    c->path = NULL;
}

static int read_at(int fd, char *buf, long long len, long long off) {
    long long got = 0;
    while (got < len) {
        ssize_t r = pread(fd, buf + got, (size_t)(len - got), (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        got += r;
    }
    return 0;
}

static int write_at(int fd, const char *buf, long long len, long long off) {
    long long put = 0;
    while (put < len) {
        ssize_t w = pwrite(fd, buf + put, (size_t)(len - put), (off_t)(off + put));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        put += w;
    }
    return 0;
}

/* The head's length at the first cut: the quarter, shortened to just after
 * the last newline within LINE_SLACK of its end. */
static long long head_length(int fd, long long quarter) {
    long long from = quarter > LINE_SLACK ? quarter - LINE_SLACK : 0;
    char *buf = tony_xmalloc((size_t)(quarter - from) + 1);
    long long len = quarter;
    if (read_at(fd, buf, quarter - from, from) == 0)
        for (long long i = quarter - from; i > 0; i--)
            if (buf[i - 1] == '\n') {
                len = from + i;
                break;
            }
    free(buf);
    return len;
}

int tony_logcap_check(tony_logcap *c, tony_error *err) {
    if (c->max <= 0) return 0;
    int fd = open(c->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return errno == ENOENT ? 0 : tony_err(err, "cannot open %s to cap it: %s", c->path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= c->max) {
        close(fd);
        return 0;
    }
    long long quarter = c->max / 4;
    if (c->head <= 0 || c->head > quarter) c->head = head_length(fd, quarter);
    /* the tail: the last quarter, from just after a newline where one is near */
    long long size = st.st_size, from = size - quarter;
    char *tail = tony_xmalloc((size_t)quarter + 1);
    int rc = read_at(fd, tail, quarter, from);
    long long skip = 0;
    for (long long i = 0; rc == 0 && i < quarter && i < LINE_SLACK; i++)
        if (tail[i] == '\n') {
            skip = i + 1;
            break;
        }
    /* what the process wrote while the tail was read is tail too */
    if (rc == 0 && fstat(fd, &st) == 0 && st.st_size > size) {
        long long more = st.st_size - size;
        tail = tony_xrealloc(tail, (size_t)(quarter + more) + 1);
        if (read_at(fd, tail + quarter, more, size) == 0) {
            quarter += more;
            size = st.st_size;
        }
    }
    /* the last cut's line goes with what is cut now: not output, not counted */
    long long cut = from + skip - c->head - c->line_len;
    char *line = tony_sprintf(TONY_LOG_CUT_MARK "%lld bytes of this log were cut here (tony.task.log-max-size: %lld "
                              "bytes); its most recent output follows ====\n", c->cut_total + cut, c->max);
    long long llen = (long long)strlen(line), keep = quarter - skip;
    if (rc == 0) rc = write_at(fd, line, llen, c->head);
    if (rc == 0) rc = write_at(fd, tail + skip, keep, c->head + llen);
    /* bytes appended since the last fstat are lost here: count them */
    long long before = fstat(fd, &st) == 0 ? st.st_size : size;
    if (rc == 0) rc = ftruncate(fd, (off_t)(c->head + llen + keep));
    if (rc) tony_err(err, "cannot cap %s: %s", c->path, strerror(errno));
    close(fd);
    free(line);
    free(tail);
    if (rc) return -1;
    c->cut_total += cut + (before > size ? before - size : 0);
    c->line_len = llen;
    c->cuts++;
    return 1;
}

void tony_logcaps_start(tony_logcaps *c, const char *out, const char *err_path, const char *max) {
    long long bytes = 0;
    if (max && *max && (!tony_parse_ll(max, &bytes) || bytes < 0)) {
        tony_warn("log cap %s is not a number of bytes: task logs are not capped", max);
        bytes = 0;
    }
    tony_logcap_init(&c->files[0], out, bytes);
    tony_logcap_init(&c->files[1], err_path, bytes);
    c->names[0] = "stdout";
    c->names[1] = "stderr";
}

void tony_logcaps_poll(tony_logcaps *c) {
    for (int i = 0; i < 2; i++) {
        tony_error err;
        int rc = tony_logcap_check(&c->files[i], &err);
        if (rc < 0) tony_warn("%s", err.msg);
        else if (rc > 0 && c->files[i].cuts == 1)
            tony_warn("the task's %s passed tony.task.log-max-size (%lld bytes): its middle is cut, its head and "
                      "most recent output kept (%s)", c->names[i], c->files[i].max, c->files[i].path);
        else if (rc > 0)
            tony_debug("%s cut again: %lld bytes cut in all", c->names[i], c->files[i].cut_total);
    }
}

void tony_logcaps_free(tony_logcaps *c) {
    tony_logcap_free(&c->files[0]);
    tony_logcap_free(&c->files[1]);
}
