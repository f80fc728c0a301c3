/* The Slurm job of a tony job: components, batch script and srun words (see
 * slurm_job.h for why components group roles by shape). */
#include "backend/slurm/slurm_job.h"
#include "conf/keys.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Slack between tony.application.timeout and Slurm's --time: the
 * coordinator's own timeout fires first and stops the tasks, records the
 * end and exits; Slurm's kill is only the backstop. */
#define TIME_LIMIT_SLACK_MS (2 * 60 * 1000LL)

/* A value written into an #SBATCH line or an srun word must stay one word:
 * partition and feature names, and constraint expressions (a&b, a|b,
 * [a*2&b], a:2). */
static bool slurm_word_ok(const char *v) {
    if (!*v) return false;
    for (const char *p = v; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("-_.&|,[]*:!()", *p)) return false;
    return true;
}

static const char *role_partition(const tony_conf *conf, const char *role, tony_error *err, bool *bad) {
    char key[TONY_ROLE_NAME_MAX + 32];
    snprintf(key, sizeof key, TONY_KEY_SLURM_ROLE_PARTITION_FMT, role);
    const char *v = tony_conf_get(conf, key);
    const char *from = key;
    if (!v || !*v) {
        v = tony_conf_get(conf, TONY_KEY_SLURM_PARTITION);
        from = TONY_KEY_SLURM_PARTITION;
    }
    if (!v || !*v) return NULL;
    if (!slurm_word_ok(v)) {
        tony_err(err, "%s='%s' is not a Slurm partition name; use the name `sinfo -s` lists", from, v);
        *bad = true;
    }
    return v;
}

