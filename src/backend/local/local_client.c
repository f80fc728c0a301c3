/* The local backend's client half: submit stages the job into its dir under
 * the tony root and starts `tony am <job_dir>` in a session of its own;
 * following, status, kill and logs read the job dir and ask the
 * coordinator's API. */
#include "backend/local/local_client.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/container.h"
#include "backend/local/local.h"
#include "common/amapi.h"
#include "common/clock.h"
#include "common/fs.h"
#include "common/http.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "common/proc.h"
#include "common/self.h"
#include "common/strv.h"
#include "common/taskenv.h"
#include "conf/keys.h"

/* How long `tony kill` waits for the coordinator to take the request before
 * it signals it instead. */
#define KILL_ASK_MS 5000
#define POLL_MS 300

typedef struct local_job {
    tony_client_job base;
    int am_pid;
    char *url;      /* the coordinator's API, once it listens */
    bool kill_sent;
} local_job;

static int make_job_dir(const char *root, char **job_dir, char **app_id, tony_error *err) {
    char *jobs = tony_path_join(root, "jobs");
    /* Which jobs a user has is theirs too: 0700, tightened where an older
     * tony made it 0755. */
    struct stat st;
    if (tony_mkdir_p(jobs, 0700, err)) {
        free(jobs);
        return -1;
    }
    if (stat(jobs, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 077)) chmod(jobs, 0700);
    /* Another user's (a 0777 one they made first) is not used: they could
     * swap a job's dir, and its am.json steers what `tony kill` signals. */
    if (tony_fs_check_own_dir(jobs, "the jobs directory", err)) {
        free(jobs);
        return -1;
    }
    long long ms = tony_wall_ms();
    /* application_<clusterTimestamp>_<seq>, the id form TonY's history and
     * portal expect; mkdir makes the id unique among concurrent clients. */
    for (int seq = 1; seq < 10000; seq++) {
        char *id = tony_sprintf("application_%lld_%04d", ms, seq);
        char *dir = tony_path_join(jobs, id);
        /* Only its user reads a job: its config, logs and staged sources. */
        if (mkdir(dir, 0700) == 0) {
            *job_dir = dir;
            *app_id = id;
            free(jobs);
            return 0;
        }
        int e = errno;
        free(id);
        free(dir);
        if (e != EEXIST) {
            free(jobs);
            return tony_err(err, "cannot create a job directory under %s: %s", root, strerror(e));
        }
    }
    free(jobs);
    return tony_err(err, "cannot find a free job id under %s", root);
}

/* The local backend's sink: files land in the job dir's staging/. */
static int local_put(void *ctx, const char *local, const char *dest, const char *container_name, bool job_file,
                     bool archive, char **where, tony_error *err) {
    (void)container_name, (void)job_file, (void)archive;
    char *dst = tony_path_join(ctx, dest);
    int rc = 0;
    if (strcmp(local, dst) != 0) {
        char *dir = tony_strdup(dst);
        *strrchr(dir, '/') = '\0';
        rc = tony_mkdir_p(dir, 0700, err);
        free(dir);
        if (rc == 0) rc = tony_copy_file(local, dst, err);
    }
    if (rc == 0) *where = dst;
    else free(dst);
    return rc;
}

static int local_remote(void *ctx, const char *key, const tony_resource *r, char **where, tony_error *err) {
    (void)ctx, (void)where;
    return tony_err(err, "%s: %s is a remote URI; the local backend reads local files only", key, r->source);
}

