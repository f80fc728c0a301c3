/* Following a job on the user's screen: plain lines for pipes and logs,
 * or a status block redrawn in place on a terminal (ANSI cursor movement:
 * up N lines, clear to the end of a line / of the screen). */
#include "client/follow.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "client/report.h"
#include "common/amapi.h"
#include "common/clock.h"
#include "common/fs.h"
#include "common/http.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "common/strv.h"

#define RESET "\x1b[0m"

struct tony_follow {
    FILE *out;
    bool live;
    bool tty; /* out is a terminal: a person reads the chief's output there */
    /* plain lines */
    char *grouped; /* the grouped lines last printed */
    char *tb_url;  /* the TensorBoard link last printed */
    /* live block */
    char *block;         /* the block on the screen now, NULL when none */
    int drawn;           /* how many lines it takes */
    long long attempt;   /* the job attempt last seen, -1 before the first look */
    char *attempt_diag;  /* why the attempt last seen is ending, once known */
    tony_strv told;      /* "role:index@attempt" failures already reported */
    char *cause;         /* the root cause last printed */
    char *coordinator;   /* what was last said of a coordinator that replaced a lost one */
    /* the chief's output, shown above the block */
    char *shown;         /* "role:index" of the task whose output is shown, once picked */
    char *token;         /* the job's read token; NULL until read */
    char *shown_file;    /* the file its stdout is in (the job JSON's; "" until known) */
    long long offset;    /* how far that file was read */
    tony_buf partial;    /* the start of a line whose newline has not come yet */
};

static bool wants_live(FILE *out) {
    const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");
    if (no_color && *no_color) return false;
    if (!term || !*term || strcmp(term, "dumb") == 0) return false;
    return isatty(fileno(out));
}

tony_follow *tony_follow_new(FILE *out) {
    tony_follow *f = tony_xcalloc(1, sizeof *f);
    f->out = out;
    f->live = wants_live(out);
    f->tty = isatty(fileno(out));
    f->attempt = -1;
    return f;
}

void tony_follow_free(tony_follow *f) {
    if (!f) return;
    fflush(f->out);
    free(f->grouped);
    free(f->tb_url);
    free(f->block);
    free(f->attempt_diag);
    free(f->cause);
    free(f->coordinator);
    free(f->shown);
    free(f->shown_file);
    free(f->token);
    tony_buf_free(&f->partial);
    tony_strv_free(&f->told);
    free(f);
}

void tony_follow_leave(tony_follow *f) {
    free(f->block);
    f->block = NULL;
    f->drawn = 0;
    fflush(f->out);
}

static bool changed(char **last, const char *now) {
    if ((!*last && !now) || (*last && now && strcmp(*last, now) == 0)) return false;
    free(*last);
    *last = tony_strdup(now);
    return true;
}

static const char *str(const json_t *o, const char *key) {
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "";
}

/* ---------- the block ---------- */

static const char *state_color(const char *state) {
    if (strcmp(state, JOB_FINAL_STATUS_FAILED) == 0 || strcmp(state, JOB_FINAL_STATUS_KILLED) == 0) return "\x1b[31m";
    if (strcmp(state, JOB_FINAL_STATUS_SUCCEEDED) == 0) return "\x1b[32m";
    if (strcmp(state, JOB_STATE_RUNNING) == 0) return "\x1b[36m";
    if (strcmp(state, JOB_STATE_FINISHED) == 0) return "\x1b[2m";
    return "\x1b[33m"; /* waiting: NEW, READY, REGISTERING, FINISHING */
}

static void put_state(tony_buf *b, const char *state, bool color) {
    if (color) tony_buf_printf(b, "%s%s" RESET, state_color(state), state);
    else tony_buf_puts(b, state);
}

/* Appends line cut to cols visible columns (escape sequences take none,
 * nor do UTF-8 continuation bytes), then a newline. */
