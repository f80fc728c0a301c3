/* The Slurm backend's client half (backend/client.h). A tony job is one Slurm
 * job whose batch step runs the coordinator; its record is a local job dir
 * (backend/local) on a file system the nodes share, so that status, logs
 * and list read it as they read a local job's, and the coordinator's API
 * answers as a local one's. What Slurm adds: the check against its nodes,
 * sbatch, the job's queue state while no coordinator answers, and scancel
 * when none will. */
#include "backend/slurm/slurm_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/container.h"
#include "backend/local/local_client.h"
#include "backend/slurm/slurm_job.h"
#include "backend/slurm/slurm_tools.h"
#include "common/amapi.h"
#include "common/archive.h"
#include "common/clock.h"
#include "common/fs.h"
#include "common/http.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "common/self.h"
#include "common/strv.h"
#include "conf/keys.h"

/* The record's own file: Slurm's job id. */
#define SLURM_RECORD "slurm.json"
#define SLURM_RECORD_JOB_ID "job_id"
/* The batch script, and the batch step's output (the coordinator's
 * stdout and stderr before its log opens, and Slurm's own messages). */
#define SLURM_SCRIPT "slurm-job.sh"
#define SLURM_OUTPUT "slurm-job.out"
/* squeue is asked at most this often while following. */
#define QUEUE_POLL_MS 2000
#define POLL_MS 300
/* After scancel, how long kill waits for Slurm to say the job ended. */
#define CANCEL_WAIT_MS 60000
/* How long kill waits for the coordinator to take the request. */
#define KILL_ASK_MS 5000
/* After a followed job ended, how long submit waits for its Slurm job to go. */
#define RELEASE_WAIT_MS 30000

typedef struct slurm_job {
    tony_client_job base;
    char *slurm_id;
    char *url;
    char *queue_state;   /* Slurm's last answer */
    long long next_queue_ms;
    bool kill_sent;
    bool finished; /* a poll saw the job end */
} slurm_job;

static bool slurm_configured(char *why, size_t n) {
    bool yes = tony_slurm_configured();
    const char *conf = getenv("SLURM_CONF");
    if (yes) snprintf(why, n, "Slurm is configured here (%s)", conf && *conf ? conf : "/etc/slurm/slurm.conf");
    return yes;
}

static char *record_job_id(const char *job_dir) {
    json_t *r = tony_jobdir_read_json(job_dir, SLURM_RECORD);
    char *id = tony_strdup(json_string_value(json_object_get(r, SLURM_RECORD_JOB_ID)));
    json_decref(r);
    return id;
}

static bool slurm_owns_job(const char *job_dir) {
    char *path = tony_path_join(job_dir, SLURM_RECORD);
    bool yes = tony_file_exists(path);
    free(path);
    return yes;
}

/* Images on Slurm: what a local submit checks (runtime, images, mounts),
 * here on the submitting machine, which must see what the nodes run (the
 * test cluster's nodes are this host). The step's GPUs are numbered by
 * Slurm inside the step, which the container's devices cannot follow yet. */
static int check_images(const tony_plan *plan, tony_error *err) {
    for (size_t i = 0; i < plan->nroles; i++) {
        const tony_role *r = &plan->roles[i];
        if (r->docker_image && r->gpus > 0)
            return tony_err(err, "tony.%s.gpus=%d with image %s: GPUs in images are not supported on Slurm yet; "
                            "set tony.%s.gpus=0, or run the role without an image (tony.docker.enabled=false)",
                            r->name, r->gpus, r->docker_image, r->name);
    }
    return tony_container_check_plan(plan, false, err); /* the coordinator runs bare on Slurm */
}

