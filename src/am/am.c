/* The coordinator's life: load the job, start the API, run attempts until one
 * decides the job, then publish the final status and wait briefly for the
 * client to read it. Everything happens on one libevent loop. The decisions
 * are the state machine's (fsm.c, asking policy.c, exclusion.c, hang.c and
 * cause.c; job.c is its task table); am.c carries out the actions it
 * returns. */
#include "am/am.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "am/api.h"
#include "am/cause.h"
#include "am/lastfetch.h"
#include "am/logfetch.h"
#include "am/record.h"
#include "am/stacks.h"
#include "am/taskenv.h"
#include "am/view.h"
#include "common/fs.h"
#include "common/http.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "common/lastwords.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/pace.h"
#include "common/proc.h"
#include "common/readtoken.h"
#include "common/self.h"
#include "common/strv.h"
#include "common/unpack.h"
#include "runtime/runtime.h"
#include "conf/keys.h"

#define TICK_MS 250
#define UI_LINGER_S 4       /* a watched job's coordinator stays this long after the end */
#define UI_RECENT_MS 10000  /* "watched": the web UI polled within this */
/* The longest the coordinator waits, from the job's end, for the history's
 * last copy to its mirror (HDFS), which runs off the loop. */
#define HISTORY_WAIT_MS 30000
#define HISTORY_POLL_MS 100
/* How long a coordinator that replaced a lost one waits for its tasks. */
#define AM_RECOVER_WAIT_MS 60000

/* am.c's own part of the handle (am_internal.h): the loop's timers and
 * signals, which nothing else arms. */
struct am_loop {
    struct event *tick;       /* every TICK_MS: deadlines, status.json */
    struct event *exit_timer; /* the coordinator's end, once its linger is over */
    struct event *sigterm, *sigint;
    /* status.json on the tick: every task's state, so its cost grows with
     * the job (5 MB at 5,000 tasks); held to STATUS_PERCENT of the loop */
    tony_pace status_pace;
};
#define STATUS_PERCENT 5

static void write_status(tony_am *am) {
    long long t0 = tony_now_us();
    json_t *j = am_job_json(am);
    am_record_status(am, j);
    json_decref(j);
    am->status_dirty = false;
    if (am->loop) tony_pace_ran(&am->loop->status_pace, t0);
}

/* A task's localized files: its role's resources plus the job's final
 * configuration, which TonY puts in every container as tony-final.xml. */
static char *task_resources(const tony_am *am, const char *role_resources) {
    return tony_sprintf("%s%s%s/%s", role_resources ? role_resources : "", role_resources && *role_resources ? "," : "",
                        am->id.job_dir, TONY_JOBDIR_CONF);
}

static void request_task(tony_am *am, am_task *t) {
    tony_env env = {0};
    am_task_env(am, t, &env);
    char *resources = task_resources(am, t->role->resources);
    char *argv[] = {am->id.self_exe, "executor", NULL};
    tony_launch l = {.role = t->role->name,
                     .index = t->index,
                     .attempt = am->fsm.job.attempt,
                     .memory_mb = t->role->memory_mb,
                     .vcores = t->role->vcores,
                     .gpus = t->role->gpus,
                     .node_label = t->role->node_label,
                     .resources = resources,
                     .env = &env,
                     .argv = argv};
    am_record_task_requested(am, t);
    tony_error err;
    if (tony_backend_launch(am->backend, &l, &err)) {
        tony_error_log("cannot start %s:%d: %s", t->role->name, t->index, err.msg);
        am_fsm_exited(&am->fsm, t, TONY_EXIT_ABORTED, err.msg, am_now_ms(), &am->pending);
        am_record_task_exit(am, t);
    }
    free(resources);
    tony_env_free(&env);
}

/* What every attempt's start does around the state machine's requests
 * (already queued): history, the rendezvous, the attempt's dir. */
