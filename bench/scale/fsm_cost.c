/* What the coordinator's state machine costs per task event (issue 26,
 * am/fsm.c): the real am_fsm, on a plan from a real configuration, driven
 * through one gang of N workers (register all, start all, one failure,
 * every other executor stopping its process in place, the restart,
 * register all again); prints each phase's CPU milliseconds. No HTTP, process
 * or clock of the coordinator's: the state machine alone. Links against
 * any tree's libtonycore.a (its API is the same before and after issue 26):
 *   cc -O2 -Isrc bench/scale/fsm_cost.c build/libtonycore.a \
 *      $(pkg-config --libs libevent jansson libxml-2.0 libarchive libcurl libprotobuf-c libcrypto avro-c krb5) \
 *      -lm -o /tmp/fsm_cost && /tmp/fsm_cost 1000 10000 50000 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "am/fsm.h"
#include "conf/conf.h"
#include "conf/plan.h"
#include "runtime/runtime.h"

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Every task asked for registers; once the gang goes, each is answered
 * "go" and starts its process, as the coordinator's API does. */
static void register_all(am_fsm *f, long long now, am_actions *out) {
    for (size_t i = 0; i < f->job.ntasks; i++) {
        am_task *t = &f->job.tasks[i];
        if (t->state != AM_TASK_REQUESTED) continue;
        am_registration r = {.host = "127.0.0.1", .port = 10000 + (int)i};
        out->len = 0;
        am_fsm_registered(f, t, &r, now, out);
    }
}

static void start_all(am_fsm *f, long long now) {
    for (size_t i = 0; i < f->job.ntasks; i++) {
        am_task *t = &f->job.tasks[i];
        am_fsm_poll_answered(f, t, now);
        am_fsm_released(f, t);
        am_fsm_started(f, t, 100000 + (int)i, now);
        bool tb;
        am_fsm_heartbeat(f, t, -1, now, &tb);
    }
}

static int run(int n) {
    tony_conf *conf = tony_conf_new();
    tony_conf_load_defaults(conf);
    char workers[32];
    snprintf(workers, sizeof workers, "%d", n);
    tony_conf_set(conf, "tony.containers.command", "python train.py", "bench");
    tony_conf_set(conf, "tony.worker.instances", workers, "bench");
    tony_conf_set(conf, "tony.am.retry-count", "1", "bench");
    tony_conf_set(conf, "tony.application.restart-backoff-ms", "0", "bench");
    tony_plan plan;
    tony_error err;
    if (tony_runtime_plan(conf, &plan, &err)) {
        fprintf(stderr, "plan: %s\n", err.msg);
        return 1;
    }
    am_fsm f;
    am_actions out = {0};
    double t0 = cpu_s();
    am_fsm_init(&f, &plan, 30000, 0);
    am_fsm_start(&f, 0, &out);
    double t1 = cpu_s();
    register_all(&f, 10, &out);
    double t2 = cpu_s();
    start_all(&f, 20);
    double t3 = cpu_s();
    /* one failure ends the attempt; every other executor reports its
     * process stopped in place, the last one's report restarts it */
    out.len = 0;
    am_fsm_result_reported(&f, am_job_task(&f.job, "worker", 0), 1, false, 30, &out);
    for (size_t i = 1; i < f.job.ntasks; i++) {
        out.len = 0;
        am_fsm_result_reported(&f, &f.job.tasks[i], 143, false, 40, &out);
    }
    bool restart = false;
    for (size_t i = 0; i < out.len; i++) restart |= out.items[i].kind == AM_ACT_RESTART;
    double t4 = cpu_s();
    out.len = 0;
    am_fsm_next_attempt(&f, 50, &out);
    register_all(&f, 60, &out);
    double t5 = cpu_s();
    bool running = f.state == AM_JOB_RUNNING && f.job.attempt == 1;
    printf("%6d tasks, CPU ms: init+start %.2f, register %.2f, start %.2f, failure+stop in place %.2f, "
           "restart+register %.2f; total %.2f%s\n",
           n, 1e3 * (t1 - t0), 1e3 * (t2 - t1), 1e3 * (t3 - t2), 1e3 * (t4 - t3), 1e3 * (t5 - t4), 1e3 * (t5 - t0),
           restart && running ? "" : " (the scenario did not run as planned)");
    fflush(stdout);
    am_actions_free(&out);
    am_fsm_free(&f);
    tony_plan_free(&plan);
    tony_conf_free(conf);
    return restart && running ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s N...\n", argv[0]);
        return 2;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++) rc |= run(atoi(argv[i]));
    return rc;
}
