/* The YARN client half's submit: check the cluster can run the plan, stage
 * the job to HDFS (this very binary included, so nodes need nothing
 * installed) with a manifest the AM localizes from, submit the AM through RM
 * REST; and the looks at the app while the client follows it: RM states
 * first, then the coordinator's own API once it runs. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backend/yarn/cluster_check.h"
#include "backend/yarn/coordfile.h"
#include "backend/yarn/dist_cache.h"
#include "backend/yarn/docker.h"
#include "backend/yarn/hadoop_conf.h"
#include "backend/yarn/kerberos.h"
#include "backend/yarn/history_hdfs.h"
#include "backend/yarn/job_credentials.h"
#include "backend/yarn/rest.h"
#include "backend/yarn/webhdfs.h"
#include "backend/yarn/yarn_backend.h"
#include "backend/yarn/yarn_client.h"
#include "common/fs.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "common/log.h"
#include "common/strv.h"
#include "conf/keys.h"

/* The staging dir holds the job's source, venv, config and resources: the
 * submitting user's alone, like a local job dir (NodeManagers localize them
 * as that user). Dirs an upload creates on its way get u+wx of the file's
 * mode from the NameNode, so 700 as well. */
#define TONY_STAGED_DIR_PERMISSION "700"
#define TONY_STAGED_FILE_PERMISSION "600"

/* The HDFS side of staging: uploads under the job's staging dir and
 * remembers every file for the manifest. */
typedef struct hdfs_sink {
    tony_webhdfs *w;
    const char *staging_path;
    json_t *files;       /* the manifest's "files" */
    bool cluster_failed; /* an HDFS call failed (exit 3), not the user's input */
} hdfs_sink;

static void manifest_add(hdfs_sink *s, const char *name, const char *uri, const tony_hdfs_status *st, bool archive,
                         bool job_file, const char *visibility) {
    json_t *f = json_pack("{s:s, s:s, s:I, s:I, s:s, s:b}", "name", name, "uri", uri, "size", (json_int_t)st->length,
                          "timestamp", (json_int_t)st->mtime_ms, "type", archive ? "ARCHIVE" : "FILE", "job_file",
                          job_file);
    if (visibility) json_object_set_new(f, "visibility", json_string(visibility));
    json_array_append_new(s->files, f);
}

/* tony itself, from the cache (dist_cache.h): every container runs it. */
static int stage_tony(hdfs_sink *s, const tony_conf *conf, const char *user, tony_error *err) {
    tony_yarn_dist d;
    int rc = tony_yarn_dist_stage(s->w, conf, user, s->staging_path, &d, &s->cluster_failed, err);
    if (rc == 0)
        manifest_add(s, TONY_YARN_DIST_LINK, d.uri, &d.st, true, true, d.shared ? TONY_YARN_VISIBILITY_PRIVATE : NULL);
    tony_yarn_dist_free(&d);
    return rc;
}

static int hdfs_put(void *ctx, const char *local, const char *dest, const char *container_name, bool job_file,
                    bool archive, char **where, tony_error *err) {
    hdfs_sink *s = ctx;
    char *path = tony_sprintf("%s/%s", s->staging_path, dest);
    tony_hdfs_status st;
    int rc = tony_webhdfs_put(s->w, local, path, TONY_STAGED_FILE_PERMISSION, &st, err);
    if (rc == 0) {
        *where = tony_webhdfs_uri(s->w, path);
        manifest_add(s, container_name, *where, &st, archive, job_file, NULL);
    } else {
        s->cluster_failed = true;
    }
    free(path);
    return rc;
}

/* A resource already in HDFS is localized from where it is. */
static int hdfs_remote(void *ctx, const char *key, const tony_resource *r, char **where, tony_error *err) {
    hdfs_sink *s = ctx;
    if (!tony_str_starts_with(r->source, "hdfs://"))
        return tony_err(err, "%s: %s: the yarn backend takes local paths and hdfs:// URIs only", key, r->source);
    char *path = NULL;
    if (tony_webhdfs_path_of(s->w, r->source, &path, err)) return tony_err_wrap(err, "%s", key);
    tony_hdfs_status st;
    bool exists = false;
    int rc = tony_webhdfs_stat(s->w, path, &st, &exists, err);
    if (rc) s->cluster_failed = true;
    else if (!exists) rc = tony_err(err, "%s: %s does not exist in HDFS", key, r->source);
    if (rc == 0) {
        manifest_add(s, r->name, r->source, &st, r->archive, false, NULL);
        *where = tony_strdup(r->source);
    }
    free(path);
    return rc;
}

