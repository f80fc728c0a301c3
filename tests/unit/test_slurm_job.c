/* Unit tests of how a tony job becomes a Slurm job (backend/slurm): roles
 * of one shape share a component and the most constrained come first, the
 * batch script and srun words, sinfo's output read, and the check against
 * the cluster's nodes that refuses, naming the key, what can never run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/slurm/slurm_tools.h"
#include "backend/slurm/slurm_job.h"
#include "conf/conf.h"
#include "conf/plan.h"
#include "runtime/runtime.h"
#include "conf_pairs.h"

typedef struct {
    tony_conf *conf;
    tony_plan plan;
    tony_slurm_layout layout;
} job;

static int layout_of(job *j, const char *const *kvs, tony_error *err) {
    j->conf = conf_with(kvs);
    tony_conf_set_cli(j->conf, "tony.containers.command", "python train.py");
    if (tony_runtime_plan(j->conf, &j->plan, err)) fail_msg("plan failed: %s", err->msg);
    return tony_slurm_layout_plan(&j->plan, j->conf, &j->layout, err);
}

static void job_free(job *j) {
    tony_slurm_layout_free(&j->layout);
    tony_plan_free(&j->plan);
    tony_conf_free(j->conf);
}

#define LAYOUT(j, err, ...) layout_of((j), (const char *const[]){__VA_ARGS__, NULL}, (err))

/* This machine's test cluster: n1 (feature fast), n2 and n3 with 4 GPUs in
 * partitions cpu (default) and gpu. */
static const char *TEST_SINFO = "n1|cpu*|4|4096|(null)|fast\n"
                                "n2|cpu*|4|4096|gpu:4|(null)\n"
                                "n2|gpu|4|4096|gpu:4|(null)\n"
                                "n3|cpu*|4|4096|gpu:tesla:4(S:0-1)|(null)\n"
                                "n3|gpu|4|4096|gpu:tesla:4(S:0-1)|(null)\n";

static void test_same_shape_shares_a_component(void **state) {
    (void)state;
    job j = {0};
    tony_error err = {{0}};
    assert_int_equal(LAYOUT(&j, &err, "tony.chief.instances=1", "tony.worker.instances=3", "tony.chief.memory=2g",
                            "tony.worker.memory=2g", "tony.chief.vcores=2", "tony.worker.vcores=2"),
                     0);
    assert_int_equal(j.layout.len, 1);
    assert_int_equal(j.layout.items[0].ntasks, 4);
    assert_int_equal(j.layout.items[0].cpus_per_task, 2);
    assert_int_equal(j.layout.items[0].mem_per_cpu_mb, 1024);
    assert_int_equal(tony_slurm_layout_component(&j.layout, "worker"), 0);
    assert_int_equal(tony_slurm_layout_component(&j.layout, "chief"), 0);
    assert_int_equal(tony_slurm_layout_component(&j.layout, "ps"), -1);
    job_free(&j);
}

