/* Right-sizing: what a finished job's tasks used against what their roles
 * asked for, as advice a user can paste back (e.g. "worker: peak memory
 * 104 MiB of 8 GiB requested (1%); try tony.worker.memory=512m"). Used by
 * the coordinator (the job's "advice") and by `tony history`. */
#ifndef TONY_SIZING_H
#define TONY_SIZING_H

#include <jansson.h>
#include <stddef.h>

/* Thresholds: a role "ran close to its limit" above 90% of it, and "asked far
 * more than it used" when a request of twice the suggestion would still be
 * too much. */
#define TONY_SIZING_CLOSE 0.9
#define TONY_SIZING_HEADROOM 1.5

/* tasks: [{"role":..,"requested":{"memory_bytes","vcores","gpus"},
 * "started_ms","finished_ms","starts","exit_status","metrics":
 * {"MAX_MEMORY_BYTES","PEAK_MEMORY_BYTES",...}}] (the job JSON's tasks).
 * Returns [{"role","kind":"memory|cpu|gpu|ok","text",("key","value")}],
 * roles in the order they first appear. Only tasks whose process started,
 * ran the command (not bash's 126/127) and ran at least min_run_ms count
 * (samples of a task that never started, or of a few seconds, under-measure
 * what it needs, and advice to shrink would get a real run killed): a role
 * without one gets nothing. Memory is sized from the larger of the kernel's
 * peak and the samples', and a suggested value is never below that peak
 * plus TONY_SIZING_HEADROOM. */
json_t *tony_sizing_advice(const json_t *tasks, long long min_run_ms);

/* "104 MiB", "8 GiB", "1.5 GiB" into buf. */
const char *tony_sizing_bytes(double bytes, char *buf, size_t n);
/* A memory value for tony.<role>.memory with headroom over peak bytes:
 * multiples of 512m below 1 GiB, whole GiB above ("512m", "5g"). */
void tony_sizing_memory_value(double peak_bytes, char *buf, size_t n);

#endif
