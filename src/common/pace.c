/* Pacing of periodic work by its own cost (pace.h). */
#include "common/pace.h"

#include "common/clock.h"

bool tony_pace_due(const tony_pace *p) { return tony_now_us() >= p->not_before_us; }

void tony_pace_ran(tony_pace *p, long long started_us) {
    long long now = tony_now_us(), took = now - started_us;
    int pct = p->percent < 1 ? 1 : p->percent > 100 ? 100 : p->percent;
    if (took < 0) took = 0;
    p->last_us = took;
    p->not_before_us = now + took * (100 - pct) / pct;
}
