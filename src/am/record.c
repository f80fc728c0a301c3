/* Recording what happens to a job: one place turns the coordinator's
 * moments (an attempt starts, a task registers, a container ends, ...) into
 * an event log line, TonY's history events and per-task metrics, so that the
 * loop (am.c) and the API (api.c) only call a hook; and status.json, from
 * the job's JSON am.c hands in (record.c calls no view.c: view.c reads it). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "am/record.h"

#include "am/events.h"
#include "common/fs.h"
#include "common/histloc.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "common/log.h"
#include "common/strv.h"
#include "conf/keys.h"

/* The recorder's part of the handle (am_internal.h): written here only. */
struct am_recorder {
    am_events *events;   /* the event log */
    am_history *history; /* the history files, NULL when none are written */
    const tony_am_history_mirror *history_mirror; /* the backend's (HDFS), or NULL */
    tony_jhist_dirs history_remote;               /* the mirror's dirs, when used */
    am_metrics **metrics; /* each task's in this attempt, indexed like job.tasks */
    size_t nmetrics;
    char *status_error;  /* why status.json could not be written (a full disk); NULL when it was */
    char *history_error; /* why the job's history stopped being written; NULL: it did not */
};

/* The part, made on first use: status.json is written even by a
 * coordinator whose setup failed before am_record_start. */
static am_recorder *part(tony_am *am) {
    if (!am->rec) am->rec = tony_xcalloc(1, sizeof *am->rec);
    return am->rec;
}

/* Nothing is recorded (before am_record_init, or after am_record_free). */
static bool off(const tony_am *am) { return !am->rec || !am->rec->events; }

static long long wall_now(const tony_am *am) { return am_wall_ms(am, am_now_ms()); }

static char *task_id(const am_task *t) { return tony_sprintf("%s:%d", t->role->name, t->index); }

/* History is best effort: the first failure is logged and the .jhist takes
 * no more events; what it has is still named and moved as the job ends. */
static void history_failed(tony_am *am, const tony_error *err) {
    tony_warn("job history stops here: %s", err->msg);
    /* the job's state says so too (view.c), so its owner hears of it */
    if (!am->rec->history_error) am->rec->history_error = tony_strdup(err->msg);
    am_history_stop_writing(am->rec->history);
}

static tony_jhist_writer *writer(tony_am *am) { return am->rec->history ? am_history_writer(am->rec->history) : NULL; }

static void metrics_reset(tony_am *am) {
    for (size_t i = 0; i < am->rec->nmetrics; i++) am_metrics_free(am->rec->metrics[i]);
    free(am->rec->metrics);
    am->rec->nmetrics = am->fsm.job.ntasks;
    am->rec->metrics = tony_xcalloc(am->rec->nmetrics ? am->rec->nmetrics : 1, sizeof *am->rec->metrics);
    for (size_t i = 0; i < am->rec->nmetrics; i++) am->rec->metrics[i] = am_metrics_new(AM_METRICS_MAX_POINTS);
}

static void app_inited(tony_am *am) {
    int n = tony_plan_total_instances(&am->plan);
    am_events_add(am->rec->events, wall_now(am), "APPLICATION_INITED", NULL, am->fsm.job.attempt,
                  "%s: attempt %d of %s with %d task(s), coordinator at %s", am->id.app_id, am->fsm.job.attempt,
                  am->plan.framework, n, am->id.url ? am->id.url : am->id.host);
    tony_error err;
    if (writer(am) &&
        tony_jhist_application_inited(writer(am), wall_now(am), am->id.app_id, n, am->id.host, NULL, &err))
        history_failed(am, &err);
    /* The mirror's first copy: the job's start is in the .jhist now. */
    if (am->rec->history && am->fsm.job.attempt == 0) am_history_sync(am->rec->history);
}

/* Where the history goes (histloc.h): local (or shared) disk, or HDFS
 * through the backend's mirror with the files kept in our job dir. Fills
 * *local (and am->rec->history_remote); false when history is not written. */