static json_t *kv_entries(const char *const *kv, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i + 1 < n; i += 2) json_array_append_new(a, json_pack("{s:s, s:s}", "key", kv[i], "value", kv[i + 1]));
    return json_pack("{s:o}", "entry", a);
}

static json_t *env_entries(const tony_env *env) {
    json_t *a = json_array();
    for (size_t i = 0; i < env->kv.len; i++) {
        const char *kv = env->kv.items[i], *eq = strchr(kv, '=');
        json_array_append_new(a, json_pack("{s:s%, s:s}", "key", kv, (size_t)(eq - kv), "value", eq + 1));
    }
    return json_pack("{s:o}", "entry", a);
}

static json_t *local_resource(const char *uri, const char *type, const char *visibility, long long size, long long ts) {
    return json_pack("{s:s, s:s, s:s, s:I, s:I}", "resource", uri, "type", type ? type : "FILE", "visibility",
                     visibility ? visibility : "APPLICATION", "size", (json_int_t)size, "timestamp", (json_int_t)ts);
}

/* The job's staging dir on HDFS. */
static char *staging_path_of(const char *user, const char *app_id) {
    return tony_sprintf("/user/%s/.tony/%s", user, app_id);
}

/* Coordinator loss (coordfile.h): whether the tasks outlive a lost
 * coordinator for the next AM attempt to adopt them; with more than one
 * attempt and tony.am.recovery-timeout-ms above 0 (the plan checked it). */
static bool keeps_containers(const tony_conf *conf, long long attempts) {
    long long recovery = 0;
    if (tony_conf_get_ll(conf, TONY_KEY_AM_RECOVERY_TIMEOUT_MS, 300000, &recovery, NULL)) recovery = 0;
    return attempts > 1 && recovery > 0;
}

/* YARN's ACL that names no one: the owner and the cluster's admins
 * (yarn.admin.acl) alone, as YARN's own default for an access type the
 * application did not set. */
#define YARN_ACL_OWNER_ALONE " "

/* An application ACL from its key: the owner alone unless the key widens it. */
static const char *app_acl(const tony_conf *conf, const char *key) {
    const char *v = tony_conf_get(conf, key);
    return v && *v ? v : YARN_ACL_OWNER_ALONE;
}

