/* The coordinator's YARN backend: a heartbeat timer on the coordinator's
 * loop calls allocate, matches granted containers to waiting tasks by
 * priority (one per role, as TonY does), starts `tony executor` in them
 * and reports completed containers through the exit callback.
 *
 * The RPCs never run on the loop: allocate (lane "rm", one at a time) and
 * the NodeManager calls (one lane per node) are jobs on a few worker
 * threads (common/workq.h), whose results come back to the loop, where all
 * of this file's state lives. What the jobs share with the loop: the
 * yarn_amrm's ask table, releases and NMTokens (locked inside amrm.c). Only
 * at the end, after the loop stopped, do finish and shutdown wait for them. */
#include "backend/yarn/yarn_backend.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/yarn/amrm.h"
#include "backend/yarn/coordfile.h"
#include "backend/yarn/docker.h"
#include "backend/yarn/job_credentials.h"
#include "backend/yarn/nm.h"
#include "backend/yarn/nm_spnego.h"
#include "backend/yarn/nmlog.h"
#include "backend/yarn/nmweb.h"
#include "common/clock.h"
#include "common/fs.h"
#include "common/http.h"
#include "common/jobdir.h"
#include "common/log.h"
#include "common/strv.h"
#include "common/taskenv.h"
#include "conf/resource.h"

#define RPC_TIMEOUT_MS 15000
/* The final stops of the containers left at the end, all nodes together:
 * below one call's timeout, so a hung node shows as silent, not as a
 * timed-out call. */
#define FINAL_STOP_MS 10000
#define HEARTBEAT_BUSY_MS 200   /* while asks are outstanding: start the gang fast */
#define HEARTBEAT_IDLE_MS 1000  /* TonY's AM-RM heartbeat */
#define MAX_HEARTBEAT_FAILURES 60
/* RM + this many NodeManagers at once; a hung NM holds one thread. */
#define RPC_THREADS 8

typedef struct manifest_file {
    char *name, *uri;
    long long size, timestamp;
    bool archive, job_file;
    bool private_visibility; /* kept by the NodeManager across jobs (the cached tony) */
} manifest_file;

typedef enum { REQ_PENDING, REQ_RUNNING, REQ_DONE } req_state;

/* One task's container, from the ask to its completion. */
typedef struct yarn_req {
    char *role;
    int index, attempt, priority;
    yarn_resource cap;
    char *label;
    tony_env env;
    char *resources;
    req_state state;
    yarn_container container; /* valid once REQ_RUNNING */
    int exit_status;           /* for exits we report ourselves */
    char *diagnostics;
    bool report_pending;
} yarn_req;

typedef struct yarn_backend {
    tony_backend base;
    struct event_base *ev;
    struct event *heartbeat, *notify;
    tony_workq *q;
    yarn_amrm *amrm;
    yarn_nm_pool *nm;
    yarn_nmlog *logs; /* reads of tasks' logs from their NodeManagers */
    yarn_register_info info;
    char *job_dir; /* the AM container's work dir */
    manifest_file *files;
    size_t nfiles;
    char **roles; /* priority = position + 1 */
    tony_env *role_env; /* by role, as roles: what YARN's Docker runtime reads (docker.h), or nothing */
    size_t nroles;
    const tony_conf *conf;
    yarn_req **reqs;
    size_t nreqs, capreqs;
    int failures;
    bool allocating; /* an allocate job is out */
    bool ask_now;    /* asks changed meanwhile: the next heartbeat at once */
    bool closing;    /* finish/shutdown: replies are only cleaned up */
    bool finished;
    int cluster_nodes; /* as the last allocate said (0: none yet) */
    yarn_job_credentials *creds; /* the AM container's (outlives the backend) */
    yarn_nm_spnego *spnego;      /* logins to kerberized NodeManagers' pages, with a keytab; or NULL */
    /* Coordinator loss: info.previous, the task containers the last AM
     * attempt left running, and which of them a task took back. */
    bool *adopted;
} yarn_backend;

/* --- the manifest written by the client */

static int load_manifest(yarn_backend *b, const char *job_dir, tony_error *err) {
    char *path = tony_path_join(job_dir, TONY_YARN_MANIFEST);
    json_error_t je;
    json_t *m = json_load_file(path, 0, &je);
    int rc = 0;
    if (!m) {
        rc = tony_err(err, "cannot read %s (staged by `tony submit`): %s", path, je.text);
        goto out;
    }
    json_t *files = json_object_get(m, "files");
    size_t i;
    json_t *f;
    b->files = tony_xcalloc(json_array_size(files) + 1, sizeof *b->files);
    json_array_foreach(files, i, f) {
        const char *name = json_string_value(json_object_get(f, "name"));
        const char *uri = json_string_value(json_object_get(f, "uri"));
        const char *type = json_string_value(json_object_get(f, "type"));
        if (!name || !uri) {
            rc = tony_err(err, "%s: entry %zu lacks \"name\" or \"uri\"", path, i);
            break;
        }
        manifest_file *mf = &b->files[b->nfiles++];
        mf->name = tony_strdup(name);
        mf->uri = tony_strdup(uri);
        mf->size = json_integer_value(json_object_get(f, "size"));
        mf->timestamp = json_integer_value(json_object_get(f, "timestamp"));
        mf->archive = type && strcmp(type, "ARCHIVE") == 0;
        mf->job_file = json_is_true(json_object_get(f, "job_file"));
        const char *vis = json_string_value(json_object_get(f, "visibility"));
        mf->private_visibility = vis && strcmp(vis, TONY_YARN_VISIBILITY_PRIVATE) == 0;
    }
    json_decref(m);
out:
    free(path);
    return rc;
}

