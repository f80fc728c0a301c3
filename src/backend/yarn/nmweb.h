/* A NodeManager's web service, for container logs: the link people open
 * (/node/containerlogs/<container>/<user>) and reading a byte range of a log
 * file through its REST (/ws/v1/node/containerlogs/<container>/<file>).
 * Pure string work: the callers (executor, coordinator, CLI) do the HTTP. */
#ifndef TONY_YARN_NMWEB_H
#define TONY_YARN_NMWEB_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

/* http://host:port/node/containerlogs/<container>/<user>, or NULL when the
 * node has no web UI (port absent, 0 or not a port) or an argument is
 * missing or holds characters a host, container id or user name does not. */
char *tony_nmweb_log_link(const char *nm_host, const char *nm_http_port, const char *container, const char *user);
/* The same for a granted container: node_http_address is the grant's
 * "host:port" of its NodeManager's web UI; the user is the application's
 * owner, who runs the coordinator ($USER, else the process's user). */
char *tony_nmweb_container_log_link(const char *node_http_address, const char *container);

/* Splits a log link (as built above, or the RM's amContainerLogs) into the
 * node's web base "http://host:port" and the container id. */
int tony_nmweb_parse_link(const char *link, char **base, char **container, tony_error *err);

/* The REST URL of one log file of a container. size > 0: the file's first
 * size bytes; size < 0: its last -size bytes (the NodeManager knows no
 * offset). */
char *tony_nmweb_file_url(const char *base, const char *container, const char *file, long long size);

/* How to read [offset, offset + chunk) of a file whose size is unknown: the
 * size parameter of the first request. From the start: the head; further
 * on: a tail of twice the chunk, which covers a file that grew less than a
 * chunk since the reader last saw its end (a follower's usual case). */
long long tony_nmweb_first_size(long long offset, long long chunk);

/* The NodeManager's answer to a file_url request of size req_size: a header
 * that names the file's length, the bytes asked for, a footer. */
typedef struct tony_nmweb_log {
    long long file_len;  /* the file's length when the NodeManager read it */
    long long start;     /* where in the file data begins */
    const char *data;    /* points into the parsed body */
    size_t len;
} tony_nmweb_log;
int tony_nmweb_parse_log(const char *body, size_t body_len, long long req_size, tony_nmweb_log *out, tony_error *err);

/* From a parsed answer, the bytes [offset, offset + chunk) in *from (index
 * into log->data) and *n. Returns 0 when found, 1 when the answer started
 * past offset (the file grew more than the tail covered: ask again with
 * size offset + chunk), -1 when offset is past the end of the file. */
int tony_nmweb_slice(const tony_nmweb_log *log, long long offset, long long chunk, size_t *from, size_t *n);

#endif