static bool history_dirs(tony_am *am, const char *root, tony_jhist_dirs *local) {
    const char *loc = tony_conf_get(am->conf, TONY_KEY_HISTORY_LOCATION);
    const char *inter = tony_conf_get(am->conf, TONY_KEY_HISTORY_INTERMEDIATE);
    const char *fin = tony_conf_get(am->conf, TONY_KEY_HISTORY_FINISHED);
    if (am->id.on_cluster && !tony_histloc_configured(loc) && !tony_histloc_configured(inter) &&
        !tony_histloc_configured(fin)) {
        /* A node's local disk is no place for a cluster job's history. */
        tony_info("history: not written; set tony.history.location to a directory on HDFS (/path or hdfs://...) or "
                  "one the coordinator's nodes share (file:///path)");
        return false;
    }
    tony_histloc hl;
    tony_error err;
    if (tony_histloc_resolve(loc, inter, fin, TONY_KEY_HISTORY_LOCATION, am->id.on_cluster, root, &hl, &err)) {
        tony_warn("history: not written: %s", err.msg);
        return false;
    }
    const tony_am_history_mirror *m = am->rec->history_mirror;
    char *where = tony_histloc_uri(&hl, hl.dirs.intermediate);
    bool ok = true;
    if (hl.fs == TONY_HISTLOC_LOCAL) {
        *local = hl.dirs;
        memset(&hl.dirs, 0, sizeof hl.dirs);
    } else if (!m) {
        tony_warn("history: not written: %s is on HDFS, which only the yarn backend's coordinator writes; give a "
                  "local directory (file:///path) in tony.history.location", where);
        ok = false;
    } else if (hl.fs == TONY_HISTLOC_WEBHDFS || (*hl.authority && strcmp(hl.authority, m->authority) != 0)) {
        tony_warn("history: not written: %s is not on the cluster's default file system hdfs://%s (fs.defaultFS); "
                  "use hdfs://%s/path or a bare /path in tony.history.location", where, m->authority, m->authority);
        ok = false;
    } else {
        am->rec->history_remote = hl.dirs;
        memset(&hl.dirs, 0, sizeof hl.dirs);
        tony_jhist_dirs_resolve(NULL, NULL, NULL, am->id.job_dir, local);
    }
    free(where);
    tony_histloc_free(&hl);
    return ok;
}

void am_record_init(tony_am *am, size_t keep_events) {
    part(am)->events = am_events_new(keep_events);
    metrics_reset(am);
}

void am_record_start(tony_am *am, const tony_am_history_mirror *mirror) {
    am_record_init(am, AM_EVENTS_KEEP);
    am->rec->history_mirror = mirror;
    char *root = tony_jobs_root(tony_conf_get(am->conf, TONY_KEY_LOCAL_ROOT));
    const char *tz = tony_conf_get(am->conf, TONY_KEY_HISTORY_FINISHED_TZ);
    if (tz && *tz && strcmp(tz, "UTC") != 0 && strcmp(tz, "GMT") != 0)
        tony_warn("tony.history.finished-dir-timezone=%s: only UTC is supported; finished/yyyy/mm/dd uses UTC", tz);
    tony_jhist_dirs local = {0};
    if (history_dirs(am, root, &local)) {
        char *conf_path = tony_path_join(am->id.job_dir, TONY_JOBDIR_CONF);
        tony_error err;
        bool remote = am->rec->history_remote.intermediate != NULL;
        long long started = am_wall_ms(am, am->id.started_ms);
        am->rec->history = am_history_new(&local, am->base, remote ? am->rec->history_mirror : NULL, &am->rec->history_remote,
                                     conf_path, am->id.app_id, started, &err);
        /* A location others share may refuse us (a folder another user
         * made at our job's name): the owner's own location, <tony
         * root>/history, has the job's history instead of nobody. */
        tony_jhist_dirs own = {0};
        tony_jhist_dirs_resolve(NULL, NULL, NULL, root, &own);
        bool other = !remote && strcmp(own.intermediate, local.intermediate) != 0;
        if (!am->rec->history && other) {
            tony_warn("%s", err.msg);
            tony_warn("history: written to %s instead, this user's own location (tony history %s --location %s)",
                      own.location, am->id.app_id, own.location);
            am->rec->history = am_history_new(&own, am->base, NULL, NULL, conf_path, am->id.app_id, started, &err);
        } else if (am->rec->history && other && strcmp(own.finished, local.finished) != 0) {
            am_history_set_fallback(am->rec->history, own.finished);
        }
        tony_jhist_dirs_free(&own);
        if (!am->rec->history) tony_warn("%s", err.msg);
        else {
            char *log = tony_path_join(am_history_dir(am->rec->history), TONY_JHIST_EVENTS_LOG);
            if (am_events_open_log(am->rec->events, log, &err)) tony_warn("%s", err.msg);
            free(log);
            char *where = am_history_where(am->rec->history);
            tony_info("history: %s%s", where, remote ? " (copied from the coordinator's work dir)" : "");
            free(where);
        }
        free(conf_path);
        tony_jhist_dirs_free(&local);
    }
    free(root);
    if (am->plan.single_node) app_inited(am);
}

