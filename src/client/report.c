/* Rendering job JSON (the coordinator's /v1/job) for people. */
#include "client/report.h"

#include <stdlib.h>
#include <string.h>

#include "common/strv.h"

static const char *order[] = {"FAILED", "SUCCEEDED", "FINISHED", "RUNNING", "NEW", "READY"};

char *tony_report_grouped(const json_t *job) {
    tony_buf b = {0};
    tony_buf_puts(&b, "");
    json_t *tasks = json_object_get(job, "tasks");
    for (size_t s = 0; s < sizeof order / sizeof *order; s++) {
        tony_buf line = {0};
        const char *cur_role = NULL;
        size_t i;
        json_t *t;
        json_array_foreach(tasks, i, t) {
            if (strcmp(json_string_value(json_object_get(t, "state")), order[s]) != 0) continue;
            const char *role = json_string_value(json_object_get(t, "role"));
            int index = (int)json_integer_value(json_object_get(t, "index"));
            if (!cur_role || strcmp(cur_role, role) != 0) {
                if (cur_role) tony_buf_puts(&line, "] ");
                tony_buf_printf(&line, "%s [%d", role, index);
                cur_role = role;
            } else {
                tony_buf_printf(&line, ", %d", index);
            }
        }
        if (cur_role) {
            tony_buf_printf(&b, "%s%s: %s]", b.len ? "\n" : "", order[s], line.data);
        }
        tony_buf_free(&line);
    }
    return b.data;
}

/* Bad nodes (the job's "excluded_nodes"): kept off, or not, and why. */
static void report_nodes(FILE *out, const json_t *job) {
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(job, "excluded_nodes"), i, e) {
        const char *node = json_string_value(json_object_get(e, "node"));
        const char *task = json_string_value(json_object_get(e, "task"));
        const char *reason = json_string_value(json_object_get(e, "reason"));
        const char *refused = json_string_value(json_object_get(e, "refused"));
        int attempt = (int)json_integer_value(json_object_get(e, "attempt"));
        if (refused)
            fprintf(out, "  node %s is bad but was not excluded (%s): %s in attempt %d: %s\n", node, refused, task,
                    attempt, reason);
        else
            fprintf(out, "  node %s excluded from later containers: %s in attempt %d: %s\n", node, task, attempt,
                    reason);
    }
}

char *tony_report_coordinator(const json_t *job) {
    const json_t *c = json_object_get(job, "coordinator_restarted");
    if (!c) return NULL;
    long long adopted = json_integer_value(json_object_get(c, "adopted"));
    if (json_is_true(json_object_get(c, "waiting")))
        return tony_sprintf("the coordinator was lost and restarted: %lld task(s) came back so far", adopted);
    return tony_sprintf("the coordinator was lost and restarted: %lld of %zu task(s) adopted without a restart",
                        adopted, json_array_size(json_object_get(job, "tasks")));
}

void tony_report_tasks(FILE *out, const json_t *job) {
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(job, "tasks"), i, t) {
        const char *meaning = json_string_value(json_object_get(t, "exit_meaning"));
        const char *diag = json_string_value(json_object_get(t, "diagnostics"));
        fprintf(out, "  %s:%lld %-9s %s\n", json_string_value(json_object_get(t, "role")),
                (long long)json_integer_value(json_object_get(t, "index")),
                json_string_value(json_object_get(t, "state")), meaning ? meaning : "");
        if (diag && strcmp(json_string_value(json_object_get(t, "state")), "FAILED") == 0)
            fprintf(out, "      %s\n", diag);
        const char *so = json_string_value(json_object_get(t, "stdout"));
        const char *se = json_string_value(json_object_get(t, "stderr"));
        if (so) fprintf(out, "      logs: %s %s\n", so, se ? se : "");
        char *id = tony_sprintf("%s:%lld", json_string_value(json_object_get(t, "role")),
                                (long long)json_integer_value(json_object_get(t, "index")));
        const char *tb_task = json_string_value(json_object_get(job, "tensorboard_task"));
        if (tb_task && strcmp(tb_task, id) == 0) {
            const char *proxied = json_string_value(json_object_get(job, "tensorboard_proxy_url"));
            fprintf(out, "      TensorBoard: %s%s%s\n", json_string_value(json_object_get(job, "tensorboard_url")),
                    proxied ? "; through YARN's proxy: " : "", proxied ? proxied : "");
        }
        free(id);
    }
    /* A running job that restarted: why its last attempt failed (once the
     * job is over, its diagnostics say it, with the root cause). */
    const char *state = json_string_value(json_object_get(job, "state"));
    const char *cause = json_string_value(json_object_get(json_object_get(job, "root_cause"), "text"));
    if (cause && (!state || strcmp(state, "FINISHED") != 0)) fprintf(out, "  last failed attempt: %s\n", cause);
    report_nodes(out, job);
    char *coordinator = tony_report_coordinator(job);
    if (coordinator) fprintf(out, "  %s\n", coordinator);
    free(coordinator);
}

void tony_report_final(FILE *out, const json_t *job) {
    const char *diag = json_string_value(json_object_get(job, "diagnostics"));
    fprintf(out, "tony: job %s %s%s%s\n", json_string_value(json_object_get(job, "app_id")),
            json_string_value(json_object_get(job, "final_status")), diag && *diag ? ": " : "", diag ? diag : "");
    /* The coordinator's last write of status.json failed (a full disk):
     * what is on disk is older than what was just said. */
    const char *serr = json_string_value(json_object_get(job, "status_error"));
    if (serr)
        fprintf(out,
                "tony: error: the coordinator could not save the job's state: %s. `tony status` will show an older "
                "state of this job; free space there (the job's tasks may have failed for the same reason)\n",
                serr);
}

void tony_report_advice(FILE *out, const json_t *job) {
    json_t *advice = json_object_get(job, "advice");
    if (!json_array_size(advice)) return;
    fprintf(out, "tony: right-sizing (peak use against the request):\n");
    size_t i;
    json_t *a;
    json_array_foreach(advice, i, a) fprintf(out, "tony:   %s\n", json_string_value(json_object_get(a, "text")));
}
