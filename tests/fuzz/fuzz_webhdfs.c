/* Fuzzes what tony reads from HDFS's NameNode over WebHDFS
 * (backend/yarn/webhdfs.c): GETFILESTATUS (the connect probe of an HA
 * pair, and stat), LISTSTATUS, MKDIRS and RENAME's booleans, the
 * delegation token and its renewal, the DataNode Location of a CREATE or
 * OPEN redirect, and the RemoteException bodies of refusals (rest.c), each
 * reply served by a stand-in NameNode over real HTTP (fuzz_http.h). Input
 * format: replies separated by "\n===\n", each its HTTP status on the
 * first line then its body, answering in turn: the connect probe, stat,
 * LISTSTATUS, MKDIRS, GETDELEGATIONTOKEN, RENEWDELEGATIONTOKEN, RENAME,
 * DELETE, OPEN. Properties: no crash, leak or UB; a listing never names
 * "" (a file's own entry) and its count matches; a refusal names the
 * NameNode; what a call that succeeded gives is there. */
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "backend/yarn/webhdfs.h"
#include "fuzz_http.h"

static char *nn;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet();
    nn = fuzz_http_url();
    return 0;
}

static void check_refusal(const tony_error *err) {
    FUZZ_CHECK(strstr(err->msg, fuzz_http_start()) != NULL, "a NameNode's refusal does not name it: %s", err->msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_http_set(data, size);
    tony_webhdfs *w = tony_webhdfs_new_at(nn, "the fuzzer", "hdfs://fuzz:8020", "the fuzzer", "fuzz");
    tony_webhdfs_set_timeouts(w, 5000, 5, 5);
    tony_error err;
    if (tony_webhdfs_connect(w, &err) != 0) {
        check_refusal(&err);
        goto out;
    }
    tony_hdfs_status st = {0};
    bool exists = false;
    if (tony_webhdfs_stat(w, "/user/fuzz/a b", &st, &exists, &err)) check_refusal(&err);
    tony_hdfs_entry *e = NULL;
    size_t n = 0;
    bool missing = false;
    if (tony_webhdfs_list_status(w, "/user/fuzz", &e, &n, &missing, &err) == 0) {
        for (size_t i = 0; i < n; i++) FUZZ_CHECK(e[i].name && *e[i].name, "listing entry %zu has no name", i);
        if (missing) FUZZ_CHECK(n == 0 && e == NULL, "a missing dir listed %zu entries", n);
    } else {
        FUZZ_CHECK(e == NULL && n == 0, "a failed listing gave entries");
        check_refusal(&err);
    }
    tony_hdfs_entries_free(e, n);
    if (tony_webhdfs_mkdirs(w, "/user/fuzz/.tony", "700", &err)) check_refusal(&err);
    char *token = NULL;
    if (tony_webhdfs_delegation_token(w, "rm/_HOST", "ha-hdfs:fuzz", &token, &err) == 0)
        FUZZ_CHECK(token && *token, "a delegation token call succeeded with no token");
    else
        check_refusal(&err);
    long long expiry = 0;
    if (tony_webhdfs_renew_delegation_token(w, token ? token : "tok", &expiry, &err) == 0)
        FUZZ_CHECK(expiry > 0, "a renewal succeeded with no expiry");
    else
        check_refusal(&err);
    free(token);
    if (tony_webhdfs_rename(w, "/user/fuzz/a", "/user/fuzz/b", &err)) check_refusal(&err);
    if (tony_webhdfs_delete(w, "/user/fuzz/b", true, &err)) check_refusal(&err);
    /* OPEN's Location: followed only to the stand-in ("@@"), as a
     * DataNode elsewhere would have the fuzzer wait on the network. */
    pthread_mutex_lock(&fuzz_http.mu);
    size_t at = fuzz_http.next < fuzz_http.nreplies ? fuzz_http.next : fuzz_http.nreplies - 1;
    const tony_buf *b = &fuzz_http.replies[at].body;
    json_t *j = json_loadb(b->data ? b->data : "", b->len, 0, NULL);
    pthread_mutex_unlock(&fuzz_http.mu);
    const char *loc = json_string_value(json_object_get(j, "Location"));
    char *prefix = tony_sprintf("%s/", nn);
    bool here = loc && strncmp(loc, prefix, strlen(prefix)) == 0;
    free(prefix);
    json_decref(j);
    if (here) {
        char *local = tony_path_join(fuzz_scratch(), "open");
        if (tony_webhdfs_get(w, "/user/fuzz/b", local, &err)) FUZZ_CHECK(*err.msg, "a failed OPEN has no reason");
        unlink(local);
        free(local);
    }
out:
    tony_webhdfs_free(w);
    fuzz_http_done();
    return 0;
}