static const manifest_file *manifest_find(const yarn_backend *b, const char *uri) {
    for (size_t i = 0; i < b->nfiles; i++)
        if (strcmp(b->files[i].uri, uri) == 0) return &b->files[i];
    return NULL;
}

static void add_resource(yarn_local_resource *list, size_t *n, const manifest_file *f) {
    for (size_t i = 0; i < *n; i++)
        if (strcmp(list[i].name, f->name) == 0) return;
    yarn_local_resource *r = &list[(*n)++];
    r->name = f->name;
    r->uri = f->uri;
    r->size = f->size;
    r->timestamp = f->timestamp;
    r->type = f->archive ? YARN_LR_ARCHIVE : YARN_LR_FILE;
    r->visibility = f->private_visibility ? YARN_LR_PRIVATE : YARN_LR_APPLICATION;
}

/* The job's files go into every container; a role's resources (TonY's
 * `uri[#archive]` list, staged by the client) are found by their URI. Local
 * paths are the coordinator's own copies of job files, already included. */
static yarn_local_resource *build_resources(const yarn_backend *b, const char *resources, size_t *n) {
    yarn_local_resource *list = tony_xcalloc(b->nfiles + 1, sizeof *list);
    *n = 0;
    for (size_t i = 0; i < b->nfiles; i++)
        if (b->files[i].job_file) add_resource(list, n, &b->files[i]);
    tony_strv names = {0};
    tony_split_csv(resources, &names);
    for (size_t i = 0; i < names.len; i++) {
        char *uri = tony_strdup(names.items[i]);
        /* TonY's `uri[::name][#archive]`: the manifest knows the name and type */
        char *cut = strchr(uri, '#');
        if (cut) *cut = '\0';
        if ((cut = strstr(uri, "::"))) *cut = '\0';
        const manifest_file *f = manifest_find(b, uri);
        if (f) add_resource(list, n, f);
        else if (strstr(uri, "://")) tony_warn("resource %s is not in %s; not localized", uri, TONY_YARN_MANIFEST);
        free(uri);
    }
    tony_strv_free(&names);
    return list;
}

/* --- requests */

static int role_priority(const yarn_backend *b, const char *role) {
    for (size_t i = 0; i < b->nroles; i++)
        if (strcmp(b->roles[i], role) == 0) return (int)i + 1;
    return 0;
}

static void req_free(yarn_req *r) {
    free(r->role);
    free(r->label);
    free(r->resources);
    free(r->diagnostics);
    tony_env_free(&r->env);
    yarn_container_free(&r->container);
    free(r);
}

static void report_later(yarn_backend *b, yarn_req *r, int exit_status, const char *diag) {
    r->state = REQ_DONE;
    r->exit_status = exit_status;
    free(r->diagnostics);
    r->diagnostics = tony_strdup(diag);
    r->report_pending = true;
    struct timeval zero = {0, 0};
    evtimer_add(b->notify, &zero);
}

/* Exit callbacks may launch or stop other tasks: reports are delivered from
 * a timer, never from inside the loops over reqs. */
static void on_notify(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    yarn_backend *b = arg;
    for (size_t i = 0; i < b->nreqs; i++) {
        yarn_req *r = b->reqs[i];
        if (!r->report_pending) continue;
        r->report_pending = false;
        char *role = tony_strdup(r->role), *diag = tony_strdup(r->diagnostics);
        int index = r->index, attempt = r->attempt, status = r->exit_status;
        /* a NodeManager, host:port: several may share a host */
        char *node = r->container.node_host ? tony_sprintf("%s:%d", r->container.node_host, r->container.node_port)
                                            : NULL;
        b->base.on_exit(b->base.cb_ctx, role, index, attempt, status, diag, node);
        free(node);
        free(role);
        free(diag);
    }
    /* Forget finished requests (reports delivered) to keep the table small. */
    size_t w = 0;
    for (size_t i = 0; i < b->nreqs; i++) {
        yarn_req *r = b->reqs[i];
        if (r->state == REQ_DONE && !r->report_pending) req_free(r);
        else b->reqs[w++] = r;
    }
    b->nreqs = w;
}

static yarn_req *find_by_container(yarn_backend *b, const char *container_id) {
    for (size_t i = 0; i < b->nreqs; i++)
        if (b->reqs[i]->state == REQ_RUNNING && strcmp(b->reqs[i]->container.id, container_id) == 0) return b->reqs[i];
    return NULL;
}

static yarn_req *find_task(yarn_backend *b, const char *role, int index, int attempt) {
    for (size_t i = 0; i < b->nreqs; i++) {
        yarn_req *r = b->reqs[i];
        if (r->state != REQ_DONE && r->index == index && r->attempt == attempt && strcmp(r->role, role) == 0)
            return r;
    }
    return NULL;
}