void am_record_attempt(tony_am *am) {
    if (off(am)) return;
    metrics_reset(am);
    app_inited(am);
}

void am_record_task_requested(tony_am *am, const am_task *t) {
    if (off(am)) return;
    char *id = task_id(t);
    am_events_add(am->rec->events, wall_now(am), "TASK_REQUESTED", id, am->fsm.job.attempt,
                  "%s: container requested (%lld MiB, %d vcores, %d GPUs)", id, t->role->memory_mb, t->role->vcores,
                  t->role->gpus);
    free(id);
}

void am_record_task_registered(tony_am *am, const am_task *t) {
    if (off(am)) return;
    char *id = task_id(t);
    am_events_add_data(am->rec->events, wall_now(am), "TASK_REGISTERED", id, am->fsm.job.attempt,
                       json_pack("{s:s,s:i}", "host", t->host, "port", t->port), "%s: registered at %s:%d", id, t->host,
                       t->port);
    free(id);
    /* TonY writes TASK_STARTED when the container launches; the executor's
     * registration is the first moment we know its host. */
    tony_error err;
    if (writer(am) && tony_jhist_task_started(writer(am), wall_now(am), t->role->name, t->index, t->host, NULL, &err))
        history_failed(am, &err);
}

void am_record_task_started(tony_am *am, const am_task *t) {
    if (off(am)) return;
    char *id = task_id(t);
    am_events_add(am->rec->events, wall_now(am), "TASK_STARTED", id, am->fsm.job.attempt, "%s: user process started (pid %d)", id,
                  t->pid);
    free(id);
}

