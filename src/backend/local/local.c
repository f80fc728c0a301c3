/* Local backend: a "container" is a process session started in the task's own
 * directory. Like a NodeManager it localizes resources, keeps the pool's
 * books, enforces the memory limit by measuring the session's RSS, and when
 * a container's main process ends it kills whatever the task left behind.
 * With a placement (local.h) the session is a launcher (srun) that runs the
 * executor on a node of an allocation: the same books of containers, logs
 * and stops, with the pool left to the cluster. A role with an image
 * (tony.docker.*) runs its executor in a container of it: the session is
 * then the container runtime's `run` (backend/container.h), whose memory
 * limit is the runtime's; with a placement that allows it (image_run), the
 * launcher runs the runtime's `run`. The runtime's `rm` of a container left
 * by a killed `run` goes to a worker thread (common/workq.h): it can take
 * seconds, and the coordinator's loop must not wait on it. */
#include "backend/local/local.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/container.h"
#include "common/archive.h"
#include "common/clock.h"
#include "common/fs.h"
#include "common/jobdir.h"
#include "common/lastwords.h"
#include "common/log.h"
#include "common/pace.h"
#include "common/proc.h"
#include "common/strv.h"
#include "common/taskenv.h"
#include "common/workq.h"
#include "conf/resource.h"
#include "conf/keys.h"

#define MEMORY_CHECK_MS 500
#define MEMORY_CHECK_PERCENT 5
#define STOP_GRACE_MS 3000
#define REMOVE_THREADS 4 /* `rm`s of killed containers at once */

/* C_REMOVING: its process ended, the runtime's `rm` of what it left runs;
 * the exit is reported (and its resources released) once that is done, so
 * that nothing of a container the coordinator counts as ended still runs. */
typedef enum { C_QUEUED, C_RUNNING, C_STOPPING, C_REMOVING } container_state;

typedef struct container {
    char *role;
    int index;
    int attempt;
    container_state state;
    long long memory_mb;
    int vcores;
    int gpus;
    int *gpu_ids;
    pid_t pid; /* the executor, a session leader: sid == pid */
    bool stop_requested;
    bool killed_for_memory;
    bool kill_sent; /* stopping: the grace period is over, SIGKILL sent */
    char *image_name; /* in an image: the container's name (the runtime's), else NULL */
    int exit_status;  /* C_REMOVING: the status reported once the container is removed */
    char *diagnostics;
    char *task_dir;
    /* queued launches keep their request */
    tony_strv argv;
    tony_env env;
    char *resources;
    struct event *kill_timer;
    struct local_backend *owner;
} container;

typedef struct local_backend {
    tony_backend base;
    struct event_base *ev;
    tony_reaper *reaper;
    char *job_dir;
    tony_local_pool pool;
    int used_vcores;
    long long used_memory_mb;
    bool *gpu_busy;
    container **items;
    size_t len, cap;
    struct event *memory_timer;
    tony_pace memory_pace;
    /* Session sweeps (a signal to every process of a container's session)
     * wait for one pass over /proc that does them all: a stop or an exit
     * of every container at once (a kill of 10,000 tasks) then costs one
     * scan, not one each (issue 26). Sorted by sid when swept. */
    struct sweep {
        pid_t sid;
        int sig;
    } *sweeps;
    size_t nsweeps, capsweeps;
    struct event *sweep_event;
    const tony_local_placement *placement; /* NULL: containers run on this machine */
    /* Roles with an image (from check_plan's plan): their specs, and what
     * runs them, found once. */
    tony_role *images;
    size_t nimages;
    char *runtime;   /* the container runtime's path, NULL while no role has an image */
    tony_workq *removals; /* the runtime's `rm`s, made with runtime */
    bool closing;         /* shutdown: removals that end now report nothing */
    char *self_root; /* the self-contained tony the containers run */
    char *cache_dir; /* where it is made, once per build: the jobs root's cache/ */
    /* A single-node job's command in the coordinator's image (plan.am_image;
     * on this machine only): its spec, size and container's name. */
    tony_role am_image;
    long long am_memory_mb;
    int am_vcores;
    char *am_name;
    unsigned launches;
    tony_backend_ops placed_ops;            /* with a placement: local_ops under its name */
} local_backend;

static long long detect_memory_mb(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (long long)pages * page / (1024 * 1024) : 4096;
}

static int detect_gpus(void) {
    FILE *p = popen("nvidia-smi -L 2>/dev/null", "r");
    if (!p) return 0;
    int n = 0;
    char line[512];
    while (fgets(line, sizeof line, p))
        if (strncmp(line, "GPU ", 4) == 0) n++;
    pclose(p);
    return n;
}

int tony_local_pool_from_conf(const tony_conf *c, tony_local_pool *pool, tony_error *err) {
    long long v;
    const char *cap = tony_conf_get(c, TONY_KEY_LOCAL_VCORES);
    /* Blank means not given, as for every key. */
    pool->vcores_capped = cap && strspn(cap, " \t\r\n") != strlen(cap);
    if (tony_conf_get_ll(c, TONY_KEY_LOCAL_VCORES, sysconf(_SC_NPROCESSORS_ONLN), &v, err)) return -1;
    if (v <= 0) return tony_err(err, "tony.local.vcores must be a positive number of cores, got %lld", v);
    pool->vcores = (int)v;
    const char *mem = tony_conf_get(c, TONY_KEY_LOCAL_MEMORY);
    if (mem && *mem) {
        if (tony_conf_get_memory_mb(c, TONY_KEY_LOCAL_MEMORY, "0", &pool->memory_mb, err)) return -1;
    } else {
        pool->memory_mb = detect_memory_mb();
    }
    const char *g = tony_conf_get(c, TONY_KEY_LOCAL_GPUS);
    if (g && *g) {
        if (tony_conf_get_ll(c, TONY_KEY_LOCAL_GPUS, 0, &v, err)) return -1;
        if (v < 0) return tony_err(err, "tony.local.gpus must be >= 0, got %lld", v);
        pool->gpus = (int)v;
    } else {
        pool->gpus = detect_gpus();
    }
    return 0;
}

