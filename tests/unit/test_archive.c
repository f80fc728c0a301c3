/* Unit tests of the archive helpers: zip a tree and unpack it elsewhere with
 * its contents and exec bits, tar.gz unpacking, refusal of entries that
 * escape the target dir, and magic-number detection. Works under a fresh
 * mkdtemp dir in /tmp. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <cmocka.h>

#include "common/archive.h"
#include "common/fs.h"
#include "common/strv.h"

static char *tmp; /* per-test scratch dir */

static int setup(void **state) {
    (void)state;
    char t[] = "/tmp/tony-test-archive-XXXXXX";
    if (!mkdtemp(t)) return -1;
    tmp = tony_strdup(t);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tony_rm_rf(tmp, NULL);
    free(tmp);
    tmp = NULL;
    return 0;
}

static char *at(const char *rel) { return tony_path_join(tmp, rel); }

static void write_at(const char *rel, const char *data, size_t len, int mode) {
    char *p = at(rel);
    char *dir = tony_strdup(p);
    *strrchr(dir, '/') = '\0';
    tony_error err;
    assert_int_equal(tony_mkdir_p(dir, 0755, &err), 0);
    if (tony_write_file(p, data, len, mode, &err) != 0) fail_msg("%s", err.msg);
    chmod(p, (mode_t)mode);
    free(dir);
    free(p);
}

