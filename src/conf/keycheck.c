/* Which tony.* keys exist, beyond the defaults table (conf/defaults.c, the
 * keys with a default or a description): TonY's keys that tony accepts
 * without a default, the per-<type> keys, and keys read under a prefix. */
#include "conf/keycheck.h"

#include <stdlib.h>
#include <string.h>

#include "conf/defaults.h"

/* Keys tony reads or accepts that the defaults table does not list. */
static const char *const other_keys[] = {
    "tony.python-exec-path",   /* --python_binary_path */
    "tony.application.id", "tony.job.secret", "tony.keytab", "tony.keytab.principal", "tony.token.sources",
    "tony.slurm.account", "tony.slurm.partition", "tony.slurm.staging-dir", "tony.am.resources",
    "tony.tensorboard.command", "tony.tensorboard.instances", "tony.docker.am.image",
    /* TonY's, accepted and not acted on (YARN placement, Java, its portal) */
    "tony.am.startup-timeout", "tony.application.hadoop.classpath", "tony.application.hadoop.location",
    "tony.application.placement-spec", "tony.containers.allocation-tags", "tony.containers.placement-spec",
    "tony.history.host", "tony.history.cache.max-entries", "tony.history.maxAppends", "tony.init.module",
    "tony.application.single-node", "tony.application.docker.enabled", "tony.application.docker.image",
    "tony.task.default.jvm.opts", "tony.task.executor.execution.error-message-max-depth",
    "tony.task.executor.registry-timeout-sec", "tony.task.heartbeat-interval", "tony.chief.name",
    "tony.chief.index", "tony.driver.command",
};

/* tony.<type>.<attribute>: what a job type may set (any other attribute is
 * a resource of TonY's tony.<type>.<resource>). */
static const char *const type_attributes[] = {
    "instances", "memory", "vcores", "gpus", "command", "resources", "node-label", "restart-policy",
    "max-instances", "allocation-tags", "depends-on", "placement-spec", "timeout",
};

/* Families: a fixed prefix, then anything (a <type>, a resource...). */
static const char *const prefixes[] = {
    "tony.version-info.", "tony.application.dependency.", "tony.driver.", "tony.task.max-total-",
    "tony.docker.", "tony.slurm.", "tony.horovod.",
};

static bool is_type_name(const char *s, size_t n) {
    return n > 0 && strspn(s, "abcdefghijklmnopqrstuvwxyz") >= n;
}

/* key = tony.<type>.<attr>: the type's length (0: not that shape). */
static size_t type_of(const char *key, const char **attr) {
    if (strncmp(key, "tony.", 5) != 0) return 0;
    const char *t = key + 5, *dot = strchr(t, '.');
    if (!dot || !is_type_name(t, (size_t)(dot - t)) || strchr(dot + 1, '.')) return 0;
    *attr = dot + 1;
    return (size_t)(dot - t);
}

static bool listed(const char *const *list, size_t n, const char *s) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], s) == 0) return true;
    return false;
}

#define COUNT(a) (sizeof(a) / sizeof *(a))

static bool exact(const char *key) {
    return tony_conf_default_find(key) != NULL || listed(other_keys, COUNT(other_keys), key);
}

bool tony_conf_key_is_known(const char *key) {
    if (exact(key)) return true;
    for (size_t i = 0; i < COUNT(prefixes); i++)
        if (strncmp(key, prefixes[i], strlen(prefixes[i])) == 0 && key[strlen(prefixes[i])]) return true;
    const char *attr;
    return type_of(key, &attr) && listed(type_attributes, COUNT(type_attributes), attr);
}

typedef struct nearest {
    char *key;
    size_t distance;
} nearest;

static void consider(nearest *n, const char *typed, const char *candidate) {
    size_t d = tony_edit_distance(typed, candidate);
    if (d < n->distance) {
        free(n->key);
        n->key = tony_strdup(candidate);
        n->distance = d;
    }
}

/* The last dotted segment: a key in the wrong family ("python-exec-path"
 * under tony.application.) still names its own. */
static const char *last_segment(const char *key) {
    const char *dot = strrchr(key, '.');
    return dot ? dot + 1 : key;
}

