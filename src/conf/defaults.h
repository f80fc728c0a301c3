/* The built-in defaults: every key of TonY's tony-default.xml with its value,
 * plus tony's own keys, each with a one-line description so that --dry-run
 * and the docs can explain a key without a second source of truth. */
#ifndef TONY_CONF_DEFAULTS_H
#define TONY_CONF_DEFAULTS_H

#include <stddef.h>

typedef struct tony_conf_default {
    const char *key;
    /* NULL: documented but unset by default (tony_conf_load_defaults skips it;
     * the reader decides, e.g. the client auto-detects the backend). */
    const char *value;
    const char *description;
} tony_conf_default;

/* The table, in the order a reader would want to see it; *n gets its size. */
const tony_conf_default *tony_conf_defaults(size_t *n);
/* The entry for key, or NULL if the key has no built-in entry. */
const tony_conf_default *tony_conf_default_find(const char *key);
/* tony.application.name when the user set none: the framework's name and
 * "Application" (TonY's TensorFlowApplication for tensorflow, PyTorchApplication
 * for pytorch), so that a job is not named after a framework it does not use.
 * framework: a runtime's name, any case. Freed by the caller. */
char *tony_conf_default_app_name(const char *framework);

#endif
