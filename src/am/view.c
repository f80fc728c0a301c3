/* The job as people and clients see it: the JSON of GET /v1/job, of
 * status.json and of each task in history's metrics.json, built from the
 * state machine's table without changing it. */
#include "am/view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "am/cause.h"
#include "am/record.h"
#include "common/amapi.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "common/sizing.h"
#include "common/strv.h"
#include "conf/keys.h"

static json_t *run_json(int attempt, am_task_state state, int exit_status, bool started) {
    json_t *o = json_pack("{s:i,s:s,s:b}", JOB_RUN_ATTEMPT, attempt, JOB_RUN_STATE, am_task_state_name(state),
                          JOB_RUN_STARTED, started);
    if (exit_status != TONY_EXIT_INVALID) {
        char meaning[160];
        json_object_set_new(o, JOB_RUN_EXIT_STATUS, json_integer(exit_status));
        json_object_set_new(o, JOB_RUN_EXIT_MEANING,
                            json_string(tony_exit_status_meaning(exit_status, meaning, sizeof meaning)));
    }
    return o;
}

/* The attempts the task got a container in (earlier ones, then this one),
 * and how many times its process started: the job restarts as a whole,
 * so a task's restarts are the job's attempts it ran in. */
static void task_runs_json(const tony_am *am, const am_task *t, json_t *o) {
    json_t *runs = json_array();
    int starts = 0;
    for (size_t i = 0; i < t->nruns; i++) {
        const am_task_run *r = &t->runs[i];
        json_t *rj = run_json(r->attempt, r->state, r->exit_status, r->started);
        if (r->log_url) json_object_set_new(rj, JOB_RUN_LOG_URL, json_string(r->log_url));
        json_array_append_new(runs, rj);
        starts += r->started;
    }
    if (t->state != AM_TASK_NEW) {
        json_array_append_new(runs, run_json(am->fsm.job.attempt, t->state, t->exit_status, t->started_ms != 0));
        starts += t->started_ms != 0;
    }
    json_object_set_new(o, JOB_TASK_STARTS, json_integer(starts));
    json_object_set_new(o, JOB_TASK_RUNS, runs);
}

/* A task's requested resources. */
static json_t *requested_json(const am_task *t) {
    return json_pack("{s:I,s:i,s:i}", JOB_REQ_MEMORY_BYTES, (json_int_t)t->role->memory_mb * 1024 * 1024,
                     JOB_REQ_VCORES, t->role->vcores, JOB_REQ_GPUS, t->role->gpus);
}