static void on_started(void *arg, const yarn_nm_reply *rep) {
    yarn_backend *b = arg;
    if (!rep->ran || b->closing) return;
    yarn_req *r = find_by_container(b, rep->container_id);
    if (!r) return; /* ended meanwhile */
    if (rep->rc == 0) {
        tony_debug("%s:%d: the NodeManager started %s", r->role, r->index, rep->container_id);
        return;
    }
    tony_error_log("cannot start %s:%d in %s: %s", r->role, r->index, rep->container_id, rep->err.msg);
    yarn_amrm_release(b->amrm, &r->container);
    report_later(b, r, TONY_EXIT_ABORTED, rep->err.msg);
}

static void on_stopped(void *arg, const yarn_nm_reply *rep) {
    (void)arg;
    if (rep->ran && rep->rc) tony_warn("cannot stop %s: %s", rep->container_id, rep->err.msg);
    /* The completion arrives through allocate. */
}

static void start_container(yarn_backend *b, yarn_req *r) {
    yarn_launch_ctx ctx = {0};
    yarn_local_resource *files = build_resources(b, r->resources, &ctx.n_resources);
    ctx.resources = files;
    /* Where people and the coordinator read the task's output: its
     * NodeManager's log page (none when the node has no web UI). */
    char *link = tony_nmweb_container_log_link(r->container.node_http_address, r->container.id);
    if (link) tony_env_set(&r->env, TASKENV_TASK_LOG_URL, link);
    free(link);
    /* The secret goes in the token file below, never in the env: YARN
     * writes the env into launch_container.sh in the container's log dir. */
    tony_env_unset(&r->env, TASKENV_SECRET);
    ctx.env = &r->env;
    /* YARN writes them to the container's token file and points
     * HADOOP_TOKEN_FILE_LOCATION at it: the user's code reads HDFS with them. */
    tony_buf tokens = {0};
    yarn_job_credentials_for_tasks(b->creds, -1, &tokens);
    ctx.tokens = tokens.len ? tokens.data : NULL;
    ctx.tokens_len = tokens.len;
    /* The NM expands <LOG_DIR> to the container's log dir: the user's
     * stdout/stderr land where YARN's log links and aggregation look. */
    ctx.command = TASKENV_LOG_DIR "=<LOG_DIR> exec " TONY_YARN_TONY_COMMAND " executor 1><LOG_DIR>/executor.out "
                  "2><LOG_DIR>/executor.log";
    yarn_nm_start_async(b->nm, &r->container, &ctx, on_started, b);
    tony_buf_free(&tokens);
    free(files);
}

static void on_allocated(yarn_backend *b, const yarn_container *c) {
    yarn_req *match = NULL;
    for (size_t i = 0; i < b->nreqs && !match; i++)
        if (b->reqs[i]->state == REQ_PENDING && b->reqs[i]->priority == c->priority) match = b->reqs[i];
    if (!match) {
        /* A surplus grant (a stopped task's ask raced with the scheduler). */
        tony_debug("releasing surplus container %s", c->id);
        yarn_amrm_release(b->amrm, c);
        return;
    }
    /* (the ask table already counted this grant down) */
    yarn_container_copy(&match->container, c);
    match->state = REQ_RUNNING;
    tony_info("%s:%d got container %s on %s:%d", match->role, match->index, c->id, c->node_host, c->node_port);
    start_container(b, match);
}

static void on_completed(yarn_backend *b, const yarn_completed *c) {
    yarn_req *r = find_by_container(b, c->id);
    if (!r) { /* released surplus, or an earlier attempt's */
        tony_debug("container %s ended (%d): none of this coordinator's", c->id, c->exit_status);
        return;
    }
    report_later(b, r, c->exit_status, c->diagnostics ? c->diagnostics : "");
}

static bool asks_outstanding(const yarn_backend *b) {
    for (size_t i = 0; i < b->nreqs; i++)
        if (b->reqs[i]->state == REQ_PENDING) return true;
    return false;
}

static void schedule_heartbeat(yarn_backend *b) {
    if (b->closing) return;
    int ms = b->ask_now ? 0 : asks_outstanding(b) ? HEARTBEAT_BUSY_MS : HEARTBEAT_IDLE_MS;
    b->ask_now = false;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(b->heartbeat, &tv);
}

/* The RM is gone for good (or told us to stop): every container we know of
 * is reported lost so the job can decide, instead of waiting forever. */
static void give_up(yarn_backend *b, const char *why) {
    for (size_t i = 0; i < b->nreqs; i++)
        if (b->reqs[i]->state != REQ_DONE) report_later(b, b->reqs[i], TONY_EXIT_ABORTED, why);
}

/* One allocate, on a worker thread: it touches only the yarn_amrm. */
typedef struct alloc_job {
    yarn_backend *b;
    int rc;
    tony_error err;
    yarn_allocation out;
} alloc_job;

static void alloc_run(void *arg) {
    alloc_job *j = arg;
    j->rc = yarn_amrm_allocate(j->b->amrm, 0.5f, &j->out, &j->err);
}

