/* Task metrics: the coordinator's aggregates (TonY's names, -1 when never
 * measured) and the bounded series that halves its resolution; nvidia-smi
 * output as captured from real GPUs (with [N/A] fields); the executor's
 * sampler measuring a real child process through /proc, and the kernel's
 * peak of one that lived between two samples; the task's own cgroup found
 * in /proc/self/cgroup; the sample's wire form. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "am/metrics.h"
#include "common/fs.h"
#include "common/sample.h"
#include "common/strv.h"
#include "executor/metrics.h"

static tony_sample cpu_mem(long long t, long long rss, double cpu) {
    tony_sample s = tony_sample_empty();
    s.t_ms = t;
    s.rss_bytes = rss;
    s.cpu_percent = cpu;
    return s;
}

static void test_aggregates_without_gpus(void **state) {
    (void)state;
    am_metrics *m = am_metrics_new(720);
    json_t *empty = am_metrics_aggregates_json(m);
    assert_int_equal(json_object_size(empty), AM_METRIC_COUNT + 1); /* and PEAK_MEMORY_BYTES */
    assert_int_equal(json_integer_value(json_object_get(empty, "MAX_MEMORY_BYTES")), -1);
    assert_true(json_is_null(am_metrics_last_json(m)));
    json_decref(empty);

    tony_sample a = cpu_mem(1000, 100, 50), b = cpu_mem(2000, 300, 150), c = cpu_mem(3000, 200, 100);
    am_metrics_add(m, &a);
    am_metrics_add(m, &b);
    am_metrics_add(m, &c);
    assert_int_equal(am_metrics_samples(m), 3);
    assert_float_equal(am_metrics_value(m, AM_METRIC_MAX_MEMORY_BYTES), 300, 1e-9);
    assert_float_equal(am_metrics_value(m, AM_METRIC_AVG_MEMORY_BYTES), 200, 1e-9);
    assert_float_equal(am_metrics_value(m, AM_METRIC_MAX_CPU_PERCENT), 150, 1e-9);
    assert_float_equal(am_metrics_value(m, AM_METRIC_AVG_CPU_PERCENT), 100, 1e-9);
    for (int i = AM_METRIC_MAX_GPU_UTILIZATION; i <= AM_METRIC_AVG_GPU_MAIN_MEMORY_USAGE; i++)
        assert_float_equal(am_metrics_value(m, i), -1, 1e-9);
    json_t *j = am_metrics_aggregates_json(m);
    const char *names[] = {"MAX_MEMORY_BYTES",        "AVG_MEMORY_BYTES",        "MAX_GPU_UTILIZATION",
                           "AVG_GPU_UTILIZATION",     "MAX_GPU_FB_MEMORY_USAGE", "AVG_GPU_FB_MEMORY_USAGE",
                           "MAX_GPU_MAIN_MEMORY_USAGE", "AVG_GPU_MAIN_MEMORY_USAGE", "MAX_CPU_PERCENT",
                           "AVG_CPU_PERCENT"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        assert_non_null(json_object_get(j, names[i]));
        assert_string_equal(am_metric_name((int)i), names[i]);
    }
    assert_int_equal(json_integer_value(json_object_get(j, "MAX_MEMORY_BYTES")), 300);
    assert_int_equal(json_integer_value(json_object_get(j, "MAX_GPU_UTILIZATION")), -1);
    json_decref(j);
    json_t *last = am_metrics_last_json(m);
    assert_int_equal(json_integer_value(json_object_get(last, "t_ms")), 3000);
    assert_int_equal(json_integer_value(json_object_get(last, "rss_bytes")), 200);
    assert_true(json_is_null(json_object_get(last, "gpu_util_percent")));
    assert_true(json_is_null(json_object_get(last, "gpu_mem_bytes")));
    json_decref(last);
    am_metrics_free(m);
}