/* What must fit at once in one stage: its own roles, and in the training
 * stage also the prepare stage's untracked and sidecar roles, which keep
 * running (or all of the prepare stage, when none of it is tracked: then
 * both stages start together). */
static bool runs_in_stage(const tony_plan *plan, const tony_role *r, int stage) {
    if ((int)r->stage == stage) return true;
    if (stage != TONY_STAGE_TRAINING || r->stage != TONY_STAGE_PREPARE) return false;
    if (r->kind != TONY_ROLE_TRACKED) return true;
    for (size_t i = 0; i < plan->nroles; i++)
        if (plan->roles[i].stage == TONY_STAGE_PREPARE && plan->roles[i].kind == TONY_ROLE_TRACKED) return false;
    return true;
}

void tony_local_fit_plan(const tony_local_pool *pool, const tony_plan *plan, tony_local_fit *fit) {
    memset(fit, 0, sizeof *fit);
    /* One task above the pool is named by its own key; the job's total for
     * that resource would only repeat it. */
    bool task_memory = false, task_gpus = false;
    for (size_t i = 0; i < plan->nroles; i++) {
        const tony_role *r = &plan->roles[i];
        if (r->gpus > 0 && pool->gpus == 0) {
            tony_strv_pushf(&fit->problems,
                            "tony.%s.gpus=%d but this machine has no GPU (nvidia-smi found none). "
                            "Set tony.%s.gpus=0, or tony.local.gpus if the GPUs are there",
                            r->name, r->gpus, r->name);
            task_gpus = true;
        } else if (r->gpus > pool->gpus) {
            tony_strv_pushf(&fit->problems, "tony.%s.gpus=%d but this machine has only %d GPU(s) (tony.local.gpus)",
                            r->name, r->gpus, pool->gpus);
            task_gpus = true;
        }
        if (r->memory_mb > pool->memory_mb) {
            tony_strv_pushf(&fit->problems,
                            "tony.%s.memory=%lldm is more than this machine's %lldm of memory: lower tony.%s.memory "
                            "(tony.local.memory sets the pool)",
                            r->name, r->memory_mb, pool->memory_mb, r->name);
            task_memory = true;
        }
    }
    long long peak_mem = 0;
    int peak_gpus = 0;
    for (int stage = TONY_STAGE_PREPARE; stage <= TONY_STAGE_TRAINING; stage++) {
        long long mem = 0;
        int vcores = 0, gpus = 0;
        for (size_t i = 0; i < plan->nroles; i++) {
            const tony_role *r = &plan->roles[i];
            if (!runs_in_stage(plan, r, stage)) continue;
            /* an elastic role needs its minimum at once; the rest waits in
             * the queue and the job starts without it (am/fsm.h) */
            mem += r->memory_mb * r->min_instances;
            vcores += r->vcores * r->min_instances;
            gpus += r->gpus * r->min_instances;
        }
        if (mem > peak_mem) peak_mem = mem;
        if (vcores > fit->peak_vcores) fit->peak_vcores = vcores;
        if (gpus > peak_gpus) peak_gpus = gpus;
    }
    if (fit->peak_vcores > pool->vcores) {
        if (pool->vcores_capped)
            tony_strv_pushf(&fit->problems,
                            "the job needs %d vcores at once but tony.local.vcores=%d caps this machine at %d: lower "
                            "tony.<role>.vcores or instances, or raise tony.local.vcores (unset, vcores oversubscribe "
                            "the CPUs)",
                            fit->peak_vcores, pool->vcores, pool->vcores);
        else
            fit->oversubscribed = true;
    }
    if (peak_mem > pool->memory_mb && !task_memory)
        tony_strv_pushf(&fit->problems,
                        "the job needs %lldm of memory at once but this machine offers %lldm: lower "
                        "tony.<role>.memory or instances, or set tony.local.memory",
                        peak_mem, pool->memory_mb);
    if (peak_gpus > pool->gpus && !task_gpus)
        tony_strv_pushf(&fit->problems,
                        "the job needs %d GPUs at once but this machine has %d: lower tony.<role>.gpus or "
                        "instances (tony.local.gpus sets the pool)",
                        peak_gpus, pool->gpus);
}

void tony_local_fit_free(tony_local_fit *fit) {
    tony_strv_free(&fit->problems);
    memset(fit, 0, sizeof *fit);
}

char *tony_local_fit_notice(const tony_local_pool *pool, const tony_local_fit *fit) {
    if (!fit->oversubscribed) return NULL;
    return tony_sprintf("the job asks %d vcores at once and this machine has %d cores; running them oversubscribed "
                        "(set tony.local.vcores to cap)",
                        fit->peak_vcores, pool->vcores);
}

