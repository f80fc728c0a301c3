/* The executor's watch over its user process's output for log policies
 * (conf/logpolicy.h): reads the task's stdout and stderr files as they
 * grow, line by line, and keeps the first line each policy matched. Never
 * blocks (regular files) and holds little memory: a line longer than
 * TONY_OUTSCAN_LINE_MAX is matched in pieces of that size, and each poll
 * reads at most TONY_OUTSCAN_POLL_MAX bytes per file. A line ends at '\n'
 * or '\r' (progress bars redraw with '\r'). */
#ifndef TONY_EXECUTOR_OUTSCAN_H
#define TONY_EXECUTOR_OUTSCAN_H

#include <stddef.h>

#include "conf/logpolicy.h"

#define TONY_OUTSCAN_LINE_MAX 4096
#define TONY_OUTSCAN_POLL_MAX (1024 * 1024)
/* The most of a matched line that is kept (and reported). */
#define TONY_OUTSCAN_KEEP 512

typedef struct tony_outscan tony_outscan;

/* Scans for policies (borrowed: they outlive the scanner). */
tony_outscan *tony_outscan_new(const tony_logpolicies *policies);
void tony_outscan_free(tony_outscan *s);
/* Watches the file at path (it may not exist yet) under a stream name
 * ("stdout", "stderr"); returns its number for tony_outscan_feed. */
int tony_outscan_add_file(tony_outscan *s, const char *path, const char *stream);
/* Reads what the files gained since the last poll (drain: all of it, for
 * the end, when the user's process is gone). */
void tony_outscan_poll(tony_outscan *s, int drain);
/* Scans bytes as if file number `file` had grown by them (tests, and the
 * reader above); finish: the stream ended, a last line without its
 * newline counts. */
void tony_outscan_feed(tony_outscan *s, int file, const char *data, size_t n);
void tony_outscan_finish(tony_outscan *s, int file);

/* The first match of policy i (index into the policies), or NULL. */
typedef struct tony_outscan_match {
    const char *stream;
    const char *line; /* at most TONY_OUTSCAN_KEEP bytes of it */
} tony_outscan_match;
const tony_outscan_match *tony_outscan_matched(const tony_outscan *s, size_t policy);

#endif
