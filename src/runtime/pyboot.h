/* Python start-up for a task: the sitecustomize.py tony puts first on the
 * task's PYTHONPATH, which Python imports before the user's code. It sets
 * the variables that reached the task by file (taskenv.h, TONY_ENV_FILES),
 * imports the framework's modules that must run first (JAX's cluster hook),
 * then runs the sitecustomize it hides (Debian's apport hook, a user's own). */
#ifndef TONY_PYBOOT_H
#define TONY_PYBOOT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/env.h"
#include "common/error.h"

/* One Python module written beside the sitecustomize: <name>.py. */
typedef struct tony_pyboot_module {
    const char *name; /* a module name: letters, digits, '_' */
    const char *text;
    /* imported by the sitecustomize, in order, after the variables are set;
     * false: only there for others to import (JAX's cluster, imported by its hook) */
    bool at_start;
} tony_pyboot_module;

/* Writes into dir (made if missing) the n modules and the sitecustomize, and
 * puts dir first on env's PYTHONPATH (before env's own, else this process's).
 * Python run with -S, -E (PYTHONPATH ignored) or -I skips it, and so all
 * of this. */
int tony_pyboot_write(const char *dir, const tony_pyboot_module *mods, size_t n, tony_env *env, tony_error *err);

#endif
