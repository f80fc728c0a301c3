/* The YARN client half's view of existing jobs: status, kill and list from
 * their local record (yarn.json: which RM, which app, where it was staged)
 * plus the RM's app report and, while the app runs, the coordinator's own
 * /v1/job at the amRPCAddress; and the ops table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/yarn/hadoop_conf.h"
#include "backend/yarn/kerberos.h"
#include "backend/yarn/rest.h"
#include "backend/yarn/webhdfs.h"
#include "backend/yarn/yarn_client.h"
#include "common/amapi.h"
#include "common/fs.h"
#include "common/http.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "common/strv.h"

#define KILL_WAIT_MS 60000

bool tony_yarn_state_final(const char *state) {
    return state && (strcmp(state, "FINISHED") == 0 || strcmp(state, "FAILED") == 0 || strcmp(state, "KILLED") == 0);
}

/* HADOOP_CONF_DIR with a yarn-site.xml: this machine is a cluster's client. */
static bool yarn_configured(char *why, size_t n) {
    const char *hc = getenv("HADOOP_CONF_DIR");
    if (!hc || !*hc) {
        snprintf(why, n, "HADOOP_CONF_DIR is not set");
        return false;
    }
    char *site = tony_path_join(hc, "yarn-site.xml");
    bool yarn = tony_file_exists(site);
    free(site);
    snprintf(why, n, "HADOOP_CONF_DIR=%s has %s yarn-site.xml", hc, yarn ? "a" : "no");
    return yarn;
}

static bool yarn_owns_job(const char *job_dir) {
    char *p = tony_path_join(job_dir, TONY_JOBDIR_YARN);
    bool yes = tony_file_exists(p);
    free(p);
    return yes;
}

json_t *tony_yarn_record_load(const char *job_dir) { return tony_jobdir_read_json(job_dir, TONY_JOBDIR_YARN); }

static void record_save(const char *job_dir, const json_t *rec) { tony_jobdir_write_json(job_dir, TONY_JOBDIR_YARN, rec, NULL); }

void tony_yarn_record_update(const char *job_dir, const json_t *app) {
    json_t *rec = tony_yarn_record_load(job_dir);
    if (!rec) return;
    static const char *fields[][2] = {{"state", "state"},
                                      {"final_status", "finalStatus"},
                                      {"tracking_url", "trackingUrl"},
                                      {"diagnostics", "diagnostics"},
                                      {"am_container_logs", "amContainerLogs"}};
    bool changed = false;
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        json_t *v = json_object_get(app, fields[i][1]);
        if (v && !json_equal(v, json_object_get(rec, fields[i][0]))) {
            json_object_set(rec, fields[i][0], v);
            changed = true;
        }
    }
    if (changed) record_save(job_dir, rec);
    json_decref(rec);
}

/* http://host:port of the coordinator's API, from amRPCAddress, or NULL
 * while the AM has not registered one. */
char *tony_yarn_am_url(const json_t *app) {
    const char *addr = json_string_value(json_object_get(app, "amRPCAddress"));
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    long long port = 0;
    if (!colon || colon == addr || !tony_parse_ll(colon + 1, &port) || port <= 0 || port > 65535) return NULL;
    return tony_sprintf("http://%s", addr);
}

/* The app's tracking URL (the RM's web proxy in front of the coordinator)
 * with a trailing '/', or NULL when it cannot be reached: not http(s), or
 * port 0, which an RM reports when its proxy address was configured as an
 * ephemeral port. */
static char *usable_tracking_url(const json_t *app) {
    const char *u = json_string_value(json_object_get(app, "trackingUrl"));
    const char *rest = !u ? NULL : strncmp(u, "http://", 7) == 0 ? u + 7 : strncmp(u, "https://", 8) == 0 ? u + 8 : NULL;
    if (!rest || !*rest) return NULL;
    size_t hostport = strcspn(rest, "/");
    const char *colon = memchr(rest, ':', hostport);
    if (colon && (hostport - (size_t)(colon - rest) == 2 && colon[1] == '0')) return NULL;
    size_t n = strlen(u);
    return n && u[n - 1] == '/' ? tony_strdup(u) : tony_sprintf("%s/", u);
}

