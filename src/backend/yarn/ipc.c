/* Hadoop IPC v9 over a non-blocking socket driven by poll(): frames are a
 * 4-byte big-endian length followed by varint-delimited protobuf messages.
 * The SASL exchange follows docs/yarn-wire.md 2.2 (NEGOTIATE, INITIATE with
 * the server's SaslAuth echoed minus its challenge, SUCCESS + rspauth). */
#include "backend/yarn/ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/rand.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "backend/yarn/sasl.h"
#include "backend/yarn/sasl_layer.h"
#include "common/clock.h"
#include "common/strv.h"
#include "hadoop_rpc.pb-c.h"

/* Hadoop clients refuse replies above 128 MiB (ipc.maximum.response.length). */
#define MAX_REPLY (128u << 20)

struct yarn_ipc {
    int fd;
    char peer[300];
    const char *protocol;
    uint8_t client_id[16];
    int32_t next_call_id;
    int timeout_ms;
    int cancel_fd; /* readable: give up at once (-1: never) */
    bool broken;
    char *exception; /* class of the last ERROR reply */
    /* hadoop.rpc.protection integrity or privacy: every message after the
     * handshake travels wrapped in a SASL WRAP message, both ways. */
    yarn_sasl_layer *layer;
    yarn_qop qop;
    tony_buf plain;    /* unwrapped bytes of the server's stream not read yet */
    size_t plain_off;
};

/* --- framing */

static void put_varint(tony_buf *out, uint64_t v) {
    char b[10];
    int n = 0;
    do {
        b[n] = (char)(v & 0x7f);
        v >>= 7;
        if (v) b[n] |= (char)0x80;
        n++;
    } while (v);
    tony_buf_append(out, b, (size_t)n);
}