static container *find(local_backend *b, const char *role, int index, int attempt) {
    for (size_t i = 0; i < b->len; i++) {
        container *c = b->items[i];
        if (c->index == index && c->attempt == attempt && strcmp(c->role, role) == 0) return c;
    }
    return NULL;
}

static void container_free(container *c) {
    free(c->role);
    free(c->gpu_ids);
    free(c->diagnostics);
    free(c->task_dir);
    free(c->image_name);
    free(c->resources);
    tony_strv_free(&c->argv);
    tony_env_free(&c->env);
    if (c->kill_timer) event_free(c->kill_timer);
    free(c);
}

static void remove_container(local_backend *b, container *c) {
    for (size_t i = 0; i < b->len; i++) {
        if (b->items[i] != c) continue;
        memmove(&b->items[i], &b->items[i + 1], (b->len - i - 1) * sizeof *b->items);
        b->len--;
        break;
    }
}

static bool fits(const local_backend *b, const container *c) {
    if (b->placement) return true; /* the launcher waits for its share of the allocation */
    int free_gpus = 0;
    for (int i = 0; i < b->pool.gpus; i++) free_gpus += !b->gpu_busy[i];
    /* Uncapped vcores are a count, not a limit: every task of the job may
     * run at once, however few cores there are. */
    bool vcores_ok = !b->pool.vcores_capped || b->used_vcores + c->vcores <= b->pool.vcores;
    return vcores_ok && b->used_memory_mb + c->memory_mb <= b->pool.memory_mb && c->gpus <= free_gpus;
}

/* Puts each resource into the work dir under its name, like a NodeManager:
 * archives unpacked into a directory of that name, directories copied,
 * files hard-linked (copied across file systems). Resources are in TonY's
 * syntax, with staged paths. */
static int localize(const char *work_dir, const char *resources, tony_error *err) {
    tony_resource_list list = {0};
    if (tony_resource_parse_list(resources, &list, err)) return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < list.len; i++) {
        tony_resource *r = &list.items[i];
        char *dst = tony_path_join(work_dir, r->name);
        /* The name is relative and free of '..' (parsed so); what an earlier
         * resource put here (a symlink from an archive) must not lead this
         * one out of the work dir either: its dirs are made or checked
         * without following links, and its own place must still be free. */
        char *parent = tony_strdup(r->name);
        char *slash = strrchr(parent, '/');
        struct stat st;
        if (slash) *slash = '\0';
        if (!tony_file_exists(r->source)) {
            rc = tony_err(err, "resource %s does not exist", r->source);
        } else if (slash && tony_mkdir_within(work_dir, parent, 0700, err)) {
            rc = tony_err_wrap(err, "resource %s::%s", r->source, r->name);
        } else if (lstat(dst, &st) == 0) {
            rc = tony_err(err, "resource %s::%s: the name is already taken in the work dir (by an earlier resource); "
                          "give each resource its own ::NAME", r->source, r->name);
        } else if (r->archive) {
            rc = tony_archive_extract(r->source, dst, err);
        } else if (tony_is_dir(r->source)) {
            rc = tony_copy_tree(r->source, dst, err);
        } else if (link(r->source, dst) != 0) {
            rc = tony_copy_file(r->source, dst, err);
        }
        free(parent);
        free(dst);
    }
    tony_resource_list_free(&list);
    return rc;
}

static void report_exit(local_backend *b, container *c, int status) {
    char *role = tony_strdup(c->role);
    char *diag = c->diagnostics ? tony_strdup(c->diagnostics) : NULL;
    int index = c->index, attempt = c->attempt;
    /* This machine is the only node (named as its executors see it);
     * a container still queued had none. */
    const char *node = c->pid > 0 ? "localhost" : NULL;
    remove_container(b, c);
    container_free(c);
    b->base.on_exit(b->base.cb_ctx, role, index, attempt, status, diag, node);
    free(role);
    free(diag);
}

static void try_start_queued(local_backend *b);

static void release(local_backend *b, container *c) {
    b->used_vcores -= c->vcores;
    b->used_memory_mb -= c->memory_mb;
    if (b->placement) return; /* the cluster numbered its GPUs */
    for (int i = 0; i < c->gpus; i++) b->gpu_busy[c->gpu_ids[i]] = false;
}

/* The job's application id: its job dir's name. */
static const char *app_id(const local_backend *b) { return tony_basename(b->job_dir); }

static const tony_role *image_of(const local_backend *b, const char *role) {
    for (size_t i = 0; i < b->nimages; i++)
        if (strcmp(b->images[i].name, role) == 0) return &b->images[i];
    return NULL;
}

static int sweep_cmp(const void *a, const void *b) {
    pid_t x = ((const struct sweep *)a)->sid, y = ((const struct sweep *)b)->sid;
    return (x > y) - (x < y);
}

typedef struct {
    const struct sweep *items;
    size_t n;
} sweep_set;

static void sweep_visit(void *ctx, const tony_proc_info *p) {
    const sweep_set *s = ctx;
    struct sweep key = {.sid = p->sid};
    const struct sweep *hit = bsearch(&key, s->items, s->n, sizeof key, sweep_cmp);
    if (!hit || p->pid == getpid()) return;
    /* the same session may be asked twice (a stop, then its exit): each signal */
    while (hit > s->items && hit[-1].sid == p->sid) hit--;
    for (; hit < s->items + s->n && hit->sid == p->sid; hit++) kill(p->pid, hit->sig);
}

