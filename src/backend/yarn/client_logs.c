/* The YARN client half's `tony logs`. While the job runs, output comes through the
 * coordinator's API (which reads it from each task's NodeManager), so -f
 * follows; afterwards straight from the NodeManagers' web services, as long
 * as they keep the files. Log links for status and submit live here too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/yarn/hadoop_conf.h"
#include "backend/yarn/nmweb.h"
#include "backend/yarn/yarn_backend.h"
#include "backend/yarn/yarn_client.h"
#include "common/amapi.h"
#include "common/fs.h"
#include "common/http.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "common/strv.h"

#define NM_TIMEOUT_MS 30000
#define AM_TIMEOUT_MS 15000
#define FOLLOW_POLL_MS 500
/* More tasks than this: status lists only the failed ones' links. */
#define LINKS_ALL_MAX 16

typedef struct ylogs {
    const char *job_dir;
    const char *app_id;
    json_t *app;     /* the RM's report, or what was recorded */
    json_t *job;     /* the coordinator's /v1/job, live or last saved */
    char *am;        /* the live coordinator's URL, or NULL */
    char *token;     /* the job's read token, for am's GETs (NULL: none here) */
    bool aggregated; /* yarn.log-aggregation-enable (HADOOP_CONF_DIR, --conf) */
    bool kerberos;   /* a secure cluster: NodeManagers' web pages want SPNEGO */
    int attempt;
    bool failed;     /* something could not be read */
} ylogs;

static bool is_final(const json_t *app) {
    return tony_yarn_state_final(json_string_value(json_object_get(app, "state")));
}

static void task_name(const json_t *t, char *out, size_t n) {
    const char *role = json_string_value(json_object_get(t, JOB_TASK_ROLE));
    /* a damaged status or answer may have a task without one */
    snprintf(out, n, "%s:%lld", role ? role : "?",
             (long long)json_integer_value(json_object_get(t, JOB_TASK_INDEX)));
}

static void aggregation_hint(const ylogs *y, const char *container) {
    if (!y->aggregated || !is_final(y->app)) return;
    fprintf(stderr, "tony: log aggregation is on: once aggregated, `yarn logs -applicationId %s%s%s` prints them\n",
            y->app_id, container ? " -containerId " : "", container ? container : "");
}

/* The whole of one log file of a container from its NodeManager: 0 and the
 * bytes in out, 1 when the file does not exist (nothing written to it), -1
 * with err when the node cannot be read. */
static int nm_read(const ylogs *y, const char *link, const char *file, tony_buf *out, tony_error *err) {
    char *base, *container;
    if (tony_nmweb_parse_link(link, &base, &container, err)) return -1;
    char *url = tony_nmweb_file_url(base, container, file, 0);
    tony_http_response r;
    int rc = y->kerberos ? tony_http_call_negotiate("GET", url, NULL, NM_TIMEOUT_MS, &r, err)
                         : tony_http_call("GET", url, NULL, NULL, NM_TIMEOUT_MS, &r, err);
    if (rc) {
        tony_err_wrap(err, "cannot reach the NodeManager at %s", base);
    } else if (r.status == 404 && strstr(r.body, "Cannot find this log")) {
        rc = 1;
    } else if (r.status == 404 && strstr(r.body, "Unknown container")) {
        rc = tony_err(err, "the NodeManager at %s no longer has container %s (its application ended and the node "
                           "removed or aggregated the logs)", base, container);
    } else if (r.status != 200) {
        char *nl = strchr(r.body, '\n');
        if (nl) *nl = '\0';
        rc = tony_err(err, "the NodeManager at %s answered HTTP %ld for %s of %s: %.300s", base, r.status, file,
                      container, r.body);
    } else {
        tony_nmweb_log log;
        rc = tony_nmweb_parse_log(r.body, r.len, 0, &log, err);
        if (rc == 0) tony_buf_append(out, log.data, log.len);
        else tony_err_wrap(err, "reading %s of %s from %s", file, container, base);
    }
    if (r.status) tony_http_response_free(&r);
    free(url);
    free(base);
    free(container);
    return rc;
}

/* A job that ended before this client saw its coordinator (submitted with
 * --detach): its tasks from the status the coordinator left in its
 * container's log dir (yarn_backend.h), kept in the job dir from then on. */
