/* Where a job lives on disk: <root>/jobs/<app_id>/ holds its final config,
 * secret, staged files, coordinator address, final status, the directory
 * shared across attempts (TONY_JOB_DIR) and every attempt's task dirs and
 * logs. Shared by the client, the coordinator and the local backend. */
#ifndef TONY_JOBDIR_H
#define TONY_JOBDIR_H

#include <stdbool.h>

#include "common/error.h"

#define TONY_JOBDIR_CONF "tony-final.xml"
#define TONY_JOBDIR_SECRET "secret"    /* 0600: the job's API secret */
#define TONY_JOBDIR_AM_INFO "am.json"  /* {"url","pid","start","boot_id"} once the coordinator listens */
#define TONY_JOBDIR_STATUS "status.json" /* the job's state, rewritten as it changes */
#define TONY_JOBDIR_AM_LOG "am.log"
#define TONY_JOBDIR_STAGING "staging"
#define TONY_JOBDIR_SHARED "shared"   /* survives attempts: checkpoints go here */
/* How the line starts that the log cap (executor/logcap.h) writes where it
 * cut a task's stdout or stderr; what follows the line is the kept tail
 * (a follower of the log, local_client.c, finds its place by it). */
#define TONY_LOG_CUT_MARK "\n==== tony: at least "

/* The root of local jobs: root_conf (tony.local.root) if set, else
 * $TONY_HOME, else ~/.tony. malloc'ed. */
char *tony_jobs_root(const char *root_conf);
/* <job_dir>/attempts/<attempt>/<role>-<index>; malloc'ed. */
char *tony_jobdir_task_dir(const char *job_dir, int attempt, const char *role, int index);
/* <job_dir>/attempts/<attempt>/stacks: the stacks of a hung attempt's
 * tasks (tony.task.progress-timeout), and in it <role>-<index>.txt. */
char *tony_jobdir_stacks_dir(const char *job_dir, int attempt);
char *tony_jobdir_stacks_file(const char *job_dir, int attempt, const char *role, int index);
/* The name a coordinator in a cluster's container gives a stacks file in
 * that container's log dir, which the cluster serves after the container
 * (and its work dir, the job dir there) is gone: tony-stacks-<attempt>-<role>-<index>.txt. */
char *tony_jobdir_stacks_log_name(int attempt, const char *role, int index);
/* <job_dir>/attempts/0/am: where a single-node job's command runs. */
char *tony_jobdir_am_dir(const char *job_dir);
/* The job's state as JSON (the coordinator's /v1/job): asked of the live
 * coordinator when it answers (*live = true), else the status.json it
 * left. NULL when there is neither. */
struct json_t *tony_jobdir_load_state(const char *job_dir, bool *live);
/* The coordinator's job JSON from its API at base_url (GET /v1/job, with
 * the job's read token), or NULL when it does not answer. */
struct json_t *tony_jobdir_fetch_job(const char *base_url, const char *read_token);
/* POSTs path (AM_API_JOB_KILL, AM_API_JOB_FINISH) with the job's secret;
 * errors ignored. */
void tony_jobdir_post(const char *base_url, const char *job_dir, const char *path);
/* <job_dir>/<name> as JSON (NULL if missing or malformed), and written
 * atomically. */
struct json_t *tony_jobdir_read_json(const char *job_dir, const char *name);
int tony_jobdir_write_json(const char *job_dir, const char *name, const struct json_t *j, tony_error *err);
/* Resolves a job id (searched under root) or a path to a job dir: one of
 * this user's that nobody else may write, in a jobs/ of the same kind
 * (else an error naming the dir, its owner and mode). */
int tony_jobdir_find(const char *root_conf, const char *id_or_path, char **job_dir, tony_error *err);
/* The coordinator's URL and the secret, read from the job dir. */
int tony_jobdir_am_url(const char *job_dir, char **url, int *pid, tony_error *err);
/* The coordinator's entry of am.json for the process that writes it (the
 * coordinator itself): url, pid, and when it started on which boot. */
struct json_t *tony_jobdir_am_info_self(const char *url);
/* Whether the coordinator am.json names still runs: its pid alive, working
 * in job_dir and, where am.json says when it started, started then on
 * this boot (a pid since taken by another process is not it). *pid gets the pid, 0 when
 * am.json has none. */
bool tony_jobdir_am_running(const char *job_dir, int *pid);
/* Sends sig to the job's coordinator, only if tony_jobdir_am_running would
 * say it runs (checked race-free where the kernel can). 0, or -1 with errno
 * (ESRCH: it does not). */
int tony_jobdir_signal_am(const char *job_dir, int sig);
int tony_jobdir_secret(const char *job_dir, char **secret, tony_error *err);
/* The job's read token (common/readtoken.h), from its secret: what the
 * owner's reads of the coordinator carry. */
int tony_jobdir_read_token(const char *job_dir, char **token, tony_error *err);
/* The live page's link people open once: base_url/?token=T (base_url/ when
 * the secret cannot be read here). malloc'ed. */
char *tony_jobdir_page_url(const char *job_dir, const char *base_url);

#endif