/* Does the sweeps asked for so far, in one pass over /proc. */
static void flush_sweeps(local_backend *b) {
    if (!b->nsweeps) return;
    qsort(b->sweeps, b->nsweeps, sizeof *b->sweeps, sweep_cmp);
    sweep_set s = {b->sweeps, b->nsweeps};
    tony_proc_scan(sweep_visit, &s);
    b->nsweeps = 0;
}

static void on_sweep(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    flush_sweeps(arg);
}

/* Sends sig to every process of session sid, from the loop's next turn
 * (with every other sweep asked meanwhile). */
static void sweep_session(local_backend *b, pid_t sid, int sig) {
    if (sid <= 1) return;
    if (b->nsweeps == b->capsweeps) {
        b->capsweeps = b->capsweeps ? 2 * b->capsweeps : 64;
        b->sweeps = tony_xrealloc(b->sweeps, b->capsweeps * sizeof *b->sweeps);
    }
    b->sweeps[b->nsweeps++] = (struct sweep){sid, sig};
    if (!b->sweep_event) b->sweep_event = evtimer_new(b->ev, on_sweep, b);
    if (!evtimer_pending(b->sweep_event, NULL)) {
        struct timeval now = {0, 0};
        evtimer_add(b->sweep_event, &now);
    }
}

/* A container's end, told: its resources back to the pool, its exit to
 * the coordinator, and the queue may start what now fits. */
static void container_ended(local_backend *b, container *c, int status) {
    release(b, c);
    report_exit(b, c, status);
    try_start_queued(b);
}

/* One `rm` of a container of the runtime's (c), or of the coordinator's
 * command's (c NULL). runtime and name are copies: the worker thread's. */
typedef struct removal {
    local_backend *b;
    container *c;
    char *runtime, *name;
} removal;

static void removal_run(void *arg) {
    removal *r = arg;
    tony_container_remove(r->runtime, r->name);
}

static void removal_done(void *arg, bool ran) {
    removal *r = arg;
    local_backend *b = r->b;
    (void)ran; /* not run: cancelled at the end, after the sweep that removes it */
    if (r->c && !b->closing) {
        tony_debug("container %s:%d (attempt %d) removed", r->c->role, r->c->index, r->c->attempt);
        container_ended(b, r->c, r->c->exit_status);
    }
    free(r->runtime);
    free(r->name);
    free(r);
}

static void remove_in_background(local_backend *b, container *c, const char *name) {
    removal *r = tony_xcalloc(1, sizeof *r);
    *r = (removal){b, c, tony_strdup(b->runtime), tony_strdup(name)};
    tony_workq_submit(b->removals, NULL, removal_run, removal_done, r);
}

static void on_executor_exit(void *ctx, pid_t pid, int wait_status) {
    container *c = ctx;
    local_backend *b = c->owner;
    /* The container is over: nothing of the task may outlive it. */
    sweep_session(b, pid, SIGKILL);
    int code = tony_proc_exit_code(wait_status);
    int status = code;
    if (c->killed_for_memory) status = TONY_EXIT_KILLED_EXCEEDED_PMEM;
    else if (c->stop_requested) status = TONY_EXIT_KILLED_BY_APPMASTER;
    else if (code != 0 && !c->diagnostics) {
        char buf[128];
        c->diagnostics = tony_sprintf("Exception from container-launch. Exit code: %d (%s). Logs: %s", code,
                                      tony_exit_status_meaning(code, buf, sizeof buf), c->task_dir);
    }
    tony_debug("container %s:%d (attempt %d, pid %d) ended: status %d", c->role, c->index, c->attempt, (int)pid, status);
    /* In an image, a runtime killed by a signal (a stop's SIGKILL) cannot
     * have removed its container (--rm), which may still run; otherwise
     * the runtime did. The end is told once it is removed. */
    if (c->image_name && WIFSIGNALED(wait_status)) {
        c->state = C_REMOVING;
        c->exit_status = status;
        if (c->kill_timer) event_del(c->kill_timer); /* its pid is reaped: no more signals */
        remove_in_background(b, c, c->image_name);
        return;
    }
    container_ended(b, c, status);
}

/* The command that runs c's executor in r's image, into argv: the
 * self-contained tony in place of this one, and the secret read from the
 * job dir rather than given in the env, which the runtime shows. */
static void in_image(local_backend *b, container *c, const tony_role *r, const char *work, tony_strv *argv) {
    free(c->image_name);
    c->image_name = tony_sprintf("tony-%s-%s-%d-%d-%u", app_id(b), c->role, c->index, c->attempt, ++b->launches);
    tony_env_unset(&c->env, TASKENV_SECRET);
    tony_env_set(&c->env, TASKENV_SECRET_JOB_DIR, b->job_dir);
    tony_env_set(&c->env, TASKENV_IN_IMAGE, r->docker_image);
    tony_strv cmd = {0};
    tony_strv_pushf(&cmd, "%s/bin/tony", b->self_root);
    for (size_t i = 1; i < c->argv.len; i++) tony_strv_push(&cmd, c->argv.items[i]);
    tony_container_run run = {.runtime = b->runtime, .image = r->docker_image, .network = r->docker_network,
                              .mounts = r->docker_mounts, .name = c->image_name, .app_id = app_id(b),
                              .job_dir = b->job_dir, .self_root = b->self_root, .work_dir = work,
                              .memory_mb = c->memory_mb, .vcores = c->vcores, .gpu_ids = c->gpu_ids,
                              .ngpus = c->gpus, .env = &c->env, .argv = cmd.items};
    if (b->placement) {
        tony_launch l = {.role = c->role, .index = c->index, .attempt = c->attempt, .memory_mb = c->memory_mb,
                         .vcores = c->vcores, .gpus = c->gpus, .env = &c->env};
        b->placement->image_run(b->placement->ctx, &l, &run);
    }
    tony_container_run_argv(&run, argv);
    tony_strv_free(&cmd);
}

