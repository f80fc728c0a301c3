/* TonY's .jhist files through avro-c: one generic record value is filled per
 * event and appended; reading walks the generic values into JSON. */
#include "common/jhist.h"

#include "common/histloc.h"

#include <avro.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/avroread.h"
#include "common/fs.h"
#include "common/strv.h"

/* Written from the field list of TonY's Event.avsc and its four event
 * records (contract §6.1); the union's branch order is the enum's order. */
static const char schema_json[] =
    "{\"type\":\"record\",\"name\":\"Event\",\"namespace\":\"com.linkedin.tony.events\",\"fields\":["
    "{\"name\":\"type\",\"type\":{\"type\":\"enum\",\"name\":\"EventType\",\"symbols\":"
    "[\"APPLICATION_INITED\",\"APPLICATION_FINISHED\",\"TASK_STARTED\",\"TASK_FINISHED\"]}},"
    "{\"name\":\"event\",\"type\":["
    "{\"type\":\"record\",\"name\":\"ApplicationInited\",\"fields\":["
    "{\"name\":\"applicationId\",\"type\":\"string\"},{\"name\":\"numTasks\",\"type\":\"int\"},"
    "{\"name\":\"host\",\"type\":\"string\"},{\"name\":\"containerID\",\"type\":[\"null\",\"string\"],\"default\":null}]},"
    "{\"type\":\"record\",\"name\":\"ApplicationFinished\",\"fields\":["
    "{\"name\":\"applicationId\",\"type\":\"string\"},{\"name\":\"finishedTasks\",\"type\":\"int\"},"
    "{\"name\":\"failedTasks\",\"type\":\"int\"},{\"name\":\"metrics\",\"type\":{\"type\":\"array\",\"items\":"
    "{\"type\":\"record\",\"name\":\"Metric\",\"fields\":[{\"name\":\"name\",\"type\":\"string\"},"
    "{\"name\":\"value\",\"type\":\"double\"}]}}}]},"
    "{\"type\":\"record\",\"name\":\"TaskStarted\",\"fields\":["
    "{\"name\":\"taskType\",\"type\":\"string\"},{\"name\":\"taskIndex\",\"type\":\"int\"},"
    "{\"name\":\"host\",\"type\":\"string\"},{\"name\":\"containerID\",\"type\":[\"null\",\"string\"],\"default\":null}]},"
    "{\"type\":\"record\",\"name\":\"TaskFinished\",\"fields\":["
    "{\"name\":\"taskType\",\"type\":\"string\"},{\"name\":\"taskIndex\",\"type\":\"int\"},"
    "{\"name\":\"status\",\"type\":\"string\"},{\"name\":\"metrics\",\"type\":{\"type\":\"array\",\"items\":\"Metric\"}},"
    "{\"name\":\"containerDiagnostic\",\"type\":[\"null\",\"string\"],\"default\":null}]}"
    "]},"
    "{\"name\":\"timestamp\",\"type\":\"long\"}]}";

enum { EV_APPLICATION_INITED, EV_APPLICATION_FINISHED, EV_TASK_STARTED, EV_TASK_FINISHED };

const char *tony_jhist_schema(void) { return schema_json; }

char *tony_jhist_inprogress_name(const char *app_id, long long start_ms, const char *user) {
    return tony_sprintf("%s-%lld-%s%s", app_id, start_ms, user, TONY_JHIST_INPROGRESS_SUFFIX);
}

char *tony_jhist_final_name(const char *app_id, long long start_ms, long long end_ms, const char *user,
                            const char *status) {
    return tony_sprintf("%s-%lld-%lld-%s-%s%s", app_id, start_ms, end_ms, user, status, TONY_JHIST_SUFFIX);
}

/* Copies the text up to the next '-' into out; advances *p past it. */
static bool take_field(const char **p, char *out, size_t n) {
    const char *dash = strchr(*p, '-');
    if (!dash || dash == *p || (size_t)(dash - *p) >= n) return false;
    memcpy(out, *p, (size_t)(dash - *p));
    out[dash - *p] = '\0';
    *p = dash + 1;
    return true;
}

static bool take_ms(const char **p, long long *out) {
    char num[32];
    return take_field(p, num, sizeof num) && tony_parse_ll(num, out) && *out >= 0;
}

