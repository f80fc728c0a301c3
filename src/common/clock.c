/* tony's one clock (clock.h): the only file in src/ that reads the system's
 * clocks, so that a test can fix or step every reading through one hook. */
#include "common/clock.h"

#include <stdatomic.h>
#include <stdbool.h>

/* The test hook's state: atomics, since worker threads (common/workq) read
 * the clock while a test thread may set it. */
static atomic_bool fixed;
static atomic_llong fixed_mono, fixed_wall;

static long long read_ms(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long tony_now_ms(void) { return atomic_load(&fixed) ? atomic_load(&fixed_mono) : read_ms(CLOCK_MONOTONIC); }

long long tony_now_us(void) {
    if (atomic_load(&fixed)) return atomic_load(&fixed_mono) * 1000;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

long long tony_wall_ms(void) { return atomic_load(&fixed) ? atomic_load(&fixed_wall) : read_ms(CLOCK_REALTIME); }

void tony_clock_cond_init(pthread_cond_t *c) {
    pthread_condattr_t mono;
    pthread_condattr_init(&mono);
    pthread_condattr_setclock(&mono, CLOCK_MONOTONIC);
    pthread_cond_init(c, &mono);
    pthread_condattr_destroy(&mono);
}

void tony_clock_cond_deadline(long long ms, struct timespec *out) {
    clock_gettime(CLOCK_MONOTONIC, out);
    if (ms <= 0) return;
    long long ns = out->tv_nsec + ms % 1000 * 1000000;
    out->tv_sec += (time_t)(ms / 1000 + ns / 1000000000);
    out->tv_nsec = (long)(ns % 1000000000);
}

void tony_clock_test_fix(long long mono_ms, long long wall_ms) {
    atomic_store(&fixed_mono, mono_ms);
    atomic_store(&fixed_wall, wall_ms);
    atomic_store(&fixed, true);
}

void tony_clock_test_advance(long long ms) {
    if (ms > 0) atomic_fetch_add(&fixed_mono, ms);
    atomic_fetch_add(&fixed_wall, ms);
}

void tony_clock_test_release(void) { atomic_store(&fixed, false); }
