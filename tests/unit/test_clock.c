/* Unit tests of common/clock: the monotonic clock never goes back, the wall
 * clock is the system's, the test hook fixes and steps both (a step back
 * moves the wall clock only) and reaches the clock's users (the log's
 * timestamps), and timed condition waits keep the kernel's clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/strv.h"

static long long system_ms(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_monotonic_never_goes_back(void **state) {
    (void)state;
    long long prev = tony_now_ms();
    for (int i = 0; i < 200000; i++) {
        long long now = tony_now_ms();
        assert_true(now >= prev);
        prev = now;
    }
    tony_sleep_ms(30);
    assert_true(tony_now_ms() - prev >= 30);
}

static void test_wall_is_the_systems(void **state) {
    (void)state;
    long long before = system_ms(CLOCK_REALTIME), wall = tony_wall_ms(), after = system_ms(CLOCK_REALTIME);
    assert_true(before <= wall && wall <= after);
    /* Not the monotonic clock by mistake: that one counts from boot. */
    assert_true(wall > 1600000000000LL);
}

static void test_hook_fixes_and_steps(void **state) {
    (void)state;
    tony_clock_test_fix(5000, 1700000000000LL);
    assert_int_equal(tony_now_ms(), 5000);
    assert_int_equal(tony_wall_ms(), 1700000000000LL);
    tony_sleep_ms(20);
    assert_int_equal(tony_now_ms(), 5000); /* fixed means fixed */
    tony_clock_test_advance(1500);
    assert_int_equal(tony_now_ms(), 6500);
    assert_int_equal(tony_wall_ms(), 1700000001500LL);
    /* A step back, as NTP makes: deadlines on the monotonic clock hold. */
    tony_clock_test_advance(-60000);
    assert_int_equal(tony_now_ms(), 6500);
    assert_int_equal(tony_wall_ms(), 1699999941500LL);
    tony_clock_test_release();
    long long mono = system_ms(CLOCK_MONOTONIC);
    assert_true(llabs(tony_now_ms() - mono) < 1000);
    assert_true(llabs(tony_wall_ms() - system_ms(CLOCK_REALTIME)) < 1000);
}

static void test_hook_reaches_the_log(void **state) {
    (void)state;
    /* 2001-09-09 01:46:40.123 UTC: the log prints local time, so compare
     * with what localtime makes of the same instant. */
    long long wall = 1000000000123LL;
    time_t sec = (time_t)(wall / 1000);
    struct tm tm;
    localtime_r(&sec, &tm);
    char want[64];
    strftime(want, sizeof want, "%Y-%m-%d %H:%M:%S.123", &tm);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    tony_log_init("clock-test", out);
    tony_clock_test_fix(1, wall);
    tony_info("hello");
    tony_clock_test_release();
    tony_log_init("clock-test", stderr);
    fclose(out);
    assert_true(strncmp(buf, want, strlen(want)) == 0);
    free(buf);
}

static void test_cond_wait_runs_on_the_kernels_clock(void **state) {
    (void)state;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c;
    tony_clock_cond_init(&c);
    /* A fixed clock must not stretch or cut a wait the kernel measures. */
    tony_clock_test_fix(0, 0);
    long long t0 = system_ms(CLOCK_MONOTONIC);
    struct timespec end;
    tony_clock_cond_deadline(1250, &end);
    pthread_mutex_lock(&mu);
    int rc = 0;
    while (rc != ETIMEDOUT) rc = pthread_cond_timedwait(&c, &mu, &end);
    pthread_mutex_unlock(&mu);
    long long took = system_ms(CLOCK_MONOTONIC) - t0;
    tony_clock_test_release();
    assert_true(took >= 1249 && took < 5000);
    /* <= 0: a deadline already reached. */
    tony_clock_cond_deadline(-5, &end);
    pthread_mutex_lock(&mu);
    assert_int_equal(pthread_cond_timedwait(&c, &mu, &end), ETIMEDOUT);
    pthread_mutex_unlock(&mu);
    pthread_cond_destroy(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_monotonic_never_goes_back),
        cmocka_unit_test(test_wall_is_the_systems),
        cmocka_unit_test(test_hook_fixes_and_steps),
        cmocka_unit_test(test_hook_reaches_the_log),
        cmocka_unit_test(test_cond_wait_runs_on_the_kernels_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
