/* tony's one clock: monotonic ms for deadlines and durations, wall ms for
 * timestamps that people and other nodes read. Nothing else in src/ reads
 * the system's clocks (scripts/check-clock fails if something does), so the
 * test hook at the bottom moves every reading in the process at once. */
#ifndef TONY_COMMON_CLOCK_H
#define TONY_COMMON_CLOCK_H

#include <pthread.h>
#include <time.h>

/* A monotonic clock in ms, for deadlines (immune to clock steps); its zero
 * is arbitrary, so only differences mean anything. */
long long tony_now_ms(void);
/* The same clock in µs, for durations too short for ms (common/pace.h). */
long long tony_now_us(void);
/* The wall clock, ms since the epoch (timestamps compared across nodes or
 * shown to people; may step back or forward). */
long long tony_wall_ms(void);

/* A condition variable whose timed waits run on the kernel's monotonic
 * clock. The kernel measures such a wait, so these two use the real clock,
 * never the test hook. */
void tony_clock_cond_init(pthread_cond_t *c);
/* The absolute time ms (<= 0: now) from now, for pthread_cond_timedwait on
 * a condition variable from tony_clock_cond_init. */
void tony_clock_cond_deadline(long long ms, struct timespec *out);

/* ---- The test hook: compiled in always, called only by tests. Call it
 * from one thread; readers on other threads see each value whole. */

/* Fixes both clocks: tony_now_ms returns mono_ms and tony_wall_ms wall_ms
 * until moved or released. */
void tony_clock_test_fix(long long mono_ms, long long wall_ms);
/* Moves the fixed clocks by ms: forward moves both; back (ms < 0) moves
 * only the wall clock, as an NTP step does, since the monotonic clock never
 * goes back. No effect unless fixed. */
void tony_clock_test_advance(long long ms);
/* Back to the system's clocks. */
void tony_clock_test_release(void);

#endif