static void alloc_done(void *arg, bool ran) {
    alloc_job *j = arg;
    yarn_backend *b = j->b;
    b->allocating = false;
    if (!ran || b->closing) {
        /* The end: grants are not started, the RM reclaims them with the app. */
    } else if (j->rc) {
        b->failures++;
        tony_warn("allocate failed (%d in a row): %s", b->failures, j->err.msg);
        if (b->failures >= MAX_HEARTBEAT_FAILURES) give_up(b, j->err.msg);
    } else {
        b->failures = 0;
        if (j->out.num_cluster_nodes > 0) b->cluster_nodes = j->out.num_cluster_nodes;
        for (size_t i = 0; i < j->out.n_allocated; i++) on_allocated(b, &j->out.allocated[i]);
        for (size_t i = 0; i < j->out.n_completed; i++) on_completed(b, &j->out.completed[i]);
        if (j->out.command == YARN_AM_CMD_SHUTDOWN)
            give_up(b, "the ResourceManager told the application master to shut down");
    }
    yarn_allocation_free(&j->out);
    free(j);
    schedule_heartbeat(b);
}

static void on_heartbeat(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    yarn_backend *b = arg;
    if (b->closing || b->allocating) return;
    alloc_job *j = tony_xcalloc(1, sizeof *j);
    j->b = b;
    b->allocating = true;
    tony_workq_submit(b->q, "rm", alloc_run, alloc_done, j);
}

/* The AMRMToken from the job's credentials and the scheduler address the
 * client put in our env (nothing in a container names it otherwise). */
static yarn_amrm *amrm_connect(const yarn_job_credentials *creds, tony_error *err) {
    const char *addr = getenv(TONY_YARN_SCHEDULER_ENV);
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    long long port;
    if (!colon || colon == addr || !tony_parse_ll(colon + 1, &port) || port <= 0 || port > 65535) {
        tony_err(err, "%s='%s' is not host:port (set by `tony submit` from yarn.resourcemanager.scheduler.address)",
                 TONY_YARN_SCHEDULER_ENV, addr ? addr : "");
        return NULL;
    }
    yarn_token *t = yarn_job_credentials_amrm(creds, err);
    if (!t) return NULL;
    char *host = tony_sprintf("%.*s", (int)(colon - addr), addr);
    yarn_amrm *am = yarn_amrm_new(host, (int)port, t, err);
    free(host);
    yarn_token_free(t);
    return am;
}

/* Where this coordinator is, for executors whose coordinator was lost
 * (coordfile.h). Written on a lane of the workq: a NameNode that does not
 * answer must not hold the loop (the API, heartbeats) for seconds. Not
 * fatal: only a later coordinator loss needs it. */
typedef struct {
    char *token, *dir, *url;
    int am_attempt, rc;
    tony_error err;
} coordfile_job;

#define COORDFILE_LANE "coordinator file"

static void coordfile_run(void *arg) {
    coordfile_job *j = arg;
    j->rc = yarn_coordfile_write(j->token, j->dir, j->url, j->am_attempt, &j->err);
}

static void coordfile_done(void *arg, bool ran) {
    coordfile_job *j = arg;
    if (!ran) tony_warn("the coordinator's address was not written to HDFS: the coordinator is exiting");
    else if (j->rc < 0)
        tony_warn("%s; the tasks cannot come back to another coordinator if this one is lost", j->err.msg);
    else if (j->rc == 0) tony_info("published this coordinator's address for the tasks (%s)", j->url);
    free(j->token);
    free(j->dir);
    free(j->url);
    free(j);
}

static void publish_address(yarn_backend *b, const char *url) {
    const char *container = getenv(TASKENV_CONTAINER_ID);
    yarn_container_id cid = {0};
    tony_error err;
    coordfile_job *j = tony_xcalloc(1, sizeof *j);
    j->am_attempt = container && yarn_container_id_parse(container, &cid, &err) == 0 ? (int)cid.attempt.attempt : 0;
    j->token = b->creds ? yarn_job_credentials_hdfs_token(b->creds) : NULL;
    j->dir = tony_strdup(b->job_dir);
    j->url = tony_strdup(url);
    tony_workq_submit(b->q, COORDFILE_LANE, coordfile_run, coordfile_done, j);
}

/* --- backend ops */

/* r joins the requests this coordinator tracks (asked for, or taken back). */
static void add_req(yarn_backend *b, yarn_req *r) {
    if (b->nreqs == b->capreqs) {
        b->capreqs = b->capreqs ? b->capreqs * 2 : 16;
        b->reqs = tony_xrealloc(b->reqs, b->capreqs * sizeof *b->reqs);
    }
    b->reqs[b->nreqs++] = r;
}