/* The REST form of an ApplicationSubmissionContext. */
static json_t *submission(const tony_conf *conf, const char *app_id, const json_t *files, const char *manifest_uri,
                          const tony_hdfs_status *manifest_st, long long am_mb, int am_vcores, const char *scheduler,
                          const char *secret, const json_t *tokens, const json_t *coord_secrets,
                          const tony_hadoop_conf *h, const char *user, const tony_env *container_env) {
    json_t *res = json_array();
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f) {
        if (!json_is_true(json_object_get(f, "job_file"))) continue;
        json_array_append_new(res, json_pack("{s:O, s:o}", "key", json_object_get(f, "name"), "value",
                                             local_resource(json_string_value(json_object_get(f, "uri")),
                                                            json_string_value(json_object_get(f, "type")),
                                                            json_string_value(json_object_get(f, "visibility")),
                                                            json_integer_value(json_object_get(f, "size")),
                                                            json_integer_value(json_object_get(f, "timestamp")))));
    }
    json_array_append_new(res, json_pack("{s:s, s:o}", "key", TONY_YARN_MANIFEST, "value",
                                         local_resource(manifest_uri, NULL, NULL, manifest_st->length,
                                                        manifest_st->mtime_ms)));
    /* The coordinator writes the job's history to HDFS (history_hdfs.h). */
    tony_strv nns = {0};
    for (size_t k = 0; k < h->nnns; k++) tony_strv_push(&nns, h->nns[k].http);
    char *nn_list = tony_strv_join(&nns, ",");
    tony_strv_free(&nns);
    tony_env env = {0};
    tony_env_set(&env, "TONY_YARN_SCHEDULER_ADDRESS", scheduler);
    tony_env_set(&env, TONY_YARN_WEBHDFS_ENV, nn_list);
    tony_env_set(&env, TONY_YARN_DEFAULT_FS_ENV, h->default_fs);
    tony_env_set(&env, TONY_YARN_HDFS_USER_ENV, user);
    /* Two levels of restart: tony.am.retry-count inside one coordinator,
     * and YARN's AM attempts when the coordinator's container itself is
     * lost; the next attempt adopts the running tasks (their executors
     * find it through this file), or, with recovery off, reruns the job. */
    long long attempts = 2;
    if (tony_conf_get_ll(conf, TONY_KEY_YARN_MAX_APP_ATTEMPTS, 2, &attempts, NULL) || attempts < 1) attempts = 2;
    bool keep = keeps_containers(conf, attempts);
    if (keep) {
        char *staging = staging_path_of(user, app_id);
        char *file = tony_path_join(staging, TONY_YARN_COORDINATOR_FILE);
        tony_env_set(&env, TONY_YARN_COORDINATOR_FILE_ENV, file);
        free(file);
        free(staging);
    }
    /* TonY's AM container gets tony.containers.envs too; here they also
     * win over ours, which lets a test point the coordinator elsewhere. */
    tony_env_merge(&env, container_env);
    /* The coordinator in its image (docker.h), the command below unchanged:
     * the localized self-contained tony runs in any image. Checked at
     * submit, so it cannot fail here. */
    tony_error derr;
    if (yarn_docker_env(conf, yarn_docker_am_image(conf), &env, &derr)) tony_warn("%s", derr.msg);
    char *b64 = tony_base64_encode(secret, strlen(secret), true);
    const char *secrets[] = {TONY_YARN_SECRET_ALIAS, b64};
    json_t *creds = json_pack("{s:o}", "secrets", kv_entries(secrets, 2));
    const char *alias;
    json_t *v;
    json_object_foreach((json_t *)coord_secrets, alias, v) json_array_append_new(
        json_object_get(json_object_get(creds, "secrets"), "entry"), json_pack("{s:s, s:O}", "key", alias, "value", v));
    /* The job's delegation tokens (secure clusters): the RM renews them and
     * hands them to the AM's container, which hands them to every task. */
    if (tokens && json_object_size(tokens)) {
        json_t *entries = json_array();
        json_object_foreach((json_t *)tokens, alias, v) json_array_append_new(
            entries, json_pack("{s:s, s:O}", "key", alias, "value", v));
        json_object_set_new(creds, "tokens", json_pack("{s:o}", "entry", entries));
    }
    json_t *spec = json_pack("{s:{s:o}, s:o, s:{s:s}, s:o}", "local-resources", "entry", res, "environment",
                             env_entries(&env), "commands", "command",
                             TONY_YARN_TONY_COMMAND " am --yarn 1><LOG_DIR>/am.stdout 2><LOG_DIR>/am.stderr",
                             "credentials", creds);
    /* Who may read the application's containers' logs and its report's
     * details, and who may kill it (where the cluster enforces ACLs): the
     * owner alone unless tony.application.view-acls / modify-acls widen
     * it. TonY let everyone view; a task's output is its owner's here. */
    const char *acls[] = {"VIEW_APP", app_acl(conf, TONY_KEY_APP_VIEW_ACLS), "MODIFY_APP",
                          app_acl(conf, TONY_KEY_APP_MODIFY_ACLS)};
    json_object_set_new(spec, "application-acls", kv_entries(acls, 4));
    free(b64);
    free(nn_list);
    tony_env_free(&env);
    const char *name = tony_conf_get(conf, TONY_KEY_APP_NAME);
    json_t *ctx = json_pack("{s:s, s:s, s:s, s:s, s:i, s:b, s:b, s:{s:I, s:i}, s:o}", "application-id", app_id,
                            "application-name", name && *name ? name : "TonyApplication", "application-type",
                            TONY_YARN_APP_TYPE, "queue", tony_yarn_queue(conf), "max-app-attempts", (int)attempts,
                            "unmanaged-AM", 0, "keep-containers-across-application-attempts", keep, "resource", "memory",
                            (json_int_t)am_mb, "vCores", am_vcores, "am-container-spec", spec);
    tony_strv tags = {0};
    tony_conf_get_list(conf, TONY_KEY_APP_TAGS, &tags);
    if (tags.len) {
        json_t *t = json_array();
        for (size_t k = 0; k < tags.len; k++) json_array_append_new(t, json_string(tags.items[k]));
        json_object_set_new(ctx, "application-tags", json_pack("{s:o}", "tag", t));
    }
    tony_strv_free(&tags);
    tony_yarn_context_set_label(ctx, tony_conf_get(conf, TONY_KEY_APP_NODE_LABEL));
    return ctx;
}

