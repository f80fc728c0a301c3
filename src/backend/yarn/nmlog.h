/* Reads a byte range of a container's log through its NodeManager's web
 * service, on the coordinator's loop and without blocking it: the yarn
 * backend's read_log (backend.h). nmweb.h does the string work. */
#ifndef TONY_YARN_NMLOG_H
#define TONY_YARN_NMLOG_H

#include <event2/event.h>

#include "backend/backend.h"

/* How long a NodeManager may take to answer one read. */
#define YARN_NMLOG_TIMEOUT_S 10

/* The reader: its reads in flight and the resolver for node names. */
typedef struct yarn_nmlog yarn_nmlog;

yarn_nmlog *yarn_nmlog_new(struct event_base *base);
/* How long one NodeManager read may take (YARN_NMLOG_TIMEOUT_S unless set). */
void yarn_nmlog_set_timeout(yarn_nmlog *nl, int seconds);
/* Kerberized NodeManagers (SPNEGO on their web pages, which answer 401
 * without it). cookie gives what a read of the NodeManager at base carries
 * in its Cookie header (NULL: nothing yet); refused is told of each 401, so
 * that the owner logs in to that NodeManager meanwhile. Reads fail until
 * then, saying so. Without auth a 401 says how to get the log instead. */
typedef struct yarn_nmlog_auth {
    const char *(*cookie)(void *ctx, const char *base);
    void (*refused)(void *ctx, const char *base);
    void *ctx;
} yarn_nmlog_auth;
void yarn_nmlog_set_auth(yarn_nmlog *nl, const yarn_nmlog_auth *auth);
/* Drops every read still in flight (no callbacks); not from a callback. */
void yarn_nmlog_free(yarn_nmlog *nl);

/* 0 when link is a NodeManager log link (nmweb.h) a read can start from. */
int yarn_nmlog_check_link(const char *link, tony_error *err);

/* Starts reading r as backend.h's read_log says: cb gets the chunk, or a
 * 400 (offset past the end) or 502 (the NodeManager unreachable, its answer
 * unusable, or the file growing faster than it can be read). A callback
 * may start or cancel other reads. */
int yarn_nmlog_read(yarn_nmlog *nl, const tony_log_request *r, tony_log_cb cb, void *ctx, tony_log_read **out,
                    tony_error *err);
/* Drops a read whose callback has not run; it never will. */
void yarn_nmlog_cancel(tony_log_read *read);

#endif
