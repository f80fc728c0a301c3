/* A task container's side of the job's credentials on YARN: the job's
 * secret, which reaches the executor in the container's token file
 * (HADOOP_TOKEN_FILE_LOCATION) rather than its env, and that file's
 * rewrite when the coordinator sends refreshed tokens (job_credentials.h);
 * and the YARN backend's task-side table (yarn_task.h), whose third op,
 * finding the next AM attempt, is coordfile.c's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/yarn/tokens.h"
#include "backend/yarn/yarn_backend.h"
#include "backend/yarn/yarn_task.h"
#include "common/fs.h"
#include "common/http.h"
#include "common/taskenv.h"

static const char *token_file(tony_error *err) {
    const char *path = getenv("HADOOP_TOKEN_FILE_LOCATION");
    if (!path || !*path)
        tony_err(err, "neither %s nor HADOOP_TOKEN_FILE_LOCATION is set: the job's secret reaches a container "
                      "through one of them (is this a YARN container started by tony?)", TASKENV_SECRET);
    return path && *path ? path : NULL;
}

int tony_yarn_task_secret(char **out, tony_error *err) {
    const char *path = token_file(err);
    if (!path) return -1;
    yarn_credentials *creds = NULL;
    if (yarn_credentials_read_file(path, &creds, err)) return -1;
    const yarn_secret *secret = yarn_credentials_find_secret(creds, TONY_YARN_SECRET_ALIAS);
    int rc = 0;
    if (!secret || secret->len == 0)
        rc = tony_err(err, "%s holds no secret %s: was the job submitted by `tony submit`?", path,
                      TONY_YARN_SECRET_ALIAS);
    else
        *out = tony_sprintf("%.*s", (int)secret->len, (const char *)secret->data);
    yarn_credentials_free(creds);
    return rc;
}

int tony_yarn_task_update_credentials(const void *data, size_t len, tony_error *err) {
    const char *path = token_file(err);
    if (!path) return -1;
    /* What is written must be what every reader can parse, and keep the
     * secret the executor itself reads at its start. */
    yarn_credentials *creds = NULL;
    if (yarn_credentials_parse(data, len, "the coordinator's refreshed credentials", &creds, err)) return -1;
    bool has_secret = yarn_credentials_find_secret(creds, TONY_YARN_SECRET_ALIAS) != NULL;
    yarn_credentials_free(creds);
    if (!has_secret)
        return tony_err(err, "the coordinator's refreshed credentials lack the job's secret; keeping %s", path);
    char *tmp = tony_sprintf("%s.tony-new", path);
    int rc = tony_write_file(tmp, data, len, 0600, err);
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = tony_err(err, "cannot replace %s with the refreshed credentials: %s", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return rc;
}

const tony_task_backend_ops tony_yarn_task_ops = {
    .name = "yarn",
    .secret = tony_yarn_task_secret,
    .update_credentials = tony_yarn_task_update_credentials,
    .find_coordinator = tony_yarn_task_find_coordinator,
};