/* Everything the app needs in HDFS; on failure nothing is left there. */
typedef struct staged {
    char *staging_path;
    char *staging_uri;
    json_t *files;
    char *manifest_uri;
    tony_hdfs_status manifest_st;
} staged;

static void staged_free(staged *s) {
    free(s->staging_path);
    free(s->staging_uri);
    free(s->manifest_uri);
    json_decref(s->files);
}

static int stage(tony_webhdfs *w, tony_conf *conf, const tony_stage_input *in, const char *app_id, const char *user,
                 const char *job_dir, staged *out, int *code, tony_error *err) {
    out->staging_path = staging_path_of(user, app_id);
    out->staging_uri = tony_webhdfs_uri(w, out->staging_path);
    out->files = json_array();
    hdfs_sink s = {w, out->staging_path, out->files, false};
    tony_stage_sink sink = {.ctx = &s, .put = hdfs_put, .remote = hdfs_remote, .list_job_files = false};
    char tmpl[] = "/tmp/tony-stage-XXXXXX";
    char *tmp = mkdtemp(tmpl);
    if (!tmp) return tony_err(err, "cannot create a temporary directory under /tmp: %s", strerror(errno));
    int rc = tony_webhdfs_mkdirs(w, out->staging_path, TONY_STAGED_DIR_PERMISSION, err);
    if (rc) s.cluster_failed = true;
    if (rc == 0) rc = stage_tony(&s, conf, user, err);
    char *where = NULL;
    if (rc == 0) rc = tony_stage_files(conf, in, app_id, tmp, &sink, err);
    char *final = tony_path_join(job_dir, TONY_JOBDIR_CONF);
    if (rc == 0) rc = tony_conf_write_file(conf, final, err);
    where = NULL;
    if (rc == 0) rc = hdfs_put(&s, final, TONY_JOBDIR_CONF, TONY_JOBDIR_CONF, true, false, &where, err);
    free(where);
    free(final);
    char *mpath = tony_path_join(tmp, TONY_YARN_MANIFEST);
    if (rc == 0) {
        json_t *m = json_pack("{s:s, s:s, s:s, s:O}", "app_id", app_id, "user", user, "staging_uri", out->staging_uri,
                              "files", out->files);
        char *text = json_dumps(m, JSON_INDENT(2));
        rc = tony_write_file(mpath, text, strlen(text), 0644, err);
        free(text);
        json_decref(m);
    }
    char *remote = tony_sprintf("%s/%s", out->staging_path, TONY_YARN_MANIFEST);
    if (rc == 0) {
        rc = tony_webhdfs_put(w, mpath, remote, TONY_STAGED_FILE_PERMISSION, &out->manifest_st, err);
        if (rc) s.cluster_failed = true;
        else out->manifest_uri = tony_webhdfs_uri(w, remote);
    }
    free(remote);
    free(mpath);
    tony_rm_rf(tmp, NULL);
    if (rc) {
        *code = s.cluster_failed ? TONY_EXIT_UNAVAILABLE : TONY_EXIT_USAGE;
        tony_webhdfs_delete(w, out->staging_path, true, NULL);
    }
    return rc;
}

/* A submitted app this client follows: RM state lines, then the
 * coordinator's own job JSON while it runs. */
typedef struct yarn_job {
    tony_client_job base;
    tony_yarn_rest *rest;
    json_t *app;      /* the RM's last report */
    char *last_state; /* the RM state last said */
    bool kill_sent;
    bool am_done;     /* the coordinator said the job finished */
    int misses;       /* RM calls failed in a row */
} yarn_job;