static int slurm_check_plan(const tony_conf *conf, const tony_plan *plan, char **about, tony_error *err) {
    if (check_images(plan, err)) return -1;
    tony_slurm_layout layout;
    if (tony_slurm_layout_plan(plan, conf, &layout, err)) return -1;
    tony_slurm_cluster cluster;
    int rc = tony_slurm_cluster_read(&cluster, err);
    if (rc == 0) {
        rc = tony_slurm_check_layout(&cluster, plan, &layout, err);
        *about = tony_sprintf("a Slurm job of %zu part(s) on %zu node(s)", layout.len, cluster.len);
        tony_slurm_cluster_free(&cluster);
    }
    tony_slurm_layout_free(&layout);
    return rc;
}

/* sh's single quotes around s. */
static void sh_quote(tony_buf *b, const char *s) {
    tony_buf_puts(b, "'");
    for (const char *p = s; *p; p++) {
        if (*p == '\'') tony_buf_puts(b, "'\\''");
        else tony_buf_append(b, p, 1);
    }
    tony_buf_puts(b, "'");
}

/* A self-contained tony the nodes can run, under the shared root: nodes
 * may have none of our libraries. Made once per build (the build id names
 * it), then reused; *command is its bin/tony. */
static int shared_tony(const char *root, char **command, tony_error *err) {
    tony_self self;
    if (tony_self_find(&self, err)) return -1;
    char *cache = tony_sprintf("%s/cache", root), *tree = NULL;
    int rc = tony_self_cached_tree(&self, cache, &tree, err);
    if (rc) tony_err_wrap(err, "making a tony the Slurm nodes can run");
    else *command = tony_path_join(tree, "bin/tony");
    free(cache), free(tree);
    tony_self_free(&self);
    return rc;
}

/* The shared root that holds Slurm jobs' dirs: tony.slurm.staging-dir,
 * else the tony root, which must then be on a file system the nodes share
 * (a home directory usually is). */
static char *slurm_root(const tony_conf *conf) {
    const char *dir = tony_conf_get(conf, TONY_KEY_SLURM_STAGING_DIR);
    return dir && *dir ? tony_strdup(dir) : tony_jobs_root(tony_conf_get(conf, TONY_KEY_LOCAL_ROOT));
}

static int write_script(const tony_client_submission *s, const char *job_dir, const char *app_id,
                        const char *tony_cmd, char **script_path, tony_error *err) {
    tony_slurm_layout layout;
    if (tony_slurm_layout_plan(s->plan, s->conf, &layout, err)) return -1;
    tony_buf cmd = {0};
    sh_quote(&cmd, tony_cmd);
    tony_buf_puts(&cmd, " am --slurm ");
    sh_quote(&cmd, job_dir);
    char *output = tony_path_join(job_dir, SLURM_OUTPUT);
    const char *name = tony_conf_get(s->conf, TONY_KEY_APP_NAME);
    tony_slurm_script sc = {.job_name = name && *name ? name : app_id,
                            .output = output,
                            .account = tony_conf_get(s->conf, TONY_KEY_SLURM_ACCOUNT),
                            .time_limit_ms = s->plan->app_timeout_ms,
                            .am_command = cmd.data};
    char *script = tony_slurm_batch_script(&layout, &sc);
    *script_path = tony_path_join(job_dir, SLURM_SCRIPT);
    int rc = tony_write_file(*script_path, script, strlen(script), 0700, err);
    free(script);
    free(output);
    tony_buf_free(&cmd);
    tony_slurm_layout_free(&layout);
    return rc;
}

