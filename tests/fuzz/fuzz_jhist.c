/* Fuzzes the .jhist reader (common/jhist.c: tony_jhist_read, on
 * common/avroread.c's decoder), which `tony history` and the history portal
 * run on whatever files they find. Properties: no crash, leak or UB; what
 * comes back is a JSON array (or NULL on damage with nothing before it);
 * and, with the limits `make fuzz` runs it under (-malloc_limit_mb,
 * -rss_limit_mb, see tests/fuzz/run), what a file makes the reader hold
 * stays small (issue 11 #5: 919 bytes once took 200 MB). */
#include <jansson.h>
#include <stdint.h>

#include "common/jhist.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *path = fuzz_write_input("in.jhist", data, size);
    json_t *events = NULL;
    tony_error err;
    int rc = tony_jhist_read(path, &events, &err);
    FUZZ_CHECK(events == NULL || json_is_array(events), "events are not an array");
    if (rc == 0) FUZZ_CHECK(events != NULL, "a good read gave no events array");
    if (rc != 0) FUZZ_CHECK(events == NULL || json_array_size(events) > 0, "damage gave an empty array, not NULL");
    /* The portal and `tony history` send the events on as JSON: each must
     * encode (a file whose schema is not Event's gives other values). */
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        char *s = json_dumps(ev, JSON_COMPACT | JSON_ENCODE_ANY);
        FUZZ_CHECK(s != NULL, "event %zu cannot be written as JSON", i);
        free(s);
    }
    json_decref(events);
    free(path);
    return 0;
}
