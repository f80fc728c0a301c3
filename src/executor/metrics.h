/* A task's resource use as its executor measures it (TonY's TaskMonitor):
 * the RSS and CPU of every process of the task (the executor, the user's
 * process group and all their descendants, found through /proc) and, for
 * tasks with GPUs, nvidia-smi's utilization and framebuffer memory. The
 * executor sends each sample to its coordinator. */
#ifndef TONY_EXECUTOR_METRICS_H
#define TONY_EXECUTOR_METRICS_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"
#include "common/sample.h"

/* Parses the output of `nvidia-smi --query-gpu=utilization.gpu,memory.used,
 * memory.total --format=csv,noheader,nounits` into the GPU fields of s.
 * "[N/A]" or "[Not Supported]" leaves a field unmeasured; a line that is not
 * three comma-separated fields is an error that quotes it. */
int tony_metrics_parse_smi(const char *csv, tony_sample *s, tony_error *err);

typedef struct tony_metrics_sampler tony_metrics_sampler;

/* root: the executor's pid. gpu_ids: CUDA_VISIBLE_DEVICES or NULL; smi: the
 * nvidia-smi binary or its directory (tony.gpu-exec-path), NULL to not
 * measure GPUs. GPU sampling is skipped quietly when there are no ids or no
 * nvidia-smi, and given up after 10 failures in a row, as in TonY. */
tony_metrics_sampler *tony_metrics_sampler_new(pid_t root, const char *gpu_ids, const char *smi);
void tony_metrics_sampler_free(tony_metrics_sampler *m);
/* The user's process group: its members count even once reparented away
 * from the executor. */
void tony_metrics_sampler_set_group(tony_metrics_sampler *m, pid_t pgid);
/* Measures now. CPU is the time used since the previous sample (or since
 * the sampler was made) over the wall time between them. */
void tony_metrics_sampler_take(tony_metrics_sampler *m, tony_sample *out);
bool tony_metrics_sampler_has_gpus(const tony_metrics_sampler *m);

#endif
