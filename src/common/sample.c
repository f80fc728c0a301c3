/* The task sample's JSON form, shared by the executor (writer) and the
 * coordinator (reader) so that the two cannot drift apart. */
#include "common/sample.h"

tony_sample tony_sample_empty(void) {
    return (tony_sample){.gpu_util_percent = -1, .gpu_util_max_percent = -1, .gpu_mem_bytes = -1,
                         .gpu_fb_percent = -1, .gpu_fb_max_percent = -1};
}

static json_t *num_or_null(double v) { return v < 0 ? json_null() : json_real(v); }

json_t *tony_sample_to_json(const tony_sample *s) {
    json_t *o = json_pack("{s:I,s:I,s:f}", "t_ms", (json_int_t)s->t_ms, "rss_bytes", (json_int_t)s->rss_bytes,
                          "cpu_percent", s->cpu_percent);
    json_object_set_new(o, "gpus", json_integer(s->gpus));
    json_object_set_new(o, "gpu_util_percent", num_or_null(s->gpu_util_percent));
    json_object_set_new(o, "gpu_util_max_percent", num_or_null(s->gpu_util_max_percent));
    json_object_set_new(o, "gpu_mem_bytes", s->gpu_mem_bytes < 0 ? json_null() : json_integer(s->gpu_mem_bytes));
    json_object_set_new(o, "gpu_fb_percent", num_or_null(s->gpu_fb_percent));
    json_object_set_new(o, "gpu_fb_max_percent", num_or_null(s->gpu_fb_max_percent));
    return o;
}

/* A non-negative number, or absent/null (= -1). */
static int opt_number(const json_t *o, const char *key, double *out, tony_error *err) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        *out = -1;
        return 0;
    }
    if (!json_is_number(v) || json_number_value(v) < 0)
        return tony_err(err, "\"%s\" must be a number >= 0 or null", key);
    *out = json_number_value(v);
    return 0;
}

int tony_sample_from_json(const json_t *o, tony_sample *s, tony_error *err) {
    *s = tony_sample_empty();
    json_t *t = json_object_get(o, "t_ms"), *rss = json_object_get(o, "rss_bytes"), *cpu = json_object_get(o, "cpu_percent");
    if (!json_is_integer(t) || json_integer_value(t) < 0) return tony_err(err, "\"t_ms\" (integer ms) is required");
    if (!json_is_integer(rss) || json_integer_value(rss) < 0) return tony_err(err, "\"rss_bytes\" (integer >= 0) is required");
    if (!json_is_number(cpu) || json_number_value(cpu) < 0) return tony_err(err, "\"cpu_percent\" (number >= 0) is required");
    s->t_ms = json_integer_value(t);
    s->rss_bytes = json_integer_value(rss);
    s->cpu_percent = json_number_value(cpu);
    json_t *g = json_object_get(o, "gpus");
    if (g && !(json_is_integer(g) && json_integer_value(g) >= 0)) return tony_err(err, "\"gpus\" must be an integer >= 0");
    s->gpus = g ? (int)json_integer_value(g) : 0;
    double mem = -1;
    if (opt_number(o, "gpu_util_percent", &s->gpu_util_percent, err) ||
        opt_number(o, "gpu_util_max_percent", &s->gpu_util_max_percent, err) ||
        opt_number(o, "gpu_mem_bytes", &mem, err) || opt_number(o, "gpu_fb_percent", &s->gpu_fb_percent, err) ||
        opt_number(o, "gpu_fb_max_percent", &s->gpu_fb_max_percent, err))
        return -1;
    s->gpu_mem_bytes = mem < 0 ? -1 : (long long)mem;
    if (s->gpu_util_max_percent < s->gpu_util_percent) s->gpu_util_max_percent = s->gpu_util_percent;
    if (s->gpu_fb_max_percent < s->gpu_fb_percent) s->gpu_fb_max_percent = s->gpu_fb_percent;
    return 0;
}