static void attempt_started(tony_am *am) {
    int attempt = am->fsm.job.attempt;
    am_record_attempt(am);
    if (am->rendezvous) am_rendezvous_reset(am->rendezvous);
    size_t kept = 0;
    for (size_t i = 0; i < am->fsm.job.ntasks; i++) kept += am->fsm.job.tasks[i].container_attempt < attempt;
    if (kept) tony_info("attempt %d: keeping %zu container(s) in place, asking for %zu", attempt, kept, am->fsm.job.ntasks - kept);
    else tony_info("attempt %d: asking for %zu container(s)", attempt, am->fsm.job.ntasks);
    char *dir = tony_sprintf("%s/attempts/%d", am->id.job_dir, attempt);
    tony_error err;
    if (tony_mkdir_p(dir, 0700, &err)) tony_warn("%s", err.msg);
    free(dir);
}

static void schedule_exit(tony_am *am, int seconds) {
    struct timeval tv = {seconds, 0};
    evtimer_add(am->loop->exit_timer, &tv);
}

/* How long the coordinator stays up once the job is decided. */
static int exit_delay_s(const tony_am *am, bool client_done) {
    /* TonY's AM waits (tony.am.wait-client-signal-stop-timeout-sec) for its
     * client to read the final task infos over RPC. Here status.json already
     * holds all of it and clients fall back to it, so on this machine there
     * is nothing to wait for, unless it could not be written... */
    long long wait_s = 0;
    if (!client_done && am->backend && (!tony_backend_shares_job_dir(am->backend) || am_record_status_error(am)) &&
        tony_conf_get_ll(am->conf, TONY_KEY_AM_WAIT_CLIENT_STOP_SEC, 15, &wait_s, NULL))
        wait_s = 15;
    /* ...but a browser showing the job polls about once a second: it gets a
     * few seconds to show the final state rather than a vanished server. */
    long long ui_seen_ms = am_api_ui_seen_ms(am);
    if (wait_s < UI_LINGER_S && ui_seen_ms && am_now_ms() - ui_seen_ms < UI_RECENT_MS) wait_s = UI_LINGER_S;
    return (int)(wait_s < 0 ? 0 : wait_s);
}

/* Ends the single-node command and whatever it started (pid: its process,
 * or 0 once reaped): its own process group, or, where it stays in the
 * container's group (see tony_am_place), that group but the coordinator. */
static void kill_single(const tony_am *am, pid_t pid) {
    if (am->single.place.share_group) tony_proc_kill_group_but_me(getpgrp(), SIGKILL);
    else if (pid > 0) kill(-pid, SIGKILL);
}

static void stop_task(tony_am *am, const am_action *a) {
    if (!a->task) {
        tony_warn("stopping the single-node command: %s", a->note ? a->note : "");
        if (am->single.pid > 0) kill_single(am, am->single.pid);
        return;
    }
    if (a->try_no > 1)
        tony_warn("%s:%d has not stopped yet: asking again (try %d of %d)", a->task->role->name, a->task->index,
                  a->try_no, AM_FSM_STOP_TRIES);
    /* a container kept from an earlier attempt is known by that one's number */
    tony_backend_stop(am->backend, a->task->role->name, a->task->index, a->task->container_attempt);
}

/* A node a task's end marked bad: kept off from now on, or, past the cap,
 * said why not (exclusion.h). */
static void exclude_node(tony_am *am, const am_action *a) {
    const am_exclusion *x = &am->fsm.exclusion;
    const am_excluded_node *e = NULL;
    for (size_t i = 0; i < x->len && !e; i++)
        if (strcmp(x->items[i].node, a->note) == 0) e = &x->items[i];
    if (!e) return;
    if (e->refused) {
        tony_warn("node %s is bad (%s: %s) but stays in use: %s", e->node, e->task, e->reason, e->refused);
    } else {
        tony_warn("excluding node %s from the job's later containers: %s %s", e->node, e->task, e->reason);
        tony_backend_exclude_node(am->backend, e->node);
    }
    am_record_node_excluded(am, a->task, e);
}

