/* The client half of the backend seam: what the verbs on the user's machine
 * (submit, status, kill, logs, list, history) ask of the place a job runs
 * and of the cluster file system its history may be on, so that client/
 * names no backend. Each backend's folder holds every side of it: the
 * coordinator's (backend.h), the executor's (task.h) and this one (local/,
 * yarn/ ...). A new backend (Slurm: sbatch, squeue, scancel, sacct) is a
 * folder with its ops table and a line in client.c's list; client/ does
 * not change.
 *
 * Every op runs on the verb's one thread and may block (a cluster's REST
 * calls); none keeps a callback. An op prints its own messages (problems on
 * stderr, what people asked on stdout) and returns the CLI's exit codes
 * below; the client prints the rest (the plan, the job's grouped status
 * lines, its task table and final line) the same way on every backend. The
 * job record is the job's dir under the tony root (<root>/jobs/<app id>,
 * common/jobdir.h): each backend keeps what it needs there. */
#ifndef TONY_BACKEND_CLIENT_H
#define TONY_BACKEND_CLIENT_H

#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "backend/stage.h"
#include "common/error.h"
#include "common/histloc.h"
#include "conf/conf.h"
#include "conf/plan.h"

/* Exit codes of the CLI. */
enum { TONY_EXIT_OK = 0, TONY_EXIT_JOB_FAILED = 1, TONY_EXIT_USAGE = 2, TONY_EXIT_UNAVAILABLE = 3 };

/* Where a backend's messages go while the client follows a job: above the
 * job's live status block, which the client draws. */
typedef struct tony_client_out {
    void (*say)(void *ctx, FILE *stream, const char *fmt, va_list ap);
    void *ctx;
} tony_client_out;

