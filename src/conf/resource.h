/* TonY's localizable resource syntax: SOURCE[::NAME_IN_CONTAINER][#archive],
 * comma separated. A directory source is zipped and unpacked as an archive. */
#ifndef TONY_RESOURCE_H
#define TONY_RESOURCE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

typedef struct tony_resource {
    char *source;  /* path or URI as written */
    char *name;    /* name inside the task's work dir (default: basename) */
    bool archive;  /* '#archive': unpacked into a directory called name */
} tony_resource;

typedef struct tony_resource_list {
    tony_resource *items;
    size_t len;
} tony_resource_list;

/* Parses one entry; more than one "::", an empty source, or a name that is
 * absolute or has a '..' component (it would land outside the task's work
 * dir) is an error that names the entry. */
int tony_resource_parse(const char *entry, tony_resource *out, tony_error *err);
/* Parses a comma list, skipping empty entries; appends to out. On an error
 * out is left as it was. */
int tony_resource_parse_list(const char *list, tony_resource_list *out, tony_error *err);
void tony_resource_free(tony_resource *r);
void tony_resource_list_free(tony_resource_list *l);

#endif