void am_record_task_exit(tony_am *am, const am_task *t) {
    if (off(am)) return;
    char *id = task_id(t), meaning[160];
    const char *status = am_task_state_name(t->state);
    const char *what = tony_exit_status_meaning(t->exit_status, meaning, sizeof meaning);
    am_metrics *m = am_task_metrics(am, t);
    char peak[160] = "";
    /* the kernel's peak where the executor reported one, else the samples' */
    double peak_bytes = !m ? -1 : am_metrics_peak(m) >= 0 ? (double)am_metrics_peak(m)
                                                          : am_metrics_value(m, AM_METRIC_MAX_MEMORY_BYTES);
    if (peak_bytes >= 0)
        snprintf(peak, sizeof peak, "; peak memory %.0f MiB, CPU %.0f%% on average", peak_bytes / (1024.0 * 1024.0),
                 am_metrics_value(m, AM_METRIC_AVG_CPU_PERCENT));
    const char *diag = t->diagnostics && *t->diagnostics ? t->diagnostics : NULL;
    json_t *data = json_pack("{s:s,s:i,s:s,s:s?,s:o}", "status", status, "exit_status", t->exit_status, "exit_meaning",
                             what, "diagnostics", diag, "metrics",
                             m ? am_metrics_aggregates_json(m) : json_object());
    if (t->state == AM_TASK_SUCCEEDED)
        am_events_add_data(am->rec->events, wall_now(am), "TASK_FINISHED", id, am->fsm.job.attempt, data, "%s succeeded%s", id,
                           peak);
    else
        am_events_add_data(am->rec->events, wall_now(am), "TASK_FINISHED", id, am->fsm.job.attempt, data, "%s %s: %s%s%s%s", id,
                           t->state == AM_TASK_FAILED ? "failed" : "was stopped", what, peak, diag ? ". " : "",
                           diag ? diag : "");
    free(id);
    tony_jhist_metric ms[AM_METRIC_TONY_COUNT];
    for (int i = 0; i < AM_METRIC_TONY_COUNT; i++)
        ms[i] = (tony_jhist_metric){am_metric_name(i), m ? am_metrics_value(m, i) : -1};
    /* TonY: the container's diagnostics on failure, "NA" otherwise */
    const char *cd = t->state == AM_TASK_SUCCEEDED ? "NA" : diag ? diag : what;
    tony_error err;
    if (writer(am) && tony_jhist_task_finished(writer(am), wall_now(am), t->role->name, t->index, status, ms,
                                               AM_METRIC_TONY_COUNT, cd, &err))
        history_failed(am, &err);
}

void am_record_heartbeat_missed(tony_am *am, const am_task *t) {
    if (off(am)) return;
    char *id = task_id(t);
    am_events_add(am->rec->events, wall_now(am), "HEARTBEAT_MISSED", id, am->fsm.job.attempt, "%s",
                  t->diagnostics ? t->diagnostics : "missed heartbeats");
    free(id);
}

/* Hang diagnosis (am/hang.h): the task found idle, then each task's stacks
 * as they arrive. */
void am_record_task_hung(tony_am *am, const am_task *t, long long idle_ms) {
    if (off(am)) return;
    char *id = task_id(t);
    am_events_add_data(am->rec->events, wall_now(am), "TASK_HUNG", id, am->fsm.job.attempt,
                       json_pack("{s:I}", "idle_ms", (json_int_t)idle_ms),
                       "no output or progress for %lld ms (tony.task.progress-timeout): collecting every task's stacks",
                       idle_ms);
    free(id);
}

void am_record_stacks(tony_am *am, const am_task *t, const char *path) {
    if (off(am)) return;
    char *id = task_id(t);
    am_events_add_data(am->rec->events, wall_now(am), "STACKS_COLLECTED", id, am->fsm.job.attempt,
                       json_pack("{s:s}", "path", path), "stacks in %s", path);
    free(id);
}

/* metrics.json beside the .jhist: this attempt's tasks (final state, where
 * their logs are, the metric series the coordinator holds) appended to the
 * attempts already there, so a job's plots outlive its coordinator. Written
 * as each attempt ends: the file is rewritten whole, which is rare and
 * small (AM_METRICS_MAX_POINTS points per task at most). */
