/* common/pace.h: a paced piece of work is held to its share of the time,
 * measured on tony's clock (fixed here by its test hook). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/clock.h"
#include "common/pace.h"

static void test_cheap_work_is_always_due(void **state) {
    (void)state;
    tony_clock_test_fix(1000, 0);
    tony_pace p = {.percent = 5};
    assert_true(tony_pace_due(&p));
    long long t0 = tony_now_us();
    tony_pace_ran(&p, t0); /* took no time: due again at once */
    assert_true(tony_pace_due(&p));
    tony_clock_test_release();
}

static void test_costly_work_waits_for_its_share(void **state) {
    (void)state;
    tony_clock_test_fix(1000, 0);
    tony_pace p = {.percent = 5};
    long long t0 = tony_now_us();
    tony_clock_test_advance(200); /* a run of 200 ms at 5 %: the next after 3.8 s */
    tony_pace_ran(&p, t0);
    assert_int_equal(p.last_us, 200000);
    tony_clock_test_advance(3799);
    assert_false(tony_pace_due(&p));
    tony_clock_test_advance(1);
    assert_true(tony_pace_due(&p));
    tony_clock_test_release();
}

static void test_share_is_bounded(void **state) {
    (void)state;
    tony_clock_test_fix(1000, 0);
    tony_pace all = {.percent = 100}, none = {.percent = 0};
    long long t0 = tony_now_us();
    tony_clock_test_advance(10);
    tony_pace_ran(&all, t0);
    tony_pace_ran(&none, t0); /* read as 1 %: 99 × 10 ms */
    assert_true(tony_pace_due(&all));
    tony_clock_test_advance(989);
    assert_false(tony_pace_due(&none));
    tony_clock_test_advance(1);
    assert_true(tony_pace_due(&none));
    tony_clock_test_release();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cheap_work_is_always_due),
        cmocka_unit_test(test_costly_work_waits_for_its_share),
        cmocka_unit_test(test_share_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
