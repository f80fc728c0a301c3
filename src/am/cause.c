/* The root cause of a failed attempt as text and JSON (see cause.h). */
#include "am/cause.h"

#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "common/amapi.h"
#include "common/jobjson.h"
#include "common/lastwords.h"
#include "common/log.h"
#include "common/strv.h"

static char *dup_or_null(const char *s) { return s && *s ? tony_strdup(s) : NULL; }

void am_cause_free(am_root_cause *c) {
    free(c->task);
    free(c->host);
    free(c->error);
    free(c->stderr_tail);
    free(c->diagnostics);
    free(c->start_log);
    free(c->start_log_path);
    free(c->image);
    memset(c, 0, sizeof *c);
    c->command_started = true;
}

bool am_cause_command_ran(const am_task *t) {
    bool exited = t->exit_status >= 1 && t->exit_status <= 255;
    return t->started_ms != 0 || t->result_reported || !exited ||
           (t->host != NULL && t->exit_status != AM_EXEC_EXIT_NOT_STARTED);
}

void am_cause_set(am_root_cause *c, const am_task *t, int attempt) {
    am_cause_free(c);
    c->task = tony_sprintf("%s:%d", t->role->name, t->index);
    c->attempt = attempt;
    c->exit_status = t->exit_status;
    c->host = dup_or_null(t->host);
    c->error = dup_or_null(t->error_report);
    c->stderr_tail = dup_or_null(t->stderr_tail);
    c->diagnostics = dup_or_null(t->diagnostics);
    c->command_started = am_cause_command_ran(t);
    c->start_log = dup_or_null(t->start_log);
    c->start_log_path = dup_or_null(t->start_log_path);
    c->image = dup_or_null(t->role->docker_image);
}

void am_cause_set_single(am_root_cause *c, int attempt, int exit_status, const char *host, const char *error,
                         const char *stderr_tail) {
    am_cause_free(c);
    c->task = tony_sprintf("%s:0", JOB_SINGLE_NODE_ROLE);
    c->attempt = attempt;
    c->exit_status = exit_status;
    c->host = dup_or_null(host);
    c->error = dup_or_null(error);
    c->stderr_tail = dup_or_null(stderr_tail);
    c->command_started = true;
}

/* How the text says where a task's own last words start; each of their
 * lines then follows indented (put_indented). */
#define CAUSE_ERROR_FILE " Its error file (torch's @record) says:"
#define CAUSE_STDERR_TAIL " The end of its stderr:"
#define CAUSE_INDENT "\n    "
#define CAUSE_OUTPUT_LEFT_OUT \
    " Its last words are left out here, where others may read them: `tony status` shows them to the job's owner."

/* Each line of text, indented, on b. */
static void put_indented(tony_buf *b, const char *text) {
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        tony_buf_puts(b, CAUSE_INDENT);
        tony_buf_append(b, p, n);
        p += n + (nl != NULL);
    }
}

/* Why a command never ran, as its container's exit says: a sentence. */
static const char *not_started_why(const am_root_cause *c, char *buf, size_t n) {
    char meaning[160];
    int s = c->exit_status;
    if (s == AM_EXEC_EXIT_NOT_STARTED)
        snprintf(buf, n, "Its executor gave up before running it (exit code %d)", s);
    /* podman's and docker's own exit codes for a container that did not start */
    else if (c->image && s == 125)
        snprintf(buf, n, "The container runtime could not start its container of image %s (exit code 125)", c->image);
    else if (c->image && s == 126)
        snprintf(buf, n, "The container runtime could not run tony's executor in image %s (exit code 126)", c->image);
    else if (c->image && s == 127)
        snprintf(buf, n, "The container runtime found no tony executor to run in image %s (exit code 127)", c->image);
    else
        snprintf(buf, n, "Its container ended before the command ran (%s)",
                 tony_exit_status_meaning(s, meaning, sizeof meaning));
    return buf;
}

/* The error that stopped it, in one line: the executor's last ERROR, else
 * the log's last line (a container runtime's own message); NULL. */
static char *not_started_error(const am_root_cause *c) {
    if (!c->start_log) return NULL;
    char *e = tony_log_last_message(c->start_log, TONY_LOG_ERROR);
    if (e) return e;
    const char *last = strrchr(c->start_log, '\n');
    return tony_strdup(last ? last + 1 : c->start_log);
}

