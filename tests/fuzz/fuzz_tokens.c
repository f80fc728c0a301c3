/* Fuzzes the Hadoop token storage reader (backend/yarn/tokens.c:
 * yarn_credentials_parse, both the Writable and the protobuf format), which
 * reads $HADOOP_TOKEN_FILE_LOCATION in every YARN container. Properties: no
 * crash, leak or UB; credentials that parse write back (Writable form) to
 * bytes that parse to the same tokens and secrets, byte for byte. */
#include <stdint.h>
#include <string.h>

#include "backend/yarn/tokens.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet();
    return 0;
}

static bool same_bytes(const void *a, size_t an, const void *b, size_t bn) {
    return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

static void check_same(const yarn_credentials *a, const yarn_credentials *b) {
    FUZZ_CHECK(a->n_tokens == b->n_tokens && a->n_secrets == b->n_secrets, "%zu/%zu tokens/secrets came back as %zu/%zu",
               a->n_tokens, a->n_secrets, b->n_tokens, b->n_secrets);
    for (size_t i = 0; i < a->n_tokens; i++) {
        const yarn_token *x = a->tokens[i].token, *y = b->tokens[i].token;
        FUZZ_CHECK(strcmp(a->tokens[i].alias, b->tokens[i].alias) == 0, "token %zu's alias changed", i);
        FUZZ_CHECK(same_bytes(x->identifier, x->identifier_len, y->identifier, y->identifier_len) &&
                       same_bytes(x->password, x->password_len, y->password, y->password_len) &&
                       strcmp(x->kind, y->kind) == 0 && strcmp(x->service, y->service) == 0,
                   "token %zu (%s) did not come back the same", i, a->tokens[i].alias);
    }
    for (size_t i = 0; i < a->n_secrets; i++)
        FUZZ_CHECK(strcmp(a->secrets[i].alias, b->secrets[i].alias) == 0 &&
                       same_bytes(a->secrets[i].data, a->secrets[i].len, b->secrets[i].data, b->secrets[i].len),
                   "secret %zu did not come back the same", i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    yarn_credentials *c = NULL;
    tony_error err;
    if (yarn_credentials_parse(data, size, "the fuzz input", &c, &err) == 0) {
        tony_buf out = {0};
        yarn_credentials_write(c, &out);
        yarn_credentials *back = NULL;
        FUZZ_CHECK(yarn_credentials_parse(out.data, out.len, "the written back", &back, &err) == 0,
                   "credentials written back do not parse: %s", err.msg);
        check_same(c, back);
        yarn_credentials_free(back);
        tony_buf_free(&out);
        yarn_credentials_free(c);
    } else {
        FUZZ_CHECK(c == NULL, "a failed parse handed back credentials");
    }
    /* The variable-length integers on their own. */
    size_t pos = 0;
    int64_t v;
    while (pos < size && yarn_vlong_read(data, size, &pos, &v) == 0) {
        tony_buf b = {0};
        yarn_vlong_write(&b, v);
        size_t p2 = 0;
        int64_t w;
        FUZZ_CHECK(yarn_vlong_read((const unsigned char *)b.data, b.len, &p2, &w) == 0 && w == v && p2 == b.len,
                   "vlong %lld does not read back", (long long)v);
        tony_buf_free(&b);
    }
    return 0;
}
