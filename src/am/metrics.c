/* Per-task metrics in the coordinator. A series point stands for one or
 * more raw samples: it keeps their peak memory and the sums behind their
 * mean CPU and GPU use, so that merging two points when the series halves
 * loses resolution but neither peaks nor averages. The kernel's peak, which
 * the executor reports at the task's end, is kept beside them. */
#include "am/metrics.h"

#include <stdlib.h>

#include "common/jobjson.h"
#include "common/strv.h"

static const char *const names[AM_METRIC_COUNT] = {
    JOB_METRIC_MAX_MEMORY_BYTES,          JOB_METRIC_AVG_MEMORY_BYTES,
    JOB_METRIC_MAX_GPU_UTILIZATION,       JOB_METRIC_AVG_GPU_UTILIZATION,
    JOB_METRIC_MAX_GPU_FB_MEMORY_USAGE,   JOB_METRIC_AVG_GPU_FB_MEMORY_USAGE,
    JOB_METRIC_MAX_GPU_MAIN_MEMORY_USAGE, JOB_METRIC_AVG_GPU_MAIN_MEMORY_USAGE,
    JOB_METRIC_MAX_CPU_PERCENT,           JOB_METRIC_AVG_CPU_PERCENT,
};

const char *am_metric_name(int metric) { return metric >= 0 && metric < AM_METRIC_COUNT ? names[metric] : "?"; }

typedef struct point {
    long long t_ms;     /* the newest sample's time */
    long long rss_max;
    double cpu_sum;
    int n;
    double gpu_util_sum;
    int gpu_n;
    long long gpu_mem_max; /* -1: not measured */
} point;

/* A running max and mean over the samples that measured it. */
typedef struct agg {
    double max, mean;
    long long n;
} agg;

struct am_metrics {
    point *pts;
    size_t len, cap;
    size_t alloc; /* points allocated: grows to cap as samples come, so that a task's
                     series costs its samples, not 720 points (40 KB) from its start:
                     10,000 tasks registering held 400 MB before (issue 26) */
    size_t stride;   /* raw samples per point at the current resolution */
    point pending;   /* filling up to stride samples */
    size_t nsamples;
    tony_sample last;
    agg aggs[AM_METRIC_COUNT / 2]; /* MAX/AVG pairs, in the enum's order */
    long long kernel_peak;         /* -1: not reported */
};

am_metrics *am_metrics_new(size_t max_points) {
    am_metrics *m = tony_xcalloc(1, sizeof *m);
    m->cap = max_points < 2 ? 2 : max_points;
    m->stride = 1;
    m->pending.gpu_mem_max = -1;
    m->kernel_peak = -1;
    return m;
}

void am_metrics_free(am_metrics *m) {
    if (!m) return;
    free(m->pts);
    free(m);
}

/* v: this sample's value (a mean across GPUs); peak: its busiest GPU. */
static void agg_add(agg *a, double v, double peak) {
    if (v < 0) return;
    if (peak < v) peak = v;
    if (a->n == 0 || peak > a->max) a->max = peak;
    /* TonY's running mean, (old*n+new)/(n+1) */
    a->mean = (a->mean * (double)a->n + v) / (double)(a->n + 1);
    a->n++;
}

static void point_merge(point *into, const point *p) {
    if (p->t_ms > into->t_ms) into->t_ms = p->t_ms;
    if (p->rss_max > into->rss_max) into->rss_max = p->rss_max;
    into->cpu_sum += p->cpu_sum;
    into->n += p->n;
    into->gpu_util_sum += p->gpu_util_sum;
    into->gpu_n += p->gpu_n;
    if (p->gpu_mem_max > into->gpu_mem_max) into->gpu_mem_max = p->gpu_mem_max;
}

static void halve(am_metrics *m) {
    size_t k = 0;
    for (size_t i = 0; i + 1 < m->len; i += 2, k++) {
        point p = m->pts[i];
        point_merge(&p, &m->pts[i + 1]);
        m->pts[k] = p;
    }
    if (m->len % 2) m->pts[k++] = m->pts[m->len - 1];
    m->len = k;
    m->stride *= 2;
}

