/* The coordinator's history mirror on YARN: HDFS through WebHDFS, at the
 * NameNodes the client named in the AM's environment. Batches run on a
 * thread of the mirror's own (see backend/history_mirror.h), each
 * call with limits of a few seconds, so that the coordinator's end (which
 * waits for the last batch) stays short when HDFS does not answer. */
#ifndef TONY_YARN_HISTORY_HDFS_H
#define TONY_YARN_HISTORY_HDFS_H

#include "backend/history_mirror.h"

/* Env of the AM container, set by `tony submit`: the NameNodes' web
 * addresses (comma list of http://host:port), fs.defaultFS, and the user
 * WebHDFS calls are made as. */
#define TONY_YARN_WEBHDFS_ENV "TONY_YARN_WEBHDFS"
#define TONY_YARN_DEFAULT_FS_ENV "TONY_YARN_DEFAULT_FS"
#define TONY_YARN_HDFS_USER_ENV "TONY_YARN_HDFS_USER"

/* Per NameNode call, and the longest a transfer may move nothing. */
#define TONY_YARN_HISTORY_CALL_MS 5000
#define TONY_YARN_HISTORY_STALL_S 5
/* A whole upload: history files are small, and the coordinator's end
 * (which may wait for the call out) must not depend on a slow DataNode. */
#define TONY_YARN_HISTORY_PUT_MAX_S 20

struct yarn_job_credentials;

/* From the environment; NULL (and a log line saying why) when the client
 * did not pass the NameNodes (a job submitted by an older tony). */
/* On a secure cluster its calls prove themselves with the job's current
 * HDFS delegation token from creds (the coordinator has no Kerberos
 * ticket), taken afresh for each batch since a keytab refreshes it. */
tony_am_history_mirror *tony_yarn_history_mirror_new(struct yarn_job_credentials *creds);
void tony_yarn_history_mirror_free(tony_am_history_mirror *m);

#endif