static void restart(tony_am *am) {
    am_job *j = &am->fsm.job;
    json_t *tasks = am_tasks_json(am);
    am_record_restart(am, tasks);
    json_decref(tasks);
    if (am->fsm.attempt_end == AM_END_RESIZED)
        tony_info("attempt %d ended for a change of the world: %s -- its tasks restart in place", j->attempt,
                  j->attempt_diagnostics ? j->attempt_diagnostics : "");
    else
        tony_warn("attempt %d failed: %s -- restarting the job (%d restart(s) left)", j->attempt,
                  j->attempt_diagnostics ? j->attempt_diagnostics : "", am->fsm.retries_left);
    am_fsm_next_attempt(&am->fsm, am_now_ms(), &am->pending);
    attempt_started(am);
    /* kept containers' executors already asked to join this attempt */
    am_api_admit_early(am);
}

/* Elastic jobs: the world changed (fsm.h): said in the log and as an event
 * of the job's history, with the world's version and size and each role's
 * count, so that the world over time can be read back. */
static void world_changed(tony_am *am) {
    tony_warn("%s", am->fsm.world_note);
    am_record_world_changed(am);
}

/* The recovery from a lost coordinator is over (fsm.h, am_fsm_recover):
 * what the last coordinator left that no task took back is stopped. */
static void adopted(tony_am *am) {
    tony_info("coordinator restarted, %d of %zu task(s) adopted in attempt %d", am->fsm.adopted, am->fsm.job.ntasks,
              am->fsm.job.attempt);
    am_record_adopted(am);
    tony_backend_adopt_end(am->backend);
}

static void finished(tony_am *am) {
    tony_info("job %s %s: %s", am->id.app_id, am_final_status_name(am->fsm.final_status), am->fsm.diagnostics);
    json_t *tasks = am_tasks_json(am);
    am_record_finish(am, tasks);
    json_decref(tasks);
    write_status(am);
    schedule_exit(am, exit_delay_s(am, false));
}

/* Carries out what the state machine decided, in order. Carrying one out
 * may feed it an event (a launch that fails at once), whose actions join
 * the end of the queue. */
static void carry_out(tony_am *am) {
    if (am->carrying) return;
    am->carrying = true;
    am_actions *q = &am->pending;
    for (size_t i = 0; i < q->len; i++) {
        am_action a = q->items[i]; /* a copy: the queue may grow and move */
        am->status_dirty = true;
        switch (a.kind) {
        case AM_ACT_REQUEST:
            /* a launch before it in the queue may have ended the attempt */
            if (am->fsm.job.attempt_over) am_fsm_request_dropped(&am->fsm, a.task, am_now_ms(), q);
            else request_task(am, a.task);
            break;
        case AM_ACT_RELEASE_GANG: am_api_release_waiters(am); break;
        case AM_ACT_STOP: stop_task(am, &a); break;
        case AM_ACT_LOST:
            tony_warn("%s", a.task->diagnostics);
            am_record_heartbeat_missed(am, a.task);
            break;
        case AM_ACT_RESTART: restart(am); break;
        case AM_ACT_FINISH: finished(am); break;
        case AM_ACT_HANG: am_stacks_hang(am, a.task, am->fsm.hang.idle_ms); break;
        case AM_ACT_EXCLUDE_NODE: exclude_node(am, &a); break;
        case AM_ACT_WORLD: world_changed(am); break;
        case AM_ACT_ADOPTED: adopted(am); break;
        }
    }
    q->len = 0;
    am->carrying = false;
    if (am->client_finished && am->fsm.state == AM_JOB_DONE) {
        am->client_finished = false;
        schedule_exit(am, exit_delay_s(am, true));
    }
}

static void on_kick(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    carry_out(arg);
}

/* A task whose container ended without its executor's report (killed
 * with it, out of memory): its last words for the root cause, from its log
 * dir, where the backend reads no log links (the local backend: the files
 * are on this machine). */
