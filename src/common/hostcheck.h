/* Which Host header values an HTTP server of ours answers, against DNS
 * rebinding: a web page of another site whose name the attacker points at
 * this machine reaches the server with that site's name in Host, and the
 * browser lets the page read the answers. The history portal and the
 * coordinator's page and API both check every request with it. */
#ifndef TONY_HOSTCHECK_H
#define TONY_HOSTCHECK_H

#include <stdbool.h>

#include "common/strv.h"

typedef struct tony_host_check {
    tony_strv names; /* host names it answers, compared without case */
    bool any_ip;     /* any IP address literal too */
    int port;        /* the port a Host header may name (the server's own) */
} tony_host_check;

/* localhost, 127.0.0.1 and ::1 on port; any_ip adds every IP literal (an
 * address cannot be another site's name). */
void tony_host_check_init(tony_host_check *c, int port, bool any_ip);
/* One more name (ignored when NULL, empty or already there). */
void tony_host_check_add(tony_host_check *c, const char *name);
/* This machine's host name (gethostname) as one more; malloc'ed copy of it
 * returned for messages, NULL when it has none. */
char *tony_host_check_add_this_host(tony_host_check *c);
/* What a server of a job (the coordinator's API, Horovod's rendezvous)
 * answers: localhost and its addresses, any IP address, the name others
 * reach it by (own_name, the host in its URL) and this machine's name. */
void tony_host_check_init_job_server(tony_host_check *c, int port, const char *own_name);
/* Whether a request with this Host header (NULL: none, never good: the
 * servers refuse such requests before, httpserver.c) names the server: one
 * of its names or, with any_ip, an address, and no port or its own. */
bool tony_host_check_ok(const tony_host_check *c, const char *host);
/* "localhost, 127.0.0.1, ::1, NAME or any address of this machine" for
 * messages; malloc'ed. */
char *tony_host_check_describe(const tony_host_check *c);
void tony_host_check_free(tony_host_check *c);

#endif
