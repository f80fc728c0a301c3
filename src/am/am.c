/* The coordinator's life: load the job, start the API, run attempts until one
 * decides the job, then publish the final status and wait briefly for the
 * client to read it. Everything happens on one libevent loop; the decisions
 * themselves are in job.c. */
#include "am/am.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "am/am_internal.h"
#include "common/fs.h"
#include "common/http.h"
#include "common/jobdir.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/self.h"
#include "common/strv.h"
#include "executor/unpack.h"

#define TICK_MS 250
#define STOP_TIMEOUT_MS 15000
#define UI_LINGER_S 4       /* a watched job's coordinator stays this long after the end */
#define UI_RECENT_MS 10000  /* "watched": the web UI polled within this */
/* The longest the coordinator waits, from the job's end, for the history's
 * last copy to its mirror (HDFS), which runs off the loop. */
#define HISTORY_WAIT_MS 30000
#define HISTORY_POLL_MS 100

static void write_status(tony_am *am) {
    json_t *j = am_job_json(am);
    char *s = json_dumps(j, JSON_INDENT(1));
    json_decref(j);
    char *path = tony_path_join(am->job_dir, TONY_JOBDIR_STATUS);
    tony_error err;
    /* Said once, not every tick: a full disk stays full for a while. */
    if (tony_write_file(path, s, strlen(s), 0600, &err)) {
        if (!am->status_error) tony_warn("%s; clients read the job's state from the API only", err.msg);
        free(am->status_error);
        am->status_error = tony_strdup(err.msg);
    } else if (am->status_error) {
        tony_info("%s written again", path);
        free(am->status_error);
        am->status_error = NULL;
    }
    free(path);
    free(s);
    am->status_dirty = false;
}

static void task_env(tony_am *am, const am_task *t, tony_env *env) {
    const tony_plan *p = &am->plan;
    tony_env_merge(env, &p->container_env);
    tony_env_set(env, "JOB_NAME", t->role->name);
    tony_env_setf(env, "TASK_INDEX", "%d", t->index);
    tony_env_setf(env, "TASK_NUM", "%d", tony_plan_tracked_tasks(p));
    if (tony_plan_is_chief(p, t->role->name, t->index)) tony_env_set(env, "IS_CHIEF", "true");
    tony_env_set(env, "DISTRIBUTED_MODE", p->gang ? "GANG" : "FCFS");
    tony_env_set(env, "JOB_ID", am->app_id);
    tony_env_set(env, "appid", am->app_id);
    tony_env_setf(env, "SESSION_ID", "%d", am->job.attempt);
    if (am->job.attempt > 0) tony_env_setf(env, "NUM_AM_RETRIES", "%d", am->job.attempt);
    tony_env_set(env, "ATTEMPT_NUMBER", "0");
    tony_env_set(env, "AM_HOST", am->host);
    tony_env_setf(env, "AM_PORT", "%d", am->port);
    if (am->shared_dir) tony_env_set(env, "TONY_JOB_DIR", am->shared_dir);
    tony_env_set(env, "TONY_AM_URL", am->url);
    tony_env_set(env, TONY_SECRET_ENV, am->secret);
    tony_env_setf(env, "TONY_TASK_ID", "%s:%d", t->role->name, t->index);
    tony_env_setf(env, "TONY_ATTEMPT", "%d", am->job.attempt);
    tony_env_setf(env, "TONY_HEARTBEAT_INTERVAL_MS", "%lld", p->heartbeat_interval_ms);
    tony_env_setf(env, "TONY_MAX_MISSED_HEARTBEATS", "%d", p->max_missed_heartbeats);
    am_record_task_env(am, t, env);
    if (am_job_reserves_tb_port(&am->job, t)) tony_env_set(env, "TONY_RESERVE_TB_PORT", "1");
    if (p->tensorboard_log_dir) tony_env_set(env, "TB_LOG_DIR", p->tensorboard_log_dir);
    if (t->role->docker_image) {
        tony_env_set(env, "YARN_CONTAINER_RUNTIME_TYPE", "docker");
        tony_env_set(env, "YARN_CONTAINER_RUNTIME_DOCKER_IMAGE", t->role->docker_image);
    }
}

