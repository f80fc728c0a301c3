/* The job's credentials in the coordinator, and their refresh from a keytab
 * (see job_credentials.h). */
#include "backend/yarn/job_credentials.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "backend/yarn/kerberos.h"
#include "backend/yarn/webhdfs.h"
#include "backend/yarn/yarn_backend.h"
#include "common/clock.h"
#include "common/fs.h"
#include "common/log.h"

/* A token the coordinator fetched, and renews until its maximum lifetime. */
typedef struct fetched {
    char *url;
    long long expiry_ms, max_ms, renew_at_ms;
} fetched;

/* One HDFS whose token the job holds (alias and service alike). */
typedef struct source {
    char *service;
    char *http;                  /* its NameNodes' WebHDFS addresses */
    long long issue_ms, max_ms;  /* of the token in use; 0: unknown, not refreshed */
    long long fetch_at_ms;       /* when to fetch the next one */
    fetched *mine;
    size_t nmine;
} source;

struct yarn_job_credentials {
    pthread_mutex_t lock; /* creds and generation, for the getters */
    yarn_credentials *creds;
    long long generation;
    char *path;
    /* The refresh: set at load, then only the loop thread changes it. */
    char *principal, *keytab_path;
    source *src;
    size_t nsrc;
    struct event *timer;
    tony_workq *q;
    bool busy; /* a round is out on q */
};

/* Never handed to a task container. */
static const char *const coordinator_only[] = {TONY_YARN_KEYTAB_ALIAS, TONY_YARN_KEYTAB_PRINCIPAL_ALIAS,
                                               TONY_YARN_TOKEN_SOURCES_ALIAS, NULL};

long long yarn_token_fetch_due(long long issue_ms, long long max_ms) { return issue_ms + (max_ms - issue_ms) / 4 * 3; }

long long yarn_token_renew_due(long long now_ms, long long expiry_ms, long long max_ms) {
    if (expiry_ms >= max_ms) return -1; /* cannot be pushed further */
    return now_ms + (expiry_ms > now_ms ? (expiry_ms - now_ms) / 4 * 3 : 0);
}

long long yarn_token_retry_due(long long now_ms, long long deadline_ms) {
    long long wait = deadline_ms > now_ms ? (deadline_ms - now_ms) / 10 : 0;
    if (wait < 1000) wait = 1000;
    if (wait > 300000) wait = 300000;
    return now_ms + wait;
}

/* --- loading */

static char *secret_string(const yarn_credentials *c, const char *alias) {
    const yarn_secret *s = yarn_credentials_find_secret(c, alias);
    return s && s->len ? tony_sprintf("%.*s", (int)s->len, (const char *)s->data) : NULL;
}

/* The sources the client named, with the dates of the tokens in use. */
static void load_sources(yarn_job_credentials *c) {
    char *json = secret_string(c->creds, TONY_YARN_TOKEN_SOURCES_ALIAS);
    json_t *m = json ? json_loads(json, 0, NULL) : NULL;
    free(json);
    const char *service;
    json_t *v;
    json_object_foreach(m, service, v) {
        const yarn_token *t = NULL;
        for (size_t i = 0; i < c->creds->n_tokens && !t; i++)
            if (strcmp(c->creds->tokens[i].alias, service) == 0) t = c->creds->tokens[i].token;
        int64_t issue = 0, max = 0;
        if (!t || !json_is_string(v) || yarn_delegation_token_dates(t, &issue, &max) < 0) {
            tony_warn("credentials: cannot refresh the HDFS token of %s (%s)", service,
                      t ? "its identifier holds no dates" : "the job holds no such token");
            continue;
        }
        c->src = tony_xrealloc(c->src, (c->nsrc + 1) * sizeof *c->src);
        c->src[c->nsrc++] = (source){.service = tony_strdup(service), .http = tony_strdup(json_string_value(v)),
                                     .issue_ms = issue, .max_ms = max,
                                     .fetch_at_ms = yarn_token_fetch_due(issue, max)};
    }
    json_decref(m);
}

