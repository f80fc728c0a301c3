/* Fuzzes what a Hadoop IPC server's replies go through in the YARN
 * coordinator (backend/yarn): the reply framing (4-byte length, then
 * yarn_ipc_parse_reply's varint-delimited RpcResponseHeaderProto and
 * payload), the protobuf decoding of each response the AM reads (register,
 * allocate, finish, start/stop containers, container statuses, SASL), what
 * the AM takes from the register and allocate replies (amrm.c, on a
 * yarn_amrm that never connects), the DIGEST-MD5 challenge parser, and
 * container ids and resources taken from the decoded messages. The input
 * is a byte stream as read from the socket, frame after frame.
 * Properties: no crash, leak or UB; a frame read_reply would take either
 * parses or is refused with an error; a decoded message packs to bytes
 * that, when they decode, pack again to the same bytes; what the AM takes
 * from a register or allocate reply (containers, completions, NM and AMRM
 * tokens, the asks they meet) has every container and completion of the
 * reply, fields filled; a container id from the wire formats to a string
 * that parses back to it. The socket I/O itself (deadlines, cancel) is not
 * fuzzed here. */
#include <stdint.h>
#include <string.h>

#include "backend/yarn/amrm_pb.h"
#include "backend/yarn/ids.h"
#include "backend/yarn/ipc.h"
#include "backend/yarn/sasl.h"
#include "fuzz_util.h"
#include "hadoop_rpc.pb-c.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet();
    return 0;
}

/* Decoding is a normal form: what packs once packs the same ever after. */
static void check_repack(const ProtobufCMessage *m) {
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *a = tony_xmalloc(n + 1);
    FUZZ_CHECK(protobuf_c_message_pack(m, a) == n, "%s packs to other than its packed size", m->descriptor->name);
    ProtobufCMessage *again = protobuf_c_message_unpack(m->descriptor, NULL, n, a);
    /* protobuf-c can pack a message it decoded into bytes it then refuses
     * (seen: an AllocateResponseProto); tony never sends back what it
     * received, so only a decode that works is held to the round trip. */
    if (!again) {
        free(a);
        return;
    }
    size_t n2 = protobuf_c_message_get_packed_size(again);
    uint8_t *b = tony_xmalloc(n2 + 1);
    protobuf_c_message_pack(again, b);
    FUZZ_CHECK(n2 == n && memcmp(a, b, n) == 0, "%s packs differently after a round trip", m->descriptor->name);
    protobuf_c_message_free_unpacked(again, NULL);
    free(a);
    free(b);
}

static void check_container(const Hadoop__Yarn__ContainerProto *c) {
    if (c->id) {
        yarn_container_id id;
        yarn_container_id_from_pb(c->id, &id);
        char s[YARN_ID_MAX];
        yarn_container_id_format(&id, s, sizeof s);
        yarn_container_id back;
        tony_error err;
        /* Negative numbers from the wire have no text form; the rest must
         * read back as they were. */
        if (yarn_container_id_parse(s, &back, &err) == 0)
            FUZZ_CHECK(back.id == id.id && back.attempt.attempt == id.attempt.attempt &&
                           back.attempt.app.id == id.attempt.app.id &&
                           back.attempt.app.cluster_ts == id.attempt.app.cluster_ts,
                       "container id %s does not parse back the same", s);
    }
    if (c->resource) {
        yarn_resource r;
        yarn_resource_from_pb(c->resource, &r);
    }
}

/* A scheduler client as the coordinator has one: an AMRMToken and two
 * asks outstanding; it never connects (no call is made). */
static yarn_amrm *new_amrm(void) {
    yarn_token *t = yarn_token_new("id", 2, "pw", 2, YARN_AMRM_TOKEN_KIND, "rm:8030");
    tony_error err;
    yarn_amrm *am = yarn_amrm_new("rm", 8030, t, &err);
    FUZZ_CHECK(am != NULL, "%s", err.msg);
    yarn_token_free(t);
    yarn_resource cap = {.memory_mb = 2048, .vcores = 1, .gpus = 0};
    yarn_amrm_add_request(am, 1, &cap, NULL, 2);
    yarn_amrm_add_request(am, 2, &cap, "gpu", 1);
    return am;
}

static void take_allocate(const Hadoop__Yarn__AllocateResponseProto *r) {
    yarn_amrm *am = new_amrm();
    yarn_allocation out;
    memset(&out, 0, sizeof out);
    yarn_amrm_take_allocate(am, r, &out);
    FUZZ_CHECK(out.n_allocated == r->n_allocated_containers, "%zu containers taken of %zu", out.n_allocated,
               r->n_allocated_containers);
    FUZZ_CHECK(out.n_completed == r->n_completed_container_statuses, "%zu completions taken of %zu", out.n_completed,
               r->n_completed_container_statuses);
    for (size_t i = 0; i < out.n_allocated; i++)
        FUZZ_CHECK(out.allocated[i].node_host && out.allocated[i].node_http_address &&
                       strlen(out.allocated[i].id) < sizeof out.allocated[i].id,
                   "container %zu taken without its fields", i);
    for (size_t i = 0; i < out.n_completed; i++)
        FUZZ_CHECK(out.completed[i].diagnostics != NULL, "completion %zu without diagnostics", i);
    yarn_allocation_free(&out);
    yarn_amrm_free(am);
}

