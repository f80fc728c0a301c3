/* Rendering job JSON (the coordinator's /v1/job) for people. */
#include "client/report.h"

#include <stdlib.h>
#include <string.h>

#include "common/jobjson.h"
#include "common/strv.h"

const char *const tony_report_state_order[TONY_REPORT_NSTATES] = {
    JOB_TASK_STATE_FAILED,  JOB_TASK_STATE_SUCCEEDED, JOB_TASK_STATE_FINISHED,
    JOB_TASK_STATE_RUNNING, JOB_TASK_STATE_NEW,       JOB_TASK_STATE_READY};

/* A string field of the job JSON, "?" where it is missing or not a string:
 * what is printed comes from status.json or a coordinator's answer, which
 * may be damaged (the fuzz harness jobstate feeds it anything). */
static const char *field(const json_t *o, const char *key) {
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "?";
}

char *tony_report_grouped(const json_t *job) {
    tony_buf b = {0};
    tony_buf_puts(&b, "");
    json_t *tasks = json_object_get(job, JOB_TASKS);
    for (size_t s = 0; s < TONY_REPORT_NSTATES; s++) {
        tony_buf line = {0};
        const char *cur_role = NULL;
        size_t i;
        json_t *t;
        json_array_foreach(tasks, i, t) {
            const char *state = field(t, JOB_TASK_STATE);
            if (strcmp(state, tony_report_state_order[s]) != 0) continue;
            const char *role = field(t, JOB_TASK_ROLE);
            int index = (int)json_integer_value(json_object_get(t, JOB_TASK_INDEX));
            if (!cur_role || strcmp(cur_role, role) != 0) {
                if (cur_role) tony_buf_puts(&line, "] ");
                tony_buf_printf(&line, "%s [%d", role, index);
                cur_role = role;
            } else {
                tony_buf_printf(&line, ", %d", index);
            }
        }
        if (cur_role) {
            tony_buf_printf(&b, "%s%s: %s]", b.len ? "\n" : "", tony_report_state_order[s], line.data);
        }
        tony_buf_free(&line);
    }
    return b.data;
}

/* Bad nodes (the job's "excluded_nodes"): kept off, or not, and why. */
static void report_nodes(FILE *out, const json_t *job) {
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(job, JOB_EXCLUDED_NODES), i, e) {
        const char *node = field(e, JOB_EXCL_NODE);
        const char *task = field(e, JOB_EXCL_TASK);
        const char *reason = field(e, JOB_EXCL_REASON);
        const char *refused = json_string_value(json_object_get(e, JOB_EXCL_REFUSED));
        int attempt = (int)json_integer_value(json_object_get(e, JOB_EXCL_ATTEMPT));
        if (refused)
            fprintf(out, "  node %s is bad but was not excluded (%s): %s in attempt %d: %s\n", node, refused, task,
                    attempt, reason);
        else
            fprintf(out, "  node %s excluded from later containers: %s in attempt %d: %s\n", node, task, attempt,
                    reason);
    }
}

char *tony_report_coordinator(const json_t *job) {
    const json_t *c = json_object_get(job, JOB_COORDINATOR_RESTARTED);
    if (!c) return NULL;
    long long adopted = json_integer_value(json_object_get(c, JOB_COORD_ADOPTED));
    if (json_is_true(json_object_get(c, JOB_COORD_WAITING)))
        return tony_sprintf("the coordinator was lost and restarted: %lld task(s) came back so far", adopted);
    return tony_sprintf("the coordinator was lost and restarted: %lld of %zu task(s) adopted without a restart",
                        adopted, json_array_size(json_object_get(job, JOB_TASKS)));
}

