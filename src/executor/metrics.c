/* The executor's sampler: one pass over /proc per sample picks the task's
 * processes and sums their RSS and CPU time; nvidia-smi, when the task has
 * GPUs, is run with a deadline so that a wedged driver cannot stall the
 * executor's loop. The run's peak memory comes from the kernel, which
 * counts every page as it is touched. */
#include "executor/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/strv.h"
#include "common/taskenv.h"

#define SMI_TIMEOUT_MS 5000
#define SMI_MAX_FAILURES 10 /* TonY's MAX_REPEATED_GPU_ERROR_ALLOWED */
#define SMI_QUERY "--query-gpu=utilization.gpu,memory.used,memory.total"

/* The kernel's peak memory of a cgroup, and where cgroups are mounted. */
#define CGROUP_ROOT "/sys/fs/cgroup"
#define CGROUP_V1_MEMORY "memory" /* the v1 controller, and its hierarchy's directory under CGROUP_ROOT */
#define CGROUP_V1_PEAK "memory.max_usage_in_bytes"
#define CGROUP_V2_PEAK "memory.peak"
/* Slurm's step, which srun names in the step's environment and Slurm's
 * cgroup plugin names job_<job>/step_<step> in the cgroup's path. */
#define SLURM_JOB_ID_ENV "SLURM_JOB_ID"
#define SLURM_STEP_ID_ENV "SLURM_STEP_ID"

typedef struct cpu_seen {
    pid_t pid;
    double cpu_seconds;
} cpu_seen;

struct tony_metrics_sampler {
    pid_t root, pgid;
    bool root_leads_session;
    char *gpu_ids; /* validated CUDA_VISIBLE_DEVICES, NULL: no GPU sampling */
    char *smi;     /* resolved nvidia-smi path */
    int smi_failures;
    cpu_seen *prev; /* the last sample's processes, sorted by pid */
    bool primed;    /* a first sample was taken */
    size_t nprev;
    long long prev_mono_ms;
    char *cgroup_peak;   /* the task's own cgroup's peak file, NULL: none */
    long long cg_base;   /* its value when the run started, -1: unread */
    long long ru_base;   /* the largest reaped process's RSS then */
    long long sample_max; /* the run's largest sample, -1: none yet */
};

/* "[N/A]", "N/A", "[Not Supported]": nvidia-smi's ways of saying unknown. */
static bool smi_number(const char *field, double *out) {
    char *end;
    errno = 0;
    double v = strtod(field, &end);
    if (end == field || *end || errno) return false;
    *out = v;
    return true;
}

int tony_metrics_parse_smi(const char *csv, tony_sample *s, tony_error *err) {
    double util_sum = 0, util_max = -1, fb_sum = 0, fb_max = -1;
    long long mem = 0;
    int lines = 0, nutil = 0, nfb = 0, nmem = 0;
    char *copy = tony_strdup(csv ? csv : "");
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!*tony_trim(line)) continue;
        tony_strv f = {0};
        char *fs = NULL;
        for (char *tok = strtok_r(line, ",", &fs); tok; tok = strtok_r(NULL, ",", &fs)) tony_strv_push(&f, tony_trim(tok));
        if (f.len != 3) {
            tony_strv_free(&f);
            tony_err(err, "unexpected nvidia-smi output line '%s': expected utilization.gpu, memory.used, memory.total",
                     line);
            free(copy);
            return -1;
        }
        lines++;
        double util, used, total;
        if (smi_number(f.items[0], &util)) {
            util_sum += util;
            if (util > util_max) util_max = util;
            nutil++;
        }
        bool have_used = smi_number(f.items[1], &used);
        if (have_used) {
            mem += (long long)(used * 1024 * 1024); /* MiB with nounits */
            nmem++;
        }
        if (have_used && smi_number(f.items[2], &total) && total > 0) {
            double pct = used / total * 100.0;
            fb_sum += pct;
            if (pct > fb_max) fb_max = pct;
            nfb++;
        }
        tony_strv_free(&f);
    }
    free(copy);
    if (lines == 0) return tony_err(err, "nvidia-smi printed no GPU lines");
    s->gpus = lines;
    s->gpu_util_percent = nutil ? util_sum / nutil : -1;
    s->gpu_util_max_percent = nutil ? util_max : -1;
    s->gpu_mem_bytes = nmem ? mem : -1;
    s->gpu_fb_percent = nfb ? fb_sum / nfb : -1;
    s->gpu_fb_max_percent = nfb ? fb_max : -1;
    return 0;
}

/* nvidia-smi on PATH, a path to it, or its directory (tony.gpu-exec-path). */
static char *find_smi(const char *smi) {
    if (!smi || !*smi) return NULL;
    if (strchr(smi, '/')) {
        char *p = tony_is_dir(smi) ? tony_path_join(smi, "nvidia-smi") : tony_strdup(smi);
        if (access(p, X_OK) == 0) return p;
        free(p);
        return NULL;
    }
    return tony_proc_which(smi);
}

