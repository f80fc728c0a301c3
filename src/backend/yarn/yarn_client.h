/* The YARN backend's client half (backend/client.h): submit checks the
 * cluster, stages to HDFS and submits the AM through RM REST; status, kill
 * and logs ask the RM and, while the app runs, the coordinator at its
 * amRPCAddress; history on HDFS is read through WebHDFS. A YARN job's
 * record is ~/.tony/jobs/<appId>/yarn.json. Below the ops table: what its
 * files (client_submit.c, client_jobs.c, client_logs.c,
 * client_history.c) share, for them alone. */
#ifndef TONY_YARN_CLIENT_H
#define TONY_YARN_CLIENT_H

#include <jansson.h>
#include <stdio.h>
#include <stdbool.h>

#include "backend/client.h"
#include "backend/yarn/rest.h"
#include "common/error.h"
#include "conf/conf.h"

extern const tony_client_backend_ops tony_yarn_client_ops;

#define TONY_JOBDIR_YARN "yarn.json" /* {"rm","app_id","staging_uri","tracking_url",...} */
/* yarn.json's flag for a job of a kerberized cluster (its verbs use SPNEGO). */
#define TONY_YARN_RECORD_KERBEROS "kerberos"
#define TONY_YARN_APP_TYPE "TONY"

/* The ops of following a submitted app (client_submit.c). */
int tony_yarn_client_submit(const tony_client_submission *s, tony_client_job **out, tony_error *err);
void tony_yarn_client_poll(tony_client_job *j, const tony_client_out *out, tony_client_poll *p, tony_error *err);
bool tony_yarn_client_interrupt(tony_client_job *j, int count, const tony_client_out *out);
void tony_yarn_client_job_finished(tony_client_job *j, const json_t *job);
void tony_yarn_client_release(tony_client_job *j);
/* Prints tasks' output: while the job runs through the coordinator's API,
 * afterwards from the NodeManagers (client_logs.c). */
int tony_yarn_client_logs(const char *job_dir, const tony_client_logs_opts *o, const tony_conf *conf);

/* History on HDFS for `tony history` and `tony portal` (client_history.c). */
int tony_yarn_open_history_fs(tony_histloc *where, const tony_conf *conf, const char *key, tony_client_remote_fs *out,
                              tony_error *err);

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
/* The record with its app id (*app_id points into it), or NULL having said
 * on stderr that it is unreadable. */
json_t *tony_yarn_record_open(const char *job_dir, const char **app_id);
void tony_yarn_record_update(const char *job_dir, const json_t *app);
/* The coordinator's job JSON from the app report's amRPCAddress (read with
 * the token of the job in job_dir), or NULL. */
json_t *tony_yarn_am_job(const json_t *app, const char *job_dir);
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
