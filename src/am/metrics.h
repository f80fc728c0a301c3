/* What the coordinator keeps of one task's samples: the latest one, TonY's
 * running aggregates (contract §6.4, the names Dr. Elephant reads, plus our
 * CPU ones) and a bounded time series for the web UI that halves its
 * resolution whenever it fills, so that a job of days costs the same as a
 * job of minutes. */
#ifndef TONY_AM_METRICS_H
#define TONY_AM_METRICS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/sample.h"

#define AM_METRICS_MAX_POINTS 720

/* TonY's 8 metric names in TonY's order, then ours. */
enum {
    AM_METRIC_MAX_MEMORY_BYTES,
    AM_METRIC_AVG_MEMORY_BYTES,
    AM_METRIC_MAX_GPU_UTILIZATION,
    AM_METRIC_AVG_GPU_UTILIZATION,
    AM_METRIC_MAX_GPU_FB_MEMORY_USAGE,
    AM_METRIC_AVG_GPU_FB_MEMORY_USAGE,
    AM_METRIC_MAX_GPU_MAIN_MEMORY_USAGE,
    AM_METRIC_AVG_GPU_MAIN_MEMORY_USAGE,
    AM_METRIC_MAX_CPU_PERCENT,
    AM_METRIC_AVG_CPU_PERCENT,
    AM_METRIC_COUNT,
    AM_METRIC_TONY_COUNT = AM_METRIC_MAX_CPU_PERCENT, /* the ones TonY defines */
};
const char *am_metric_name(int metric);

typedef struct am_metrics am_metrics;

/* max_points: the series' bound (>= 2). */
am_metrics *am_metrics_new(size_t max_points);
void am_metrics_free(am_metrics *m);
void am_metrics_add(am_metrics *m, const tony_sample *s);
size_t am_metrics_samples(const am_metrics *m); /* how many were added */
/* The aggregate's value, -1 when never measured. */
double am_metrics_value(const am_metrics *m, int metric);
/* The task's peak memory its executor reported at its end (the kernel's:
 * AM_API_PEAK_MEMORY_BYTES); the highest report counts. */
void am_metrics_set_peak(am_metrics *m, long long bytes);
/* That peak, never below the samples' MAX_MEMORY_BYTES; -1 when the
 * executor reported none (the task has not ended, or its executor is one
 * that does not report it). */
long long am_metrics_peak(const am_metrics *m);
/* {"MAX_MEMORY_BYTES": n, ..., "PEAK_MEMORY_BYTES": n}: every name, -1 when
 * never measured. */
json_t *am_metrics_aggregates_json(const am_metrics *m);
/* {"t_ms","rss_bytes","cpu_percent","gpu_util_percent","gpu_mem_bytes"} or
 * null before the first sample. */
json_t *am_metrics_last_json(const am_metrics *m);
/* The series as parallel arrays of equal length, oldest first (GPU arrays
 * hold null where not measured); keys as in am_metrics_last_json. */
json_t *am_metrics_series_json(const am_metrics *m);

#endif
