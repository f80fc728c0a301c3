/* tony_env: the environment handed to executors and user processes. */
#include "common/env.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

static int find_key(const tony_env *e, const char *key) {
    size_t n = strlen(key);
    for (size_t i = 0; i < e->kv.len; i++)
        if (strncmp(e->kv.items[i], key, n) == 0 && e->kv.items[i][n] == '=') return (int)i;
    return -1;
}

void tony_env_set(tony_env *e, const char *key, const char *value) {
    /* copied, not printf'd: a value may be a cluster's list (TF_CONFIG,
     * hundreds of KB), which glibc's printf copies in small pieces */
    size_t kn = strlen(key), vn = value ? strlen(value) : 0;
    char *entry = tony_xmalloc(kn + vn + 2);
    memcpy(entry, key, kn);
    entry[kn] = '=';
    if (vn) memcpy(entry + kn + 1, value, vn);
    entry[kn + 1 + vn] = '\0';
    int i = find_key(e, key);
    if (i >= 0) {
        free(e->kv.items[i]);
        e->kv.items[i] = entry;
    } else {
        tony_strv_push(&e->kv, entry);
        free(entry);
    }
}

void tony_env_setf(tony_env *e, const char *key, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *v;
    if (vasprintf(&v, fmt, ap) < 0) v = NULL;
    va_end(ap);
    tony_env_set(e, key, v ? v : "");
    free(v);
}

const char *tony_env_get(const tony_env *e, const char *key) {
    int i = find_key(e, key);
    return i < 0 ? NULL : strchr(e->kv.items[i], '=') + 1;
}

void tony_env_unset(tony_env *e, const char *key) {
    int i = find_key(e, key);
    if (i < 0) return;
    free(e->kv.items[i]);
    memmove(&e->kv.items[i], &e->kv.items[i + 1], (e->kv.len - (size_t)i) * sizeof(char *));
    e->kv.len--;
}

void tony_env_merge(tony_env *dst, const tony_env *src) {
    for (size_t i = 0; i < src->kv.len; i++) {
        const char *kv = src->kv.items[i];
        const char *eq = strchr(kv, '=');
        char *key = strndup(kv, (size_t)(eq - kv));
        tony_env_set(dst, key, eq + 1);
        free(key);
    }
}

int tony_env_set_kv(tony_env *e, const char *kv) {
    char *copy = tony_strdup(kv);
    char *eq = strchr(copy, '=');
    const char *value = "";
    if (eq) {
        *eq = '\0';
        value = tony_trim(eq + 1);
    }
    char *key = tony_trim(copy);
    int rc = -1;
    if (*key) {
        tony_env_set(e, key, value);
        rc = 0;
    }
    free(copy);
    return rc;
}

void tony_env_free(tony_env *e) { tony_strv_free(&e->kv); }

void tony_env_build_envp(const tony_env *e, tony_strv *out) {
    tony_env all = {0};
    for (char **p = environ; p && *p; p++) {
        const char *eq = strchr(*p, '=');
        if (!eq || eq == *p) continue;
        char *key = strndup(*p, (size_t)(eq - *p));
        tony_env_set(&all, key, eq + 1);
        free(key);
    }
    tony_env_merge(&all, e);
    *out = all.kv;
}
