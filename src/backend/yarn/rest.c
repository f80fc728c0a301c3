/* RM REST calls over common/http (libcurl), with Hadoop's RemoteException
 * bodies turned into sentences and HA failover at connect time: the first
 * candidate that reports haState ACTIVE is used for the whole session. */
#include "backend/yarn/rest.h"

#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/http.h"
#include "common/strv.h"

#define REST_TIMEOUT_MS 15000

typedef struct rm_candidate {
    char *webapp;
    char *from;
    char *scheduler;
} rm_candidate;

struct tony_yarn_rest {
    char *user;
    bool kerberos; /* SPNEGO instead of ?user.name= */
    char *hadoop_version; /* the active RM's clusterInfo.hadoopVersion */
    rm_candidate *rms;
    size_t nrms;
    size_t active; /* index into rms once connected */
    bool unreachable;
};

tony_yarn_rest *tony_yarn_rest_new(const char *user) {
    tony_yarn_rest *r = tony_xcalloc(1, sizeof *r);
    r->user = tony_strdup(user);
    return r;
}

void tony_yarn_rest_free(tony_yarn_rest *r) {
    if (!r) return;
    for (size_t i = 0; i < r->nrms; i++) {
        free(r->rms[i].webapp);
        free(r->rms[i].from);
        free(r->rms[i].scheduler);
    }
    free(r->rms);
    free(r->user);
    free(r->hadoop_version);
    free(r);
}

void tony_yarn_rest_add_rm(tony_yarn_rest *r, const char *webapp, const char *from, const char *scheduler) {
    for (size_t i = 0; i < r->nrms; i++)
        if (strcmp(r->rms[i].webapp, webapp) == 0) return;
    r->rms = tony_xrealloc(r->rms, (r->nrms + 1) * sizeof *r->rms);
    size_t n = strlen(webapp);
    while (n && webapp[n - 1] == '/') n--;
    r->rms[r->nrms++] = (rm_candidate){tony_sprintf("%.*s", (int)n, webapp), tony_strdup(from), tony_strdup(scheduler)};
}

void tony_yarn_rest_add_conf(tony_yarn_rest *r, const tony_hadoop_conf *h) {
    for (size_t i = 0; i < h->nrms; i++)
        tony_yarn_rest_add_rm(r, h->rms[i].webapp, h->rms[i].webapp_from, h->rms[i].scheduler);
}

void tony_yarn_rest_use_kerberos(tony_yarn_rest *r) { r->kerberos = true; }

const char *tony_yarn_rest_hadoop_version(const tony_yarn_rest *r) { return r->hadoop_version; }

bool tony_yarn_rest_unreachable(const tony_yarn_rest *r) { return r->unreachable; }
const char *tony_yarn_rest_url(const tony_yarn_rest *r) { return r->nrms ? r->rms[r->active].webapp : NULL; }
const char *tony_yarn_rest_scheduler(const tony_yarn_rest *r) { return r->nrms ? r->rms[r->active].scheduler : NULL; }

char *tony_yarn_remote_exception(const char *body) {
    json_t *j = body ? json_loads(body, 0, NULL) : NULL;
    json_t *re = json_object_get(j, "RemoteException");
    char *out = NULL;
    if (re) {
        const char *ex = json_string_value(json_object_get(re, "exception"));
        const char *msg = json_string_value(json_object_get(re, "message"));
        out = tony_sprintf("%s: %s", ex ? ex : "RemoteException", msg ? msg : "(no message)");
    }
    json_decref(j);
    return out;
}

char *tony_yarn_user(void) {
    const char *u = getenv("HADOOP_USER_NAME");
    if (u && *u) return tony_strdup(u);
    struct passwd *pw = getpwuid(getuid());
    if (pw) return tony_strdup(pw->pw_name);
    u = getenv("USER");
    return tony_strdup(u && *u ? u : "nobody");
}

json_t *tony_yarn_json_list(json_t *v) {
    if (json_is_array(v)) return json_incref(v);
    json_t *a = json_array();
    if (v && !json_is_null(v)) json_array_append(a, v);
    return a;
}

/* One call against the active RM. ok_status lists accepted codes (0-ended).
 * A non-accepted answer becomes "the ResourceManager at URL refused WHAT: ...". */
static int call(tony_yarn_rest *r, const char *method, const char *path, bool write, const char *body,
                const long *ok_status, const char *what, tony_http_response *resp, tony_error *err) {
    rm_candidate *rm = &r->rms[r->active];
    char *url = write && !r->kerberos
                    ? tony_sprintf("%s%s%suser.name=%s", rm->webapp, path, strchr(path, '?') ? "&" : "?", r->user)
                    : tony_sprintf("%s%s", rm->webapp, path);
    tony_error herr;
    int rc = r->kerberos ? tony_http_call_negotiate(method, url, body, REST_TIMEOUT_MS, resp, &herr)
                         : tony_http_call(method, url, NULL, body, REST_TIMEOUT_MS, resp, &herr);
    free(url);
    r->unreachable = rc != 0;
    if (rc) return tony_err(err, "cannot reach the ResourceManager at %s (from %s): %s", rm->webapp, rm->from, herr.msg);
    for (const long *s = ok_status; *s; s++)
        if (resp->status == *s) return 0;
    if (resp->status == 401 && r->kerberos) {
        tony_err(err, "the ResourceManager at %s refused %s: Kerberos (SPNEGO) authentication failed (HTTP 401); check "
                 "`klist`, and that the KDC knows HTTP/<RM host> (the RM's web principal)", rm->webapp, what);
        tony_http_response_free(resp);
        return -1;
    }
    char *re = tony_yarn_remote_exception(resp->body);
    size_t blen = strcspn(resp->body, "\n");
    tony_err(err, "the ResourceManager at %s refused %s (HTTP %ld): %s%.*s", rm->webapp, what, resp->status,
             re ? re : "", re ? 0 : (int)(blen > 300 ? 300 : blen), resp->body);
    free(re);
    tony_http_response_free(resp);
    return -1;
}