/* A task's localized files: its role's resources plus the job's final
 * configuration, which TonY puts in every container as tony-final.xml. */
static char *task_resources(const tony_am *am, const char *role_resources) {
    return tony_sprintf("%s%s%s/%s", role_resources ? role_resources : "", role_resources && *role_resources ? "," : "",
                        am->job_dir, TONY_JOBDIR_CONF);
}

static void request_task(tony_am *am, am_task *t) {
    tony_env env = {0};
    task_env(am, t, &env);
    char *resources = task_resources(am, t->role->resources);
    char *argv[] = {am->self_exe, "executor", NULL};
    tony_launch l = {.role = t->role->name,
                     .index = t->index,
                     .attempt = am->job.attempt,
                     .memory_mb = t->role->memory_mb,
                     .vcores = t->role->vcores,
                     .gpus = t->role->gpus,
                     .node_label = t->role->node_label,
                     .resources = resources,
                     .env = &env,
                     .argv = argv};
    t->state = AM_TASK_REQUESTED;
    t->requested_ms = am_now_ms();
    am->status_dirty = true;
    am_record_task_requested(am, t);
    tony_error err;
    if (am->backend->ops->launch(am->backend, &l, &err)) {
        tony_error_log("cannot start %s:%d: %s", t->role->name, t->index, err.msg);
        am_job_on_task_exit(&am->job, t, TONY_EXIT_ABORTED, err.msg, am_now_ms());
        am_record_task_exit(am, t);
    }
    free(resources);
    tony_env_free(&env);
}

static void request_ready_tasks(tony_am *am) {
    for (size_t i = 0; i < am->job.ntasks && !am->job.attempt_over; i++) {
        am_task *t = &am->job.tasks[i];
        if (am_job_should_request(&am->job, t)) request_task(am, t);
    }
}

static void start_attempt(tony_am *am, int attempt) {
    am_job_reset(&am->job, attempt);
    am_record_attempt(am);
    if (am->rendezvous) am_rendezvous_reset(am->rendezvous);
    am->status_dirty = true;
    tony_info("attempt %d: asking for %zu container(s)", attempt, am->job.ntasks);
    char *dir = tony_sprintf("%s/attempts/%d", am->job_dir, attempt);
    tony_error err;
    if (tony_mkdir_p(dir, 0700, &err)) tony_warn("%s", err.msg);
    free(dir);
    request_ready_tasks(am);
    am_advance(am);
}

static void schedule_exit(tony_am *am, int seconds) {
    struct timeval tv = {seconds, 0};
    evtimer_add(am->exit_timer, &tv);
}

/* How long the coordinator stays up once the job is decided. */
static int exit_delay_s(const tony_am *am, bool client_done) {
    /* TonY's AM waits (tony.am.wait-client-signal-stop-timeout-sec) for its
     * client to read the final task infos over RPC. Here status.json already
     * holds all of it and clients fall back to it, so on this machine there
     * is nothing to wait for, unless it could not be written... */
    long long wait_s = 0;
    if (!client_done && am->backend && (strcmp(am->backend->ops->name, "local") != 0 || am->status_error) &&
        tony_conf_get_ll(am->conf, "tony.am.wait-client-signal-stop-timeout-sec", 15, &wait_s, NULL))
        wait_s = 15;
    /* ...but a browser showing the job polls about once a second: it gets a
     * few seconds to show the final state rather than a vanished server. */
    if (wait_s < UI_LINGER_S && am->ui_seen_ms && am_now_ms() - am->ui_seen_ms < UI_RECENT_MS) wait_s = UI_LINGER_S;
    return (int)(wait_s < 0 ? 0 : wait_s);
}