static void put_line(tony_buf *b, const char *line, int cols, bool color) {
    int seen = 0;
    const char *p = line;
    while (*p && seen < cols) {
        if (*p == '\x1b') {
            const char *end = p + 1;
            while (*end && !((*end >= 'a' && *end <= 'z') || (*end >= 'A' && *end <= 'Z'))) end++;
            p = *end ? end + 1 : end;
            continue;
        }
        if (((unsigned char)*p & 0xC0) != 0x80) seen++;
        p++;
    }
    /* the rest of a character cut at the edge */
    while (((unsigned char)*p & 0xC0) == 0x80) p++;
    tony_buf_append(b, line, (size_t)(p - line));
    if (color && *p) tony_buf_puts(b, RESET);
    tony_buf_puts(b, "\n");
}

static void fmt_elapsed(char *out, size_t n, long long ms) {
    long long s = ms < 0 ? 0 : ms / 1000;
    if (s >= 3600) snprintf(out, n, "%lldh%02lldm%02llds", s / 3600, s / 60 % 60, s % 60);
    else if (s >= 60) snprintf(out, n, "%lldm%02llds", s / 60, s % 60);
    else snprintf(out, n, "%llds", s);
}

/* "worker  3 tasks: 1 FAILED [2], 2 RUNNING" for one role, in TonY's
 * attention order, as in the grouped lines (report.h). */
static void role_line(tony_buf *line, const json_t *tasks, const char *role, int width, bool color) {
    size_t i;
    json_t *t;
    int total = 0;
    json_array_foreach(tasks, i, t) total += strcmp(str(t, JOB_TASK_ROLE), role) == 0;
    tony_buf_printf(line, "  %-*s %d task%s: ", width, role, total, total == 1 ? "" : "s");
    bool first = true;
    for (size_t s = 0; s < TONY_REPORT_NSTATES; s++) {
        int n = 0;
        tony_buf idx = {0};
        json_array_foreach(tasks, i, t) {
            if (strcmp(str(t, JOB_TASK_ROLE), role) != 0 ||
                strcmp(str(t, JOB_TASK_STATE), tony_report_state_order[s]) != 0)
                continue;
            tony_buf_printf(&idx, "%s%lld", n ? ", " : "",
                            (long long)json_integer_value(json_object_get(t, JOB_TASK_INDEX)));
            n++;
        }
        if (n) {
            tony_buf_printf(line, "%s%d ", first ? "" : ", ", n);
            put_state(line, tony_report_state_order[s], color);
            /* which ones failed is worth the room; the rest is counted */
            if (s == 0) tony_buf_printf(line, " [%s]", idx.data);
            first = false;
        }
        tony_buf_free(&idx);
    }
}