static void test_gpu_aggregates(void **state) {
    (void)state;
    am_metrics *m = am_metrics_new(720);
    tony_sample a = cpu_mem(1, 10, 0), b = cpu_mem(2, 10, 0), c = cpu_mem(3, 10, 0);
    a.gpus = b.gpus = 2;
    a.gpu_util_percent = 40, a.gpu_util_max_percent = 70; /* GPUs at 10% and 70% */
    a.gpu_fb_percent = 20, a.gpu_fb_max_percent = 30;
    a.gpu_mem_bytes = 1 << 30;
    b.gpu_util_percent = 60, b.gpu_util_max_percent = 60;
    b.gpu_fb_percent = 40, b.gpu_fb_max_percent = 50;
    b.gpu_mem_bytes = 2 << 20;
    /* c: nvidia-smi failed this time: does not pull the averages down */
    am_metrics_add(m, &a);
    am_metrics_add(m, &b);
    am_metrics_add(m, &c);
    assert_float_equal(am_metrics_value(m, AM_METRIC_MAX_GPU_UTILIZATION), 70, 1e-9);
    assert_float_equal(am_metrics_value(m, AM_METRIC_AVG_GPU_UTILIZATION), 50, 1e-9);
    assert_float_equal(am_metrics_value(m, AM_METRIC_MAX_GPU_FB_MEMORY_USAGE), 50, 1e-9);
    assert_float_equal(am_metrics_value(m, AM_METRIC_AVG_GPU_FB_MEMORY_USAGE), 30, 1e-9);
    assert_float_equal(am_metrics_value(m, AM_METRIC_MAX_GPU_MAIN_MEMORY_USAGE), -1, 1e-9);
    json_t *s = am_metrics_series_json(m);
    json_t *gu = json_object_get(s, "gpu_util_percent"), *gm = json_object_get(s, "gpu_mem_bytes");
    assert_int_equal(json_array_size(gu), 3);
    assert_float_equal(json_real_value(json_array_get(gu, 0)), 40, 1e-9);
    assert_true(json_is_null(json_array_get(gu, 2)));
    assert_int_equal(json_integer_value(json_array_get(gm, 0)), 1 << 30);
    assert_true(json_is_null(json_array_get(gm, 2)));
    json_decref(s);
    am_metrics_free(m);
}

static void test_series_halves_when_full(void **state) {
    (void)state;
    am_metrics *m = am_metrics_new(8);
    double cpu_total = 0;
    for (int i = 1; i <= 100; i++) {
        tony_sample s = cpu_mem(i * 1000, i == 37 ? 999999 : 1000 + i, (double)(i % 7));
        cpu_total += i % 7;
        am_metrics_add(m, &s);
    }
    json_t *j = am_metrics_series_json(m);
    size_t n = json_array_size(json_object_get(j, "t_ms"));
    assert_true(n >= 2 && n <= 9); /* the bound, plus the point still filling */
    const char *keys[] = {"rss_bytes", "cpu_percent", "gpu_util_percent", "gpu_mem_bytes"};
    for (size_t k = 0; k < 4; k++) assert_int_equal(json_array_size(json_object_get(j, keys[k])), n);
    long long prev = 0, peak = 0;
    for (size_t i = 0; i < n; i++) {
        long long t = json_integer_value(json_array_get(json_object_get(j, "t_ms"), i));
        assert_true(t > prev);
        prev = t;
        long long r = json_integer_value(json_array_get(json_object_get(j, "rss_bytes"), i));
        if (r > peak) peak = r;
    }
    assert_int_equal(prev, 100000); /* the newest sample is always there */
    assert_int_equal(peak, 999999); /* a spike survives every halving */
    /* aggregates see every raw sample */
    assert_float_equal(am_metrics_value(m, AM_METRIC_AVG_CPU_PERCENT), cpu_total / 100, 1e-9);
    assert_float_equal(am_metrics_value(m, AM_METRIC_MAX_MEMORY_BYTES), 999999, 1e-9);
    json_decref(j);
    /* hours of samples stay within the bound */
    for (int i = 101; i <= 100000; i++) {
        tony_sample s = cpu_mem(i * 1000, 5, 1);
        am_metrics_add(m, &s);
    }
    j = am_metrics_series_json(m);
    assert_true(json_array_size(json_object_get(j, "t_ms")) <= 9);
    json_decref(j);
    am_metrics_free(m);
}

