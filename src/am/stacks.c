/* Hang diagnosis, the coordinator's side of the stacks: when the state
 * machine finds a task hung (AM_ACT_HANG) it is said and recorded; each
 * executor then POSTs its task's stacks (executor/stacks.h), which land in
 * <job_dir>/attempts/<n>/stacks/<role>-<index>.txt, where `tony logs
 * --stacks` and the web page (GET .../stacks) find them. */
#include "am/stacks.h"

#include <event2/keyvalq_struct.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "am/record.h"
#include "am/reply.h"
#include "common/amapi.h"
#include "common/fs.h"
#include "common/jobdir.h"
#include "common/log.h"
#include "common/strv.h"

void am_stacks_hang(tony_am *am, const am_task *t, long long idle_ms) {
    char idle[32];
    am_hang_format_ms(idle_ms, idle, sizeof idle);
    tony_warn("%s:%d is hung: no output or progress for %s (tony.task.progress-timeout); collecting every task's "
              "stacks before the attempt ends",
              t->role->name, t->index, idle);
    am_record_task_hung(am, t, idle_ms);
    char *dir = tony_jobdir_stacks_dir(am->id.job_dir, am->fsm.job.attempt);
    tony_error err;
    if (tony_mkdir_p(dir, 0700, &err)) tony_warn("%s", err.msg);
    free(dir);
}

void am_stacks_post(tony_am *am, struct evhttp_request *req, am_task *t, const json_t *body) {
    const char *text = json_string_value(json_object_get(body, AM_API_STACKS_TEXT));
    if (!text) {
        am_reply_error(req, 400, "stacks needs \"" AM_API_STACKS_TEXT "\" (string): what the dump printed");
        return;
    }
    int attempt = am->fsm.job.attempt;
    char *dir = tony_jobdir_stacks_dir(am->id.job_dir, attempt);
    char *path = tony_jobdir_stacks_file(am->id.job_dir, attempt, t->role->name, t->index);
    tony_error err;
    if (tony_mkdir_p(dir, 0700, &err) || tony_write_file(path, text, strlen(text), 0600, &err)) {
        /* the attempt still ends (the wait is bounded); only this file is missing */
        tony_warn("the stacks of %s:%d are lost: %s", t->role->name, t->index, err.msg);
        am_reply_error(req, 500, err.msg);
    } else {
        tony_info("stacks of %s:%d in %s", t->role->name, t->index, path);
        am_record_stacks(am, t, path);
        am_fsm_stacks_in(&am->fsm, t, am_now_ms(), &am->pending);
        am->status_dirty = true;
        am_reply_json(req, 200, json_pack("{s:s}", AM_API_STATUS, AM_API_OK));
        am_kick(am);
    }
    free(path);
    free(dir);
}

void am_stacks_get(tony_am *am, struct evhttp_request *req, const char *role, int index) {
    const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    long long attempt = am->fsm.job.attempt;
    const char *bad = NULL;
    if ((query && strstr(query, "%00")) || evhttp_parse_query_str(query ? query : "", &q) != 0) {
        bad = "malformed query string";
    } else {
        for (struct evkeyval *kv = q.tqh_first; kv && !bad; kv = kv->next.tqe_next) {
            if (strcmp(kv->key, AM_API_TOKEN_PARAM) == 0) continue; /* the read token, checked already */
            if (strcmp(kv->key, AM_API_ATTEMPT) != 0) bad = "unknown parameter; use attempt";
            else if (strspn(kv->value, "0123456789") != strlen(kv->value) || !tony_parse_ll(kv->value, &attempt) ||
                     attempt > am->fsm.job.attempt)
                bad = "attempt must be a number from 0 to the job's current attempt";
        }
    }
    evhttp_clear_headers(&q);
    if (bad) {
        am_reply_error(req, 400, bad);
        return;
    }
    /* the path is built from a role of the plan and numbers, never from the request's text */
    const am_task *t = am_job_task(&am->fsm.job, role, index);
    if (!t) {
        am_reply_error(req, 404, "no such task in this job");
        return;
    }
    char *path = tony_jobdir_stacks_file(am->id.job_dir, (int)attempt, t->role->name, t->index);
    char *data = NULL;
    size_t len = 0;
    if (tony_read_file(path, &data, &len, NULL) == 0) {
        am_reply_text(req, 200, data);
    } else {
        char *msg = tony_sprintf("no stacks of %s:%d in attempt %lld: they are collected only when "
                                 "tony.task.progress-timeout finds the attempt hung",
                                 role, index, attempt);
        am_reply_error(req, 404, msg);
        free(msg);
    }
    free(data);
    free(path);
}