static int slurm_submit(const tony_client_submission *s, tony_client_job **out, tony_error *err) {
    char *root = slurm_root(s->conf);
    char *job_dir = NULL, *app_id = NULL, *tony_cmd = NULL, *script = NULL, *slurm_id = NULL;
    int code = TONY_EXIT_USAGE;
    if (shared_tony(root, &tony_cmd, err) ||
        tony_local_stage_job(s->conf, s->in, root, &job_dir, &app_id, err))
        goto out;
    if (write_script(s, job_dir, app_id, tony_cmd, &script, err)) goto fail;
    if (*s->interrupted) {
        tony_err(err, "interrupted before %s was submitted; nothing was left", app_id);
        code = TONY_EXIT_JOB_FAILED;
        goto fail;
    }
    if (tony_slurm_sbatch(script, job_dir, &slurm_id, err)) {
        code = TONY_EXIT_UNAVAILABLE;
        goto fail;
    }
    json_t *rec = json_pack("{s:s}", SLURM_RECORD_JOB_ID, slurm_id);
    tony_error werr;
    if (tony_jobdir_write_json(job_dir, SLURM_RECORD, rec, &werr))
        fprintf(stderr, "tony: warning: %s; the job is Slurm's job %s\n", werr.msg, slurm_id);
    json_decref(rec);
    /* the coordinator's log is the batch script's output (sbatch --output) */
    printf("tony: job %s submitted as Slurm job %s\ntony: job dir %s (coordinator log: %s/%s)\n", app_id, slurm_id,
           job_dir, job_dir, SLURM_OUTPUT);
    fflush(stdout);
    slurm_job *j = tony_xcalloc(1, sizeof *j);
    tony_client_job_init(&j->base, &tony_slurm_client_ops, app_id, job_dir);
    j->slurm_id = slurm_id;
    slurm_id = NULL;
    *out = &j->base;
    code = TONY_EXIT_OK;
    goto out;
fail:
    tony_rm_rf(job_dir, NULL); /* nothing half-submitted stays behind */
out:
    free(root), free(job_dir), free(app_id), free(tony_cmd), free(script), free(slurm_id);
    return code;
}

/* Slurm's state of the job, asked at most every QUEUE_POLL_MS; NULL until
 * known. */
static const char *queue_state(slurm_job *j, const tony_client_out *out) {
    long long now = tony_now_ms();
    if (now < j->next_queue_ms) return j->queue_state;
    j->next_queue_ms = now + QUEUE_POLL_MS;
    char *state = NULL;
    tony_error err;
    if (tony_slurm_job_state(j->slurm_id, &state, &err)) {
        tony_client_say(out, stderr, "tony: warning: %s\n", err.msg);
        return j->queue_state;
    }
    if (state && (!j->queue_state || strcmp(state, j->queue_state) != 0))
        tony_client_say(out, stdout, "tony: Slurm job %s is %s\n", j->slurm_id, state);
    if (state) {
        free(j->queue_state);
        j->queue_state = state;
    }
    return j->queue_state;
}

static void slurm_poll(tony_client_job *cj, const tony_client_out *out, tony_client_poll *p, tony_error *err) {
    (void)err;
    slurm_job *j = (slurm_job *)cj;
    p->next_ms = POLL_MS;
    if (!j->url && tony_jobdir_am_url(cj->job_dir, &j->url, NULL, NULL) == 0) {
        char *page = tony_jobdir_page_url(cj->job_dir, j->url); /* with the read token, once */
        tony_client_say(out, stdout, "tony: watch it at %s (the coordinator's web page)\n", page);
        free(page);
    }
    bool live;
    json_t *job = tony_jobdir_load_state(cj->job_dir, &live);
    if (tony_job_is_finished(job)) {
        p->done = p->final = j->finished = true;
        p->code = tony_job_succeeded(job) ? TONY_EXIT_OK : TONY_EXIT_JOB_FAILED;
        p->job = job;
        return;
    }
    const char *qs = live ? NULL : queue_state(j, out);
    if (qs && tony_slurm_state_final(qs)) {
        json_decref(job);
        tony_client_say(out, stderr,
                        "tony: Slurm job %s ended (%s) before the coordinator said how the job went; see %s/%s\n",
                        j->slurm_id, qs, cj->job_dir, SLURM_OUTPUT);
        p->done = true;
        p->code = TONY_EXIT_JOB_FAILED;
        return;
    }
    p->job = job;
}