static void assert_file(const char *path, const char *data, size_t len) {
    char *got = NULL;
    size_t n = 0;
    tony_error err;
    if (tony_read_file(path, &got, &n, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(n, len);
    assert_memory_equal(got, data, len);
    free(got);
}

static mode_t mode_of(const char *path) {
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode & 07777;
}

/* Writes a tar (gzip'ed when gz) holding the given entries. An entry with
 * link != NULL is a symlink to link; others are files holding data. */
typedef struct tar_entry {
    const char *name;
    const char *data;
    const char *link;
    int mode;
} tar_entry;

static void write_tar(const char *path, bool gz, const tar_entry *entries, size_t n) {
    struct archive *a = archive_write_new();
    archive_write_set_format_ustar(a);
    if (gz) archive_write_add_filter_gzip(a);
    assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, entries[i].name);
        archive_entry_set_perm(e, (mode_t)entries[i].mode);
        if (entries[i].link) {
            archive_entry_set_filetype(e, AE_IFLNK);
            archive_entry_set_symlink(e, entries[i].link);
            archive_entry_set_size(e, 0);
        } else {
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_size(e, (la_int64_t)strlen(entries[i].data));
        }
        assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
        if (!entries[i].link) archive_write_data(a, entries[i].data, strlen(entries[i].data));
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
}

static const char bin[] = {'a', 0, 'b', (char)0xff, '\n', 0};

static void test_zip_roundtrip(void **state) {
    (void)state;
    write_at("src/a.txt", "hello\n", 6, 0644);
    write_at("src/sub/run.sh", "#!/bin/sh\necho hi\n", 18, 0755);
    write_at("src/sub/deeper/data.bin", bin, sizeof bin, 0600);
    char *src = at("src"), *zip = at("out.zip"), *dst = at("unpacked/here");
    /* a zip written inside the dir it zips does not contain itself */
    char *selfzip = at("src/self.zip");
    tony_error err = {{0}};

    if (tony_archive_zip_dir(src, zip, &err) != 0) fail_msg("%s", err.msg);
    assert_true(tony_archive_is_archive(zip));
    if (tony_archive_zip_dir(src, selfzip, &err) != 0) fail_msg("%s", err.msg);

    if (tony_archive_extract(zip, dst, &err) != 0) fail_msg("%s", err.msg);
    char *p1 = tony_path_join(dst, "a.txt"), *p2 = tony_path_join(dst, "sub/run.sh"),
         *p3 = tony_path_join(dst, "sub/deeper/data.bin");
    assert_file(p1, "hello\n", 6);
    assert_file(p2, "#!/bin/sh\necho hi\n", 18);
    assert_file(p3, bin, sizeof bin);
    assert_int_equal(mode_of(p2), 0755);
    assert_int_equal(mode_of(p1) & 0111, 0);
    assert_int_equal(mode_of(p3), 0600);
    free(p1);
    free(p2);
    free(p3);

    char *dst2 = at("unpacked2");
    if (tony_archive_extract(selfzip, dst2, &err) != 0) fail_msg("%s", err.msg);
    char *inner = tony_path_join(dst2, "self.zip"), *ok = tony_path_join(dst2, "sub/run.sh");
    assert_false(tony_file_exists(inner));
    assert_true(tony_file_exists(ok));
    free(inner);
    free(ok);
    free(dst2);

    free(src);
    free(zip);
    free(dst);
    free(selfzip);
}

static void test_zip_errors_name_the_file(void **state) {
    (void)state;
    tony_error err = {{0}};
    char *missing = at("nope"), *zip = at("x.zip");
    assert_int_equal(tony_archive_zip_dir(missing, zip, &err), -1);
    assert_non_null(strstr(err.msg, missing));
    assert_false(tony_file_exists(zip));

    write_at("junk.txt", "not an archive at all\n", 22, 0644);
    char *junk = at("junk.txt"), *dst = at("out");
    assert_int_equal(tony_archive_extract(junk, dst, &err), -1);
    assert_non_null(strstr(err.msg, junk));
    assert_int_equal(tony_archive_extract(missing, dst, &err), -1);
    assert_non_null(strstr(err.msg, missing));
    free(missing);
    free(zip);
    free(junk);
    free(dst);
}

static void test_tar_gz_extract(void **state) {
    (void)state;
    char *tgz = at("venv.tar.gz"), *tar = at("plain.tar"), *dst = at("venv");
    tar_entry entries[] = {
        {"bin/python", "#!/usr/bin/env true\n", NULL, 0755},
        {"lib/site.py", "x = 1\n", NULL, 0644},
        {"bin/python3", NULL, "python", 0777},
    };
    write_tar(tgz, true, entries, 3);
    write_tar(tar, false, entries, 2);
    assert_true(tony_archive_is_archive(tgz));
    assert_true(tony_archive_is_archive(tar));

    tony_error err = {{0}};
    if (tony_archive_extract(tgz, dst, &err) != 0) fail_msg("%s", err.msg);
    char *py = tony_path_join(dst, "bin/python"), *site = tony_path_join(dst, "lib/site.py"),
         *py3 = tony_path_join(dst, "bin/python3");
    assert_file(py, "#!/usr/bin/env true\n", 20);
    assert_int_equal(mode_of(py), 0755);
    assert_file(site, "x = 1\n", 6);
    char target[64] = {0};
    assert_int_equal(readlink(py3, target, sizeof target - 1), 6);
    assert_string_equal(target, "python");
    free(py);
    free(site);
    free(py3);

    /* Into a dir reached through a symlink. */
    char *real = at("real"), *link = at("linked");
    assert_int_equal(mkdir(real, 0755), 0);
    assert_int_equal(symlink(real, link), 0);
    char *dst2 = tony_path_join(link, "plain");
    if (tony_archive_extract(tar, dst2, &err) != 0) fail_msg("%s", err.msg);
    char *site2 = tony_path_join(real, "plain/lib/site.py");
    assert_file(site2, "x = 1\n", 6);
    free(site2);
    free(dst2);
    free(real);
    free(link);
    free(tgz);
    free(tar);
    free(dst);
}

static void test_extract_refuses_escapes(void **state) {
    (void)state;
    tony_error err = {{0}};
    char *dst = at("y/inner");

    /* ".." */
    char *evil_tar = at("evil.tar");
    tar_entry dotdot[] = {{"ok.txt", "fine\n", NULL, 0644}, {"../evil", "pwned\n", NULL, 0644}};
    write_tar(evil_tar, false, dotdot, 2);
    assert_int_equal(tony_archive_extract(evil_tar, dst, &err), -1);
    assert_non_null(strstr(err.msg, "../evil"));
    assert_non_null(strstr(err.msg, evil_tar));
    char *evil = at("y/evil");
    assert_false(tony_file_exists(evil));
    free(evil);

    /* "a/../../evil2" */
    char *evil2_tar = at("evil2.tar");
    tar_entry inner[] = {{"a/../../evil2", "pwned\n", NULL, 0644}};
    write_tar(evil2_tar, false, inner, 1);
    assert_int_equal(tony_archive_extract(evil2_tar, dst, &err), -1);
    char *evil2 = at("y/evil2");
    assert_false(tony_file_exists(evil2));
    free(evil2);

    /* absolute path */
    char *abs_tar = at("abs.tar"), *abs_target = at("abs_evil");
    tar_entry absent[] = {{abs_target, "pwned\n", NULL, 0644}};
    write_tar(abs_tar, false, absent, 1);
    assert_int_equal(tony_archive_extract(abs_tar, dst, &err), -1);
    assert_false(tony_file_exists(abs_target));

    /* a symlink to outside, then a file written through it */
    char *outside = at("outside");
    assert_int_equal(mkdir(outside, 0755), 0);
    char *sym_tar = at("sym.tar");
    tar_entry sym[] = {{"link", NULL, outside, 0777}, {"link/evil3", "pwned\n", NULL, 0644}};
    write_tar(sym_tar, false, sym, 2);
    assert_int_equal(tony_archive_extract(sym_tar, dst, &err), -1);
    char *evil3 = tony_path_join(outside, "evil3");
    assert_false(tony_file_exists(evil3));
    free(evil3);

    /* the target dir itself a symlink (a `venv` link in the src archive,
     * or one an earlier resource planted): nothing goes through it */
    char *ok_tar = at("ok.tar"), *linked = at("y/linked");
    tar_entry plain[] = {{"evil4", "pwned\n", NULL, 0644}};
    write_tar(ok_tar, false, plain, 1);
    assert_int_equal(symlink(outside, linked), 0);
    assert_int_equal(tony_archive_extract(ok_tar, linked, &err), -1);
    assert_non_null(strstr(err.msg, "a symlink"));
    char *evil4 = tony_path_join(outside, "evil4");
    assert_false(tony_file_exists(evil4));
    free(evil4);

    /* tony_mkdir_within: makes dirs below root, never through a link */
    char *y = at("y");
    assert_int_equal(tony_mkdir_within(y, "m/n/./o", 0700, &err), 0);
    char *made = at("y/m/n/o");
    assert_true(tony_is_dir(made));
    free(made);
    assert_int_equal(tony_mkdir_within(y, "linked/p", 0700, &err), -1);
    assert_non_null(strstr(err.msg, "a symlink"));
    char *p = tony_path_join(outside, "p");
    assert_false(tony_file_exists(p));
    free(p);
    assert_int_equal(tony_mkdir_within(y, "m/../../q", 0700, &err), -1);
    assert_int_equal(tony_mkdir_within(y, "/q", 0700, &err), -1);
    free(y);
    free(linked);
    free(ok_tar);

    free(outside);
    free(sym_tar);
    free(abs_tar);
    free(abs_target);
    free(evil2_tar);
    free(evil_tar);
    free(dst);
}

/* tar.gz of named files (what `tony pack` writes): names as given, modes
 * kept; a missing member is an error naming it and leaves no archive. */
static void test_tgz_of_named_files(void **state) {
    (void)state;
    write_at("a.bin", "launcher", 8, 0755);
    write_at("b.so", "library", 7, 0644);
    char *a = tony_path_join(tmp, "a.bin"), *b = tony_path_join(tmp, "b.so");
    char *out = tony_path_join(tmp, "t.tar.gz"), *dest = tony_path_join(tmp, "out");
    tony_archive_member m[] = {{a, "pre/bin/tony"}, {b, "pre/lib/tony/libx.so.1"}};
    tony_error err;
    assert_int_equal(tony_archive_write_tgz(out, m, 2, &err), 0);
    assert_true(tony_archive_is_archive(out));
    assert_int_equal(tony_archive_extract(out, dest, &err), 0);
    char *got = tony_path_join(dest, "pre/bin/tony");
    assert_file(got, "launcher", 8);
    struct stat st;
    assert_int_equal(stat(got, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0755);
    free(got);
    got = tony_path_join(dest, "pre/lib/tony/libx.so.1");
    assert_file(got, "library", 7);
    assert_int_equal(stat(got, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    free(got);

    char *missing = tony_path_join(tmp, "nope.so");
    tony_archive_member bad[] = {{a, "bin/tony"}, {missing, "lib/nope.so"}};
    assert_int_equal(tony_archive_write_tgz(out, bad, 2, &err), -1);
    assert_non_null(strstr(err.msg, missing));
    assert_false(tony_file_exists(out));
    free(missing);
    free(a);
    free(b);
    free(out);
    free(dest);
}

static void test_magic(void **state) {
    (void)state;
    write_at("empty.zip", "PK\5\6\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 22, 0644);
    write_at("span.zip", "PK\7\x08xxxx", 8, 0644);
    write_at("local.zip", "PK\3\4xxxx", 8, 0644);
    write_at("gz", "\x1f\x8b\x08\0", 4, 0644);
    write_at("text", "print('hello')\n", 15, 0644);
    write_at("pk", "PK", 2, 0644);
    write_at("short", "", 0, 0644);
    char *tarp = at("t.tar");
    tar_entry e[] = {{"f", "x", NULL, 0644}};
    write_tar(tarp, false, e, 1);

    const struct {
        const char *name;
        bool want;
    } cases[] = {{"empty.zip", true}, {"span.zip", true}, {"local.zip", true}, {"gz", true}, {"t.tar", true},
                 {"text", false},     {"pk", false},      {"short", false},    {"missing", false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *p = at(cases[i].name);
        if (tony_archive_is_archive(p) != cases[i].want) fail_msg("is_archive(%s) != %d", cases[i].name, cases[i].want);
        free(p);
    }
    /* a directory is not an archive */
    assert_false(tony_archive_is_archive(tmp));
    free(tarp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_zip_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zip_errors_name_the_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tar_gz_extract, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extract_refuses_escapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tgz_of_named_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_magic, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