static void take_register(const Hadoop__Yarn__RegisterApplicationMasterResponseProto *r) {
    yarn_amrm *am = new_amrm();
    yarn_register_info info;
    yarn_amrm_take_register(am, r, &info);
    FUZZ_CHECK(info.queue != NULL && info.n_previous == r->n_containers_from_previous_attempts,
               "register reply taken without its queue or containers");
    yarn_register_info_free(&info);
    yarn_amrm_free(am);
}

static void decode_payload(const uint8_t *p, size_t n) {
    static const ProtobufCMessageDescriptor *const responses[] = {
        &hadoop__yarn__register_application_master_response_proto__descriptor,
        &hadoop__yarn__allocate_response_proto__descriptor,
        &hadoop__yarn__finish_application_master_response_proto__descriptor,
        &hadoop__yarn__start_containers_response_proto__descriptor,
        &hadoop__yarn__stop_containers_response_proto__descriptor,
        &hadoop__yarn__get_container_statuses_response_proto__descriptor,
        &hadoop__common__rpc_sasl_proto__descriptor,
    };
    for (size_t i = 0; i < sizeof responses / sizeof *responses; i++) {
        ProtobufCMessage *m = protobuf_c_message_unpack(responses[i], NULL, n, p);
        if (!m) continue;
        check_repack(m);
        if (responses[i] == &hadoop__yarn__allocate_response_proto__descriptor) {
            const Hadoop__Yarn__AllocateResponseProto *a = (const void *)m;
            take_allocate(a);
            for (size_t k = 0; k < a->n_allocated_containers; k++) check_container(a->allocated_containers[k]);
            if (a->limit) {
                yarn_resource r;
                yarn_resource_from_pb(a->limit, &r);
            }
        } else if (responses[i] == &hadoop__yarn__register_application_master_response_proto__descriptor) {
            const Hadoop__Yarn__RegisterApplicationMasterResponseProto *r = (const void *)m;
            take_register(r);
            for (size_t k = 0; k < r->n_containers_from_previous_attempts; k++)
                check_container(r->containers_from_previous_attempts[k]);
            if (r->maximumcapability) {
                yarn_resource res;
                yarn_resource_from_pb(r->maximumcapability, &res);
            }
        } else if (responses[i] == &hadoop__common__rpc_sasl_proto__descriptor) {
            const Hadoop__Common__RpcSaslProto *s = (const void *)m;
            yarn_digest_challenge ch;
            tony_error err;
            if (s->has_token && yarn_sasl_parse_challenge(s->token.data, s->token.len, &ch, &err) == 0)
                yarn_digest_challenge_free(&ch);
            for (size_t k = 0; k < s->n_auths; k++)
                if (s->auths[k]->has_challenge &&
                    yarn_sasl_parse_challenge(s->auths[k]->challenge.data, s->auths[k]->challenge.len, &ch, &err) == 0)
                    yarn_digest_challenge_free(&ch);
        }
        protobuf_c_message_free_unpacked(m, NULL);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t pos = 0;
    /* As read_reply reads them: a 4-byte big-endian length, then the body. */
    for (int frames = 0; frames < 8 && size - pos >= 4; frames++) {
        uint32_t n = (uint32_t)data[pos] << 24 | (uint32_t)data[pos + 1] << 16 | (uint32_t)data[pos + 2] << 8 |
                     data[pos + 3];
        pos += 4;
        if (n == 0 || n > size - pos) break; /* read_reply refuses it, or the socket would wait */
        /* A copy of exactly n bytes, so that ASan sees any read past it. */
        uint8_t *body = tony_xmalloc(n);
        memcpy(body, data + pos, n);
        pos += n;
        ProtobufCMessage *hdr = NULL;
        const uint8_t *payload = NULL;
        size_t payload_len = 0;
        tony_error err;
        if (yarn_ipc_parse_reply(body, n, &hdr, &payload, &payload_len, &err) == 0) {
            FUZZ_CHECK(hdr != NULL, "a parsed reply has no header");
            FUZZ_CHECK(payload == NULL || (payload >= body && payload + payload_len == body + n),
                       "the payload is not the end of the frame");
            check_repack(hdr);
            protobuf_c_message_free_unpacked(hdr, NULL);
            if (payload) decode_payload(payload, payload_len);
        } else {
            FUZZ_CHECK(hdr == NULL && payload == NULL, "a refused reply handed back a header or payload");
        }
        free(body);
    }
    /* The whole input as a DIGEST-MD5 challenge, as the SASL step gets it. */
    yarn_digest_challenge ch;
    tony_error err;
    if (yarn_sasl_parse_challenge(data, size, &ch, &err) == 0) {
        FUZZ_CHECK(ch.nonce && *ch.nonce, "a challenge parsed without a nonce");
        yarn_digest_challenge_free(&ch);
    }
    return 0;
}