json_t *am_task_json(const tony_am *am, const am_task *t) {
    char meaning[160];
    json_t *o = json_pack("{s:s,s:i,s:s,s:i}", JOB_TASK_ROLE, t->role->name, JOB_TASK_INDEX, t->index, JOB_TASK_STATE,
                          am_task_state_name(t->state), JOB_TASK_ATTEMPT, am->fsm.job.attempt);
    if (t->host) {
        json_object_set_new(o, JOB_TASK_HOST, json_string(t->host));
        json_object_set_new(o, JOB_TASK_PORT, json_integer(t->port));
    }
    if (t->pid) json_object_set_new(o, JOB_TASK_PID, json_integer(t->pid));
    if (t->node) json_object_set_new(o, JOB_TASK_NODE, json_string(t->node)); /* once its container ended */
    /* the attempt its container was asked for in: earlier than "attempt"
     * when an in-place restart kept it */
    if (t->state != AM_TASK_NEW) json_object_set_new(o, JOB_TASK_CONTAINER_ATTEMPT, json_integer(t->container_attempt));
    if (t->exited || am_task_done(t)) {
        json_object_set_new(o, JOB_TASK_EXIT_STATUS, json_integer(t->exit_status));
        const char *said = tony_exit_status_meaning(t->exit_status, meaning, sizeof meaning);
        /* the code is its executor's or its container runtime's (cause.h) */
        char *never = am_cause_command_ran(t) ? NULL : tony_sprintf("%s, before its command started", said);
        json_object_set_new(o, JOB_TASK_EXIT_MEANING, json_string(never ? never : said));
        free(never);
    }
    if (t->diagnostics) json_object_set_new(o, JOB_TASK_DIAGNOSTICS, json_string(t->diagnostics));
    /* stopped, not failed: because another task's failure ended this attempt
     * (not a ps stopped at the end of an attempt that succeeded after a
     * worker's failure it tolerated) */
    const am_job *j = &am->fsm.job;
    const am_task *first = j->first_failed;
    if (t->state == AM_TASK_FINISHED && first && first != t && j->attempt_over && j->attempt_status == AM_FINAL_FAILED)
        json_object_set_new(o, JOB_TASK_STOPPED_BY, json_sprintf("%s:%d", first->role->name, first->index));
    json_object_set_new(o, JOB_TASK_KIND, json_string(tony_role_kind_name(t->role->kind)));
    if (am->plan.elastic) json_object_set_new(o, JOB_TASK_OUT, json_boolean(t->out));
    task_runs_json(am, t, o);
    if (tony_plan_is_chief(&am->plan, t->role->name, t->index)) json_object_set_new(o, JOB_TASK_CHIEF, json_true());
    /* The executor says where its logs are (a container's log dir on its
     * node); before it registers, the local layout is the best guess. */
    char *dir = t->log_dir ? tony_strdup(t->log_dir)
                           : tony_jobdir_task_dir(am->id.job_dir, am->fsm.job.attempt, t->role->name, t->index);
    char *out = tony_sprintf("%s/stdout", dir), *err = tony_sprintf("%s/stderr", dir);
    if (t->container) json_object_set_new(o, JOB_TASK_CONTAINER, json_string(t->container));
    if (t->log_url) json_object_set_new(o, JOB_TASK_LOG_URL, json_string(t->log_url));
    json_object_set_new(o, JOB_TASK_LOG_DIR, json_string(dir));
    json_object_set_new(o, JOB_TASK_STDOUT, json_string(out));
    json_object_set_new(o, JOB_TASK_STDERR, json_string(err));
    free(dir), free(out), free(err);
    if (t->registered_ms) json_object_set_new(o, JOB_TASK_REGISTERED_MS, json_integer(am_wall_ms(am, t->registered_ms)));
    if (t->started_ms) json_object_set_new(o, JOB_TASK_STARTED_MS, json_integer(am_wall_ms(am, t->started_ms)));
    if (t->finished_ms) json_object_set_new(o, JOB_TASK_FINISHED_MS, json_integer(am_wall_ms(am, t->finished_ms)));
    json_object_set_new(o, JOB_TASK_REQUESTED, requested_json(t));
    /* hang diagnosis: where this attempt's stacks of the task are served */
    if (t->stacks_in)
        json_object_set_new(o, JOB_TASK_STACKS, json_sprintf(AM_API_TASKS "%s/%d/" AM_API_STACKS "?" AM_API_ATTEMPT "=%d",
                                                      t->role->name, t->index, am->fsm.job.attempt));
    am_metrics *m = am_task_metrics(am, t);
    if (m) {
        json_object_set_new(o, JOB_TASK_METRICS, am_metrics_aggregates_json(m));
        json_object_set_new(o, JOB_TASK_LAST_SAMPLE, am_metrics_last_json(m));
    }
    return o;
}

/* The task serving TensorBoard now: the one that reserved TB_PORT (the
 * sidecar, else the chief), running, with something listening there. A
 * notebook job's TB_PORT is Jupyter's (am_job_reserves_tb_port): none. */
const am_task *am_view_tensorboard_task(const tony_am *am) {
    for (size_t i = 0; i < am->fsm.job.ntasks; i++) {
        const am_task *t = &am->fsm.job.tasks[i];
        if (strcmp(t->role->name, TONY_NOTEBOOK_ROLE) == 0) continue;
        if (t->tb_port > 0 && t->host && t->state == AM_TASK_RUNNING && t->tb_listening) return t;
    }
    return NULL;
}