static json_t *final_status(const ylogs *y) {
    const char *link = json_string_value(json_object_get(y->app, "amContainerLogs"));
    tony_buf b = {0};
    tony_error err;
    json_t *job = NULL;
    if (link && *link && nm_read(y, link, TONY_YARN_AM_STATUS_LOG, &b, &err) == 0) {
        job = json_loadb(b.data ? b.data : "", b.len, 0, NULL);
        if (job && !json_is_array(json_object_get(job, JOB_TASKS))) {
            json_decref(job);
            job = NULL;
        }
        if (job) tony_jobdir_write_json(y->job_dir, TONY_JOBDIR_STATUS, job, NULL);
    }
    tony_buf_free(&b);
    return job;
}

static void print_bytes(const char *data, size_t n, bool newline_at_end) {
    fwrite(data, 1, n, stdout);
    if (newline_at_end && n && data[n - 1] != '\n') printf("\n");
}

/* Prints one stream through the coordinator from *offset on, until it has
 * no more for now. 0 on success; -1 with err, *gone when the coordinator
 * did not answer at all. */
static int am_read(const ylogs *y, const char *role, long long index, const char *stream, long long *offset,
                   char *last, bool *gone, tony_error *err) {
    *gone = false;
    for (;;) {
        char *url = tony_sprintf("%s" AM_API_TASKS "%s/%lld/" AM_API_LOG "?" AM_API_LOG_STREAM "=%s&" AM_API_LOG_OFFSET "=%lld&" AM_API_ATTEMPT "=%d", y->am, role, index,
                                 stream, *offset, y->attempt);
        tony_http_response r;
        int rc = tony_http_read(url, y->token, AM_TIMEOUT_MS, &r, err);
        free(url);
        if (rc) {
            *gone = true;
            return -1;
        }
        json_t *j = json_loads(r.body, 0, NULL);
        long status = r.status;
        tony_http_response_free(&r);
        if (status != 200 || !j) {
            const char *e = json_string_value(json_object_get(j, "error"));
            tony_err(err, "the coordinator at %s could not give %s:%lld's %s: %s", y->am, role, index, stream,
                     e ? e : "no JSON answer");
            json_decref(j);
            return -1;
        }
        const char *data = json_string_value(json_object_get(j, AM_API_LOG_DATA));
        long long next = json_integer_value(json_object_get(j, AM_API_LOG_NEXT));
        long long size = json_integer_value(json_object_get(j, AM_API_LOG_SIZE));
        if (data && *data) {
            fputs(data, stdout);
            *last = data[strlen(data) - 1];
        }
        fflush(stdout);
        bool more = next > *offset && next < size;
        *offset = next;
        json_decref(j);
        if (!more) return 0;
    }
}

static const json_t *find_task(const ylogs *y, const char *want) {
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(y->job, JOB_TASKS), i, t) {
        char name[96];
        task_name(t, name, sizeof name);
        if (strcmp(name, want) == 0) return t;
    }
    return NULL;
}

/* A finished job's task: from its NodeManager, else from this disk when the
 * container's log dir is here (one-machine clusters), else say where. */
static void show_done_task(ylogs *y, const json_t *t, const char *stream, bool header) {
    char name[96];
    task_name(t, name, sizeof name);
    const char *link = json_string_value(json_object_get(t, JOB_TASK_LOG_URL));
    const char *dir = json_string_value(json_object_get(t, JOB_TASK_LOG_DIR));
    const char *container = json_string_value(json_object_get(t, JOB_TASK_CONTAINER));
    tony_buf b = {0};
    tony_error err;
    if (link) {
        if (header) printf("==> %s %s (%s) <==\n", name, stream, link);
        int rc = nm_read(y, link, stream, &b, &err);
        if (rc == 0) print_bytes(b.data, b.len, header);
        else if (rc == 1 && header) printf("(nothing written to it)\n");
        if (rc < 0) {
            fprintf(stderr, "tony: error: %s: %s\n", name, err.msg);
            aggregation_hint(y, container);
            y->failed = true;
        }
    } else if (dir && tony_is_dir(dir)) {
        char *p = tony_path_join(dir, stream);
        if (header) printf("==> %s %s (%s) <==\n", name, stream, p);
        char *data = NULL;
        size_t len = 0;
        if (tony_read_file(p, &data, &len, NULL) == 0) print_bytes(data, len, header);
        else if (header) printf("(no such file)\n");
        free(data);
        free(p);
    } else {
        const char *host = json_string_value(json_object_get(t, JOB_TASK_HOST));
        fprintf(stderr, "tony: error: %s: its node%s%s has no NodeManager web UI to read from; its %s is there in %s\n",
                name, host ? " " : "", host ? host : "", stream, dir ? dir : "the container's log dir");
        aggregation_hint(y, container);
        y->failed = true;
    }
    tony_buf_free(&b);
}

