/* Avro object container files decoded by hand (see avroread.h): a cursor
 * over the bytes, the writer's schema as JSON with a table of its named
 * types, and one recursive walk per value that checks each read against
 * the bytes left. */
#include "common/avroread.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strv.h"

#define SYNC_LEN 16
#define MAX_DEPTH 64         /* schema nesting followed; a recursive type stops here */
/* What a file can make the reader hold is bounded by its size: items of
 * arrays, maps and blocks that take no bytes at all (nulls, records of
 * nulls) are at most this many in the whole file, and the values decoded
 * at most VALUES_PER_BYTE per byte of the file plus this many. */
#define MAX_FREE_ITEMS 16384
#define VALUES_PER_BYTE 8

typedef struct cursor {
    const unsigned char *p, *end;
} cursor;

typedef struct reader {
    const unsigned char *base;
    json_t *names; /* named types, by full and by short name */
    tony_error *err;
    size_t free_left;   /* items that take no bytes still allowed */
    size_t values_left; /* values still allowed */
} reader;

static json_t *bad(reader *r, const cursor *c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static json_t *bad(reader *r, const cursor *c, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    tony_err(r->err, "at byte %zu: %s", (size_t)(c->p - r->base), what);
    return NULL;
}

static size_t left(const cursor *c) { return (size_t)(c->end - c->p); }

/* A zig-zag varint of at most 10 bytes. */
static bool read_long(cursor *c, int64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift <= 63 && c->p < c->end; shift += 7) {
        unsigned char b = *c->p++;
        if (shift == 63 && b > 1) return false;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
            return true;
        }
    }
    return false;
}

static uint64_t little_endian(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static json_t *real_or_null(double d) {
    json_t *j = json_real(d); /* NULL for NaN and infinities, which JSON cannot say */
    return j ? j : json_null();
}

static bool is_primitive(const char *t) {
    static const char *const names[] = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(t, names[i]) == 0) return true;
    return false;
}

/* Records the named types of s (records, enums, fixed) under their full
 * name and their short one; ns: the enclosing namespace. */
static void collect_names(json_t *names, json_t *s, const char *ns, int depth) {
    if (depth > MAX_DEPTH) return;
    size_t i;
    json_t *v;
    if (json_is_array(s)) {
        json_array_foreach(s, i, v) collect_names(names, v, ns, depth + 1);
        return;
    }
    if (!json_is_object(s)) return;
    const char *type = json_string_value(json_object_get(s, "type"));
    const char *name = json_string_value(json_object_get(s, "name"));
    if (type && name && (!strcmp(type, "record") || !strcmp(type, "error") || !strcmp(type, "enum") ||
                         !strcmp(type, "fixed"))) {
        const char *own = json_string_value(json_object_get(s, "namespace"));
        const char *dot = strrchr(name, '.');
        char *full = dot ? tony_strdup(name) : own && *own ? tony_sprintf("%s.%s", own, name)
                                             : ns && *ns   ? tony_sprintf("%s.%s", ns, name)
                                                           : tony_strdup(name);
        json_object_set(names, full, s);
        json_object_set(names, dot ? dot + 1 : name, s);
        char *inner = tony_strdup(full), *last = strrchr(inner, '.');
        if (last) *last = '\0';
        else inner[0] = '\0';
        json_array_foreach(json_object_get(s, "fields"), i, v) collect_names(names, json_object_get(v, "type"), inner, depth + 1);
        free(inner);
        free(full);
        return;
    }
    if (json_is_object(json_object_get(s, "type")) || json_is_array(json_object_get(s, "type")))
        collect_names(names, json_object_get(s, "type"), ns, depth + 1);
    collect_names(names, json_object_get(s, "items"), ns, depth + 1);
    collect_names(names, json_object_get(s, "values"), ns, depth + 1);
}

static json_t *decode(reader *r, cursor *c, const json_t *s, int depth);

/* Whether an item that began at `at` took bytes, or may be one more of the
 * file's few that take none. */
static bool took_bytes(reader *r, const cursor *c, const unsigned char *at) {
    if (c->p != at) return true;
    if (r->free_left == 0) {
        bad(r, c, "more than %d items that take no bytes (nulls): a damaged or hostile file", MAX_FREE_ITEMS);
        return false;
    }
    r->free_left--;
    return true;
}

/* Arrays and maps: blocks of items, a count of 0 ends them; a negative
 * count is followed by the block's size in bytes. */