int tony_local_stage_job(tony_conf *conf, const tony_stage_input *in, const char *root, char **job_dir_out,
                         char **app_id_out, tony_error *err) {
    char *job_dir = NULL, *app_id = NULL;
    if (make_job_dir(root, &job_dir, &app_id, err)) return -1;
    int rc;
    char *staging = tony_path_join(job_dir, TONY_JOBDIR_STAGING);
    rc = tony_mkdir_p(staging, 0700, err);
    tony_stage_sink sink = {.ctx = staging, .put = local_put, .remote = local_remote, .list_job_files = true};
    if (rc == 0) rc = tony_stage_files(conf, in, app_id, staging, &sink, err);
    /* Copies keep their source's mode and archives get the umask's: none
     * keeps a bit for others. */
    if (rc == 0) rc = tony_make_private(staging, err);
    char *final = tony_path_join(job_dir, TONY_JOBDIR_CONF);
    if (rc == 0) rc = tony_conf_write_file(conf, final, err);
    if (rc == 0) rc = tony_stage_write_secret(job_dir, NULL, err);
    free(final);
    free(staging);
    if (rc) {
        tony_rm_rf(job_dir, NULL); /* nothing half-staged stays behind */
        free(job_dir);
        free(app_id);
        return -1;
    }
    *job_dir_out = job_dir;
    *app_id_out = app_id;
    return 0;
}

/* Starts `tony am <job_dir>` detached from this terminal's session. */
static int start_am(const char *job_dir, int *pid_out, tony_error *err) {
    tony_self self;
    if (tony_self_find(&self, err)) return -1;
    char *log = tony_path_join(job_dir, TONY_JOBDIR_AM_LOG);
    char *argv[] = {self.command, "am", (char *)job_dir, NULL};
    /* Its own session: Ctrl-C in this terminal reaches the client, which asks
     * the coordinator to kill the job, rather than killing it mid-step. */
    tony_spawn s = {.argv = argv, .cwd = job_dir, .stdout_path = log, .stderr_path = log, .new_session = true,
                    .private_output = true};
    pid_t pid;
    int rc = tony_proc_spawn(&s, &pid, err);
    free(log);
    tony_self_free(&self);
    if (rc == 0) *pid_out = (int)pid;
    return rc;
}

/* The fallback: every machine can run a local job. */
static bool local_configured(char *why, size_t n) {
    (void)why, (void)n;
    return true;
}

/* Never asked (the fallback owns what no other backend does). */
static bool local_owns_job(const char *job_dir) {
    (void)job_dir;
    return true;
}

/* The one fit check of a local job, for a real submit and --dry-run alike:
 * says on stderr that vcores are oversubscribed; refuses what does not fit,
 * every problem on its own line. */
static int local_check_plan(const tony_conf *conf, const tony_plan *plan, char **about, tony_error *err) {
    tony_local_pool pool;
    if (tony_local_pool_from_conf(conf, &pool, err)) return -1;
    tony_local_fit fit = {0};
    tony_local_fit_plan(&pool, plan, &fit);
    *about = tony_sprintf("%d %s, %lldm memory, %d GPU(s)", pool.vcores,
                          pool.vcores_capped ? "vcores (tony.local.vcores)" : "cores (vcores may oversubscribe them)",
                          pool.memory_mb, pool.gpus);
    char *notice = tony_local_fit_notice(&pool, &fit);
    if (notice) fprintf(stderr, "tony: %s\n", notice);
    free(notice);
    int rc = 0;
    if (fit.problems.len) {
        char *all = tony_strv_join(&fit.problems, "\ntony: error: ");
        rc = tony_err(err, "%s", all);
        free(all);
    }
    tony_local_fit_free(&fit);
    /* in images: the runtime, each image and each mount, before anything
     * starts; the coordinator's image only where a single-node command
     * runs in it */
    if (rc == 0) rc = tony_container_check_plan(plan, plan->single_node, err);
    const char *am_image = tony_conf_get(conf, TONY_KEY_DOCKER_AM_IMAGE);
    if (rc == 0 && !plan->single_node && plan->am_image.docker_image && am_image && *am_image)
        fprintf(stderr,
                "tony: note: %s=%s is not used here: on the local backend the coordinator runs bare (it is tony "
                "itself, and starts the tasks' containers with this machine's runtime); the tasks run in their "
                "roles' images\n",
                TONY_KEY_DOCKER_AM_IMAGE, am_image);
    return rc;
}