static void write_metrics(tony_am *am, const json_t *job_tasks) {
    if (!am->rec->history) return;
    char *path = tony_path_join(am_history_dir(am->rec->history), TONY_JHIST_METRICS);
    json_t *root = tony_file_exists(path) ? json_load_file(path, 0, NULL) : NULL;
    json_int_t started = am_wall_ms(am, am->id.started_ms);
    /* A file of an earlier coordinator of the job (a YARN AM retry, which
     * counts attempts from 0 again) gives way, as its .jhist does. */
    if (!json_is_array(json_object_get(root, JOB_HIST_ATTEMPTS)) ||
        json_integer_value(json_object_get(root, JOB_HIST_COORDINATOR_STARTED_MS)) != started) {
        json_decref(root);
        root = json_pack("{s:s,s:I,s:[]}", JOB_HIST_APP_ID, am->id.app_id, JOB_HIST_COORDINATOR_STARTED_MS, started,
                         JOB_HIST_ATTEMPTS);
    }
    json_t *tasks = json_array();
    for (size_t i = 0; i < am->fsm.job.ntasks; i++) {
        const am_task *t = &am->fsm.job.tasks[i];
        json_t *o = json_deep_copy(json_array_get(job_tasks, i));
        if (!o) continue;
        am_metrics *m = am_task_metrics(am, t);
        if (m) json_object_set_new(o, JOB_TASK_SERIES, am_metrics_series_json(m));
        json_array_append_new(tasks, o);
    }
    json_array_append_new(json_object_get(root, JOB_HIST_ATTEMPTS),
                          json_pack("{s:i,s:I,s:o,s:s?}", JOB_HIST_ATTEMPT, am->fsm.job.attempt, JOB_HIST_INTERVAL_MS,
                                    (json_int_t)am->plan.metrics_interval_ms, JOB_HIST_TASKS, tasks, JOB_ATT_END,
                                    am_attempt_end_name(am->fsm.attempt_end)));
    char *text = json_dumps(root, JSON_COMPACT);
    tony_error err;
    if (tony_write_file(path, text, strlen(text), 0640, &err)) {
        tony_warn("history: no metric series: %s", err.msg);
        if (!am->rec->history_error) am->rec->history_error = tony_strdup(err.msg);
    }
    free(text);
    json_decref(root);
    free(path);
}

void am_record_restart(tony_am *am, const json_t *tasks) {
    if (off(am)) return;
    write_metrics(am, tasks);
    if (am->rec->history) am_history_sync(am->rec->history);
    const am_fsm *f = &am->fsm;
    const char *diag = f->job.attempt_diagnostics ? f->job.attempt_diagnostics : "";
    json_t *data = json_pack("{s:s}", JOB_ATT_END, am_attempt_end_name(f->attempt_end));
    /* an elastic world's change restarts in place on the world's account:
     * no failure, no restart spent */
    if (f->attempt_end == AM_END_RESIZED)
        am_events_add_data(am->rec->events, wall_now(am), "RESTART", NULL, f->job.attempt, data,
                           "attempt %d ended for a change of the world (%s); its tasks restart in place, no restart "
                           "spent (%d left)", f->job.attempt, diag, f->retries_left);
    else
        am_events_add_data(am->rec->events, wall_now(am), "RESTART", NULL, f->job.attempt, data,
                           "attempt %d failed (%s); restarting the job, %d restart(s) left", f->job.attempt, diag,
                           f->retries_left);
}

void am_record_node_excluded(tony_am *am, const am_task *t, const am_excluded_node *e) {
    if (off(am)) return;
    char *id = task_id(t);
    json_t *data = json_pack("{s:s,s:s,s:b}", "node", e->node, "reason", e->reason, "excluded", e->refused == NULL);
    if (e->refused) json_object_set_new(data, "refused", json_string(e->refused));
    if (e->refused)
        am_events_add_data(am->rec->events, wall_now(am), "NODE_NOT_EXCLUDED", id, am->fsm.job.attempt, data,
                           "node %s is bad (%s) but stays in use: %s", e->node, e->reason, e->refused);
    else
        am_events_add_data(am->rec->events, wall_now(am), "NODE_EXCLUDED", id, am->fsm.job.attempt, data,
                           "node %s excluded from later containers: %s", e->node, e->reason);
    free(id);
}

void am_record_recovering(tony_am *am, int previous) {
    if (off(am)) return;
    am_events_add_data(am->rec->events, wall_now(am), "COORDINATOR_RESTARTED", NULL, am->fsm.job.attempt,
                       json_pack("{s:i}", "containers", previous),
                       "coordinator restarted: %d container(s) of the lost one still run; waiting for their tasks",
                       previous);
}