static int yarn_check_plan(tony_backend *base, const tony_plan *plan, tony_error *err) {
    yarn_backend *b = (yarn_backend *)base;
    const yarn_resource *max = &b->info.max_capability;
    b->roles = tony_xcalloc(plan->nroles + 1, sizeof *b->roles);
    b->role_env = tony_xcalloc(plan->nroles + 1, sizeof *b->role_env);
    for (size_t i = 0; i < plan->nroles; i++) {
        const tony_role *r = &plan->roles[i];
        b->roles[b->nroles++] = tony_strdup(r->name);
        if (yarn_docker_env(b->conf, r->docker_image, &b->role_env[i], err)) return -1;
        if (r->memory_mb > max->memory_mb)
            return tony_err(err, "tony.%s.memory asks %lld MB, more than the cluster's largest container (%lld MB)",
                            r->name, r->memory_mb, max->memory_mb);
        if (r->vcores > max->vcores)
            return tony_err(err, "tony.%s.vcores asks %d, more than the cluster's largest container (%d)", r->name,
                            r->vcores, max->vcores);
        if (r->gpus > 0 && !b->info.has_gpu_type)
            return tony_err(err,
                            "tony.%s.gpus asks %d GPU(s) but this cluster has no yarn.io/gpu resource type; "
                            "ask for 0 GPUs or use a cluster with GPU scheduling",
                            r->name, r->gpus);
        if (r->gpus > max->gpus)
            return tony_err(err, "tony.%s.gpus asks %d GPU(s), more than any node has (%d)", r->name, r->gpus,
                            max->gpus);
    }
    return 0;
}

static int yarn_launch(tony_backend *base, const tony_launch *l, tony_error *err) {
    yarn_backend *b = (yarn_backend *)base;
    if (b->closing) return tony_err(err, "the coordinator is stopping: no new containers");
    int priority = role_priority(b, l->role);
    if (priority == 0) return tony_err(err, "role %s is not in the plan", l->role);
    yarn_req *r = tony_xcalloc(1, sizeof *r);
    r->role = tony_strdup(l->role);
    r->index = l->index;
    r->attempt = l->attempt;
    r->priority = priority;
    r->cap.memory_mb = l->memory_mb;
    r->cap.vcores = l->vcores;
    r->cap.gpus = l->gpus;
    r->label = l->node_label && *l->node_label ? tony_strdup(l->node_label) : NULL;
    r->resources = tony_strdup(l->resources ? l->resources : "");
    tony_env_merge(&r->env, l->env);
    tony_env_merge(&r->env, &b->role_env[priority - 1]);
    /* The NodeManager kills a container by signalling its process group. */
    tony_env_set(&r->env, TASKENV_SHARE_PROCESS_GROUP, "1");
    /* where its executor looks for the next coordinator should this one be lost */
    yarn_coordfile_task_env(&r->env);
    add_req(b, r);
    yarn_amrm_add_request(b->amrm, r->priority, &r->cap, r->label, 1);
    /* Ask now rather than at the next idle heartbeat (or right after the
     * allocate that is out, which built its request before this ask). */
    if (b->allocating) {
        b->ask_now = true;
    } else {
        evtimer_del(b->heartbeat);
        struct timeval zero = {0, 0};
        evtimer_add(b->heartbeat, &zero);
    }
    return 0;
}

static void yarn_stop(tony_backend *base, const char *role, int index, int attempt) {
    yarn_backend *b = (yarn_backend *)base;
    yarn_req *r = find_task(b, role, index, attempt);
    if (!r) return;
    if (r->state == REQ_PENDING) {
        yarn_amrm_remove_request(b->amrm, r->priority, &r->cap, r->label, 1);
        report_later(b, r, TONY_EXIT_KILLED_BY_APPMASTER, "Stopped before a container was allocated");
        return;
    }
    yarn_nm_stop_async(b->nm, &r->container, on_stopped, b);
}

/* YARN matches a blacklist entry against the scheduler's node name: the
 * host, or host:port where yarn.scheduler.include-port-in-node-name is set
 * (several NodeManagers on one host). The coordinator cannot read the RM's
 * setting, so it sends both; the RM ignores a name that is no node's. */
static void yarn_exclude_node(tony_backend *base, const char *node) {
    yarn_backend *b = (yarn_backend *)base;
    yarn_amrm_blacklist(b->amrm, node);
    const char *colon = strrchr(node, ':');
    if (colon) {
        char *host = tony_sprintf("%.*s", (int)(colon - node), node);
        yarn_amrm_blacklist(b->amrm, host);
        free(host);
    }
    /* the asks still out are placed with it at once */
    if (b->allocating) {
        b->ask_now = true;
    } else if (!b->closing) {
        evtimer_del(b->heartbeat);
        struct timeval zero = {0, 0};
        evtimer_add(b->heartbeat, &zero);
    }
}

/* Set by the NodeManager in the AM's container: when the application was
 * submitted, in ms since the epoch. */
#define YARN_APP_SUBMIT_TIME_ENV "APP_SUBMIT_TIME_ENV"

static void yarn_previous(const tony_backend *base, tony_backend_previous *out) {
    const yarn_backend *b = (const yarn_backend *)base;
    /* YARN gives every AM attempt the application's submission time */
    long long submitted = 0;
    if (!tony_parse_ll(getenv(YARN_APP_SUBMIT_TIME_ENV), &submitted) || submitted < 0) submitted = 0;
    *out = (tony_backend_previous){.containers = (int)b->info.n_previous, .submitted_wall_ms = submitted};
}

/* A task container the last AM attempt left running becomes role:index's
 * again: its completion is reported as any container's, a stop reaches it. */