/* A single-node job's command as the job's one task, am:0, with a task's
 * log fields, so that readers (tony logs, the page) find its output where
 * they find any task's. */
static json_t *single_node_task_json(const tony_am *am) {
    const tony_am_place *at = &am->single.place;
    const char *state =
        (am->fsm.state == AM_JOB_DONE) ? am_final_status_name(am->fsm.final_status) : JOB_TASK_STATE_RUNNING;
    json_t *t = json_pack("{s:s,s:i,s:s,s:i,s:s}", JOB_TASK_ROLE, JOB_SINGLE_NODE_ROLE, JOB_TASK_INDEX, 0,
                          JOB_TASK_STATE, state, JOB_TASK_ATTEMPT, 0, JOB_TASK_HOST, am->id.host);
    if (am->single.exited) {
        char meaning[160];
        json_object_set_new(t, JOB_TASK_EXIT_STATUS, json_integer(am->single.exit_code));
        json_object_set_new(t, JOB_TASK_EXIT_MEANING,
                            json_string(tony_exit_status_meaning(am->single.exit_code, meaning, sizeof meaning)));
    }
    if (at->container) json_object_set_new(t, JOB_TASK_CONTAINER, json_string(at->container));
    if (at->log_url) json_object_set_new(t, JOB_TASK_LOG_URL, json_string(at->log_url));
    json_object_set_new(t, JOB_TASK_LOG_DIR, json_string(at->log_dir));
    json_object_set_new(t, JOB_TASK_STDOUT, json_sprintf("%s/stdout", at->log_dir));
    json_object_set_new(t, JOB_TASK_STDERR, json_sprintf("%s/stderr", at->log_dir));
    return t;
}

/* Nodes the job keeps off (bad-node exclusion), and those it would have
 * but for the cap, with why. */
static json_t *excluded_nodes_json(const tony_am *am) {
    json_t *a = json_array();
    const am_exclusion *x = &am->fsm.exclusion;
    for (size_t i = 0; i < x->len; i++) {
        const am_excluded_node *e = &x->items[i];
        json_t *o = json_pack("{s:s,s:s,s:s,s:i,s:I,s:b}", JOB_EXCL_NODE, e->node, JOB_EXCL_TASK, e->task,
                              JOB_EXCL_REASON, e->reason, JOB_EXCL_ATTEMPT, e->attempt, JOB_EXCL_TIME_MS,
                              (json_int_t)am_wall_ms(am, e->t_ms), JOB_EXCL_EXCLUDED, e->refused == NULL);
        if (e->refused) json_object_set_new(o, JOB_EXCL_REFUSED, json_string(e->refused));
        json_array_append_new(a, o);
    }
    return a;
}

/* An elastic job's world (fsm.h): its version, size and each role's
 * count, bounds and target. */
static json_t *world_json(const tony_am *am) {
    const am_fsm *f = &am->fsm;
    json_t *roles = json_object();
    int size = 0;
    for (size_t r = 0; r < am->plan.nroles; r++) {
        const tony_role *role = &am->plan.roles[r];
        int n = am_fsm_world_count(&f->job, role);
        size += n;
        json_object_set_new(roles, role->name,
                            json_pack("{s:i,s:i,s:i,s:i}", JOB_WORLD_ROLE_IN, n, JOB_WORLD_ROLE_MIN, role->min_instances,
                                      JOB_WORLD_ROLE_MAX, role->instances, JOB_WORLD_ROLE_TARGET,
                                      f->world_target[r]));
    }
    return json_pack("{s:i,s:i,s:o}", JOB_WORLD_VERSION, f->world_version, JOB_WORLD_SIZE, size, JOB_WORLD_ROLES,
                     roles);
}

/* The attempts that ended, oldest first, with how (fsm.h's am_attempt_end):
 * an elastic world's change is RESIZED, not FAILED. The current attempt
 * is in once its end is decided. */
