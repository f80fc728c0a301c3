/* Slurm's command-line tools, for the client (see slurm_tools.h). */
#include "backend/slurm/slurm_tools.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/proc.h"
#include "conf/keys.h"

/* How long a Slurm command may take: a controller that does not answer
 * makes the tools retry for about a minute. */
#define SLURM_CMD_TIMEOUT_MS 20000

bool tony_slurm_configured(void) {
    const char *conf = getenv("SLURM_CONF");
    bool have_conf = (conf && *conf && tony_file_exists(conf)) || tony_file_exists("/etc/slurm/slurm.conf");
    char *sbatch = tony_proc_which("sbatch");
    bool have_sbatch = sbatch != NULL;
    free(sbatch);
    return have_conf && have_sbatch;
}

/* Runs a Slurm tool; a failure says what the tool said. */
static int run(char *const *argv, tony_buf *out, tony_error *err) {
    tony_buf errout = {0};
    int code = 0;
    int rc = tony_proc_run(argv, SLURM_CMD_TIMEOUT_MS, out, &errout, &code, err);
    if (rc == 0 && code != 0) {
        char *msg = tony_trim(errout.data ? errout.data : "");
        rc = tony_err(err, "%s failed (exit code %d): %s", argv[0], code, *msg ? msg : "(no message)");
    } else if (rc) {
        char old[sizeof err->msg];
        snprintf(old, sizeof old, "%s", err->msg);
        const char *conf = getenv("SLURM_CONF");
        tony_err(err, "%s; is the Slurm controller up and SLURM_CONF (%s) right?", old,
                 conf && *conf ? conf : "unset: /etc/slurm/slurm.conf");
    }
    tony_buf_free(&errout);
    return rc;
}

static tony_slurm_node *node_named(tony_slurm_cluster *c, const char *name) {
    for (size_t i = 0; i < c->len; i++)
        if (strcmp(c->nodes[i].name, name) == 0) return &c->nodes[i];
    c->nodes = tony_xrealloc(c->nodes, (c->len + 1) * sizeof *c->nodes);
    tony_slurm_node *n = &c->nodes[c->len++];
    *n = (tony_slurm_node){.name = tony_strdup(name)};
    return n;
}

/* "gpu:4", "gpu:a100:2(S:0-1)", "gpu:2,shard:8", "(null)" */
static int gres_gpus(const char *gres) {
    int total = 0;
    tony_strv items = {0};
    tony_split_csv(gres, &items);
    for (size_t i = 0; i < items.len; i++) {
        char *g = items.items[i];
        if (strncmp(g, "gpu", 3) != 0 || (g[3] != ':' && g[3] != '\0')) continue;
        char *paren = strchr(g, '(');
        if (paren) *paren = '\0';
        char *last = strrchr(g, ':');
        if (last && isdigit((unsigned char)last[1])) total += atoi(last + 1);
    }
    tony_strv_free(&items);
    return total;
}

int tony_slurm_cluster_parse(const char *sinfo, tony_slurm_cluster *out, tony_error *err) {
    *out = (tony_slurm_cluster){0};
    char *copy = tony_strdup(sinfo ? sinfo : ""), *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *f[6] = {0}, *p = line, *whole = tony_strdup(line);
        int n = 0;
        for (; n < 6 && p; n++) {
            f[n] = p;
            p = strchr(p, '|');
            if (p) *p++ = '\0';
        }
        if (n < 6) {
            tony_err(err, "cannot read sinfo's line '%s' (expected NODE|PARTITION|CPUS|MEMORY|GRES|FEATURES)", whole);
            free(whole);
            free(copy);
            tony_slurm_cluster_free(out);
            return -1;
        }
        free(whole);
        tony_slurm_node *node = node_named(out, f[0]);
        char *part = f[1];
        size_t plen = strlen(part);
        if (plen && part[plen - 1] == '*') {
            part[plen - 1] = '\0';
            if (!out->default_partition) out->default_partition = tony_strdup(part);
        }
        if (!tony_strv_contains(&node->partitions, part)) tony_strv_push(&node->partitions, part);
        node->cpus = atoi(f[2]);
        node->memory_mb = atoll(f[3]);
        node->gpus = gres_gpus(f[4]);
        if (node->features.len == 0 && strcmp(f[5], "(null)") != 0) tony_split_csv(f[5], &node->features);
    }
    free(copy);
    return 0;
}