static char *not_started_text(const am_root_cause *c) {
    char why[384];
    not_started_why(c, why, sizeof why);
    char *error = not_started_error(c);
    tony_buf b = {0};
    tony_buf_printf(&b, JOB_CAUSE_TEXT_PREFIX "%s could not start its command in attempt %d%s%s", c->task, c->attempt,
                    c->host ? " on " : "", c->host ? c->host : "");
    if (error) tony_buf_printf(&b, ": %s. %s.", error, why);
    else tony_buf_printf(&b, ". %s.", why);
    free(error);
    if (c->start_log) {
        tony_buf_puts(&b, " The end of its " TONY_EXECUTOR_LOG ":");
        put_indented(&b, c->start_log);
        if (c->start_log_path) tony_buf_printf(&b, "\nAll of it: %s", c->start_log_path);
    } else if (c->stderr_tail) {
        tony_buf_puts(&b, " The end of its stderr:");
        put_indented(&b, c->stderr_tail);
    } else {
        tony_buf_puts(&b, " Its " TONY_EXECUTOR_LOG ", in the task's log dir, says why.");
    }
    return b.data;
}

char *am_cause_text(const am_root_cause *c) {
    if (!c->task) return NULL;
    if (!c->command_started) return not_started_text(c);
    char meaning[160];
    tony_buf b = {0};
    tony_buf_printf(&b, JOB_CAUSE_TEXT_PREFIX "%s failed first in attempt %d%s%s: %s.", c->task, c->attempt,
                    c->host ? " on " : "", c->host ? c->host : "",
                    c->exit_status == TONY_EXIT_INVALID ? "its container was lost (no exit status)"
                                                        : tony_exit_status_explain(c->exit_status, meaning, sizeof meaning));
    /* torch's own report names the exception and where it was raised: it
     * says more than the stderr, which may be any rank's noise */
    if (c->error) {
        tony_buf_puts(&b, CAUSE_ERROR_FILE);
        put_indented(&b, c->error);
    } else if (c->stderr_tail) {
        tony_buf_puts(&b, CAUSE_STDERR_TAIL);
        put_indented(&b, c->stderr_tail);
    } else {
        tony_buf_puts(&b, " It wrote nothing to stderr that tony could read.");
    }
    return b.data;
}

char *am_cause_without_output(const char *diagnostics) {
    tony_buf b = {0};
    const char *p = diagnostics ? diagnostics : "";
    for (;;) {
        const char *e = strstr(p, CAUSE_ERROR_FILE), *t = strstr(p, CAUSE_STDERR_TAIL);
        const char *at = e && (!t || e < t) ? e : t;
        if (!at) break;
        tony_buf_append(&b, p, (size_t)(at - p));
        tony_buf_puts(&b, CAUSE_OUTPUT_LEFT_OUT);
        p = at + strlen(at == e ? CAUSE_ERROR_FILE : CAUSE_STDERR_TAIL);
        /* every indented line that follows is theirs */
        while (strncmp(p, CAUSE_INDENT, strlen(CAUSE_INDENT)) == 0) {
            const char *nl = strchr(p + 1, '\n');
            p = nl ? nl : p + strlen(p);
        }
    }
    tony_buf_puts(&b, p);
    return b.data ? b.data : tony_strdup("");
}

json_t *am_cause_json(const am_root_cause *c) {
    if (!c->task) return NULL;
    char meaning[384];
    json_t *o = json_pack("{s:s,s:i}", JOB_CAUSE_TASK, c->task, JOB_CAUSE_ATTEMPT, c->attempt);
    if (c->exit_status != TONY_EXIT_INVALID) {
        json_object_set_new(o, JOB_CAUSE_EXIT_STATUS, json_integer(c->exit_status));
        json_object_set_new(o, JOB_CAUSE_EXIT_MEANING,
                            json_string(c->command_started ? tony_exit_status_explain(c->exit_status, meaning, sizeof meaning)
                                                           : not_started_why(c, meaning, sizeof meaning)));
    }
    if (!c->command_started) {
        json_object_set_new(o, JOB_CAUSE_COMMAND_STARTED, json_false());
        if (c->start_log) json_object_set_new(o, JOB_CAUSE_EXECUTOR_LOG, json_string(c->start_log));
        if (c->start_log_path) json_object_set_new(o, JOB_CAUSE_EXECUTOR_LOG_PATH, json_string(c->start_log_path));
    }
    if (c->host) json_object_set_new(o, JOB_CAUSE_HOST, json_string(c->host));
    if (c->error) json_object_set_new(o, JOB_CAUSE_ERROR, json_string(c->error));
    if (c->stderr_tail) json_object_set_new(o, JOB_CAUSE_STDERR_TAIL, json_string(c->stderr_tail));
    if (c->diagnostics) json_object_set_new(o, JOB_CAUSE_DIAGNOSTICS, json_string(c->diagnostics));
    char *text = am_cause_text(c);
    json_object_set_new(o, JOB_CAUSE_TEXT, json_string(text));
    free(text);
    return o;
}
