/* Job directory paths and the small files in it. */
#include "common/jobdir.h"

#include <errno.h>
#include <jansson.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/amapi.h"
#include "common/fs.h"
#include "common/http.h"
#include "common/proc.h"
#include "common/readtoken.h"
#include "common/strv.h"

char *tony_jobs_root(const char *root_conf) {
    if (root_conf && *root_conf) return tony_abspath(root_conf);
    const char *home = getenv("TONY_HOME");
    if (home && *home) return tony_abspath(home);
    home = getenv("HOME");
    if (!home || !*home) {
        struct passwd *pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : "/tmp";
    }
    return tony_path_join(home, ".tony");
}

char *tony_jobdir_am_dir(const char *job_dir) { return tony_sprintf("%s/attempts/0/am", job_dir); }

json_t *tony_jobdir_fetch_job(const char *base_url, const char *read_token) {
    char *u = tony_sprintf("%s" AM_API_JOB, base_url);
    tony_http_response r;
    json_t *j = NULL;
    if (tony_http_read(u, read_token, 3000, &r, NULL) == 0) {
        j = r.status == 200 ? json_loads(r.body, 0, NULL) : NULL;
        tony_http_response_free(&r);
    }
    free(u);
    return j;
}

void tony_jobdir_post(const char *base_url, const char *job_dir, const char *path) {
    char *secret = NULL;
    if (tony_jobdir_secret(job_dir, &secret, NULL)) return;
    char *u = tony_sprintf("%s%s", base_url, path);
    tony_http_response r;
    if (tony_http_call("POST", u, secret, "{}", 3000, &r, NULL) == 0) tony_http_response_free(&r);
    free(u);
    free(secret);
}

json_t *tony_jobdir_read_json(const char *job_dir, const char *name) {
    char *p = tony_path_join(job_dir, name);
    json_t *j = json_load_file(p, 0, NULL);
    free(p);
    return j;
}

int tony_jobdir_write_json(const char *job_dir, const char *name, const json_t *j, tony_error *err) {
    char *text = json_dumps(j, JSON_INDENT(2));
    char *p = tony_path_join(job_dir, name);
    int rc = tony_write_file(p, text, strlen(text), 0600, err);
    free(p);
    free(text);
    return rc;
}

json_t *tony_jobdir_load_state(const char *job_dir, bool *live) {
    char *url = NULL;
    *live = false;
    if (tony_jobdir_am_url(job_dir, &url, NULL, NULL) == 0 && tony_jobdir_am_running(job_dir, NULL)) {
        char *token = NULL;
        tony_jobdir_read_token(job_dir, &token, NULL);
        json_t *j = tony_jobdir_fetch_job(url, token);
        free(token);
        free(url);
        if (j) {
            *live = true;
            return j;
        }
    } else {
        free(url);
    }
    return tony_jobdir_read_json(job_dir, TONY_JOBDIR_STATUS);
}

char *tony_jobdir_task_dir(const char *job_dir, int attempt, const char *role, int index) {
    return tony_sprintf("%s/attempts/%d/%s-%d", job_dir, attempt, role, index);
}

char *tony_jobdir_stacks_dir(const char *job_dir, int attempt) {
    /* no role dir clashes: theirs are <role>-<index> */
    return tony_sprintf("%s/attempts/%d/stacks", job_dir, attempt);
}

char *tony_jobdir_stacks_file(const char *job_dir, int attempt, const char *role, int index) {
    return tony_sprintf("%s/attempts/%d/stacks/%s-%d.txt", job_dir, attempt, role, index);
}

char *tony_jobdir_stacks_log_name(int attempt, const char *role, int index) {
    return tony_sprintf("tony-stacks-%d-%s-%d.txt", attempt, role, index);
}

/* The user name of uid, or its number. */
static void user_name(uid_t uid, char *out, size_t n) {
    struct passwd *pw = getpwuid(uid);
    if (pw) snprintf(out, n, "%s", pw->pw_name);
    else snprintf(out, n, "uid %u", (unsigned)uid);
}

/* A job dir this user may not enter (another user's: 0700), or one in a
 * jobs dir it may not enter: said as such, with whose it is, rather than
 * as a job that does not exist. 0 when dir is open to us or absent. */
static int check_access(const char *id, const char *dir, tony_error *err) {
    struct stat st;
    if (access(dir, R_OK | X_OK) == 0) return 0;
    int e = errno;
    if (e != EACCES && e != EPERM) return 0; /* absent: said by the caller */
    /* the job dir's owner where it can be seen, else the owner of the
     * nearest dir above it that can */
    char *at = tony_strdup(dir);
    int rc = stat(at, &st);
    while (rc != 0 && strrchr(at, '/') && strrchr(at, '/') != at) {
        *strrchr(at, '/') = '\0';
        rc = stat(at, &st);
    }
    char owner[64] = "another user";
    if (rc == 0) user_name(st.st_uid, owner, sizeof owner);
    char *parent = tony_strdup(dir);
    if (strrchr(parent, '/') && strrchr(parent, '/') != parent) *strrchr(parent, '/') = '\0';
    tony_err(err, "permission denied: job %s in %s belongs to %s (only its owner may look at it or kill it)", id,
             parent, owner);
    free(parent);
    free(at);
    return -1;
}