static void show_live_task(ylogs *y, const json_t *t, const char *stream) {
    const char *role = json_string_value(json_object_get(t, JOB_TASK_ROLE));
    if (!role) return; /* a damaged answer's task: nothing to ask for */
    char name[96];
    task_name(t, name, sizeof name);
    const char *link = json_string_value(json_object_get(t, JOB_TASK_LOG_URL));
    printf("==> %s %s (%s) <==\n", name, stream, link ? link : "through the coordinator");
    long long offset = 0;
    bool gone;
    char last = '\n';
    tony_error err;
    if (am_read(y, role, json_integer_value(json_object_get(t, JOB_TASK_INDEX)), stream, &offset, &last, &gone,
                &err)) {
        fprintf(stderr, "tony: error: %s\n", err.msg);
        y->failed = true;
    }
    if (last != '\n') printf("\n");
}

/* Prints the task's stdout as it grows, through the coordinator, until the
 * job is over; then what the NodeManager still has past that point. */
static void follow_task(ylogs *y, const json_t *t) {
    /* t belongs to y->job, which each poll replaces: keep copies. */
    char name[96], role[64];
    task_name(t, name, sizeof name);
    const char *r = json_string_value(json_object_get(t, JOB_TASK_ROLE));
    snprintf(role, sizeof role, "%s", r ? r : "");
    long long index = json_integer_value(json_object_get(t, JOB_TASK_INDEX)), offset = 0;
    tony_error err;
    bool gone = false;
    char last = '\n';
    while (y->am) {
        if (am_read(y, role, index, "stdout", &offset, &last, &gone, &err) && !gone) {
            fprintf(stderr, "tony: error: %s\n", err.msg);
            y->failed = true;
            return;
        }
        json_t *job = gone ? NULL : tony_jobdir_fetch_job(y->am, y->token);
        bool over = !job || tony_job_is_finished(job);
        if (job && over) {
            /* its last words, then done */
            if (am_read(y, role, index, "stdout", &offset, &last, &gone, &err) && !gone) {
                fprintf(stderr, "tony: error: %s\n", err.msg);
                y->failed = true;
            }
        }
        if (job) {
            json_decref(y->job);
            y->job = job;
        }
        if (over && !gone) return;
        if (!job) break;
        tony_sleep_ms(FOLLOW_POLL_MS);
    }
    /* The coordinator went away first: the rest from the NodeManager. */
    const json_t *now = find_task(y, name);
    const char *link = now ? json_string_value(json_object_get(now, JOB_TASK_LOG_URL)) : NULL;
    tony_buf b = {0};
    int rc = link ? nm_read(y, link, "stdout", &b, &err) : -1;
    if (rc == 0 && (long long)b.len > offset) print_bytes(b.data + offset, b.len - (size_t)offset, false);
    if (rc < 0 && link) {
        fprintf(stderr, "tony: error: %s: %s\n", name, err.msg);
        y->failed = true;
    } else if (!link && offset == 0) {
        fprintf(stderr, "tony: error: the coordinator of %s is gone and %s has no NodeManager log link\n", y->app_id,
                name);
        y->failed = true;
    }
    fflush(stdout);
    tony_buf_free(&b);
}

static void show_am(ylogs *y, const json_t *rec) {
    const char *link = json_string_value(json_object_get(y->app, "amContainerLogs"));
    if (!link) link = json_string_value(json_object_get(rec, "am_container_logs"));
    if (!link || !*link) {
        fprintf(stderr, "tony: error: the coordinator of %s has not started yet: no container to read its log from\n",
                y->app_id);
        y->failed = true;
        return;
    }
    static const char *const files[] = {"am.stderr", "am.stdout"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        tony_buf b = {0};
        tony_error err;
        printf("==> coordinator %s (%s) <==\n", files[i], link);
        int rc = nm_read(y, link, files[i], &b, &err);
        if (rc == 0) print_bytes(b.data, b.len, true);
        else if (rc == 1) printf("(nothing written to it)\n");
        else {
            fprintf(stderr, "tony: error: the coordinator's log: %s\n", err.msg);
            aggregation_hint(y, NULL);
            y->failed = true;
            tony_buf_free(&b);
            break;
        }
        tony_buf_free(&b);
    }
}

