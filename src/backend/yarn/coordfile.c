/* The coordinator's address on HDFS (coordfile.h): written by each AM
 * attempt as it starts, read by executors that lost theirs. Both sides
 * make their WebHDFS handle from the AM's env (copied into every task's),
 * with the job's HDFS delegation token where the cluster is secure. */
#include "backend/yarn/coordfile.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/yarn/history_hdfs.h"
#include "backend/yarn/tokens.h"
#include "backend/yarn/webhdfs.h"
#include "backend/yarn/yarn_task.h"
#include "common/fs.h"
#include "common/strv.h"

/* Short calls: the coordinator's end waits for its write (on a thread of
 * its own, yarn.c), an executor polls. */
#define COORDFILE_CALL_MS 5000
#define COORDFILE_STALL_S 5
#define COORDFILE_MAX_S 10

/* The handle, or NULL (1 returned) when the env names no file. */
static int open_hdfs(const char *where, const char *token, tony_webhdfs **out, const char **path, tony_error *err) {
    *out = NULL;
    *path = getenv(TONY_YARN_COORDINATOR_FILE_ENV);
    if (!*path || !**path) return 1;
    const char *nns = getenv(TONY_YARN_WEBHDFS_ENV), *fs = getenv(TONY_YARN_DEFAULT_FS_ENV);
    const char *user = getenv(TONY_YARN_HDFS_USER_ENV);
    if (!nns || !*nns || !fs || !*fs || !user || !*user)
        return tony_err(err, "%s is set but %s, %s or %s is not: the coordinator's address on HDFS cannot be reached",
                        TONY_YARN_COORDINATOR_FILE_ENV, TONY_YARN_WEBHDFS_ENV, TONY_YARN_DEFAULT_FS_ENV,
                        TONY_YARN_HDFS_USER_ENV);
    *out = tony_webhdfs_new_at(nns, where, fs, where, user);
    tony_webhdfs_set_timeouts(*out, COORDFILE_CALL_MS, COORDFILE_STALL_S, COORDFILE_MAX_S);
    if (token) tony_webhdfs_use_delegation(*out, token);
    return 0;
}

int yarn_coordfile_write(const char *hdfs_token, const char *local_dir, const char *url, int am_attempt,
                         tony_error *err) {
    tony_webhdfs *w;
    const char *path;
    int rc = open_hdfs(TONY_YARN_WEBHDFS_ENV " in the AM's environment", hdfs_token, &w, &path, err);
    if (rc) return rc;
    json_t *j = json_pack("{s:s,s:i}", "url", url, "am_attempt", am_attempt);
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    char *local = tony_path_join(local_dir, TONY_YARN_COORDINATOR_FILE);
    rc = tony_write_file(local, s, strlen(s), 0600, err);
    if (rc == 0) rc = tony_webhdfs_connect(w, err);
    if (rc == 0) rc = tony_webhdfs_put(w, local, path, "600", NULL, err);
    if (rc) tony_err_wrap(err, "cannot write the coordinator's address to hdfs://%s", path);
    free(local);
    free(s);
    tony_webhdfs_free(w);
    return rc;
}

void yarn_coordfile_task_env(tony_env *env) {
    const char *path = getenv(TONY_YARN_COORDINATOR_FILE_ENV);
    if (!path || !*path) return;
    const char *names[] = {TONY_YARN_COORDINATOR_FILE_ENV, TONY_YARN_WEBHDFS_ENV, TONY_YARN_DEFAULT_FS_ENV,
                           TONY_YARN_HDFS_USER_ENV};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) tony_env_set(env, names[i], v);
    }
}

/* The job's HDFS delegation token from this container's token file, as
 * WebHDFS takes it; NULL on an insecure cluster (user.name= then). */
static char *task_hdfs_token(void) {
    const char *file = getenv("HADOOP_TOKEN_FILE_LOCATION");
    yarn_credentials *creds = NULL;
    tony_error err;
    if (!file || !*file || yarn_credentials_read_file(file, &creds, &err)) return NULL;
    const yarn_token *t = yarn_credentials_find_kind(creds, YARN_HDFS_TOKEN_KIND);
    char *s = t ? yarn_token_url_string(t) : NULL;
    yarn_credentials_free(creds);
    return s;
}

int tony_yarn_task_find_coordinator(char **url, tony_error *err) {
    *url = NULL;
    char *token = task_hdfs_token();
    tony_webhdfs *w;
    const char *path;
    int rc = open_hdfs(TONY_YARN_WEBHDFS_ENV " in the task's environment", token, &w, &path, err);
    free(token);
    if (rc) return rc;
    char cwd[4096];
    char *local = tony_path_join(getcwd(cwd, sizeof cwd) ? cwd : ".", ".tony-" TONY_YARN_COORDINATOR_FILE);
    rc = tony_webhdfs_connect(w, err);
    if (rc == 0) rc = tony_webhdfs_get(w, path, local, err);
    if (rc == 0) {
        json_error_t je;
        json_t *j = json_load_file(local, 0, &je);
        const char *u = json_string_value(json_object_get(j, "url"));
        if (u && *u) *url = tony_strdup(u);
        else rc = tony_err(err, "hdfs://%s names no coordinator: %s", path, j ? "no \"url\"" : je.text);
        json_decref(j);
    }
    unlink(local);
    free(local);
    tony_webhdfs_free(w);
    return rc;
}
