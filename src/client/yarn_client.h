/* The client verbs on the YARN backend: submit (check the cluster, stage to
 * HDFS, submit the AM through RM REST, follow it) and status, kill, logs for
 * YARN jobs, which keep a local record in ~/.tony/jobs/<appId>/yarn.json. */
#ifndef TONY_YARN_CLIENT_H
#define TONY_YARN_CLIENT_H

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdbool.h>

#include "backend/yarn/rest.h"
#include "client/stage.h"
#include "common/error.h"
#include "conf/conf.h"
#include "conf/plan.h"

#define TONY_JOBDIR_YARN "yarn.json" /* {"rm","app_id","staging_uri","tracking_url",...} */
/* yarn.json's flag for a job of a kerberized cluster (its verbs use SPNEGO). */
#define TONY_YARN_RECORD_KERBEROS "kerberos"
#define TONY_YARN_APP_TYPE "TONY"

typedef struct tony_yarn_submit_opts {
    bool detach;
    volatile sig_atomic_t *interrupted; /* Ctrl-C count, set by the caller's signal handler */
} tony_yarn_submit_opts;

/* Submits and (unless detached) follows the job. Returns the process exit
 * code; err holds the message when it is neither 0 nor a job's own failure. */
int tony_yarn_submit(tony_conf *conf, const tony_plan *plan, const tony_stage_input *in,
                     const tony_yarn_submit_opts *opts, tony_error *err);

/* True when job_dir is a YARN job's local record. */
bool tony_yarn_is_job(const char *job_dir);
/* The verbs for a YARN job; each returns the exit code and prints its own
 * messages. conf: the verb's configuration (--conf, tony.xml), whose fs.*,
 * yarn.* keys go over HADOOP_CONF_DIR's as for submit. */
int tony_yarn_status(const char *job_dir, bool as_json, const tony_conf *conf);
int tony_yarn_kill(const char *job_dir, const tony_conf *conf);
typedef struct tony_yarn_logs_opts {
    const char *task; /* "role:index", or NULL for every task */
    bool follow;      /* with task: its stdout as it grows, until the job ends */
    bool am;          /* the coordinator's own log too */
    int attempt;      /* -1: the current one */
    bool stacks;      /* only the stacks of a hang diagnosis (tony.task.progress-timeout) */
} tony_yarn_logs_opts;
/* Prints tasks' output: while the job runs through the coordinator's API,
 * afterwards from the NodeManagers (logs_yarn.c). */
int tony_yarn_logs(const char *job_dir, const tony_yarn_logs_opts *o, const tony_conf *conf);
/* The RM state and final status recorded for `tony list` ("" if none). */
void tony_yarn_list_state(const char *job_dir, char *state, size_t nstate, char *final, size_t nfinal);

/* Shared by submit and the verbs (jobs_yarn.c). */
/* A REST client for the job's RM (the recorded one, then HADOOP_CONF_DIR's
 * with conf's yarn.* keys on top; conf may be NULL). */
tony_yarn_rest *tony_yarn_connect_rm(const json_t *rec, const char *job_dir, const tony_conf *conf, tony_error *err);
/* http://host:port of the coordinator's API from the app report, or NULL. */
char *tony_yarn_am_url(const json_t *app);
/* Lines pointing at the NodeManager log links of the job's tasks: every
 * task's when failed_only is false (and the job is small), else those that
 * ended with an error. Nothing when no task has a link. */
void tony_yarn_print_log_links(FILE *out, const json_t *job, const char *app_id, bool failed_only);
json_t *tony_yarn_record_load(const char *job_dir);
void tony_yarn_record_update(const char *job_dir, const json_t *app);
/* The coordinator's job JSON from the app report's amRPCAddress, or NULL. */
json_t *tony_yarn_am_job(const json_t *app);
/* POSTs /v1/job/finish to the AM (errors ignored). */
void tony_yarn_am_finish(const json_t *app, const char *job_dir);
/* Once the RM says the app is final: a status.json the coordinator did not
 * get to finish (it ended between two polls, or never ran) gets the RM's
 * final status, so that status and list agree with the RM. */
void tony_yarn_status_finalize(const char *job_dir, const json_t *app);
/* Deletes the HDFS staging dir once, when the app is final. */
void tony_yarn_cleanup_staging(const char *job_dir, bool quiet);
bool tony_yarn_state_final(const char *state);

#endif