static void finish_job(tony_am *am, am_final_status status, const char *diag) {
    if (am->done) return;
    am->done = true;
    am->final_status = status;
    free(am->diagnostics);
    am->diagnostics = tony_strdup(diag ? diag : "");
    am->finished_ms = am_now_ms();
    tony_info("job %s %s: %s", am->app_id, am_final_status_name(status), am->diagnostics);
    am_record_finish(am);
    am_api_release_waiters(am, true);
    write_status(am);
    schedule_exit(am, exit_delay_s(am, false));
}

static void stop_running_tasks(tony_am *am) {
    int attempt = am->job.attempt;
    for (size_t i = 0; i < am->job.ntasks && am->job.attempt == attempt; i++) {
        am_task *t = &am->job.tasks[i];
        if (t->state != AM_TASK_NEW && !t->exited)
            am->backend->ops->stop(am->backend, t->role->name, t->index, am->job.attempt);
    }
}

void am_advance(tony_am *am) {
    if (am->done || am->plan.single_node) return;
    am_job *j = &am->job;
    if (!j->attempt_over) {
        request_ready_tasks(am);
        if (!j->attempt_over && am_job_tracked_done(j)) am_job_settle(j);
        if (!j->attempt_over) return;
    }
    /* The attempt is decided: untracked and sidecar roles, and anything still
     * running after a failure, are stopped; the next step waits for every
     * container to end so their final states are known. */
    am_api_release_waiters(am, true);
    stop_running_tasks(am);
    am->status_dirty = true;
    if (am->backend->ops->active(am->backend) > 0) return;
    if (j->attempt_status == AM_FINAL_FAILED && am->retries_left > 0 && !am->killed && !am->timed_out) {
        am->retries_left--;
        am_record_restart(am);
        tony_warn("attempt %d failed: %s -- restarting the job (%d restart(s) left)", j->attempt,
                  j->attempt_diagnostics ? j->attempt_diagnostics : "", am->retries_left);
        start_attempt(am, j->attempt + 1);
        return;
    }
    finish_job(am, j->attempt_status, j->attempt_diagnostics);
}

static void on_container_exit(void *ctx, const char *role, int index, int attempt, int exit_status,
                              const char *diagnostics) {
    tony_am *am = ctx;
    if (attempt != am->job.attempt) return; /* a container of an earlier attempt */
    am_task *t = am_job_task(&am->job, role, index);
    if (!t) return;
    char meaning[160];
    tony_info("%s:%d ended: %s", role, index, tony_exit_status_meaning(exit_status, meaning, sizeof meaning));
    am_job_on_task_exit(&am->job, t, exit_status, diagnostics, am_now_ms());
    am_record_task_exit(am, t);
    am->status_dirty = true;
    am_advance(am);
}

/* Ends the single-node command and whatever it started (pid: its process,
 * or 0 once reaped): its own process group, or, where it stays in the
 * container's group (see tony_am_place), that group but the coordinator. */
static void kill_single(const tony_am *am, pid_t pid) {
    if (am->single.share_group) tony_proc_kill_group_but_me(getpgrp(), SIGKILL);
    else if (pid > 0) kill(-pid, SIGKILL);
}

void am_on_kill_request(tony_am *am) {
    tony_info("kill requested");
    am->killed = true;
    am_record_kill(am);
    if (am->plan.single_node) {
        if (am->single_pid > 0) kill_single(am, am->single_pid);
        return;
    }
    am_job_end_attempt(&am->job, AM_FINAL_KILLED, "Killed by the user");
    am_advance(am);
}

void am_on_client_finished(tony_am *am) {
    if (am->done) schedule_exit(am, exit_delay_s(am, true));
}