json_t *tony_yarn_am_job(const json_t *app, const char *job_dir) {
    char *base = tony_yarn_am_url(app), *token = NULL;
    tony_jobdir_read_token(job_dir, &token, NULL);
    json_t *j = base ? tony_jobdir_fetch_job(base, token) : NULL;
    free(base);
    /* TensorBoard's own address is a node's, often unreachable from where
     * the user is; the coordinator redirects <tracking URL>tensorboard/ to
     * it, and the RM's proxy follows (that redirect needs no read token:
     * am/api.c). */
    char *tracking = j && json_is_string(json_object_get(j, JOB_TENSORBOARD_URL)) ? usable_tracking_url(app) : NULL;
    if (tracking) json_object_set_new(j, JOB_TENSORBOARD_PROXY_URL, json_sprintf("%stensorboard/", tracking));
    free(tracking);
    free(token);
    return j;
}

void tony_yarn_am_finish(const json_t *app, const char *job_dir) {
    /* Direct, not through the RM's proxy: it drops our secret header. */
    char *base = tony_yarn_am_url(app);
    if (base) tony_jobdir_post(base, job_dir, AM_API_JOB_FINISH);
    free(base);
}

void tony_yarn_status_finalize(const char *job_dir, const json_t *app) {
    json_t *job = tony_jobdir_read_json(job_dir, TONY_JOBDIR_STATUS);
    if (tony_job_is_finished(job)) {
        json_decref(job);
        return;
    }
    if (!job) job = json_pack("{s:O?, s:s, s:[]}", JOB_APP_ID, json_object_get(app, "id"), JOB_BACKEND, "yarn", JOB_TASKS);
    const char *fs = json_string_value(json_object_get(app, "finalStatus"));
    const char *state = json_string_value(json_object_get(app, "state"));
    /* A FAILED or KILLED app state wins over an UNDEFINED final status. */
    const char *final = state && strcmp(state, "FINISHED") != 0 ? state : fs;
    json_object_set_new(job, JOB_STATE, json_string(JOB_STATE_FINISHED));
    json_object_set_new(job, JOB_FINAL_STATUS, json_string(final ? final : JOB_FINAL_STATUS_FAILED));
    json_object_set(job, JOB_DIAGNOSTICS, json_object_get(app, "diagnostics"));
    tony_jobdir_write_json(job_dir, TONY_JOBDIR_STATUS, job, NULL);
    json_decref(job);
}

void tony_yarn_cleanup_staging(const char *job_dir, bool quiet) {
    json_t *rec = tony_yarn_record_load(job_dir);
    const char *path = json_string_value(json_object_get(rec, "staging_path"));
    const char *nn = json_string_value(json_object_get(rec, "namenode_http"));
    const char *fs = json_string_value(json_object_get(rec, "default_fs"));
    const char *user = json_string_value(json_object_get(rec, "user"));
    if (!rec || json_is_true(json_object_get(rec, "staging_deleted")) || !path || !nn || !fs || !user) {
        json_decref(rec);
        return;
    }
    tony_hadoop_conf *h = tony_hadoop_conf_new();
    h->default_fs = tony_strdup(fs);
    h->nns = tony_xcalloc(1, sizeof *h->nns);
    h->nns[0] = (tony_hadoop_nn){tony_strdup(nn), tony_sprintf("namenode_http in %s/%s", job_dir, TONY_JOBDIR_YARN)};
    h->nnns = 1;
    tony_webhdfs *w = tony_webhdfs_new(h, user);
    tony_error err;
    int rc = 0;
    if (json_is_true(json_object_get(rec, TONY_YARN_RECORD_KERBEROS))) {
        /* This process's ticket: kinit's, or the keytab's submit logged in with. */
        rc = tony_krb5_ready(NULL, &err);
        if (rc == 0) tony_webhdfs_use_kerberos(w);
    }
    if (rc == 0) rc = tony_webhdfs_delete(w, path, true, &err);
    if (rc) {
        if (!quiet) fprintf(stderr, "tony: warning: could not delete the staging dir %s: %s\n", path, err.msg);
    } else {
        json_object_set_new(rec, "staging_deleted", json_true());
        record_save(job_dir, rec);
    }
    tony_webhdfs_free(w);
    tony_hadoop_conf_free(h);
    json_decref(rec);
}