char *tony_follow_block(const json_t *job, long long now_ms, int cols, bool color) {
    tony_buf b = {0}, line = {0};
    tony_buf_puts(&b, "");
    const char *state = str(job, JOB_STATE), *final = str(job, JOB_FINAL_STATUS);
    long long attempt = json_integer_value(json_object_get(job, JOB_ATTEMPT));
    long long started = json_integer_value(json_object_get(job, JOB_STARTED_MS));
    long long finished = json_integer_value(json_object_get(job, JOB_FINISHED_MS));
    char elapsed[32];
    fmt_elapsed(elapsed, sizeof elapsed, (finished ? finished : now_ms) - started);
    tony_buf_printf(&line, "tony: %s ", str(job, JOB_APP_ID));
    put_state(&line, state, color);
    if (*final && strcmp(final, JOB_FINAL_STATUS_UNDEFINED) != 0) {
        tony_buf_puts(&line, " ");
        put_state(&line, final, color);
    }
    tony_buf_printf(&line, ", attempt %lld", attempt);
    if (attempt > 0) tony_buf_printf(&line, " (%lld restart%s)", attempt, attempt == 1 ? "" : "s");
    tony_buf_printf(&line, ", %s", elapsed);
    put_line(&b, line.data, cols, color);

    /* roles in the order the job lists them, names in one column */
    json_t *tasks = json_object_get(job, JOB_TASKS);
    tony_strv roles = {0};
    size_t i;
    json_t *t;
    int width = 11; /* "TensorBoard" */
    json_array_foreach(tasks, i, t) {
        if (tony_strv_contains(&roles, str(t, JOB_TASK_ROLE))) continue;
        tony_strv_push(&roles, str(t, JOB_TASK_ROLE));
        int w = (int)strlen(str(t, JOB_TASK_ROLE));
        if (w > width) width = w;
    }
    for (size_t r = 0; r < roles.len; r++) {
        line.len = 0;
        role_line(&line, tasks, roles.items[r], width, color);
        put_line(&b, line.data, cols, color);
    }
    tony_strv_free(&roles);
    const char *url = str(job, JOB_URL), *tb = str(job, JOB_TENSORBOARD_URL);
    if (*url && strcmp(state, JOB_STATE_FINISHED) != 0) {
        line.len = 0;
        tony_buf_printf(&line, "  %-*s %s/", width, "web page", url);
        put_line(&b, line.data, cols, color);
    }
    if (*tb) {
        line.len = 0;
        const char *proxied = str(job, JOB_TENSORBOARD_PROXY_URL);
        tony_buf_printf(&line, "  %-*s %s (%s)%s%s", width, "TensorBoard", tb, str(job, JOB_TENSORBOARD_TASK),
                        *proxied ? "; through YARN's proxy: " : "", proxied);
        put_line(&b, line.data, cols, color);
    }
    tony_buf_free(&line);
    return b.data;
}

static int term_cols(FILE *out) {
    struct winsize ws;
    if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10) return ws.ws_col;
    return 80;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* Takes the block off the screen: the cursor goes back to where it began. */
static void erase_block(tony_follow *f) {
    if (f->drawn) fprintf(f->out, "\x1b[%dA\r\x1b[J", f->drawn);
    f->drawn = 0;
}

/* Draws f->block over the one on the screen, line by line, so nothing
 * flickers; a shorter block clears what the longer one left below. */
static void draw_block(tony_follow *f) {
    if (f->drawn) fprintf(f->out, "\x1b[%dA\r", f->drawn);
    for (const char *p = f->block, *nl; p && *p; p = nl + 1) {
        nl = strchr(p, '\n');
        fprintf(f->out, "%.*s\x1b[K\n", (int)(nl - p), p);
    }
    fputs("\x1b[J", f->out);
    f->drawn = count_lines(f->block ? f->block : "");
    fflush(f->out);
}

/* What happened since the last look that deserves a line of its own: task
 * failures (from each task's runs, so that one in an attempt that ended
 * between two looks is not missed), then a restart of the job. */