static bool slurm_interrupt(tony_client_job *cj, int count, const tony_client_out *out) {
    slurm_job *j = (slurm_job *)cj;
    if (j->kill_sent) return count > 1;
    if (j->url) {
        tony_client_say(out, stderr, "tony: interrupted: killing the job (Ctrl-C again to stop following)\n");
        tony_jobdir_post(j->url, cj->job_dir, AM_API_JOB_KILL);
        j->kill_sent = true;
    } else {
        /* Still queued: no coordinator to ask. */
        tony_error err;
        tony_client_say(out, stderr, "tony: interrupted: cancelling Slurm job %s\n", j->slurm_id);
        if (tony_slurm_cancel(j->slurm_id, &err)) tony_client_say(out, stderr, "tony: warning: %s\n", err.msg);
        j->kill_sent = true;
    }
    return count > 1;
}

/* Waits until Slurm says the job ended (nothing of it runs any more). */
static bool wait_gone(const char *id, long long max_ms) {
    for (long long waited = 0; waited < max_ms; waited += 500) {
        char *qs = NULL;
        tony_error err;
        bool gone = tony_slurm_job_state(id, &qs, &err) == 0 && (!qs || tony_slurm_state_final(qs));
        free(qs);
        if (gone) return true;
        tony_sleep_ms(500);
    }
    return false;
}

static void slurm_release(tony_client_job *cj) {
    slurm_job *j = (slurm_job *)cj;
    if (j->url) tony_jobdir_post(j->url, cj->job_dir, AM_API_JOB_FINISH);
    /* A followed job that ended: the coordinator exits now, and with it the
     * Slurm job; back to the shell only when squeue no longer shows it. */
    if (j->url && j->finished && !wait_gone(j->slurm_id, RELEASE_WAIT_MS))
        fprintf(stderr, "tony: warning: Slurm job %s is still there %d s after the job ended (see squeue)\n",
                j->slurm_id, RELEASE_WAIT_MS / 1000);
    free(j->url);
    free(j->slurm_id);
    free(j->queue_state);
    tony_client_job_clear(cj);
    free(j);
}

static int slurm_state(const char *job_dir, const tony_conf *conf, tony_client_state *st) {
    char *id = record_job_id(job_dir);
    char *qs = NULL;
    tony_error err;
    if (id && tony_slurm_job_state(id, &qs, &err)) fprintf(stderr, "tony: warning: %s\n", err.msg);
    bool live;
    json_t *job = tony_jobdir_load_state(job_dir, &live);
    int code = TONY_EXIT_OK;
    if (job) {
        json_decref(job);
        code = tony_local_client_ops.state(job_dir, conf, st);
    }
    tony_buf b = {0};
    tony_buf_printf(&b, "Slurm job %s: %s\n", id ? id : "?", qs ? qs : "not known to Slurm (any more)");
    if (st->headline) tony_buf_puts(&b, st->headline);
    free(st->headline);
    st->headline = b.data;
    if (!job && qs && !tony_slurm_state_final(qs)) code = TONY_EXIT_OK; /* queued: nothing more to show */
    else if (!job) {
        fprintf(stderr, "tony: error: the coordinator left no state (see %s/%s)\n", job_dir, SLURM_OUTPUT);
        code = TONY_EXIT_UNAVAILABLE;
    }
    st->extra = json_pack("{s:s?,s:s?}", "slurm_job_id", id, "slurm_state", qs);
    free(id);
    free(qs);
    return code;
}

/* Asks the coordinator to kill the job and waits until it recorded the
 * end (every task stopped); false when no coordinator took the request. */
