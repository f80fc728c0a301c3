/* Rendering job JSON (the coordinator's /v1/job) for people. */
#include "client/report.h"

#include <stdarg.h>
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
        if (tb_task && strcmp(tb_task, id) == 0)
            fprintf(out, "      TensorBoard: %s\n", json_string_value(json_object_get(job, "tensorboard_url")));
        free(id);
    }
}

void tony_report_final(FILE *out, const json_t *job) {
    const char *diag = json_string_value(json_object_get(job, "diagnostics"));
    fprintf(out, "tony: job %s %s%s%s\n", json_string_value(json_object_get(job, "app_id")),
            json_string_value(json_object_get(job, "final_status")), diag && *diag ? ": " : "", diag ? diag : "");
}

struct tony_report_follow {
    FILE *out;
    char *grouped; /* the grouped lines last printed */
    char *tb_url;  /* the TensorBoard link last printed */
};

tony_report_follow *tony_report_follow_new(FILE *out) {
    tony_report_follow *f = tony_xcalloc(1, sizeof *f);
    f->out = out;
    return f;
}

void tony_report_follow_free(tony_report_follow *f) {
    if (!f) return;
    free(f->grouped);
    free(f->tb_url);
    free(f);
}

static bool changed(char **last, const char *now) {
    if ((!*last && !now) || (*last && now && strcmp(*last, now) == 0)) return false;
    free(*last);
    *last = tony_strdup(now);
    return true;
}

void tony_report_follow_update(tony_report_follow *f, const json_t *job) {
    char *grouped = tony_report_grouped(job);
    if (*grouped && changed(&f->grouped, grouped)) {
        for (char *line = grouped, *nl; line && *line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            fprintf(f->out, "tony: %.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
        }
    }
    free(grouped);
    const char *tb = json_string_value(json_object_get(job, "tensorboard_url"));
    if (changed(&f->tb_url, tb) && tb)
        fprintf(f->out, "tony: TensorBoard at %s (%s)\n", tb,
                json_string_value(json_object_get(job, "tensorboard_task")));
    fflush(f->out);
}

void tony_report_follow_say(tony_report_follow *f, FILE *stream, const char *fmt, ...) {
    fflush(f->out);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stream, fmt, ap);
    va_end(ap);
    fflush(stream);
}

void tony_report_advice(FILE *out, const json_t *job) {
    json_t *advice = json_object_get(job, "advice");
    if (!json_array_size(advice)) return;
    fprintf(out, "tony: right-sizing (peak use against the request):\n");
    size_t i;
    json_t *a;
    json_array_foreach(advice, i, a) fprintf(out, "tony:   %s\n", json_string_value(json_object_get(a, "text")));
}