static void note_events(tony_follow *f, const json_t *job, tony_buf *msgs) {
    long long attempt = json_integer_value(json_object_get(job, JOB_ATTEMPT));
    size_t i, k;
    json_t *t, *run;
    json_array_foreach(json_object_get(job, JOB_TASKS), i, t) {
        long long index = json_integer_value(json_object_get(t, JOB_TASK_INDEX));
        json_array_foreach(json_object_get(t, JOB_TASK_RUNS), k, run) {
            if (strcmp(str(run, JOB_RUN_STATE), JOB_TASK_STATE_FAILED) != 0) continue;
            long long a = json_integer_value(json_object_get(run, JOB_RUN_ATTEMPT));
            char *key = tony_sprintf("%s:%lld@%lld", str(t, JOB_TASK_ROLE), index, a);
            if (!tony_strv_contains(&f->told, key)) {
                tony_strv_push(&f->told, key);
                const char *meaning = str(run, JOB_RUN_EXIT_MEANING);
                const char *diag = a == attempt ? str(t, JOB_TASK_DIAGNOSTICS) : "";
                tony_buf_printf(msgs, "tony: %s:%lld FAILED in attempt %lld%s%s%s%s\n", str(t, JOB_TASK_ROLE), index, a,
                                *meaning ? ": " : "", meaning, *diag ? " - " : "", diag);
            }
            free(key);
        }
    }
    /* every job starts at attempt 0: one seen later on has restarted */
    for (long long a = f->attempt < 0 ? 0 : f->attempt; a < attempt; a++) {
        /* the why, unless a task's failure line above already said it */
        char *suffix = tony_sprintf("@%lld", a);
        bool said = false;
        for (size_t n = 0; n < f->told.len && !said; n++) said = tony_str_ends_with(f->told.items[n], suffix);
        free(suffix);
        const char *why = said || a != f->attempt ? NULL : f->attempt_diag;
        /* an elastic world's change ends an attempt without a failure */
        const char *end = "";
        json_t *e;
        size_t n;
        json_array_foreach(json_object_get(job, JOB_ATTEMPTS), n, e)
            if (json_integer_value(json_object_get(e, JOB_ATT_ATTEMPT)) == a) end = str(e, JOB_ATT_END);
        if (strcmp(end, JOB_END_RESIZED) == 0)
            tony_buf_printf(msgs, "tony: attempt %lld ended for a change of the world%s%s; its tasks restart in place: "
                            "attempt %lld", a, why ? ": " : "", why ? why : "", a + 1);
        else
            tony_buf_printf(msgs, "tony: attempt %lld failed%s%s; restarting the job: attempt %lld", a, why ? ": " : "",
                            why ? why : "", a + 1);
        long long left = json_integer_value(json_object_get(job, JOB_RETRIES_LEFT));
        if (a + 1 == attempt) tony_buf_printf(msgs, " (%lld restart%s left)", left, left == 1 ? "" : "s");
        tony_buf_puts(msgs, "\n");
    }
    if (attempt != f->attempt) {
        free(f->attempt_diag);
        f->attempt_diag = NULL;
    }
    f->attempt = attempt;
    const char *diag = str(job, JOB_DIAGNOSTICS);
    if (*diag) changed(&f->attempt_diag, diag);
}

static void update_live(tony_follow *f, const json_t *job) {
    tony_buf msgs = {0};
    tony_buf_puts(&msgs, "");
    note_events(f, job, &msgs);
    char *block = tony_follow_block(job, tony_wall_ms(), term_cols(f->out) - 1, true);
    if (msgs.len) {
        erase_block(f);
        fputs(msgs.data, f->out);
    }
    if (msgs.len || !f->block || strcmp(block, f->block) != 0) {
        free(f->block);
        f->block = block;
        draw_block(f);
    } else {
        free(block);
    }
    tony_buf_free(&msgs);
}