static int start_container(local_backend *b, container *c, tony_error *err) {
    c->task_dir = tony_jobdir_task_dir(b->job_dir, c->attempt, c->role, c->index);
    char *work = tony_path_join(c->task_dir, "work");
    char *exec_log = tony_path_join(c->task_dir, TONY_EXECUTOR_LOG);
    int rc = tony_mkdir_p(work, 0700, err);
    if (rc == 0 && localize(work, c->resources, err)) rc = tony_err_wrap(err, "localizing %s:%d", c->role, c->index);
    if (rc == 0) {
        c->gpu_ids = tony_xcalloc((size_t)c->gpus + 1, sizeof(int));
    }
    if (rc == 0 && !b->placement) {
        tony_buf devs = {0};
        tony_buf_puts(&devs, "");
        for (int g = 0, n = 0; g < b->pool.gpus && n < c->gpus; g++) {
            if (b->gpu_busy[g]) continue;
            b->gpu_busy[g] = true;
            c->gpu_ids[n++] = g;
            tony_buf_printf(&devs, "%s%d", n > 1 ? "," : "", g);
        }
        /* A task without GPUs must not see any: an empty list hides them all. */
        tony_env_set(&c->env, TASKENV_CUDA_VISIBLE_DEVICES, devs.data);
        tony_env_set(&c->env, TASKENV_NVIDIA_VISIBLE_DEVICES, c->gpus ? devs.data : "void");
        tony_buf_free(&devs);
        tony_env_set(&c->env, TASKENV_NM_HOST, "127.0.0.1");
    }
    if (rc == 0) {
        tony_env_set(&c->env, TASKENV_LOG_DIR, c->task_dir);
        tony_env_set(&c->env, TASKENV_PRIVATE_LOGS, "1"); /* the executor makes the task's logs 0600 */
        tony_env_setf(&c->env, TASKENV_CONTAINER_MEMORY_MB, "%lld", c->memory_mb);
        tony_env_set(&c->env, "PWD", work);
        tony_strv envp = {0}, argv = {0};
        if (b->placement) {
            tony_launch l = {.role = c->role, .index = c->index, .attempt = c->attempt, .memory_mb = c->memory_mb,
                             .vcores = c->vcores, .gpus = c->gpus, .env = &c->env};
            rc = b->placement->wrap(b->placement->ctx, &l, &argv, &c->env, err);
        }
        const tony_role *img = b->placement && !b->placement->image_run ? NULL : image_of(b, c->role);
        if (img) {
            in_image(b, c, img, work, &argv);
        } else {
            for (size_t i = 0; i < c->argv.len; i++) tony_strv_push(&argv, c->argv.items[i]);
        }
        tony_env_build_envp(&c->env, &envp);
        /* In an image, the runtime's process goes with the coordinator, on
         * SIGTERM: it stops its container (the executor in it stops its
         * task) and removes it, where a SIGKILL would leave it running. */
        tony_spawn s = {.argv = argv.items, .envp = envp.items, .cwd = work, .stdout_path = exec_log,
                        .stderr_path = exec_log, .new_session = true, .private_output = true,
                        .die_with_parent = img != NULL, .parent_death_signal = SIGTERM};
        if (rc == 0) rc = tony_proc_spawn(&s, &c->pid, err);
        tony_strv_free(&envp);
        tony_strv_free(&argv);
        if (rc == 0) {
            b->used_vcores += c->vcores;
            b->used_memory_mb += c->memory_mb;
            c->state = C_RUNNING;
            tony_reaper_watch(b->reaper, c->pid, on_executor_exit, c);
            tony_info("started %s:%d (attempt %d) as pid %d in %s", c->role, c->index, c->attempt, (int)c->pid, work);
        } else if (!b->placement) {
            for (int i = 0; i < c->gpus; i++) b->gpu_busy[c->gpu_ids[i]] = false;
        }
    }
    free(work);
    free(exec_log);
    return rc;
}

static void fail_queued(local_backend *b, container *c, const char *why) {
    free(c->diagnostics);
    c->diagnostics = tony_sprintf("container for %s:%d could not start: %s", c->role, c->index, why);
    report_exit(b, c, TONY_EXIT_ABORTED);
}

static void try_start_queued(local_backend *b) {
    for (size_t i = 0; i < b->len; i++) {
        container *c = b->items[i];
        if (c->state != C_QUEUED || c->stop_requested || !fits(b, c)) continue;
        tony_error err;
        if (start_container(b, c, &err)) {
            tony_error_log("%s", err.msg);
            fail_queued(b, c, err.msg);
            i = (size_t)-1; /* the list changed; rescan */
        }
    }
}

