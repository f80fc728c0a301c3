/* A task's resource use as its executor measures it (TonY's TaskMonitor):
 * the RSS and CPU of every process of the task (the executor, the user's
 * process group and all their descendants, found through /proc) and, for
 * tasks with GPUs, nvidia-smi's utilization and framebuffer memory. The
 * executor sends each sample to its coordinator, and at the end the task's
 * peak memory as the kernel counted it (samples seconds apart miss it). */
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
/* The user's process group, once its process started: its members count
 * even once reparented away from the executor. Also where the run's peak
 * starts: the kernel's peaks as they stand now are its baseline. */
void tony_metrics_sampler_set_group(tony_metrics_sampler *m, pid_t pgid);
/* The run's peak memory in bytes, once its processes were reaped (the
 * executor is their subreaper, so orphans count too): the most of the
 * task's own cgroup's peak (when it has one: a YARN container's or a Slurm
 * step's), the largest reaped process's (getrusage RUSAGE_CHILDREN) and the
 * largest sample. A kernel peak that did not rise since set_group is an
 * earlier run's (an in-place restart) and is not used. -1 when nothing was
 * measured; *from (may be NULL) says which one it is, for logs. */
long long tony_metrics_sampler_peak(tony_metrics_sampler *m, const char **from);
/* The file that holds the kernel's peak memory of the task's own cgroup,
 * from the text of /proc/self/cgroup: cgroup v1's memory controller's
 * memory.max_usage_in_bytes when it has one (a hybrid host), else v2's
 * memory.peak, under root (/sys/fs/cgroup). own names the task's cgroup
 * as components of its path ("container_..._000002", "job_12/step_3"):
 * the path is cut after them. NULL when the path does not hold them: a
 * local task shares the cgroup of whatever started tony, whose peak is
 * not the task's. */
char *tony_metrics_cgroup_peak_file(const char *proc_cgroup, const char *own, const char *root);
/* Measures now. CPU is the time used since the previous sample (or since
 * the sampler was made) over the wall time between them. */
void tony_metrics_sampler_take(tony_metrics_sampler *m, tony_sample *out);
bool tony_metrics_sampler_has_gpus(const tony_metrics_sampler *m);

#endif
