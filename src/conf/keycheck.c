/* The typo check against the registry (conf/keys.h): a key is known when
 * the registry has it or a pattern of it (tony.<role>.memory); an unknown
 * key close to a known one is refused with the known one. Also the warning
 * for a job type's resource keys that do nothing (no instances). */
#include "conf/keycheck.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/keys.h"

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

bool tony_conf_key_is_known(const char *key) { return tony_key_find(key) != NULL; }

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

/* The <role> patterns' last segment: "tony.<role>.memory" -> "memory". */
static const char *role_attribute(const tony_key *k) {
    return strncmp(k->name, "tony.<role>.", 12) == 0 && !strchr(k->name + 12, '<') ? k->name + 12 : NULL;
}

char *tony_conf_suggest_key(const char *key) {
    nearest n = {NULL, (size_t)-1};
    const char *attr;
    size_t tlen = type_of(key, &attr), count;
    const tony_key *k = tony_keys(&count);
    for (size_t i = 0; i < count; i++) {
        const char *ra = role_attribute(&k[i]);
        if (ra && tlen) {
            /* the same job type, another attribute: tony.worker.instance */
            char *full = tony_sprintf("%.*s%s", (int)(5 + tlen + 1), key, ra);
            consider(&n, key, full);
            free(full);
        } else if (!tony_key_is_pattern(&k[i])) {
            consider(&n, key, k[i].name);
        }
    }
    if (n.key && n.distance <= 2) return n.key;
    free(n.key);
    /* one known key starts with the key typed: a word left off the end */
    const char *longer = NULL;
    int found = 0;
    for (size_t i = 0; i < count; i++)
        if (!tony_key_is_pattern(&k[i]) && tony_str_starts_with(k[i].name, key)) longer = k[i].name, found++;
    if (found == 1) return tony_strdup(longer);
    /* one known key ends in the same segment */
    const char *seg = last_segment(key), *only = NULL;
    found = 0;
    for (size_t i = 0; i < count; i++)
        if (!tony_key_is_pattern(&k[i]) && strcmp(last_segment(k[i].name), seg) == 0) only = k[i].name, found++;
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
    char *type = tony_sprintf("%.*s", (int)tlen, key + 5), *instances = tony_sprintf(TONY_KEY_ROLE_INSTANCES_FMT, type);
    char *meant = NULL;
    if (!tony_conf_get(c, instances)) {
        tony_strv words = {0};
        tony_conf_job_types(c, &words);
        size_t count;
        const tony_key *k = tony_keys(&count);
        for (size_t i = 0; i < count; i++) {
            if (tony_key_is_pattern(&k[i])) continue;
            char *family = tony_sprintf("%.*s", (int)strcspn(k[i].name + 5, "."), k[i].name + 5);
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

/* tony.<role>.<resource> of a job type the job has (tony.worker.fpga with a
 * tony.worker.instances): TonY asks YARN for any resource so named, so it
 * is let through; any other unknown tony.* key is a mistake. */
static bool resource_of_a_job_type(const tony_conf *c, const char *key) {
    const char *attr;
    size_t tlen = type_of(key, &attr);
    if (!tlen) return false;
    char *type = tony_sprintf("%.*s", (int)tlen, key + 5), *instances = tony_sprintf(TONY_KEY_ROLE_INSTANCES_FMT, type);
    bool yes = tony_conf_get(c, instances) != NULL;
    free(instances);
    free(type);
    return yes;
}

/* The key tony reads in place of k, when k is TonY's older name of it
 * (its why_not is "Read as <key>."); NULL otherwise. Free it. */
static char *renamed_to(const tony_key *k) {
    static const char use[] = "Read as ";
    if (!k->why_not || strncmp(k->why_not, use, sizeof use - 1) != 0) return NULL;
    const char *name = k->why_not + sizeof use - 1;
    size_t n = strlen(name);
    if (n < 2 || name[n - 1] != '.' || strchr(name, ' ')) return NULL;
    char *key = tony_sprintf("%.*s", (int)(n - 1), name);
    if (tony_conf_key_is_known(key)) return key;
    free(key);
    return NULL;
}

/* Whether a value of k's would ask for something: a true switch, or any
 * other value at all (an older name's false asks for nothing). */
static bool asks_for_something(const tony_key *k, const char *value) {
    if (!value || !*value) return false;
    return k->type != TONY_KEY_BOOL || strcasecmp(value, "true") == 0;
}

/* Whether the user set key (any source but the built-in defaults). */
static bool user_set(const tony_conf *c, const char *key) {
    const char *from = tony_conf_get(c, key) ? tony_conf_get_source(c, key) : NULL;
    return from && strcmp(from, "default") != 0;
}

void tony_conf_take_older_names(tony_conf *c, tony_strv *notes) {
    for (size_t i = 0; i < tony_conf_size(c); i++) {
        const char *key = tony_conf_key_at(c, i);
        const tony_key *k = strncmp(key, "tony.", 5) == 0 && user_set(c, key) ? tony_key_find(key) : NULL;
        char *now = k ? renamed_to(k) : NULL;
        if (now && asks_for_something(k, tony_conf_value_at(c, i)) && !user_set(c, now)) {
            /* copies: the set may move the table's entries */
            char *old = tony_strdup(key), *value = tony_strdup(tony_conf_value_at(c, i));
            char *from = tony_sprintf("%s, as %s", tony_conf_get_source(c, old), old);
            tony_conf_set(c, now, value, from);
            if (notes)
                tony_strv_pushf(notes, "%s is TonY's older name of %s: read as %s=%s (set %s to silence this)", old,
                                now, now, value, now);
            free(old), free(value), free(from);
        }
        free(now);
    }
}

/* The groups of tony's (and TonY's) own keys: tony.am.memory is the
 * coordinator's, so tony.am.instances names no job type, and neither does
 * tony.docker.instances or tony.application.instances. Without this they
 * made job types named am, docker, application. */
static const char *const reserved_groups[] = {
    "am",    "application", "container", "containers", "docker", "execution", "history", "http", "https",
    "init",  "keytab",      "local",     "portal",     "secret", "slurm",     "task",    "yarn", "horovod",
};

static bool reserved_group(const char *t, size_t n) {
    for (size_t i = 0; i < sizeof reserved_groups / sizeof *reserved_groups; i++)
        if (strlen(reserved_groups[i]) == n && strncmp(reserved_groups[i], t, n) == 0) return true;
    return false;
}

/* tony.<group>.<job type attribute> of a reserved group: refused, naming
 * the group's nearest key. */
static int check_reserved_group(const tony_key *k, const char *key, const char *from, tony_error *err) {
    const char *attr;
    size_t tlen = type_of(key, &attr);
    if (!tlen || !role_attribute(k) || !reserved_group(key + 5, tlen)) return 0;
    nearest n = {NULL, (size_t)-1};
    size_t count;
    const tony_key *all = tony_keys(&count);
    for (size_t i = 0; i < count; i++)
        if (!tony_key_is_pattern(&all[i]) && strncmp(all[i].name, key, 5 + tlen + 1) == 0) consider(&n, key, all[i].name);
    int rc = tony_err(err, "%s (from %s): %.*s is a group of tony's own keys (tony.%.*s.*), not a job type; "
                           "name the job type otherwise%s%s%s",
                      key, from, (int)tlen, key + 5, (int)tlen, key + 5, n.key ? " (did you mean " : "",
                      n.key ? n.key : "", n.key ? "?)" : "");
    free(n.key);
    return rc;
}

int tony_conf_check_keys(const tony_conf *c, tony_strv *unknown, tony_error *err) {
    for (size_t i = 0; i < tony_conf_size(c); i++) {
        const char *key = tony_conf_key_at(c, i), *source = tony_conf_get_source(c, key);
        if (strncmp(key, "tony.", 5) != 0 || (source && strcmp(source, "default") == 0)) continue;
        const char *from = source && *source ? source : "--conf";
        const tony_key *k = tony_key_find(key);
        char *near = k && tony_key_is_pattern(k) ? misspelled_type(c, key) : NULL;
        if (k && !near) {
            if (tony_key_check_value(k, key, tony_conf_value_at(c, i), from, err)) return -1;
            if (check_reserved_group(k, key, from, err)) return -1;
            continue;
        }
        if (!near) near = tony_conf_suggest_key(key);
        if (near) {
            int rc = tony_err(err, "unknown key %s (from %s): did you mean %s? (keys for your own code: name them "
                                   "outside tony.*)", key, from, near);
            free(near);
            return rc;
        }
        if (!resource_of_a_job_type(c, key))
            return tony_err(err, "unknown key %s (from %s): tony reads no such key; `tony conf keys` lists those it "
                                 "reads (keys for your own code: name them outside tony.*)", key, from);
        if (unknown) tony_strv_push(unknown, key);
    }
    return 0;
}

/* The per-role keys that size a role's tasks, each with the coordinator's
 * own key, which sizes a single-node job's command instead. */
static const char *const sizing_attrs[] = {"memory", "vcores", "gpus", "resources"};

static bool sizing_attr(const char *attr) {
    for (size_t i = 0; i < sizeof sizing_attrs / sizeof *sizing_attrs; i++)
        if (strcmp(attr, sizing_attrs[i]) == 0) return true;
    return false;
}

/* Keys of the same shape that size something other than a job type's
 * tasks: the coordinator, every container, the local pool. */
static bool sizes_no_job_type(const char *key) {
    static const char *const others[] = {TONY_KEY_AM_MEMORY,    TONY_KEY_AM_VCORES,           TONY_KEY_AM_GPUS,
                                         TONY_KEY_AM_RESOURCES, TONY_KEY_CONTAINERS_RESOURCES, TONY_KEY_LOCAL_MEMORY,
                                         TONY_KEY_LOCAL_VCORES, TONY_KEY_LOCAL_GPUS};
    for (size_t i = 0; i < sizeof others / sizeof *others; i++)
        if (strcmp(key, others[i]) == 0) return true;
    return false;
}

/* Whether some job type has instances above 0: else the job is single-node
 * (conf/plan.h), whatever other role keys say. */
static bool has_tasks(const tony_conf *c) {
    tony_strv types = {0};
    tony_conf_job_types(c, &types);
    bool any = false;
    for (size_t i = 0; i < types.len && !any; i++) {
        char *key = tony_sprintf(TONY_KEY_ROLE_INSTANCES_FMT, types.items[i]);
        long long n = 0;
        any = tony_conf_get_ll(c, key, 0, &n, NULL) == 0 && n > 0;
        free(key);
    }
    tony_strv_free(&types);
    return any;
}

void tony_conf_idle_role_keys(const tony_conf *c, tony_strv *warnings) {
    bool single = !has_tasks(c);
    for (size_t i = 0; i < tony_conf_size(c); i++) {
        const char *key = tony_conf_key_at(c, i), *source = tony_conf_get_source(c, key), *attr;
        if (source && strcmp(source, "default") == 0) continue;
        size_t tlen = type_of(key, &attr);
        if (!tlen || !sizing_attr(attr) || sizes_no_job_type(key)) continue;
        char *type = tony_sprintf("%.*s", (int)tlen, key + 5);
        char *instances = tony_sprintf(TONY_KEY_ROLE_INSTANCES_FMT, type);
        /* instances=0 turns a type off on purpose: its keys may stay */
        if (!tony_conf_get(c, instances)) {
            const char *from = source && *source ? source : "--conf";
            if (single)
                tony_strv_pushf(warnings,
                                "%s=%s (from %s) does nothing: no %s is set, so the job runs single-node, its command "
                                "in the coordinator, sized by " TONY_KEY_AM_MEMORY ", " TONY_KEY_AM_VCORES " and "
                                TONY_KEY_AM_GPUS "; set %s to run %s tasks, or use tony.am.%s",
                                key, tony_conf_value_at(c, i), from, instances, instances, type, attr);
            else
                tony_strv_pushf(warnings,
                                "%s=%s (from %s) does nothing: no %s is set, so the job runs no %s task; set %s to "
                                "run some, or leave the key out",
                                key, tony_conf_value_at(c, i), from, instances, type, instances);
        }
        free(instances);
        free(type);
    }
}