/* The link carries the job's read token (common/readtoken.h) once. */
static void say_web_ui(const tony_client_out *out, const char *job_dir, const char *url) {
    char *page = tony_jobdir_page_url(job_dir, url);
    tony_client_say(out, stdout, "tony: watch it at %s (the coordinator's web page)\n", page);
    free(page);
}

static int local_submit(const tony_client_submission *s, tony_client_job **out, tony_error *err) {
    char *job_dir = NULL, *app_id = NULL;
    char *root = tony_jobs_root(tony_conf_get(s->conf, TONY_KEY_LOCAL_ROOT));
    int staged = tony_local_stage_job(s->conf, s->in, root, &job_dir, &app_id, err);
    free(root);
    if (staged) return TONY_EXIT_USAGE;
    int am_pid, code = TONY_EXIT_OK;
    if (*s->interrupted) {
        /* Ctrl-C while staging: nothing runs yet, so nothing is left. */
        tony_rm_rf(job_dir, NULL);
        tony_err(err, "interrupted before %s was submitted; nothing was left", app_id);
        code = TONY_EXIT_JOB_FAILED;
    } else if (start_am(job_dir, &am_pid, err)) {
        code = TONY_EXIT_UNAVAILABLE;
    } else {
        printf("tony: job %s submitted\ntony: job dir %s (coordinator log: %s/%s)\n", app_id, job_dir, job_dir,
               TONY_JOBDIR_AM_LOG);
        fflush(stdout);
        local_job *j = tony_xcalloc(1, sizeof *j);
        tony_client_job_init(&j->base, &tony_local_client_ops, app_id, job_dir);
        j->am_pid = am_pid;
        *out = &j->base;
    }
    free(job_dir);
    free(app_id);
    return code;
}

/* Until the coordinator answers, so that status, logs and kill work right away. */
static int local_wait_started(tony_client_job *cj, tony_error *err) {
    local_job *j = (local_job *)cj;
    for (int i = 0; i < 300 && !j->url; i++) {
        if (tony_jobdir_am_url(cj->job_dir, &j->url, NULL, NULL) == 0) break;
        int st;
        if (waitpid(j->am_pid, &st, WNOHANG) == j->am_pid) break;
        tony_sleep_ms(100);
    }
    if (!j->url) {
        tony_err(err, "the coordinator did not start; see %s/%s", cj->job_dir, TONY_JOBDIR_AM_LOG);
        return TONY_EXIT_UNAVAILABLE;
    }
    say_web_ui(NULL, cj->job_dir, j->url);
    return TONY_EXIT_OK;
}

/* The coordinator's last warning or error in am.log (malloc'ed; NULL: none):
 * what a user needs when it ended without saying how the job did. */
static char *last_problem(const char *job_dir) {
    char *path = tony_path_join(job_dir, TONY_JOBDIR_AM_LOG);
    tony_buf tail = {0};
    long long size = 0;
    char *found = NULL;
    tony_error ignored;
    if (tony_read_range(path, 0, 0, &tail, &size, &ignored) == 0 &&
        tony_read_range(path, size > 65536 ? size - 65536 : 0, 65536, &tail, &size, &ignored) == 0 && tail.data) {
        for (char *line = strtok(tail.data, "\n"); line; line = strtok(NULL, "\n"))
            if (strstr(line, " WARN ") || strstr(line, " ERROR ")) {
                free(found);
                found = tony_strdup(line);
            }
    }
    tony_buf_free(&tail);
    free(path);
    return found;
}

/* The job dir's state (the live coordinator's, else status.json); done
 * when the job finished or its coordinator exited before that. */
