/* The careful Avro reader: files written by avro-c (through the .jhist
 * writer) read back whole; hand-made files exercise the types TonY's
 * schema does not use (maps, negative block counts, floats, named-type
 * references across namespaces); every single-byte change and every cut
 * of a real file gives records or an error, never a crash or a leak (this
 * test also runs under ASan+UBSan); and the damage reports say where. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/avroread.h"
#include "common/fs.h"
#include "common/jhist.h"
#include "common/strv.h"
#include "sample_jhist.h"

static void put_long(tony_buf *b, int64_t v) {
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    do {
        unsigned char c = z & 0x7f;
        z >>= 7;
        if (z) c |= 0x80;
        tony_buf_append(b, (const char *)&c, 1);
    } while (z);
}

static void put_str(tony_buf *b, const char *s) {
    put_long(b, (int64_t)strlen(s));
    tony_buf_append(b, s, strlen(s));
}

static const char SYNC[16] = "0123456789abcdef";

/* A container file: header with schema (and codec), then one block per
 * (count, bytes) pair given. */
static void container(tony_buf *b, const char *schema, const char *codec, int nblocks, ...) {
    tony_buf_append(b, "Obj\x01", 4);
    put_long(b, codec ? 2 : 1);
    put_str(b, "avro.schema");
    put_str(b, schema);
    if (codec) {
        put_str(b, "avro.codec");
        put_str(b, codec);
    }
    put_long(b, 0);
    tony_buf_append(b, SYNC, 16);
    va_list ap;
    va_start(ap, nblocks);
    for (int i = 0; i < nblocks; i++) {
        int count = va_arg(ap, int);
        const tony_buf *data = va_arg(ap, const tony_buf *);
        put_long(b, count);
        put_long(b, (int64_t)data->len);
        tony_buf_append(b, data->data, data->len);
        tony_buf_append(b, SYNC, 16);
    }
    va_end(ap);
}

static void test_types_and_names(void **state) {
    (void)state;
    const char *schema =
        "{\"type\":\"record\",\"name\":\"R\",\"namespace\":\"a.b\",\"fields\":["
        "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":\"long\"}},"
        "{\"name\":\"arr\",\"type\":{\"type\":\"array\",\"items\":{\"type\":\"record\",\"name\":\"P\",\"fields\":["
        "{\"name\":\"x\",\"type\":\"float\"},{\"name\":\"ok\",\"type\":\"boolean\"}]}}},"
        "{\"name\":\"again\",\"type\":\"a.b.P\"},"
        "{\"name\":\"short\",\"type\":[\"null\",\"P\"]},"
        "{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"X\",\"Y\"]}},"
        "{\"name\":\"f\",\"type\":{\"type\":\"fixed\",\"name\":\"F\",\"size\":3}},"
        "{\"name\":\"d\",\"type\":\"double\"}]}";
    tony_buf rec = {0};
    tony_buf_append(&rec, "", 0);
    put_long(&rec, -2); /* a map block with its byte size */
    put_long(&rec, 6);
    put_str(&rec, "k1");
    put_long(&rec, -7);
    put_str(&rec, "k2");
    put_long(&rec, 1LL << 40);
    put_long(&rec, 0);
    put_long(&rec, 1); /* one P in the array */
    float fl = 1.5f;
    tony_buf_append(&rec, (const char *)&fl, 4);
    tony_buf_append(&rec, "\x01", 1);
    put_long(&rec, 0);
    tony_buf_append(&rec, (const char *)&fl, 4); /* again */
    tony_buf_append(&rec, "\x00", 1);
    put_long(&rec, 1); /* short: the P branch */
    tony_buf_append(&rec, (const char *)&fl, 4);
    tony_buf_append(&rec, "\x01", 1);
    put_long(&rec, 1); /* Y */
    tony_buf_append(&rec, "abc", 3);
    double d = -2.25;
    tony_buf_append(&rec, (const char *)&d, 8);
    tony_buf file = {0};
    container(&file, schema, "null", 1, 1, &rec);
    json_t *out;
    tony_error err;
    assert_int_equal(tony_avro_decode(file.data, file.len, &out, &err), 0);
    assert_int_equal(json_array_size(out), 1);
    json_t *r = json_array_get(out, 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "m"), "k1")), -7);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "m"), "k2")), 1LL << 40);
    json_t *p = json_array_get(json_object_get(r, "arr"), 0);
    assert_float_equal(json_real_value(json_object_get(p, "x")), 1.5, 1e-9);
    assert_true(json_is_true(json_object_get(p, "ok")));
    assert_true(json_is_false(json_object_get(json_object_get(r, "again"), "ok")));
    assert_true(json_is_true(json_object_get(json_object_get(r, "short"), "ok")));
    assert_string_equal(json_string_value(json_object_get(r, "e")), "Y");
    assert_string_equal(json_string_value(json_object_get(r, "f")), "abc");
    assert_float_equal(json_real_value(json_object_get(r, "d")), -2.25, 1e-12);
    json_decref(out);
    tony_buf_free(&file);
    tony_buf_free(&rec);
}