int yarn_job_credentials_load(const char *path, yarn_job_credentials **out, tony_error *err) {
    yarn_credentials *creds = NULL;
    if (yarn_credentials_read_file(path, &creds, err)) return -1;
    yarn_job_credentials *c = tony_xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    c->creds = creds;
    c->path = tony_strdup(path);
    c->principal = secret_string(creds, TONY_YARN_KEYTAB_PRINCIPAL_ALIAS);
    if (c->principal && yarn_credentials_find_secret(creds, TONY_YARN_KEYTAB_ALIAS)) load_sources(c);
    *out = c;
    return 0;
}

void yarn_job_credentials_free(yarn_job_credentials *c) {
    if (!c) return;
    yarn_job_credentials_stop_refresh(c);
    if (c->keytab_path) unlink(c->keytab_path);
    for (size_t i = 0; i < c->nsrc; i++) {
        for (size_t k = 0; k < c->src[i].nmine; k++) free(c->src[i].mine[k].url);
        free(c->src[i].mine);
        free(c->src[i].service);
        free(c->src[i].http);
    }
    free(c->src);
    free(c->principal);
    free(c->keytab_path);
    free(c->path);
    yarn_credentials_free(c->creds);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* --- getters */

yarn_token *yarn_job_credentials_amrm(const yarn_job_credentials *c, tony_error *err) {
    const yarn_token *t = yarn_credentials_find_kind(c->creds, YARN_AMRM_TOKEN_KIND);
    if (!t) tony_err(err, "%s holds no %s: the ResourceManager did not start this container as an AM", c->path,
                     YARN_AMRM_TOKEN_KIND);
    return t ? yarn_token_dup(t) : NULL;
}

int yarn_job_credentials_secret(const yarn_job_credentials *c, char **out, tony_error *err) {
    *out = secret_string(c->creds, TONY_YARN_SECRET_ALIAS);
    if (!*out)
        return tony_err(err, "%s holds no secret %s: was the job submitted by `tony submit`?", c->path,
                        TONY_YARN_SECRET_ALIAS);
    return 0;
}

long long yarn_job_credentials_for_tasks(yarn_job_credentials *c, long long have, tony_buf *out) {
    pthread_mutex_lock(&c->lock);
    if (c->generation > have) yarn_credentials_write_for_tasks(c->creds, coordinator_only, out);
    long long g = c->generation;
    pthread_mutex_unlock(&c->lock);
    return g;
}

char *yarn_job_credentials_hdfs_token(yarn_job_credentials *c) {
    pthread_mutex_lock(&c->lock);
    const yarn_token *t = yarn_credentials_find_kind(c->creds, YARN_HDFS_TOKEN_KIND);
    char *s = t ? yarn_token_url_string(t) : NULL;
    pthread_mutex_unlock(&c->lock);
    return s;
}

bool yarn_job_credentials_refreshable(const yarn_job_credentials *c) { return c->principal && c->nsrc; }

/* --- the refresh: one round at a time, planned and applied on the loop,
 * its calls on q's "kdc" lane */

typedef struct round_source {
    bool fetch;
    char **renew; /* URL strings of tokens due for renewal */
    size_t nrenew;
    /* results */
    char *new_url;
    long long new_expiry_ms;
    long long *renewed; /* new expiry per renew entry; -1: failed */
} round_source;

typedef struct round {
    yarn_job_credentials *c;
    round_source *rs; /* one per source */
    int failures;
    tony_error err;   /* the first failure */
} round;

static void schedule(yarn_job_credentials *c);

static void note_failure(round *r, const tony_error *e, const char *doing, const char *service) {
    if (r->failures++ == 0) tony_err(&r->err, "%s (%s): %s", doing, service, e->msg);
}

int yarn_job_credentials_login(yarn_job_credentials *c, tony_error *err) {
    if (!c->keytab_path) return tony_err(err, "the job was submitted without a keytab (tony.keytab.user/location)");
    tony_krb5_identity id;
    if (tony_krb5_login_keytab(c->principal, c->keytab_path, &id, err)) return -1;
    tony_krb5_identity_free(&id);
    return 0;
}

static void round_run(void *arg) {
    round *r = arg;
    yarn_job_credentials *c = r->c;
    tony_krb5_identity id;
    tony_error e;
    /* A fresh ticket each round: a coordinator outlives any ticket. */
    if (tony_krb5_login_keytab(c->principal, c->keytab_path, &id, &e)) {
        note_failure(r, &e, "logging in from the job's keytab", c->principal);
        return;
    }
    for (size_t i = 0; i < c->nsrc; i++) {
        round_source *rs = &r->rs[i];
        const source *s = &c->src[i];
        tony_webhdfs *w = tony_webhdfs_new_at(s->http, "the job's token sources", NULL, NULL, id.short_name);
        tony_webhdfs_use_kerberos(w);
        tony_webhdfs_set_timeouts(w, 20000, 20, 60);
        /* The active NameNode of an HA pair (a standby refuses tokens). */
        if ((rs->fetch || rs->nrenew) && tony_webhdfs_connect(w, &e)) {
            note_failure(r, &e, "reaching the NameNode", s->service);
            for (size_t k = 0; k < rs->nrenew; k++) rs->renewed[k] = -1;
            tony_webhdfs_free(w);
            continue;
        }
        if (rs->fetch) {
            if (tony_webhdfs_delegation_token(w, c->principal, s->service, &rs->new_url, &e) ||
                tony_webhdfs_renew_delegation_token(w, rs->new_url, &rs->new_expiry_ms, &e)) {
                note_failure(r, &e, "fetching a new HDFS delegation token", s->service);
                free(rs->new_url);
                rs->new_url = NULL;
            }
        }
        for (size_t k = 0; k < rs->nrenew; k++)
            if (tony_webhdfs_renew_delegation_token(w, rs->renew[k], &rs->renewed[k], &e)) {
                rs->renewed[k] = -1;
                note_failure(r, &e, "renewing an HDFS delegation token", s->service);
            }
        tony_webhdfs_free(w);
    }
    tony_krb5_identity_free(&id);
}

/* On the loop: the new tokens go into the job's credentials. */
static void apply_new_token(yarn_job_credentials *c, source *s, round_source *rs, long long now) {
    yarn_token *t = NULL;
    tony_error e;
    int64_t issue = 0, max = 0;
    if (yarn_token_from_url_string(rs->new_url, &t, &e) || yarn_delegation_token_dates(t, &issue, &max) < 0) {
        tony_warn("credentials: the NameNode's new token for %s is unreadable; keeping the old one", s->service);
        yarn_token_free(t);
        return;
    }
    if (!*t->service) {
        free(t->service);
        t->service = tony_strdup(s->service);
    }
    pthread_mutex_lock(&c->lock);
    yarn_credentials_set_token(c->creds, s->service, t);
    c->generation++;
    pthread_mutex_unlock(&c->lock);
    yarn_token_free(t);
    s->issue_ms = issue;
    s->max_ms = max;
    s->fetch_at_ms = yarn_token_fetch_due(issue, max);
    s->mine = tony_xrealloc(s->mine, (s->nmine + 1) * sizeof *s->mine);
    s->mine[s->nmine++] = (fetched){.url = rs->new_url, .expiry_ms = rs->new_expiry_ms, .max_ms = max,
                                    .renew_at_ms = yarn_token_renew_due(now, rs->new_expiry_ms, max)};
    rs->new_url = NULL;
    tony_info("credentials: a new HDFS delegation token for %s (generation %lld), valid until %lld s from now at "
              "most; new containers and running tasks get it", s->service, c->generation, (max - now) / 1000);
}

static void round_done(void *arg, bool ran) {
    round *r = arg;
    yarn_job_credentials *c = r->c;
    long long now = tony_wall_ms();
    for (size_t i = 0; i < c->nsrc; i++) {
        source *s = &c->src[i];
        round_source *rs = &r->rs[i];
        if (ran && rs->new_url) apply_new_token(c, s, rs, now);
        else if (rs->fetch) s->fetch_at_ms = yarn_token_retry_due(now, s->max_ms);
        for (size_t k = 0; k < rs->nrenew; k++) {
            for (size_t m = 0; m < s->nmine; m++) {
                fetched *f = &s->mine[m];
                if (strcmp(f->url, rs->renew[k]) != 0) continue;
                if (ran && rs->renewed[k] > 0) {
                    f->expiry_ms = rs->renewed[k];
                    f->renew_at_ms = yarn_token_renew_due(now, f->expiry_ms, f->max_ms);
                } else {
                    f->renew_at_ms = yarn_token_retry_due(now, f->expiry_ms);
                }
            }
            free(rs->renew[k]);
        }
        free(rs->renew);
        free(rs->renewed);
        free(rs->new_url);
        /* Past its maximum nobody can use a token: forget it. */
        size_t kept = 0;
        for (size_t m = 0; m < s->nmine; m++) {
            if (s->mine[m].max_ms > now) s->mine[kept++] = s->mine[m];
            else free(s->mine[m].url);
        }
        s->nmine = kept;
    }
    if (ran && r->failures)
        tony_warn("credentials: %s%s; trying again later", r->err.msg,
                  r->failures > 1 ? " (and more failures)" : "");
    free(r->rs);
    free(r);
    c->busy = false;
    schedule(c);
}

static void on_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    yarn_job_credentials *c = arg;
    if (c->busy) return;
    long long now = tony_wall_ms();
    round *r = tony_xcalloc(1, sizeof *r);
    r->c = c;
    r->rs = tony_xcalloc(c->nsrc, sizeof *r->rs);
    bool any = false;
    for (size_t i = 0; i < c->nsrc; i++) {
        source *s = &c->src[i];
        round_source *rs = &r->rs[i];
        rs->fetch = now >= s->fetch_at_ms;
        rs->renew = tony_xcalloc(s->nmine + 1, sizeof *rs->renew);
        rs->renewed = tony_xcalloc(s->nmine + 1, sizeof *rs->renewed);
        for (size_t m = 0; m < s->nmine; m++)
            if (s->mine[m].renew_at_ms >= 0 && now >= s->mine[m].renew_at_ms)
                rs->renew[rs->nrenew++] = tony_strdup(s->mine[m].url);
        any = any || rs->fetch || rs->nrenew;
    }
    c->busy = true;
    if (!any) { /* the clock moved: nothing due after all */
        round_done(r, false);
        return;
    }
    tony_workq_submit(c->q, YARN_KDC_LANE, round_run, round_done, r);
}