/* A REST client for the job's RM: the one it was submitted to, then those of
 * HADOOP_CONF_DIR (an HA pair may have failed over since), where the verb's
 * own keys win as they do for submit. */
tony_yarn_rest *tony_yarn_connect_rm(const json_t *rec, const char *job_dir, const tony_conf *conf, tony_error *err) {
    const char *rm = json_string_value(json_object_get(rec, "rm"));
    const char *user = json_string_value(json_object_get(rec, "user"));
    char *me = user ? NULL : tony_yarn_user();
    tony_yarn_rest *r = tony_yarn_rest_new(user ? user : me);
    free(me);
    if (rm) {
        char *from = tony_sprintf("\"rm\" in %s/%s", job_dir, TONY_JOBDIR_YARN);
        tony_yarn_rest_add_rm(r, rm, from, NULL);
        free(from);
    }
    const char *hc = getenv("HADOOP_CONF_DIR");
    bool kerberos = json_is_true(json_object_get(rec, TONY_YARN_RECORD_KERBEROS));
    if (hc && *hc) {
        tony_hadoop_conf *h = tony_hadoop_conf_new();
        if (tony_hadoop_conf_load(h, hc, conf, NULL) == 0) {
            tony_yarn_rest_add_conf(r, h);
            kerberos = kerberos || tony_yarn_kerberized(h, conf);
        }
        tony_hadoop_conf_free(h);
    }
    if (kerberos) {
        if (tony_krb5_ready(conf, err)) {
            tony_yarn_rest_free(r);
            return NULL;
        }
        tony_yarn_rest_use_kerberos(r);
    }
    if (tony_yarn_rest_connect(r, err)) {
        tony_yarn_rest_free(r);
        return NULL;
    }
    return r;
}

json_t *tony_yarn_record_open(const char *job_dir, const char **app_id) {
    json_t *rec = tony_yarn_record_load(job_dir);
    *app_id = json_string_value(json_object_get(rec, "app_id"));
    if (*app_id) return rec;
    fprintf(stderr, "tony: error: %s/%s is unreadable or has no app_id\n", job_dir, TONY_JOBDIR_YARN);
    json_decref(rec);
    return NULL;
}