static int get_varint(const uint8_t *buf, size_t len, size_t *pos, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= len) return -1;
        uint8_t b = buf[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static void put_delimited(tony_buf *out, const ProtobufCMessage *m) {
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *tmp = tony_xmalloc(n ? n : 1);
    protobuf_c_message_pack(m, tmp);
    put_varint(out, n);
    tony_buf_append(out, (const char *)tmp, n);
    free(tmp);
}

void yarn_ipc_frame(tony_buf *out, const ProtobufCMessage *const *msgs) {
    size_t start = out->len;
    tony_buf_append(out, "\0\0\0\0", 4);
    for (int i = 0; msgs[i]; i++) put_delimited(out, msgs[i]);
    uint32_t n = (uint32_t)(out->len - start - 4);
    unsigned char *p = (unsigned char *)out->data + start;
    p[0] = (unsigned char)(n >> 24);
    p[1] = (unsigned char)(n >> 16);
    p[2] = (unsigned char)(n >> 8);
    p[3] = (unsigned char)n;
}

static void init_header(Hadoop__Common__RpcRequestHeaderProto *h, int32_t call_id, const uint8_t *client_id,
                        size_t client_id_len) {
    hadoop__common__rpc_request_header_proto__init(h);
    /* The server insists on seeing rpcKind and rpcOp even at their defaults. */
    h->has_rpckind = h->has_rpcop = h->has_retrycount = 1;
    h->rpckind = HADOOP__COMMON__RPC_KIND_PROTO__RPC_PROTOCOL_BUFFER;
    h->rpcop = HADOOP__COMMON__RPC_REQUEST_HEADER_PROTO__OPERATION_PROTO__RPC_FINAL_PACKET;
    h->callid = call_id;
    h->clientid.data = (uint8_t *)client_id;
    h->clientid.len = client_id_len;
    h->retrycount = -1;
}

void yarn_ipc_frame_preamble(tony_buf *out) { tony_buf_append(out, "hrpc\x09\x00\xdf", 7); }

void yarn_ipc_frame_sasl(tony_buf *out, const ProtobufCMessage *sasl) {
    Hadoop__Common__RpcRequestHeaderProto h;
    init_header(&h, YARN_IPC_SASL_CALL_ID, NULL, 0);
    yarn_ipc_frame(out, (const ProtobufCMessage *[]){&h.base, sasl, NULL});
}

void yarn_ipc_frame_context(tony_buf *out, const uint8_t client_id[16], const char *protocol) {
    Hadoop__Common__RpcRequestHeaderProto h;
    init_header(&h, YARN_IPC_CONTEXT_CALL_ID, client_id, 16);
    /* With TOKEN auth the user is the token's (an attempt id), so the context
     * names no user: an empty UserInformationProto, as Java sends. */
    Hadoop__Common__UserInformationProto user = HADOOP__COMMON__USER_INFORMATION_PROTO__INIT;
    Hadoop__Common__IpcConnectionContextProto ctx = HADOOP__COMMON__IPC_CONNECTION_CONTEXT_PROTO__INIT;
    ctx.userinfo = &user;
    ctx.protocol = (char *)protocol;
    yarn_ipc_frame(out, (const ProtobufCMessage *[]){&h.base, &ctx.base, NULL});
}

void yarn_ipc_frame_ping(tony_buf *out, const uint8_t client_id[16]) {
    Hadoop__Common__RpcRequestHeaderProto h;
    init_header(&h, YARN_IPC_PING_CALL_ID, client_id, 16);
    yarn_ipc_frame(out, (const ProtobufCMessage *[]){&h.base, NULL});
}

void yarn_ipc_frame_call(tony_buf *out, const uint8_t client_id[16], int32_t call_id, const char *method,
                         const char *protocol, const ProtobufCMessage *req) {
    Hadoop__Common__RpcRequestHeaderProto h;
    init_header(&h, call_id, client_id, 16);
    Hadoop__Common__RequestHeaderProto rh = HADOOP__COMMON__REQUEST_HEADER_PROTO__INIT;
    rh.methodname = (char *)method;
    rh.declaringclassprotocolname = (char *)protocol;
    rh.clientprotocolversion = 1;
    yarn_ipc_frame(out, (const ProtobufCMessage *[]){&h.base, &rh.base, req, NULL});
}

int yarn_ipc_parse_reply(const uint8_t *buf, size_t len, ProtobufCMessage **hdr, const uint8_t **payload,
                         size_t *payload_len, tony_error *err) {
    size_t pos = 0;
    uint64_t n;
    *hdr = NULL;
    *payload = NULL;
    *payload_len = 0;
    if (get_varint(buf, len, &pos, &n) < 0 || n > len - pos) return tony_err(err, "truncated RPC reply header");
    Hadoop__Common__RpcResponseHeaderProto *h = hadoop__common__rpc_response_header_proto__unpack(NULL, n, buf + pos);
    if (!h) return tony_err(err, "unreadable RPC reply header");
    pos += n;
    if (pos < len) {
        if (get_varint(buf, len, &pos, &n) < 0 || n != len - pos) {
            protobuf_c_message_free_unpacked(&h->base, NULL);
            return tony_err(err, "RPC reply length mismatch");
        }
        *payload = buf + pos;
        *payload_len = n;
    }
    *hdr = &h->base;
    return 0;
}

/* --- socket I/O with deadlines */

static int mark_broken(yarn_ipc *c) {
    c->broken = true;
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    return -1;
}

/* Marks the connection unusable (closing it) and explains why. */
__attribute__((format(printf, 3, 4))) static int fail_broken(yarn_ipc *c, tony_error *err, const char *fmt, ...) {
    mark_broken(c);
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return tony_err(err, "Hadoop IPC to %s: %s", c->peer, what);
}

/* Polls fd for events and the cancel fd: 1 ready, 0 the time passed, -1
 * cancelled, -2 poll failed (errno). */
static int poll_or_cancel(int fd, short events, int cancel_fd, int64_t deadline) {
    for (;;) {
        int64_t left = deadline - tony_now_ms();
        struct pollfd p[2] = {{fd, events, 0}, {cancel_fd, POLLIN, 0}};
        int r = poll(p, cancel_fd >= 0 ? 2 : 1, left <= 0 ? 0 : (int)(left > 1000000 ? 1000000 : left));
        if (r < 0 && errno == EINTR) continue;
        if (cancel_fd >= 0 && (p[1].revents & POLLIN)) return -1;
        if (r > 0) return 1;
        if (r < 0) return -2;
        if (left <= 0) return 0;
    }
}

static int wait_io(yarn_ipc *c, short events, int64_t deadline, tony_error *err) {
    int r = poll_or_cancel(c->fd, events, c->cancel_fd, deadline);
    if (r == -2) return fail_broken(c, err, "poll failed: %s", strerror(errno));
    if (r < 0) return fail_broken(c, err, "abandoned: the coordinator stopped waiting for an answer");
    if (r == 0) return fail_broken(c, err, "no answer within %d ms (connection dropped)", c->timeout_ms);
    return 0;
}

static int write_all(yarn_ipc *c, const void *data, size_t len, int64_t deadline, tony_error *err) {
    const char *p = data;
    while (len) {
        if (wait_io(c, POLLOUT, deadline, err) < 0) return -1;
        ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            return fail_broken(c, err, "write failed: %s", strerror(errno));
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int read_all(yarn_ipc *c, void *data, size_t len, int64_t deadline, tony_error *err) {
    char *p = data;
    while (len) {
        if (wait_io(c, POLLIN, deadline, err) < 0) return -1;
        ssize_t n = recv(c->fd, p, len, 0);
        if (n == 0) return fail_broken(c, err, "the server closed the connection");
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            return fail_broken(c, err, "read failed: %s", strerror(errno));
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int reply_error(yarn_ipc *c, const Hadoop__Common__RpcResponseHeaderProto *h, const char *during,
                       tony_error *err);

/* The payload of the next SASL WRAP message off the socket, unwrapped onto
 * c->plain. */
static int unwrap_next(yarn_ipc *c, int64_t deadline, tony_error *err) {
    unsigned char lb[4];
    if (read_all(c, lb, 4, deadline, err) < 0) return -1;
    uint32_t n = (uint32_t)lb[0] << 24 | (uint32_t)lb[1] << 16 | (uint32_t)lb[2] << 8 | lb[3];
    if (n == 0 || n > MAX_REPLY) return fail_broken(c, err, "bad wrapped reply length %u", n);
    uint8_t *body = tony_xmalloc(n);
    ProtobufCMessage *h = NULL;
    Hadoop__Common__RpcSaslProto *m = NULL;
    const uint8_t *payload = NULL;
    size_t plen = 0;
    tony_error perr;
    int rc = read_all(c, body, n, deadline, err);
    if (rc == 0 && yarn_ipc_parse_reply(body, n, &h, &payload, &plen, &perr) < 0) {
        rc = fail_broken(c, err, "%s", perr.msg);
    } else if (rc == 0) {
        Hadoop__Common__RpcResponseHeaderProto *rh = (Hadoop__Common__RpcResponseHeaderProto *)h;
        if (rh->status != HADOOP__COMMON__RPC_RESPONSE_HEADER_PROTO__RPC_STATUS_PROTO__SUCCESS) {
            rc = reply_error(c, rh, "a wrapped call", err);
        } else if ((int32_t)rh->callid != YARN_IPC_SASL_CALL_ID || !payload ||
                   !(m = hadoop__common__rpc_sasl_proto__unpack(NULL, plen, payload)) ||
                   m->state != HADOOP__COMMON__RPC_SASL_PROTO__SASL_STATE__WRAP) {
            rc = fail_broken(c, err, "the server sent a message that is not SASL-wrapped under the negotiated "
                                     "hadoop.rpc.protection");
        } else if (yarn_sasl_unwrap(c->layer, m->token.data, m->token.len, &c->plain, &perr) < 0) {
            rc = fail_broken(c, err, "%s", perr.msg);
        }
    }
    if (m) protobuf_c_message_free_unpacked(&m->base, NULL);
    if (h) protobuf_c_message_free_unpacked(h, NULL);
    free(body);
    return rc;
}

/* len bytes of the server's IPC stream: off the socket, or under a SASL
 * security layer out of the unwrapped messages. */
static int read_stream(yarn_ipc *c, void *data, size_t len, int64_t deadline, tony_error *err) {
    if (!c->layer) return read_all(c, data, len, deadline, err);
    while (c->plain.len - c->plain_off < len)
        if (unwrap_next(c, deadline, err) < 0) return -1;
    memcpy(data, c->plain.data + c->plain_off, len);
    c->plain_off += len;
    if (c->plain_off == c->plain.len) c->plain.len = c->plain_off = 0;
    return 0;
}

/* The largest message wrapped at once: the server's maxbuf (64 KiB) less
 * what wrapping adds. */
#define WRAP_CHUNK 60000

/* Bytes of our IPC stream, wrapped under a SASL security layer. */
static int send_stream(yarn_ipc *c, const void *data, size_t len, int64_t deadline, tony_error *err) {
    if (!c->layer) return write_all(c, data, len, deadline, err);
    const char *p = data;
    while (len) {
        size_t n = len < WRAP_CHUNK ? len : WRAP_CHUNK;
        tony_buf w = {0}, frame = {0};
        tony_error werr;
        if (yarn_sasl_wrap(c->layer, p, n, &w, &werr) < 0) {
            tony_buf_free(&w);
            return fail_broken(c, err, "%s", werr.msg);
        }
        Hadoop__Common__RpcSaslProto m = HADOOP__COMMON__RPC_SASL_PROTO__INIT;
        m.state = HADOOP__COMMON__RPC_SASL_PROTO__SASL_STATE__WRAP;
        m.has_token = 1;
        m.token = (ProtobufCBinaryData){w.len, (uint8_t *)w.data};
        yarn_ipc_frame_sasl(&frame, &m.base);
        int rc = write_all(c, frame.data, frame.len, deadline, err);
        tony_buf_free(&w);
        tony_buf_free(&frame);
        if (rc < 0) return -1;
        p += n;
        len -= n;
    }
    return 0;
}

/* Reads one reply; the caller frees *hdr and *body. */
static int read_reply(yarn_ipc *c, int64_t deadline, Hadoop__Common__RpcResponseHeaderProto **hdr, uint8_t **body,
                      const uint8_t **payload, size_t *payload_len, tony_error *err) {
    unsigned char lb[4];
    *hdr = NULL;
    *body = NULL;
    if (read_stream(c, lb, 4, deadline, err) < 0) return -1;
    uint32_t n = (uint32_t)lb[0] << 24 | (uint32_t)lb[1] << 16 | (uint32_t)lb[2] << 8 | lb[3];
    if (n == 0 || n > MAX_REPLY) return fail_broken(c, err, "bad reply length %u (not a Hadoop IPC server?)", n);
    *body = tony_xmalloc(n);
    if (read_stream(c, *body, n, deadline, err) < 0) goto fail;
    ProtobufCMessage *h;
    tony_error perr;
    if (yarn_ipc_parse_reply(*body, n, &h, payload, payload_len, &perr) < 0) {
        fail_broken(c, err, "%s", perr.msg);
        goto fail;
    }
    *hdr = (Hadoop__Common__RpcResponseHeaderProto *)h;
    return 0;
fail:
    free(*body);
    *body = NULL;
    return -1;
}

/* "Class: first line of message"; FATAL also breaks the connection. */
static int reply_error(yarn_ipc *c, const Hadoop__Common__RpcResponseHeaderProto *h, const char *during,
                       tony_error *err) {
    const char *cls = h->exceptionclassname ? h->exceptionclassname : "(no exception class)";
    const char *msg = h->errormsg ? h->errormsg : "";
    size_t line = strcspn(msg, "\r\n");
    free(c->exception);
    c->exception = tony_strdup(h->exceptionclassname);
    bool fatal = h->status == HADOOP__COMMON__RPC_RESPONSE_HEADER_PROTO__RPC_STATUS_PROTO__FATAL;
    if (fatal) mark_broken(c);
    return tony_err(err, "%s from %s%s: %s: %.*s", during, c->peer, fatal ? " (fatal, connection closed)" : "", cls,
                    (int)line, msg);
}

/* --- connect + SASL */

static int tcp_connect(yarn_ipc *c, const char *host, int port, int64_t deadline, tony_error *err) {
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc != 0) return tony_err(err, "cannot resolve %s: %s", c->peer, gai_strerror(rc));
    int last = 0;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
            last = errno;
            close(fd);
            continue;
        }
        int r = poll_or_cancel(fd, POLLOUT, c->cancel_fd, deadline);
        if (r == -1) {
            close(fd);
            freeaddrinfo(res);
            return tony_err(err, "connecting to %s abandoned: the coordinator stopped waiting", c->peer);
        }
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (r == 0) soerr = ETIMEDOUT;
        else if (r < 0) soerr = errno;
        else getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
        if (soerr) {
            last = soerr;
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c->fd = fd;
        freeaddrinfo(res);
        return 0;
    }
    freeaddrinfo(res);
    return tony_err(err, "cannot connect to %s: %s (is the %s server running there?)", c->peer, strerror(last),
                    c->protocol);
}

static int send_sasl(yarn_ipc *c, Hadoop__Common__RpcSaslProto *m, int64_t deadline, tony_error *err) {
    tony_buf b = {0};
    yarn_ipc_frame_sasl(&b, &m->base);
    int rc = write_all(c, b.data, b.len, deadline, err);
    tony_buf_free(&b);
    return rc;
}

/* Reads a SASL reply; FATAL/ERROR replies become errors. */
static int read_sasl(yarn_ipc *c, int64_t deadline, Hadoop__Common__RpcSaslProto **out, tony_error *err) {
    Hadoop__Common__RpcResponseHeaderProto *h;
    uint8_t *body;
    const uint8_t *payload;
    size_t plen;
    *out = NULL;
    if (read_reply(c, deadline, &h, &body, &payload, &plen, err) < 0) return -1;
    int rc = 0;
    /* Status before call id: a failure may come with callId -1. */
    if (h->status != HADOOP__COMMON__RPC_RESPONSE_HEADER_PROTO__RPC_STATUS_PROTO__SUCCESS) {
        rc = reply_error(c, h, "SASL authentication refused", err);
        if (!c->broken) mark_broken(c);
    } else if ((int32_t)h->callid != YARN_IPC_SASL_CALL_ID) {
        rc = fail_broken(c, err, "unexpected call id %d during SASL", (int32_t)h->callid);
    } else if (!payload || !(*out = hadoop__common__rpc_sasl_proto__unpack(NULL, plen, payload))) {
        rc = fail_broken(c, err, "unreadable SASL message");
    }
    protobuf_c_message_free_unpacked(&h->base, NULL);
    free(body);
    return rc;
}

static int sasl_handshake(yarn_ipc *c, const yarn_token *token, int64_t deadline, tony_error *err) {
    Hadoop__Common__RpcSaslProto neg = HADOOP__COMMON__RPC_SASL_PROTO__INIT;
    neg.state = HADOOP__COMMON__RPC_SASL_PROTO__SASL_STATE__NEGOTIATE;
    tony_buf b = {0};
    yarn_ipc_frame_preamble(&b);
    yarn_ipc_frame_sasl(&b, &neg.base);
    int rc = write_all(c, b.data, b.len, deadline, err);
    tony_buf_free(&b);
    if (rc < 0) return -1;

    Hadoop__Common__RpcSaslProto *in = NULL;
    if (read_sasl(c, deadline, &in, err) < 0) return -1;
    if (in->state == HADOOP__COMMON__RPC_SASL_PROTO__SASL_STATE__SUCCESS) {
        /* The server accepted SIMPLE: nothing to authenticate. */
        protobuf_c_message_free_unpacked(&in->base, NULL);
        return 0;
    }
    Hadoop__Common__RpcSaslProto__SaslAuth *offer = NULL;
    tony_buf offered = {0};
    for (size_t i = 0; in->state == HADOOP__COMMON__RPC_SASL_PROTO__SASL_STATE__NEGOTIATE && i < in->n_auths; i++) {
        Hadoop__Common__RpcSaslProto__SaslAuth *a = in->auths[i];
        tony_buf_printf(&offered, "%s%s/%s", i ? ", " : "", a->method, a->mechanism);
        if (!offer && strcmp(a->method, "TOKEN") == 0 && strcmp(a->mechanism, "DIGEST-MD5") == 0) offer = a;
    }
    if (!offer) {
        tony_err(err, "%s does not offer TOKEN/DIGEST-MD5 authentication (offers: %s); it is not a YARN %s port",
                 c->peer, offered.data ? offered.data : "nothing", c->protocol);
        tony_buf_free(&offered);
        protobuf_c_message_free_unpacked(&in->base, NULL);
        return mark_broken(c);
    }
    tony_buf_free(&offered);

    /* Echo the chosen auth exactly (empty protocol included) but without its
     * challenge: the server compares it with what it offered. */
    Hadoop__Common__RpcSaslProto__SaslAuth echo = *offer;
    echo.has_challenge = 0;
    echo.challenge = (ProtobufCBinaryData){0, NULL};
    Hadoop__Common__RpcSaslProto__SaslAuth *echo_list[1] = {&echo};
    Hadoop__Common__RpcSaslProto out = HADOOP__COMMON__RPC_SASL_PROTO__INIT;
    out.state = HADOOP__COMMON__RPC_SASL_PROTO__SASL_STATE__INITIATE;
    out.n_auths = 1;
    out.auths = echo_list;

    char *response = NULL, rspauth[33] = "";
    yarn_sasl_negotiated qop = {.qop = YARN_QOP_AUTH};
    rc = -1;
    if (offer->has_challenge) {
        yarn_digest_challenge ch;
        if (yarn_sasl_parse_challenge(offer->challenge.data, offer->challenge.len, &ch, err) < 0) goto done;
        rc = yarn_sasl_digest_respond(&ch, token, NULL, &response, rspauth, &qop, err);
        yarn_digest_challenge_free(&ch);
        if (rc < 0) goto done;
        out.has_token = 1;
        out.token = (ProtobufCBinaryData){strlen(response), (uint8_t *)response};
    }
    for (int round = 0; round < 4; round++) {
        rc = -1;
        if (send_sasl(c, &out, deadline, err) < 0) goto done;
        Hadoop__Common__RpcSaslProto *reply = NULL;
        if (read_sasl(c, deadline, &reply, err) < 0) goto done;
        if (reply->state == HADOOP__COMMON__RPC_SASL_PROTO__SASL_STATE__SUCCESS) {
            rc = 0;
            if (response) rc = yarn_sasl_check_rspauth(reply->token.data, reply->has_token ? reply->token.len : 0,
                                                       rspauth, err);
            protobuf_c_message_free_unpacked(&reply->base, NULL);
            /* integrity or privacy: everything from here on is wrapped */
            if (rc == 0 && response && qop.qop != YARN_QOP_AUTH && !(c->layer = yarn_sasl_layer_new(&qop, err)))
                rc = -1;
            c->qop = qop.qop;
            if (rc < 0) mark_broken(c);
            goto done;
        }
        if (reply->state != HADOOP__COMMON__RPC_SASL_PROTO__SASL_STATE__CHALLENGE || response) {
            tony_err(err, "%s: unexpected SASL state %d during DIGEST-MD5", c->peer, (int)reply->state);
            protobuf_c_message_free_unpacked(&reply->base, NULL);
            mark_broken(c);
            goto done;
        }
        /* The challenge came separately (not piggy-backed on NEGOTIATE). */
        yarn_digest_challenge ch;
        rc = yarn_sasl_parse_challenge(reply->token.data, reply->token.len, &ch, err);
        protobuf_c_message_free_unpacked(&reply->base, NULL);
        if (rc < 0) goto done;
        rc = yarn_sasl_digest_respond(&ch, token, NULL, &response, rspauth, &qop, err);
        yarn_digest_challenge_free(&ch);
        if (rc < 0) goto done;
        out = (Hadoop__Common__RpcSaslProto)HADOOP__COMMON__RPC_SASL_PROTO__INIT;
        out.state = HADOOP__COMMON__RPC_SASL_PROTO__SASL_STATE__RESPONSE;
        out.has_token = 1;
        out.token = (ProtobufCBinaryData){strlen(response), (uint8_t *)response};
    }
    rc = tony_err(err, "%s: SASL did not finish", c->peer);
done:
    free(response);
    protobuf_c_message_free_unpacked(&in->base, NULL);
    if (rc < 0 && !c->broken) mark_broken(c);
    return rc;
}

int yarn_ipc_connect(const char *host, int port, const char *protocol, const yarn_token *token, int timeout_ms,
                     yarn_ipc **out, tony_error *err) {
    return yarn_ipc_connect_cancellable(host, port, protocol, token, timeout_ms, -1, out, err);
}

int yarn_ipc_connect_cancellable(const char *host, int port, const char *protocol, const yarn_token *token,
                                 int timeout_ms, int cancel_fd, yarn_ipc **out, tony_error *err) {
    *out = NULL;
    if (!token) return tony_err(err, "no token to authenticate to %s:%d with", host, port);
    yarn_ipc *c = tony_xcalloc(1, sizeof *c);
    c->fd = -1;
    c->cancel_fd = cancel_fd;
    snprintf(c->peer, sizeof c->peer, "%s:%d", host, port);
    c->protocol = protocol;
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : YARN_IPC_DEFAULT_TIMEOUT_MS;
    if (RAND_bytes(c->client_id, sizeof c->client_id) != 1) {
        yarn_ipc_free(c);
        return tony_err(err, "OpenSSL could not produce random bytes");
    }
    int64_t deadline = tony_now_ms() + c->timeout_ms;
    if (tcp_connect(c, host, port, deadline, err) < 0 || sasl_handshake(c, token, deadline, err) < 0) {
        yarn_ipc_free(c);
        return -1;
    }
    tony_buf b = {0};
    yarn_ipc_frame_context(&b, c->client_id, protocol);
    int rc = send_stream(c, b.data, b.len, deadline, err);
    tony_buf_free(&b);
    if (rc < 0) {
        yarn_ipc_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

void yarn_ipc_free(yarn_ipc *c) {
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    free(c->exception);
    yarn_sasl_layer_free(c->layer);
    tony_buf_free(&c->plain);
    free(c);
}

int yarn_ipc_call(yarn_ipc *c, const char *method, const ProtobufCMessage *req,
                  const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp, tony_error *err) {
    *resp = NULL;
    free(c->exception);
    c->exception = NULL;
    if (c->broken) return tony_err(err, "the connection to %s is broken; reconnect", c->peer);
    int64_t deadline = tony_now_ms() + c->timeout_ms;
    int32_t id = c->next_call_id;
    c->next_call_id = (c->next_call_id + 1) & 0x7fffffff;
    tony_buf b = {0};
    yarn_ipc_frame_call(&b, c->client_id, id, method, c->protocol, req);
    int rc = send_stream(c, b.data, b.len, deadline, err);
    tony_buf_free(&b);
    if (rc < 0) return tony_err_wrap(err, "calling %s", method);

    Hadoop__Common__RpcResponseHeaderProto *h;
    uint8_t *body;
    const uint8_t *payload;
    size_t plen;
    if (read_reply(c, deadline, &h, &body, &payload, &plen, err) < 0) return tony_err_wrap(err, "calling %s", method);
    char what[128];
    snprintf(what, sizeof what, "%s", method);
    if (h->status != HADOOP__COMMON__RPC_RESPONSE_HEADER_PROTO__RPC_STATUS_PROTO__SUCCESS) {
        rc = reply_error(c, h, what, err);
    } else if ((int32_t)h->callid != id) {
        rc = fail_broken(c, err, "reply to an unknown call id %d (expected %d)", (int32_t)h->callid, id);
    } else if (!payload) {
        rc = fail_broken(c, err, "reply to %s has no payload", method);
    } else if (!(*resp = protobuf_c_message_unpack(resp_desc, NULL, plen, payload))) {
        rc = fail_broken(c, err, "unreadable reply to %s", method);
    }
    protobuf_c_message_free_unpacked(&h->base, NULL);
    free(body);
    return rc;
}

const char *yarn_ipc_exception(const yarn_ipc *c) { return c->exception; }
bool yarn_ipc_broken(const yarn_ipc *c) { return c->broken; }
void yarn_ipc_set_timeout(yarn_ipc *c, int timeout_ms) {
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : YARN_IPC_DEFAULT_TIMEOUT_MS;
}
const char *yarn_ipc_peer(const yarn_ipc *c) { return c->peer; }
const char *yarn_ipc_protection(const yarn_ipc *c) {
    return !c->layer ? "authentication" : c->qop == YARN_QOP_CONF ? "privacy" : "integrity";
}