void tony_slurm_cluster_free(tony_slurm_cluster *c) {
    for (size_t i = 0; i < c->len; i++) {
        free(c->nodes[i].name);
        tony_strv_free(&c->nodes[i].partitions);
        tony_strv_free(&c->nodes[i].features);
    }
    free(c->nodes);
    free(c->default_partition);
    *c = (tony_slurm_cluster){0};
}

int tony_slurm_cluster_read(tony_slurm_cluster *out, tony_error *err) {
    char *argv[] = {"sinfo", "-h", "-N", "-o", "%N|%P|%c|%m|%G|%f", NULL};
    tony_buf b = {0};
    int rc = run(argv, &b, err);
    if (rc == 0) rc = tony_slurm_cluster_parse(b.data, out, err);
    if (rc == 0 && out->len == 0) rc = tony_err(err, "sinfo lists no nodes: this Slurm cluster has none to run on");
    if (rc) tony_err_wrap(err, "cannot read the Slurm cluster's nodes");
    tony_buf_free(&b);
    return rc;
}

/* Which key decides a component's partition, for messages. */
static char *partition_key(const tony_slurm_component *c) {
    return c->roles.len ? tony_sprintf("tony.slurm.%s.partition (or tony.slurm.partition)", c->roles.items[0])
                        : tony_strdup(TONY_KEY_SLURM_PARTITION);
}

static bool has_feature(const tony_slurm_node *n, const char *constraint) {
    /* Only a plain feature name is checked here; Slurm judges expressions. */
    for (const char *p = constraint; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.') return true;
    return tony_strv_contains(&n->features, constraint);
}

int tony_slurm_check_layout(const tony_slurm_cluster *c, const tony_plan *plan, const tony_slurm_layout *l,
                            tony_error *err) {
    (void)plan;
    tony_strv usable = {0}; /* nodes some component could use */
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < l->len; k++) {
        const tony_slurm_component *comp = &l->items[k];
        const char *part = comp->partition ? comp->partition : c->default_partition;
        bool known = !part;
        int fit = 0;
        long long max_mem = 0;
        int max_cpus = 0, max_gpus = 0;
        for (size_t i = 0; i < c->len; i++) {
            const tony_slurm_node *n = &c->nodes[i];
            if (part && !tony_strv_contains(&n->partitions, part)) continue;
            known = true;
            if (n->cpus > max_cpus) max_cpus = n->cpus;
            if (n->memory_mb > max_mem) max_mem = n->memory_mb;
            if (n->gpus > max_gpus) max_gpus = n->gpus;
            long long mem = comp->mem_per_cpu_mb * comp->cpus_per_task;
            if (n->cpus >= comp->cpus_per_task && n->memory_mb >= mem && n->gpus >= comp->gpus_per_task &&
                (!comp->constraint || has_feature(n, comp->constraint))) {
                fit++;
                if (!tony_strv_contains(&usable, n->name)) tony_strv_push(&usable, n->name);
            }
        }
        const char *role = comp->roles.len ? comp->roles.items[0] : "am";
        if (!known) {
            tony_strv parts = {0};
            for (size_t i = 0; i < c->len; i++)
                for (size_t j = 0; j < c->nodes[i].partitions.len; j++)
                    if (!tony_strv_contains(&parts, c->nodes[i].partitions.items[j]))
                        tony_strv_push(&parts, c->nodes[i].partitions.items[j]);
            char *key = partition_key(comp), *list = tony_strv_join(&parts, ", ");
            rc = tony_err(err, "Slurm has no partition '%s' (set by %s); the partitions are: %s", part, key, list);
            free(key);
            free(list);
            tony_strv_free(&parts);
        } else if (fit == 0) {
            long long mem = comp->mem_per_cpu_mb * comp->cpus_per_task;
            const char *what = "";
            char buf[256];
            if (comp->gpus_per_task > max_gpus)
                snprintf(buf, sizeof buf, "%d GPUs (tony.%s.gpus); the most a node has is %d", comp->gpus_per_task, role,
                         max_gpus);
            else if (comp->cpus_per_task > max_cpus)
                snprintf(buf, sizeof buf, "%d vcores (tony.%s.vcores); the most a node has is %d", comp->cpus_per_task,
                         role, max_cpus);
            else if (mem > max_mem)
                snprintf(buf, sizeof buf, "%lld MB of memory (tony.%s.memory); the most a node has is %lld MB", mem,
                         role, max_mem);
            else
                snprintf(buf, sizeof buf, "the feature '%s' (tony.%s.node-label) with its CPUs, memory and GPUs",
                         comp->constraint ? comp->constraint : "", role);
            what = buf;
            rc = tony_err(err, "no Slurm node in partition %s can run a %s task: it asks for %s", part ? part : "(default)",
                          role, what);
        }
    }
    /* Slurm places the components of a heterogeneous job on distinct nodes. */
    if (rc == 0 && l->len > usable.len)
        rc = tony_err(err,
                      "this job needs %zu Slurm nodes (one per group of roles that ask for the same resources: Slurm "
                      "puts each part of a heterogeneous job on nodes of its own) but only %zu nodes can run them; "
                      "give the roles the same tony.<role>.memory, vcores and gpus, or use a bigger partition",
                      l->len, usable.len);
    tony_strv_free(&usable);
    return rc;
}

