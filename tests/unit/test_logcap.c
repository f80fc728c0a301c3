/* The task log cap (executor/logcap.c): a file under its cap is left
 * alone; one past it keeps its head (to a line's end), a line saying how
 * many bytes were cut, and its most recent tail (from a line's start); a
 * second cut replaces the first one's line and counts all; appends go on
 * after a cut; 0 is no cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fs.h"
#include "common/strv.h"
#include "executor/logcap.h"

static char dir[] = "/tmp/tony-logcap-XXXXXX";

/* Appends n lines "L<first+i> xxxx...\n" of 100 bytes each. */
static void append_lines(const char *path, int first, int n) {
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    for (int i = 0; i < n; i++) fprintf(f, "L%07d %090d\n", first + i, 0);
    fclose(f);
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *data = tony_xmalloc((size_t)n + 1);
    *len = fread(data, 1, (size_t)n, f);
    data[*len] = '\0';
    fclose(f);
    return data;
}

/* The number the cut's line says. */
static long long said_cut(const char *text) {
    const char *m = strstr(text, "==== tony: at least ");
    assert_non_null(m);
    return atoll(m + strlen("==== tony: at least "));
}

static void test_cut_keeps_head_and_tail(void **state) {
    (void)state;
    char *path = tony_path_join(dir, "stderr");
    unlink(path);
    tony_logcap c;
    tony_logcap_init(&c, path, 40000);
    tony_error err;
    assert_int_equal(tony_logcap_check(&c, &err), 0); /* no file yet */
    append_lines(path, 0, 400);                         /* exactly the cap: no cut */
    assert_int_equal(tony_logcap_check(&c, &err), 0);
    append_lines(path, 400, 1); /* past it */
    assert_int_equal(tony_logcap_check(&c, &err), 1);
    size_t len;
    char *text = slurp(path, &len);
    assert_true(len < 40000 / 2 + 200);
    /* the head: whole lines of the first quarter; the tail: whole lines up to the last */
    assert_memory_equal(text, "L0000000 ", 9);
    char *line = strstr(text, "\n==== tony: at least ");
    assert_non_null(line);
    assert_int_equal((line - text) % 100, 0);
    assert_true(line - text <= 10000);
    const char *after = strchr(line + 1, '\n') + 1;
    assert_int_equal(after[0], 'L');
    assert_int_equal(strlen(after) % 100, 0);
    assert_memory_equal(text + len - 100, "L0000400 ", 9);
    /* all bytes accounted for: kept + cut = written */
    size_t marker = (size_t)(after - line);
    assert_int_equal((long long)(len - marker) + said_cut(text), 401 * 100);
    assert_int_equal(c.cut_total, said_cut(text));
    free(text);

    /* it grows on from there, and a second cut says the total */
    append_lines(path, 401, 300);
    assert_int_equal(tony_logcap_check(&c, &err), 1);
    text = slurp(path, &len);
    assert_memory_equal(text, "L0000000 ", 9);
    assert_non_null(strstr(text, "tony.task.log-max-size"));
    /* one line only: the first cut's went with the second cut */
    assert_null(strstr(strstr(text, "==== tony:") + 1, "==== tony:"));
    line = strstr(text, "\n==== tony: at least ");
    after = strchr(line + 1, '\n') + 1;
    assert_int_equal((long long)(len - (size_t)(after - line)) + said_cut(text), 701 * 100);
    assert_memory_equal(text + len - 100, "L0000700 ", 9);
    free(text);
    assert_int_equal(c.cuts, 2);
    tony_logcap_free(&c);
    unlink(path);
    free(path);
}

static void test_no_cap_and_lines_without_newlines(void **state) {
    (void)state;
    char *path = tony_path_join(dir, "stdout");
    unlink(path);
    tony_logcap c;
    tony_logcap_init(&c, path, 0);
    append_lines(path, 0, 1000);
    tony_error err;
    assert_int_equal(tony_logcap_check(&c, &err), 0);
    tony_logcap_free(&c);
    /* a tiny cap counts as the least one; one long line is cut anywhere */
    tony_logcap_init(&c, path, 10);
    assert_int_equal(c.max, TONY_LOGCAP_MIN_BYTES);
    char *blob = tony_xmalloc(100000);
    memset(blob, 'z', 100000);
    tony_write_file(path, blob, 100000, 0600, &err);
    assert_int_equal(tony_logcap_check(&c, &err), 1);
    size_t len;
    char *text = slurp(path, &len);
    assert_true(len <= TONY_LOGCAP_MIN_BYTES);
    assert_int_equal(text[0], 'z');
    assert_int_equal(text[len - 1], 'z');
    free(text);
    free(blob);
    tony_logcap_free(&c);
    unlink(path);
    free(path);
}

static void test_logcaps_value(void **state) {
    (void)state;
    tony_logcaps c;
    tony_logcaps_start(&c, "/nonexistent/out", "/nonexistent/err", "1048576");
    assert_int_equal(c.files[0].max, 1048576);
    tony_logcaps_poll(&c); /* no files: nothing to do, nothing said */
    tony_logcaps_free(&c);
    tony_logcaps_start(&c, "/nonexistent/out", "/nonexistent/err", "many");
    assert_int_equal(c.files[1].max, 0);
    tony_logcaps_free(&c);
    tony_logcaps_start(&c, "/nonexistent/out", "/nonexistent/err", NULL);
    assert_int_equal(c.files[0].max, 0);
    tony_logcaps_free(&c);
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cut_keeps_head_and_tail),
        cmocka_unit_test(test_no_cap_and_lines_without_newlines),
        cmocka_unit_test(test_logcaps_value),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(dir);
    return rc;
}