/* One record of schema {"type":"record",..fields} from raw bytes. */
static int decode_one(const char *schema, const tony_buf *rec, json_t **out, tony_error *err) {
    tony_buf file = {0};
    container(&file, schema, NULL, 1, 1, rec);
    int rc = tony_avro_decode(file.data, file.len, out, err);
    tony_buf_free(&file);
    return rc;
}

static void test_damage_is_named(void **state) {
    (void)state;
    const char *str_schema = "{\"type\":\"record\",\"name\":\"S\",\"fields\":[{\"name\":\"s\",\"type\":\"string\"}]}";
    tony_buf rec = {0};
    tony_buf_append(&rec, "", 0);
    put_long(&rec, -5); /* a negative length: avro-c allocates 2^64-4 bytes for it */
    json_t *out;
    tony_error err;
    assert_int_equal(decode_one(str_schema, &rec, &out, &err), -1);
    assert_non_null(strstr(err.msg, "string of -5 bytes"));
    assert_non_null(strstr(err.msg, "at byte"));
    assert_int_equal(json_array_size(out), 0);
    json_decref(out);

    const char *union_schema = "{\"type\":\"record\",\"name\":\"U\",\"fields\":[{\"name\":\"u\",\"type\":[\"null\",\"int\"]}]}";
    rec.len = 0;
    put_long(&rec, 7);
    assert_int_equal(decode_one(union_schema, &rec, &out, &err), -1);
    assert_non_null(strstr(err.msg, "union branch 7 of 2"));
    json_decref(out);

    const char *enum_schema = "{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\"]}";
    rec.len = 0;
    put_long(&rec, 3); /* avro-c hands back a wild pointer for this one */
    assert_int_equal(decode_one(enum_schema, &rec, &out, &err), -1);
    assert_non_null(strstr(err.msg, "enum symbol 3 of 1"));
    json_decref(out);

    const char *arr_schema = "{\"type\":\"array\",\"items\":\"null\"}";
    rec.len = 0;
    put_long(&rec, 1LL << 50); /* a quadrillion nulls in no bytes */
    assert_int_equal(decode_one(arr_schema, &rec, &out, &err), -1);
    assert_non_null(strstr(err.msg, "array block of"));
    json_decref(out);

    const char *int_schema = "\"int\"";
    rec.len = 0;
    put_long(&rec, 1LL << 40);
    assert_int_equal(decode_one(int_schema, &rec, &out, &err), -1);
    assert_non_null(strstr(err.msg, "int out of range"));
    json_decref(out);

    rec.len = 0;
    tony_buf_append(&rec, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11); /* an 11-byte varint */
    assert_int_equal(decode_one("\"long\"", &rec, &out, &err), -1);
    json_decref(out);

    rec.len = 0;
    assert_int_equal(decode_one("\"Missing\"", &rec, &out, &err), -1);
    assert_non_null(strstr(err.msg, "'Missing'"));
    json_decref(out);

    /* a schema that refers to itself without end */
    rec.len = 0;
    for (int i = 0; i < 200; i++) put_long(&rec, 1);
    assert_int_equal(decode_one("{\"type\":\"record\",\"name\":\"L\",\"fields\":[{\"name\":\"n\",\"type\":[\"null\",\"L\"]}]}",
                                &rec, &out, &err), -1);
    assert_non_null(strstr(err.msg, "deeper"));
    json_decref(out);

    /* compressed blocks, a schema that is not JSON, no schema at all */
    tony_buf file = {0};
    container(&file, "\"long\"", "deflate", 0);
    assert_int_equal(tony_avro_decode(file.data, file.len, &out, &err), -1);
    assert_non_null(strstr(err.msg, "compressed"));
    json_decref(out);
    file.len = 0;
    container(&file, "{nope", NULL, 0);
    assert_int_equal(tony_avro_decode(file.data, file.len, &out, &err), -1);
    assert_non_null(strstr(err.msg, "not JSON"));
    json_decref(out);
    assert_int_equal(tony_avro_decode("PK\x03\x04", 4, &out, &err), -1);
    assert_non_null(strstr(err.msg, "not an Avro data file"));
    json_decref(out);
    tony_buf_free(&file);
    tony_buf_free(&rec);
}