/* Device ids or GPU UUIDs only: the value becomes an argument. */
static bool valid_gpu_ids(const char *ids) {
    if (!ids || !*ids) return false;
    for (const char *p = ids; *p; p++)
        if (!(*p == ',' || *p == '-' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
            return false;
    return true;
}

/* The components of the task's own cgroup's path: a YARN container's id, or
 * a Slurm step's job_J/step_S; NULL when the backend makes none. */
static char *own_cgroup(void) {
    const char *container = getenv(TASKENV_CONTAINER_ID), *job = getenv(SLURM_JOB_ID_ENV),
               *step = getenv(SLURM_STEP_ID_ENV);
    if (container && *container) return tony_strdup(container);
    if (job && *job && step && *step) return tony_sprintf("job_%s/step_%s", job, step);
    return NULL;
}

/* path cut after the components own ("/a/own/b" -> "/a/own"), or NULL. */
static char *cut_after(const char *path, const char *own) {
    size_t n = strlen(own);
    for (const char *p = strstr(path, own); p; p = strstr(p + 1, own))
        if (p > path && p[-1] == '/' && (p[n] == '/' || p[n] == 0)) return tony_sprintf("%.*s", (int)(p - path + (long)n), path);
    return NULL;
}

/* Whether a comma-separated list of controllers holds name. */
static bool has_controller(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == 0)) return true;
    return false;
}

char *tony_metrics_cgroup_peak_file(const char *proc_cgroup, const char *own, const char *root) {
    if (!proc_cgroup || !own || !*own) return NULL;
    char *copy = tony_strdup(proc_cgroup), *save = NULL, *v1 = NULL, *v2 = NULL;
    /* lines "hierarchy-id:controllers:path"; v2's is "0::path" */
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *ctrls = strchr(line, ':'), *path = ctrls ? strchr(ctrls + 1, ':') : NULL;
        if (!path) continue;
        *ctrls++ = 0;
        *path++ = 0;
        if (!v2 && strcmp(line, "0") == 0 && !*ctrls) v2 = cut_after(path, own);
        else if (!v1 && has_controller(ctrls, CGROUP_V1_MEMORY)) v1 = cut_after(path, own);
    }
    char *file = v1   ? tony_sprintf("%s/%s%s/%s", root, CGROUP_V1_MEMORY, v1, CGROUP_V1_PEAK)
                 : v2 ? tony_sprintf("%s%s/%s", root, v2, CGROUP_V2_PEAK)
                      : NULL;
    free(v1);
    free(v2);
    free(copy);
    return file;
}

/* The task's own cgroup's peak memory file for process root, or NULL. */
static char *find_cgroup_peak(pid_t root) {
    char *own = own_cgroup();
    if (!own) return NULL;
    char proc[64], *text = NULL;
    size_t len;
    tony_error err;
    snprintf(proc, sizeof proc, "/proc/%d/cgroup", (int)root);
    char *file = NULL;
    if (tony_read_file(proc, &text, &len, &err) == 0) file = tony_metrics_cgroup_peak_file(text, own, CGROUP_ROOT);
    else tony_debug("no cgroup peak memory: %s", err.msg);
    if (file) tony_debug("peak memory from %s", file);
    free(text);
    free(own);
    return file;
}

tony_metrics_sampler *tony_metrics_sampler_new(pid_t root, const char *gpu_ids, const char *smi) {
    tony_metrics_sampler *m = tony_xcalloc(1, sizeof *m);
    m->root = root;
    m->root_leads_session = getsid(root) == root;
    m->prev_mono_ms = tony_now_ms();
    m->cgroup_peak = find_cgroup_peak(root);
    m->cg_base = m->sample_max = -1;
    if (smi && valid_gpu_ids(gpu_ids)) {
        m->smi = find_smi(smi);
        if (m->smi) m->gpu_ids = tony_strdup(gpu_ids);
        else tony_debug("no %s found: GPU metrics are not collected", smi);
    }
    return m;
}

void tony_metrics_sampler_free(tony_metrics_sampler *m) {
    if (!m) return;
    free(m->gpu_ids);
    free(m->smi);
    free(m->prev);
    free(m->cgroup_peak);
    free(m);
}

/* The cgroup's peak in bytes, -1 when it has none or it cannot be read. */
static long long cgroup_peak(const tony_metrics_sampler *m) {
    if (!m->cgroup_peak) return -1;
    char *text = NULL;
    size_t len;
    tony_error err;
    long long v = -1;
    if (tony_read_file(m->cgroup_peak, &text, &len, &err) == 0) {
        if (!tony_parse_ll(tony_trim(text), &v)) v = -1;
    } else {
        tony_debug("cgroup peak memory: %s", err.msg);
    }
    free(text);
    return v;
}

/* The largest RSS any reaped descendant had, in bytes (Linux: KiB). */
static long long rusage_peak(void) {
    struct rusage ru;
    return getrusage(RUSAGE_CHILDREN, &ru) == 0 ? (long long)ru.ru_maxrss * 1024 : -1;
}