static int yarn_state(const char *job_dir, const tony_conf *conf, tony_client_state *st) {
    const char *app_id;
    json_t *rec = tony_yarn_record_open(job_dir, &app_id);
    if (!rec) return TONY_EXIT_UNAVAILABLE;
    tony_error err;
    json_t *app = NULL, *job = NULL;
    int code = TONY_EXIT_OK;
    tony_yarn_rest *rest = tony_yarn_connect_rm(rec, job_dir, conf, &err);
    if (!rest || tony_yarn_rest_app(rest, app_id, &app, &err)) {
        fprintf(stderr, "tony: error: %s\ntony: showing what was last recorded in %s\n", err.msg, job_dir);
        code = TONY_EXIT_UNAVAILABLE;
        app = json_pack("{s:O?, s:O?, s:O?, s:O?}", "state", json_object_get(rec, "state"), "finalStatus",
                        json_object_get(rec, "final_status"), "diagnostics", json_object_get(rec, "diagnostics"),
                        "trackingUrl", json_object_get(rec, "tracking_url"));
    } else {
        tony_yarn_record_update(job_dir, app);
    }
    const char *state = json_string_value(json_object_get(app, "state"));
    if (code == TONY_EXIT_OK && state && strcmp(state, "RUNNING") == 0) job = tony_yarn_am_job(app, job_dir);
    st->live = job != NULL;
    if (job) {
        tony_jobdir_write_json(job_dir, TONY_JOBDIR_STATUS, job, NULL);
    } else {
        job = tony_jobdir_read_json(job_dir, TONY_JOBDIR_STATUS);
    }
    const char *fs = json_string_value(json_object_get(app, "finalStatus"));
    const char *diag = json_string_value(json_object_get(app, "diagnostics"));
    const char *url = json_string_value(json_object_get(app, "trackingUrl"));
    tony_buf b = {0};
    tony_buf_printf(&b, "job %s (yarn): %s, final status %s\n", app_id, state ? state : "unknown", fs ? fs : "unknown");
    if (url && *url) tony_buf_printf(&b, "tracking URL: %s\n", url);
    char *am = job ? tony_yarn_am_url(app) : NULL;
    if (am && st->live) {
        char *page = tony_jobdir_page_url(job_dir, am);
        tony_buf_printf(&b, "web page: %s\n", page);
        free(page);
    }
    free(am);
    if (diag && *diag) tony_buf_printf(&b, "diagnostics: %s\n", diag);
    st->headline = b.data;
    st->job = job;
    st->extra = json_pack("{s:s, s:s, s:O}", "app_id", app_id, "backend", "yarn", "yarn", app);
    if (code == TONY_EXIT_OK && tony_yarn_state_final(state)) {
        tony_yarn_status_finalize(job_dir, app);
        st->final = true;
    }
    json_decref(app);
    json_decref(rec);
    tony_yarn_rest_free(rest);
    return code;
}

/* Through the RM, which stops every container of the app. */
static int yarn_kill(const char *job_dir, const tony_conf *conf, json_t **final_job) {
    *final_job = NULL; /* the RM's word is what is shown */
    json_t *rec = tony_yarn_record_load(job_dir);
    const char *app_id = json_string_value(json_object_get(rec, "app_id"));
    tony_error err;
    int code = TONY_EXIT_OK;
    json_t *app = NULL;
    tony_yarn_rest *rest = app_id ? tony_yarn_connect_rm(rec, job_dir, conf, &err) : NULL;
    if (!app_id) {
        tony_err(&err, "%s/%s is unreadable or has no app_id", job_dir, TONY_JOBDIR_YARN);
        code = TONY_EXIT_UNAVAILABLE;
    } else if (!rest || tony_yarn_rest_app(rest, app_id, &app, &err)) {
        code = TONY_EXIT_UNAVAILABLE;
    }
    const char *state = json_string_value(json_object_get(app, "state"));
    if (code == 0 && tony_yarn_state_final(state)) {
        const char *fs = json_string_value(json_object_get(app, "finalStatus"));
        printf("job %s already ended: %s, final status %s\n", app_id, state, fs ? fs : "?");
    } else if (code == 0 && tony_yarn_rest_kill(rest, app_id, &err)) {
        code = tony_yarn_rest_unreachable(rest) ? TONY_EXIT_UNAVAILABLE : TONY_EXIT_JOB_FAILED;
    } else if (code == 0) {
        /* Wait for KILLED, so that "killed" means no container of it runs. */
        for (int waited = 0; !tony_yarn_state_final(state) && waited < KILL_WAIT_MS; waited += 250) {
            tony_sleep_ms(250);
            json_decref(app);
            app = NULL;
            state = NULL;
            if (tony_yarn_rest_app(rest, app_id, &app, &err)) break;
            state = json_string_value(json_object_get(app, "state"));
        }
        if (tony_yarn_state_final(state)) {
            printf("job %s killed: %s\n", app_id, state);
        } else if (!app) {
            tony_err_wrap(&err, "asked the ResourceManager to kill %s, then lost it", app_id);
            code = TONY_EXIT_UNAVAILABLE;
        } else {
            tony_err(&err, "asked the ResourceManager to kill %s, but it is still %s after %d s", app_id,
                     state ? state : "unknown", KILL_WAIT_MS / 1000);
            code = TONY_EXIT_UNAVAILABLE;
        }
    }
    if (app && code == 0) {
        tony_yarn_record_update(job_dir, app);
        tony_yarn_status_finalize(job_dir, app);
        tony_yarn_cleanup_staging(job_dir, false);
    }
    if (code) fprintf(stderr, "tony: error: %s\n", err.msg);
    json_decref(app);
    json_decref(rec);
    tony_yarn_rest_free(rest);
    return code;
}