bool tony_jhist_parse_name(const char *name, tony_jhist_meta *m) {
    memset(m, 0, sizeof *m);
    size_t n = strlen(name), sl;
    m->in_progress = tony_str_ends_with(name, TONY_JHIST_INPROGRESS_SUFFIX);
    if (m->in_progress) sl = strlen(TONY_JHIST_INPROGRESS_SUFFIX);
    else if (tony_str_ends_with(name, TONY_JHIST_SUFFIX)) sl = strlen(TONY_JHIST_SUFFIX);
    else return false;
    char *base = strndup(name, n - sl);
    const char *p = base;
    bool ok = take_field(&p, m->app_id, sizeof m->app_id) && take_ms(&p, &m->start_ms);
    if (ok && m->in_progress) {
        ok = *p && strlen(p) < sizeof m->user;
        if (ok) snprintf(m->user, sizeof m->user, "%s", p);
        snprintf(m->status, sizeof m->status, "RUNNING");
    } else if (ok) {
        const char *last = strrchr(p, '-');
        ok = take_ms(&p, &m->end_ms) && last && last >= p && last > p && strlen(last + 1) > 0 &&
             strlen(last + 1) < sizeof m->status && (size_t)(last - p) < sizeof m->user;
        if (ok) {
            memcpy(m->user, p, (size_t)(last - p));
            m->user[last - p] = '\0';
            snprintf(m->status, sizeof m->status, "%s", last + 1);
        }
    }
    free(base);
    return ok;
}

static bool configured(const char *v) { return tony_histloc_configured(v); }

void tony_jhist_dirs_resolve(const char *location, const char *intermediate, const char *finished,
                             const char *local_root, tony_jhist_dirs *out) {
    out->location = configured(location) ? tony_strdup(location) : tony_path_join(local_root, "history");
    out->intermediate =
        configured(intermediate) ? tony_strdup(intermediate) : tony_path_join(out->location, "intermediate");
    out->finished = configured(finished) ? tony_strdup(finished) : tony_path_join(out->location, "finished");
}

void tony_jhist_dirs_free(tony_jhist_dirs *d) {
    free(d->location);
    free(d->intermediate);
    free(d->finished);
    memset(d, 0, sizeof *d);
}