static void update_plain(tony_follow *f, const json_t *job) {
    char *grouped = tony_report_grouped(job);
    if (*grouped && changed(&f->grouped, grouped)) {
        for (char *line = grouped, *nl; line && *line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            fprintf(f->out, "tony: %.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
        }
    }
    free(grouped);
    const char *tb = json_string_value(json_object_get(job, JOB_TENSORBOARD_URL));
    if (changed(&f->tb_url, tb) && tb) {
        const char *proxied = str(job, JOB_TENSORBOARD_PROXY_URL);
        fprintf(f->out, "tony: TensorBoard at %s (%s)%s%s\n", tb, str(job, JOB_TENSORBOARD_TASK),
                *proxied ? "; through YARN's proxy: " : "", proxied);
    }
    fflush(f->out);
}

static void say(tony_follow *f, FILE *stream, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(tony_follow *f, FILE *stream, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tony_follow_vsay(f, stream, fmt, ap);
    va_end(ap);
}

/* A failed attempt's root cause (the job's root_cause), once, while the job
 * goes on (it restarts); the final diagnostics of a job that failed say the
 * last one. A first restart comes at once (policy.h), often between two
 * looks: a job that then succeeded still says why it had to restart. */
static void note_cause(tony_follow *f, const json_t *job) {
    const char *cause = str(json_object_get(job, JOB_ROOT_CAUSE), JOB_CAUSE_TEXT);
    bool said_at_end = tony_job_is_finished(job) && !tony_job_succeeded(job);
    if (!*cause || said_at_end || !changed(&f->cause, cause)) return;
    say(f, f->out, "tony: %s\n", cause);
}

/* The coordinator was lost and its successor took the tasks back (the
 * job's coordinator_restarted), said once as it waits and once done. */
static void note_coordinator(tony_follow *f, const json_t *job) {
    char *what = tony_report_coordinator(job);
    if (what && changed(&f->coordinator, what)) say(f, f->out, "tony: %s\n", what);
    free(what);
}

void tony_follow_update(tony_follow *f, const json_t *job) {
    if (f->live) update_live(f, job);
    else update_plain(f, job);
    note_cause(f, job);
    note_coordinator(f, job);
}

/* ---------- the chief's output ---------- */

/* The task whose output a person wants to see: the chief (the job JSON
 * marks it: chief:0, else worker:0), a single-node job's command, else the
 * first task listed. NULL while there is none. */
static const json_t *pick_shown(const json_t *job) {
    json_t *tasks = json_object_get(job, JOB_TASKS), *t;
    size_t i;
    json_array_foreach(tasks, i, t) {
        if (json_is_true(json_object_get(t, JOB_TASK_CHIEF)) || strcmp(str(t, JOB_TASK_ROLE), JOB_SINGLE_NODE_ROLE) == 0)
            return t;
    }
    t = json_array_get(tasks, 0);
    return t && *str(t, JOB_TASK_ROLE) ? t : NULL;
}

static const json_t *find_task(const json_t *job, const char *name) {
    json_t *t;
    size_t i;
    json_array_foreach(json_object_get(job, JOB_TASKS), i, t) {
        char *n = tony_sprintf("%s:%lld", str(t, JOB_TASK_ROLE), (long long)json_integer_value(json_object_get(t, JOB_TASK_INDEX)));
        bool same = strcmp(n, name) == 0;
        free(n);
        if (same) return t;
    }
    return NULL;
}

/* Prints the n bytes of text's whole lines above the block, keeping an
 * unfinished last line for later (all of it when final). */
static void show_output(tony_follow *f, const char *text, size_t n, bool final) {
    tony_buf_append(&f->partial, text, n);
    size_t whole = f->partial.len;
    while (whole && f->partial.data[whole - 1] != '\n') whole--;
    if (final && f->partial.len > whole) {
        tony_buf_puts(&f->partial, "\n");
        whole = f->partial.len;
    }
    if (!whole) return;
    erase_block(f);
    fwrite(f->partial.data, 1, whole, f->out);
    memmove(f->partial.data, f->partial.data + whole, f->partial.len - whole);
    f->partial.len -= whole;
    if (f->block) draw_block(f);
    else fflush(f->out);
}

/* How much one look reads: a task that writes faster than that is shown
 * late rather than freezing the block. */
#define OUTPUT_CHUNK (64 * 1024)
#define OUTPUT_CHUNKS_PER_LOOK 4
#define OUTPUT_TIMEOUT_MS 3000

/* Whether path's directory is on this machine: a task's log dir in a job
 * dir this client shares (the local and Slurm backends), where the file
 * outlives the coordinator; a YARN task's is on its node. */
static bool dir_is_here(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path) return false;
    char *dir = tony_strdup(path);
    dir[slash - path] = '\0';
    bool here = access(dir, X_OK) == 0;
    free(dir);
    return here;
}

/* Reads the shown task's stdout from f->offset on into out: from its file
 * when that is here, else through the coordinator's API. *next: the offset
 * that follows what was read (the API's text may be shorter than the bytes
 * it covers: a character cut at the chunk's end comes with the next one),
 * *size: how long the file is now. -1: nothing to be had now. */
static int read_output(tony_follow *f, const char *job_dir, const json_t *job, const json_t *task, long long attempt,
                       tony_buf *out, long long *next, long long *size) {
    const char *path = f->shown_file;
    tony_error err = {{0}};
    if (*path == '/' && dir_is_here(path)) {
        if (tony_read_range(path, f->offset, OUTPUT_CHUNK, out, size, &err)) return -1;
        *next = f->offset + (long long)out->len;
        return 0;
    }
    if (!f->token && tony_jobdir_read_token(job_dir, &f->token, &err)) return -1;
    char *get = tony_sprintf("%s" AM_API_TASKS "%s/%lld/" AM_API_LOG "?" AM_API_LOG_STREAM "=" JOB_TASK_STDOUT
                             "&" AM_API_LOG_OFFSET "=%lld&" AM_API_ATTEMPT "=%lld",
                             str(job, JOB_URL), str(task, JOB_TASK_ROLE),
                             (long long)json_integer_value(json_object_get(task, JOB_TASK_INDEX)), f->offset, attempt);
    tony_http_response r = {0};
    int rc = tony_http_read(get, f->token, OUTPUT_TIMEOUT_MS, &r, &err);
    free(get);
    json_t *chunk = rc == 0 && r.status == 200 ? json_loadb(r.body, r.len, 0, NULL) : NULL;
    tony_http_response_free(&r);
    const char *data = json_string_value(json_object_get(chunk, AM_API_LOG_DATA));
    if (!data) {
        json_decref(chunk);
        return -1;
    }
    tony_buf_puts(out, data);
    *next = json_integer_value(json_object_get(chunk, AM_API_LOG_NEXT));
    *size = json_integer_value(json_object_get(chunk, AM_API_LOG_SIZE));
    json_decref(chunk);
    return 0;
}

/* Shows what f->shown_file has past f->offset, a few chunks at most. */
static void show_new_output(tony_follow *f, const char *job_dir, const json_t *job, const json_t *task, long long attempt) {
    for (int n = 0; n < OUTPUT_CHUNKS_PER_LOOK; n++) {
        tony_buf chunk = {0};
        long long next = f->offset, size = 0;
        if (read_output(f, job_dir, job, task, attempt, &chunk, &next, &size)) {
            tony_buf_free(&chunk);
            return;
        }
        if (chunk.len) {
            if (f->offset == 0 && f->partial.len == 0) {
                if (attempt > 0) say(f, f->out, "tony: %s's output in attempt %lld:\n", f->shown, attempt);
                else say(f, f->out, "tony: %s's output:\n", f->shown);
            }
            show_output(f, chunk.data, chunk.len, false);
        }
        tony_buf_free(&chunk);
        if (next <= f->offset) return;
        f->offset = next;
        if (next >= size) return;
    }
}

void tony_follow_output(tony_follow *f, const char *job_dir, const json_t *job, bool final) {
    if (!f->tty) return;
    if (!f->shown) {
        const json_t *t = pick_shown(job);
        if (!t) return;
        f->shown = tony_sprintf("%s:%lld", str(t, JOB_TASK_ROLE), (long long)json_integer_value(json_object_get(t, JOB_TASK_INDEX)));
    }
    const json_t *task = find_task(job, f->shown);
    if (!task) return;
    long long attempt = json_integer_value(json_object_get(job, JOB_ATTEMPT));
    /* A restart in place gives a local task a new log dir per attempt (what
     * the old file has left is shown first); a YARN container's file goes
     * on, a line in it saying where the attempt starts. */
    const char *file = str(task, JOB_TASK_STDOUT);
    if (!f->shown_file || strcmp(file, f->shown_file) != 0) {
        if (f->shown_file && *f->shown_file == '/' && dir_is_here(f->shown_file))
            show_new_output(f, job_dir, job, task, attempt);
        show_output(f, "", 0, true);
        free(f->shown_file);
        f->shown_file = tony_strdup(file);
        f->offset = 0;
    }
    show_new_output(f, job_dir, job, task, attempt);
    if (final) show_output(f, "", 0, true);
}

void tony_follow_vsay(tony_follow *f, FILE *stream, const char *fmt, va_list ap) {
    if (f->live) erase_block(f);
    fflush(f->out);
    vfprintf(stream, fmt, ap);
    fflush(stream);
    if (f->live && f->block) draw_block(f);
}