static bool kill_through_coordinator(const char *job_dir, json_t **final_job) {
    char *url = NULL, *secret = NULL;
    tony_error err;
    bool asked = false;
    if (tony_jobdir_am_url(job_dir, &url, NULL, NULL) == 0 && tony_jobdir_secret(job_dir, &secret, &err) == 0) {
        char *u = tony_sprintf("%s" AM_API_JOB_KILL, url);
        tony_http_response r;
        asked = tony_http_call("POST", u, secret, "{}", KILL_ASK_MS, &r, &err) == 0;
        if (asked) tony_http_response_free(&r);
        free(u);
    }
    for (int i = 0; asked && i < CANCEL_WAIT_MS / 100; i++) {
        bool live;
        json_decref(*final_job);
        *final_job = tony_jobdir_load_state(job_dir, &live);
        if (tony_job_is_finished(*final_job)) break;
        tony_sleep_ms(100);
    }
    if (asked) tony_jobdir_post(url, job_dir, AM_API_JOB_FINISH); /* a client saw the end */
    free(url);
    free(secret);
    return asked;
}

static int slurm_kill(const char *job_dir, const tony_conf *conf, json_t **final_job) {
    (void)conf;
    char *id = record_job_id(job_dir);
    int code = TONY_EXIT_OK;
    if (!kill_through_coordinator(job_dir, final_job)) {
        bool live;
        *final_job = tony_jobdir_load_state(job_dir, &live);
    }
    /* Then (or when no coordinator answers: still queued, or gone) the
     * Slurm job itself, so that nothing stays in squeue. */
    char *qs = NULL;
    tony_error err;
    if (!id) {
        fprintf(stderr, "tony: error: %s/%s names no Slurm job\n", job_dir, SLURM_RECORD);
        code = TONY_EXIT_UNAVAILABLE;
    } else if (tony_slurm_job_state(id, &qs, &err)) {
        fprintf(stderr, "tony: error: %s\n", err.msg);
        code = TONY_EXIT_UNAVAILABLE;
    } else if (qs && !tony_slurm_state_final(qs)) {
        if (tony_slurm_cancel(id, &err)) {
            fprintf(stderr, "tony: error: %s\n", err.msg);
            code = TONY_EXIT_UNAVAILABLE;
        } else if (!wait_gone(id, CANCEL_WAIT_MS)) {
            fprintf(stderr, "tony: warning: Slurm job %s has not ended %d s after scancel\n", id,
                    CANCEL_WAIT_MS / 1000);
        } else {
            fprintf(stderr, "tony: Slurm job %s cancelled\n", id);
        }
    } else if (!*final_job) {
        fprintf(stderr, "tony: Slurm job %s already ended (%s): nothing to kill\n", id, qs ? qs : "gone");
    }
    free(qs);
    free(id);
    return code;
}

static int slurm_logs(const char *job_dir, const tony_client_logs_opts *o, const tony_conf *conf) {
    return tony_local_client_ops.logs(job_dir, o, conf);
}

static void slurm_list_row(const char *job_dir, tony_client_row *row) {
    tony_local_client_ops.list_row(job_dir, row);
}

static char *slurm_lost_reason(const char *job_dir, const char *app_id) {
    (void)app_id;
    char *id = record_job_id(job_dir), *qs = NULL;
    tony_error err;
    char *why = NULL;
    if (id && tony_slurm_job_state(id, &qs, &err) == 0 && (!qs || tony_slurm_state_final(qs)))
        why = tony_sprintf("its Slurm job %s ended (%s) and the coordinator never finished the history; see %s/%s",
                           id, qs ? qs : "no longer known to Slurm", job_dir, SLURM_OUTPUT);
    free(id);
    free(qs);
    return why;
}

const tony_client_backend_ops tony_slurm_client_ops = {
    .name = "slurm",
    .configured = slurm_configured,
    .owns_job = slurm_owns_job,
    .check_plan = slurm_check_plan,
    .submit = slurm_submit,
    .poll = slurm_poll,
    .interrupt = slurm_interrupt,
    .release = slurm_release,
    .state = slurm_state,
    .kill = slurm_kill,
    .logs = slurm_logs,
    .list_row = slurm_list_row,
    .lost_reason = slurm_lost_reason,
};