char *tony_jhist_finished_dir(const char *finished, long long end_ms, const char *app_id) {
    time_t t = (time_t)(end_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    return tony_sprintf("%s/%04d/%02d/%02d/%s", finished, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, app_id);
}

struct tony_jhist_writer {
    avro_schema_t schema;
    avro_value_iface_t *iface;
    avro_value_t rec;
    avro_file_writer_t file;
    FILE *fp;   /* the file under avro's writer: its errors are ours to see */
    long good;  /* bytes known written: the header and whole blocks */
    bool broken; /* a write failed: the file was cut back to good, nothing more goes in */
    char *path;
};

static int avro_fail(tony_error *err, const char *what, const char *path) {
    return tony_err(err, "%s %s: %s", what, path, avro_strerror());
}

/* avro's writer hands blocks to stdio and ignores what fflush says, so a
 * full disk would leave half a block at the end, and the file unreadable
 * from there. Each flush is checked here; a failed one cuts the file back
 * to its last whole block. */
static int settle(tony_jhist_writer *w, tony_error *err) {
    if (fflush(w->fp) == 0 && !ferror(w->fp)) {
        w->good = ftell(w->fp);
        return 0;
    }
    int e = errno;
    tony_file_cut_back(w->fp, w->good);
    w->broken = true;
    return tony_err(err, "cannot write to %s: %s (the events before are kept)", w->path, strerror(e));
}

tony_jhist_writer *tony_jhist_writer_new(const char *path, tony_error *err) {
    if (tony_file_exists(path)) {
        tony_err(err, "history file %s already exists", path);
        return NULL;
    }
    tony_jhist_writer *w = tony_xcalloc(1, sizeof *w);
    w->path = tony_strdup(path);
    if (avro_schema_from_json_length(schema_json, sizeof schema_json - 1, &w->schema)) {
        avro_fail(err, "cannot parse the history schema for", path);
        free(w->path);
        free(w);
        return NULL;
    }
    w->iface = avro_generic_class_from_schema(w->schema);
    avro_generic_value_new(w->iface, &w->rec);
    w->fp = tony_fopen_perm(path, O_WRONLY | O_CREAT | O_EXCL, 0640, "wb"); /* as the history's other files */
    if (!w->fp) {
        tony_err(err, "cannot create the history file %s: %s", path, strerror(errno));
        tony_jhist_writer_free(w);
        return NULL;
    }
    if (avro_file_writer_create_fp(w->fp, path, 1, w->schema, &w->file)) {
        avro_fail(err, "cannot create the history file", path);
        fclose(w->fp);
        w->file = NULL;
        tony_jhist_writer_free(w);
        return NULL;
    }
    if (settle(w, err)) {
        tony_jhist_writer_free(w);
        return NULL;
    }
    return w;
}

void tony_jhist_writer_free(tony_jhist_writer *w) {
    if (!w) return;
    if (w->file) avro_file_writer_close(w->file);
    avro_value_decref(&w->rec);
    avro_value_iface_decref(w->iface);
    avro_schema_decref(w->schema);
    free(w->path);
    free(w);
}

/* Starts an event: sets type and timestamp, returns the union's branch. */
static avro_value_t begin(tony_jhist_writer *w, int type, long long t_ms) {
    avro_value_t f, u, branch = {0}; /* set_branch can fail before writing it */
    avro_value_reset(&w->rec);
    avro_value_get_by_name(&w->rec, "type", &f, NULL);
    avro_value_set_enum(&f, type);
    avro_value_get_by_name(&w->rec, "timestamp", &f, NULL);
    avro_value_set_long(&f, t_ms);
    avro_value_get_by_name(&w->rec, "event", &u, NULL);
    avro_value_set_branch(&u, type, &branch);
    return branch;
}

static void set_string(avro_value_t *rec, const char *name, const char *v) {
    avro_value_t f;
    avro_value_get_by_name(rec, name, &f, NULL);
    avro_value_set_string(&f, v ? v : "");
}

static void set_int(avro_value_t *rec, const char *name, int v) {
    avro_value_t f;
    avro_value_get_by_name(rec, name, &f, NULL);
    avro_value_set_int(&f, v);
}

static void set_opt_string(avro_value_t *rec, const char *name, const char *v) {
    avro_value_t f, b;
    avro_value_get_by_name(rec, name, &f, NULL);
    if (v) {
        avro_value_set_branch(&f, 1, &b);
        avro_value_set_string(&b, v);
    } else {
        avro_value_set_branch(&f, 0, &b);
        avro_value_set_null(&b);
    }
}

static void set_metrics(avro_value_t *rec, const tony_jhist_metric *m, size_t n) {
    avro_value_t arr, el, f;
    avro_value_get_by_name(rec, "metrics", &arr, NULL);
    for (size_t i = 0; i < n; i++) {
        avro_value_append(&arr, &el, NULL);
        avro_value_get_by_name(&el, "name", &f, NULL);
        avro_value_set_string(&f, m[i].name);
        avro_value_get_by_name(&el, "value", &f, NULL);
        avro_value_set_double(&f, m[i].value);
    }
}

static int commit(tony_jhist_writer *w, tony_error *err) {
    if (w->broken) return tony_err(err, "%s is no longer written (a write failed)", w->path);
    if (avro_file_writer_append_value(w->file, &w->rec)) return avro_fail(err, "cannot write to", w->path);
    if (avro_file_writer_flush(w->file)) return avro_fail(err, "cannot flush", w->path);
    return settle(w, err);
}

int tony_jhist_application_inited(tony_jhist_writer *w, long long t_ms, const char *app_id, int num_tasks,
                                  const char *host, const char *container_id, tony_error *err) {
    avro_value_t e = begin(w, EV_APPLICATION_INITED, t_ms);
    set_string(&e, "applicationId", app_id);
    set_int(&e, "numTasks", num_tasks);
    set_string(&e, "host", host);
    set_opt_string(&e, "containerID", container_id);
    return commit(w, err);
}

int tony_jhist_task_started(tony_jhist_writer *w, long long t_ms, const char *type, int index, const char *host,
                            const char *container_id, tony_error *err) {
    avro_value_t e = begin(w, EV_TASK_STARTED, t_ms);
    set_string(&e, "taskType", type);
    set_int(&e, "taskIndex", index);
    set_string(&e, "host", host);
    set_opt_string(&e, "containerID", container_id);
    return commit(w, err);
}

int tony_jhist_task_finished(tony_jhist_writer *w, long long t_ms, const char *type, int index, const char *status,
                             const tony_jhist_metric *metrics, size_t nmetrics, const char *diagnostic,
                             tony_error *err) {
    avro_value_t e = begin(w, EV_TASK_FINISHED, t_ms);
    set_string(&e, "taskType", type);
    set_int(&e, "taskIndex", index);
    set_string(&e, "status", status);
    set_metrics(&e, metrics, nmetrics);
    set_opt_string(&e, "containerDiagnostic", diagnostic);
    return commit(w, err);
}

int tony_jhist_application_finished(tony_jhist_writer *w, long long t_ms, const char *app_id, int finished_tasks,
                                    int failed_tasks, tony_error *err) {
    avro_value_t e = begin(w, EV_APPLICATION_FINISHED, t_ms);
    set_string(&e, "applicationId", app_id);
    set_int(&e, "finishedTasks", finished_tasks);
    set_int(&e, "failedTasks", failed_tasks);
    set_metrics(&e, NULL, 0); /* TonY's is always empty */
    return commit(w, err);
}

int tony_jhist_read(const char *path, json_t **events, tony_error *err) {
    *events = NULL;
    char *data = NULL;
    size_t len = 0;
    if (tony_read_file(path, &data, &len, err)) return tony_err_wrap(err, "cannot read the history file");
    int rc = tony_jhist_decode(path, data, len, events, err);
    free(data);
    return rc;
}

int tony_jhist_decode(const char *path, const char *data, size_t len, json_t **events, tony_error *err) {
    /* Our own decoder, not avro-c's reader: a damaged file must give an
     * error, never a crash or a leak (see avroread.h). */
    int rc = tony_avro_decode(data, len, events, err);
    if (rc) tony_err_wrap(err, "history file %s is damaged", path);
    if (rc && !json_array_size(*events)) {
        json_decref(*events);
        *events = NULL;
    }
    return rc;
}
