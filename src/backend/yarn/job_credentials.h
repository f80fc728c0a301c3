/* The job's credentials in the coordinator, with one owner: the AM
 * container's token file (HADOOP_TOKEN_FILE_LOCATION), read once at start,
 * and what each user of it gets from here: the AMRMToken for the scheduler,
 * the job's secret, the token storage a task container is launched with,
 * the HDFS delegation token the history mirror writes with, and the updates
 * running executors fetch with their heartbeats.
 *
 * Long jobs. YARN renews the HDFS tokens the client got for the job, but
 * only up to their maximum lifetime (HDFS's default: 7 days); then HDFS
 * refuses them. When the client logged in from a keytab it also hands the
 * coordinator that keytab (as secrets in the application's credentials,
 * never as a file in HDFS; see TONY_YARN_KEYTAB_ALIAS), and the coordinator
 * keeps the job's HDFS access alive as TonY's does: it logs in from the
 * keytab, fetches a fresh delegation token per file system (renewer:
 * itself) once the token in use is three quarters through its lifetime,
 * renews the tokens it fetched before they expire, and bumps the
 * generation. Containers launched after that get the new tokens; running
 * executors rewrite their token file (a process started later, such as a
 * restarted task or an `hdfs dfs`, reads the new one; one already running
 * keeps the tokens it read, valid until their own maximum lifetime). The
 * calls to the KDC and the NameNodes run on a workq lane: the loop never
 * waits on them.
 *
 * Threads: load/start/free on the loop thread; the getters copy under a
 * lock and may be called from any thread (the history mirror's). */
#ifndef TONY_YARN_JOB_CREDENTIALS_H
#define TONY_YARN_JOB_CREDENTIALS_H

#include <event2/event.h>
#include <stdbool.h>

#include "backend/yarn/tokens.h"
#include "common/error.h"
#include "common/strv.h"
#include "common/workq.h"

/* Secrets of the application's credentials that only the coordinator gets
 * (never a task container): the keytab's bytes, its principal, and which
 * NameNodes serve each HDFS token's service (a JSON object
 * {"<token service>": "<WebHDFS address, comma list>"}), all put there by
 * `tony submit` when it logged in from a keytab. */
#define TONY_YARN_KEYTAB_ALIAS "tony.keytab"
#define TONY_YARN_KEYTAB_PRINCIPAL_ALIAS "tony.keytab.principal"
#define TONY_YARN_TOKEN_SOURCES_ALIAS "tony.token.sources"

typedef struct yarn_job_credentials yarn_job_credentials;

/* Reads path (the AM container's HADOOP_TOKEN_FILE_LOCATION). */
int yarn_job_credentials_load(const char *path, yarn_job_credentials **out, tony_error *err);
void yarn_job_credentials_free(yarn_job_credentials *c);

/* The AMRMToken (a copy; NULL with an error naming the file when absent). */
yarn_token *yarn_job_credentials_amrm(const yarn_job_credentials *c, tony_error *err);
/* The job's secret (malloc'ed), from the secret TONY_YARN_SECRET_ALIAS. */
int yarn_job_credentials_secret(const yarn_job_credentials *c, char **out, tony_error *err);
/* The token storage for a task container now (all but the AMRMToken and the
 * coordinator's own secrets), appended to out when its generation (0 until
 * the first refresh) is newer than have; returns the generation. */
long long yarn_job_credentials_for_tasks(yarn_job_credentials *c, long long have, tony_buf *out);
/* The current HDFS delegation token of fs.defaultFS as a URL string
 * (malloc'ed), or NULL on an insecure cluster. */
char *yarn_job_credentials_hdfs_token(yarn_job_credentials *c);
/* True when the client gave a keytab (and the sources to refresh from). */
bool yarn_job_credentials_refreshable(const yarn_job_credentials *c);

/* Logs in from the keytab once now (on this thread, so that a keytab that
 * does not work is said at the start) and refreshes from then on, on a lane
 * of q; on the loop of base. Only when refreshable. */
int yarn_job_credentials_start_refresh(yarn_job_credentials *c, struct event_base *base, tony_workq *q,
                                       tony_error *err);
/* The workq lane of every Kerberos login and call of the coordinator's
 * (the refresh's, nm_spnego.h's): one at a time, so that logins never race
 * on the process's one ticket cache. */
#define YARN_KDC_LANE "kdc"
/* A fresh login from the keytab into the process's ticket cache, for
 * SPNEGO calls that follow on the same lane; an error before the refresh
 * started or without a keytab. */
int yarn_job_credentials_login(yarn_job_credentials *c, tony_error *err);
/* Stops the refresh timer (a call out still ends through q). */
void yarn_job_credentials_stop_refresh(yarn_job_credentials *c);

/* The schedule, in wall-clock ms, I/O-free for its unit test. A fresh token
 * is fetched when the one in use is three quarters through its lifetime
 * (issue to max). A token is renewed when three quarters of its time to
 * expiry have passed, unless its expiry is already its maximum. */
long long yarn_token_fetch_due(long long issue_ms, long long max_ms);
long long yarn_token_renew_due(long long now_ms, long long expiry_ms, long long max_ms);
/* After a failed attempt: again in a tenth of the time left until deadline,
 * at least 1 s and at most 5 min later. */
long long yarn_token_retry_due(long long now_ms, long long deadline_ms);

#endif