static json_t *attempts_json(const am_fsm *f) {
    json_t *a = json_array();
    for (int k = 0; k <= f->job.attempt; k++) {
        am_attempt_end e = k == f->job.attempt ? f->attempt_end : k < f->nends ? f->ends[k] : AM_END_NONE;
        if (e != AM_END_NONE)
            json_array_append_new(a, json_pack("{s:i,s:s}", JOB_ATT_ATTEMPT, k, JOB_ATT_END, am_attempt_end_name(e)));
    }
    return a;
}

/* {role: {state: n}} over every task (the single-node one too). */
static json_t *task_counts_json(const tony_am *am, const json_t *single) {
    json_t *o = json_object();
    for (size_t i = 0; i < am->fsm.job.ntasks; i++) {
        const am_task *t = &am->fsm.job.tasks[i];
        json_t *role = json_object_get(o, t->role->name);
        if (!role) json_object_set_new(o, t->role->name, role = json_object());
        const char *state = am_task_state_name(t->state);
        json_object_set_new(role, state, json_integer(json_integer_value(json_object_get(role, state)) + 1));
    }
    if (single)
        json_object_set_new(o, json_string_value(json_object_get(single, JOB_TASK_ROLE)),
                            json_pack("{s:i}", json_string_value(json_object_get(single, JOB_TASK_STATE)), 1));
    return o;
}

/* The words a filter's states are bits of, in the order of the bits. */
static const char *const filter_states[] = {JOB_TASK_STATE_NEW,       JOB_TASK_STATE_READY,  JOB_TASK_STATE_RUNNING,
                                            JOB_TASK_STATE_SUCCEEDED, JOB_TASK_STATE_FAILED, JOB_TASK_STATE_FINISHED};
#define NFILTER_STATES (sizeof filter_states / sizeof *filter_states)

int am_job_filter_parse(const tony_am *am, const char *states, const char *role, am_job_filter *f, tony_error *err) {
    *f = (am_job_filter){0};
    if (states) {
        const char *p = states;
        do {
            size_t n = strcspn(p, ","), w = 0;
            while (w < NFILTER_STATES && (strlen(filter_states[w]) != n || strncasecmp(p, filter_states[w], n) != 0))
                w++;
            if (w == NFILTER_STATES) {
                tony_strv words = {0};
                for (w = 0; w < NFILTER_STATES; w++) tony_strv_push(&words, filter_states[w]);
                char *allowed = tony_strv_join(&words, ", ");
                tony_strv_free(&words);
                tony_err(err, "%s: '%.*s' is no task state; give one or more of %s, comma-separated (%s=%s,%s)",
                         AM_API_JOB_STATE, (int)(n > 64 ? 64 : n), p, allowed, AM_API_JOB_STATE,
                         JOB_TASK_STATE_FAILED, JOB_TASK_STATE_RUNNING);
                free(allowed);
                return -1;
            }
            f->states |= 1u << w;
            p += n;
        } while (*p++ == ',');
    }
    if (role) {
        for (size_t r = 0; r < am->plan.nroles && !f->role; r++)
            if (strcmp(am->plan.roles[r].name, role) == 0) f->role = am->plan.roles[r].name;
        if (!f->role && am->plan.single_node && strcmp(role, JOB_SINGLE_NODE_ROLE) == 0) f->role = JOB_SINGLE_NODE_ROLE;
        if (!f->role) {
            tony_strv names = {0};
            for (size_t r = 0; r < am->plan.nroles; r++) tony_strv_push(&names, am->plan.roles[r].name);
            if (am->plan.single_node) tony_strv_push(&names, JOB_SINGLE_NODE_ROLE);
            char *allowed = tony_strv_join(&names, ", ");
            tony_err(err, "%s: '%.64s' is no role of this job; its roles: %s", AM_API_JOB_ROLE, role, allowed);
            free(allowed);
            tony_strv_free(&names);
            return -1;
        }
    }
    return 0;
}