static void test_gpu_component_first(void **state) {
    (void)state;
    job j = {0};
    tony_error err = {{0}};
    assert_int_equal(LAYOUT(&j, &err, "tony.ps.instances=2", "tony.worker.instances=2", "tony.worker.gpus=1",
                            "tony.ps.memory=1g", "tony.worker.memory=3g", "tony.slurm.worker.partition=gpu"),
                     0);
    assert_int_equal(j.layout.len, 2);
    /* The GPU workers first, though ps sorts before worker in the plan. */
    assert_int_equal(tony_slurm_layout_component(&j.layout, "worker"), 0);
    assert_int_equal(tony_slurm_layout_component(&j.layout, "ps"), 1);
    assert_string_equal(j.layout.items[0].partition, "gpu");
    assert_null(j.layout.items[1].partition);
    assert_int_equal(j.layout.items[0].gpus_per_task, 1);
    assert_int_equal(j.layout.items[0].mem_per_cpu_mb, 3072);

    tony_slurm_script s = {.job_name = "my job/1", .output = "/jobs/x/am.out", .time_limit_ms = 60 * 60 * 1000,
                           .am_command = "'/jobs/x/tony' am --slurm '/jobs/x'"};
    char *script = tony_slurm_batch_script(&j.layout, &s);
    assert_contains(script, "#SBATCH --job-name=my_job_1 --output=/jobs/x/am.out --error=/jobs/x/am.out --time=62 "
                            "--ntasks=2 --cpus-per-task=1 --mem-per-cpu=3072 --gpus-per-task=1 --partition=gpu\n");
    assert_contains(script, "\n#SBATCH hetjob\n#SBATCH --ntasks=2 --cpus-per-task=1 --mem-per-cpu=1024\n");
    assert_contains(script, "\nexec '/jobs/x/tony' am --slurm '/jobs/x'\n");
    free(script);

    tony_strv argv = {0};
    tony_slurm_srun_argv(&j.layout, 1, "ps:0", &argv);
    char *words = tony_strv_join(&argv, " ");
    assert_string_equal(words, "srun --het-group=1 --ntasks=1 --nodes=1 --exact --cpus-per-task=1 --mem-per-cpu=1024 "
                               "--job-name=ps:0 --quiet --");
    free(words);
    tony_strv_free(&argv);
    job_free(&j);
}

static void test_constraint_and_bad_partition(void **state) {
    (void)state;
    job j = {0};
    tony_error err = {{0}};
    assert_int_equal(LAYOUT(&j, &err, "tony.worker.instances=1", "tony.worker.node-label=fast"), 0);
    assert_string_equal(j.layout.items[0].constraint, "fast");
    job_free(&j);

    j = (job){0};
    assert_int_equal(LAYOUT(&j, &err, "tony.worker.instances=1", "tony.slurm.partition=gpu\n#SBATCH --x"), -1);
    assert_contains(err.msg, "tony.slurm.partition");
    job_free(&j);
}

static void test_single_node_job_has_the_coordinator_component(void **state) {
    (void)state;
    job j = {0};
    tony_error err = {{0}};
    assert_int_equal(LAYOUT(&j, &err, "tony.am.memory=3g", "tony.am.vcores=2", "tony.am.gpus=1"), 0);
    assert_int_equal(j.layout.len, 1);
    assert_int_equal(j.layout.items[0].ntasks, 1);
    assert_int_equal(j.layout.items[0].gpus_per_task, 1);
    assert_int_equal(j.layout.items[0].mem_per_cpu_mb, 1536);
    job_free(&j);
}

static void test_time_limit(void **state) {
    (void)state;
    assert_int_equal(tony_slurm_time_limit_minutes(0), 0);
    assert_int_equal(tony_slurm_time_limit_minutes(1), 3);   /* 2 min slack, rounded up */
    assert_int_equal(tony_slurm_time_limit_minutes(60000), 3);
}

static void test_sinfo_parse(void **state) {
    (void)state;
    tony_slurm_cluster c;
    tony_error err = {{0}};
    assert_int_equal(tony_slurm_cluster_parse(TEST_SINFO, &c, &err), 0);
    assert_int_equal(c.len, 3);
    assert_string_equal(c.default_partition, "cpu");
    assert_int_equal(c.nodes[0].gpus, 0);
    assert_true(tony_strv_contains(&c.nodes[0].features, "fast"));
    assert_int_equal(c.nodes[1].gpus, 4);
    assert_int_equal(c.nodes[2].gpus, 4);
    assert_int_equal(c.nodes[2].partitions.len, 2);
    tony_slurm_cluster_free(&c);
    assert_int_equal(tony_slurm_cluster_parse("n1|cpu|4\n", &c, &err), -1);
    assert_contains(err.msg, "n1|cpu|4");
}