static int local_launch(tony_backend *base, const tony_launch *l, tony_error *err) {
    local_backend *b = (local_backend *)base;
    container *c = tony_xcalloc(1, sizeof *c);
    c->owner = b;
    c->role = tony_strdup(l->role);
    c->index = l->index;
    c->attempt = l->attempt;
    c->memory_mb = l->memory_mb;
    c->vcores = l->vcores;
    c->gpus = l->gpus;
    c->resources = tony_strdup(l->resources ? l->resources : "");
    for (char *const *a = l->argv; *a; a++) tony_strv_push(&c->argv, *a);
    tony_env_merge(&c->env, l->env);
    c->state = C_QUEUED;
    if (b->len == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->items = tony_xrealloc(b->items, b->cap * sizeof *b->items);
    }
    b->items[b->len++] = c;
    if (!fits(b, c)) {
        tony_info("%s:%d waits for resources (%d vcores, %lldm, %d GPUs)", c->role, c->index, c->vcores, c->memory_mb,
                  c->gpus);
        return 0;
    }
    if (start_container(b, c, err)) {
        remove_container(b, c);
        container_free(c);
        return -1;
    }
    return 0;
}

/* Signals the container's session; its leader (the executor, our child,
 * not reaped while the container is known) directly too, so that a stop
 * still reaches it when /proc cannot be read (no descriptors left). */
static void signal_container(container *c, int sig) {
    if (c->pid <= 0) return;
    kill(c->pid, sig);
    sweep_session(c->owner, c->pid, sig);
}

/* The signal that asks a container to stop, and the one that ends it. A
 * launcher has its own: srun forwards SIGUSR1 to the task (the executor
 * stops its user process on it) but ends the step at once on SIGTERM. */
static int stop_signal(const local_backend *b) {
    return b->placement ? b->placement->stop_signal : SIGTERM;
}

static int kill_signal(const local_backend *b) {
    return b->placement ? b->placement->kill_signal : SIGKILL;
}

static void on_kill_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    container *c = arg;
    c->kill_sent = true;
    signal_container(c, kill_signal(c->owner));
}

static void on_queued_stopped(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    container *c = arg;
    report_exit(c->owner, c, TONY_EXIT_KILLED_BY_APPMASTER);
}

static void stop_container(local_backend *b, container *c) {
    if (c->state == C_QUEUED) {
        /* Reported from the loop, never from inside stop(): the caller may
         * be walking its task table. */
        if (c->stop_requested && c->kill_timer) return;
        c->stop_requested = true;
        c->kill_timer = evtimer_new(b->ev, on_queued_stopped, c);
        struct timeval now = {0, 0};
        evtimer_add(c->kill_timer, &now);
        return;
    }
    if (c->state == C_STOPPING) {
        /* The coordinator asks again when the container did not end: the
         * last signal again (SIGKILL once the grace period is over). */
        signal_container(c, c->kill_sent ? kill_signal(b) : stop_signal(b));
        return;
    }
    c->state = C_STOPPING;
    /* Like a NodeManager: SIGTERM the whole container, SIGKILL after a grace
     * period. The executor forwards SIGTERM to the user's process group. */
    signal_container(c, stop_signal(b));
    c->kill_timer = evtimer_new(b->ev, on_kill_timer, c);
    long long grace = b->placement ? b->placement->stop_grace_ms : STOP_GRACE_MS;
    struct timeval tv = {grace / 1000, (grace % 1000) * 1000};
    evtimer_add(c->kill_timer, &tv);
}

static void local_stop(tony_backend *base, const char *role, int index, int attempt) {
    local_backend *b = (local_backend *)base;
    container *c = find(b, role, index, attempt);
    if (!c || c->state == C_REMOVING) return; /* ended already; its end is told once removed */
    if (c->state != C_QUEUED) c->stop_requested = true;
    stop_container(b, c);
}

/* A running container's session and its place in b->items. */
typedef struct {
    pid_t sid;
    size_t i;
} rss_slot;

typedef struct {
    rss_slot *slots; /* sorted by sid: a process finds its container by bsearch, not by a walk (issue 26) */
    size_t n;
    long long *rss_kb; /* per container, indexed like b->items */
} rss_scan;

static int rss_slot_cmp(const void *a, const void *b) {
    pid_t x = ((const rss_slot *)a)->sid, y = ((const rss_slot *)b)->sid;
    return (x > y) - (x < y);
}

static void rss_visit(void *ctx, const tony_proc_info *p) {
    rss_scan *s = ctx;
    rss_slot key = {.sid = p->sid};
    const rss_slot *hit = bsearch(&key, s->slots, s->n, sizeof key, rss_slot_cmp);
    if (hit) s->rss_kb[hit->i] += p->rss_kb;
}

/* One pass over /proc per tick measures every container's session; it
 * reads every process, so it is paced (MEMORY_CHECK_PERCENT of the loop):
 * with thousands of containers a tick comes less often than each 500 ms. */