static void local_poll(tony_client_job *cj, const tony_client_out *out, tony_client_poll *p, tony_error *err) {
    (void)err;
    local_job *j = (local_job *)cj;
    int status;
    bool am_alive = waitpid(j->am_pid, &status, WNOHANG) == 0;
    if (!j->url && tony_jobdir_am_url(cj->job_dir, &j->url, NULL, NULL) == 0) say_web_ui(out, cj->job_dir, j->url);
    p->next_ms = POLL_MS;
    bool live;
    json_t *job = tony_jobdir_load_state(cj->job_dir, &live);
    if (!live && !am_alive && !tony_job_is_finished(job)) {
        json_decref(job);
        char *why = last_problem(cj->job_dir);
        tony_client_say(out, stderr, "tony: the coordinator exited before the job ended%s%s; see %s/%s\n",
                        why ? "; its last complaint: " : "", why ? why : "", cj->job_dir, TONY_JOBDIR_AM_LOG);
        free(why);
        p->done = true;
        p->code = TONY_EXIT_JOB_FAILED;
        return;
    }
    if (tony_job_is_finished(job)) {
        p->done = p->final = true;
        p->code = tony_job_succeeded(job) ? TONY_EXIT_OK : TONY_EXIT_JOB_FAILED;
    }
    p->job = job;
}

/* Asks the coordinator to kill the job once it listens. */
static bool local_interrupt(tony_client_job *cj, int count, const tony_client_out *out) {
    local_job *j = (local_job *)cj;
    if (j->url && !j->kill_sent) {
        tony_client_say(out, stderr, "tony: interrupted: killing the job (Ctrl-C again to stop following)\n");
        tony_jobdir_post(j->url, cj->job_dir, AM_API_JOB_KILL);
        j->kill_sent = true;
    }
    return count > 1;
}

/* We are the client that saw the end: the coordinator may go. */
static void local_job_finished(tony_client_job *cj, const json_t *job) {
    (void)job;
    local_job *j = (local_job *)cj;
    if (j->url) tony_jobdir_post(j->url, cj->job_dir, AM_API_JOB_FINISH);
}

/* Detached or done following: the coordinator is told nothing (a detached
 * job's end is for whoever looks at it next). */
static void local_release(tony_client_job *cj) {
    local_job *j = (local_job *)cj;
    free(j->url);
    tony_client_job_clear(cj);
    free(j);
}

/* A job whose coordinator is gone (am.json names a process that no longer
 * runs) and that never finished: nothing will ever finish it. */
static bool job_lost(const char *job_dir, const json_t *job, bool live) {
    int pid = 0;
    return !live && !tony_job_is_finished(job) && !tony_jobdir_am_running(job_dir, &pid) && pid > 0;
}

/* The job's state, LOST for a lost job (its JSON says so too). */
static json_t *load_state(const char *job_dir, bool *live, bool *lost) {
    json_t *job = tony_jobdir_load_state(job_dir, live);
    *lost = job_lost(job_dir, job, *live);
    if (*lost && job) json_object_set_new(job, JOB_STATE, json_string(JOB_STATE_LOST));
    return job;
}

static int local_state(const char *job_dir, const tony_conf *conf, tony_client_state *st) {
    (void)conf; /* a local job's coordinator has its own */
    bool live, lost;
    json_t *job = load_state(job_dir, &live, &lost);
    if (!job) {
        fprintf(stderr, "tony: error: no state for %s yet (see %s/%s)\n", job_dir, job_dir, TONY_JOBDIR_AM_LOG);
        return TONY_EXIT_UNAVAILABLE;
    }
    const char *state = json_string_value(json_object_get(job, JOB_STATE));
    if (!state) state = "?";
    bool finished = tony_job_is_finished(job);
    tony_buf b = {0};
    tony_buf_printf(&b, "job %s: %s%s (attempt %lld)\n", json_string_value(json_object_get(job, JOB_APP_ID)), state,
                    lost ? " (coordinator not running: killed or crashed before the job ended; `tony kill` stops "
                           "what it left)"
                    : live || finished ? "" : " (coordinator not running)",
                    (long long)json_integer_value(json_object_get(job, JOB_ATTEMPT)));
    const char *url = json_string_value(json_object_get(job, JOB_URL));
    if (live && url) {
        char *page = tony_jobdir_page_url(job_dir, url);
        tony_buf_printf(&b, "web page: %s\n", page);
        free(page);
    }
    st->job = job;
    st->live = live;
    st->headline = b.data;
    st->final = finished;
    return TONY_EXIT_OK;
}