void tony_yarn_client_poll(tony_client_job *cj, const tony_client_out *out, tony_client_poll *p, tony_error *err) {
    yarn_job *j = (yarn_job *)cj;
    const char *app_id = cj->id;
    json_t *app = NULL;
    tony_error rerr;
    if (tony_yarn_rest_app(j->rest, app_id, &app, &rerr)) {
        /* An RM restart or failover takes a while: keep asking. */
        if (++j->misses >= 60) {
            tony_err(err, "%s (gave up following %s after %d tries; `tony status %s` asks again)", rerr.msg, app_id,
                     j->misses, app_id);
            p->done = true;
            p->code = TONY_EXIT_UNAVAILABLE;
        }
        p->next_ms = 1000;
        return;
    }
    j->misses = 0;
    json_decref(j->app);
    j->app = app;
    tony_yarn_record_update(cj->job_dir, app);
    const char *state = json_string_value(json_object_get(app, "state"));
    if (!state) state = "?";
    if (!j->last_state || strcmp(j->last_state, state) != 0) {
        const char *diag = json_string_value(json_object_get(app, "diagnostics"));
        tony_client_say(out, stdout, "tony: YARN application %s: %s%s%s\n", app_id, state,
                        diag && *diag && strcmp(state, "ACCEPTED") == 0 ? " - " : "",
                        diag && *diag && strcmp(state, "ACCEPTED") == 0 ? diag : "");
        if (strcmp(state, "RUNNING") == 0) {
            tony_client_say(out, stdout, "tony: tracking URL %s\n",
                            json_string_value(json_object_get(app, "trackingUrl")));
            /* the RM's proxy passes no read token on: the page's own link */
            char *am = tony_yarn_am_url(app);
            char *page = am ? tony_jobdir_page_url(cj->job_dir, am) : NULL;
            if (page) tony_client_say(out, stdout, "tony: watch it at %s (the coordinator's web page)\n", page);
            free(page);
            free(am);
        }
        free(j->last_state);
        j->last_state = tony_strdup(state);
    }
    if (strcmp(state, "RUNNING") == 0 && !j->am_done) {
        json_t *job = tony_yarn_am_job(app, cj->job_dir);
        if (job) {
            tony_jobdir_write_json(cj->job_dir, TONY_JOBDIR_STATUS, job, NULL);
            if (tony_job_is_finished(job)) j->am_done = true;
            p->job = job;
        }
    }
    if (tony_yarn_state_final(state)) {
        const char *fs = json_string_value(json_object_get(app, "finalStatus"));
        const char *diag = json_string_value(json_object_get(app, "diagnostics"));
        tony_client_say(out, stdout, "tony: YARN application %s ended: %s, final status %s%s%s\n", app_id, state,
                        fs ? fs : "?", diag && *diag ? "; diagnostics: " : "", diag && *diag ? diag : "");
        p->code = strcmp(state, "FINISHED") == 0 && fs && strcmp(fs, "SUCCEEDED") == 0 ? TONY_EXIT_OK
                                                                                      : TONY_EXIT_JOB_FAILED;
        tony_yarn_status_finalize(cj->job_dir, app);
        p->done = p->final = true;
    }
    /* Faster while the coordinator runs: its final state shows only
     * until it hears our finish or gives up waiting. */
    p->next_ms = strcmp(state, "RUNNING") == 0 ? 500 : 1000;
}

/* Ctrl-C: kill through the RM, which works whether or not the coordinator
 * runs yet; again: stop following, the app goes on being killed. */
bool tony_yarn_client_interrupt(tony_client_job *cj, int count, const tony_client_out *out) {
    yarn_job *j = (yarn_job *)cj;
    if (!j->kill_sent) {
        tony_client_say(out, stderr,
                        "tony: interrupted: killing %s through the ResourceManager (Ctrl-C again to stop following)\n",
                        cj->id);
        tony_error kerr;
        if (tony_yarn_rest_kill(j->rest, cj->id, &kerr)) tony_client_say(out, stderr, "tony: %s\n", kerr.msg);
        j->kill_sent = true;
    }
    if (count <= 1) return false;
    tony_client_say(out, stderr, "tony: stopped following %s; see `tony status %s`\n", cj->id, cj->id);
    return true;
}

void tony_yarn_client_job_finished(tony_client_job *cj, const json_t *job) {
    yarn_job *j = (yarn_job *)cj;
    const char *fs = json_string_value(json_object_get(job, JOB_FINAL_STATUS));
    if (fs && strcmp(fs, JOB_FINAL_STATUS_SUCCEEDED) != 0) tony_yarn_print_log_links(stdout, job, cj->id, true);
    tony_yarn_am_finish(j->app, cj->job_dir);
}

