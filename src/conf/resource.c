/* Parsing of TonY's resource strings (tony.<t>.resources,
 * tony.containers.resources): SOURCE[::NAME_IN_CONTAINER][#archive]. Staging
 * and localisation use the parsed form; nothing here touches the files. */
#include "conf/resource.h"

#include <stdlib.h>
#include <string.h>

#include "common/strv.h"

static const char archive_suffix[] = "#archive";

/* The last path segment, ignoring trailing slashes so that "data/" names
 * "data" rather than nothing. */
static char *default_name(const char *source) {
    size_t n = strlen(source);
    while (n > 1 && source[n - 1] == '/') n--;
    size_t start = n;
    while (start > 0 && source[start - 1] != '/') start--;
    char *name = tony_xmalloc(n - start + 1);
    memcpy(name, source + start, n - start);
    name[n - start] = '\0';
    return name;
}

/* The name is where the file lands in the task's work dir (YARN links it
 * there, the local backend puts it there): an absolute name or a '..'
 * component would put it anywhere the task's user may write. */
static bool name_stays_inside(const char *name) {
    if (name[0] == '/') return false;
    for (const char *s = name; *s;) {
        size_t n = strcspn(s, "/");
        if (n == 2 && s[0] == '.' && s[1] == '.') return false;
        s += n;
        if (*s == '/') s++;
    }
    return true;
}

int tony_resource_parse(const char *entry, tony_resource *out, tony_error *err) {
    memset(out, 0, sizeof *out);
    char *copy = tony_strdup(entry ? entry : "");
    char *s = tony_trim(copy);
    int rc = -1;

    size_t n = strlen(s), an = sizeof archive_suffix - 1;
    bool archive = n >= an && strcmp(s + n - an, archive_suffix) == 0;
    if (archive) s[n - an] = '\0';

    char *sep = strstr(s, "::");
    char *name = NULL;
    if (sep) {
        if (strstr(sep + 2, "::")) {
            tony_err(err, "resource '%s' has more than one '::'; the form is SOURCE[::NAME][#archive]", entry);
            goto out;
        }
        *sep = '\0';
        name = tony_trim(sep + 2);
        if (!*name) {
            tony_err(err, "resource '%s' has an empty name after '::'; the form is SOURCE[::NAME][#archive]",
                     entry);
            goto out;
        }
    }
    s = tony_trim(s);
    if (!*s) {
        tony_err(err, "resource '%s' has an empty source; the form is SOURCE[::NAME][#archive]", entry ? entry : "");
        goto out;
    }
    char *base = name ? tony_strdup(name) : default_name(s);
    if (!*base || strcmp(base, "/") == 0) {
        free(base);
        tony_err(err, "resource '%s' has no file name to use in the container; add ::NAME", entry);
        goto out;
    }
    if (!name_stays_inside(base)) {
        tony_err(err,
                 "resource '%s': its name in the container '%s' must be a relative path inside the task's work dir "
                 "(no leading '/', no '..'); write SOURCE::NAME with a name such as 'data/train.csv'",
                 entry, base);
        free(base);
        goto out;
    }
    out->source = tony_strdup(s);
    out->name = base;
    out->archive = archive;
    rc = 0;
out:
    free(copy);
    return rc;
}

int tony_resource_parse_list(const char *list, tony_resource_list *out, tony_error *err) {
    tony_strv entries = {0};
    tony_split_csv(list, &entries);
    size_t had = out->len;
    int rc = 0;
    for (size_t i = 0; i < entries.len && rc == 0; i++) {
        tony_resource r;
        rc = tony_resource_parse(entries.items[i], &r, err);
        if (rc) break;
        out->items = tony_xrealloc(out->items, (out->len + 1) * sizeof *out->items);
        out->items[out->len++] = r;
    }
    tony_strv_free(&entries);
    /* A list with a bad entry adds nothing: callers that give up on the
     * error need not free what came before it. */
    if (rc) {
        while (out->len > had) tony_resource_free(&out->items[--out->len]);
        if (had == 0) {
            free(out->items);
            out->items = NULL;
        }
    }
    return rc;
}

void tony_resource_free(tony_resource *r) {
    if (!r) return;
    free(r->source);
    free(r->name);
    r->source = r->name = NULL;
    r->archive = false;
}

void tony_resource_list_free(tony_resource_list *l) {
    if (!l) return;
    for (size_t i = 0; i < l->len; i++) tony_resource_free(&l->items[i]);
    free(l->items);
    l->items = NULL;
    l->len = 0;
}