static void read_last_words(tony_am *am, am_task *t) {
    if (!t->log_dir) return;
    char *errp = tony_path_join(t->log_dir, "stderr"), *errfile = tony_path_join(t->log_dir, TONY_TORCH_ERROR_FILE);
    char *tail = tony_lastwords_tail(errp, TONY_LASTWORDS_LINES, TONY_LASTWORDS_BYTES);
    char *report = tony_lastwords_torch_error(errfile, TONY_LASTWORDS_LINES, TONY_LASTWORDS_BYTES);
    am_fsm_task_output(&am->fsm, t, tail, report);
    free(tail);
    free(report);
    free(errfile);
    free(errp);
}

/* The lines of executor.log kept for a root cause: its error and what
 * led to it (a container runtime's few lines of its own). */
#define START_LOG_LINES 6

/* A task whose container ended before its command ran: the end of its
 * executor.log (the executor's own error, or the container runtime's),
 * which names the cause that its stderr cannot, for the root cause. Where
 * the coordinator shares the job dir with its tasks (the local backend),
 * the task's log dir is known without its registration. */
static void read_start_log(tony_am *am, am_task *t) {
    char *dir = t->log_dir ? tony_strdup(t->log_dir)
                : tony_backend_shares_job_dir(am->backend)
                    ? tony_jobdir_task_dir(am->id.job_dir, t->container_attempt, t->role->name, t->index)
                    : NULL;
    if (!dir) return;
    char *path = tony_path_join(dir, TONY_EXECUTOR_LOG);
    char *tail = tony_lastwords_tail(path, START_LOG_LINES, TONY_LASTWORDS_BYTES);
    am_fsm_task_start_log(&am->fsm, t, tail, path);
    free(tail);
    free(path);
    free(dir);
}

/* A container's end, given to the state machine (at exit_ms, when it was
 * told: a failed task's exit may wait for its last words, lastfetch.h). */
static void deliver_exit(tony_am *am, am_task *t, int exit_status, const char *diagnostics, long long exit_ms) {
    bool reported = am_task_done(t); /* in place: its executor told the task's end already (recorded then) */
    am_fsm_exited(&am->fsm, t, exit_status, diagnostics, exit_ms, &am->pending);
    if (!reported) am_record_task_exit(am, t);
    am->status_dirty = true;
    carry_out(am);
}

static void on_last_words(tony_am *am, const char *role, int index, int attempt, int exit_status,
                          const char *diagnostics, long long exit_ms, const char *tail) {
    am_task *t = attempt == am->fsm.job.attempt ? am_job_task(&am->fsm.job, role, index) : NULL;
    if (!t || t->exited) return;
    am_fsm_task_output(&am->fsm, t, tail, NULL);
    deliver_exit(am, t, exit_status, diagnostics, exit_ms);
}

static void on_container_exit(void *ctx, const char *role, int index, int attempt, int exit_status,
                              const char *diagnostics, const char *node) {
    tony_am *am = ctx;
    am_task *t = am_job_task(&am->fsm.job, role, index);
    /* a container of an earlier attempt that was not kept into this one */
    if (!t || t->exited || t->state == AM_TASK_NEW || t->container_attempt != attempt) return;
    char meaning[160];
    tony_info("%s:%d ended: %s", role, index, tony_exit_status_meaning(exit_status, meaning, sizeof meaning));
    long long now = am_now_ms();
    /* where it ran, for bad-node exclusion (exclusion.h) */
    am_fsm_node(&am->fsm, t, node,
                tony_backend_cluster_nodes(am->backend));
    /* A failure its executor did not report: its last words from its log,
     * through the backend where it reads log links (the exit then waits
     * for them), else from the file. */
    if (exit_status != 0 && t->stop_tries == 0 && !am_task_done(t) && t->started_ms == 0) read_start_log(am, t);
    if (exit_status != 0 && t->stop_tries == 0 && !am_task_done(t) && !t->stderr_tail && !t->error_report) {
        if (am_lastfetch_start(am, t, exit_status, diagnostics, now, on_last_words)) return;
        read_last_words(am, t);
    }
    deliver_exit(am, t, exit_status, diagnostics, now);
}

static void kill_job(tony_am *am) {
    tony_info("kill requested");
    am_record_kill(am);
    am_fsm_kill(&am->fsm, am_now_ms(), &am->pending);
    carry_out(am);
}