/* The timer for the earliest thing due. */
static void schedule(yarn_job_credentials *c) {
    if (!c->timer) return;
    long long next = -1;
    for (size_t i = 0; i < c->nsrc; i++) {
        const source *s = &c->src[i];
        if (next < 0 || s->fetch_at_ms < next) next = s->fetch_at_ms;
        for (size_t m = 0; m < s->nmine; m++)
            if (s->mine[m].renew_at_ms >= 0 && s->mine[m].renew_at_ms < next) next = s->mine[m].renew_at_ms;
    }
    if (next < 0) return;
    long long wait = next - tony_wall_ms();
    if (wait < 0) wait = 0;
    struct timeval tv = {(time_t)(wait / 1000), (suseconds_t)(wait % 1000 * 1000)};
    evtimer_add(c->timer, &tv);
}

int yarn_job_credentials_start_refresh(yarn_job_credentials *c, struct event_base *base, tony_workq *q,
                                       tony_error *err) {
    if (!yarn_job_credentials_refreshable(c)) return 0;
    const yarn_secret *kt = yarn_credentials_find_secret(c->creds, TONY_YARN_KEYTAB_ALIAS);
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) return tony_err(err, "credentials: cannot read the container's work dir");
    /* In the container's own work dir (private to the job's user, deleted
     * by YARN with the container), never in the log dir YARN serves. */
    c->keytab_path = tony_sprintf("%s/.tony-job.keytab", cwd);
    if (tony_write_file(c->keytab_path, (const char *)kt->data, kt->len, 0600, err)) return -1;
    tony_krb5_identity id;
    if (tony_krb5_login_keytab(c->principal, c->keytab_path, &id, err))
        return tony_err_wrap(err, "the job's keytab (from tony.keytab.location at submit) does not work here, so the "
                                  "job's HDFS tokens cannot be refreshed");
    tony_krb5_identity_free(&id);
    c->q = q;
    c->timer = evtimer_new(base, on_timer, c);
    for (size_t i = 0; i < c->nsrc; i++)
        tony_info("credentials: the HDFS token of %s is refreshed from %s's keytab from %lld s from now on",
                  c->src[i].service, c->principal, (c->src[i].fetch_at_ms - tony_wall_ms()) / 1000);
    schedule(c);
    return 0;
}

void yarn_job_credentials_stop_refresh(yarn_job_credentials *c) {
    if (c->timer) event_free(c->timer);
    c->timer = NULL;
}