/* Whether the filter takes a task of this role in this state (JSON words:
 * a single-node job's task over has the job's final status, and KILLED
 * is none of filter_states). */
static bool filter_takes(const am_job_filter *f, const char *role, const char *state) {
    if (!f) return true;
    if (f->role && strcmp(f->role, role) != 0) return false;
    if (!f->states) return true;
    for (size_t w = 0; w < NFILTER_STATES; w++)
        if ((f->states & (1u << w)) && strcmp(state, filter_states[w]) == 0) return true;
    return false;
}

static json_t *job_json(const tony_am *am, bool paged, size_t offset, size_t limit, const am_job_filter *filter);

json_t *am_job_json(const tony_am *am) { return job_json(am, false, 0, 0, NULL); }

json_t *am_tasks_json(const tony_am *am) {
    json_t *tasks = json_array();
    for (size_t i = 0; i < am->fsm.job.ntasks; i++)
        json_array_append_new(tasks, am_task_json(am, &am->fsm.job.tasks[i]));
    return tasks;
}

json_t *am_job_json_page(const tony_am *am, size_t offset, size_t limit, const am_job_filter *filter) {
    return job_json(am, true, offset, limit, filter);
}

/* paged: only the tasks filter takes, [offset, offset + limit) of them, are
 * listed, with how many it takes, the total and the counts of all (a job of
 * 10,000 tasks is ~10 MB listed whole). */