/* Captured from `nvidia-smi --query-gpu=utilization.gpu,memory.used,
 * memory.total --format=csv,noheader,nounits -i 0,1` on two A100s. */
static const char smi_two[] = "87, 30125, 81920\n12, 1024, 81920\n";
/* A GPU in MIG mode or a driver that cannot say */
static const char smi_na[] = "[N/A], 4096, 40960\n[Not Supported], [N/A], [N/A]\n";

static void test_parse_nvidia_smi(void **state) {
    (void)state;
    tony_sample s = tony_sample_empty();
    tony_error err;
    assert_int_equal(tony_metrics_parse_smi(smi_two, &s, &err), 0);
    assert_int_equal(s.gpus, 2);
    assert_float_equal(s.gpu_util_percent, 49.5, 1e-9);
    assert_float_equal(s.gpu_util_max_percent, 87, 1e-9);
    assert_int_equal(s.gpu_mem_bytes, (30125LL + 1024) * 1024 * 1024);
    assert_float_equal(s.gpu_fb_max_percent, 30125.0 / 81920 * 100, 1e-9);
    assert_float_equal(s.gpu_fb_percent, (30125.0 + 1024) / 81920 * 50, 1e-9);

    s = tony_sample_empty();
    assert_int_equal(tony_metrics_parse_smi(smi_na, &s, &err), 0);
    assert_int_equal(s.gpus, 2);
    assert_float_equal(s.gpu_util_percent, -1, 1e-9);
    assert_int_equal(s.gpu_mem_bytes, 4096LL * 1024 * 1024);
    assert_float_equal(s.gpu_fb_percent, 10, 1e-9);

    s = tony_sample_empty();
    assert_int_equal(tony_metrics_parse_smi("[N/A], [N/A], [N/A]\n", &s, &err), 0);
    assert_int_equal(s.gpus, 1);
    assert_int_equal(s.gpu_mem_bytes, -1);
    assert_float_equal(s.gpu_fb_percent, -1, 1e-9);

    assert_int_equal(tony_metrics_parse_smi("", &s, &err), -1);
    assert_non_null(strstr(err.msg, "no GPU"));
    assert_int_equal(tony_metrics_parse_smi("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                                            "driver.\n",
                                            &s, &err),
                     -1);
    assert_non_null(strstr(err.msg, "NVIDIA-SMI has failed"));
    assert_int_equal(tony_metrics_parse_smi("1, 2\n", &s, &err), -1);
}

/* A child that touches 64 MiB and spins: the sampler must see both. */
/* A process's user + system CPU time so far, in ms (/proc/PID/stat). */
static long long child_cpu_ms(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    assert_non_null(p);
    unsigned long long utime = 0, stime = 0;
    /* after ") ": state, then fields 4..13; utime and stime are 14 and 15 */
    assert_int_equal(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime), 2);
    return (long long)((utime + stime) * 1000 / (unsigned long long)sysconf(_SC_CLK_TCK));
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_sampler_measures_a_real_child(void **state) {
    (void)state;
    tony_metrics_sampler *m = tony_metrics_sampler_new(getpid(), NULL, NULL);
    assert_false(tony_metrics_sampler_has_gpus(m));
    tony_sample base;
    tony_metrics_sampler_take(m, &base);
    assert_true(base.rss_bytes > 0);
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        setpgid(0, 0);
        size_t n = 64u << 20;
        volatile char *p = malloc(n);
        for (size_t i = 0; i < n; i += 4096) p[i] = 1;
        if (write(pfd[1], "x", 1) != 1) _exit(1);
        for (;;) p[0]++;
    }
    close(pfd[1]);
    char c;
    assert_int_equal(read(pfd[0], &c, 1), 1);
    close(pfd[0]);
    tony_metrics_sampler_set_group(m, pid);
    long long t0 = now_ms(), cpu0 = child_cpu_ms(pid);
    tony_metrics_sampler_take(m, &base); /* starts the CPU window */
    usleep(400 * 1000);
    tony_sample s;
    tony_metrics_sampler_take(m, &s);
    long long t1 = now_ms(), cpu1 = child_cpu_ms(pid);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_true(s.rss_bytes >= 64LL << 20);
    /* One core spinning; what it got on a busy machine, as the kernel
     * counted it over the same window, give or take the edges. */
    double actual = 100.0 * (double)(cpu1 - cpu0) / (double)(t1 - t0);
    assert_true(actual > 5);
    assert_true(s.cpu_percent > actual * 0.6 - 5);
    assert_true(s.cpu_percent < actual * 1.4 + 10);
    assert_true(s.t_ms > 0);
    assert_int_equal(s.gpus, 0);
    assert_int_equal(s.gpu_mem_bytes, -1);
    tony_sample after;
    tony_metrics_sampler_take(m, &after);
    assert_true(after.rss_bytes < s.rss_bytes - (32LL << 20)); /* gone */
    tony_metrics_sampler_free(m);
}