static void on_tick(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    tony_am *am = arg;
    long long now = am_now_ms();
    am_fsm_tick(&am->fsm, now, &am->pending);
    carry_out(am);
    am_api_expire_waiters(am, now);
    /* (the job's end writes it at once: finished) */
    if (am->status_dirty && tony_pace_due(&am->loop->status_pace)) write_status(am);
}

static void on_exit_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    tony_am *am = arg;
    /* The history reaches HDFS before the application ends (its client
     * looks there then), unless the mirror takes too long. */
    if (!am_record_history_settled(am) && am_now_ms() - am->fsm.finished_ms < HISTORY_WAIT_MS) {
        struct timeval tv = {0, HISTORY_POLL_MS * 1000};
        evtimer_add(am->loop->exit_timer, &tv);
        return;
    }
    event_base_loopexit(am->base, NULL);
}

static void on_signal(evutil_socket_t sig, short what, void *arg) {
    (void)what;
    tony_am *am = arg;
    tony_warn("signal %d: stopping the job", (int)sig);
    if (am->fsm.state == AM_JOB_DONE) event_base_loopexit(am->base, NULL);
    else kill_job(am);
}

/* Single-node mode (no instances): the command runs here, in the
 * coordinator's own container, as TonY's AM does; the backend says where
 * (tony_am_place). */
static void on_single_exit(void *ctx, pid_t pid, int wait_status) {
    tony_am *am = ctx;
    kill_single(am, pid); /* whatever the command left behind */
    tony_backend_am_command_ended(am->backend, wait_status);
    int code = tony_proc_exit_code(wait_status);
    am->single.pid = 0;
    am->single.exited = true;
    am->single.exit_code = code;
    if (code != 0 && !am->fsm.killed) {
        /* the root cause a failed task has, from the command's own log */
        char *errp = tony_path_join(am->single.place.log_dir, "stderr");
        char *errfile = tony_path_join(am->single.place.log_dir, TONY_TORCH_ERROR_FILE);
        char *tail = tony_lastwords_tail(errp, TONY_LASTWORDS_LINES, TONY_LASTWORDS_BYTES);
        char *report = tony_lastwords_torch_error(errfile, TONY_LASTWORDS_LINES, TONY_LASTWORDS_BYTES);
        am_cause_set_single(&am->fsm.root_cause, am->fsm.job.attempt, code, am->id.host, report, tail);
        free(report);
        free(tail);
        free(errfile);
        free(errp);
    }
    am_fsm_single_exited(&am->fsm, code, am_now_ms(), &am->pending);
    carry_out(am);
}

static int start_single_node(tony_am *am, tony_error *err) {
    char *resources = task_resources(am, tony_conf_get(am->conf, TONY_KEY_CONTAINERS_RESOURCES));
    int rc = tony_backend_prepare_am_command(am->backend, resources, &am->single.place, err);
    free(resources);
    if (rc) return rc;
    const tony_am_place *at = &am->single.place;
    /* What an executor does first in its task's work dir. */
    if (tony_unpack_job_files(at->work_dir, am->id.app_id, err)) return -1;
    char *out = tony_path_join(at->log_dir, "stdout"), *errp = tony_path_join(at->log_dir, "stderr");
    tony_env env = {0};
    am_single_node_env(am, at->work_dir, &env);
    tony_strv envp = {0};
    tony_env_build_envp(&env, &envp);
    char *argv[] = {(char *)tony_proc_command_shell(), "-c", am->plan.am_command, NULL};
    /* in the coordinator's image where the backend runs one (the
     * coordinator itself stays bare: backend.h), whose shell is chosen
     * there, as the executor chooses its own (proc.h) */
    char *image_argv[] = {TONY_PROC_POSIX_SHELL, "-c", TONY_PROC_SHELL_CHOOSER, TONY_PROC_POSIX_SHELL,
                          am->plan.am_command, NULL};
    tony_strv in_image = {0};
    if (tony_backend_am_command_argv(am->backend, at, &env, image_argv, &in_image) == 1)
        tony_info("single-node mode: the command runs in image %s", am->plan.am_image.docker_image);
    /* In a job dir the logs are private; a YARN container's log dir is
     * read by its NodeManager (its own modes apply). */
    tony_spawn s = {.argv = in_image.len ? in_image.items : argv, .envp = envp.items, .cwd = at->work_dir,
                    .stdout_path = out, .stderr_path = errp,
                    .private_output = !am->id.on_cluster,
                    .keep_group = at->share_group,
                    /* a SIGKILLed coordinator takes a container down with
                     * it, as the local backend's tasks' (SIGTERM: the
                     * runtime stops and removes it) */
                    .die_with_parent = in_image.len > 0, .parent_death_signal = SIGTERM};
    pid_t pid;
    rc = tony_proc_spawn(&s, &pid, err);
    if (rc == 0) {
        am->single.pid = pid;
        am_fsm_single_started(&am->fsm);
        tony_reaper_watch(am->reaper, pid, on_single_exit, am);
        tony_info("single-node mode: running `%s` (pid %d) in %s; its output goes to %s", am->plan.am_command,
                  (int)pid, at->work_dir, at->log_dir);
    }
    tony_strv_free(&in_image);
    tony_strv_free(&envp);
    tony_env_free(&env);
    free(out);
    free(errp);
    return rc;
}

