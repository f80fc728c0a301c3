/* Fuzzes the configuration XML loader (conf/conf.c: tony_conf_load_file),
 * which reads tony.xml, tony-site.xml and every tony-final.xml the history
 * portal finds. Properties: no crash, leak or UB on any bytes; a file that
 * loads writes back (tony_conf_write_file) to one that loads to the very
 * same keys and values, in the same order. */
#include <stdint.h>
#include <string.h>

#include "conf/conf.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *path = fuzz_write_input("in.xml", data, size);
    tony_conf *c = tony_conf_new();
    tony_error err;
    if (tony_conf_load_file(c, path, &err) == 0) {
        char *out = tony_path_join(fuzz_scratch(), "out.xml");
        FUZZ_CHECK(tony_conf_write_file(c, out, &err) == 0, "cannot write back a loaded conf: %s", err.msg);
        tony_conf *back = tony_conf_new();
        FUZZ_CHECK(tony_conf_load_file(back, out, &err) == 0, "the conf written back does not load: %s", err.msg);
        FUZZ_CHECK(tony_conf_size(back) == tony_conf_size(c), "%zu keys written back as %zu", tony_conf_size(c),
                   tony_conf_size(back));
        for (size_t i = 0; i < tony_conf_size(c); i++) {
            FUZZ_CHECK(strcmp(tony_conf_key_at(c, i), tony_conf_key_at(back, i)) == 0, "key %zu '%s' came back as '%s'",
                       i, tony_conf_key_at(c, i), tony_conf_key_at(back, i));
            FUZZ_CHECK(strcmp(tony_conf_value_at(c, i), tony_conf_value_at(back, i)) == 0,
                       "value of %s '%s' came back as '%s'", tony_conf_key_at(c, i), tony_conf_value_at(c, i),
                       tony_conf_value_at(back, i));
        }
        tony_conf_free(back);
        free(out);
    }
    tony_conf_free(c);
    free(path);
    return 0;
}