void tony_client_say(const tony_client_out *o, FILE *stream, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

typedef struct tony_client_backend_ops tony_client_backend_ops;

/* A job this process submitted and follows. A backend's own handle starts
 * with this (and is freed by its release op). */
typedef struct tony_client_job {
    const tony_client_backend_ops *ops;
    char *id;      /* the application id, which the verbs take */
    char *job_dir; /* its record */
} tony_client_job;

/* What submit hands a backend. */
typedef struct tony_client_submission {
    tony_conf *conf;               /* the job's; staging rewrites its resource keys */
    const tony_plan *plan;
    const tony_stage_input *in;
    bool detach;                   /* the job is not followed: submit returns once it started */
    volatile sig_atomic_t *interrupted; /* Ctrl-C count, set by the client's signal handler */
} tony_client_submission;

/* One look at a followed job (the poll op). */
typedef struct tony_client_poll {
    json_t *job;  /* the coordinator's job JSON when this look got one (the client's to decref), else NULL */
    bool done;    /* nothing more will come: code says how it went (err, when set, why) */
    bool final;   /* done because the job ended on the backend: the client then calls cleanup */
    int code;
    int next_ms;  /* when to look again */
} tony_client_poll;

/* What status shows of a job (the state op). */
typedef struct tony_client_state {
    json_t *job;     /* the coordinator's job JSON, live or last saved; NULL: none */
    bool live;       /* the coordinator answered */
    char *headline;  /* lines shown above the job's status lines (malloc'ed), or NULL */
    json_t *extra;   /* fields --json adds to the job (the backend's own view), or NULL */
    bool final;      /* the job ended on the backend: the client then calls cleanup */
} tony_client_state;

/* `tony logs`' flags, checked by the client. */
typedef struct tony_client_logs_opts {
    const char *task; /* "role:index", or NULL for every task */
    bool follow;      /* with task: its stdout as it grows, until the job ends */
    bool am;          /* the coordinator's own log too */
    int attempt;      /* -1: the current one */
    bool stacks;      /* only the stacks of a hang diagnosis (tony.task.progress-timeout) */
} tony_client_logs_opts;

/* A job's line in `tony list`. */
typedef struct tony_client_row {
    char state[32];
    char final_status[32];
    char framework[64];
} tony_client_row;

/* An entry of a directory on a cluster's file system (tony_client_remote_fs). */
typedef struct tony_client_remote_entry {
    char *name; /* its name in its directory */
    bool is_dir;
    long long length;
    long long mtime_ms; /* its modification time */
} tony_client_remote_entry;

void tony_client_remote_entries_free(tony_client_remote_entry *e, size_t n);

/* A cluster's file system as `tony history` and `tony portal` read a
 * history tree on it (client/histcache.h), opened by open_history_fs
 * below: read only, every call on the verb's thread and blocking. */
typedef struct tony_client_remote_fs {
    void *ctx; /* the backend's; NULL: not open */
    /* Finds a server that answers (YARN: one of the NameNodes); an error
     * names the addresses tried. */
    int (*connect)(void *ctx, tony_error *err);
    /* The entries of dir (*out malloc'ed, tony_client_remote_entries_free);
     * *missing, 0 entries and 0 returned when dir does not exist. */
    int (*list)(void *ctx, const char *dir, tony_client_remote_entry **out, size_t *n, bool *missing,
                tony_error *err);
    /* Downloads path into the local file (overwritten). */
    int (*fetch)(void *ctx, const char *path, const char *local, tony_error *err);
    /* The server that answered, for messages ("host:port"). */
    const char *(*server)(void *ctx);
    /* Frees ctx. */
    void (*close)(void *ctx);
} tony_client_remote_fs;

struct tony_client_backend_ops {
    const char *name;
    /* Its jobs' history is on the cluster's file system (fs.defaultFS), so
     * a bare tony.history.location path means a path there. */
    bool history_on_cluster_fs;
    /* Its tasks run on this machine, with the client's PATH and files (the
     * local backend): what submit finds missing here (an interpreter) is
     * missing there, and is refused; elsewhere it is only warned of. */
    bool tasks_run_here;
    /* Whether this backend is the one to use here when neither --backend
     * nor tony.application.backend names one; why says why (or why not)
     * in a few words ("HADOOP_CONF_DIR=/x has a yarn-site.xml"). The
     * last backend of the list is the fallback and always says yes. */
    bool (*configured)(char *why, size_t n);
    /* Whether job_dir is a record of a job of this backend. */
    bool (*owns_job)(const char *job_dir);
    /* Refuses, at once and before anything is staged, a plan that can never
     * run here; *about (malloc'ed, or NULL) is a line of what the plan
     * runs on, for --dry-run. NULL where only the submit itself can tell
     * (a cluster's answer). */
    int (*check_plan)(const tony_conf *conf, const tony_plan *plan, char **about, tony_error *err);
    /* Stages the job's files and starts its coordinator; prints where.
     * Returns an exit code; on TONY_EXIT_OK *out is the job (followed, or
     * released at once when detached), else err says why, or is empty when
     * the backend said it already. */
    int (*submit)(const tony_client_submission *s, tony_client_job **out, tony_error *err);
    /* For a detached submit: returns once status, kill and logs work on
     * the job (the local coordinator answers), or an exit code and err.
     * NULL when submit's return already means that. */
    int (*wait_started)(tony_client_job *j, tony_error *err);
    /* One look at the job; messages about the backend's own view of it
     * (the cluster's application states) go to out. */
    void (*poll)(tony_client_job *j, const tony_client_out *out, tony_client_poll *p, tony_error *err);
    /* Ctrl-C number count (1, 2, ...) while following: kill the job (once;
     * again on later calls if it could not be asked yet). True: stop
     * following now. Called before each poll while count > 0. */
    bool (*interrupt)(tony_client_job *j, int count, const tony_client_out *out);
    /* After the client showed the finished job's tasks and final line:
     * what else people need (the failed tasks' log links) and telling the
     * coordinator that a client saw the end. NULL: nothing. */
    void (*job_finished)(tony_client_job *j, const json_t *job);
    /* Done following (or detached): frees j. */
    void (*release)(tony_client_job *j);
    /* Lines of links to the tasks' logs where they are not files here (a
     * node's log page); all of them unless failed_only. NULL: none. */
    void (*print_log_links)(FILE *out, const json_t *job, const char *app_id, bool failed_only);
    /* The job's state for `tony status`; conf is the verb's (--conf,
     * tony.xml). Returns an exit code; problems are printed, and a state
     * with neither job nor extra shows nothing more. */
    int (*state)(const char *job_dir, const tony_conf *conf, tony_client_state *st);
    /* Kills the job and waits until nothing of it runs. *final_job: the
     * job as it ended, for the client to show, or NULL. */
    int (*kill)(const char *job_dir, const tony_conf *conf, json_t **final_job);
    /* Prints tasks' output (and the coordinator's with o->am). */
    int (*logs)(const char *job_dir, const tony_client_logs_opts *o, const tony_conf *conf);
    /* The job's line in `tony list`, from what is recorded (no network). */
    void (*list_row)(const char *job_dir, tony_client_row *row);
    /* The job ended: removes what it left outside its record (YARN: its
     * HDFS staging dir), once; quiet: no warning when that fails. NULL:
     * nothing to remove. */
    void (*cleanup)(const char *job_dir, bool quiet);
    /* Opens, without asking the network yet, the file system of a history
     * location on a cluster (where->fs TONY_HISTLOC_HDFS or
     * TONY_HISTLOC_WEBHDFS, common/histloc.h): hdfs:// through this
     * machine's configuration of the cluster, whose file system it must
     * be (fills in where->authority when the location named none), logged
     * in where the cluster is secure; webhdfs://HOST:PORT directly. key is
     * the flag or conf key that gave the location, for messages. On
     * failure *out stays empty. NULL: no cluster file system. */
    int (*open_history_fs)(tony_histloc *where, const tony_conf *conf, const char *key, tony_client_remote_fs *out,
                           tony_error *err);
    /* Why a job whose history never finished will not finish it (its
     * coordinator is gone), from its record; malloc'ed, or NULL when it
     * may still run. */
    char *(*lost_reason)(const char *job_dir, const char *app_id);
};

/* The backend called name, or NULL. */
const tony_client_backend_ops *tony_client_backend_find(const char *name);
/* The backend for a job when nothing names one (see configured); why as there. */
const tony_client_backend_ops *tony_client_backend_choose(char *why, size_t n);
/* The names of every backend, "local, yarn", for messages. */
const char *tony_client_backend_names(void);
/* The backend whose job job_dir records. */
const tony_client_backend_ops *tony_client_backend_of_job(const char *job_dir);

/* open_history_fs of the backend that has one (history on a cluster's file
 * system is read the same whichever backend runs jobs here), or an error
 * naming key when none has. */
int tony_client_history_fs_open(tony_histloc *where, const tony_conf *conf, const char *key,
                                tony_client_remote_fs *out, tony_error *err);

/* What callers use instead of the ops this table may leave NULL: each
 * wrapper holds the policy for a missing one, so no caller checks. */
/* NULL check_plan: 0 (only the submit itself can tell), *about NULL. */
int tony_client_backend_check_plan(const tony_client_backend_ops *ops, const tony_conf *conf, const tony_plan *plan,
                                   char **about, tony_error *err);
/* NULL wait_started: TONY_EXIT_OK (submit's return already means it). */
int tony_client_backend_wait_started(tony_client_job *j, tony_error *err);
/* NULL job_finished: nothing. */
void tony_client_backend_job_finished(tony_client_job *j, const json_t *job);
/* NULL print_log_links: no lines. */
void tony_client_backend_print_log_links(const tony_client_backend_ops *ops, FILE *out, const json_t *job,
                                         const char *app_id, bool failed_only);
/* NULL cleanup: nothing to remove. */
void tony_client_backend_cleanup(const tony_client_backend_ops *ops, const char *job_dir, bool quiet);

/* Sets j's id and job_dir (copies) and ops: for a backend's submit. */
void tony_client_job_init(tony_client_job *j, const tony_client_backend_ops *ops, const char *id, const char *job_dir);
/* Frees what tony_client_job_init set (not j). */
void tony_client_job_clear(tony_client_job *j);

#endif
