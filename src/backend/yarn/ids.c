/* YARN id strings and their protobuf forms. Parsing is strict (a typo in an
 * id must not silently address another container) and names the bad id. */
#include "backend/yarn/ids.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/yarn/ids_pb.h"

/* Reads one '_'-terminated (or final) decimal field at *p; false if absent,
 * not all digits, or out of [0, max]. */
static bool next_num(const char **p, bool last, long long max, long long *out) {
    const char *s = *p;
    if (*s < '0' || *s > '9') return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || v > max) return false;
    if (last ? *end != '\0' : *end != '_') return false;
    *p = last ? end : end + 1;
    *out = v;
    return true;
}

static int bad(tony_error *err, const char *kind, const char *s, const char *shape) {
    return tony_err(err, "'%s' is not a YARN %s id (expected %s)", s ? s : "(null)", kind, shape);
}

#define APP_SHAPE "application_<timestamp>_<number>"
#define ATTEMPT_SHAPE "appattempt_<timestamp>_<app>_<attempt>"
#define CONTAINER_SHAPE "container_[e<epoch>_]<timestamp>_<app>_<attempt>_<seq>"

int yarn_app_id_parse(const char *s, yarn_app_id *out, tony_error *err) {
    long long ts, id;
    const char *p = s;
    if (!s || strncmp(p, "application_", 12) != 0) return bad(err, "application", s, APP_SHAPE);
    p += 12;
    if (!next_num(&p, false, INT64_MAX, &ts) || !next_num(&p, true, INT32_MAX, &id))
        return bad(err, "application", s, APP_SHAPE);
    *out = (yarn_app_id){ts, (int32_t)id};
    return 0;
}

int yarn_attempt_id_parse(const char *s, yarn_attempt_id *out, tony_error *err) {
    long long ts, id, att;
    const char *p = s;
    if (!s || strncmp(p, "appattempt_", 11) != 0) return bad(err, "application attempt", s, ATTEMPT_SHAPE);
    p += 11;
    if (!next_num(&p, false, INT64_MAX, &ts) || !next_num(&p, false, INT32_MAX, &id) ||
        !next_num(&p, true, INT32_MAX, &att))
        return bad(err, "application attempt", s, ATTEMPT_SHAPE);
    *out = (yarn_attempt_id){{ts, (int32_t)id}, (int32_t)att};
    return 0;
}

int yarn_container_id_parse(const char *s, yarn_container_id *out, tony_error *err) {
    long long epoch = 0, ts, id, att, seq;
    const char *p = s;
    if (!s || strncmp(p, "container_", 10) != 0) return bad(err, "container", s, CONTAINER_SHAPE);
    p += 10;
    if (*p == 'e') {
        p++;
        if (!next_num(&p, false, 0xffffff, &epoch)) return bad(err, "container", s, CONTAINER_SHAPE);
    }
    if (!next_num(&p, false, INT64_MAX, &ts) || !next_num(&p, false, INT32_MAX, &id) ||
        !next_num(&p, false, INT32_MAX, &att) || !next_num(&p, true, 0xffffffffffLL, &seq))
        return bad(err, "container", s, CONTAINER_SHAPE);
    *out = (yarn_container_id){{{ts, (int32_t)id}, (int32_t)att}, (int64_t)((uint64_t)epoch << 40 | (uint64_t)seq)};
    return 0;
}

char *yarn_app_id_format(const yarn_app_id *a, char *buf, size_t n) {
    snprintf(buf, n, "application_%lld_%04d", (long long)a->cluster_ts, a->id);
    return buf;
}

char *yarn_attempt_id_format(const yarn_attempt_id *a, char *buf, size_t n) {
    snprintf(buf, n, "appattempt_%lld_%04d_%06d", (long long)a->app.cluster_ts, a->app.id, a->attempt);
    return buf;
}

char *yarn_container_id_format(const yarn_container_id *c, char *buf, size_t n) {
    long long epoch = (long long)((uint64_t)c->id >> 40), seq = c->id & 0xffffffffffLL;
    char ep[32] = "";
    if (epoch > 0) snprintf(ep, sizeof ep, "e%02lld_", epoch);
    snprintf(buf, n, "container_%s%lld_%04d_%02d_%06lld", ep, (long long)c->attempt.app.cluster_ts,
             c->attempt.app.id, c->attempt.attempt, seq);
    return buf;
}

void yarn_container_id_from_pb(const Hadoop__Yarn__ContainerIdProto *pb, yarn_container_id *out) {
    memset(out, 0, sizeof *out);
    if (!pb) return;
    const Hadoop__Yarn__ApplicationIdProto *app = NULL;
    if (pb->app_attempt_id) {
        out->attempt.attempt = pb->app_attempt_id->attemptid;
        app = pb->app_attempt_id->application_id;
    }
    if (!app) app = pb->app_id; /* the legacy field, if that is all we got */
    if (app) out->attempt.app = (yarn_app_id){app->cluster_timestamp, app->id};
    out->id = pb->id;
}

Hadoop__Yarn__ContainerIdProto *yarn_container_id_to_pb(const yarn_container_id *c, yarn_container_id_pb *s) {
    hadoop__yarn__application_id_proto__init(&s->app);
    s->app.has_id = s->app.has_cluster_timestamp = 1;
    s->app.id = c->attempt.app.id;
    s->app.cluster_timestamp = c->attempt.app.cluster_ts;
    s->app_legacy = s->app;
    hadoop__yarn__application_attempt_id_proto__init(&s->attempt);
    s->attempt.application_id = &s->app;
    s->attempt.has_attemptid = 1;
    s->attempt.attemptid = c->attempt.attempt;
    hadoop__yarn__container_id_proto__init(&s->cid);
    s->cid.app_id = &s->app_legacy;
    s->cid.app_attempt_id = &s->attempt;
    s->cid.has_id = 1;
    s->cid.id = c->id;
    return &s->cid;
}