static int yarn_adopt(tony_backend *base, const char *role, int index, int attempt, const char *container,
                      tony_error *err) {
    yarn_backend *b = (yarn_backend *)base;
    const yarn_container *c = NULL;
    size_t k = 0;
    for (; container && k < b->info.n_previous && !c; k++)
        if (strcmp(b->info.previous[k].id, container) == 0) c = &b->info.previous[k];
    if (!c)
        return tony_err(err, "container %s is not one the ResourceManager handed back from the last attempt",
                        container ? container : "(none named)");
    if (b->adopted[k - 1]) return tony_err(err, "container %s is already taken back by a task", container);
    int priority = role_priority(b, role);
    if (priority == 0) return tony_err(err, "role %s is not in the plan", role);
    b->adopted[k - 1] = true;
    yarn_req *r = tony_xcalloc(1, sizeof *r);
    r->role = tony_strdup(role);
    r->index = index;
    r->attempt = attempt;
    r->priority = priority;
    r->resources = tony_strdup("");
    r->state = REQ_RUNNING;
    yarn_container_copy(&r->container, c);
    add_req(b, r);
    tony_info("%s:%d came back in container %s on %s:%d", role, index, c->id, c->node_host, c->node_port);
    return 0;
}

static void yarn_adopt_end(tony_backend *base) {
    yarn_backend *b = (yarn_backend *)base;
    for (size_t k = 0; k < b->info.n_previous; k++) {
        if (b->adopted[k]) continue;
        tony_warn("stopping container %s of the last coordinator: no task came back from it", b->info.previous[k].id);
        yarn_nm_stop_async(b->nm, &b->info.previous[k], on_stopped, b);
    }
}

static int yarn_cluster_nodes(const tony_backend *base) { return ((const yarn_backend *)base)->cluster_nodes; }

static int yarn_active(const tony_backend *base) {
    const yarn_backend *b = (const yarn_backend *)base;
    int n = 0;
    for (size_t i = 0; i < b->nreqs; i++)
        if (b->reqs[i]->state != REQ_DONE || b->reqs[i]->report_pending) n++;
    return n;
}

/* The end (the loop no longer runs): every container still ours is stopped,
 * all nodes at once, within FINAL_STOP_MS in all, however many nodes hang;
 * then every job out is waited for, so that nothing uses the RM connection
 * when finish unregisters. */
static void stop_all(yarn_backend *b) {
    b->closing = true;
    evtimer_del(b->heartbeat);
    const yarn_container **cs = tony_xcalloc(b->nreqs + 1, sizeof *cs);
    size_t n = 0;
    for (size_t i = 0; i < b->nreqs; i++) {
        yarn_req *r = b->reqs[i];
        if (r->state != REQ_RUNNING) continue;
        cs[n++] = &r->container;
        r->state = REQ_DONE;
    }
    if (n > 0) {
        long long t0 = tony_now_ms();
        tony_strv silent = {0}, failed = {0};
        yarn_nm_stop_all(b->nm, cs, n, FINAL_STOP_MS, &silent, &failed);
        for (size_t i = 0; i < failed.len; i++) tony_warn("cannot stop a container: %s", failed.items[i]);
        if (silent.len) {
            char *nodes = tony_strv_join(&silent, ", ");
            tony_warn("NodeManager%s %s did not answer within %d s when the coordinator stopped its containers; YARN "
                      "stops them when the application ends", silent.len > 1 ? "s" : "", nodes, FINAL_STOP_MS / 1000);
            free(nodes);
        }
        tony_info("stopped %zu container(s) in %lld ms", n, tony_now_ms() - t0);
        tony_strv_free(&silent);
        tony_strv_free(&failed);
    }
    free(cs);
    tony_workq_drain(b->q);
}

/* The container's log dir: what stays (the NodeManager serves it) when
 * the work dir, the job dir here, goes with the container. NULL if unknown. */
static char *am_log_dir(void) {
    const char *log_dirs = getenv("LOG_DIRS");
    if (!log_dirs || !*log_dirs) return NULL;
    return tony_sprintf("%.*s", (int)strcspn(log_dirs, ","), log_dirs);
}

static void keep_file(const char *from, const char *dir, const char *name, const char *what) {
    char *to = tony_path_join(dir, name);
    char *data = NULL;
    size_t len = 0;
    tony_error err;
    if (tony_read_file(from, &data, &len, &err) || tony_write_file(to, data, len, 0600, &err))
        tony_warn("%s stays out of the container's log dir: %s", what, err.msg);
    free(data);
    free(to);
}

/* The final status.json into the container's log dir (yarn_backend.h),
 * before the RM hears of the end: a client that sees the app finished
 * finds it there. */
static void keep_status(const char *job_dir, const char *dir) {
    char *from = tony_path_join(job_dir, TONY_JOBDIR_STATUS);
    keep_file(from, dir, TONY_YARN_AM_STATUS_LOG, "the job's final status");
    free(from);
}

/* The stacks a hang diagnosis collected (attempts/<n>/stacks/<role>-<index>.txt,
 * am/hang.h) beside it, under tony_jobdir_stacks_log_name, where `tony logs
 * --stacks` reads them once the coordinator is gone. */