/* What runs `tony executor` on this machine (the local backend's tasks). */
static char *self_exe(void) {
    tony_self self;
    if (tony_self_find(&self, NULL)) return tony_strdup("tony");
    char *command = tony_strdup(self.command);
    tony_self_free(&self);
    return command;
}

/* Each task holds a connection open (its long poll) and its container a
 * descriptor or two: the soft descriptor limit (often 1024) goes up to the
 * hard one, so that thousands of tasks fit (issue 26). */
static void raise_fd_limit(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max) return;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl)) tony_debug("cannot raise the descriptor limit: %s", strerror(errno));
}

static int am_setup(tony_am *am, const tony_am_options *o, tony_error *err) {
    raise_fd_limit();
    am->id.job_dir = tony_abspath(o->job_dir);
    am->id.app_id = tony_strdup(o->app_id ? o->app_id : tony_basename(am->id.job_dir));
    am->id.on_cluster = o->yarn;
    am->id.self_exe = self_exe();
    am->id.started_ms = am_now_ms();
    am->id.wall_offset_ms = am_wall_clock_ms() - am->id.started_ms;
    am->conf = tony_conf_new();
    char *conf_path = tony_path_join(am->id.job_dir, TONY_JOBDIR_CONF);
    int rc = tony_conf_load_file(am->conf, conf_path, err);
    free(conf_path);
    if (rc) return -1;
    if (tony_jobdir_secret(am->id.job_dir, &am->id.secret, err)) return -1;
    am->id.read_token = tony_read_token(am->id.secret);
    if (tony_runtime_plan(am->conf, &am->plan, err)) return -1;
    am->runtime = tony_runtime_find(am->plan.framework);
    /* an executor at the barrier re-polls at once after each long poll */
    am_fsm_init(&am->fsm, &am->plan, AM_REGISTER_POLL_MS + 5000, am->id.started_ms);
    /* TONY_JOB_DIR: a directory every task sees. On this machine that is the
     * job dir's shared/; on a cluster only what the user names as shared. */
    const char *shared = tony_conf_get(am->conf, TONY_KEY_APP_SHARED_DIR);
    if (shared && *shared) am->id.shared_dir = tony_strdup(shared);
    else if (!o->yarn) am->id.shared_dir = tony_path_join(am->id.job_dir, TONY_JOBDIR_SHARED);
    /* The job dir's own shared/ is the job's; a dir the user names is theirs to set. */
    if (am->id.shared_dir && tony_mkdir_p(am->id.shared_dir, shared && *shared ? 0755 : 0700, err)) return -1;

    am->base = event_base_new();
    am->act_ev = event_new(am->base, -1, 0, on_kick, am);
    am->reaper = tony_reaper_new(am->base);
    /* Executors on other nodes reach a YARN coordinator at its node's name. */
    am->id.host = tony_strdup(o->host ? o->host : "127.0.0.1");
    if (am_api_start(am, o->yarn || o->listen_all ? "0.0.0.0" : am->id.host, err)) return -1;
    am_record_start(am, o->history_mirror);
    if (am->runtime->rendezvous_scopes && !am->plan.single_node) {
        /* the local backend's tasks are this user's processes on this machine */
        bool same_machine = !o->yarn && (!o->backend || strcmp(o->backend, "local") == 0);
        am->rendezvous = am_rendezvous_start(am->base, am->id.host, &am->fsm.job, same_machine, err);
        if (!am->rendezvous) return -1;
    }
    am->loop = tony_xcalloc(1, sizeof *am->loop);
    am->loop->status_pace.percent = STATUS_PERCENT;
    am->loop->tick = event_new(am->base, -1, EV_PERSIST, on_tick, am);
    struct timeval tv = {0, TICK_MS * 1000};
    event_add(am->loop->tick, &tv);
    am->loop->exit_timer = evtimer_new(am->base, on_exit_timer, am);
    am->loop->sigterm = evsignal_new(am->base, SIGTERM, on_signal, am);
    am->loop->sigint = evsignal_new(am->base, SIGINT, on_signal, am);
    event_add(am->loop->sigterm, NULL);
    event_add(am->loop->sigint, NULL);
    signal(SIGPIPE, SIG_IGN);

    tony_backend_opts bo = {.base = am->base, .reaper = am->reaper, .job_dir = am->id.job_dir, .conf = am->conf,
                            .api_host = am->id.host, .api_port = am->id.port, .tracking_url = am->id.url,
                            .backend_data = o->backend_data};
    am->backend = tony_backend_new(o->yarn ? "yarn" : o->backend ? o->backend : "local", &bo, err);
    if (!am->backend) return -1;
    am->backend->on_exit = on_container_exit;
    am->backend->cb_ctx = am;
    if (tony_backend_check_plan(am->backend, &am->plan, err)) return -1;

    json_t *info = tony_jobdir_am_info_self(am->id.url);
    char *s = json_dumps(info, 0);
    json_decref(info);
    char *info_path = tony_path_join(am->id.job_dir, TONY_JOBDIR_AM_INFO);
    rc = tony_write_file(info_path, s, strlen(s), 0600, err);
    free(info_path);
    free(s);
    tony_info("coordinator of %s listening at %s (%s backend, %s)", am->id.app_id, am->id.url,
              tony_backend_name(am->backend), am->plan.framework);
    return rc;
}

