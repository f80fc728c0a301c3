/* Whether the user's process shows signs of life (hang diagnosis, see
 * am/hang.h): it writes to stdout or stderr, or touches its progress file
 * (TONY_PROGRESS_FILE). Each heartbeat stats those files; any change of
 * size or mtime since the last look is activity. Changes are timed on the
 * monotonic clock, so a clock step is no hang. */
#ifndef TONY_EXECUTOR_ACTIVITY_H
#define TONY_EXECUTOR_ACTIVITY_H

#include <stddef.h>

#define TONY_ACTIVITY_FILES 3

typedef struct tony_activity_file {
    char *path;
    long long size, mtime_ns; /* -1: did not exist */
} tony_activity_file;

typedef struct tony_activity {
    tony_activity_file files[TONY_ACTIVITY_FILES];
    size_t n;
    long long last_ms; /* the last change seen (or the start) */
} tony_activity;

/* Starts watching paths (at most TONY_ACTIVITY_FILES; missing ones may
 * appear later) as of now_ms: what they hold now is not activity. */
void tony_activity_init(tony_activity *a, const char *const *paths, size_t n, long long now_ms);
/* Looks at the files again: the ms since the last change. */
long long tony_activity_idle_ms(tony_activity *a, long long now_ms);
void tony_activity_free(tony_activity *a);

#endif
