/* Right-sizing rules, per role over its tasks' aggregates: the role's peak
 * memory is its hungriest task's (the kernel's peak where its executor
 * reported one), its CPU use its busiest task's. */
#include "common/sizing.h"

#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jobjson.h"
#include "common/strv.h"

/* The shell's exits for a command it could not run (the command line runs
 * under bash -c, or /bin/sh -c without bash: common/proc.h): such a task
 * never ran its code, whatever its samples say. */
#define EXIT_CANNOT_EXECUTE 126
#define EXIT_NOT_FOUND 127

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

const char *tony_sizing_bytes(double bytes, char *buf, size_t n) {
    if (bytes >= GIB) {
        double g = bytes / GIB;
        if (fabs(g - round(g)) < 0.05) snprintf(buf, n, "%.0f GiB", round(g));
        else snprintf(buf, n, "%.1f GiB", g);
    } else {
        snprintf(buf, n, "%.0f MiB", ceil(bytes / MIB));
    }
    return buf;
}

void tony_sizing_memory_value(double peak_bytes, char *buf, size_t n) {
    double want = peak_bytes * TONY_SIZING_HEADROOM / MIB;
    if (want <= 512) snprintf(buf, n, "512m");
    else if (want < 1024) snprintf(buf, n, "1g");
    else snprintf(buf, n, "%.0fg", ceil(want / 1024));
}

static double memory_value_bytes(const char *v) {
    double x = 0;
    char unit = 'm';
    sscanf(v, "%lf%c", &x, &unit);
    return unit == 'g' ? x * GIB : x * MIB;
}

typedef struct role_use {
    const char *role;
    double req_mem;
    long long vcores, gpus;
    double peak_mem, peak_cpu, avg_cpu, avg_gpu;
    int measured;
} role_use;

static double metric(const json_t *m, const char *name) {
    json_t *v = json_object_get(m, name);
    return json_is_number(v) ? json_number_value(v) : -1;
}

/* Whether the task's process started, ran the user's command and ran long
 * enough to be sized. */
static bool ran_long_enough(const json_t *t, long long min_run_ms) {
    const json_t *started = json_object_get(t, JOB_TASK_STARTED_MS), *finished = json_object_get(t, JOB_TASK_FINISHED_MS);
    if (!json_is_integer(started) || !json_is_integer(finished)) return false;
    const json_t *starts = json_object_get(t, JOB_TASK_STARTS), *exit = json_object_get(t, JOB_TASK_EXIT_STATUS);
    if (json_is_integer(starts) && json_integer_value(starts) == 0) return false;
    if (json_is_integer(exit) &&
        (json_integer_value(exit) == EXIT_CANNOT_EXECUTE || json_integer_value(exit) == EXIT_NOT_FOUND))
        return false;
    return json_integer_value(finished) - json_integer_value(started) >= min_run_ms;
}

static void fold(role_use *r, const json_t *t, long long min_run_ms) {
    if (!ran_long_enough(t, min_run_ms)) return;
    const json_t *m = json_object_get(t, JOB_TASK_METRICS);
    /* the kernel's peak where there is one: the samples' max misses what
     * happened between them */
    double mem = metric(m, JOB_METRIC_MAX_MEMORY_BYTES), kernel = metric(m, JOB_METRIC_PEAK_MEMORY_BYTES);
    if (kernel > mem) mem = kernel;
    if (mem < 0) return;
    r->measured++;
    if (mem > r->peak_mem) r->peak_mem = mem;
    double v = metric(m, JOB_METRIC_MAX_CPU_PERCENT);
    if (v > r->peak_cpu) r->peak_cpu = v;
    v = metric(m, JOB_METRIC_AVG_CPU_PERCENT);
    if (v > r->avg_cpu) r->avg_cpu = v;
    v = metric(m, JOB_METRIC_AVG_GPU_UTILIZATION);
    if (v > r->avg_gpu) r->avg_gpu = v;
}

