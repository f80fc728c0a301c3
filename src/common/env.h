/* An ordered set of environment variables (later set() wins, order of first
 * appearance kept), and turning it into an envp for exec. */
#ifndef TONY_ENV_H
#define TONY_ENV_H

#include "common/strv.h"

typedef struct tony_env {
    tony_strv kv; /* "KEY=VALUE" entries, keys unique */
} tony_env;

void tony_env_set(tony_env *e, const char *key, const char *value);
void tony_env_setf(tony_env *e, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *tony_env_get(const tony_env *e, const char *key); /* NULL if unset */
void tony_env_unset(tony_env *e, const char *key);
/* Copies every entry of src into dst (src wins). */
void tony_env_merge(tony_env *dst, const tony_env *src);
/* Parses "K=V" (split at the first '=', trimmed; no '=' gives an empty value,
 * like TonY's parseKeyValue). Returns -1 on an empty key. */
int tony_env_set_kv(tony_env *e, const char *kv);
void tony_env_free(tony_env *e);

/* A NULL-terminated envp: this process's environment overlaid with e. The
 * result is owned by out (free with tony_strv_free). */
void tony_env_build_envp(const tony_env *e, tony_strv *out);

#endif
