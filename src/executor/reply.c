/* The executor's reading of its coordinator's answers (reply.h): each
 * verb's statuses, and the checks an answer passes before the executor
 * acts on it. The answer is already signed by the job's coordinator
 * (common/http.c); the checks are defence in depth: a forged or buggy
 * "next" must not make the executor write outside the job's dir. */
#include "executor/reply.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "common/amapi.h"
#include "common/jobdir.h"

/* Refuses the answer: nothing of it read so far is kept. */
static tony_exec_kind invalid(tony_exec_answer *a, char *why) {
    tony_env_free(&a->env);
    memset(&a->env, 0, sizeof a->env);
    a->why = why;
    return a->kind = EXEC_ANS_INVALID;
}

/* A JSON string without NUL bytes (jansson keeps them), or NULL. */
static const char *plain_string(const json_t *v) {
    const char *s = json_string_value(v);
    return s && strlen(s) == json_string_length(v) ? s : NULL;
}

/* Whether path has a ".." component. */
static bool has_dotdot(const char *path) {
    for (const char *p = path; (p = strstr(p, "..")) != NULL; p += 2)
        if ((p == path || p[-1] == '/') && (p[2] == '/' || p[2] == 0)) return true;
    return false;
}

static tony_exec_kind read_next(const json_t *body, const tony_exec_held *held, tony_exec_answer *a) {
    json_t *n = json_object_get(body, AM_API_NEXT_ATTEMPT);
    json_int_t next = json_integer_value(n);
    if (!json_is_integer(n) || next <= held->attempt || next > INT_MAX)
        return invalid(a, tony_sprintf("\"%s\" names no later attempt than %d", AM_API_NEXT, held->attempt));
    json_t *d = json_object_get(body, AM_API_NEXT_LOG_DIR);
    const char *dir = plain_string(d);
    if (d && !json_is_null(d) && !dir) return invalid(a, tony_sprintf("\"%s\" is not a path", AM_API_NEXT_LOG_DIR));
    if (dir && *dir) {
        size_t root = held->job_dir ? strlen(held->job_dir) : 0;
        if (dir[0] != '/' || has_dotdot(dir))
            return invalid(a, tony_sprintf("the next attempt's log dir %s is not an absolute path without \"..\"", dir));
        if (!root || strncmp(dir, held->job_dir, root) != 0 || dir[root] != '/' || !dir[root + 1])
            return invalid(a, tony_sprintf("the next attempt's log dir %s lies outside the job's dir %s", dir,
                                           held->job_dir ? held->job_dir : "(none here)"));
        a->next_log_dir = tony_strdup(dir);
    }
    a->next_attempt = (int)next;
    return a->kind = EXEC_ANS_NEXT;
}

/* The cluster spec's compact text, as the coordinator spliced it out of env
 * values (amapi.h, AM_API_ENV), into *text (malloc'ed); NULL, or why it
 * cannot be had (malloc'ed): the answer is then refused, since a spec read
 * back to other bytes would give the task another env than its coordinator
 * built. */
static char *spec_text(const json_t *body, char **text) {
    *text = NULL;
    json_t *spec = json_object_get(body, AM_API_CLUSTER_SPEC);
    json_t *bytes = json_object_get(body, AM_API_CLUSTER_SPEC_BYTES);
    if (!json_is_object(spec))
        return tony_sprintf("\"%s\" splices values around \"%s\", which is not an object", AM_API_ENV,
                            AM_API_CLUSTER_SPEC);
    if (!json_is_integer(bytes))
        return tony_sprintf("\"%s\" splices values but \"%s\" is not a number", AM_API_ENV,
                            AM_API_CLUSTER_SPEC_BYTES);
    char *t = json_dumps(spec, JSON_COMPACT);
    size_t n = t ? strlen(t) : 0;
    if (!t || (json_int_t)n != json_integer_value(bytes)) {
        char *why = tony_sprintf("\"%s\" reads back as %zu bytes of JSON, not the %lld \"%s\" says: "
                                 "its env values cannot be spliced as the coordinator built them",
                                 AM_API_CLUSTER_SPEC, n, (long long)json_integer_value(bytes),
                                 AM_API_CLUSTER_SPEC_BYTES);
        free(t);
        return why;
    }
    *text = t;
    return NULL;
}

/* An env value sent as [prefix, suffix] around the spec: prefix + spec +
 * suffix, malloc'ed; NULL when v is no such pair. */
static char *spliced_value(const json_t *v, const char *spec) {
    const char *pre = plain_string(json_array_get(v, 0)), *post = plain_string(json_array_get(v, 1));
    if (!json_is_array(v) || json_array_size(v) != 2 || !pre || !post || !spec) return NULL;
    size_t np = strlen(pre), ns = strlen(spec), nq = strlen(post);
    char *out = tony_xmalloc(np + ns + nq + 1);
    memcpy(out, pre, np);
    memcpy(out + np, spec, ns);
    memcpy(out + np + ns, post, nq + 1);
    return out;
}

