/* Task logs the backend reads for the coordinator (logfetch.c): on YARN, a
 * task's output on another node, through its NodeManager. */
#ifndef TONY_AM_LOGFETCH_H
#define TONY_AM_LOGFETCH_H

#include "am/am_internal.h"

/* The most bytes of a task's log one GET .../log answers with. */
#define AM_LOG_CHUNK (64 * 1024)

/* 0 when the backend can read a task's log from log_url (what its executor
 * reported), else why not. */
int am_backend_reads_log_url(const tony_am *am, const char *log_url, tony_error *err);
/* Answers GET .../log for a task whose output the backend reads (log_url
 * passed am_backend_reads_log_url) without blocking the loop. */
void am_logfetch_start(tony_am *am, struct evhttp_request *req, const char *log_url, const char *role, int index,
                       int attempt, const char *stream, long long offset);
/* Drops the reads in flight, unanswered (before the backend and the HTTP
 * server go). */
void am_logfetch_free_all(tony_am *am);

#endif