void tony_yarn_client_release(tony_client_job *cj) {
    yarn_job *j = (yarn_job *)cj;
    tony_yarn_rest_free(j->rest);
    json_decref(j->app);
    free(j->last_state);
    tony_client_job_clear(cj);
    free(j);
}

static void write_record(const char *job_dir, const char *rm, const char *app_id, const char *user,
                         const staged *st, const tony_hadoop_conf *h, bool secure) {
    /* Until the AM registers, the RM's own page of the app is the tracking URL. */
    char *tracking = tony_sprintf("%s/cluster/app/%s", rm, app_id);
    json_t *rec = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "backend", "yarn", "rm", rm, "app_id",
                            app_id, "user", user, "staging_uri", st->staging_uri, "staging_path", st->staging_path,
                            "tracking_url", tracking, "namenode_http", h->nns[0].http, "default_fs", h->default_fs);
    /* The verbs that come later talk to the same cluster the same way. */
    if (secure) json_object_set_new(rec, TONY_YARN_RECORD_KERBEROS, json_true());
    free(tracking);
    tony_jobdir_write_json(job_dir, TONY_JOBDIR_YARN, rec, NULL);
    json_decref(rec);
}

/* The host of an http://host:port URL (malloc'ed). */
static char *url_host(const char *url) {
    const char *s = strstr(url, "://");
    s = s ? s + 3 : url;
    return tony_sprintf("%.*s", (int)strcspn(s, ":/"), s);
}

/* One HDFS's delegation token for the job, filed under its service, and
 * where the coordinator may fetch the next one (sources: service -> its
 * NameNodes' WebHDFS addresses). */
static int hdfs_token(tony_webhdfs *w, const tony_hadoop_conf *fs, const char *renewer, json_t *tokens,
                      json_t *sources, tony_error *err) {
    char *service = NULL, *token = NULL;
    int rc = tony_yarn_hdfs_token_service(fs, &service, err);
    if (rc == 0 && !json_object_get(tokens, service)) {
        rc = tony_webhdfs_delegation_token(w, renewer, service, &token, err);
        if (rc == 0) json_object_set_new(tokens, service, json_string(token));
        tony_strv nns = {0};
        for (size_t k = 0; k < fs->nnns; k++) tony_strv_push(&nns, fs->nns[k].http);
        char *http = tony_strv_join(&nns, ",");
        if (rc == 0) json_object_set_new(sources, service, json_string(http));
        free(http);
        tony_strv_free(&nns);
    }
    free(service);
    free(token);
    return rc;
}

/* With a keytab login, what the coordinator needs to refresh the job's
 * tokens (job_credentials.h): the keytab, its principal and the tokens'
 * sources, as secrets of the application's credentials (alias -> base64),
 * which YARN hands only to the AM container (never a file in HDFS, never
 * the env). NULL (and 0) when there is no keytab or the job says
 * tony.keytab.refresh-tokens=false. */
static int coordinator_secrets(const tony_conf *conf, const json_t *sources, json_t **out, tony_error *err) {
    const char *principal, *keytab;
    *out = NULL;
    if (!sources || !tony_krb5_keytab_configured(conf, &principal, &keytab)) return 0;
    const char *refresh = tony_conf_get(conf, TONY_KEYTAB_REFRESH_KEY);
    if (refresh && strcasecmp(refresh, "false") == 0) return 0;
    char *bytes = NULL;
    size_t len = 0;
    /* a keytab holds a few keys: a FIFO or a huge file is a mistake, not read */
    if (tony_read_regular_file(keytab, 16u << 20, "a keytab", &bytes, &len, err))
        return tony_err_wrap(err, "%s: the keytab to hand the coordinator (%s=false keeps it here)",
                             TONY_KEYTAB_LOCATION_KEY, TONY_KEYTAB_REFRESH_KEY);
    char *json = json_dumps(sources, JSON_COMPACT | JSON_SORT_KEYS);
    const char *values[][2] = {{TONY_YARN_KEYTAB_ALIAS, bytes},
                               {TONY_YARN_KEYTAB_PRINCIPAL_ALIAS, principal},
                               {TONY_YARN_TOKEN_SOURCES_ALIAS, json}};
    size_t lens[] = {len, strlen(principal), strlen(json)};
    *out = json_object();
    for (size_t i = 0; i < 3; i++) {
        char *b64 = tony_base64_encode(values[i][1], lens[i], false);
        json_object_set_new(*out, values[i][0], json_string(b64));
        free(b64);
    }
    free(json);
    free(bytes);
    return 0;
}