/* ---- What a lost coordinator left: its executors and their processes,
 * found by the TONY_LOG_DIR the local backend gives each executor
 * (local.c), which their processes inherit; an executor stopped stops
 * its task's processes and reaps what they detached (executor/reap.h). */

#define LEFTOVER_GRACE_MS 8000 /* an executor's stop: its process's grace, then the reaping's */
#define LEFTOVER_MAX 4096

typedef struct leftovers {
    char *prefix[2]; /* TONY_LOG_DIR=<job dir>/ as given and as resolved */
    pid_t pids[LEFTOVER_MAX];
    int n;
} leftovers;

static void leftover_visit(void *ctx, const tony_proc_info *p) {
    leftovers *l = ctx;
    if (l->n == LEFTOVER_MAX || p->pid == getpid()) return;
    for (int i = 0; i < 2; i++)
        if (l->prefix[i] && tony_proc_env_has(p->pid, l->prefix[i])) {
            l->pids[l->n++] = p->pid;
            return;
        }
}

/* Signals (sig > 0) the job's live processes; how many there are. */
static int job_processes(const char *job_dir, int sig) {
    leftovers *l = tony_xcalloc(1, sizeof *l);
    char *real = realpath(job_dir, NULL);
    l->prefix[0] = tony_sprintf("%s=%s/", TASKENV_LOG_DIR, job_dir);
    if (real && strcmp(real, job_dir) != 0) l->prefix[1] = tony_sprintf("%s=%s/", TASKENV_LOG_DIR, real);
    tony_proc_scan(leftover_visit, l);
    for (int i = 0; sig > 0 && i < l->n; i++) kill(l->pids[i], sig);
    int n = l->n;
    free(real);
    free(l->prefix[0]);
    free(l->prefix[1]);
    free(l);
    return n;
}

/* Stops what of a lost job still runs: SIGTERM (its executors stop their
 * processes), then SIGKILL. TONY_EXIT_OK only when nothing is left. */
static int stop_leftovers(const char *job_dir) {
    int found = job_processes(job_dir, SIGTERM), left = found;
    for (int waited = 0; left > 0 && waited < LEFTOVER_GRACE_MS; waited += POLL_MS) {
        tony_sleep_ms(POLL_MS);
        left = job_processes(job_dir, 0);
    }
    for (int round = 0; left > 0 && round < 10; round++) {
        job_processes(job_dir, SIGKILL);
        tony_sleep_ms(POLL_MS);
        left = job_processes(job_dir, 0);
    }
    if (left > 0) {
        fprintf(stderr, "tony: error: %d process(es) of the job still run after SIGKILL (another user's, or "
                        "unkillable); find them by %s in their environment\n", left, TASKENV_LOG_DIR);
        return TONY_EXIT_UNAVAILABLE;
    }
    if (found) fprintf(stderr, "tony: stopped the %d process(es) it left running (its executors and tasks)\n", found);
    else fprintf(stderr, "tony: nothing of the job runs\n");
    return TONY_EXIT_OK;
}

