/* --conf and --conf_file for every client verb: one loader, so that every
 * verb sees a configuration built exactly as submit builds its own. */
#include "client/confargs.h"

#include <stdlib.h>
#include <string.h>

#include "common/jobdir.h"
#include "common/strv.h"
#include "conf/keys.h"

int tony_confargs_load(tony_opt *opts, tony_conf *c, tony_error *err) {
    if (tony_conf_load_layers(c, tony_args_value(opts, "conf_file"), err)) return -1;
    tony_opt *confs = tony_args_get(opts, "conf");
    for (size_t i = 0; i < confs->values.len; i++) {
        const char *given = confs->values.items[i];
        char *kv = tony_strdup(given);
        char *eq = strchr(kv, '=');
        if (eq) *eq = '\0';
        char *key = tony_trim(kv);
        /* A bare word is a mistake (a lost '=' or value), never a key set to
         * nothing: KEY= says that. */
        if (!eq || !*key) {
            free(kv);
            return tony_err(err, "--conf %s: expected KEY=VALUE, e.g. --conf tony.history.location=/tmp/history",
                            given);
        }
        tony_conf_set_cli(c, key, tony_trim(eq + 1));
        free(kv);
    }
    return 0;
}

char *tony_confargs_root(tony_opt *opts, const tony_conf *c) {
    const char *given = tony_args_value(opts, "root"); /* NULL too when the verb has no --root */
    return tony_jobs_root(given ? given : tony_conf_get(c, TONY_KEY_LOCAL_ROOT));
}