static void keep_attempt_stacks(const char *job_dir, const char *dir, int attempt) {
    char *sdir = tony_jobdir_stacks_dir(job_dir, attempt);
    DIR *d = opendir(sdir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char role[64], tail[8];
        int index, n = 0;
        if (sscanf(de->d_name, "%63[a-z]-%d%7s%n", role, &index, tail, &n) != 3 || strcmp(tail, ".txt") != 0 ||
            de->d_name[n])
            continue;
        char *from = tony_path_join(sdir, de->d_name), *name = tony_jobdir_stacks_log_name(attempt, role, index);
        keep_file(from, dir, name, "a hung task's stacks");
        free(from);
        free(name);
    }
    if (d) closedir(d);
    free(sdir);
}

static void keep_stacks(const char *job_dir, const char *dir) {
    char *attempts = tony_path_join(job_dir, "attempts");
    DIR *d = opendir(attempts);
    struct dirent *de;
    long long n;
    while (d && (de = readdir(d)))
        if (strspn(de->d_name, "0123456789") == strlen(de->d_name) && tony_parse_ll(de->d_name, &n) && n < 1000000)
            keep_attempt_stacks(job_dir, dir, (int)n);
    if (d) closedir(d);
    free(attempts);
}

static void yarn_finish(tony_backend *base, const char *final_status, const char *diagnostics, const char *url) {
    yarn_backend *b = (yarn_backend *)base;
    if (b->finished) return;
    char *log_dir = am_log_dir();
    if (log_dir) {
        keep_status(b->job_dir, log_dir);
        keep_stacks(b->job_dir, log_dir);
    }
    free(log_dir);
    stop_all(b);
    b->finished = true;
    yarn_final_status fs = strcmp(final_status, "SUCCEEDED") == 0 ? YARN_FINAL_SUCCEEDED
                           : strcmp(final_status, "KILLED") == 0  ? YARN_FINAL_KILLED
                                                                  : YARN_FINAL_FAILED;
    tony_error err;
    if (yarn_amrm_finish(b->amrm, fs, diagnostics, url, RPC_TIMEOUT_MS, &err))
        tony_error_log("cannot unregister from the ResourceManager: %s", err.msg);
    else tony_info("unregistered from the ResourceManager: %s", final_status);
}

static void yarn_shutdown(tony_backend *base) {
    yarn_backend *b = (yarn_backend *)base;
    /* Without a decided job (a crash or a signal), leave the application
     * registered: YARN then counts this AM attempt as failed and may retry. */
    stop_all(b);
}

static void yarn_free(tony_backend *base) {
    yarn_backend *b = (yarn_backend *)base;
    if (!b) return;
    b->closing = true;
    tony_workq_free(b->q); /* first: its last done callbacks still see b whole */
    for (size_t i = 0; i < b->nreqs; i++) req_free(b->reqs[i]);
    free(b->reqs);
    for (size_t i = 0; i < b->nfiles; i++) {
        free(b->files[i].name);
        free(b->files[i].uri);
    }
    free(b->files);
    free(b->job_dir);
    free(b->adopted);
    if (b->creds) yarn_job_credentials_stop_refresh(b->creds);
    for (size_t i = 0; i < b->nroles; i++) {
        free(b->roles[i]);
        if (b->role_env) tony_env_free(&b->role_env[i]);
    }
    free(b->roles);
    free(b->role_env);
    if (b->heartbeat) event_free(b->heartbeat);
    if (b->notify) event_free(b->notify);
    yarn_register_info_free(&b->info);
    yarn_nm_pool_free(b->nm);
    yarn_nmlog_free(b->logs);
    yarn_nm_spnego_free(b->spnego);
    yarn_amrm_free(b->amrm);
    free(b);
}

static int yarn_check_log_url(const tony_backend *base, const char *link, tony_error *err) {
    (void)base;
    return yarn_nmlog_check_link(link, err);
}

static int yarn_read_log(tony_backend *base, const tony_log_request *r, tony_log_cb cb, void *ctx, tony_log_read **out,
                         tony_error *err) {
    return yarn_nmlog_read(((yarn_backend *)base)->logs, r, cb, ctx, out, err);
}

static void yarn_cancel_log(tony_backend *base, tony_log_read *read) {
    (void)base;
    yarn_nmlog_cancel(read);
}

/* A single-node job's command runs as an executor's does, in the
 * container's work dir where the NodeManager localized the job's files, and
 * writes its stdout and stderr into the container's log dir, where YARN's
 * log links and aggregation look and which outlives the work dir. */