static void test_sampler_without_nvidia_smi(void **state) {
    (void)state;
    /* GPUs asked for, but no such binary: skipped quietly */
    tony_metrics_sampler *m = tony_metrics_sampler_new(getpid(), "0,1", "/nonexistent/nvidia-smi");
    assert_false(tony_metrics_sampler_has_gpus(m));
    tony_sample s;
    tony_metrics_sampler_take(m, &s);
    assert_int_equal(s.gpus, 0);
    tony_metrics_sampler_free(m);
    /* ids that could smuggle arguments are refused */
    m = tony_metrics_sampler_new(getpid(), "0 --help", "/bin/true");
    assert_false(tony_metrics_sampler_has_gpus(m));
    tony_metrics_sampler_free(m);
}

/* A stand-in for nvidia-smi (no GPU on this machine): a script that checks
 * it was asked the right question and prints the captured answer. */
static char *fake_smi(const char *dir, const char *body) {
    char *path = malloc(strlen(dir) + 32);
    sprintf(path, "%s/nvidia-smi", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    chmod(path, 0755);
    return path;
}

static void test_sampler_runs_nvidia_smi(void **state) {
    (void)state;
    char dir[] = "/tmp/tony-smi-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *smi = fake_smi(dir, "[ \"$1 $2 $3 $4\" = \"--query-gpu=utilization.gpu,memory.used,memory.total "
                              "--format=csv,noheader,nounits -i 0,1\" ] || exit 3\nprintf '87, 30125, 81920\\n12, 1024, 81920\\n'");
    tony_metrics_sampler *m = tony_metrics_sampler_new(getpid(), "0,1", dir); /* its directory works too */
    assert_true(tony_metrics_sampler_has_gpus(m));
    tony_sample s;
    tony_metrics_sampler_take(m, &s);
    assert_int_equal(s.gpus, 2);
    assert_float_equal(s.gpu_util_max_percent, 87, 1e-9);
    assert_int_equal(s.gpu_mem_bytes, (30125LL + 1024) * 1024 * 1024);
    tony_metrics_sampler_free(m);
    free(smi);
    /* a broken nvidia-smi: no GPU data, and after 10 failures no more tries */
    smi = fake_smi(dir, "echo x >> \"$(dirname \"$0\")/calls\"; exit 9");
    m = tony_metrics_sampler_new(getpid(), "0", smi);
    for (int i = 0; i < 12; i++) {
        tony_metrics_sampler_take(m, &s);
        assert_int_equal(s.gpus, 0);
    }
    tony_metrics_sampler_free(m);
    char calls[256];
    snprintf(calls, sizeof calls, "%s/calls", dir);
    FILE *f = fopen(calls, "r");
    int n = 0;
    for (int ch; (ch = fgetc(f)) != EOF;) n += ch == '\n';
    fclose(f);
    assert_int_equal(n, 10);
    unlink(calls);
    unlink(smi);
    rmdir(dir);
    free(smi);
}

static void test_sample_wire_form(void **state) {
    (void)state;
    tony_sample s = cpu_mem(123, 456, 78.5), back;
    tony_error err;
    json_t *j = tony_sample_to_json(&s);
    assert_int_equal(tony_sample_from_json(j, &back, &err), 0);
    assert_int_equal(back.t_ms, 123);
    assert_int_equal(back.rss_bytes, 456);
    assert_float_equal(back.cpu_percent, 78.5, 1e-9);
    assert_int_equal(back.gpu_mem_bytes, -1);
    json_decref(j);
    const char *bad[] = {"{}", "{\"t_ms\":1,\"rss_bytes\":-5,\"cpu_percent\":1}",
                         "{\"t_ms\":1,\"rss_bytes\":5,\"cpu_percent\":\"x\"}",
                         "{\"t_ms\":1,\"rss_bytes\":5,\"cpu_percent\":1,\"gpu_util_percent\":\"hi\"}"};
    const char *field[] = {"t_ms", "rss_bytes", "cpu_percent", "gpu_util_percent"};
    for (size_t i = 0; i < 4; i++) {
        json_t *o = json_loads(bad[i], 0, NULL);
        assert_int_equal(tony_sample_from_json(o, &back, &err), -1);
        assert_non_null(strstr(err.msg, field[i]));
        json_decref(o);
    }
}

/* The kernel's peak reported at the end: kept beside the samples, never
 * below their max, the highest report winning; -1 until reported. */
static void test_kernel_peak(void **state) {
    (void)state;
    am_metrics *m = am_metrics_new(8);
    assert_int_equal(am_metrics_peak(m), -1);
    tony_sample s = cpu_mem(1000, 30LL << 20, 10);
    am_metrics_add(m, &s);
    json_t *o = am_metrics_aggregates_json(m);
    assert_int_equal(json_integer_value(json_object_get(o, "PEAK_MEMORY_BYTES")), -1);
    json_decref(o);
    am_metrics_set_peak(m, 257LL << 20);
    am_metrics_set_peak(m, 100LL << 20); /* a lower report does not lower it */
    assert_int_equal(am_metrics_peak(m), 257LL << 20);
    o = am_metrics_aggregates_json(m);
    assert_int_equal(json_integer_value(json_object_get(o, "PEAK_MEMORY_BYTES")), 257LL << 20);
    assert_int_equal(json_integer_value(json_object_get(o, "MAX_MEMORY_BYTES")), 30LL << 20); /* TonY's: samples */
    json_decref(o);
    am_metrics *low = am_metrics_new(8);
    s = cpu_mem(1000, 40LL << 20, 10);
    am_metrics_add(low, &s);
    am_metrics_set_peak(low, 10LL << 20); /* a report below the samples: theirs */
    assert_int_equal(am_metrics_peak(low), 40LL << 20);
    am_metrics_free(low);
    am_metrics_free(m);
}

/* A child that allocates 96 MiB and exits between two samples: the samples
 * miss it, the kernel (getrusage of the reaped child) does not. */
static void test_sampler_peak_from_the_kernel(void **state) {
    (void)state;
    tony_metrics_sampler *m = tony_metrics_sampler_new(getpid(), NULL, NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        size_t n = 96u << 20;
        volatile char *p = malloc(n);
        for (size_t i = 0; i < n; i += 4096) p[i] = 1;
        _exit(0);
    }
    tony_metrics_sampler_set_group(m, pid);
    waitpid(pid, NULL, 0);
    tony_sample s;
    tony_metrics_sampler_take(m, &s);
    assert_true(s.rss_bytes < 64LL << 20); /* what the samples saw */
    const char *from = NULL;
    long long peak = tony_metrics_sampler_peak(m, &from);
    assert_true(peak >= 96LL << 20);
    assert_true(peak < 160LL << 20);
    assert_string_equal(from, "its largest process (getrusage)");
    /* a second run that stays small: the first run's kernel peak is not its */
    pid = fork();
    if (pid == 0) _exit(0);
    tony_metrics_sampler_set_group(m, pid);
    waitpid(pid, NULL, 0);
    tony_metrics_sampler_take(m, &s);
    peak = tony_metrics_sampler_peak(m, &from);
    assert_int_equal(peak, s.rss_bytes);
    assert_string_equal(from, "samples");
    tony_metrics_sampler_free(m);
}

/* The task's own cgroup: a YARN container's (v1 memory on a hybrid host,
 * v2 on a unified one), a Slurm step's (cut at the step, above Slurm's
 * per-task cgroups); none for a cgroup that is not the task's. */
static void test_cgroup_peak_file(void **state) {
    (void)state;
    const char *hybrid = "12:pids:/hadoop-yarn/container_e01_1700_0001_01_000002\n"
                         "4:cpu,cpuacct:/hadoop-yarn/container_e01_1700_0001_01_000002\n"
                         "3:memory:/hadoop-yarn/container_e01_1700_0001_01_000002\n"
                         "0::/hadoop-yarn/container_e01_1700_0001_01_000002\n";
    char *f = tony_metrics_cgroup_peak_file(hybrid, "container_e01_1700_0001_01_000002", "/sys/fs/cgroup");
    assert_string_equal(f, "/sys/fs/cgroup/memory/hadoop-yarn/container_e01_1700_0001_01_000002/"
                           "memory.max_usage_in_bytes");
    free(f);
    f = tony_metrics_cgroup_peak_file("0::/hadoop-yarn/container_e01_1700_0001_01_000002\n",
                                      "container_e01_1700_0001_01_000002", "/sys/fs/cgroup");
    assert_string_equal(f, "/sys/fs/cgroup/hadoop-yarn/container_e01_1700_0001_01_000002/memory.peak");
    free(f);
    f = tony_metrics_cgroup_peak_file("0::/system.slice/slurmstepd.scope/job_12/step_3/user/task_0\n", "job_12/step_3",
                                      "/sys/fs/cgroup");
    assert_string_equal(f, "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_12/step_3/memory.peak");
    free(f);
    f = tony_metrics_cgroup_peak_file("7:cpuacct,memory:/slurm/uid_0/job_12/step_3/task_0\n", "job_12/step_3", "/r");
    assert_string_equal(f, "/r/memory/slurm/uid_0/job_12/step_3/memory.max_usage_in_bytes");
    free(f);
    /* not the task's: a shared cgroup, a longer id that only starts with it, another step */
    assert_null(tony_metrics_cgroup_peak_file("4:memory:/process_api/69ad\n0::/\n", "container_1", "/r"));
    assert_null(tony_metrics_cgroup_peak_file("0::/hadoop-yarn/container_12\n", "container_1", "/r"));
    assert_null(tony_metrics_cgroup_peak_file("0::/slurm/job_12/step_30\n", "job_12/step_3", "/r"));
    assert_null(tony_metrics_cgroup_peak_file("garbage\n", "container_1", "/r"));
    assert_null(tony_metrics_cgroup_peak_file("0::/x/container_1\n", NULL, "/r"));
}

/* Each line of /proc/self/cgroup with "/own" added to its path: where a
 * cgroup of that name under ours would be. */
static char *below_ours(const char *own) {
    char *text = NULL;
    size_t len;
    tony_error err;
    if (tony_read_file("/proc/self/cgroup", &text, &len, &err)) return NULL;
    tony_buf b = {0};
    tony_buf_puts(&b, "");
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        tony_buf_printf(&b, "%s%s%s\n", line, line[strlen(line) - 1] == '/' ? "" : "/", own);
    free(text);
    return b.data;
}

/* A process of the test that allocates n bytes, says so on ready, and
 * holds them until hold closes. */
static void hold_memory(size_t n, int ready, int hold) {
    volatile char *p = malloc(n);
    for (size_t i = 0; i < n; i += 4096) p[i] = 1;
    char c = 'x';
    if (write(ready, &c, 1) != 1 || read(hold, &c, 1) < 0) _exit(1);
    _exit(0);
}

/* The task's own cgroup, where this test can make one (root, and cgroup
 * v1's memory hierarchy or v2 with memory.peak; skipped elsewhere): two
 * processes holding 64 MiB at once peak at 128 MiB there, which the
 * largest single process's rusage (64 MiB) does not show. */
static void test_sampler_peak_from_the_cgroup(void **state) {
    (void)state;
    char own[64];
    snprintf(own, sizeof own, "container_tonytest_%d", (int)getpid());
    char *text = below_ours(own);
    char *file = text ? tony_metrics_cgroup_peak_file(text, own, "/sys/fs/cgroup") : NULL;
    free(text);
    if (!file) skip();
    char *dir = tony_sprintf("%.*s", (int)(strrchr(file, '/') - file), file);
    if (mkdir(dir, 0755) != 0) {
        free(dir), free(file);
        skip();
    }
    bool usable = access(file, R_OK) == 0;
    int go[2], ready[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(ready), 0);
    pid_t pid = usable ? fork() : -1;
    if (pid == 0) { /* the task: joins the cgroup, then runs two holders at once */
        char me[32], c = 'n';
        snprintf(me, sizeof me, "%d", (int)getpid());
        int fd = open(tony_sprintf("%s/cgroup.procs", dir), O_WRONLY);
        if (fd >= 0 && write(fd, me, strlen(me)) == (ssize_t)strlen(me)) c = 'y';
        if (write(ready[1], &c, 1) != 1 || c != 'y' || read(go[0], &c, 1) != 1) _exit(2);
        int up[2], hold[2];
        if (pipe(up) || pipe(hold)) _exit(3);
        for (int i = 0; i < 2; i++) {
            if (fork() == 0) {
                close(hold[1]);
                hold_memory(64u << 20, up[1], hold[0]);
            }
        }
        close(hold[0]);
        for (int i = 0; i < 2; i++)
            if (read(up[0], &c, 1) != 1) _exit(4);
        close(hold[1]);
        while (wait(NULL) > 0) {}
        _exit(0);
    }
    char c = 'n';
    const char *from = NULL;
    long long peak = -1;
    int status = -1;
    if (pid > 0 && read(ready[0], &c, 1) == 1 && c == 'y') {
        setenv("CONTAINER_ID", own, 1);
        tony_metrics_sampler *m = tony_metrics_sampler_new(pid, NULL, NULL);
        unsetenv("CONTAINER_ID");
        tony_metrics_sampler_set_group(m, pid);
        if (write(go[1], "g", 1) == 1) waitpid(pid, &status, 0);
        peak = tony_metrics_sampler_peak(m, &from);
        tony_metrics_sampler_free(m);
    }
    if (pid > 0) waitpid(pid, NULL, 0);
    for (int i = 0; i < 2; i++) close(go[i]), close(ready[i]);
    rmdir(dir); /* before any assertion: no cgroup left behind */
    free(dir);
    free(file);
    if (c != 'y') skip(); /* the cgroup took no process: not ours to use */
    assert_int_equal(status, 0);
    assert_string_equal(from, "its cgroup");
    assert_true(peak >= 128LL << 20);
    assert_true(peak < 512LL << 20);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aggregates_without_gpus), cmocka_unit_test(test_gpu_aggregates),
        cmocka_unit_test(test_series_halves_when_full), cmocka_unit_test(test_parse_nvidia_smi),
        cmocka_unit_test(test_sampler_measures_a_real_child), cmocka_unit_test(test_sampler_without_nvidia_smi),
        cmocka_unit_test(test_sampler_runs_nvidia_smi),
        cmocka_unit_test(test_sample_wire_form), cmocka_unit_test(test_kernel_peak),
        cmocka_unit_test(test_sampler_peak_from_the_kernel), cmocka_unit_test(test_cgroup_peak_file),
        cmocka_unit_test(test_sampler_peak_from_the_cgroup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