static json_t *decode_blocks(reader *r, cursor *c, const json_t *s, bool map, int depth) {
    const json_t *item = json_object_get(s, map ? "values" : "items");
    const char *what = map ? "map" : "array";
    json_t *out = map ? json_object() : json_array(), *string = json_string("string");
    for (;;) {
        int64_t n, size;
        if (!read_long(c, &n)) {
            bad(r, c, "cut short in an %s's item count", what);
            break;
        }
        if (n == 0) {
            json_decref(string);
            return out;
        }
        if (n < 0 && (n == INT64_MIN || !read_long(c, &size) || size < 0)) {
            bad(r, c, "a bad block size in an %s", what);
            break;
        }
        if (n < 0) n = -n;
        if ((uint64_t)n > left(c) + r->free_left) {
            bad(r, c, "an %s block of %lld items in %zu bytes", what, (long long)n, left(c));
            break;
        }
        bool ok = true;
        for (int64_t i = 0; i < n && ok; i++) {
            const unsigned char *at = c->p;
            json_t *key = map ? decode(r, c, string, depth + 1) : NULL;
            json_t *v = !map || key ? decode(r, c, item, depth + 1) : NULL;
            if (v && !took_bytes(r, c, at)) json_decref(v), v = NULL;
            ok = v != NULL;
            if (v && map) json_object_set_new(out, json_string_value(key), v);
            else if (v) json_array_append_new(out, v);
            json_decref(key);
        }
        if (!ok) break;
    }
    json_decref(string);
    json_decref(out);
    return NULL;
}

static json_t *decode(reader *r, cursor *c, const json_t *s, int depth) {
    if (depth > MAX_DEPTH) return bad(r, c, "the schema nests deeper than %d levels", MAX_DEPTH);
    if (r->values_left == 0)
        return bad(r, c, "more values than a file of its size holds (%d per byte): a damaged or hostile file",
                   VALUES_PER_BYTE);
    r->values_left--;
    if (json_is_array(s)) {
        int64_t i;
        if (!read_long(c, &i)) return bad(r, c, "cut short in a union's branch");
        if (i < 0 || (uint64_t)i >= json_array_size(s))
            return bad(r, c, "union branch %lld of %zu", (long long)i, json_array_size(s));
        return decode(r, c, json_array_get(s, (size_t)i), depth + 1);
    }
    const char *type = json_is_string(s) ? json_string_value(s) : json_string_value(json_object_get(s, "type"));
    if (!type) {
        /* {"type": {...}}: a type wrapped in an object */
        if (json_is_object(s) && (json_is_object(json_object_get(s, "type")) || json_is_array(json_object_get(s, "type"))))
            return decode(r, c, json_object_get(s, "type"), depth + 1);
        return bad(r, c, "the writer's schema has a type that is not a name, object or union");
    }
    if (!is_primitive(type) && strcmp(type, "record") && strcmp(type, "error") && strcmp(type, "enum") &&
        strcmp(type, "array") && strcmp(type, "map") && strcmp(type, "fixed")) {
        json_t *named = json_object_get(r->names, type);
        if (!named) return bad(r, c, "the writer's schema names a type '%s' it does not define", type);
        return decode(r, c, named, depth + 1);
    }
    int64_t n;
    if (!strcmp(type, "null")) return json_null();
    if (!strcmp(type, "boolean")) {
        if (!left(c) || *c->p > 1) return bad(r, c, "a boolean that is neither 0 nor 1");
        return json_boolean(*c->p++);
    }
    if (!strcmp(type, "int") || !strcmp(type, "long")) {
        if (!read_long(c, &n)) return bad(r, c, "a bad or cut-short %s", type);
        if (type[0] == 'i' && (n < INT32_MIN || n > INT32_MAX)) return bad(r, c, "an int out of range");
        return json_integer((json_int_t)n);
    }
    if (!strcmp(type, "float") || !strcmp(type, "double")) {
        int size = type[0] == 'f' ? 4 : 8;
        if (left(c) < (size_t)size) return bad(r, c, "a %s cut short", type);
        uint64_t bits = little_endian(c->p, size);
        c->p += size;
        if (size == 4) {
            uint32_t b32 = (uint32_t)bits;
            float f;
            memcpy(&f, &b32, sizeof f);
            return real_or_null(f);
        }
        double d;
        memcpy(&d, &bits, sizeof d);
        return real_or_null(d);
    }
    if (!strcmp(type, "string") || !strcmp(type, "bytes") || !strcmp(type, "fixed")) {
        if (type[0] == 'f') {
            json_t *size = json_object_get(s, "size");
            n = json_is_integer(size) ? json_integer_value(size) : -1;
        } else if (!read_long(c, &n)) {
            return bad(r, c, "a %s's length cut short", type);
        }
        if (n < 0 || (uint64_t)n > left(c))
            return bad(r, c, "a %s of %lld bytes where %zu are left", type, (long long)n, left(c));
        size_t used;
        char *text = tony_utf8_sanitize((const char *)c->p, (size_t)n, &used);
        c->p += n;
        json_t *out = json_string(text);
        free(text);
        return out ? out : json_null();
    }
    if (!strcmp(type, "enum")) {
        json_t *symbols = json_object_get(s, "symbols");
        if (!read_long(c, &n)) return bad(r, c, "an enum cut short");
        if (n < 0 || (uint64_t)n >= json_array_size(symbols))
            return bad(r, c, "enum symbol %lld of %zu", (long long)n, json_array_size(symbols));
        json_t *sym = json_array_get(symbols, (size_t)n);
        return json_is_string(sym) ? json_incref(sym) : json_null();
    }
    if (!strcmp(type, "array") || !strcmp(type, "map")) return decode_blocks(r, c, s, type[0] == 'm', depth);
    /* record */
    json_t *out = json_object();
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(s, "fields"), i, f) {
        const char *name = json_string_value(json_object_get(f, "name"));
        json_t *v = decode(r, c, json_object_get(f, "type"), depth + 1);
        if (!v) return json_decref(out), NULL;
        json_object_set_new(out, name ? name : "?", v);
    }
    return out;
}

