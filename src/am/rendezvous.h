/* Horovod's gloo rendezvous, served by the coordinator itself: a small
 * key-value store over HTTP (GET/PUT/DELETE /<scope>/<key>) that Horovod's
 * workers use to find each other. TonY runs a separate driver container with
 * Horovod's Python server for this; here it costs nothing extra. Like
 * Horovod's own server it takes no secret: workers cannot send one. */
#ifndef TONY_AM_RENDEZVOUS_H
#define TONY_AM_RENDEZVOUS_H

#include <event2/event.h>
#include <jansson.h>

#include "common/error.h"

typedef struct am_rendezvous am_rendezvous;

am_rendezvous *am_rendezvous_start(struct event_base *base, const char *host, tony_error *err);
int am_rendezvous_port(const am_rendezvous *r);
/* Empties the store for a new attempt. Then, once the workers are known,
 * set_scopes says how many share each scope ({"global": n, "local_<host>":
 * n, "cross_<local rank>": n}): when that many have DELETEd their key in a
 * scope, the scope is cleared. */
void am_rendezvous_reset(am_rendezvous *r);
void am_rendezvous_set_scopes(am_rendezvous *r, const json_t *scope_sizes);
void am_rendezvous_free(am_rendezvous *r);

#endif