static int yarn_prepare_am_command(tony_backend *base, const char *resources, tony_am_place *out, tony_error *err) {
    yarn_backend *b = (yarn_backend *)base;
    *out = (tony_am_place){0};
    const char *log_dirs = getenv("LOG_DIRS");
    if (!log_dirs || !*log_dirs)
        return tony_err(err, "LOG_DIRS is not set: a single-node job's command runs only in the coordinator's YARN "
                             "container, whose log dir takes its stdout and stderr");
    const char *comma = strchr(log_dirs, ',');
    out->log_dir = comma ? tony_sprintf("%.*s", (int)(comma - log_dirs), log_dirs) : tony_strdup(log_dirs);
    out->work_dir = tony_strdup(b->job_dir);
    const char *container = getenv(TASKENV_CONTAINER_ID), *host = getenv(TASKENV_NM_HOST), *port = getenv("NM_HTTP_PORT");
    if (container && *container) out->container = tony_strdup(container);
    if (host && port) {
        char *addr = tony_sprintf("%s:%s", host, port);
        out->log_url = tony_nmweb_container_log_link(addr, container);
        free(addr);
    }
    out->share_group = true;
    /* Only the job's own files were localized into this container (the
     * client names them in the AM's launch context); say which of the
     * containers' resources the command will not find. */
    tony_resource_list list = {0};
    tony_error perr;
    if (tony_resource_parse_list(resources, &list, &perr)) tony_warn("%s", perr.msg);
    for (size_t i = 0; i < list.len; i++) {
        char *here = tony_path_join(out->work_dir, list.items[i].name);
        if (!tony_file_exists(here))
            tony_warn("resource %s (tony.containers.resources) is not localized into the coordinator's container: a "
                      "single-node job's command does not find %s", list.items[i].source, list.items[i].name);
        free(here);
    }
    tony_resource_list_free(&list);
    return 0;
}

static long long yarn_task_credentials(tony_backend *base, long long have, tony_buf *out) {
    long long g = yarn_job_credentials_for_tasks(((yarn_backend *)base)->creds, have, out);
    return g > have ? g : 0;
}

static const tony_backend_ops yarn_ops = {
    .name = "yarn",
    .check_plan = yarn_check_plan,
    .launch = yarn_launch,
    .stop = yarn_stop,
    .active = yarn_active,
    .finish = yarn_finish,
    .check_log_url = yarn_check_log_url,
    .read_log = yarn_read_log,
    .cancel_log = yarn_cancel_log,
    .prepare_am_command = yarn_prepare_am_command,
    .task_credentials = yarn_task_credentials,
    .exclude_node = yarn_exclude_node,
    .cluster_nodes = yarn_cluster_nodes,
    .previous = yarn_previous,
    .adopt = yarn_adopt,
    .adopt_end = yarn_adopt_end,
    .shutdown = yarn_shutdown,
    .free = yarn_free,
};

tony_backend *tony_backend_yarn_new(const tony_backend_opts *o, tony_error *err) {
    struct event_base *base = o->base;
    yarn_backend *b = tony_xcalloc(1, sizeof *b);
    b->base.ops = &yarn_ops;
    b->ev = base;
    b->heartbeat = evtimer_new(base, on_heartbeat, b);
    b->notify = evtimer_new(base, on_notify, b);
    b->logs = yarn_nmlog_new(base);
    b->job_dir = tony_strdup(o->job_dir);
    b->conf = o->conf;
    if (load_manifest(b, o->job_dir, err)) goto fail;
    b->q = tony_workq_new(base, RPC_THREADS, err);
    if (!b->q) goto fail;
    b->creds = o->backend_data; /* the AM container's (job_credentials.h), outliving the backend */
    if (!b->creds) {
        tony_err(err, "the yarn backend runs only in the AM container, with the job's credentials");
        goto fail;
    }
    b->amrm = amrm_connect(b->creds, err);
    if (!b->amrm) goto fail;
    yarn_amrm_set_timeout(b->amrm, RPC_TIMEOUT_MS);
    if (yarn_amrm_register(b->amrm, o->api_host, o->api_port, o->tracking_url, &b->info, err)) goto fail;
    b->nm = yarn_nm_pool_new(b->amrm, b->q);
    yarn_nm_pool_set_timeout(b->nm, RPC_TIMEOUT_MS);
    b->adopted = tony_xcalloc(b->info.n_previous + 1, sizeof *b->adopted);
    if (b->info.n_previous) {
        tony_info("the last attempt of this application left %zu task container(s) running", b->info.n_previous);
        /* No launch starts the heartbeats here: the ends of those
         * containers come with allocate, as the RM's liveness needs it. */
        struct timeval zero = {0, 0};
        evtimer_add(b->heartbeat, &zero);
    }
    publish_address(b, o->tracking_url);
    tony_info("registered with the ResourceManager (queue %s; largest container %lld MB, %d vcores, %d GPUs; "
              "Hadoop IPC protection: %s)",
              b->info.queue ? b->info.queue : "?", b->info.max_capability.memory_mb, b->info.max_capability.vcores,
              b->info.max_capability.gpus, b->info.protection ? b->info.protection : "?");
    /* Not fatal: the job's tokens still serve until their maximum lifetime. */
    tony_error rerr;
    if (yarn_job_credentials_start_refresh(b->creds, base, b->q, &rerr)) {
        tony_warn("%s; the job's HDFS access ends when its tokens reach their maximum lifetime", rerr.msg);
    } else if (yarn_job_credentials_refreshable(b->creds)) {
        b->spnego = yarn_nm_spnego_new(b->creds, b->q);
        yarn_nmlog_auth auth = yarn_nm_spnego_auth(b->spnego);
        yarn_nmlog_set_auth(b->logs, &auth);
    }
    return &b->base;
fail:
    yarn_free(&b->base);
    return NULL;
}
