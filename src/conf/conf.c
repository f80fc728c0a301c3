/* The merged configuration: an ordered key/value table fed by TonY's defaults,
 * Hadoop configuration XML files and --conf, and written back as
 * tony-final.xml for the coordinator and executors to read. */
#include "conf/conf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "common/fs.h"
#include "common/log.h"
#include "conf/keys.h"

typedef struct conf_entry {
    char *key;
    char *value;
    char *source;
    bool final;
} conf_entry;

struct tony_conf {
    conf_entry *items; /* insertion order: --dry-run and tony-final.xml read like the inputs */
    size_t len;
    size_t cap;
    /* items by key (open addressing, linear probing): an item's index + 1,
     * 0 for none; never more than half full. A file of many properties
     * would otherwise take a walk over the table per property. */
    size_t *slots;
    size_t nslots; /* a power of two, or 0 before the first key */
};

#define TONY_DEFAULT_CONF_DIR "/export/apps/tony/conf"

tony_conf *tony_conf_new(void) { return tony_xcalloc(1, sizeof(tony_conf)); }

static void entry_free(conf_entry *e) {
    free(e->key);
    free(e->value);
    free(e->source);
}

void tony_conf_free(tony_conf *c) {
    if (!c) return;
    for (size_t i = 0; i < c->len; i++) entry_free(&c->items[i]);
    free(c->items);
    free(c->slots);
    free(c);
}

static size_t slot_of(const tony_conf *c, const char *key) {
    return (size_t)tony_hash64(key, strlen(key)) & (c->nslots - 1);
}

static void index_add(tony_conf *c, size_t i) {
    size_t h = slot_of(c, c->items[i].key);
    while (c->slots[h]) h = (h + 1) & (c->nslots - 1);
    c->slots[h] = i + 1;
}

/* After the items moved (a key removed) or outgrew the slots. */
static void index_rebuild(tony_conf *c) {
    size_t n = 64;
    while (n < 2 * c->len + 2) n *= 2;
    free(c->slots);
    c->slots = tony_xcalloc(n, sizeof *c->slots);
    c->nslots = n;
    for (size_t i = 0; i < c->len; i++) index_add(c, i);
}

tony_conf *tony_conf_clone(const tony_conf *c) {
    tony_conf *d = tony_conf_new();
    d->cap = d->len = c->len;
    d->items = tony_xcalloc(c->len ? c->len : 1, sizeof(conf_entry));
    for (size_t i = 0; i < c->len; i++) {
        d->items[i].key = tony_strdup(c->items[i].key);
        d->items[i].value = tony_strdup(c->items[i].value);
        d->items[i].source = tony_strdup(c->items[i].source);
        d->items[i].final = c->items[i].final;
    }
    index_rebuild(d);
    return d;
}

static conf_entry *find(const tony_conf *c, const char *key) {
    if (!c->nslots) return NULL;
    for (size_t h = slot_of(c, key); c->slots[h]; h = (h + 1) & (c->nslots - 1))
        if (strcmp(c->items[c->slots[h] - 1].key, key) == 0) return &c->items[c->slots[h] - 1];
    return NULL;
}

/* Replacing keeps the key's first position, as a Hadoop Configuration does. */
static conf_entry *put(tony_conf *c, const char *key, const char *value, const char *source) {
    conf_entry *e = find(c, key);
    if (e) {
        free(e->value);
        free(e->source);
    } else {
        if (c->len == c->cap) {
            c->cap = c->cap ? c->cap * 2 : 64;
            c->items = tony_xrealloc(c->items, c->cap * sizeof *c->items);
        }
        e = &c->items[c->len++];
        e->key = tony_strdup(key);
        e->final = false;
        if (2 * c->len + 2 > c->nslots) index_rebuild(c);
        else index_add(c, c->len - 1);
    }
    e->value = tony_strdup(value);
    e->source = tony_strdup(source ? source : "");
    return e;
}

void tony_conf_set(tony_conf *c, const char *key, const char *value, const char *source) {
    if (!value) {
        tony_conf_unset(c, key);
        return;
    }
    put(c, key, value, source);
}

