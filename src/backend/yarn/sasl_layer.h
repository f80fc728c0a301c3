/* DIGEST-MD5's security layer (RFC 2831 2.3 and 2.4), as Java's SASL
 * speaks it and Hadoop IPC uses it when hadoop.rpc.protection is integrity
 * (qop auth-int: each message carries an HMAC-MD5) or privacy (auth-conf:
 * each message is also encrypted, here with 3des, whose CBC chain runs on
 * from one message to the next in each direction). After the handshake
 * every message either way is wrapped; sequence numbers count each
 * direction's messages from 0, and a message out of order, altered or
 * replayed is refused. */
#ifndef TONY_YARN_SASL_LAYER_H
#define TONY_YARN_SASL_LAYER_H

#include <stddef.h>

#include "backend/yarn/sasl.h"
#include "common/error.h"
#include "common/strv.h"

typedef struct yarn_sasl_layer yarn_sasl_layer;

/* The client's layer for what the handshake negotiated; NULL for qop auth
 * (nothing to wrap). */
yarn_sasl_layer *yarn_sasl_layer_new(const yarn_sasl_negotiated *n, tony_error *err);
void yarn_sasl_layer_free(yarn_sasl_layer *l);
/* Appends the wrapped form of len bytes of msg to out. */
int yarn_sasl_wrap(yarn_sasl_layer *l, const void *msg, size_t len, tony_buf *out, tony_error *err);
/* Appends the message a wrapped token from the server stands for. */
int yarn_sasl_unwrap(yarn_sasl_layer *l, const void *token, size_t len, tony_buf *out, tony_error *err);
/* The server's side, for the unit test's round trips: a layer that wraps
 * as the server does and unwraps what the client wrapped. */
yarn_sasl_layer *yarn_sasl_layer_new_server(const yarn_sasl_negotiated *n, tony_error *err);

#endif
