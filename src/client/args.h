/* Command-line parsing in TonY's style (commons-cli GnuParser): every option
 * may be written -opt or --opt, with its value as the next word or after
 * '='; repeatable options collect every value. */
#ifndef TONY_ARGS_H
#define TONY_ARGS_H

#include <stdbool.h>

#include "common/error.h"
#include "common/strv.h"

typedef struct tony_opt {
    const char *name;     /* canonical, e.g. "src_dir" */
    const char *alias;    /* another accepted spelling or NULL, e.g. "dry_run" for "dry-run" */
    bool takes_value;
    bool repeatable;
    const char *help;
    /* results */
    bool seen;
    tony_strv values;
} tony_opt;

/* Parses argv against opts (NULL-name terminated). Words that are not options
 * go to positional. An unknown option is an error naming it and the nearest
 * known one. */
int tony_args_parse(int argc, char **argv, tony_opt *opts, tony_strv *positional, tony_error *err);
tony_opt *tony_args_get(tony_opt *opts, const char *name);
const char *tony_args_value(tony_opt *opts, const char *name); /* last value or NULL */
void tony_args_free(tony_opt *opts);
void tony_args_usage(const char *usage, const tony_opt *opts);

#endif
