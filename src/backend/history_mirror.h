/* The coordinator's history mirror: where a coordinator on a cluster copies
 * its job history, implemented by a backend (YARN: HDFS over WebHDFS,
 * yarn/history_hdfs.h) and handed to the coordinator (am/am.h's
 * tony_am_options) by the backend's AM entry point. Here, below both, so
 * that the coordinator depends on the backend and not the reverse. */
#ifndef TONY_BACKEND_HISTORY_MIRROR_H
#define TONY_BACKEND_HISTORY_MIRROR_H

#include <stddef.h>

#include "common/error.h"

struct event_base;

/* Where a coordinator on a cluster copies its job history (the yarn
 * backend fills it: HDFS over WebHDFS). The coordinator keeps TonY's layout
 * on its own disk and, at a few moments (the job starts, an attempt ends,
 * the end), hands the mirror a batch of steps to run off its loop. Paths
 * are absolute on the mirror's file system; local files are the
 * coordinator's private snapshots, unchanged until the batch is done. */
typedef enum {
    TONY_AM_MIRROR_MKDIRS,     /* path, with its parents */
    TONY_AM_MIRROR_PUT,        /* the local file to path, overwriting */
    TONY_AM_MIRROR_MOVE_JHIST, /* from's .jhist(.inprogress) files but keep into the dir path */
    TONY_AM_MIRROR_REMOVE,     /* path, recursively; a missing one is no error */
} tony_am_mirror_step_kind;

typedef struct tony_am_mirror_step {
    tony_am_mirror_step_kind kind;
    char *path;
    char *local; /* PUT */
    char *from;  /* MOVE_JHIST */
    char *keep;  /* MOVE_JHIST: a name that stays (NULL: none) */
} tony_am_mirror_step;

typedef struct tony_am_mirror_batch {
    tony_am_mirror_step *steps;
    size_t n, cap;
} tony_am_mirror_batch;

/* On the loop's thread: rc 0, or -1 and err with the first failure (the
 * steps after it were not run). */
typedef void (*tony_am_mirror_done_fn)(void *arg, int rc, const tony_error *err);

typedef struct tony_am_history_mirror {
    void *ctx;
    const char *authority; /* the hdfs://AUTHORITY it writes (fs.defaultFS's) */
    /* Starts running batch on a thread of its own; done comes on base's
     * loop, never from inside run. One batch at a time: the caller waits
     * for done before the next. -1 (done never called): nothing could
     * start (no thread). */
    int (*run)(void *ctx, struct event_base *base, const tony_am_mirror_batch *batch, tony_am_mirror_done_fn done,
               void *arg, tony_error *err);
    /* Before base is freed: a batch still running stops after its current
     * call, which this waits for (its done is called, with an error,
     * before this returns), and what run set up on base goes. */
    void (*stop)(void *ctx);
} tony_am_history_mirror;

#endif