bool tony_conf_is_multi_value(const char *key) {
    return strcmp(key, TONY_KEY_CONTAINERS_ENVS) == 0 || strcmp(key, TONY_KEY_EXECUTION_ENVS) == 0 ||
           strcmp(key, TONY_KEY_CONTAINERS_RESOURCES) == 0;
}

void tony_conf_set_cli(tony_conf *c, const char *key, const char *value) {
    const char *old = tony_conf_get(c, key);
    if (tony_conf_is_multi_value(key) && old && *old) {
        if (!value || !*value) return; /* appending nothing must not wipe the list */
        char *joined = tony_sprintf("%s,%s", old, value);
        put(c, key, joined, "--conf");
        free(joined);
        return;
    }
    tony_conf_set(c, key, value ? value : "", "--conf");
}

void tony_conf_unset(tony_conf *c, const char *key) {
    conf_entry *e = find(c, key);
    if (!e) return;
    size_t i = (size_t)(e - c->items);
    entry_free(e);
    memmove(&c->items[i], &c->items[i + 1], (c->len - i - 1) * sizeof *c->items);
    c->len--;
    index_rebuild(c);
}

const char *tony_conf_get(const tony_conf *c, const char *key) {
    const conf_entry *e = find(c, key);
    return e ? e->value : NULL;
}

const char *tony_conf_get_source(const tony_conf *c, const char *key) {
    const conf_entry *e = find(c, key);
    return e ? e->source : NULL;
}

size_t tony_conf_size(const tony_conf *c) { return c->len; }
const char *tony_conf_key_at(const tony_conf *c, size_t i) { return i < c->len ? c->items[i].key : NULL; }
const char *tony_conf_value_at(const tony_conf *c, size_t i) { return i < c->len ? c->items[i].value : NULL; }

void tony_conf_load_defaults(tony_conf *c) {
    size_t n;
    const tony_key *k = tony_keys(&n);
    for (size_t i = 0; i < n; i++)
        if (k[i].value && !tony_key_is_pattern(&k[i])) put(c, k[i].name, k[i].value, "default");
}

/* ---- typed getters ---- */

/* Unset and empty (or blank) values both mean "use the default", as an empty
 * <value/> does in a Hadoop Configuration. */
static const char *get_nonblank(const tony_conf *c, const char *key) {
    const char *v = tony_conf_get(c, key);
    if (!v) return NULL;
    for (const char *p = v; *p; p++)
        if (!isspace((unsigned char)*p)) return v;
    return NULL;
}

int tony_conf_get_ll(const tony_conf *c, const char *key, long long def, long long *out, tony_error *err) {
    const char *v = get_nonblank(c, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!tony_parse_ll(v, out)) return tony_err(err, "%s must be an integer, got '%s'", key, v);
    return 0;
}

bool tony_parse_duration_ms(const char *s, long long *out) {
    static const struct {
        const char *suffix;
        long long ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"", 1}};
    char *t = tony_strdup(s ? s : "");
    char *v = tony_trim(t);
    size_t digits = strspn(v, "0123456789");
    bool ok = false;
    for (size_t i = 0; i < sizeof units / sizeof *units && !ok && digits > 0 && digits <= 15; i++) {
        if (strcasecmp(v + digits, units[i].suffix) != 0) continue;
        v[digits] = '\0';
        long long n;
        ok = tony_parse_ll(v, &n);
        if (ok) *out = n * units[i].ms;
    }
    free(t);
    return ok;
}

int tony_conf_get_duration_ms(const tony_conf *c, const char *key, long long def, long long *out, tony_error *err) {
    const char *v = get_nonblank(c, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!tony_parse_duration_ms(v, out))
        return tony_err(err, "%s must be a duration: milliseconds (300000) or a number with ms, s, m or h (5m), got '%s'",
                        key, v);
    return 0;
}

int tony_conf_get_bool(const tony_conf *c, const char *key, bool def, bool *out, tony_error *err) {
    const char *v = get_nonblank(c, key);
    if (!v) {
        *out = def;
        return 0;
    }
    char *t = tony_strdup(v);
    char *s = tony_trim(t);
    int rc = 0;
    if (strcasecmp(s, "true") == 0)
        *out = true;
    else if (strcasecmp(s, "false") == 0)
        *out = false;
    else
        rc = tony_err(err, "%s must be true or false, got '%s'", key, v);
    free(t);
    return rc;
}