static void on_tick(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    tony_am *am = arg;
    long long now = am_now_ms();
    if (!am->done) {
        if (am->plan.app_timeout_ms > 0 && now - am->started_ms > am->plan.app_timeout_ms && !am->timed_out) {
            am->timed_out = true;
            if (am->plan.single_node) {
                if (am->single_pid > 0) kill_single(am, am->single_pid);
            } else {
                am_job_end_attempt(&am->job, AM_FINAL_FAILED, "Application timed out after %lld ms (tony.application.timeout)",
                                   am->plan.app_timeout_ms);
            }
        }
        if (am->plan.single_node && am->single_pid > 0 && am->plan.execution_timeout_ms > 0 &&
            now - am->started_ms > am->plan.execution_timeout_ms && !am->timed_out) {
            tony_warn("the command ran longer than its execution timeout (%lld ms); killing it",
                      am->plan.execution_timeout_ms);
            am->timed_out = true;
            kill_single(am, am->single_pid);
        }
        if (!am->plan.single_node) {
            am_task *t = am_job_check_heartbeats(&am->job, now);
            if (t) {
                tony_warn("%s", t->diagnostics);
                am_record_heartbeat_missed(am, t);
            }
            am_job_check_registration(&am->job, now);
            am_advance(am);
        }
    }
    am_api_expire_waiters(am, now);
    if (am->status_dirty) write_status(am);
}

static void on_exit_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    tony_am *am = arg;
    /* The history reaches HDFS before the application ends (its client
     * looks there then), unless the mirror takes too long. */
    if (am->history && !am_history_settled(am->history) && am_now_ms() - am->finished_ms < HISTORY_WAIT_MS) {
        struct timeval tv = {0, HISTORY_POLL_MS * 1000};
        evtimer_add(am->exit_timer, &tv);
        return;
    }
    event_base_loopexit(am->base, NULL);
}

static void on_signal(evutil_socket_t sig, short what, void *arg) {
    (void)what;
    tony_am *am = arg;
    tony_warn("signal %d: stopping the job", (int)sig);
    if (am->done) event_base_loopexit(am->base, NULL);
    else am_on_kill_request(am);
}

/* Single-node mode (no instances): the command runs here, in the
 * coordinator's own container, as TonY's AM does; the backend says where
 * (tony_am_place). */
static void on_single_exit(void *ctx, pid_t pid, int wait_status) {
    tony_am *am = ctx;
    kill_single(am, pid); /* whatever the command left behind */
    int code = tony_proc_exit_code(wait_status);
    am->single_pid = 0;
    am->single_exited = true;
    am->single_exit_code = code;
    char meaning[160], *diag;
    if (am->killed) {
        finish_job(am, AM_FINAL_KILLED, "Killed by the user");
        return;
    }
    if (am->timed_out) diag = tony_strdup("Timed out (tony.application.timeout or tony.worker.timeout)");
    else if (code == 0) diag = tony_strdup("Single node training succeeded");
    else diag = tony_sprintf("Single node training failed: %s", tony_exit_status_meaning(code, meaning, sizeof meaning));
    finish_job(am, code == 0 && !am->timed_out ? AM_FINAL_SUCCEEDED : AM_FINAL_FAILED, diag);
    free(diag);
}

