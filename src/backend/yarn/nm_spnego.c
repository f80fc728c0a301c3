/* SPNEGO sessions with kerberized NodeManagers (see nm_spnego.h). */
#include "backend/yarn/nm_spnego.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/http.h"
#include "common/log.h"
#include "common/strv.h"

/* A NodeManager that refused a login is not asked again before this. */
#define RETRY_AFTER_MS 10000
#define LOGIN_TIMEOUT_MS 15000

typedef struct session {
    char *base;   /* http://host:port */
    char *cookie; /* "hadoop.auth=...", or NULL */
    bool busy;    /* a login is out */
    long long failed_ms;
} session;

struct yarn_nm_spnego {
    yarn_job_credentials *creds;
    tony_workq *q;
    session *s;
    size_t n;
};

typedef struct login {
    yarn_nm_spnego *sp;
    char *base;
    char *cookie; /* the result */
    tony_error err;
} login;

yarn_nm_spnego *yarn_nm_spnego_new(yarn_job_credentials *creds, tony_workq *q) {
    yarn_nm_spnego *sp = tony_xcalloc(1, sizeof *sp);
    sp->creds = creds;
    sp->q = q;
    return sp;
}

void yarn_nm_spnego_free(yarn_nm_spnego *sp) {
    if (!sp) return;
    for (size_t i = 0; i < sp->n; i++) {
        free(sp->s[i].base);
        free(sp->s[i].cookie);
    }
    free(sp->s);
    free(sp);
}

static session *find(yarn_nm_spnego *sp, const char *base, bool add) {
    for (size_t i = 0; i < sp->n; i++)
        if (strcmp(sp->s[i].base, base) == 0) return &sp->s[i];
    if (!add) return NULL;
    sp->s = tony_xrealloc(sp->s, (sp->n + 1) * sizeof *sp->s);
    sp->s[sp->n] = (session){.base = tony_strdup(base)};
    return &sp->s[sp->n++];
}

static const char *cookie_for(void *ctx, const char *base) {
    session *s = find(ctx, base, false);
    return s ? s->cookie : NULL;
}

/* On the KDC lane: a fresh ticket, then the NodeManager's own page. */
static void login_run(void *arg) {
    login *l = arg;
    if (yarn_job_credentials_login(l->sp->creds, &l->err) == 0) {
        char *url = tony_sprintf("%s/ws/v1/node/info", l->base);
        tony_http_spnego_cookie(url, YARN_HADOOP_AUTH_COOKIE, LOGIN_TIMEOUT_MS, &l->cookie, &l->err);
        free(url);
    }
}

static void login_done(void *arg, bool ran) {
    login *l = arg;
    session *s = find(l->sp, l->base, true);
    s->busy = false;
    if (ran && l->cookie) {
        free(s->cookie);
        s->cookie = l->cookie;
        l->cookie = NULL;
        tony_info("logged in to the NodeManager at %s (Kerberos) for task logs", l->base);
    } else if (ran) {
        s->failed_ms = tony_now_ms();
        tony_warn("cannot log in to the NodeManager at %s for task logs: %s", l->base, l->err.msg);
    }
    free(l->cookie);
    free(l->base);
    free(l);
}

static void refused(void *ctx, const char *base) {
    yarn_nm_spnego *sp = ctx;
    session *s = find(sp, base, true);
    if (s->busy || (s->failed_ms && tony_now_ms() - s->failed_ms < RETRY_AFTER_MS)) return;
    free(s->cookie); /* expired, or never had one */
    s->cookie = NULL;
    s->busy = true;
    login *l = tony_xcalloc(1, sizeof *l);
    l->sp = sp;
    l->base = tony_strdup(base);
    tony_workq_submit(sp->q, YARN_KDC_LANE, login_run, login_done, l);
}

yarn_nmlog_auth yarn_nm_spnego_auth(yarn_nm_spnego *sp) {
    return (yarn_nmlog_auth){.cookie = cookie_for, .refused = refused, .ctx = sp};
}