bool tony_parse_memory_mb(const char *s, long long *out) {
    if (!s) return false;
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) n--;
    if (!n) return false;
    long long mult = 1;
    char last = (char)tolower((unsigned char)s[n - 1]);
    if (last == 'g') {
        mult = 1024;
        n--;
    } else if (last == 'm') {
        n--;
    }
    if (!n) return false;
    long long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i])) return false; /* also rejects a sign: negative sizes are invalid */
        int d = s[i] - '0';
        if (v > (LLONG_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    if (v > LLONG_MAX / mult) return false;
    *out = v * mult;
    return true;
}

int tony_conf_get_memory_mb(const tony_conf *c, const char *key, const char *def, long long *out, tony_error *err) {
    const char *v = get_nonblank(c, key);
    if (!v) {
        if (!def) {
            *out = 0;
            return 0;
        }
        v = def;
    }
    if (!tony_parse_memory_mb(v, out))
        return tony_err(err, "%s must be a memory size in MB, optionally with an m or g suffix (e.g. 2048, 512m, 2g), "
                             "got '%s'", key, v);
    return 0;
}

void tony_conf_get_list(const tony_conf *c, const char *key, tony_strv *out) {
    tony_split_csv(tony_conf_get(c, key), out);
}

/* tony.<t>.instances with <t> in [a-z]+, TonY's only source of job types. */
static bool job_type_of(const char *key, char *buf, size_t bufsz) {
    static const char prefix[] = "tony.", suffix[] = ".instances";
    size_t n = strlen(key), p = sizeof prefix - 1, s = sizeof suffix - 1;
    if (n <= p + s || strncmp(key, prefix, p) != 0 || strcmp(key + n - s, suffix) != 0) return false;
    size_t len = n - p - s;
    if (len + 1 > bufsz) return false;
    for (size_t i = 0; i < len; i++)
        if (key[p + i] < 'a' || key[p + i] > 'z') return false;
    memcpy(buf, key + p, len);
    buf[len] = '\0';
    return true;
}

void tony_conf_job_types(const tony_conf *c, tony_strv *out) {
    tony_strv found = {0};
    char name[256];
    for (size_t i = 0; i < c->len; i++)
        if (job_type_of(c->items[i].key, name, sizeof name) && !tony_strv_contains(&found, name))
            tony_strv_push(&found, name);
    tony_strv_sort(&found);
    for (size_t i = 0; i < found.len; i++) tony_strv_push(out, found.items[i]);
    tony_strv_free(&found);
}

/* ---- XML ---- */

static bool is_elem(const xmlNode *n, const char *name) {
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

/* Element text or attribute value, trimmed; NULL when absent. */
static char *node_text(const xmlNode *n) {
    xmlChar *raw = xmlNodeGetContent(n);
    if (!raw) return tony_strdup("");
    char *t = tony_strdup((const char *)raw);
    xmlFree(raw);
    char *trimmed = tony_strdup(tony_trim(t));
    free(t);
    return trimmed;
}

static char *attr_text(const xmlNode *n, const char *name) {
    xmlChar *raw = xmlGetProp(n, (const xmlChar *)name);
    if (!raw) return NULL;
    char *t = tony_strdup((const char *)raw);
    xmlFree(raw);
    char *trimmed = tony_strdup(tony_trim(t));
    free(t);
    return trimmed;
}

static void replace(char **slot, char *v) {
    free(*slot);
    *slot = v;
}

static int load_property(tony_conf *c, const xmlNode *prop, const char *path, tony_error *err) {
    /* Hadoop accepts both <name>/<value>/<final> children and attributes. */
    char *name = attr_text(prop, "name"), *value = attr_text(prop, "value"), *fin = attr_text(prop, "final");
    char *source = NULL;
    for (const xmlNode *k = prop->children; k; k = k->next) {
        if (is_elem(k, "name"))
            replace(&name, node_text(k));
        else if (is_elem(k, "value"))
            replace(&value, node_text(k));
        else if (is_elem(k, "final"))
            replace(&fin, node_text(k));
        else if (is_elem(k, "source"))
            /* tony-final.xml records where each value came from; keep that
             * rather than calling every key "tony-final.xml". The last one is
             * the most recent, as Hadoop writes them. */
            replace(&source, node_text(k));
    }
    int rc = 0;
    if (!name || !*name) {
        rc = tony_err(err, "%s:%ld: <property> without a <name>", path, (long)xmlGetLineNo(prop));
        goto out;
    }
    conf_entry *old = find(c, name);
    if (old && old->final) {
        tony_warn("%s:%ld: ignoring %s, marked final by %s", path, (long)xmlGetLineNo(prop), name, old->source);
        goto out;
    }
    bool is_final = fin && strcasecmp(fin, "true") == 0;
    /* A property with a name and no value documents a key without setting it
     * (tony-default.xml does this). */
    if (value) {
        conf_entry *e = put(c, name, value, source && *source ? source : path);
        e->final = is_final;
    } else if (is_final && old) {
        old->final = true;
    }
out:
    free(name);
    free(value);
    free(fin);
    free(source);
    return rc;
}

static int load_configuration(tony_conf *c, const xmlNode *root, const char *path, tony_error *err) {
    for (const xmlNode *n = root->children; n; n = n->next) {
        if (is_elem(n, "property")) {
            if (load_property(c, n, path, err)) return -1;
        } else if (is_elem(n, "configuration")) {
            /* Hadoop allows nested <configuration> elements. */
            if (load_configuration(c, n, path, err)) return -1;
        }
    }
    return 0;
}

int tony_conf_load_file(tony_conf *c, const char *path, tony_error *err) {
    char *data;
    size_t len;
    if (tony_read_regular_file(path, TONY_CONF_FILE_MAX, "a configuration file", &data, &len, err)) return -1;
    int rc = tony_conf_load_text(c, path, data, len, err);
    free(data);
    return rc;
}

int tony_conf_load_text(tony_conf *c, const char *path, const char *data, size_t len, tony_error *err) {
    if (len > TONY_CONF_FILE_MAX)
        return tony_err(err, "%s has %zu bytes: more than a configuration file may have (%u bytes)", path, len,
                        TONY_CONF_FILE_MAX);
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (!ctxt) return tony_err(err, "%s: cannot create an XML parser", path);
    /* No network, no external entities: a tony.xml is data, not a program. */
    xmlDocPtr doc = xmlCtxtReadMemory(ctxt, data, (int)len, path, NULL,
                                      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    int rc = 0;
    if (!doc) {
        xmlErrorPtr e = xmlCtxtGetLastError(ctxt);
        if (e && e->message) {
            char *msg = tony_strdup(e->message);
            rc = tony_err(err, "%s:%d: malformed XML: %s", path, e->line, tony_trim(msg));
            free(msg);
        } else {
            rc = tony_err(err, "%s: malformed XML", path);
        }
        xmlFreeParserCtxt(ctxt);
        return rc;
    }
    xmlNodePtr root = xmlDocGetRootElement(doc);
    if (!root || !is_elem(root, "configuration"))
        rc = tony_err(err, "%s:%ld: the top-level element must be <configuration>, found <%s>", path,
                      root ? (long)xmlGetLineNo(root) : 1L, root ? (const char *)root->name : "");
    else
        rc = load_configuration(c, root, path, err);
    xmlFreeDoc(doc);
    xmlFreeParserCtxt(ctxt);
    return rc;
}

/* Whether path is one the user named in TONY_ENV_TRUST_CONF (a
 * colon-separated list, each entry matched as given or by its real path). */
static bool trusted_by_user(const char *path) {
    const char *list = getenv(TONY_ENV_TRUST_CONF);
    if (!list || !*list) return false;
    char *real = realpath(path, NULL), *copy = tony_strdup(list), *save = NULL;
    bool yes = false;
    for (char *e = strtok_r(copy, ":", &save); e && !yes; e = strtok_r(NULL, ":", &save)) {
        char *r = realpath(e, NULL);
        yes = strcmp(e, path) == 0 || (r && real && strcmp(r, real) == 0);
        free(r);
    }
    free(real);
    free(copy);
    return yes;
}

/* A configuration layer: its keys steer what the job runs (an env var set
 * in every task, the command), so it is read only from a file its user or
 * root owns and nobody else may write, unless the user named it in
 * TONY_ENV_TRUST_CONF. Checked on the descriptor read, not on the name. */
static int load_layer(tony_conf *c, const char *path, const char *what, tony_error *err) {
    /* O_NONBLOCK: a FIFO opens at once, to be refused, instead of waiting for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return tony_err(err, "cannot read %s: %s", path, strerror(errno));
    char *data = NULL;
    size_t len;
    /* What it is first (a FIFO or a device is refused as such), then whose. */
    int rc = tony_read_fd_capped(fd, path, TONY_CONF_FILE_MAX, "a configuration file", &data, &len, err);
    if (rc == 0 && !trusted_by_user(path) && tony_fs_check_trusted(fd, path, what, err)) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        rc = tony_err(err, "%s (check it, then copy it to a file of your own, or accept it as it is with %s=%s)", why,
                      TONY_ENV_TRUST_CONF, path);
    }
    close(fd);
    if (rc == 0) rc = tony_conf_load_text(c, path, data, len, err);
    free(data);
    return rc;
}

int tony_conf_load_layers(tony_conf *c, const char *conf_file, tony_error *err) {
    tony_conf_load_defaults(c);
    if (conf_file) {
        if (load_layer(c, conf_file, "the configuration file", err))
            return tony_err_wrap(err, "--conf_file %s", conf_file);
    } else if (tony_file_exists("tony.xml")) {
        if (load_layer(c, "tony.xml", "the configuration file", err))
            return tony_err_wrap(err, "tony.xml in the current directory (read when no --conf_file is given)");
    }
    const char *dir = getenv("TONY_CONF_DIR");
    bool from_env = dir && *dir;
    if (!from_env) dir = TONY_DEFAULT_CONF_DIR;
    char *site = tony_path_join(dir, "tony-site.xml");
    int rc = 0;
    if (tony_file_exists(site) && load_layer(c, site, "the site configuration file", err))
        rc = tony_err_wrap(err, "the site configuration (tony-site.xml in %s)",
                           from_env ? "$TONY_CONF_DIR" : "the default configuration directory");
    free(site);
    return rc;
}

static void xml_escape(tony_buf *b, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': tony_buf_puts(b, "&amp;"); break;
        case '<': tony_buf_puts(b, "&lt;"); break;
        case '>': tony_buf_puts(b, "&gt;"); break;
        case '"': tony_buf_puts(b, "&quot;"); break;
        case '\'': tony_buf_puts(b, "&apos;"); break;
        /* A raw CR would be normalised to LF by the reader. */
        case '\r': tony_buf_puts(b, "&#13;"); break;
        default:
            /* XML 1.0 cannot carry other control characters even as
             * references; a space is the least surprising stand-in. */
            if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
                tony_buf_puts(b, " ");
            else
                tony_buf_append(b, s, 1);
        }
    }
}

int tony_conf_write_file(const tony_conf *c, const char *path, tony_error *err) {
    tony_buf b = {0};
    tony_buf_puts(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n<configuration>\n");
    for (size_t i = 0; i < c->len; i++) {
        const conf_entry *e = &c->items[i];
        tony_buf_puts(&b, "<property><name>");
        xml_escape(&b, e->key);
        tony_buf_puts(&b, "</name><value>");
        xml_escape(&b, e->value);
        tony_buf_printf(&b, "</value><final>%s</final>", e->final ? "true" : "false");
        if (e->source && *e->source) {
            tony_buf_puts(&b, "<source>");
            xml_escape(&b, e->source);
            tony_buf_puts(&b, "</source>");
        }
        tony_buf_puts(&b, "</property>\n");
    }
    tony_buf_puts(&b, "</configuration>\n");
    int rc = tony_write_file(path, b.data, b.len, 0600, err);
    tony_buf_free(&b);
    return rc;
}