void am_record_task_adopted(tony_am *am, const am_task *t) {
    if (off(am)) return;
    char *id = task_id(t);
    am_events_add_data(am->rec->events, wall_now(am), "TASK_ADOPTED", id, am->fsm.job.attempt,
                       json_pack("{s:s,s:i,s:i}", "host", t->host, "port", t->port, "pid", t->pid),
                       t->pid > 0 ? "%s: came back to the restarted coordinator, its process (pid %d) still running"
                                  : "%s: came back to the restarted coordinator, waiting at the gang barrier",
                       id, t->pid);
    free(id);
}

void am_record_adopted(tony_am *am) {
    if (off(am)) return;
    int n = (int)am->fsm.job.ntasks;
    const am_fsm *f = &am->fsm;
    am_events_add_data(am->rec->events, wall_now(am), "TASKS_ADOPTED", NULL, f->job.attempt,
                       json_pack("{s:i,s:i,s:i}", "adopted", f->adopted, "tasks", n, "asked_anew", f->asked_anew),
                       "coordinator restarted, %d of %d task(s) adopted%s", f->adopted, n,
                       f->asked_anew ? "; the gang had not formed: the others are asked for anew"
                       : f->adopted < n ? "; the others did not come back" : " without a restart");
}

void am_record_kill(tony_am *am) {
    if (off(am)) return;
    am_events_add(am->rec->events, wall_now(am), "KILL", NULL, am->fsm.job.attempt, "killed by the user");
}

void am_record_finish(tony_am *am, const json_t *tasks) {
    if (off(am)) return;
    int finished = 0, failed = 0;
    for (size_t i = 0; i < am->fsm.job.ntasks; i++) {
        const am_task *t = &am->fsm.job.tasks[i];
        finished += am_task_done(t);
        failed += t->state == AM_TASK_FAILED;
    }
    const char *status = am_final_status_name(am->fsm.final_status);
    am_events_add(am->rec->events, wall_now(am), "APPLICATION_FINISHED", NULL, am->fsm.job.attempt, "%s %s: %s",
                  am->id.app_id, status, am->fsm.diagnostics ? am->fsm.diagnostics : "");
    write_metrics(am, tasks);
    tony_error err;
    if (writer(am) && tony_jhist_application_finished(writer(am), wall_now(am), am->id.app_id, finished, failed, &err))
        history_failed(am, &err);
    if (am->rec->history && am_history_finish(am->rec->history, am_wall_ms(am, am->fsm.finished_ms), status, &err))
        history_failed(am, &err);
    else if (am->rec->history) {
        char *where = am_history_where(am->rec->history);
        tony_info("history: %s/%s", where, tony_basename(am_history_file(am->rec->history)));
        free(where);
    }
}

/* status.json could not be written (its atomic write failed: a full disk):
 * the job's state, app id, final status, diagnostics and the write's error,
 * written over the old file in place (its blocks need no new ones), so
 * that the file never stays at a state the job left. Said in the log when
 * even that fails. */
static void status_in_place(tony_am *am, const char *path, const json_t *job) {
    static const char *const keep[] = {JOB_APP_ID, JOB_STATE, JOB_FINAL_STATUS, JOB_DIAGNOSTICS, JOB_ATTEMPT,
                                       JOB_BACKEND, JOB_FRAMEWORK, JOB_STARTED_MS, JOB_FINISHED_MS,
                                       JOB_STATUS_ERROR, JOB_HISTORY_ERROR};
    json_t *small = json_object();
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++) {
        json_t *v = json_object_get(job, keep[i]);
        if (v) json_object_set(small, keep[i], v);
    }
    /* the job's JSON was made before this write failed */
    json_object_set_new(small, JOB_STATUS_ERROR, json_string(am->rec->status_error));
    char *text = json_dumps(small, JSON_COMPACT);
    tony_error err;
    if (tony_write_in_place(path, text, strlen(text), &err))
        tony_error_log("%s: `tony status` shows an older state of this job than its own", err.msg);
    else
        tony_warn("%s: wrote the job's state (%s) over the old file in place, without its tasks", path,
                  json_string_value(json_object_get(small, JOB_STATE)));
    free(text);
    json_decref(small);
}