/* A secure cluster's job gets HDFS delegation tokens that the RM renews, for
 * fs.defaultFS and each of TonY's tony.other.namenodes (alias: the token's
 * service, as Hadoop's clients file it). */
static int job_tokens(tony_webhdfs *w, tony_yarn_rest *rest, const tony_hadoop_conf *h, const tony_conf *conf,
                      const char *user, json_t **tokens, json_t **sources, tony_error *err) {
    char *host = url_host(tony_yarn_rest_url(rest));
    char *renewer = NULL;
    *tokens = json_object();
    *sources = json_object();
    int rc = tony_yarn_rm_principal(h, host, &renewer, err);
    if (rc == 0) rc = hdfs_token(w, h, renewer, *tokens, *sources, err);
    tony_strv others = {0};
    tony_conf_get_list(conf, TONY_KEY_OTHER_NAMENODES, &others);
    for (size_t i = 0; rc == 0 && i < others.len; i++) {
        tony_hadoop_conf *o = NULL;
        rc = tony_hadoop_conf_other_hdfs(h, others.items[i], TONY_KEY_OTHER_NAMENODES, &o, err);
        tony_webhdfs *ow = rc == 0 ? tony_webhdfs_new(o, user) : NULL;
        if (ow) tony_webhdfs_use_kerberos(ow);
        if (rc == 0) rc = tony_webhdfs_connect(ow, err);
        if (rc == 0) rc = hdfs_token(ow, o, renewer, *tokens, *sources, err);
        if (rc) tony_err_wrap(err, "tony.other.namenodes %s", others.items[i]);
        tony_webhdfs_free(ow);
        tony_hadoop_conf_free(o);
    }
    tony_strv_free(&others);
    free(host);
    free(renewer);
    return rc;
}