static int local_kill(const char *job_dir, const tony_conf *conf, json_t **final_job) {
    (void)conf; /* a local job's coordinator has its own */
    tony_error err;
    char *url = NULL, *secret = NULL;
    int pid = 0, code = TONY_EXIT_OK;
    /* A pid in am.json that another process took since is not ours to
     * signal: the coordinator runs only if it is the process that wrote it. */
    if (tony_jobdir_am_url(job_dir, &url, &pid, &err) || !tony_jobdir_am_running(job_dir, NULL)) {
        bool live;
        json_t *job = tony_jobdir_load_state(job_dir, &live);
        if (job && json_string_value(json_object_get(job, JOB_STATE)) && !tony_job_is_finished(job)) {
            fprintf(stderr, "tony: the job's coordinator%s is not running (killed or crashed before the job ended; "
                            "see %s/%s)\n",
                    pid > 0 ? " (the process am.json names)" : "", job_dir, TONY_JOBDIR_AM_LOG);
            code = stop_leftovers(job_dir);
        }
        if (job) {
            *final_job = job;
        } else {
            fprintf(stderr, "tony: error: the job's coordinator is not running and left no status; see %s/%s\n",
                    job_dir, TONY_JOBDIR_AM_LOG);
            code = TONY_EXIT_UNAVAILABLE;
        }
    } else if (tony_jobdir_secret(job_dir, &secret, &err)) {
        fprintf(stderr, "tony: error: %s\n", err.msg);
        code = TONY_EXIT_UNAVAILABLE;
    } else {
        char *u = tony_sprintf("%s" AM_API_JOB_KILL, url);
        tony_http_response r;
        bool asked = tony_http_call("POST", u, secret, "{}", KILL_ASK_MS, &r, &err) == 0;
        if (asked) {
            tony_http_response_free(&r);
        } else if (tony_jobdir_signal_am(job_dir, SIGTERM) == 0) {
            /* A coordinator too busy to answer (thousands of processes on
             * two cores do that) still takes its signal: SIGTERM is a kill
             * request to it, the same path as the API's. */
            fprintf(stderr, "tony: the coordinator (pid %d) did not take the kill request (%s); sent it SIGTERM\n",
                    pid, err.msg);
            asked = true;
        } else {
            fprintf(stderr, "tony: error: %s; and the coordinator (pid %d) cannot be signalled: %s\n", err.msg, pid,
                    strerror(errno));
            code = TONY_EXIT_UNAVAILABLE;
        }
        if (asked) {
            /* Wait until every task is down so "killed" means nothing runs. */
            json_t *job = NULL;
            for (int i = 0; i < 600; i++) {
                bool live;
                json_decref(job);
                job = tony_jobdir_load_state(job_dir, &live);
                if (tony_job_is_finished(job)) break;
                tony_sleep_ms(100);
            }
            *final_job = job;
            /* We are the client that saw the end: the coordinator may go. */
            tony_jobdir_post(url, job_dir, AM_API_JOB_FINISH);
        }
        free(u);
    }
    free(url);
    free(secret);
    return code;
}

static bool job_finished(const char *job_dir) {
    bool live;
    json_t *job = tony_jobdir_load_state(job_dir, &live);
    bool done = tony_job_is_finished(job);
    json_decref(job);
    return done;
}

/* What a follower printed last, to find its place again after a cut. */
#define FOLLOW_SEEN 4096
#define FOLLOW_CHUNK (1 << 20)
typedef struct follow_seen {
    char data[FOLLOW_SEEN];
    size_t len;
} follow_seen;

static void seen_add(follow_seen *s, const char *p, size_t n) {
    if (n >= FOLLOW_SEEN) {
        memcpy(s->data, p + n - FOLLOW_SEEN, FOLLOW_SEEN);
        s->len = FOLLOW_SEEN;
        return;
    }
    size_t drop = s->len + n > FOLLOW_SEEN ? s->len + n - FOLLOW_SEEN : 0;
    memmove(s->data, s->data + drop, s->len - drop);
    memcpy(s->data + s->len - drop, p, n);
    s->len = s->len - drop + n;
}

/* Where to go on in a log the cap cut under its follower (it shrank):
 * just after what was printed last, when that is in the kept tail (its
 * first place there: where output repeats itself byte for byte over 4 KiB,
 * some of it shows twice rather than not at all); else
 * (the follower was further behind than the tail) the tail's start, after
 * the cut's line; else (no cut's line: truncated by someone else) 0. Reads
 * the file once, in chunks. */