static int call_json(tony_yarn_rest *r, const char *method, const char *path, bool write, const char *body,
                     const long *ok, const char *what, json_t **out, tony_error *err) {
    tony_http_response resp;
    if (call(r, method, path, write, body, ok, what, &resp, err)) return -1;
    json_error_t je;
    *out = json_loads(resp.body, 0, &je);
    tony_http_response_free(&resp);
    if (!*out) return tony_err(err, "the ResourceManager at %s answered %s with invalid JSON: %s", tony_yarn_rest_url(r), what, je.text);
    return 0;
}

int tony_yarn_rest_connect(tony_yarn_rest *r, tony_error *err) {
    if (r->nrms == 0) return tony_err(err, "no ResourceManager address configured (yarn-site.xml)");
    tony_strv problems = {0};
    size_t reached = 0;
    static const long ok[] = {200, 0};
    for (size_t i = 0; i < r->nrms; i++) {
        r->active = i;
        json_t *info = NULL;
        tony_error e;
        if (call_json(r, "GET", "/ws/v1/cluster/info", false, NULL, ok, "the cluster info request", &info, &e)) {
            if (!r->unreachable) reached++;
            tony_strv_push(&problems, e.msg);
            continue;
        }
        reached++;
        json_t *ci = json_object_get(info, "clusterInfo");
        const char *ha = json_string_value(json_object_get(ci, "haState"));
        const char *state = json_string_value(json_object_get(ci, "state"));
        bool active = (!ha || strcmp(ha, "ACTIVE") == 0) && (!state || strcmp(state, "STARTED") == 0);
        if (active) {
            free(r->hadoop_version);
            r->hadoop_version = tony_strdup(json_string_value(json_object_get(ci, "hadoopVersion")));
            json_decref(info);
            tony_strv_free(&problems);
            r->unreachable = false;
            return 0;
        }
        tony_strv_pushf(&problems, "the ResourceManager at %s (from %s) is %s/%s, not the active one", r->rms[i].webapp,
                        r->rms[i].from, state ? state : "?", ha ? ha : "?");
        json_decref(info);
    }
    r->active = 0;
    r->unreachable = reached == 0;
    char *all = tony_strv_join(&problems, "; ");
    tony_err(err, "%s%s", all, r->unreachable ? " (is the cluster up? is HADOOP_CONF_DIR the right one?)" : "");
    free(all);
    tony_strv_free(&problems);
    return -1;
}

int tony_yarn_rest_get(tony_yarn_rest *r, const char *path, json_t **out, tony_error *err) {
    static const long ok[] = {200, 0};
    char *what = tony_sprintf("GET %s", path);
    int rc = call_json(r, "GET", path, false, NULL, ok, what, out, err);
    free(what);
    return rc;
}

int tony_yarn_rest_new_application(tony_yarn_rest *r, char **app_id, json_t **max_capability, tony_error *err) {
    static const long ok[] = {200, 0};
    json_t *j = NULL;
    if (call_json(r, "POST", "/ws/v1/cluster/apps/new-application", true, "", ok, "a new application id", &j, err))
        return -1;
    const char *id = json_string_value(json_object_get(j, "application-id"));
    if (!id) {
        json_decref(j);
        return tony_err(err, "the ResourceManager at %s gave no application-id", tony_yarn_rest_url(r));
    }
    *app_id = tony_strdup(id);
    if (max_capability) *max_capability = json_incref(json_object_get(j, "maximum-resource-capability"));
    json_decref(j);
    return 0;
}

void tony_yarn_context_set_label(json_t *context, const char *label) {
    if (!label || !*label) return;
    json_object_set_new(context, "app-node-label-expression", json_string(label));
    json_object_set_new(context, "am-container-node-label-expression", json_string(label));
}

int tony_yarn_rest_submit(tony_yarn_rest *r, const json_t *context, tony_error *err) {
    static const long ok[] = {200, 202, 0};
    char *body = json_dumps(context, JSON_COMPACT);
    tony_http_response resp;
    int rc = call(r, "POST", "/ws/v1/cluster/apps", true, body, ok, "the application", &resp, err);
    if (rc == 0) tony_http_response_free(&resp);
    free(body);
    return rc;
}

int tony_yarn_rest_app(tony_yarn_rest *r, const char *app_id, json_t **app, tony_error *err) {
    static const long ok[] = {200, 0};
    char *path = tony_sprintf("/ws/v1/cluster/apps/%s", app_id);
    char *what = tony_sprintf("the report of %s", app_id);
    json_t *j = NULL;
    int rc = call_json(r, "GET", path, false, NULL, ok, what, &j, err);
    free(path);
    free(what);
    if (rc) return -1;
    *app = json_incref(json_object_get(j, "app"));
    json_decref(j);
    if (!*app) return tony_err(err, "the ResourceManager at %s gave a report of %s with no \"app\"", tony_yarn_rest_url(r), app_id);
    return 0;
}

int tony_yarn_rest_kill(tony_yarn_rest *r, const char *app_id, tony_error *err) {
    static const long ok[] = {200, 202, 0};
    char *path = tony_sprintf("/ws/v1/cluster/apps/%s/state", app_id);
    char *what = tony_sprintf("to kill %s", app_id);
    tony_http_response resp;
    int rc = call(r, "PUT", path, true, "{\"state\":\"KILLED\"}", ok, what, &resp, err);
    if (rc == 0) tony_http_response_free(&resp);
    free(path);
    free(what);
    return rc;
}