static void am_teardown(tony_am *am) {
    if (am->single.pid > 0) kill_single(am, am->single.pid);
    /* Reads of task logs in flight belong to the backend: dropped first. */
    am_logfetch_free_all(am);
    am_lastfetch_free_all(am);
    /* The history's last copy is over, or given up, before the cluster
     * hears of the end (its client then looks for the history). */
    am_record_history_close(am);
    if (am->backend) {
        /* Told last, as TonY does: a cluster keeps the application running
         * until its client has read the final state (or stopped waiting). */
        if (am->fsm.state == AM_JOB_DONE) {
            /* A task's output is its owner's, and a scheduler shows what it
             * is told to others: YARN's RM serves an application's
             * diagnostics to any user, whatever its ACLs (its REST report
             * sets them outside its access check, Hadoop 3.4.1). They say
             * where the owner reads the last words instead. */
            char *told = am_cause_without_output(am->fsm.diagnostics);
            tony_backend_finish(am->backend, am_final_status_name(am->fsm.final_status), told, am->id.url);
            free(told);
        }
        tony_backend_shutdown(am->backend);
        tony_backend_free(am->backend);
    }
    am_api_free(am);
    am_rendezvous_free(am->rendezvous);
    if (am->loop) {
        struct event *evs[] = {am->loop->tick, am->loop->exit_timer, am->loop->sigterm, am->loop->sigint};
        for (size_t i = 0; i < sizeof evs / sizeof *evs; i++)
            if (evs[i]) event_free(evs[i]);
        free(am->loop);
    }
    if (am->act_ev) event_free(am->act_ev);
    am_actions_free(&am->pending);
    am_record_free(am);
    tony_reaper_free(am->reaper);
    if (am->base) event_base_free(am->base);
    am_fsm_free(&am->fsm);
    tony_plan_free(&am->plan);
    tony_conf_free(am->conf);
    free(am->id.job_dir);
    free(am->id.app_id);
    free(am->id.secret);
    free(am->id.self_exe);
    free(am->id.host);
    free(am->id.url);
    free(am->id.read_token);
    tony_am_place_free(&am->single.place);
    free(am->id.shared_dir);
}