/* A hang diagnosis' stacks of task t (am/hang.h), if it has some: from the
 * live coordinator, else from the log dir of its container, where it left
 * them (yarn_backend.h). 1 when shown. */
static int show_stacks(ylogs *y, const json_t *t) {
    char name[96];
    task_name(t, name, sizeof name);
    const char *role = json_string_value(json_object_get(t, JOB_TASK_ROLE));
    int index = (int)json_integer_value(json_object_get(t, JOB_TASK_INDEX));
    if (!role) return 0; /* no task to ask for */
    tony_buf b = {0};
    tony_error err;
    int rc;
    char *where;
    if (y->am) {
        where = tony_sprintf("%s" AM_API_TASKS "%s/%d/" AM_API_STACKS "?" AM_API_ATTEMPT "=%d", y->am, role, index,
                             y->attempt);
        tony_http_response r;
        rc = tony_http_read(where, y->token, AM_TIMEOUT_MS, &r, &err);
        if (rc == 0 && r.status == 200) tony_buf_append(&b, r.body, r.len);
        else if (rc == 0 && r.status == 404) rc = 1;
        else if (rc == 0) rc = tony_err(&err, "the coordinator answered HTTP %ld", r.status);
        if (r.status) tony_http_response_free(&r);
    } else {
        const char *link = json_string_value(json_object_get(y->app, "amContainerLogs"));
        char *file = tony_jobdir_stacks_log_name(y->attempt, role, index);
        where = tony_sprintf("%s/%s", link ? link : "", file);
        rc = link && *link ? nm_read(y, link, file, &b, &err)
                           : tony_err(&err, "the coordinator's container has no log link");
        free(file);
    }
    if (rc == 0) {
        printf("==> %s stacks (%s) <==\n", name, where);
        print_bytes(b.data ? b.data : "", b.len, true);
    } else if (rc < 0) {
        fprintf(stderr, "tony: error: %s's stacks: %s\n", name, err.msg);
        y->failed = true;
    }
    free(where);
    tony_buf_free(&b);
    return rc == 0;
}

static bool aggregation_on(const tony_conf *conf) {
    const char *hc = getenv("HADOOP_CONF_DIR");
    bool on = false;
    if (hc && *hc) {
        tony_hadoop_conf *h = tony_hadoop_conf_new();
        if (tony_hadoop_conf_load(h, hc, conf, NULL) == 0) {
            char *v = tony_hadoop_conf_get(h, "yarn.log-aggregation-enable");
            on = v && strcmp(v, "true") == 0;
            free(v);
        }
        tony_hadoop_conf_free(h);
    }
    return on;
}