static bool same_str(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* Most constrained first: see slurm_job.h. */
static int component_rank(const tony_slurm_component *c) {
    return (c->gpus_per_task > 0) * 4 + (c->constraint != NULL) * 2 + (c->partition != NULL);
}

/* A stable sort: components of equal rank keep plan order. */
static void sort_by_rank(tony_slurm_layout *l) {
    for (size_t i = 1; i < l->len; i++) {
        tony_slurm_component c = l->items[i];
        size_t j = i;
        for (; j > 0 && component_rank(&l->items[j - 1]) < component_rank(&c); j--) l->items[j] = l->items[j - 1];
        l->items[j] = c;
    }
}

static tony_slurm_component *add_component(tony_slurm_layout *l) {
    l->items = tony_xrealloc(l->items, (l->len + 1) * sizeof *l->items);
    tony_slurm_component *c = &l->items[l->len++];
    *c = (tony_slurm_component){0};
    return c;
}

static void set_shape(tony_slurm_component *c, long long memory_mb, int vcores, int gpus) {
    c->cpus_per_task = vcores > 0 ? vcores : 1;
    c->mem_per_cpu_mb = (memory_mb + c->cpus_per_task - 1) / c->cpus_per_task;
    if (c->mem_per_cpu_mb < 1) c->mem_per_cpu_mb = 1;
    c->gpus_per_task = gpus;
}

int tony_slurm_layout_plan(const tony_plan *plan, const tony_conf *conf, tony_slurm_layout *out, tony_error *err) {
    *out = (tony_slurm_layout){0};
    bool bad = false;
    if (plan->single_node) {
        tony_slurm_component *c = add_component(out);
        set_shape(c, plan->am_memory_mb, plan->am_vcores, plan->am_gpus);
        c->ntasks = 1;
        c->partition = role_partition(conf, "am", err, &bad);
        c->constraint = tony_conf_get(conf, TONY_KEY_APP_NODE_LABEL);
        if (c->constraint && !*c->constraint) c->constraint = NULL;
        if (!bad && c->constraint && !slurm_word_ok(c->constraint))
            bad = tony_err(err, "tony.application.node-label='%s' is not a Slurm constraint; use a node feature "
                           "`sinfo -o %%f` lists", c->constraint) != 0;
        tony_strv_push(&c->roles, "am");
    }
    for (size_t i = 0; !bad && i < plan->nroles; i++) {
        const tony_role *r = &plan->roles[i];
        const char *partition = role_partition(conf, r->name, err, &bad);
        if (bad) break;
        const char *constraint = r->node_label && *r->node_label ? r->node_label : NULL;
        if (constraint && !slurm_word_ok(constraint)) {
            tony_err(err, "tony.%s.node-label='%s' is not a Slurm constraint; use a node feature `sinfo -o %%f` lists",
                     r->name, constraint);
            bad = true;
            break;
        }
        tony_slurm_component shape = {0};
        set_shape(&shape, r->memory_mb, r->vcores, r->gpus);
        tony_slurm_component *c = NULL;
        for (size_t k = 0; k < out->len && !c; k++) {
            tony_slurm_component *o = &out->items[k];
            if (o->cpus_per_task == shape.cpus_per_task && o->mem_per_cpu_mb == shape.mem_per_cpu_mb &&
                o->gpus_per_task == shape.gpus_per_task && same_str(o->partition, partition) &&
                same_str(o->constraint, constraint))
                c = o;
        }
        if (!c) {
            c = add_component(out);
            *c = shape;
            c->partition = partition;
            c->constraint = constraint;
        }
        c->ntasks += r->instances;
        tony_strv_push(&c->roles, r->name);
    }
    if (bad) {
        tony_slurm_layout_free(out);
        return -1;
    }
    sort_by_rank(out);
    return 0;
}

void tony_slurm_layout_free(tony_slurm_layout *l) {
    for (size_t i = 0; i < l->len; i++) tony_strv_free(&l->items[i].roles);
    free(l->items);
    *l = (tony_slurm_layout){0};
}

int tony_slurm_layout_component(const tony_slurm_layout *l, const char *role) {
    for (size_t i = 0; i < l->len; i++)
        if (tony_strv_contains(&l->items[i].roles, role)) return (int)i;
    return -1;
}

long long tony_slurm_time_limit_minutes(long long time_limit_ms) {
    if (time_limit_ms <= 0) return 0;
    long long ms = time_limit_ms + TIME_LIMIT_SLACK_MS;
    return (ms + 59999) / 60000;
}

/* Slurm's job names may hold almost anything, but the name is also on an
 * #SBATCH line: kept to one safe word. */
static void put_job_name(tony_buf *b, const char *name) {
    tony_buf_puts(b, " --job-name=");
    if (!name || !*name) name = "tony";
    for (const char *p = name; *p; p++)
        tony_buf_printf(b, "%c", isalnum((unsigned char)*p) || strchr("-_.", *p) ? *p : '_');
}

char *tony_slurm_batch_script(const tony_slurm_layout *l, const tony_slurm_script *s) {
    tony_buf b = {0};
    tony_buf_puts(&b, "#!/bin/sh\n# Written by tony submit: one Slurm job for the whole tony job.\n");
    for (size_t i = 0; i < l->len; i++) {
        const tony_slurm_component *c = &l->items[i];
        if (i > 0) tony_buf_puts(&b, "#SBATCH hetjob\n");
        tony_buf_puts(&b, "#SBATCH");
        if (i == 0) {
            put_job_name(&b, s->job_name);
            tony_buf_printf(&b, " --output=%s --error=%s", s->output, s->output);
            if (s->account && *s->account) tony_buf_printf(&b, " --account=%s", s->account);
            long long minutes = tony_slurm_time_limit_minutes(s->time_limit_ms);
            if (minutes > 0) tony_buf_printf(&b, " --time=%lld", minutes);
        }
        tony_buf_printf(&b, " --ntasks=%d --cpus-per-task=%d --mem-per-cpu=%lld", c->ntasks, c->cpus_per_task,
                        c->mem_per_cpu_mb);
        if (c->gpus_per_task > 0) tony_buf_printf(&b, " --gpus-per-task=%d", c->gpus_per_task);
        if (c->partition) tony_buf_printf(&b, " --partition=%s", c->partition);
        if (c->constraint) tony_buf_printf(&b, " --constraint=%s", c->constraint);
        tony_buf_printf(&b, "\n# component %zu: ", i);
        char *roles = tony_strv_join(&c->roles, ", ");
        tony_buf_printf(&b, "%s\n", roles);
        free(roles);
    }
    tony_buf_printf(&b, "exec %s\n", s->am_command);
    return b.data; /* the caller frees it */
}

void tony_slurm_srun_argv(const tony_slurm_layout *l, int component, const char *job_step_name, tony_strv *argv) {
    const tony_slurm_component *c = &l->items[component];
    tony_strv_push(argv, "srun");
    if (l->len > 1) tony_strv_pushf(argv, "--het-group=%d", component);
    tony_strv_push(argv, "--ntasks=1");
    tony_strv_push(argv, "--nodes=1");
    /* Exactly the task's own share, so that the component's other tasks
     * find theirs; without --exact a step takes every CPU of its node. */
    tony_strv_push(argv, "--exact");
    tony_strv_pushf(argv, "--cpus-per-task=%d", c->cpus_per_task);
    tony_strv_pushf(argv, "--mem-per-cpu=%lld", c->mem_per_cpu_mb);
    if (c->gpus_per_task > 0) tony_strv_pushf(argv, "--gpus-per-task=%d", c->gpus_per_task);
    tony_strv_pushf(argv, "--job-name=%s", job_step_name);
    /* The step's output is the executor's own log; srun's own messages
     * ("task 0: Exited with exit code 1") go to the coordinator's. */
    tony_strv_push(argv, "--quiet");
    tony_strv_push(argv, "--");
}
