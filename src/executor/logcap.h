/* A cap on a task's stdout and stderr files (tony.task.log-max-size): once
 * a file passes it, the executor rewrites it as its head, a line saying how
 * many bytes were cut there, and its most recent tail, and the file grows
 * on from there (the user's process writes with O_APPEND, so its next
 * write lands at the new end). The head is the first quarter of the cap,
 * the tail the last quarter: a file is cut back to about half the cap, so
 * copying the tail costs at most half of what the task wrote meanwhile. */
#ifndef TONY_EXECUTOR_LOGCAP_H
#define TONY_EXECUTOR_LOGCAP_H

#include <stdbool.h>

#include "common/error.h"

/* The smallest cap taken: below it the head, the line and the tail would
 * not leave room for output. */
#define TONY_LOGCAP_MIN_BYTES 4096

typedef struct tony_logcap {
    char *path;
    long long max;       /* bytes; 0: no cap */
    long long head;      /* bytes kept at the start (fixed at the first cut, at a line's end) */
    long long cut_total; /* bytes of output cut so far */
    long long line_len;  /* the length of the line the last cut wrote after the head */
    int cuts;
} tony_logcap;

/* Watches path (it may not exist yet) with a cap of max bytes (0: none;
 * a smaller cap than TONY_LOGCAP_MIN_BYTES counts as that). */
void tony_logcap_init(tony_logcap *c, const char *path, long long max);
void tony_logcap_free(tony_logcap *c);
/* Cuts the file if it passed its cap: 1 when it did, 0 when it was not
 * needed, -1 when the file could not be rewritten (err says why; the next
 * check tries again). Output appended between the cut's last look at the
 * file's size and its truncation (one system call apart) goes with the cut
 * part uncounted: the line says "at least" so many bytes were cut. Taking
 * it out in place (FALLOC_FL_COLLAPSE_RANGE) would lose nothing, but only
 * some file systems have it, for block-aligned ranges. */
int tony_logcap_check(tony_logcap *c, tony_error *err);

/* A task's two files under one cap, as the executor watches them: set
 * from the value of TASKENV_LOG_MAX_SIZE (bytes; unset or 0: no cap), and
 * each cut said in the executor's log, the first one as a warning. */
typedef struct tony_logcaps {
    tony_logcap files[2];
    const char *names[2];
} tony_logcaps;
void tony_logcaps_start(tony_logcaps *c, const char *out, const char *err_path, const char *max);
void tony_logcaps_poll(tony_logcaps *c);
void tony_logcaps_free(tony_logcaps *c);

#endif