void tony_report_tasks(FILE *out, const json_t *job) {
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(job, JOB_TASKS), i, t) {
        const char *meaning = json_string_value(json_object_get(t, JOB_TASK_EXIT_MEANING));
        const char *diag = json_string_value(json_object_get(t, JOB_TASK_DIAGNOSTICS));
        /* a task stopped because another failed first says so, not its SIGTERM */
        const char *by = json_string_value(json_object_get(t, JOB_TASK_STOPPED_BY));
        char *stopped = by ? tony_sprintf("stopped: %s failed first", by) : NULL;
        fprintf(out, "  %s:%lld %-9s %s\n", field(t, JOB_TASK_ROLE),
                (long long)json_integer_value(json_object_get(t, JOB_TASK_INDEX)),
                field(t, JOB_TASK_STATE), stopped ? stopped : meaning ? meaning : "");
        free(stopped);
        if (diag && strcmp(field(t, JOB_TASK_STATE), JOB_TASK_STATE_FAILED) == 0)
            fprintf(out, "      %s\n", diag);
        const char *so = json_string_value(json_object_get(t, JOB_TASK_STDOUT));
        const char *se = json_string_value(json_object_get(t, JOB_TASK_STDERR));
        if (so) fprintf(out, "      logs: %s %s\n", so, se ? se : "");
        char *id = tony_sprintf("%s:%lld", field(t, JOB_TASK_ROLE),
                                (long long)json_integer_value(json_object_get(t, JOB_TASK_INDEX)));
        const char *tb_task = json_string_value(json_object_get(job, JOB_TENSORBOARD_TASK));
        if (tb_task && strcmp(tb_task, id) == 0) {
            const char *proxied = json_string_value(json_object_get(job, JOB_TENSORBOARD_PROXY_URL));
            fprintf(out, "      TensorBoard: %s%s%s\n", field(job, JOB_TENSORBOARD_URL),
                    proxied ? "; through YARN's proxy: " : "", proxied ? proxied : "");
        }
        free(id);
    }
    /* A running job that restarted: why its last attempt failed (once the
     * job is over, its diagnostics say it, with the root cause). */
    const char *cause = json_string_value(json_object_get(json_object_get(job, JOB_ROOT_CAUSE), JOB_CAUSE_TEXT));
    if (cause && !tony_job_is_finished(job)) fprintf(out, "  last failed attempt: %s\n", cause);
    report_nodes(out, job);
    char *coordinator = tony_report_coordinator(job);
    if (coordinator) fprintf(out, "  %s\n", coordinator);
    free(coordinator);
}

/* The history's writes failed (a full disk): the portal and `tony history`
 * show less of this job, or nothing. */
static void report_history_error(FILE *out, const json_t *job) {
    const char *herr = json_string_value(json_object_get(job, JOB_HISTORY_ERROR));
    if (herr) fprintf(out, "tony: warning: the job's history is incomplete: %s\n", herr);
}

void tony_report_final(FILE *out, const json_t *job) {
    const char *diag = json_string_value(json_object_get(job, JOB_DIAGNOSTICS));
    fprintf(out, "tony: job %s %s%s%s\n", field(job, JOB_APP_ID),
            field(job, JOB_FINAL_STATUS), diag && *diag ? ": " : "", diag ? diag : "");
    /* The coordinator's last write of status.json failed (a full disk):
     * what is on disk is older than what was just said. */
    const char *serr = json_string_value(json_object_get(job, JOB_STATUS_ERROR));
    if (serr)
        fprintf(out,
                "tony: error: the coordinator could not save the job's state: %s. `tony status` will show an older "
                "state of this job; free space there (the job's tasks may have failed for the same reason)\n",
                serr);
    report_history_error(out, job);
}

void tony_report_advice(FILE *out, const json_t *job) {
    json_t *advice = json_object_get(job, JOB_ADVICE);
    if (!json_array_size(advice)) return;
    fprintf(out, "tony: right-sizing (peak use against the request):\n");
    size_t i;
    json_t *a;
    json_array_foreach(advice, i, a)
        fprintf(out, "tony:   %s\n", field(a, JOB_ADVICE_TEXT));
}

char *tony_report_framework(const char *framework, bool is_default) {
    return tony_sprintf("%s%s", framework && *framework ? framework : "?", is_default ? " (default)" : "");
}

void tony_report_name(FILE *out, const json_t *job) {
    const char *name = json_string_value(json_object_get(job, JOB_NAME));
    char *fw = tony_report_framework(json_string_value(json_object_get(job, JOB_FRAMEWORK)),
                                     json_is_true(json_object_get(job, JOB_FRAMEWORK_DEFAULT)));
    bool has_fw = json_string_value(json_object_get(job, JOB_FRAMEWORK)) != NULL;
    if (name && *name) fprintf(out, "name: %s%s%s\n", name, has_fw ? ", framework: " : "", has_fw ? fw : "");
    else if (has_fw) fprintf(out, "framework: %s\n", fw);
    free(fw);
}

void tony_report_cause(FILE *out, const json_t *job) {
    const char *text = json_string_value(json_object_get(json_object_get(job, JOB_ROOT_CAUSE), JOB_CAUSE_TEXT));
    if (!text || !tony_job_is_finished(job) || tony_job_succeeded(job)) return;
    fprintf(out, "%s\n", text);
}