static void on_memory_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    local_backend *b = arg;
    if (b->len == 0 || !tony_pace_due(&b->memory_pace)) return;
    long long t0 = tony_now_us();
    rss_scan s = {tony_xcalloc(b->len, sizeof(rss_slot)), 0, tony_xcalloc(b->len, sizeof(long long))};
    for (size_t i = 0; i < b->len; i++)
        if (b->items[i]->state == C_RUNNING && b->items[i]->pid > 0) s.slots[s.n++] = (rss_slot){b->items[i]->pid, i};
    qsort(s.slots, s.n, sizeof *s.slots, rss_slot_cmp);
    tony_proc_scan(rss_visit, &s);
    free(s.slots);
    for (size_t i = 0; i < b->len; i++) {
        container *c = b->items[i];
        long long used_mb = s.rss_kb[i] / 1024;
        /* in an image the runtime enforces the limit (its session is only
         * the runtime's own process) */
        if (c->state != C_RUNNING || c->image_name || c->memory_mb <= 0 || used_mb <= c->memory_mb) continue;
        c->killed_for_memory = true;
        free(c->diagnostics);
        c->diagnostics = tony_sprintf(
            "Container [pid=%d,containerID=%s:%d] is running beyond physical memory limits. Current usage: %lld MB of "
            "%lld MB physical memory used. Killing container. Raise tony.%s.memory if the task needs more.",
            (int)c->pid, c->role, c->index, used_mb, c->memory_mb, c->role);
        tony_warn("%s", c->diagnostics);
        c->state = C_STOPPING;
        tony_proc_kill_session(c->pid, SIGKILL);
    }
    free(s.rss_kb);
    tony_pace_ran(&b->memory_pace, t0);
}

/* Copies what runs r's image: its name, image, mounts and network. */
static void keep_image(tony_role *mine, const tony_role *r) {
    mine->name = tony_strdup(r->name);
    mine->docker_image = tony_strdup(r->docker_image);
    mine->docker_mounts = tony_strdup(r->docker_mounts);
    mine->docker_network = tony_strdup(r->docker_network);
}

static void drop_image(tony_role *mine) {
    free(mine->name);
    free(mine->docker_image);
    free(mine->docker_mounts);
    free(mine->docker_network);
}

/* Keeps the roles with an image (and a single-node command's, which runs
 * in the coordinator's image), finds their runtime and the tony they
 * run, and removes what an earlier coordinator of the job left (a
 * restart). Once per coordinator: the plan does not change. */
static int adopt_images(local_backend *b, const tony_plan *plan, tony_error *err) {
    if (b->runtime) return 0;
    const char *want = NULL;
    for (size_t i = 0; i < plan->nroles; i++) {
        const tony_role *r = &plan->roles[i];
        if (!r->docker_image) continue;
        if (!b->images) b->images = tony_xcalloc(plan->nroles, sizeof *b->images);
        keep_image(&b->images[b->nimages++], r);
        want = r->docker_runtime;
    }
    /* Placed (Slurm), the coordinator and its command run bare on the
     * allocation's first node. */
    if (plan->single_node && plan->am_image.docker_image && !b->placement && !b->am_image.docker_image) {
        keep_image(&b->am_image, &plan->am_image);
        b->am_memory_mb = plan->am_memory_mb;
        b->am_vcores = plan->am_vcores;
        want = plan->am_image.docker_runtime;
    }
    if (!b->nimages && !b->am_image.docker_image) return 0;
    if (tony_container_runtime(want, &b->runtime, err)) return -1;
    if (!(b->removals = tony_workq_new(b->ev, REMOVE_THREADS, err))) return -1;
    /* the single-node command is the user's own: it needs no tony */
    if (b->nimages && tony_container_self(b->cache_dir, &b->self_root, err)) return -1;
    tony_container_sweep(b->runtime, app_id(b));
    return 0;
}

/* The client refused a job that does not fit before staging it; this is
 * the coordinator's own guard (the pool it reads is the same conf's). */
static int local_check_plan(tony_backend *base, const tony_plan *plan, tony_error *err) {
    if (adopt_images((local_backend *)base, plan, err)) return -1;
    const tony_local_pool *pool = &((local_backend *)base)->pool;
    tony_local_fit fit;
    tony_local_fit_plan(pool, plan, &fit);
    char *notice = tony_local_fit_notice(pool, &fit);
    if (notice) tony_info("%s", notice);
    free(notice);
    int rc = fit.problems.len ? tony_err(err, "%s", fit.problems.items[0]) : 0;
    tony_local_fit_free(&fit);
    return rc;
}

static int local_active(const tony_backend *base) { return (int)((const local_backend *)base)->len; }

static void local_shutdown(tony_backend *base) {
    local_backend *b = (local_backend *)base;
    flush_sweeps(b);
    /* The removals under way end before the coordinator does; their
     * containers are told no more than the ones stopped below. */
    b->closing = true;
    if (b->removals) tony_workq_drain(b->removals);
    for (size_t i = 0; i < b->len; i++) {
        container *c = b->items[i];
        /* a C_REMOVING container's process is reaped: its pid may be another's */
        if ((c->state == C_RUNNING || c->state == C_STOPPING) && c->pid > 0) {
            tony_proc_kill_session(c->pid, kill_signal(b));
            waitpid(c->pid, NULL, 0);
        }
    }
    /* the containers whose runtime was killed above, and any other */
    if (b->runtime) tony_container_sweep(b->runtime, app_id(b));
}

static void local_free(tony_backend *base) {
    local_backend *b = (local_backend *)base;
    b->closing = true;
    if (b->removals) tony_workq_free(b->removals); /* first: its done callbacks still see b whole */
    for (size_t i = 0; i < b->len; i++) container_free(b->items[i]);
    free(b->items);
    free(b->gpu_busy);
    free(b->job_dir);
    for (size_t i = 0; i < b->nimages; i++) drop_image(&b->images[i]);
    free(b->images);
    drop_image(&b->am_image);
    free(b->am_name);
    free(b->runtime);
    free(b->self_root);
    free(b->cache_dir);
    if (b->memory_timer) event_free(b->memory_timer);
    flush_sweeps(b);
    if (b->sweep_event) event_free(b->sweep_event);
    free(b->sweeps);
    if (b->placement && b->placement->free) b->placement->free(b->placement->ctx);
    free(b);
}

