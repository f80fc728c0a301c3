/* Configurations built from "key=value" pairs, as the client merges --conf
 * over the defaults, for the tests that turn them into plans (test_plan.c,
 * test_local_fit.c). Include after <cmocka.h>. */
#ifndef TONY_TEST_CONF_PAIRS_H
#define TONY_TEST_CONF_PAIRS_H

#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"

#define assert_contains(haystack, needle)                                                              \
    do {                                                                                               \
        const char *h_ = (haystack), *n_ = (needle);                                                   \
        if (!h_ || !strstr(h_, n_)) fail_msg("expected \"%s\" to contain \"%s\"", h_ ? h_ : "(null)", n_); \
    } while (0)

/* Defaults plus "key=value" pairs (NULL-terminated), as the client would merge them. */
static inline tony_conf *conf_with(const char *const *kvs) {
    tony_conf *c = tony_conf_new();
    tony_conf_load_defaults(c);
    for (int i = 0; kvs[i]; i++) {
        const char *eq = strchr(kvs[i], '=');
        assert_non_null(eq);
        char *key = strndup(kvs[i], (size_t)(eq - kvs[i]));
        tony_conf_set_cli(c, key, eq + 1);
        free(key);
    }
    return c;
}

#define CONF(...) conf_with((const char *const[]){__VA_ARGS__, NULL})

#endif
