/* Horovod's gloo rendezvous, served by the coordinator itself: a small
 * key-value store over HTTP (GET/PUT/DELETE /<scope>/<key>) that Horovod's
 * workers use to find each other. TonY runs a separate driver container with
 * Horovod's Python server for this; here it costs nothing extra. Horovod's
 * workers send no credentials, so the store answers only the job's own
 * tasks, by where a request comes from: on a cluster, the addresses of the
 * hosts the job's tasks registered from (names resolved off the loop); on
 * this machine (the local backend), processes of the job's owner (the
 * uid of the peer's socket). Anyone else gets a 403 and a log line. */
#ifndef TONY_AM_RENDEZVOUS_H
#define TONY_AM_RENDEZVOUS_H

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>

#include "am/job.h"
#include "common/error.h"

typedef struct am_rendezvous am_rendezvous;

/* job: the task table the peers are checked against (read at each
 * request). same_machine: every task runs on this machine as this
 * process's user (the local backend). */
am_rendezvous *am_rendezvous_start(struct event_base *base, const char *host, const am_job *job, bool same_machine,
                                   tony_error *err);
int am_rendezvous_port(const am_rendezvous *r);
/* Empties the store for a new attempt. Then, once the workers are known,
 * set_scopes says how many share each scope ({"global": n, "local_<host>":
 * n, "cross_<local rank>": n}): when that many have DELETEd their key in a
 * scope, the scope is cleared. */
void am_rendezvous_reset(am_rendezvous *r);
void am_rendezvous_set_scopes(am_rendezvous *r, const json_t *scope_sizes);
void am_rendezvous_free(am_rendezvous *r);

#endif
