/* A task whose container ended without its executor's report (the
 * executor killed with it, the container killed for memory) and whose log
 * the coordinator cannot open (YARN: on another node): the tail of its
 * stderr is read through the backend, as logfetch.c reads logs, before the
 * exit is given to the state machine, so that the root cause (cause.h) has
 * the failed task's last words. The read ends with the backend's own
 * timeout; whatever its outcome, the exit is then delivered. */
#ifndef TONY_AM_LASTFETCH_H
#define TONY_AM_LASTFETCH_H

#include <stdbool.h>

#include "am/am_internal.h"

/* What to do with the exit once the read ended; tail: its stderr's last
 * lines, or NULL when none could be read. */
typedef void (*am_lastfetch_done)(tony_am *am, const char *role, int index, int attempt, int exit_status,
                                  const char *diagnostics, long long exit_ms, const char *tail);

/* Starts the read of t's stderr for its exit; false when the backend reads
 * no log link of t (deliver the exit now). */
bool am_lastfetch_start(tony_am *am, const am_task *t, int exit_status, const char *diagnostics, long long exit_ms,
                        am_lastfetch_done done);
/* Drops the reads in flight, their exits undelivered (the coordinator is
 * going; before the backend goes). */
void am_lastfetch_free_all(tony_am *am);

#endif