static void test_blocks_sync_and_truncation(void **state) {
    (void)state;
    tony_buf one = {0}, two = {0}, file = {0};
    tony_buf_append(&one, "", 0);
    tony_buf_append(&two, "", 0);
    put_long(&one, 1);
    put_long(&two, 2);
    put_long(&two, 3);
    container(&file, "\"long\"", NULL, 2, 1, &one, 2, &two);
    json_t *out;
    tony_error err;
    assert_int_equal(tony_avro_decode(file.data, file.len, &out, &err), 0);
    assert_int_equal(json_array_size(out), 3);
    assert_int_equal(json_integer_value(json_array_get(out, 2)), 3);
    json_decref(out);
    /* cut inside the last block: a writer still at work, the first block kept */
    assert_int_equal(tony_avro_decode(file.data, file.len - 5, &out, &err), 0);
    assert_int_equal(json_array_size(out), 1);
    json_decref(out);
    /* a wrong sync marker after the first block, with another block behind it: damage */
    char *copy = malloc(file.len);
    memcpy(copy, file.data, file.len);
    const char *header_sync = memmem(file.data, file.len, SYNC, 16);
    const char *second = memmem(header_sync + 16, file.len - (size_t)(header_sync + 16 - file.data), SYNC, 16);
    assert_non_null(second);
    copy[second - file.data] ^= 1;
    assert_int_equal(tony_avro_decode(copy, file.len, &out, &err), -1);
    assert_non_null(strstr(err.msg, "sync marker"));
    assert_int_equal(json_array_size(out), 1); /* what came before the damage */
    json_decref(out);
    free(copy);
    tony_buf_free(&one);
    tony_buf_free(&two);
    tony_buf_free(&file);
}

/* A real .jhist from the writer; every byte changed to a few values and
 * every prefix: records or an error, nothing else. */
/* The sample events as tony's writer puts them in a .jhist (dir: where). */
static void real_jhist(const char *dir, char **data, size_t *len) {
    char *path = tony_path_join(dir, "a.jhist");
    tony_error err;
    tony_jhist_writer *w = tony_jhist_writer_new(path, &err);
    assert_non_null(w);
    assert_int_equal(sample_jhist_events(w, &err), 0);
    assert_int_equal(tony_jhist_application_finished(w, 4, "application_1_0001", 2, 1, &err), 0);
    tony_jhist_writer_free(w);
    assert_int_equal(tony_read_file(path, data, len, &err), 0);
    unlink(path);
    free(path);
}

