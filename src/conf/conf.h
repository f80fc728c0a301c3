/* TonY-compatible configuration: Hadoop configuration XML files, TonY's
 * built-in defaults (every key of tony-default.xml), TonY's precedence and
 * multi-value append, typed getters whose errors name the key. */
#ifndef TONY_CONF_H
#define TONY_CONF_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "common/strv.h"

typedef struct tony_conf tony_conf;

tony_conf *tony_conf_new(void);
void tony_conf_free(tony_conf *c);
tony_conf *tony_conf_clone(const tony_conf *c);

/* Loads TonY's defaults (tony-default.xml's keys and values). */
void tony_conf_load_defaults(tony_conf *c);
/* Loads a Hadoop configuration XML file; later loads override earlier ones
 * (but never a key an earlier file marked <final>true</final>). Errors name
 * the file and, for malformed XML, the line. */
int tony_conf_load_file(tony_conf *c, const char *path, tony_error *err);
/* A configuration file has at most this many bytes (TonY's are a few KB):
 * tony_conf_load_file refuses a larger one, and anything but a regular
 * file (a FIFO, /dev/zero, a directory), at once, without reading it. */
#define TONY_CONF_FILE_MAX (16u << 20)
/* The same from a file's bytes already read (path for messages). */
int tony_conf_load_text(tony_conf *c, const char *path, const char *data, size_t len, tony_error *err);
/* Loads the client's layers in TonY's order: defaults, then conf_file (or
 * ./tony.xml when conf_file is NULL and it exists), then
 * $TONY_CONF_DIR/tony-site.xml when it exists, each from a file no other
 * user controls (below). --conf values come after,
 * through tony_conf_set_cli. An error names the file and where it came
 * from (--conf_file, ./tony.xml, TONY_CONF_DIR). */
int tony_conf_load_layers(tony_conf *c, const char *conf_file, tony_error *err);
/* Each layer's file must be its user's or root's and writable by nobody
 * else (another user's ./tony.xml could set BASH_ENV for every task), or
 * be named in this environment variable: a colon-separated list of files
 * the user accepts as they are. */
#define TONY_ENV_TRUST_CONF "TONY_TRUST_CONF"

/* Plain set: replaces. source says where the value came from (shown by
 * --dry-run and written to tony-final.xml). */
void tony_conf_set(tony_conf *c, const char *key, const char *value, const char *source);
/* --conf semantics: the multi-value keys (tony.containers.envs,
 * tony.execution.envs, tony.containers.resources) get the value appended with
 * a comma; any other key is replaced. */
void tony_conf_set_cli(tony_conf *c, const char *key, const char *value);
bool tony_conf_is_multi_value(const char *key);
void tony_conf_unset(tony_conf *c, const char *key);

const char *tony_conf_get(const tony_conf *c, const char *key); /* NULL if unset */
const char *tony_conf_get_source(const tony_conf *c, const char *key);
/* Typed getters. When the key is unset or empty, *out = def and 0 is returned.
 * A malformed value gives -1 and an error naming the key, the value and the
 * expected form. */
int tony_conf_get_ll(const tony_conf *c, const char *key, long long def, long long *out, tony_error *err);
int tony_conf_get_bool(const tony_conf *c, const char *key, bool def, bool *out, tony_error *err);
/* Memory strings as TonY parses them: "2g" -> 2048, "512m" -> 512, "3" -> 3
 * (MB); case-insensitive. */
int tony_conf_get_memory_mb(const tony_conf *c, const char *key, const char *def, long long *out, tony_error *err);
/* A duration in milliseconds: a plain number is ms; "500ms", "30s", "5m"
 * and "2h" name their unit (case-insensitive, no space). Negative or
 * malformed values are an error naming the key and the accepted forms. */
int tony_conf_get_duration_ms(const tony_conf *c, const char *key, long long def, long long *out, tony_error *err);
bool tony_parse_duration_ms(const char *s, long long *out);
/* Comma list, trimmed, empty entries dropped. */
void tony_conf_get_list(const tony_conf *c, const char *key, tony_strv *out);

/* Parses a memory string; false if malformed or negative. */
bool tony_parse_memory_mb(const char *s, long long *out);

/* Job types: every <t> of a key tony.<t>.instances with <t> in [a-z]+, sorted. */
void tony_conf_job_types(const tony_conf *c, tony_strv *out);

/* Iteration in insertion order. */
size_t tony_conf_size(const tony_conf *c);
const char *tony_conf_key_at(const tony_conf *c, size_t i);
const char *tony_conf_value_at(const tony_conf *c, size_t i);

/* Writes all keys as Hadoop configuration XML (tony-final.xml). */
int tony_conf_write_file(const tony_conf *c, const char *path, tony_error *err);

#endif