static void add(json_t *advice, const char *role, const char *kind, const char *key, const char *value,
                const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void add(json_t *advice, const char *role, const char *kind, const char *key, const char *value,
                const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *text;
    if (vasprintf(&text, fmt, ap) < 0) text = NULL;
    va_end(ap);
    json_t *o =
        json_pack("{s:s,s:s,s:s}", JOB_ADVICE_ROLE, role, JOB_ADVICE_KIND, kind, JOB_ADVICE_TEXT, text ? text : "");
    if (key) {
        json_object_set_new(o, JOB_ADVICE_KEY, json_string(key));
        json_object_set_new(o, JOB_ADVICE_VALUE, json_string(value));
    }
    json_array_append_new(advice, o);
    free(text);
}

static void advise(const role_use *r, json_t *advice) {
    char peak[32], req[32], val[32], key[160];
    size_t before = json_array_size(advice);
    tony_sizing_bytes(r->peak_mem, peak, sizeof peak);
    tony_sizing_bytes(r->req_mem, req, sizeof req);
    double pct = r->req_mem > 0 ? r->peak_mem / r->req_mem * 100 : 0;
    tony_sizing_memory_value(r->peak_mem, val, sizeof val);
    if (r->req_mem > 0) {
        snprintf(key, sizeof key, "tony.%s.memory", r->role);
        if (r->peak_mem > TONY_SIZING_CLOSE * r->req_mem)
            add(advice, r->role, "memory", key, val,
                "%s: peak memory %s of %s requested (%.0f%%), close to the limit (a task over it is killed); try %s=%s",
                r->role, peak, req, pct, key, val);
        else if (memory_value_bytes(val) * 2 <= r->req_mem)
            add(advice, r->role, "memory", key, val, "%s: peak memory %s of %s requested (%.0f%%); try %s=%s", r->role,
                peak, req, pct, key, val);
    }
    double cores = (double)r->vcores * 100;
    snprintf(key, sizeof key, "tony.%s.vcores", r->role);
    if (r->vcores > 0 && r->avg_cpu > TONY_SIZING_CLOSE * cores) {
        snprintf(val, sizeof val, "%lld", r->vcores * 2);
        add(advice, r->role, "cpu", key, val,
            "%s: CPU busy %.0f%% on average with %lld vcore(s); more (%s=%s) may make it faster", r->role, r->avg_cpu,
            r->vcores, key, val);
    } else if (r->vcores >= 2 && r->peak_cpu >= 0 && r->peak_cpu < cores / 2) {
        long long need = (long long)ceil(r->peak_cpu / 100);
        snprintf(val, sizeof val, "%lld", need < 1 ? 1 : need);
        add(advice, r->role, "cpu", key, val, "%s: CPU at most %.0f%% (%.1f cores) of %lld vcores requested; try %s=%s",
            r->role, r->peak_cpu, r->peak_cpu / 100, r->vcores, key, val);
    }
    if (r->gpus > 0) {
        snprintf(key, sizeof key, "tony.%s.gpus", r->role);
        if (r->avg_gpu < 0)
            add(advice, r->role, "gpu", NULL, NULL,
                "%s: GPU use was not measured (needs nvidia-smi on the node and tony.task.gpu-metrics.enabled=true)",
                r->role);
        else if (r->avg_gpu < 10)
            add(advice, r->role, "gpu", NULL, NULL,
                "%s: its %lld GPU(s) were %.0f%% busy on average; the input pipeline may starve them, or fewer GPUs "
                "would do",
                r->role, r->gpus, r->avg_gpu);
    }
    if (json_array_size(advice) == before)
        add(advice, r->role, "ok", NULL, NULL, "%s: right-sized: peak memory %s of %s requested (%.0f%%), CPU %.0f%% on "
            "average with %lld vcore(s)", r->role, peak, req, pct, r->avg_cpu < 0 ? 0 : r->avg_cpu, r->vcores);
}

json_t *tony_sizing_advice(const json_t *tasks, long long min_run_ms) {
    role_use roles[64];
    size_t n = 0;
    size_t i;
    json_t *t;
    json_array_foreach(tasks, i, t) {
        const char *role = json_string_value(json_object_get(t, JOB_TASK_ROLE));
        const json_t *req = json_object_get(t, JOB_TASK_REQUESTED);
        if (!role || !req) continue;
        size_t k = 0;
        while (k < n && strcmp(roles[k].role, role) != 0) k++;
        if (k == n) {
            if (n == sizeof roles / sizeof *roles) continue;
            roles[n++] = (role_use){role, (double)json_integer_value(json_object_get(req, JOB_REQ_MEMORY_BYTES)),
                                    json_integer_value(json_object_get(req, JOB_REQ_VCORES)),
                                    json_integer_value(json_object_get(req, JOB_REQ_GPUS)), -1, -1, -1, -1, 0};
        }
        fold(&roles[k], t, min_run_ms);
    }
    json_t *advice = json_array();
    for (size_t k = 0; k < n; k++)
        if (roles[k].measured) advise(&roles[k], advice);
    return advice;
}