void am_record_status(tony_am *am, const json_t *job) {
    char *s = json_dumps(job, JSON_INDENT(1));
    char *path = tony_path_join(am->id.job_dir, TONY_JOBDIR_STATUS);
    tony_error err;
    am_recorder *r = part(am);
    /* Said once, not every tick: a full disk stays full for a while. */
    if (tony_write_file(path, s, strlen(s), 0600, &err)) {
        if (!r->status_error) tony_warn("%s; clients read the job's state from the API only", err.msg);
        free(r->status_error);
        r->status_error = tony_strdup(err.msg);
        status_in_place(am, path, job);
    } else if (r->status_error) {
        tony_info("%s written again", path);
        free(r->status_error);
        r->status_error = NULL;
    }
    free(path);
    free(s);
}

/* Each entry of the world's event: the world's version and size, each
 * role's count and the tasks out of it. */
void am_record_world_changed(tony_am *am) {
    if (off(am)) return;
    const am_fsm *f = &am->fsm;
    json_t *roles = json_object();
    int size = 0;
    for (size_t r = 0; r < am->plan.nroles; r++) {
        int n = am_fsm_world_count(&f->job, &am->plan.roles[r]);
        size += n;
        json_object_set_new(roles, am->plan.roles[r].name, json_integer(n));
    }
    json_t *left = json_array();
    for (size_t i = 0; i < f->job.ntasks; i++) {
        const am_task *t = &f->job.tasks[i];
        if (t->out) json_array_append_new(left, json_sprintf("%s:%d", t->role->name, t->index));
    }
    am_events_add_data(am->rec->events, wall_now(am), AM_EVENT_WORLD_CHANGED, NULL, f->job.attempt,
                       json_pack("{s:i,s:i,s:o,s:o}", AM_EVENT_WORLD_VERSION, f->world_version, AM_EVENT_WORLD_SIZE,
                                 size, AM_EVENT_WORLD_ROLES, roles, AM_EVENT_WORLD_OUT, left),
                       "%s", f->world_note);
}

json_t *am_record_events_json(const tony_am *am, long long since) {
    if (off(am)) return json_pack("{s:[],s:I}", "events", "next", (json_int_t)since);
    return am_events_since_json(am->rec->events, since, AM_EVENTS_PAGE);
}

am_metrics *am_task_metrics(const tony_am *am, const am_task *t) {
    const am_recorder *r = am->rec;
    if (!r || !r->metrics || t < am->fsm.job.tasks || t >= am->fsm.job.tasks + am->fsm.job.ntasks) return NULL;
    size_t i = (size_t)(t - am->fsm.job.tasks);
    return i < r->nmetrics ? r->metrics[i] : NULL;
}

const am_history *am_record_history(const tony_am *am) { return am->rec ? am->rec->history : NULL; }

bool am_record_history_settled(const tony_am *am) {
    return !am->rec || !am->rec->history || am_history_settled(am->rec->history);
}

void am_record_history_close(tony_am *am) {
    if (!am->rec) return;
    am_history_free(am->rec->history);
    am->rec->history = NULL;
}

const char *am_record_status_error(const tony_am *am) { return am->rec ? am->rec->status_error : NULL; }

const char *am_record_history_error(const tony_am *am) { return am->rec ? am->rec->history_error : NULL; }

void am_record_free(tony_am *am) {
    am_recorder *r = am->rec;
    if (!r) return;
    free(r->status_error);
    free(r->history_error);
    am_history_free(r->history);
    tony_jhist_dirs_free(&r->history_remote);
    am_events_free(r->events);
    for (size_t i = 0; i < r->nmetrics; i++) am_metrics_free(r->metrics[i]);
    free(r->metrics);
    free(r);
    am->rec = NULL;
}
