/* The executor's signs of life of a task (executor/activity.h) on real
 * files: output that grows, a progress file touched, a file that appears
 * late, and silence counted from the start; what the files held when
 * watching began is no activity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "executor/activity.h"

static void append(const char *path, const char *text) {
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_output_and_progress(void **state) {
    (void)state;
    char dir[] = "/tmp/tony-activity-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char out[64], progress[64];
    snprintf(out, sizeof out, "%s/stdout", dir);
    snprintf(progress, sizeof progress, "%s/progress", dir);
    append(out, "written before watching\n");
    const char *paths[] = {out, progress};
    tony_activity a;
    tony_activity_init(&a, paths, 2, 1000);
    /* silence since the start, old output included */
    assert_int_equal(tony_activity_idle_ms(&a, 4000), 3000);
    append(out, "step 1\n");
    assert_int_equal(tony_activity_idle_ms(&a, 5000), 0);
    assert_int_equal(tony_activity_idle_ms(&a, 7500), 2500);
    /* the progress file, missing until now, appears */
    append(progress, "");
    assert_int_equal(tony_activity_idle_ms(&a, 8000), 0);
    /* touched again: its mtime moves though its size does not */
    struct timespec later[2] = {{time(NULL) + 5, 0}, {time(NULL) + 5, 0}};
    assert_int_equal(utimensat(AT_FDCWD, progress, later, 0), 0);
    assert_int_equal(tony_activity_idle_ms(&a, 9000), 0);
    assert_int_equal(tony_activity_idle_ms(&a, 9400), 400);
    /* gone again is a change too, then silence */
    unlink(progress);
    assert_int_equal(tony_activity_idle_ms(&a, 9500), 0);
    assert_int_equal(tony_activity_idle_ms(&a, 12500), 3000);
    tony_activity_free(&a);
    unlink(out);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_output_and_progress)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