int tony_yarn_client_logs(const char *job_dir, const tony_client_logs_opts *o, const tony_conf *conf) {
    const char *app_id;
    json_t *rec = tony_yarn_record_open(job_dir, &app_id);
    if (!rec) return TONY_EXIT_UNAVAILABLE;
    ylogs y = {.job_dir = job_dir, .app_id = app_id, .aggregated = aggregation_on(conf),
               .kerberos = json_is_true(json_object_get(rec, TONY_YARN_RECORD_KERBEROS))};
    tony_error err;
    tony_yarn_rest *rest = tony_yarn_connect_rm(rec, job_dir, conf, &err);
    if (rest && tony_yarn_rest_app(rest, app_id, &y.app, &err) == 0) {
        tony_yarn_record_update(job_dir, y.app);
    } else {
        fprintf(stderr, "tony: warning: %s; using what was last recorded\n", err.msg);
        y.app = json_pack("{s:O?, s:O?}", "state", json_object_get(rec, "state"), "amContainerLogs",
                          json_object_get(rec, "am_container_logs"));
    }
    const char *state = json_string_value(json_object_get(y.app, "state"));
    if (state && strcmp(state, "RUNNING") == 0) {
        y.am = tony_yarn_am_url(y.app);
        tony_jobdir_read_token(job_dir, &y.token, NULL);
        y.job = y.am ? tony_jobdir_fetch_job(y.am, y.token) : NULL;
        if (!y.job) {
            free(y.am);
            y.am = NULL;
        } else {
            tony_jobdir_write_json(job_dir, TONY_JOBDIR_STATUS, y.job, NULL);
        }
    }
    if (!y.job) y.job = tony_jobdir_read_json(job_dir, TONY_JOBDIR_STATUS);
    if (!y.job && is_final(y.app)) y.job = final_status(&y);
    int current = (int)json_integer_value(json_object_get(y.job, JOB_ATTEMPT));
    y.attempt = o->attempt >= 0 ? o->attempt : current;
    int code = TONY_EXIT_OK;
    if (o->am) show_am(&y, rec);
    const json_t *one = NULL;
    if (o->task) {
        one = y.job ? find_task(&y, o->task) : NULL;
        if (!y.job) {
            fprintf(stderr, "tony: error: no task of %s is known yet (its coordinator has not run%s)\n", app_id,
                    state ? "" : ", or the ResourceManager cannot be asked");
            code = TONY_EXIT_UNAVAILABLE;
        } else if (!one) {
            tony_buf names = {0};
            size_t i;
            json_t *t;
            json_array_foreach(json_object_get(y.job, JOB_TASKS), i, t) {
                char name[96];
                task_name(t, name, sizeof name);
                tony_buf_printf(&names, "%s%s", i ? ", " : "", name);
            }
            fprintf(stderr, "tony: error: no task %s in %s; its tasks: %s\n", o->task, app_id,
                    names.data ? names.data : "(none)");
            tony_buf_free(&names);
            code = TONY_EXIT_USAGE;
        }
    }
    if (code == 0 && y.attempt != current && !y.am && !o->stacks) {
        fprintf(stderr, "tony: error: %s ended: only its last attempt's (%d) task logs are known\n", app_id, current);
        code = TONY_EXIT_USAGE;
    }
    if (code == 0 && o->stacks) {
        int shown = 0;
        size_t i;
        json_t *t;
        json_array_foreach(json_object_get(y.job, JOB_TASKS), i, t) {
            if (!one || t == one) shown += show_stacks(&y, t);
        }
        if (shown == 0 && !y.failed) {
            fprintf(stderr, "tony: no stacks in attempt %d%s: they are collected when tony.task.progress-timeout "
                            "finds the attempt hung\n", y.attempt, one ? " for that task" : "");
            code = TONY_EXIT_JOB_FAILED;
        }
    } else if (code == 0 && o->follow) {
        if (!y.am && !is_final(y.app))
            fprintf(stderr, "tony: the coordinator of %s is not running (%s): showing what there is\n", app_id,
                    state ? state : "state unknown");
        follow_task(&y, one);
    } else if (code == 0) {
        size_t i;
        json_t *t;
        json_array_foreach(json_object_get(y.job, JOB_TASKS), i, t) {
            if (one && t != one) continue;
            for (int s = 0; s < 2; s++) {
                const char *stream = s ? "stderr" : "stdout";
                if (y.am) show_live_task(&y, t, stream);
                else show_done_task(&y, t, stream, true);
            }
        }
        /* A job still waiting for its coordinator's container has no logs yet: not an error. */
        if (!y.job && !o->am)
            printf("job %s runs on YARN (%s): no task has run yet, its coordinator has not started\n", app_id,
                   state ? state : "state unknown");
    }
    if (code == 0 && y.failed) code = TONY_EXIT_UNAVAILABLE;
    free(y.am);
    free(y.token);
    json_decref(y.job);
    json_decref(y.app);
    json_decref(rec);
    tony_yarn_rest_free(rest);
    return code;
}

void tony_yarn_print_log_links(FILE *out, const json_t *job, const char *app_id, bool failed_only) {
    const json_t *tasks = json_object_get(job, JOB_TASKS);
    if (json_array_size(tasks) > LINKS_ALL_MAX) failed_only = true;
    size_t i;
    json_t *t;
    bool said = false;
    json_array_foreach(tasks, i, t) {
        const char *link = json_string_value(json_object_get(t, JOB_TASK_LOG_URL));
        json_t *es = json_object_get(t, JOB_TASK_EXIT_STATUS);
        bool failed = json_is_integer(es) && json_integer_value(es) != 0;
        if (!link || (failed_only && !failed)) continue;
        if (!said)
            fprintf(out, "%s (`tony logs %s --task ROLE:INDEX` prints them):\n",
                    failed_only ? "logs of the failed tasks" : "task logs", app_id);
        said = true;
        char name[96];
        task_name(t, name, sizeof name);
        if (failed) fprintf(out, "  %-12s %s  (exit %lld)\n", name, link, (long long)json_integer_value(es));
        else fprintf(out, "  %-12s %s\n", name, link);
    }
}
