/* TonY-compatible option parsing. */
#include "client/args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tony_opt *lookup(tony_opt *opts, const char *name, size_t n) {
    for (tony_opt *o = opts; o->name; o++) {
        if (strlen(o->name) == n && strncmp(o->name, name, n) == 0) return o;
        if (o->alias && strlen(o->alias) == n && strncmp(o->alias, name, n) == 0) return o;
    }
    return NULL;
}

int tony_args_parse(int argc, char **argv, tony_opt *opts, tony_strv *positional, tony_error *err) {
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || a[1] == '\0') {
            tony_strv_push(positional, a);
            continue;
        }
        const char *name = a + (a[1] == '-' ? 2 : 1);
        const char *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        tony_opt *o = lookup(opts, name, n);
        if (!o) {
            const char *best = NULL;
            size_t bestd = (size_t)-1;
            for (tony_opt *k = opts; k->name; k++) {
                size_t d = tony_edit_distance(name, k->name);
                if (d < bestd) bestd = d, best = k->name;
            }
            if (best && bestd <= 3) return tony_err(err, "unknown option %s; did you mean --%s?", a, best);
            return tony_err(err, "unknown option %s (see --help)", a);
        }
        if (o->seen && !o->repeatable && o->takes_value)
            return tony_err(err, "option --%s given twice; it takes one value", o->name);
        o->seen = true;
        if (!o->takes_value) {
            if (eq) return tony_err(err, "option --%s takes no value", o->name);
            continue;
        }
        const char *value;
        if (eq) value = eq + 1;
        else if (i + 1 < argc) value = argv[++i];
        else return tony_err(err, "option --%s needs a value", o->name);
        tony_strv_push(&o->values, value);
    }
    return 0;
}

tony_opt *tony_args_get(tony_opt *opts, const char *name) { return lookup(opts, name, strlen(name)); }

const char *tony_args_value(tony_opt *opts, const char *name) {
    tony_opt *o = tony_args_get(opts, name);
    return o && o->values.len ? o->values.items[o->values.len - 1] : NULL;
}

void tony_args_free(tony_opt *opts) {
    for (tony_opt *o = opts; o->name; o++) tony_strv_free(&o->values);
}

void tony_args_usage(const char *usage, const tony_opt *opts) {
    printf("%s\n\nOptions (-opt and --opt both work; --opt=value too):\n", usage);
    for (const tony_opt *o = opts; o->name; o++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s", o->name, o->takes_value ? " VALUE" : "");
        printf("  %-34s %s\n", left, o->help);
    }
}