/* A single-node job's command runs under the job dir's attempts/0/am, laid
 * out as a task: work/ with the job's files, stdout and stderr beside it. */
static int local_prepare_am_command(tony_backend *base, const char *resources, tony_am_place *out, tony_error *err) {
    local_backend *b = (local_backend *)base;
    *out = (tony_am_place){0};
    out->log_dir = tony_jobdir_am_dir(b->job_dir);
    out->work_dir = tony_path_join(out->log_dir, "work");
    if (tony_mkdir_p(out->work_dir, 0700, err) == 0 && localize(out->work_dir, resources, err) == 0) return 0;
    tony_am_place_free(out);
    return -1;
}

/* In the coordinator's image: a container as a task's (host network, the
 * job dir, the mounts, the coordinator's memory and vcores, the job's
 * label), running the command itself. Its env holds no secret. */
static int local_am_command_argv(tony_backend *base, const tony_am_place *place, const tony_env *env,
                                 char *const *cmd, tony_strv *out) {
    local_backend *b = (local_backend *)base;
    const tony_role *r = &b->am_image;
    if (!r->docker_image) return 0;
    free(b->am_name);
    b->am_name = tony_sprintf("tony-%s-%s-%u", app_id(b), r->name, ++b->launches);
    tony_container_run run = {.runtime = b->runtime, .image = r->docker_image, .network = r->docker_network,
                              .mounts = r->docker_mounts, .name = b->am_name, .app_id = app_id(b),
                              .job_dir = b->job_dir, .work_dir = place->work_dir, .memory_mb = b->am_memory_mb,
                              .vcores = b->am_vcores, .env = env, .argv = cmd};
    tony_container_run_argv(&run, out);
    return 1;
}

static void local_am_command_ended(tony_backend *base, int wait_status) {
    local_backend *b = (local_backend *)base;
    /* as a task's (on_executor_exit): a killed runtime left its container;
     * the coordinator's end waits for its removal (local_shutdown) */
    if (b->am_name && WIFSIGNALED(wait_status)) remove_in_background(b, NULL, b->am_name);
}

static const tony_backend_ops local_ops = {
    .name = "local",
    .shares_job_dir = true,
    .check_plan = local_check_plan,
    .launch = local_launch,
    .stop = local_stop,
    .active = local_active,
    .prepare_am_command = local_prepare_am_command,
    .am_command_argv = local_am_command_argv,
    .am_command_ended = local_am_command_ended,
    .shutdown = local_shutdown,
    .free = local_free,
};

static int placed_check_plan(tony_backend *base, const tony_plan *plan, tony_error *err) {
    const tony_local_placement *p = ((local_backend *)base)->placement;
    if (p->image_run && adopt_images((local_backend *)base, plan, err)) return -1;
    return p->check_plan ? p->check_plan(p->ctx, plan, err) : 0;
}

static void placed_finish(tony_backend *base, const char *final_status, const char *diagnostics, const char *url) {
    (void)diagnostics, (void)url;
    const tony_local_placement *p = ((local_backend *)base)->placement;
    p->finish(p->ctx, final_status);
}

tony_backend *tony_backend_local_new_placed(struct event_base *base, tony_reaper *reaper, const char *job_dir,
                                            const tony_local_placement *placement, tony_error *err) {
    (void)err;
    local_backend *b = tony_xcalloc(1, sizeof *b);
    b->placement = placement;
    b->placed_ops = local_ops;
    b->placed_ops.name = placement->backend_name;
    b->placed_ops.check_plan = placed_check_plan;
    if (placement->finish) b->placed_ops.finish = placed_finish;
    b->base.ops = &b->placed_ops;
    b->ev = base;
    b->reaper = reaper;
    b->job_dir = tony_strdup(job_dir);
    /* beside the job dirs, on the file system the nodes share (the
     * coordinator runs the client's self-contained tony there, so it is
     * only a fallback) */
    char *root = tony_strdup(job_dir);
    char *slash = strrchr(root, '/');
    if (slash && slash != root) *slash = '\0';
    b->cache_dir = tony_path_join(root, "cache");
    free(root);
    return &b->base;
}

tony_backend *tony_backend_local_new(const tony_backend_opts *o, tony_error *err) {
    local_backend *b = tony_xcalloc(1, sizeof *b);
    if (tony_local_pool_from_conf(o->conf, &b->pool, err)) {
        free(b);
        return NULL;
    }
    b->base.ops = &local_ops;
    b->ev = o->base;
    b->reaper = o->reaper;
    b->job_dir = tony_strdup(o->job_dir);
    b->gpu_busy = tony_xcalloc((size_t)b->pool.gpus + 1, sizeof(bool));
    char *jobs_root = tony_jobs_root(tony_conf_get(o->conf, TONY_KEY_LOCAL_ROOT));
    b->cache_dir = tony_path_join(jobs_root, "cache");
    free(jobs_root);
    b->memory_pace.percent = MEMORY_CHECK_PERCENT;
    b->memory_timer = event_new(o->base, -1, EV_PERSIST, on_memory_timer, b);
    struct timeval tv = {0, MEMORY_CHECK_MS * 1000};
    event_add(b->memory_timer, &tv);
    return &b->base;
}