int tony_jobdir_find(const char *root_conf, const char *id_or_path, char **job_dir, tony_error *err) {
    if (strchr(id_or_path, '/')) {
        char *abs = tony_abspath(id_or_path);
        if (check_access(tony_basename(abs), abs, err)) {
            free(abs);
            return -1;
        }
        char *conf = tony_path_join(id_or_path, TONY_JOBDIR_CONF);
        bool ok = tony_file_exists(conf);
        free(conf);
        if (!ok) {
            free(abs);
            return tony_err(err, "%s is not a tony job directory (no %s in it)", id_or_path, TONY_JOBDIR_CONF);
        }
        if (tony_fs_check_own_dir(abs, "the job directory", err)) {
            free(abs);
            return -1;
        }
        *job_dir = abs;
        return 0;
    }
    char *root = tony_jobs_root(root_conf);
    char *dir = tony_sprintf("%s/jobs/%s", root, id_or_path);
    if (check_access(id_or_path, dir, err)) {
        free(root);
        free(dir);
        return -1;
    }
    if (!tony_is_dir(dir)) {
        tony_err(err, "no job '%s' under %s/jobs (see `tony list`; set TONY_HOME or tony.local.root if the job used another root)",
                 id_or_path, root);
        free(root);
        free(dir);
        return -1;
    }
    /* What is in them steers what status shows and what kill signals:
     * only dirs of ours that nobody else may write. */
    char *jobs = tony_path_join(root, "jobs");
    int rc = tony_fs_check_own_dir(jobs, "the jobs directory", err);
    if (rc == 0) rc = tony_fs_check_own_dir(dir, "the job directory", err);
    free(jobs);
    free(root);
    if (rc) {
        free(dir);
        return -1;
    }
    *job_dir = dir;
    return 0;
}

int tony_jobdir_am_url(const char *job_dir, char **url, int *pid, tony_error *err) {
    char *path = tony_path_join(job_dir, TONY_JOBDIR_AM_INFO);
    json_error_t jerr;
    json_t *j = json_load_file(path, 0, &jerr);
    if (!j) {
        tony_err(err, "the coordinator of %s has not published its address yet (%s: %s)", job_dir, path, jerr.text);
        free(path);
        return -1;
    }
    free(path);
    const char *u = json_string_value(json_object_get(j, "url"));
    int rc = 0;
    if (!u) rc = tony_err(err, "%s/%s has no url", job_dir, TONY_JOBDIR_AM_INFO);
    else {
        *url = tony_strdup(u);
        if (pid) *pid = (int)json_integer_value(json_object_get(j, "pid"));
    }
    json_decref(j);
    return rc;
}

json_t *tony_jobdir_am_info_self(const char *url) {
    char boot[40];
    tony_proc_boot_id(boot);
    return json_pack("{s:s,s:i,s:I,s:s}", "url", url, "pid", (int)getpid(), "start",
                     (json_int_t)tony_proc_start_ticks(getpid()), "boot_id", boot);
}

/* am.json's process: pid, start (-1: not said) and boot id. */
static bool am_process(const char *job_dir, int *pid, long long *start, char boot[40]) {
    json_t *j = tony_jobdir_read_json(job_dir, TONY_JOBDIR_AM_INFO);
    *pid = 0;
    *start = -1;
    boot[0] = '\0';
    if (!j) return false;
    *pid = (int)json_integer_value(json_object_get(j, "pid"));
    json_t *st = json_object_get(j, "start");
    if (json_is_integer(st) && json_integer_value(st) >= 0) *start = json_integer_value(st);
    const char *b = json_string_value(json_object_get(j, "boot_id"));
    snprintf(boot, 40, "%s", b ? b : "");
    json_decref(j);
    return *pid > 0;
}

bool tony_jobdir_am_running(const char *job_dir, int *pid) {
    long long start;
    char boot[40];
    int p;
    bool known = am_process(job_dir, &p, &start, boot);
    if (pid) *pid = p;
    if (!known) return false;
    /* The job's coordinator works in its job dir (local_client.c starts it
     * there): a process elsewhere that am.json names is not it, whatever
     * its start time (an am.json written by someone who could swap the job
     * dir names any process they like). */
    if (!tony_proc_cwd_is(p, job_dir)) return false;
    /* am.json of a coordinator before start times were recorded */
    if (start < 0) return tony_proc_alive(p);
    return tony_proc_same(p, start, boot);
}

int tony_jobdir_signal_am(const char *job_dir, int sig) {
    long long start;
    char boot[40];
    int pid;
    /* Only the job's coordinator, by its start time and its job dir link;
     * a process that took its pid since has another start time. */
    if (!am_process(job_dir, &pid, &start, boot) || !tony_proc_cwd_is(pid, job_dir)) {
        errno = ESRCH;
        return -1;
    }
    if (start < 0) return tony_proc_alive(pid) ? kill(pid, sig) : (errno = ESRCH, -1);
    return tony_proc_signal_same(pid, start, boot, sig);
}

int tony_jobdir_read_token(const char *job_dir, char **token, tony_error *err) {
    char *secret = NULL;
    *token = NULL;
    if (tony_jobdir_secret(job_dir, &secret, err)) return -1;
    *token = tony_read_token(secret);
    free(secret);
    return 0;
}

char *tony_jobdir_page_url(const char *job_dir, const char *base_url) {
    char *token = NULL;
    if (tony_jobdir_read_token(job_dir, &token, NULL)) return tony_sprintf("%s/", base_url);
    char *u = tony_sprintf("%s/?" AM_API_TOKEN_PARAM "=%s", base_url, token);
    free(token);
    return u;
}

int tony_jobdir_secret(const char *job_dir, char **secret, tony_error *err) {
    char *path = tony_path_join(job_dir, TONY_JOBDIR_SECRET);
    char *s = NULL;
    int rc = tony_read_file(path, &s, NULL, err);
    free(path);
    if (rc) return rc;
    tony_trim(s);
    *secret = s;
    return 0;
}