/* The RM's state as last seen; `tony status` refreshes it. The RM's last
 * report a client saw may be from after the job ended but before the
 * coordinator unregistered (it waits a while for its client:
 * tony.am.wait-client-signal-stop-timeout-sec), when YARN still says
 * RUNNING, final status UNDEFINED: a detached job followed with `tony
 * status`, as Airflow's trigger does, stops looking right then. The
 * coordinator's final word (status.json) then stands for YARN's, which
 * follows it; a final state from the RM is shown as it is. */
static void yarn_list_row(const char *job_dir, tony_client_row *row) {
    json_t *rec = tony_yarn_record_load(job_dir);
    json_t *job = tony_jobdir_read_json(job_dir, TONY_JOBDIR_STATUS);
    const char *s = json_string_value(json_object_get(rec, "state"));
    const char *f = json_string_value(json_object_get(rec, "final_status"));
    if (!tony_yarn_state_final(s) && tony_job_is_finished(job)) {
        s = JOB_STATE_FINISHED;
        f = json_string_value(json_object_get(job, JOB_FINAL_STATUS));
    }
    snprintf(row->state, sizeof row->state, "%s", s ? s : "SUBMITTED");
    snprintf(row->final_status, sizeof row->final_status, "%s", f ? f : "");
    json_decref(rec);
    const char *fw = job ? json_string_value(json_object_get(job, JOB_FRAMEWORK)) : "";
    snprintf(row->framework, sizeof row->framework, "%s", fw ? fw : "");
    json_decref(job);
}

/* Only what the client last saw of the app: a state it never saw end
 * claims nothing. */
static char *yarn_lost_reason(const char *job_dir, const char *app_id) {
    json_t *rec = tony_yarn_record_load(job_dir);
    const char *state = json_string_value(json_object_get(rec, "state"));
    char *reason = NULL;
    if (tony_yarn_state_final(state))
        reason = tony_sprintf("YARN reported the application %s, but its coordinator never finished the "
                              "history (its AM container was lost or killed); `tony status %s` shows the "
                              "last state seen",
                              state, app_id);
    json_decref(rec);
    return reason;
}

const tony_client_backend_ops tony_yarn_client_ops = {
    .name = "yarn",
    .history_on_cluster_fs = true,
    .configured = yarn_configured,
    .owns_job = yarn_owns_job,
    .submit = tony_yarn_client_submit,
    .poll = tony_yarn_client_poll,
    .interrupt = tony_yarn_client_interrupt,
    .job_finished = tony_yarn_client_job_finished,
    .release = tony_yarn_client_release,
    .print_log_links = tony_yarn_print_log_links,
    .state = yarn_state,
    .kill = yarn_kill,
    .logs = tony_yarn_client_logs,
    .list_row = yarn_list_row,
    .cleanup = tony_yarn_cleanup_staging,
    .lost_reason = yarn_lost_reason,
    .open_history_fs = tony_yarn_open_history_fs,
};