/* The header's metadata: avro.schema parsed, avro.codec checked. */
static json_t *read_header(reader *r, cursor *c) {
    json_t *map_schema = json_pack("{s:s,s:s}", "type", "map", "values", "bytes");
    json_t *meta = decode(r, c, map_schema, 0), *schema = NULL;
    json_decref(map_schema);
    if (!meta) return NULL;
    const char *codec = json_string_value(json_object_get(meta, "avro.codec"));
    const char *text = json_string_value(json_object_get(meta, "avro.schema"));
    if (codec && *codec && strcmp(codec, "null") != 0) {
        bad(r, c, "its blocks are compressed (avro.codec %s); only uncompressed files can be read", codec);
    } else if (!text) {
        bad(r, c, "its header has no avro.schema");
    } else {
        json_error_t je;
        schema = json_loads(text, JSON_DECODE_ANY, &je);
        if (!schema) bad(r, c, "its schema is not JSON (%s)", je.text);
    }
    json_decref(meta);
    return schema;
}

int tony_avro_decode(const void *data, size_t len, json_t **records, tony_error *err) {
    *records = json_array();
    cursor c = {data, (const unsigned char *)data + len};
    size_t values = len > (SIZE_MAX - MAX_FREE_ITEMS) / VALUES_PER_BYTE ? SIZE_MAX : len * VALUES_PER_BYTE + MAX_FREE_ITEMS;
    reader r = {data, NULL, err, MAX_FREE_ITEMS, values};
    if (len < 4 || memcmp(data, "Obj\x01", 4) != 0)
        return tony_err(err, "not an Avro data file (one starts with \"Obj\" and version byte 1)");
    c.p += 4;
    json_t *schema = read_header(&r, &c);
    if (!schema) return -1;
    int rc = 0;
    if (left(&c) < SYNC_LEN) {
        bad(&r, &c, "the header is cut short");
        json_decref(schema);
        return -1;
    }
    r.names = json_object();
    collect_names(r.names, schema, NULL, 0);
    const unsigned char *sync = c.p;
    c.p += SYNC_LEN;
    while (rc == 0 && left(&c) > 0) {
        cursor head = c;
        int64_t n, size;
        bool whole = read_long(&c, &n) && read_long(&c, &size) && size >= 0 && (uint64_t)size <= left(&c) &&
                     left(&c) - (size_t)size >= SYNC_LEN;
        /* A block running past the end is a writer's unfinished last one,
         * unless a sync marker shows that more blocks follow it. */
        if (!whole && !memmem(head.p, left(&head), sync, SYNC_LEN)) break;
        if (!whole || n < 0 || (uint64_t)n > (uint64_t)size + r.free_left) {
            bad(&r, &head, "a damaged block header");
            rc = -1;
            break;
        }
        cursor block = {c.p, c.p + size};
        for (int64_t i = 0; i < n && rc == 0; i++) {
            const unsigned char *at = block.p;
            json_t *v = decode(&r, &block, schema, 0);
            if (v && !took_bytes(&r, &block, at)) json_decref(v), v = NULL;
            if (v) json_array_append_new(*records, v);
            else rc = -1;
        }
        if (rc == 0 && block.p != block.end) {
            bad(&r, &block, "%zu byte(s) left over after the block's %lld record(s)", left(&block), (long long)n);
            rc = -1;
        }
        c.p += size;
        if (rc == 0 && memcmp(c.p, sync, SYNC_LEN) != 0) {
            bad(&r, &c, "a block does not end with the file's sync marker");
            rc = -1;
        }
        c.p += SYNC_LEN;
    }
    json_decref(r.names);
    json_decref(schema);
    return rc;
}
