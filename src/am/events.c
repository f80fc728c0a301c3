/* The event log as a ring: seq numbers keep growing, memory does not. */
#include "am/events.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fs.h"
#include "common/log.h"
#include "common/strv.h"

struct am_events {
    am_event *ring;
    size_t cap, len, head; /* head: the oldest kept event's slot */
    long long next_seq;
    FILE *log;
    char *log_path;
};

am_events *am_events_new(size_t keep) {
    am_events *e = tony_xcalloc(1, sizeof *e);
    e->cap = keep ? keep : 1;
    e->ring = tony_xcalloc(e->cap, sizeof *e->ring);
    e->next_seq = 1;
    return e;
}

static void event_clear(am_event *ev) {
    free(ev->type);
    free(ev->task);
    free(ev->text);
    json_decref(ev->data);
}

void am_events_free(am_events *e) {
    if (!e) return;
    for (size_t i = 0; i < e->len; i++) event_clear(&e->ring[(e->head + i) % e->cap]);
    free(e->ring);
    if (e->log) fclose(e->log);
    free(e->log_path);
    free(e);
}

int am_events_open_log(am_events *e, const char *path, tony_error *err) {
    FILE *f = tony_fopen_perm(path, O_WRONLY | O_CREAT | O_APPEND, 0640, "a"); /* as the history's other files */
    if (!f) return tony_err(err, "cannot write the event log %s: %m", path);
    if (e->log) fclose(e->log);
    free(e->log_path);
    e->log = f;
    e->log_path = tony_strdup(path);
    return 0;
}

json_t *am_event_json(const am_event *ev) {
    json_t *o = json_pack("{s:I,s:I,s:s,s:s?,s:i,s:s}", "seq", (json_int_t)ev->seq, "t_ms", (json_int_t)ev->t_ms,
                          "type", ev->type, "task", ev->task, "attempt", ev->attempt, "text", ev->text);
    if (ev->data) json_object_update_missing(o, ev->data);
    return o;
}

static const am_event *vadd(am_events *e, long long t_ms, const char *type, const char *task, int attempt,
                            json_t *data, const char *fmt, va_list ap) {
    am_event *ev;
    if (e->len == e->cap) {
        ev = &e->ring[e->head];
        event_clear(ev);
        e->head = (e->head + 1) % e->cap;
    } else {
        ev = &e->ring[(e->head + e->len++) % e->cap];
    }
    char *text;
    if (vasprintf(&text, fmt, ap) < 0) text = tony_strdup("");
    *ev = (am_event){e->next_seq++, t_ms, tony_strdup(type), tony_strdup(task), attempt, text, data};
    if (e->log) {
        json_t *j = am_event_json(ev);
        /* Every line is flushed whole, so the file's size is where the
         * last whole line ends (an append stream's ftell may not say). */
        struct stat st;
        long good = fstat(fileno(e->log), &st) == 0 ? (long)st.st_size : -1;
        if (json_dumpf(j, e->log, JSON_COMPACT) || fputc('\n', e->log) == EOF || fflush(e->log)) {
            int err = errno;
            tony_warn("cannot write the event log %s (%s); it stops here, after its last whole line", e->log_path,
                      strerror(err));
            tony_file_cut_back(e->log, good); /* no half line at its end */
            fclose(e->log);
            e->log = NULL;
        }
        json_decref(j);
    }
    return ev;
}

const am_event *am_events_add(am_events *e, long long t_ms, const char *type, const char *task, int attempt,
                              const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const am_event *ev = vadd(e, t_ms, type, task, attempt, NULL, fmt, ap);
    va_end(ap);
    return ev;
}

const am_event *am_events_add_data(am_events *e, long long t_ms, const char *type, const char *task, int attempt,
                                   json_t *data, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const am_event *ev = vadd(e, t_ms, type, task, attempt, data, fmt, ap);
    va_end(ap);
    return ev;
}

json_t *am_events_since_json(const am_events *e, long long since, size_t limit) {
    json_t *arr = json_array();
    long long next = since < 0 ? 0 : since;
    for (size_t i = 0; i < e->len && json_array_size(arr) < limit; i++) {
        const am_event *ev = &e->ring[(e->head + i) % e->cap];
        if (ev->seq <= since) continue;
        json_array_append_new(arr, am_event_json(ev));
        next = ev->seq;
    }
    /* a since beyond the newest (a restarted coordinator) starts over */
    if (since >= e->next_seq) next = e->next_seq - 1;
    return json_pack("{s:o,s:I}", "events", arr, "next", (json_int_t)next);
}