int tony_slurm_sbatch_parse(const char *out, char **job_id, tony_error *err) {
    /* "123" or "123;cluster" */
    char *copy = tony_strdup(out ? out : "");
    char *id = tony_trim(copy);
    id[strcspn(id, ";\n")] = '\0';
    int rc = 0;
    if (!*id || strspn(id, "0123456789") != strlen(id)) rc = tony_err(err, "sbatch printed no job id: '%s'", id);
    else *job_id = tony_strdup(id);
    free(copy);
    return rc;
}

int tony_slurm_sbatch(const char *script_path, const char *dir, char **job_id, tony_error *err) {
    char *chdir_opt = tony_sprintf("--chdir=%s", dir);
    char *argv[] = {"sbatch", "--parsable", chdir_opt, (char *)script_path, NULL};
    tony_buf out = {0};
    int rc = run(argv, &out, err);
    free(chdir_opt);
    if (rc == 0) rc = tony_slurm_sbatch_parse(out.data, job_id, err);
    tony_buf_free(&out);
    return rc;
}

char *tony_slurm_state_parse(const char *out) {
    if (!out) return NULL;
    out += strspn(out, " \t\n");
    size_t n = strcspn(out, " \t\n|+");
    return n ? tony_sprintf("%.*s", (int)n, out) : NULL;
}

int tony_slurm_job_state(const char *job_id, char **state, tony_error *err) {
    *state = NULL;
    char *sq[] = {"squeue", "-h", "-t", "all", "-j", (char *)job_id, "-o", "%T", NULL};
    tony_buf out = {0};
    tony_error qerr;
    /* squeue fails ("Invalid job id") once the controller forgot the job. */
    if (run(sq, &out, &qerr) == 0) *state = tony_slurm_state_parse(out.data);
    tony_buf_free(&out);
    if (*state) return 0;
    char *sa[] = {"sacct", "-n", "-X", "-P", "-j", (char *)job_id, "-o", "State", NULL};
    if (run(sa, &out, err)) {
        tony_buf_free(&out);
        return -1;
    }
    *state = tony_slurm_state_parse(out.data);
    tony_buf_free(&out);
    return 0;
}

bool tony_slurm_state_final(const char *state) {
    static const char *const live[] = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED",
                                       "REQUEUED", "RESIZING", "SIGNALING", "STAGE_OUT", "REQUEUE_HOLD",
                                       "REQUEUE_FED", "RESV_DEL_HOLD", "STOPPED", NULL};
    for (int i = 0; live[i]; i++)
        if (strcmp(state, live[i]) == 0) return false;
    return true;
}

int tony_slurm_cancel(const char *job_id, tony_error *err) {
    char *argv[] = {"scancel", (char *)job_id, NULL};
    return run(argv, NULL, err);
}
