/* Fuzzes TonY's resource strings (conf/resource.c: SOURCE[::NAME][#archive],
 * comma separated), as --conf tony.containers.resources gives them.
 * Properties: no crash, leak or UB; a list that fails to parse leaves the
 * caller's list exactly as it was (issue 11 #13); each entry parsed has a
 * non-empty source and name, and parsing it again alone gives the same. */
#include <stdint.h>
#include <string.h>

#include "conf/resource.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = tony_xmalloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    tony_resource_list l = {0};
    tony_error err;
    /* One entry there before, as the client's list of earlier layers. */
    FUZZ_CHECK(tony_resource_parse_list("/data/keep.zip::keep#archive", &l, &err) == 0, "seed entry refused");
    if (tony_resource_parse_list(s, &l, &err) != 0) {
        FUZZ_CHECK(l.len == 1, "a failed parse changed the list (len %zu)", l.len);
        FUZZ_CHECK(strcmp(l.items[0].source, "/data/keep.zip") == 0 && strcmp(l.items[0].name, "keep") == 0 &&
                       l.items[0].archive,
                   "a failed parse changed the entry already there");
    } else {
        for (size_t i = 1; i < l.len; i++) {
            const tony_resource *r = &l.items[i];
            FUZZ_CHECK(r->source && *r->source, "entry %zu has an empty source", i);
            FUZZ_CHECK(r->name && *r->name, "entry %zu (%s) has an empty name", i, r->source);
        }
    }
    tony_resource_list_free(&l);
    /* The whole input as one entry. */
    tony_resource r = {0};
    if (tony_resource_parse(s, &r, &err) == 0) {
        FUZZ_CHECK(r.source && *r.source && r.name && *r.name, "an entry parsed to an empty source or name");
        tony_resource_free(&r);
    }
    free(s);
    return 0;
}