int tony_yarn_client_submit(const tony_client_submission *sub, tony_client_job **out, tony_error *err) {
    tony_conf *conf = sub->conf;
    const tony_plan *plan = sub->plan;
    const tony_stage_input *in = sub->in;
    int code = TONY_EXIT_USAGE;
    char *user = NULL;
    bool secure = false;
    tony_hadoop_conf *h = tony_hadoop_conf_new();
    tony_yarn_rest *rest = NULL;
    tony_webhdfs *w = NULL;
    json_t *sched = NULL, *labels = NULL, *maxcap = NULL, *ctx = NULL, *tokens = NULL, *sources = NULL;
    json_t *coord_secrets = NULL;
    char *app_id = NULL, *job_dir = NULL, *secret = NULL;
    staged st = {0};
    /* Before the cluster is asked anything: a bad docker key is the user's to fix. */
    if (yarn_docker_check(conf, plan, err)) goto out;
    const char *hc = getenv("HADOOP_CONF_DIR");
    if (!hc || !*hc) {
        tony_err(err, "the yarn backend needs HADOOP_CONF_DIR: the cluster's client configuration directory "
                      "(core-site.xml, hdfs-site.xml, yarn-site.xml)");
        goto out;
    }
    if (tony_hadoop_conf_load(h, hc, conf, err)) goto out;
    if (tony_yarn_client_login(h, conf, &user, &secure, err)) goto out;
    code = TONY_EXIT_UNAVAILABLE;
    rest = tony_yarn_rest_new(user);
    tony_yarn_rest_add_conf(rest, h);
    w = tony_webhdfs_new(h, user);
    if (secure) {
        tony_yarn_rest_use_kerberos(rest);
        tony_webhdfs_use_kerberos(w);
    }
    if (tony_yarn_rest_connect(rest, err)) goto out;
    if (tony_yarn_check_hadoop_version(tony_yarn_rest_hadoop_version(rest), tony_yarn_rest_url(rest), err)) {
        code = TONY_EXIT_USAGE;
        goto out;
    }
    if (tony_webhdfs_connect(w, err)) goto out;
    /* Before anything is staged, so that a refusal leaves nothing behind. */
    if (secure && job_tokens(w, rest, h, conf, user, &tokens, &sources, err)) goto out;
    if (secure && coordinator_secrets(conf, sources, &coord_secrets, err)) goto out;
    if (tony_yarn_rest_get(rest, "/ws/v1/cluster/scheduler", &sched, err)) goto out;
    tony_error lerr;
    if (tony_yarn_rest_get(rest, "/ws/v1/cluster/get-node-labels", &labels, &lerr)) labels = NULL;
    if (tony_yarn_rest_new_application(rest, &app_id, &maxcap, err)) goto out;
    long long am_mb = 0;
    int am_vcores = 0;
    tony_yarn_cluster_info info = {sched, labels, maxcap};
    if (tony_yarn_check_plan(plan, conf, &info, &am_mb, &am_vcores, err)) {
        code = TONY_EXIT_USAGE;
        goto out;
    }
    if (am_mb < plan->am_memory_mb || am_vcores < plan->am_vcores)
        fprintf(stderr, "tony: the AM gets %lld MB / %d vcores, the cluster's maximum (tony.am.memory / tony.am.vcores "
                        "asked %lld MB / %d)\n", am_mb, am_vcores, plan->am_memory_mb, plan->am_vcores);

    char *root = tony_jobs_root(tony_conf_get(conf, TONY_KEY_LOCAL_ROOT));
    job_dir = tony_sprintf("%s/jobs/%s", root, app_id);
    free(root);
    code = TONY_EXIT_USAGE;
    if (tony_mkdir_p(job_dir, 0700, err) || tony_stage_write_secret(job_dir, &secret, err)) goto out;
    if (stage(w, conf, in, app_id, user, job_dir, &st, &code, err)) {
        tony_rm_rf(job_dir, NULL);
        goto out;
    }
    if (*sub->interrupted) {
        /* Ctrl-C while staging: nothing runs yet, so nothing is left. */
        tony_webhdfs_delete(w, st.staging_path, true, NULL);
        tony_rm_rf(job_dir, NULL);
        tony_err(err, "interrupted before %s was submitted; nothing was left in HDFS or the ResourceManager", app_id);
        code = TONY_EXIT_JOB_FAILED;
        goto out;
    }
    const char *scheduler = tony_yarn_rest_scheduler(rest);
    ctx = submission(conf, app_id, st.files, st.manifest_uri, &st.manifest_st, am_mb, am_vcores,
                     scheduler ? scheduler : "", secret, tokens, coord_secrets, h, user, &plan->container_env);
    if (tony_yarn_rest_submit(rest, ctx, err)) {
        code = tony_yarn_rest_unreachable(rest) ? TONY_EXIT_UNAVAILABLE : TONY_EXIT_USAGE;
        tony_webhdfs_delete(w, st.staging_path, true, NULL);
        tony_rm_rf(job_dir, NULL);
        goto out;
    }
    write_record(job_dir, tony_yarn_rest_url(rest), app_id, user, &st, h, secure);
    json_t *report = NULL;
    tony_error rerr;
    if (tony_yarn_rest_app(rest, app_id, &report, &rerr) == 0) tony_yarn_record_update(job_dir, report);
    json_decref(report);
    const char *hv = tony_yarn_rest_hadoop_version(rest);
    printf("tony: job %s submitted to YARN (Hadoop %s, queue %s, user %s)\n", app_id, hv ? hv : "version unknown",
           tony_yarn_queue(conf), user);
    printf("tony: ResourceManager: %s/cluster/app/%s\n", tony_yarn_rest_url(rest), app_id);
    printf("tony: staged in %s\n", st.staging_uri);
    fflush(stdout);
    yarn_job *j = tony_xcalloc(1, sizeof *j);
    tony_client_job_init(&j->base, &tony_yarn_client_ops, app_id, job_dir);
    j->rest = rest;
    rest = NULL;
    *out = &j->base;
    code = TONY_EXIT_OK;
out:
    staged_free(&st);
    json_decref(ctx);
    json_decref(sched);
    json_decref(labels);
    json_decref(maxcap);
    json_decref(tokens);
    json_decref(sources);
    json_decref(coord_secrets);
    free(app_id);
    free(job_dir);
    free(secret);
    free(user);
    tony_webhdfs_free(w);
    tony_yarn_rest_free(rest);
    tony_hadoop_conf_free(h);
    return code;
}