static long resume_after_cut(FILE *f, const follow_seen *seen) {
    const char *mark = TONY_LOG_CUT_MARK;
    size_t mlen = strlen(mark), keep = FOLLOW_SEEN + 256, have = 0;
    char *buf = tony_xmalloc(FOLLOW_CHUNK + keep);
    long base = 0, tail = -1, found = -1;
    fseek(f, 0, SEEK_SET);
    size_t n;
    while (found < 0 && (n = fread(buf + have, 1, FOLLOW_CHUNK, f)) > 0) {
        have += n;
        if (tail < 0) {
            char *m = memmem(buf, have, mark, mlen);
            char *nl = m ? memchr(m + 1, '\n', have - (size_t)(m + 1 - buf)) : NULL;
            if (nl) tail = base + (nl + 1 - buf);
        }
        if (tail >= 0 && seen->len) {
            size_t from = tail > base ? (size_t)(tail - base) : 0;
            char *q = from < have ? memmem(buf + from, have - from, seen->data, seen->len) : NULL;
            if (q) found = base + (q - buf) + (long)seen->len;
        }
        size_t carry = have < keep ? have : keep;
        memmove(buf, buf + have - carry, carry);
        base += (long)(have - carry);
        have = carry;
    }
    free(buf);
    clearerr(f);
    return found >= 0 ? found : tail >= 0 ? tail : 0;
}

/* Prints what the file gained since the last look. */
static void follow_read(FILE *f, follow_seen *seen) {
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && st.st_size < ftell(f)) {
        long at = resume_after_cut(f, seen);
        printf("\n==== tony: the log was cut here (tony.task.log-max-size) ====\n");
        fseek(f, at, SEEK_SET);
    }
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        fwrite(buf, 1, n, stdout);
        seen_add(seen, buf, n);
    }
    clearerr(f);
    fflush(stdout);
}

/* Prints what the task writes as it writes it, until the job is over and
 * the file has no more to give. */
static void follow_file(const char *job_dir, const char *path) {
    FILE *f = NULL;
    follow_seen *seen = tony_xcalloc(1, sizeof *seen);
    for (;;) {
        /* looked at first: once the job is over, one more read gets all
         * (the executor's last cut came before the job's end) */
        bool done = job_finished(job_dir);
        if (!f) f = fopen(path, "r");
        if (f) follow_read(f, seen);
        if (done) break;
        tony_sleep_ms(250);
    }
    if (f) fclose(f);
    free(seen);
}

static void cat_file(const char *title, const char *path) {
    char *data = NULL;
    size_t len = 0;
    printf("==> %s (%s) <==\n", title, path);
    if (tony_read_file(path, &data, &len, NULL) == 0) {
        fwrite(data, 1, len, stdout);
        if (len && data[len - 1] != '\n') printf("\n");
    } else {
        printf("(no such file yet)\n");
    }
    free(data);
}

