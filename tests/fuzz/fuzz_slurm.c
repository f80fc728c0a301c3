/* Fuzzes what tony reads from Slurm's commands (backend/slurm/slurm_tools.c):
 * sinfo's node list (`sinfo -h -N -o '%N|%P|%c|%m|%G|%f'`: partitions, the
 * default one, CPUs, memory, GRES GPUs, features) and the check of a job's
 * layout against it, sbatch --parsable's job id, and the state word of
 * squeue -o %T and sacct -P -o State. Input format: the command's output,
 * all of it given to each reader. Properties: no crash, leak or UB; every
 * node parsed has a name and at least one partition, and the default
 * partition is one of them; a job id is digits only; a state word is one
 * word (no blank, '|' or '+'). */
#include <stdint.h>
#include <string.h>

#include "backend/slurm/slurm_job.h"
#include "backend/slurm/slurm_tools.h"
#include "fuzz_util.h"
#include "runtime/runtime.h"

static tony_conf *conf;
static tony_plan plan;
static tony_slurm_layout layout;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet();
    conf = fuzz_tf_conf();
    tony_conf_set(conf, "tony.worker.gpus", "1", "fuzz");
    tony_conf_set(conf, "tony.worker.node-label", "a100", "fuzz");
    tony_error err;
    FUZZ_CHECK(tony_runtime_plan(conf, &plan, &err) == 0, "the fuzzer's plan: %s", err.msg);
    FUZZ_CHECK(tony_slurm_layout_plan(&plan, conf, &layout, &err) == 0, "the fuzzer's layout: %s", err.msg);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = tony_xmalloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    tony_error err;
    tony_slurm_cluster c;
    if (tony_slurm_cluster_parse(s, &c, &err) == 0) {
        bool default_seen = c.default_partition == NULL;
        for (size_t i = 0; i < c.len; i++) {
            const tony_slurm_node *n = &c.nodes[i];
            FUZZ_CHECK(n->name != NULL, "node %zu has no name", i);
            FUZZ_CHECK(n->partitions.len > 0, "node %s is in no partition", n->name);
            default_seen = default_seen || tony_strv_contains(&n->partitions, c.default_partition);
        }
        FUZZ_CHECK(default_seen, "the default partition %s has no node", c.default_partition);
        if (tony_slurm_check_layout(&c, &plan, &layout, &err) != 0) FUZZ_CHECK(*err.msg, "a refusal with no reason");
        tony_slurm_cluster_free(&c);
    } else {
        FUZZ_CHECK(c.len == 0 && c.nodes == NULL, "a failed parse left nodes");
    }
    char *id = NULL;
    if (tony_slurm_sbatch_parse(s, &id, &err) == 0)
        FUZZ_CHECK(id && *id && strspn(id, "0123456789") == strlen(id), "sbatch's job id '%s' is not a number", id);
    free(id);
    char *state = tony_slurm_state_parse(s);
    if (state) {
        FUZZ_CHECK(*state && !strpbrk(state, " \t\n|+"), "the state word '%s' is not one word", state);
        tony_slurm_state_final(state);
    }
    free(state);
    free(s);
    return 0;
}