static tony_exec_kind read_go(const json_t *body, tony_exec_answer *a) {
    const char *command = plain_string(json_object_get(body, AM_API_COMMAND));
    if (!command || !*command) return invalid(a, tony_sprintf("\"%s\" has no command", AM_API_GO));
    json_t *env = json_object_get(body, AM_API_ENV), *v;
    if (env && !json_is_object(env)) return invalid(a, tony_sprintf("\"%s\" is not an object", AM_API_ENV));
    const char *k;
    size_t klen;
    char *spec = NULL; /* the spec's text, read back at the first spliced value */
    json_object_keylen_foreach(env, k, klen, v) {
        const char *val = plain_string(v);
        if (!*k || strlen(k) != klen || strchr(k, '=')) {
            free(spec);
            return invalid(a, tony_sprintf("\"%s\" has a variable named \"%s\"", AM_API_ENV, k));
        }
        if (json_is_array(v) && !spec) {
            char *why = spec_text(body, &spec);
            if (why) return invalid(a, why);
        }
        char *joined = val ? NULL : spliced_value(v, spec);
        if (!val && !joined) {
            free(spec);
            return invalid(a, tony_sprintf("\"%s\" gives %s no text (nor [prefix, suffix] around \"%s\")",
                                           AM_API_ENV, k, AM_API_CLUSTER_SPEC));
        }
        tony_env_set(&a->env, k, val ? val : joined);
        free(joined);
    }
    free(spec);
    json_t *t = json_object_get(body, AM_API_EXECUTION_TIMEOUT_MS);
    if (t && !json_is_integer(t))
        return invalid(a, tony_sprintf("\"%s\" is not a number", AM_API_EXECUTION_TIMEOUT_MS));
    const char *policies = json_string_value(json_object_get(body, AM_API_LOG_POLICIES));
    a->command = tony_strdup(command);
    a->timeout_ms = json_integer_value(t);
    a->log_policies = tony_strdup(policies ? policies : "");
    return a->kind = EXEC_ANS_GO;
}

/* A heartbeat's ride-alongs: credentials newer than the ones held, in
 * base64; others are left (why says so) without failing the heartbeat. */
static void read_credentials(const json_t *body, const tony_exec_held *held, tony_exec_answer *a) {
    const json_t *c = json_object_get(body, TONY_HEARTBEAT_CREDENTIALS);
    json_t *g = json_object_get(c, TONY_HEARTBEAT_CREDENTIALS_GENERATION);
    const char *data = plain_string(json_object_get(c, TONY_HEARTBEAT_CREDENTIALS_DATA));
    if (!c || (json_is_integer(g) && json_integer_value(g) <= held->credentials)) return;
    if (!json_is_integer(g) || !data)
        a->why = tony_sprintf("the refreshed credentials have no generation or no data; keeping the old ones");
    else if (tony_base64_decode(data, strlen(data), &a->credentials_data) < 0) {
        tony_buf_free(&a->credentials_data);
        a->why = tony_sprintf("the refreshed credentials are not base64; keeping the old ones");
    } else
        a->credentials = json_integer_value(g);
}

tony_exec_kind tony_exec_reply_read(const char *verb, long http, const json_t *body, const tony_exec_held *held,
                                    tony_exec_answer *a) {
    memset(a, 0, sizeof *a);
    a->next_attempt = -1;
    const char *st = json_string_value(json_object_get(body, AM_API_STATUS));
    bool stop = st && strcmp(st, AM_API_STOP) == 0;
    if (!body || !json_is_object(body)) return invalid(a, tony_sprintf("HTTP %ld and no JSON object", http));
    if (http == 409 && (!strcmp(verb, AM_API_HEARTBEAT) || !strcmp(verb, AM_API_WATCH))) {
        a->error = tony_strdup(json_string_value(json_object_get(body, AM_API_ERROR)));
        return a->kind = stop ? EXEC_ANS_STOP : EXEC_ANS_STALE;
    }
    if (http != 200) {
        a->error = tony_strdup(json_string_value(json_object_get(body, AM_API_ERROR)));
        return a->kind = EXEC_ANS_REFUSED;
    }
    if (!strcmp(verb, AM_API_HEARTBEAT)) {
        a->dump_stacks = json_is_true(json_object_get(body, AM_API_DUMP_STACKS));
        read_credentials(body, held, a);
        return a->kind = EXEC_ANS_OK;
    }
    bool reg = !strcmp(verb, AM_API_REGISTER), watch = !strcmp(verb, AM_API_WATCH);
    if (!st) return a->kind = reg || watch ? EXEC_ANS_UNKNOWN : EXEC_ANS_OK;
    if (reg && !strcmp(st, AM_API_GO)) return read_go(body, a);
    if ((reg || watch) && !strcmp(st, AM_API_WAIT)) return a->kind = EXEC_ANS_WAIT;
    if (reg && !strcmp(st, AM_API_ADOPTED)) return a->kind = EXEC_ANS_ADOPTED;
    if (watch && stop) return a->kind = EXEC_ANS_STOP;
    if ((reg || !strcmp(verb, AM_API_FINISHED)) && !strcmp(st, AM_API_NEXT)) return read_next(body, held, a);
    return a->kind = reg || watch ? EXEC_ANS_UNKNOWN : EXEC_ANS_OK;
}

void tony_exec_answer_free(tony_exec_answer *a) {
    free(a->why);
    free(a->error);
    free(a->command);
    tony_env_free(&a->env);
    free(a->log_policies);
    free(a->next_log_dir);
    tony_buf_free(&a->credentials_data);
    memset(a, 0, sizeof *a);
    a->next_attempt = -1;
}

char *tony_exec_job_dir_of(const char *log_dir, int attempt, const char *role, int index) {
    char *tail = tony_jobdir_task_dir("", attempt, role, index); /* "/attempts/<attempt>/<role>-<index>" */
    size_t n = log_dir ? strlen(log_dir) : 0, t = strlen(tail);
    char *dir = n > t && log_dir[0] == '/' && strcmp(log_dir + n - t, tail) == 0 ? tony_sprintf("%.*s", (int)(n - t), log_dir)
                                                                               : NULL;
    free(tail);
    return dir;
}