static json_t *job_json(const tony_am *am, bool paged, size_t offset, size_t limit, const am_job_filter *filter) {
    /* a single-node job runs from the moment its coordinator does */
    const char *state = am->plan.single_node && am->fsm.state != AM_JOB_DONE ? JOB_STATE_RUNNING
                                                                            : am_job_state_name(am->fsm.state);
    json_t *o = json_pack("{s:s,s:s,s:s,s:i,s:s,s:s,s:s,s:I}", JOB_APP_ID, am->id.app_id, JOB_STATE, state,
                          JOB_FINAL_STATUS, am_final_status_name(am->fsm.final_status), JOB_ATTEMPT, am->fsm.job.attempt, JOB_BACKEND,
                          am->backend ? tony_backend_name(am->backend) : "local", JOB_FRAMEWORK, am->plan.framework, JOB_DIR,
                          am->id.job_dir, JOB_STARTED_MS, am_wall_ms(am, am->id.started_ms));
    const char *name = tony_conf_get(am->conf, TONY_KEY_APP_NAME);
    if (name) json_object_set_new(o, JOB_NAME, json_string(name));
    const char *fw_source = tony_conf_get_source(am->conf, TONY_KEY_APP_FRAMEWORK);
    json_object_set_new(o, JOB_FRAMEWORK_DEFAULT, json_boolean(!fw_source || strcmp(fw_source, "default") == 0));
    json_object_set_new(o, JOB_RETRIES_LEFT, json_integer(am->fsm.retries_left));
    json_object_set_new(o, JOB_SINGLE_NODE, json_boolean(am->plan.single_node));
    if (am->id.url) json_object_set_new(o, JOB_URL, json_string(am->id.url));
    if (am->fsm.finished_ms) json_object_set_new(o, JOB_FINISHED_MS, json_integer(am_wall_ms(am, am->fsm.finished_ms)));
    const char *diag = am->fsm.diagnostics ? am->fsm.diagnostics : am->fsm.job.attempt_diagnostics;
    if (diag) json_object_set_new(o, JOB_DIAGNOSTICS, json_string(diag));
    const char *status_error = am_record_status_error(am), *history_error = am_record_history_error(am);
    if (status_error) json_object_set_new(o, JOB_STATUS_ERROR, json_string(status_error));
    if (history_error) json_object_set_new(o, JOB_HISTORY_ERROR, json_string(history_error));
    json_t *cause = am_cause_json(&am->fsm.root_cause);
    if (cause) json_object_set_new(o, JOB_ROOT_CAUSE, cause);
    if (am->fsm.state == AM_JOB_BACKOFF)
        json_object_set_new(o, JOB_RESTART_AT_MS, json_integer(am_wall_ms(am, am->fsm.restart_at_ms)));
    json_t *single = am->plan.single_node && am->single.place.log_dir ? single_node_task_json(am) : NULL;
    size_t total = am->fsm.job.ntasks + (single != NULL);
    /* the advice, once the job is over, is over every task: then every
     * task's JSON is made, else only the page's */
    bool all = !paged || am->fsm.state == AM_JOB_DONE;
    json_t *tasks = all ? json_array() : NULL, *page = paged ? json_array() : NULL;
    size_t matching = 0;
    for (size_t i = 0; i < total; i++) {
        const am_task *t = i < am->fsm.job.ntasks ? &am->fsm.job.tasks[i] : NULL;
        json_t *tj = NULL;
        if (all) json_array_append_new(tasks, tj = t ? am_task_json(am, t) : json_incref(single));
        if (!paged) continue;
        bool takes = t ? filter_takes(filter, t->role->name, am_task_state_name(t->state))
                       : filter_takes(filter, json_string_value(json_object_get(single, JOB_TASK_ROLE)),
                                      json_string_value(json_object_get(single, JOB_TASK_STATE)));
        if (!takes) continue;
        size_t k = matching++; /* its place among those taken */
        if (k < offset || k - offset >= limit) continue;
        json_array_append_new(page, tj ? json_incref(tj) : t ? am_task_json(am, t) : json_incref(single));
    }
    json_object_set_new(o, JOB_TASKS, all ? tasks : page);
    json_object_set_new(o, JOB_ATTEMPTS, attempts_json(&am->fsm));
    json_object_set_new(o, JOB_EXCLUDED_NODES, excluded_nodes_json(am));
    if (am->plan.elastic) json_object_set_new(o, JOB_WORLD, world_json(am));
    /* this coordinator replaced a lost one (fsm.h, am_fsm_recover) */
    if (am->fsm.recover_until_ms)
        json_object_set_new(o, JOB_COORDINATOR_RESTARTED, json_pack("{s:b,s:i}", JOB_COORD_WAITING, am->fsm.recovering,
                                                                  JOB_COORD_ADOPTED, am->fsm.adopted));
    const am_task *tb = am_view_tensorboard_task(am);
    if (tb) {
        json_object_set_new(o, JOB_TENSORBOARD_URL, json_sprintf("http://%s:%d/", tb->host, tb->tb_port));
        json_object_set_new(o, JOB_TENSORBOARD_TASK, json_sprintf("%s:%d", tb->role->name, tb->index));
    }
    /* Right-sizing once the job is over; the numbers are final then. */
    json_object_set_new(o, JOB_ADVICE, (am->fsm.state == AM_JOB_DONE)
                                          ? tony_sizing_advice(tasks, am->plan.sizing_min_run_ms)
                                          : json_array());
    if (paged) {
        if (all) json_object_set_new(o, JOB_TASKS, page); /* the page, out of every task's */
        json_object_set_new(o, JOB_TASKS_TOTAL, json_integer((json_int_t)total));
        json_object_set_new(o, JOB_TASKS_MATCHING, json_integer((json_int_t)matching));
        json_object_set_new(o, JOB_TASK_COUNTS, task_counts_json(am, single));
    }
    json_decref(single);
    const am_history *h = am_record_history(am);
    if (h) {
        /* Where a reader finds it: the HDFS copy on YARN, else the local dir. */
        char *where = am_history_where(h);
        const char *file = strrchr(am_history_file(h), '/');
        json_object_set_new(o, JOB_HISTORY_DIR, json_string(where));
        json_object_set_new(o, JOB_HISTORY_FILE, json_sprintf("%s/%s", where, file ? file + 1 : am_history_file(h)));
        free(where);
    }
    return o;
}

