/* One Hadoop IPC v9 connection from the YARN AM to a ResourceManager or
 * NodeManager port: connect (with a timeout), SASL TOKEN/DIGEST-MD5 with a
 * token, the connection context, then protobuf calls one at a time. Every
 * read and write is bounded by the call's deadline, so nothing hangs. No
 * global state: one connection belongs to one thread at a time. */
#ifndef TONY_YARN_IPC_H
#define TONY_YARN_IPC_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/yarn/tokens.h"
#include "common/error.h"
#include "common/strv.h"

#define YARN_AM_PROTOCOL "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB"
#define YARN_NM_PROTOCOL "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB"
#define YARN_IPC_DEFAULT_TIMEOUT_MS 30000

typedef struct yarn_ipc yarn_ipc;

/* Connects to host:port for `protocol` and authenticates with token (an
 * AMRMToken for the RM scheduler port, the node's NMToken for a NodeManager).
 * timeout_ms bounds the connect + handshake and, later, each call. */
int yarn_ipc_connect(const char *host, int port, const char *protocol, const yarn_token *token, int timeout_ms,
                     yarn_ipc **out, tony_error *err);
/* The same, for calls that may have to be given up before their time:
 * once cancel_fd (-1: none) is readable, the handshake and every later
 * read or write of the connection fail at once, which breaks it. The fd
 * must outlive the connection. */
int yarn_ipc_connect_cancellable(const char *host, int port, const char *protocol, const yarn_token *token,
                                 int timeout_ms, int cancel_fd, yarn_ipc **out, tony_error *err);
void yarn_ipc_free(yarn_ipc *c);

/* Calls `method` with req and unpacks the reply as resp_desc into *resp
 * (free with protobuf_c_message_free_unpacked). A server-side exception
 * gives "ExceptionClass: first line of its message" in err and its class in
 * yarn_ipc_exception(); the connection stays usable. A FATAL reply, EOF,
 * timeout or garbage marks the connection broken: free it and reconnect. */
int yarn_ipc_call(yarn_ipc *c, const char *method, const ProtobufCMessage *req,
                  const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp, tony_error *err);
/* Java class of the exception the last call got, or NULL. */
const char *yarn_ipc_exception(const yarn_ipc *c);
bool yarn_ipc_broken(const yarn_ipc *c);
void yarn_ipc_set_timeout(yarn_ipc *c, int timeout_ms);
/* hadoop.rpc.protection as the handshake settled it: "authentication",
 * "integrity" or "privacy" (a static string). */
const char *yarn_ipc_protection(const yarn_ipc *c);
/* "host:port", for messages. */
const char *yarn_ipc_peer(const yarn_ipc *c);

/* --- framing, exposed for tests (docs/yarn-wire.md 1.9) */

#define YARN_IPC_SASL_CALL_ID (-33)
#define YARN_IPC_CONTEXT_CALL_ID (-3)
#define YARN_IPC_PING_CALL_ID (-4)

/* One frame: 4-byte big-endian length, then each message of the
 * NULL-terminated list varint-delimited. */
void yarn_ipc_frame(tony_buf *out, const ProtobufCMessage *const *msgs);
/* "hrpc", version 9, service class 0, auth protocol SASL. */
void yarn_ipc_frame_preamble(tony_buf *out);
/* A SASL message (an RpcSaslProto) with callId -33 and an empty client id. */
void yarn_ipc_frame_sasl(tony_buf *out, const ProtobufCMessage *sasl);
void yarn_ipc_frame_context(tony_buf *out, const uint8_t client_id[16], const char *protocol);
void yarn_ipc_frame_ping(tony_buf *out, const uint8_t client_id[16]);
void yarn_ipc_frame_call(tony_buf *out, const uint8_t client_id[16], int32_t call_id, const char *method,
                         const char *protocol, const ProtobufCMessage *req);

/* Splits one reply body (after the 4-byte length) into its header and the
 * payload bytes (NULL/0 when there is none). *hdr is an unpacked
 * Hadoop__Common__RpcResponseHeaderProto. */
int yarn_ipc_parse_reply(const uint8_t *buf, size_t len, ProtobufCMessage **hdr, const uint8_t **payload,
                         size_t *payload_len, tony_error *err);

#endif