void am_metrics_add(am_metrics *m, const tony_sample *s) {
    m->nsamples++;
    m->last = *s;
    agg_add(&m->aggs[0], (double)s->rss_bytes, (double)s->rss_bytes);
    agg_add(&m->aggs[1], s->gpu_util_percent, s->gpu_util_max_percent);
    agg_add(&m->aggs[2], s->gpu_fb_percent, s->gpu_fb_max_percent);
    /* aggs[3], BAR1 ("main") memory: nvidia-smi's CSV query has no field
     * for it, so it stays unmeasured. */
    agg_add(&m->aggs[4], s->cpu_percent, s->cpu_percent);

    point p = {s->t_ms, s->rss_bytes, s->cpu_percent, 1, s->gpu_util_percent < 0 ? 0 : s->gpu_util_percent,
               s->gpu_util_percent < 0 ? 0 : 1, s->gpu_mem_bytes};
    point_merge(&m->pending, &p);
    if ((size_t)m->pending.n < m->stride) return;
    if (m->len == m->cap) halve(m);
    if (m->len == m->alloc) {
        m->alloc = m->alloc ? (2 * m->alloc < m->cap ? 2 * m->alloc : m->cap) : (m->cap < 8 ? m->cap : 8);
        m->pts = tony_xrealloc(m->pts, m->alloc * sizeof *m->pts);
    }
    m->pts[m->len++] = m->pending;
    m->pending = (point){.gpu_mem_max = -1};
}

size_t am_metrics_samples(const am_metrics *m) { return m->nsamples; }

double am_metrics_value(const am_metrics *m, int metric) {
    if (metric < 0 || metric >= AM_METRIC_COUNT) return -1;
    const agg *a = &m->aggs[metric / 2];
    if (a->n == 0) return -1;
    return metric % 2 == 0 ? a->max : a->mean;
}

void am_metrics_set_peak(am_metrics *m, long long bytes) {
    if (bytes > m->kernel_peak) m->kernel_peak = bytes;
}

long long am_metrics_peak(const am_metrics *m) {
    if (m->kernel_peak < 0) return -1;
    double sampled = am_metrics_value(m, AM_METRIC_MAX_MEMORY_BYTES);
    return sampled > (double)m->kernel_peak ? (long long)sampled : m->kernel_peak;
}

json_t *am_metrics_aggregates_json(const am_metrics *m) {
    json_t *o = json_object();
    for (int i = 0; i < AM_METRIC_COUNT; i++) {
        double v = am_metrics_value(m, i);
        /* bytes are whole numbers; percentages keep their fraction */
        bool bytes = i == AM_METRIC_MAX_MEMORY_BYTES || i == AM_METRIC_AVG_MEMORY_BYTES;
        json_object_set_new(o, names[i], bytes || v < 0 ? json_integer((json_int_t)v) : json_real(v));
    }
    json_object_set_new(o, JOB_METRIC_PEAK_MEMORY_BYTES, json_integer(am_metrics_peak(m)));
    return o;
}

json_t *am_metrics_last_json(const am_metrics *m) {
    if (!m->nsamples) return json_null();
    const tony_sample *s = &m->last;
    json_t *o = json_pack("{s:I,s:I,s:f}", JOB_SAMPLE_T_MS, (json_int_t)s->t_ms, JOB_SAMPLE_RSS_BYTES,
                          (json_int_t)s->rss_bytes, JOB_SAMPLE_CPU_PERCENT, s->cpu_percent);
    json_object_set_new(o, JOB_SAMPLE_GPU_UTIL_PERCENT,
                        s->gpu_util_percent < 0 ? json_null() : json_real(s->gpu_util_percent));
    json_object_set_new(o, JOB_SAMPLE_GPU_MEM_BYTES,
                        s->gpu_mem_bytes < 0 ? json_null() : json_integer(s->gpu_mem_bytes));
    return o;
}

static void point_json(const point *p, json_t *t, json_t *rss, json_t *cpu, json_t *gu, json_t *gm) {
    json_array_append_new(t, json_integer(p->t_ms));
    json_array_append_new(rss, json_integer(p->rss_max));
    json_array_append_new(cpu, json_real(p->cpu_sum / p->n));
    json_array_append_new(gu, p->gpu_n ? json_real(p->gpu_util_sum / p->gpu_n) : json_null());
    json_array_append_new(gm, p->gpu_mem_max < 0 ? json_null() : json_integer(p->gpu_mem_max));
}

json_t *am_metrics_series_json(const am_metrics *m) {
    json_t *t = json_array(), *rss = json_array(), *cpu = json_array(), *gu = json_array(), *gm = json_array();
    for (size_t i = 0; i < m->len; i++) point_json(&m->pts[i], t, rss, cpu, gu, gm);
    if (m->pending.n) point_json(&m->pending, t, rss, cpu, gu, gm);
    return json_pack("{s:o,s:o,s:o,s:o,s:o}", JOB_SAMPLE_T_MS, t, JOB_SAMPLE_RSS_BYTES, rss, JOB_SAMPLE_CPU_PERCENT,
                     cpu, JOB_SAMPLE_GPU_UTIL_PERCENT, gu, JOB_SAMPLE_GPU_MEM_BYTES, gm);
}
