/* One measurement of a task's resource use: what the executor measures and
 * sends, and what the coordinator keeps, as a struct and as the JSON body of
 * POST /v1/tasks/<role>/<index>/metrics. */
#ifndef TONY_SAMPLE_H
#define TONY_SAMPLE_H

#include <jansson.h>

#include "common/error.h"

/* GPU fields are -1 when not measured. */
typedef struct tony_sample {
    long long t_ms; /* wall clock */
    long long rss_bytes;
    double cpu_percent;          /* 100 = one core busy */
    int gpus;                    /* GPUs nvidia-smi reported; 0 = no GPU data */
    double gpu_util_percent;     /* mean across the task's GPUs */
    double gpu_util_max_percent; /* busiest GPU */
    long long gpu_mem_bytes;     /* framebuffer memory used, all GPUs together */
    double gpu_fb_percent;       /* used / total × 100, mean across GPUs (TonY's FB usage) */
    double gpu_fb_max_percent;
} tony_sample;

/* A sample with nothing measured yet (GPU fields -1). */
tony_sample tony_sample_empty(void);
json_t *tony_sample_to_json(const tony_sample *s);
/* Reads a body written by tony_sample_to_json; missing GPU fields (or
 * null) mean not measured. Errors name the field. */
int tony_sample_from_json(const json_t *o, tony_sample *s, tony_error *err);

#endif
