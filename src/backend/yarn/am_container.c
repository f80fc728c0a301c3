/* `tony am --yarn`: what the coordinator needs first inside its YARN AM
 * container (main.c then runs it). The NM has localized the staged files into the work dir; the
 * job's credentials (its secret, never in the env, which the RM shows; the
 * AMRMToken; HDFS tokens) are in container_tokens, read once here
 * (job_credentials.h); the node's name is NM_HOST; the NameNodes for the
 * job's history come in the env (history_hdfs.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/yarn/history_hdfs.h"
#include "backend/yarn/ids.h"
#include "backend/yarn/job_credentials.h"
#include "backend/yarn/yarn_backend.h"
#include "common/fs.h"
#include "common/http.h"
#include "common/jobdir.h"
#include "common/log.h"
#include "common/strv.h"
#include "common/taskenv.h"

/* Writes the job's secret where the coordinator reads it (job dir, 0600). */
static int write_secret(const yarn_job_credentials *creds, const char *job_dir, tony_error *err) {
    char *secret = NULL;
    if (yarn_job_credentials_secret(creds, &secret, err)) return -1;
    char *file = tony_path_join(job_dir, TONY_JOBDIR_SECRET);
    int rc = tony_write_file(file, secret, strlen(secret), 0600, err);
    free(file);
    free(secret);
    return rc;
}

int tony_yarn_am_prepare(tony_yarn_am_start *s) {
    tony_log_init("am", NULL);
    *s = (tony_yarn_am_start){0};
    tony_error err = {{0}};
    const char *container = getenv(TASKENV_CONTAINER_ID);
    const char *host = getenv(TASKENV_NM_HOST);
    const char *tokens = getenv("HADOOP_TOKEN_FILE_LOCATION");
    yarn_container_id cid = {0};
    yarn_job_credentials *creds = NULL;
    if (!getcwd(s->job_dir, sizeof s->job_dir)) {
        tony_err(&err, "cannot read the container's work dir");
    } else if (!container || !host || !tokens || !*tokens) {
        tony_err(&err, "CONTAINER_ID, NM_HOST or HADOOP_TOKEN_FILE_LOCATION is not set: `tony am --yarn` runs only "
                       "in a YARN AM container");
    } else if (yarn_container_id_parse(container, &cid, &err) == 0 &&
               yarn_job_credentials_load(tokens, &creds, &err) == 0 && write_secret(creds, s->job_dir, &err) == 0) {
        yarn_app_id_format(&cid.attempt.app, s->app_id, sizeof s->app_id);
        tony_info("YARN attempt %d of %s in %s on %s", (int)cid.attempt.attempt, s->app_id, container, host);
        s->host = host;
        s->credentials = creds;
        s->history_mirror = tony_yarn_history_mirror_new(creds);
        return 0;
    }
    yarn_job_credentials_free(creds);
    tony_error_log("%s", err.msg);
    return -1;
}

void tony_yarn_am_release(tony_yarn_am_start *s) {
    tony_yarn_history_mirror_free(s->history_mirror);
    yarn_job_credentials_free(s->credentials);
    *s = (tony_yarn_am_start){0};
}