void tony_metrics_sampler_set_group(tony_metrics_sampler *m, pid_t pgid) {
    m->pgid = pgid;
    m->cg_base = cgroup_peak(m);
    m->ru_base = rusage_peak();
    m->sample_max = -1;
}

long long tony_metrics_sampler_peak(tony_metrics_sampler *m, const char **from) {
    long long best = m->sample_max, ru = rusage_peak(), cg = cgroup_peak(m);
    const char *src = "samples";
    if (ru > m->ru_base && ru > best) {
        best = ru;
        src = "its largest process (getrusage)";
    }
    if (cg > m->cg_base && cg > best) {
        best = cg;
        src = "its cgroup";
    }
    if (from) *from = best < 0 ? "nothing" : src;
    return best;
}

bool tony_metrics_sampler_has_gpus(const tony_metrics_sampler *m) { return m->gpu_ids != NULL; }

/* The process table (tony_proc_snapshot). */
typedef struct proc_list {
    tony_proc_info *items;
    size_t len;
} proc_list;

static int cmp_seen(const void *a, const void *b) {
    pid_t x = ((const cpu_seen *)a)->pid, y = ((const cpu_seen *)b)->pid;
    return (x > y) - (x < y);
}

/* Marks the task's processes: the executor, its session when it leads one
 * (a container), the user's process group, and every descendant of those. */
static bool *select_members(const tony_metrics_sampler *m, const proc_list *l) {
    bool *in = tony_xcalloc(l->len ? l->len : 1, sizeof *in);
    for (size_t i = 0; i < l->len; i++) {
        const tony_proc_info *p = &l->items[i];
        in[i] = p->pid == m->root || (m->root_leads_session && p->sid == m->root) || (m->pgid > 0 && p->pgrp == m->pgid);
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < l->len; i++) {
            if (in[i]) continue;
            for (size_t j = 0; j < l->len; j++) {
                if (in[j] && l->items[j].pid == l->items[i].ppid) {
                    in[i] = changed = true;
                    break;
                }
            }
        }
    }
    return in;
}

static void sample_gpus(tony_metrics_sampler *m, tony_sample *s) {
    if (!m->gpu_ids || m->smi_failures >= SMI_MAX_FAILURES) return;
    char ids[256];
    snprintf(ids, sizeof ids, "%s", m->gpu_ids);
    char *argv[] = {m->smi, SMI_QUERY, "--format=csv,noheader,nounits", "-i", ids, NULL};
    tony_buf out = {0};
    tony_buf_puts(&out, "");
    tony_error err;
    if (tony_proc_capture(argv, false, SMI_TIMEOUT_MS, &out, &err) == 0 && tony_metrics_parse_smi(out.data, s, &err) == 0) {
        m->smi_failures = 0;
    } else if (++m->smi_failures >= SMI_MAX_FAILURES) {
        tony_warn("GPU metrics stop after %d failures in a row: %s", m->smi_failures, err.msg);
    } else {
        tony_debug("GPU metrics: %s", err.msg);
    }
    tony_buf_free(&out);
}

void tony_metrics_sampler_take(tony_metrics_sampler *m, tony_sample *out) {
    *out = tony_sample_empty();
    out->t_ms = tony_wall_ms();
    proc_list l;
    l.items = tony_proc_snapshot(&l.len);
    bool *in = select_members(m, &l);
    cpu_seen *now = tony_xcalloc(l.len ? l.len : 1, sizeof *now);
    size_t nnow = 0;
    double cpu_delta = 0;
    for (size_t i = 0; i < l.len; i++) {
        if (!in[i]) continue;
        const tony_proc_info *p = &l.items[i];
        out->rss_bytes += p->rss_kb * 1024;
        now[nnow++] = (cpu_seen){p->pid, p->cpu_seconds};
        /* A process new since the last sample used all its CPU time in
         * between (the executor's own start-up aside, which is tiny). */
        cpu_seen key = {p->pid, 0};
        cpu_seen *was = m->nprev ? bsearch(&key, m->prev, m->nprev, sizeof key, cmp_seen) : NULL;
        double d = was ? p->cpu_seconds - was->cpu_seconds : p->cpu_seconds;
        if (d > 0) cpu_delta += d;
    }
    qsort(now, nnow, sizeof *now, cmp_seen);
    free(m->prev);
    m->prev = now;
    m->nprev = nnow;
    long long t = tony_now_ms();
    long long wall = t - m->prev_mono_ms;
    m->prev_mono_ms = t;
    /* The first sample only sets the baseline: CPU spent before it (the
     * executor unpacking the job's archives) is not the task's, and a few
     * clock ticks over a few milliseconds would read as several cores. */
    out->cpu_percent = wall > 0 && m->primed ? cpu_delta * 1000.0 / (double)wall * 100.0 : 0;
    m->primed = true;
    if (m->pgid > 0 && out->rss_bytes > m->sample_max) m->sample_max = out->rss_bytes;
    free(in);
    free(l.items);
    sample_gpus(m, out);
}