/* Coordinator loss: this coordinator replaces one that was lost, and the
 * backend handed back containers it left running (YARN's next AM attempt,
 * keep-containers): their executors come back (api.c) instead of the job
 * starting over. The wait covers their search (they look every few
 * seconds once their heartbeats fail) with room to spare. */
static bool recover(tony_am *am) {
    tony_backend_previous prev;
    tony_backend_previous_of(am->backend, &prev);
    if (prev.containers <= 0) return false;
    long long now = am_now_ms();
    /* the job's clock goes on from its submission: its elapsed time, tony.application.timeout */
    long long since = prev.submitted_wall_ms > 0 ? am_wall_clock_ms() - prev.submitted_wall_ms : 0;
    if (since > 0) {
        am->id.started_ms = now - since;
        am->fsm.started_ms = am->id.started_ms;
    }
    long long wait = AM_RECOVER_WAIT_MS + 2 * am->plan.heartbeat_interval_ms;
    tony_warn("coordinator restarted: %d container(s) of the lost one still run; waiting up to %lld s for their "
              "tasks to come back", prev.containers, wait / 1000);
    am_fsm_recover(&am->fsm, prev.containers, now + wait, now, &am->pending);
    am_record_recovering(am, prev.containers);
    return true;
}

int tony_am_main(const tony_am_options *o) {
    tony_am am = {0};
    tony_error err = {{0}};
    tony_log_init("am", NULL);
    int rc = am_setup(&am, o, &err);
    if (rc == 0) {
        if (am.plan.single_node) {
            if (start_single_node(&am, &err)) am_fsm_fail_job(&am.fsm, err.msg, am_now_ms(), &am.pending);
        } else if (!recover(&am)) {
            am_fsm_start(&am.fsm, am_now_ms(), &am.pending);
            attempt_started(&am);
        }
        carry_out(&am);
        write_status(&am);
        event_base_dispatch(am.base);
        if (am.fsm.state != AM_JOB_DONE) {
            am_fsm_abandon(&am.fsm, am_now_ms(), &am.pending);
            carry_out(&am);
        }
        write_status(&am);
    } else {
        tony_error_log("%s", err.msg);
        /* Leave the reason where the client looks for the job's state: the
         * state machine's, when the plan got that far. */
        if (am.id.job_dir && am.id.app_id && am.fsm.job.plan) {
            am_fsm_fail_job(&am.fsm, err.msg, am_now_ms(), &am.pending);
            write_status(&am);
        }
        else if (am.id.job_dir) {
            json_t *j = json_pack("{s:s,s:s,s:s,s:s}", JOB_APP_ID, am.id.app_id ? am.id.app_id : "", JOB_STATE,
                                  JOB_STATE_FINISHED, JOB_FINAL_STATUS, JOB_FINAL_STATUS_FAILED, JOB_DIAGNOSTICS,
                                  err.msg);
            char *p = tony_path_join(am.id.job_dir, TONY_JOBDIR_STATUS);
            json_dump_file(j, p, 0);
            free(p);
            json_decref(j);
        }
    }
    int code = am.fsm.state == AM_JOB_DONE && am.fsm.final_status == AM_FINAL_SUCCEEDED ? 0 : 1;
    am_teardown(&am);
    return code;
}