/* The files of the job dir: attempts/<n>/<role>-<index>/std{out,err}. */
static int local_logs(const char *job_dir, const tony_client_logs_opts *o, const tony_conf *conf) {
    (void)conf;
    char role[64] = "";
    int index = -1;
    if (o->task) sscanf(o->task, "%63[a-z]:%d", role, &index);
    if (o->am) {
        char *p = tony_path_join(job_dir, TONY_JOBDIR_AM_LOG);
        cat_file("coordinator", p);
        free(p);
    }
    bool live;
    json_t *job = tony_jobdir_load_state(job_dir, &live);
    long long attempt = o->attempt >= 0 ? o->attempt : job ? json_integer_value(json_object_get(job, JOB_ATTEMPT)) : 0;
    bool found = false;
    int nstacks = 0;
    size_t i;
    json_t *t;
    json_array_foreach(job ? json_object_get(job, JOB_TASKS) : NULL, i, t) {
        const char *r = json_string_value(json_object_get(t, JOB_TASK_ROLE));
        int idx = (int)json_integer_value(json_object_get(t, JOB_TASK_INDEX));
        if (!r) continue; /* a damaged status.json's task: no dir to read */
        if (o->task && (strcmp(r, role) != 0 || idx != index)) continue;
        found = true;
        char *dir = strcmp(r, JOB_SINGLE_NODE_ROLE) == 0 ? tony_jobdir_am_dir(job_dir)
                                                         : tony_jobdir_task_dir(job_dir, (int)attempt, r, idx);
        char *title = tony_sprintf("%s:%d", r, idx);
        char *out = tony_path_join(dir, "stdout"), *er = tony_path_join(dir, "stderr");
        char *t1 = tony_sprintf("%s stdout", title), *t2 = tony_sprintf("%s stderr", title);
        /* a hang diagnosis' stacks (am/hang.h), with the task's output when there are some */
        char *sf = tony_jobdir_stacks_file(job_dir, (int)attempt, r, idx), *t3 = tony_sprintf("%s stacks", title);
        bool has_stacks = tony_file_exists(sf);
        nstacks += has_stacks;
        if (o->follow) {
            follow_file(job_dir, out);
        } else if (!o->stacks) {
            cat_file(t1, out);
            cat_file(t2, er);
        }
        if (has_stacks && !o->follow) cat_file(t3, sf);
        free(dir), free(title), free(out), free(er), free(t1), free(t2), free(sf), free(t3);
    }
    int code = TONY_EXIT_OK;
    if (o->task && !found) {
        fprintf(stderr, "tony: error: no task %s in this job\n", o->task);
        code = TONY_EXIT_USAGE;
    }
    if (code == 0 && o->stacks && nstacks == 0) {
        fprintf(stderr, "tony: no stacks in attempt %lld%s: they are collected when tony.task.progress-timeout "
                        "finds the attempt hung\n", attempt, o->task ? " for that task" : "");
        code = TONY_EXIT_JOB_FAILED;
    }
    json_decref(job);
    return code;
}

static void local_list_row(const char *job_dir, tony_client_row *row) {
    bool live, lost;
    json_t *job = load_state(job_dir, &live, &lost);
    const char *state = job ? json_string_value(json_object_get(job, JOB_STATE)) : "STAGED";
    const char *fs = job ? json_string_value(json_object_get(job, JOB_FINAL_STATUS)) : "";
    const char *fw = job ? json_string_value(json_object_get(job, JOB_FRAMEWORK)) : "";
    snprintf(row->state, sizeof row->state, "%s", state ? state : "?");
    snprintf(row->final_status, sizeof row->final_status, "%s", fs ? fs : "");
    snprintf(row->framework, sizeof row->framework, "%s", fw ? fw : "");
    json_decref(job);
}

static char *local_lost_reason(const char *job_dir, const char *app_id) {
    (void)app_id;
    int pid = 0;
    if (tony_jobdir_am_running(job_dir, &pid) || pid <= 0) return NULL;
    return tony_sprintf("its coordinator (pid %d on this machine) is no longer running and never "
                        "finished the history (killed or crashed; its log: %s/%s)",
                        pid, job_dir, TONY_JOBDIR_AM_LOG);
}

const tony_client_backend_ops tony_local_client_ops = {
    .name = "local",
    .tasks_run_here = true,
    .configured = local_configured,
    .owns_job = local_owns_job,
    .check_plan = local_check_plan,
    .submit = local_submit,
    .wait_started = local_wait_started,
    .poll = local_poll,
    .interrupt = local_interrupt,
    .job_finished = local_job_finished,
    .release = local_release,
    .state = local_state,
    .kill = local_kill,
    .logs = local_logs,
    .list_row = local_list_row,
    .lost_reason = local_lost_reason,
};
