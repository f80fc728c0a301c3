/* Parsing of tony.docker.containers.mount (TonY's SRC:DST[:ro|rw] list)
 * into mounts, and their canonical SRC:DST:MODE form. Pure: which sources
 * exist, and which the cluster allows, is for the backend that mounts. */
#include "conf/dockermount.h"

#include <stdlib.h>
#include <string.h>

#include "common/strv.h"

#define FORM "the form is SRC:DST[:ro|rw], both absolute paths, comma separated"

/* A control character would break the env line YARN writes into the
 * container's launch script, and names no real path. */
static bool has_control(const char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return true;
    return false;
}

static int parse_entry(const char *entry, tony_docker_mount *out, tony_error *err) {
    if (has_control(entry))
        return tony_err(err, "%s: mount '%s' has a control character; " FORM, TONY_DOCKER_MOUNT_KEY, entry);
    tony_strv f = {0};
    char *copy = tony_strdup(entry);
    /* strtok_r would merge "a::b"'s empty field away; split by hand. */
    for (char *s = copy;;) {
        char *colon = strchr(s, ':');
        if (colon) *colon = '\0';
        tony_strv_push(&f, tony_trim(s));
        if (!colon) break;
        s = colon + 1;
    }
    free(copy);
    int rc = 0;
    if (f.len < 2 || f.len > 3) {
        rc = tony_err(err, "%s: mount '%s' has %zu field(s) separated by ':'; " FORM, TONY_DOCKER_MOUNT_KEY, entry,
                      f.len);
    } else if (f.items[0][0] != '/' || f.items[1][0] != '/') {
        rc = tony_err(err, "%s: mount '%s': %s '%s' is not an absolute path; " FORM, TONY_DOCKER_MOUNT_KEY, entry,
                      f.items[0][0] != '/' ? "the source" : "the destination",
                      f.items[0][0] != '/' ? f.items[0] : f.items[1]);
    } else if (f.len == 3 && strcmp(f.items[2], "ro") != 0 && strcmp(f.items[2], "rw") != 0) {
        rc = tony_err(err, "%s: mount '%s' has the mode '%s'; the mode is ro or rw (or left out: rw); " FORM,
                      TONY_DOCKER_MOUNT_KEY, entry, f.items[2]);
    } else {
        out->src = tony_strdup(f.items[0]);
        out->dst = tony_strdup(f.items[1]);
        out->readonly = f.len == 3 && strcmp(f.items[2], "ro") == 0;
    }
    tony_strv_free(&f);
    return rc;
}

int tony_docker_mounts_parse(const char *spec, tony_docker_mounts *out, tony_error *err) {
    memset(out, 0, sizeof *out);
    tony_strv entries = {0};
    tony_split_csv(spec, &entries);
    out->items = tony_xcalloc(entries.len + 1, sizeof *out->items);
    int rc = 0;
    for (size_t i = 0; i < entries.len && rc == 0; i++) {
        rc = parse_entry(entries.items[i], &out->items[out->len], err);
        if (rc == 0) out->len++;
    }
    tony_strv_free(&entries);
    if (rc) tony_docker_mounts_free(out);
    return rc;
}

char *tony_docker_mounts_format(const tony_docker_mounts *m) {
    if (!m->len) return NULL;
    tony_strv v = {0};
    for (size_t i = 0; i < m->len; i++)
        tony_strv_pushf(&v, "%s:%s:%s", m->items[i].src, m->items[i].dst, m->items[i].readonly ? "ro" : "rw");
    char *s = tony_strv_join(&v, ",");
    tony_strv_free(&v);
    return s;
}

void tony_docker_mounts_free(tony_docker_mounts *m) {
    for (size_t i = 0; i < m->len; i++) {
        free(m->items[i].src);
        free(m->items[i].dst);
    }
    free(m->items);
    memset(m, 0, sizeof *m);
}