static void test_real_file_survives_any_damage(void **state) {
    (void)state;
    char dir[] = "/tmp/tony-avro-XXXXXX";
    assert_non_null(mkdtemp(dir));
    tony_error err;
    char *data;
    size_t len;
    real_jhist(dir, &data, &len);
    json_t *out;
    assert_int_equal(tony_avro_decode(data, len, &out, &err), 0);
    assert_int_equal(json_array_size(out), 4);
    json_decref(out);
    static const unsigned char values[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
    size_t ok = 0, damaged = 0;
    char *copy = malloc(len);
    for (size_t pos = 0; pos < len; pos++) {
        for (size_t v = 0; v < sizeof values; v++) {
            memcpy(copy, data, len);
            copy[pos] = (char)values[v];
            int rc = tony_avro_decode(copy, len, &out, &err);
            assert_non_null(out);
            assert_true(json_array_size(out) <= 4);
            if (rc) {
                assert_true(strstr(err.msg, "at byte") || strstr(err.msg, "Avro"));
                damaged++;
            } else {
                ok++;
            }
            json_decref(out);
        }
    }
    /* every cut after the header is a writer still at work: no error,
     * and never more records than a longer cut */
    char sync[16];
    memcpy(sync, data + len - 16, 16);
    size_t header = (size_t)((char *)memmem(data, len, sync, 16) - data) + 16, last = 0;
    for (size_t cut = 0; cut < len; cut++) {
        int rc = tony_avro_decode(data, cut, &out, &err);
        if (cut >= header) {
            assert_int_equal(rc, 0);
            assert_true(json_array_size(out) >= last);
            last = json_array_size(out);
        } else {
            assert_int_equal(rc, -1);
        }
        json_decref(out);
    }
    assert_int_equal(last, 3);
    assert_true(damaged > len); /* most changes are caught, not misread */
    assert_true(ok > 0);
    free(copy);
    free(data);
    tony_rm_rf(dir, NULL);
}

/* jansson's allocations counted: what a decode holds at its peak. Each
 * block carries its size in front. */
static size_t held, peak;

static void *counting_malloc(size_t n) {
    size_t *p = malloc(n + sizeof(size_t));
    if (!p) return NULL;
    *p = n;
    held += n;
    if (held > peak) peak = held;
    return p + 1;
}

static void counting_free(void *v) {
    if (!v) return;
    size_t *p = (size_t *)v - 1;
    held -= *p;
    free(p);
}

/* Decodes f counting what jansson allocates; returns the peak in bytes. */
static size_t decode_peak(const tony_buf *f, int *rc, tony_error *err) {
    json_set_alloc_funcs(counting_malloc, counting_free);
    held = peak = 0;
    json_t *records;
    *rc = tony_avro_decode(f->data, f->len, &records, err);
    json_decref(records);
    json_set_alloc_funcs(malloc, free);
    return peak;
}

/* Values that take no bytes (nulls, records of nulls) are where a small
 * file could make the reader allocate without end: an array of arrays of
 * 65536 nulls each made it hold 105 MB of JSON from 913 bytes, and a record of
 * many null fields, repeated, does the like. Whatever the file says, what
 * it can make the reader hold stays proportionate to its size. */
static void test_small_file_cannot_make_it_allocate_much(void **state) {
    (void)state;
    tony_buf rec = {0}, f = {0};
    int rc;
    tony_error err;
    /* one record: an array of 200 arrays of 65536 nulls each (819 bytes) */
    for (int i = 0; i < 1; i++) {
        put_long(&rec, 200);
        for (int j = 0; j < 200; j++) {
            put_long(&rec, 65536);
            put_long(&rec, 0);
        }
        put_long(&rec, 0);
    }
    container(&f, "{\"type\":\"array\",\"items\":{\"type\":\"array\",\"items\":\"null\"}}", NULL, 1, 1, &rec);
    assert_true(f.len < 1000);
    size_t p = decode_peak(&f, &rc, &err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err.msg, "items"));
    assert_true(p < 4 * 1024 * 1024);
    tony_buf_free(&rec);
    tony_buf_free(&f);

    /* 65536 records (no bytes each) of a record of 60 null fields */
    tony_buf schema = {0}, empty = {0};
    const char *head = "{\"type\":\"record\",\"name\":\"R\",\"fields\":[";
    tony_buf_append(&schema, head, strlen(head));
    for (int i = 0; i < 60; i++) {
        char field[48];
        int n = snprintf(field, sizeof field, "%s{\"name\":\"f%d\",\"type\":\"null\"}", i ? "," : "", i);
        tony_buf_append(&schema, field, (size_t)n);
    }
    tony_buf_append(&schema, "]}", 3);
    tony_buf_append(&empty, "", 0);
    container(&f, schema.data, NULL, 1, 65536, &empty);
    p = decode_peak(&f, &rc, &err);
    assert_int_equal(rc, -1);
    assert_true(p < 16 * 1024 * 1024);
    tony_buf_free(&f);
    tony_buf_free(&schema);
    tony_buf_free(&empty);

    /* The real file still reads whole. */
    char dir[] = "/tmp/tony-avro-XXXXXX";
    assert_non_null(mkdtemp(dir));
    tony_buf real = {0};
    size_t len;
    real_jhist(dir, &real.data, &len);
    real.len = len;
    decode_peak(&real, &rc, &err);
    assert_int_equal(rc, 0);
    free(real.data);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types_and_names),
        cmocka_unit_test(test_damage_is_named),
        cmocka_unit_test(test_blocks_sync_and_truncation),
        cmocka_unit_test(test_real_file_survives_any_damage),
        cmocka_unit_test(test_small_file_cannot_make_it_allocate_much),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