static int start_single_node(tony_am *am, tony_error *err) {
    if (!am->backend->ops->prepare_am_command)
        return tony_err(err, "the %s backend runs no single-node job: set tony.<role>.instances for at least one role",
                        am->backend->ops->name);
    char *resources = task_resources(am, tony_conf_get(am->conf, "tony.containers.resources"));
    int rc = am->backend->ops->prepare_am_command(am->backend, resources, &am->single, err);
    free(resources);
    if (rc) return rc;
    const tony_am_place *at = &am->single;
    /* What an executor does first in its task's work dir. */
    if (tony_unpack_job_files(at->work_dir, am->app_id, err)) return -1;
    char *out = tony_path_join(at->log_dir, "stdout"), *errp = tony_path_join(at->log_dir, "stderr");
    tony_env env = {0};
    tony_env_merge(&env, &am->plan.container_env);
    tony_env_merge(&env, &am->plan.shell_env);
    tony_env_set(&env, "JOB_ID", am->app_id);
    tony_env_set(&env, "appid", am->app_id);
    tony_env_set(&env, "PREPROCESSING_JOB", "true");
    tony_env_set(&env, "HOME", at->work_dir);
    tony_env_set(&env, "SESSION_ID", "0");
    if (am->shared_dir) tony_env_set(&env, "TONY_JOB_DIR", am->shared_dir);
    tony_env_unset(&env, "MALLOC_ARENA_MAX");
    tony_strv envp = {0};
    tony_env_build_envp(&env, &envp);
    char *argv[] = {"bash", "-c", am->plan.am_command, NULL};
    /* In a job dir the logs are private; a YARN container's log dir is
     * read by its NodeManager (its own modes apply). */
    tony_spawn s = {.argv = argv, .envp = envp.items, .cwd = at->work_dir, .stdout_path = out, .stderr_path = errp,
                    .private_output = !am->on_cluster,
                    .keep_group = at->share_group};
    pid_t pid;
    rc = tony_proc_spawn(&s, &pid, err);
    if (rc == 0) {
        am->single_pid = pid;
        tony_reaper_watch(am->reaper, pid, on_single_exit, am);
        tony_info("single-node mode: running `%s` (pid %d) in %s; its output goes to %s", am->plan.am_command,
                  (int)pid, at->work_dir, at->log_dir);
    }
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

static int am_setup(tony_am *am, const tony_am_options *o, tony_error *err) {
    am->job_dir = tony_abspath(o->job_dir);
    am->app_id = tony_strdup(o->app_id ? o->app_id : tony_basename(am->job_dir));
    am->on_cluster = o->yarn;
    am->history_mirror = o->history_mirror;
    am->self_exe = self_exe();
    am->started_ms = am_now_ms();
    am->wall_offset_ms = am_wall_clock_ms() - am->started_ms;
    am->conf = tony_conf_new();
    char *conf_path = tony_path_join(am->job_dir, TONY_JOBDIR_CONF);
    int rc = tony_conf_load_file(am->conf, conf_path, err);
    free(conf_path);
    if (rc) return -1;
    if (tony_jobdir_secret(am->job_dir, &am->secret, err)) return -1;
    if (tony_plan_from_conf(am->conf, &am->plan, err)) return -1;
    am->runtime = tony_runtime_find(am->plan.framework);
    am->retries_left = am->plan.retry_count;
    am_job_init(&am->job, &am->plan);
    am->job.barrier_poll_ms = AM_REGISTER_POLL_MS + 5000;
    /* TONY_JOB_DIR: a directory every task sees. On this machine that is the
     * job dir's shared/; on a cluster only what the user names as shared. */
    const char *shared = tony_conf_get(am->conf, "tony.application.shared-dir");
    if (shared && *shared) am->shared_dir = tony_strdup(shared);
    else if (!o->yarn) am->shared_dir = tony_path_join(am->job_dir, TONY_JOBDIR_SHARED);
    /* The job dir's own shared/ is the job's; a dir the user names is theirs to set. */
    if (am->shared_dir && tony_mkdir_p(am->shared_dir, shared && *shared ? 0755 : 0700, err)) return -1;

    am->base = event_base_new();
    am->reaper = tony_reaper_new(am->base);
    /* Executors on other nodes reach a YARN coordinator at its node's name. */
    am->host = tony_strdup(o->host ? o->host : "127.0.0.1");
    if (am_api_start(am, o->yarn ? "0.0.0.0" : am->host, err)) return -1;
    am_record_start(am);
    if (am->runtime->rendezvous_scopes && !am->plan.single_node) {
        am->rendezvous = am_rendezvous_start(am->base, am->host, err);
        if (!am->rendezvous) return -1;
    }
    am->tick = event_new(am->base, -1, EV_PERSIST, on_tick, am);
    struct timeval tv = {0, TICK_MS * 1000};
    event_add(am->tick, &tv);
    am->exit_timer = evtimer_new(am->base, on_exit_timer, am);
    am->sigterm = evsignal_new(am->base, SIGTERM, on_signal, am);
    am->sigint = evsignal_new(am->base, SIGINT, on_signal, am);
    event_add(am->sigterm, NULL);
    event_add(am->sigint, NULL);
    signal(SIGPIPE, SIG_IGN);

    tony_backend_opts bo = {.base = am->base, .reaper = am->reaper, .job_dir = am->job_dir, .conf = am->conf,
                            .api_host = am->host, .api_port = am->port, .tracking_url = am->url,
                            .backend_data = o->backend_data};
    am->backend = tony_backend_new(o->yarn ? "yarn" : "local", &bo, err);
    if (!am->backend) return -1;
    am->backend->on_exit = on_container_exit;
    am->backend->cb_ctx = am;
    if (am->backend->ops->check_plan(am->backend, &am->plan, err)) return -1;

    json_t *info = tony_jobdir_am_info_self(am->url);
    char *s = json_dumps(info, 0);
    json_decref(info);
    char *info_path = tony_path_join(am->job_dir, TONY_JOBDIR_AM_INFO);
    rc = tony_write_file(info_path, s, strlen(s), 0600, err);
    free(info_path);
    free(s);
    tony_info("coordinator of %s listening at %s (%s backend, %s)", am->app_id, am->url, am->backend->ops->name,
              am->plan.framework);
    return rc;
}

static void am_teardown(tony_am *am) {
    if (am->single_pid > 0) kill_single(am, am->single_pid);
    /* Reads of task logs in flight belong to the backend: dropped first. */
    am_logfetch_free_all(am);
    /* The history's last copy is over, or given up, before the cluster
     * hears of the end (its client then looks for the history). */
    am_history_free(am->history);
    am->history = NULL;
    if (am->backend) {
        /* Told last, as TonY does: a cluster keeps the application running
         * until its client has read the final state (or stopped waiting). */
        if (am->done && am->backend->ops->finish)
            am->backend->ops->finish(am->backend, am_final_status_name(am->final_status),
                                     am->diagnostics ? am->diagnostics : "", am->url);
        am->backend->ops->shutdown(am->backend);
        am->backend->ops->free(am->backend);
    }
    free(am->waiters);
    am_rendezvous_free(am->rendezvous);
    tony_http_server_free(am->http);
    tony_host_check_free(&am->hosts);
    if (am->tick) event_free(am->tick);
    if (am->exit_timer) event_free(am->exit_timer);
    if (am->sigterm) event_free(am->sigterm);
    if (am->sigint) event_free(am->sigint);
    am_record_free(am);
    tony_reaper_free(am->reaper);
    if (am->base) event_base_free(am->base);
    am_job_free(&am->job);
    tony_plan_free(&am->plan);
    tony_conf_free(am->conf);
    free(am->job_dir);
    free(am->app_id);
    free(am->secret);
    free(am->self_exe);
    free(am->host);
    free(am->url);
    free(am->diagnostics);
    free(am->status_error);
    tony_am_place_free(&am->single);
    free(am->shared_dir);
}

int tony_am_main(const tony_am_options *o) {
    tony_am am = {0};
    tony_error err = {{0}};
    tony_log_init("am", NULL);
    int rc = am_setup(&am, o, &err);
    if (rc == 0) {
        if (am.plan.single_node) {
            if (start_single_node(&am, &err)) finish_job(&am, AM_FINAL_FAILED, err.msg);
        } else {
            start_attempt(&am, 0);
        }
        write_status(&am);
        event_base_dispatch(am.base);
        if (!am.done) finish_job(&am, AM_FINAL_KILLED, "the coordinator stopped before the job ended");
        write_status(&am);
    } else {
        tony_error_log("%s", err.msg);
        /* Leave the reason where the client looks for the job's state. */
        am.done = true;
        am.final_status = AM_FINAL_FAILED;
        am.diagnostics = tony_strdup(err.msg);
        if (am.job_dir && am.app_id && am.plan.framework) write_status(&am);
        else if (am.job_dir) {
            json_t *j = json_pack("{s:s,s:s,s:s,s:s}", "app_id", am.app_id ? am.app_id : "", "state", "FINISHED",
                                  "final_status", "FAILED", "diagnostics", err.msg);
            char *p = tony_path_join(am.job_dir, TONY_JOBDIR_STATUS);
            json_dump_file(j, p, 0);
            free(p);
            json_decref(j);
        }
    }
    int code = am.final_status == AM_FINAL_SUCCEEDED ? 0 : 1;
    am_teardown(&am);
    return code;
}