char *tony_conf_suggest_key(const char *key) {
    nearest n = {NULL, (size_t)-1};
    const char *attr;
    size_t tlen = type_of(key, &attr);
    if (tlen) {
        /* the same job type, another attribute: tony.worker.instance */
        for (size_t i = 0; i < COUNT(type_attributes); i++) {
            char *k = tony_sprintf("%.*s%s", (int)(5 + tlen + 1), key, type_attributes[i]);
            consider(&n, key, k);
            free(k);
        }
    }
    size_t count;
    const tony_conf_default *d = tony_conf_defaults(&count);
    for (size_t i = 0; i < count; i++) consider(&n, key, d[i].key);
    for (size_t i = 0; i < COUNT(other_keys); i++) consider(&n, key, other_keys[i]);
    if (n.key && n.distance <= 2) return n.key;
    free(n.key);
    /* one known key ends in the same segment */
    const char *seg = last_segment(key), *only = NULL;
    int found = 0;
    for (size_t i = 0; i < count; i++)
        if (strcmp(last_segment(d[i].key), seg) == 0) only = d[i].key, found++;
    for (size_t i = 0; i < COUNT(other_keys); i++)
        if (strcmp(last_segment(other_keys[i]), seg) == 0) only = other_keys[i], found++;
    return found == 1 ? tony_strdup(only) : NULL;
}

/* A typo of a word rather than another word: one edit, or two letters
 * swapped ("wroker"); "ps" and "am" are two words, not a typo. */
static bool typo_of(const char *typed, const char *word) {
    size_t d = tony_edit_distance(typed, word);
    if (d == 1) return true;
    size_t n = strlen(typed);
    if (d != 2 || n != strlen(word) || n < 2) return false;
    for (size_t i = 0; i + 1 < n; i++)
        if (typed[i] != word[i])
            return typed[i] == word[i + 1] && typed[i + 1] == word[i] && strcmp(typed + i + 2, word + i + 2) == 0;
    return false;
}

/* tony.<type>.<attr> whose <type> has no tony.<type>.instances, so the key
 * does nothing: a misspelled job type (tony.wroker.memory) or a misspelled
 * family (tony.applicaton.timeout). The key it was meant to be, or NULL. */
static char *misspelled_type(const tony_conf *c, const char *key) {
    const char *attr;
    size_t tlen = type_of(key, &attr);
    if (!tlen) return NULL;
    char *type = tony_sprintf("%.*s", (int)tlen, key + 5), *instances = tony_sprintf("tony.%s.instances", type);
    char *meant = NULL;
    if (!tony_conf_get(c, instances)) {
        tony_strv words = {0};
        tony_conf_job_types(c, &words);
        size_t count;
        const tony_conf_default *d = tony_conf_defaults(&count);
        for (size_t i = 0; i < count; i++) {
            char *family = tony_sprintf("%.*s", (int)strcspn(d[i].key + 5, "."), d[i].key + 5);
            tony_strv_push(&words, family);
            free(family);
        }
        for (size_t i = 0; !meant && i < words.len; i++) {
            if (!typo_of(type, words.items[i])) continue;
            char *k = tony_sprintf("tony.%s.%s", words.items[i], attr);
            if (tony_conf_key_is_known(k)) meant = k;
            else free(k);
        }
        tony_strv_free(&words);
    }
    free(instances);
    free(type);
    return meant;
}

int tony_conf_check_keys(const tony_conf *c, tony_strv *unknown, tony_error *err) {
    for (size_t i = 0; i < tony_conf_size(c); i++) {
        const char *key = tony_conf_key_at(c, i), *source = tony_conf_get_source(c, key);
        if (strncmp(key, "tony.", 5) != 0 || (source && strcmp(source, "default") == 0)) continue;
        char *near = NULL;
        if (exact(key)) continue;
        if (tony_conf_key_is_known(key) && !(near = misspelled_type(c, key))) continue;
        if (!near) near = tony_conf_suggest_key(key);
        if (near) {
            int rc = tony_err(err, "unknown key %s (from %s): did you mean %s? (keys for your own code: name them "
                                   "outside tony.*)", key, source && *source ? source : "--conf", near);
            free(near);
            return rc;
        }
        if (unknown) tony_strv_push(unknown, key);
    }
    return 0;
}