/* What the check says of pairs on the test cluster (NULL: accepted). */
static char *check_of(const char *const *kvs) {
    job j = {0};
    static tony_error err;
    err = (tony_error){{0}};
    if (layout_of(&j, kvs, &err)) fail_msg("layout failed: %s", err.msg);
    tony_slurm_cluster c;
    assert_int_equal(tony_slurm_cluster_parse(TEST_SINFO, &c, &err), 0);
    int rc = tony_slurm_check_layout(&c, &j.plan, &j.layout, &err);
    tony_slurm_cluster_free(&c);
    job_free(&j);
    return rc ? err.msg : NULL;
}

#define CHECK(...) check_of((const char *const[]){__VA_ARGS__, NULL})

static void test_check_against_nodes(void **state) {
    (void)state;
    assert_null(CHECK("tony.worker.instances=2", "tony.worker.gpus=2", "tony.slurm.partition=gpu"));
    assert_null(CHECK("tony.worker.instances=1", "tony.worker.node-label=fast"));
    char *m = CHECK("tony.worker.instances=1", "tony.slurm.partition=nosuch");
    assert_non_null(m);
    assert_contains(m, "no partition 'nosuch'");
    assert_contains(m, "tony.slurm.worker.partition (or tony.slurm.partition)");
    assert_contains(m, "cpu, gpu");
    m = CHECK("tony.worker.instances=1", "tony.worker.gpus=5", "tony.slurm.partition=gpu");
    assert_non_null(m);
    assert_contains(m, "5 GPUs (tony.worker.gpus)");
    assert_contains(m, "the most a node has is 4");
    m = CHECK("tony.worker.instances=1", "tony.worker.memory=8g");
    assert_contains(m, "tony.worker.memory");
    m = CHECK("tony.worker.instances=1", "tony.worker.vcores=8");
    assert_contains(m, "tony.worker.vcores");
    m = CHECK("tony.worker.instances=1", "tony.worker.node-label=slow");
    assert_contains(m, "'slow' (tony.worker.node-label)");
    /* Four shapes need four distinct nodes; there are three. */
    m = CHECK("tony.a.instances=1", "tony.b.instances=1", "tony.c.instances=1", "tony.d.instances=1",
              "tony.a.memory=1g", "tony.b.memory=2g", "tony.c.memory=3g", "tony.d.memory=512m");
    assert_non_null(m);
    assert_contains(m, "needs 4 Slurm nodes");
}

/* sbatch --parsable's job id, squeue's and sacct's state word. */
static void test_command_outputs(void **state) {
    (void)state;
    tony_error err = {{0}};
    char *id = NULL;
    assert_int_equal(tony_slurm_sbatch_parse("4242;cluster1\n", &id, &err), 0);
    assert_string_equal(id, "4242");
    free(id);
    assert_int_equal(tony_slurm_sbatch_parse(" 17\n", &id, &err), 0);
    assert_string_equal(id, "17");
    free(id);
    assert_int_equal(tony_slurm_sbatch_parse("sbatch: error: Batch job submission failed\n", &id, &err), -1);
    assert_contains(err.msg, "sbatch printed no job id");
    assert_int_equal(tony_slurm_sbatch_parse(NULL, &id, &err), -1);
    char *st = tony_slurm_state_parse("  RUNNING\n");
    assert_string_equal(st, "RUNNING");
    free(st);
    st = tony_slurm_state_parse("CANCELLED by 1000\nCANCELLED\n");
    assert_string_equal(st, "CANCELLED");
    free(st);
    st = tony_slurm_state_parse("COMPLETED+\n");
    assert_string_equal(st, "COMPLETED");
    free(st);
    assert_null(tony_slurm_state_parse(" \n"));
    assert_null(tony_slurm_state_parse(NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_shape_shares_a_component),
        cmocka_unit_test(test_gpu_component_first),
        cmocka_unit_test(test_constraint_and_bad_partition),
        cmocka_unit_test(test_single_node_job_has_the_coordinator_component),
        cmocka_unit_test(test_time_limit),
        cmocka_unit_test(test_sinfo_parse),
        cmocka_unit_test(test_check_against_nodes),
        cmocka_unit_test(test_command_outputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
