/* The client half's list of backends (client.h): picks one by name, by what
 * is configured on this machine, or by a job's record, so that client/
 * names none; and what every backend's client half shares. */
#include "backend/client.h"

#include <stdlib.h>
#include <string.h>

#include "backend/local/local_client.h"
#include "backend/slurm/slurm_client.h"
#include "backend/yarn/yarn_client.h"
#include "common/strv.h"

/* In the order configured() is asked; the last is the fallback. */
static const tony_client_backend_ops *const backends[] = {&tony_yarn_client_ops, &tony_slurm_client_ops,
                                                           &tony_local_client_ops};
#define NBACKENDS (sizeof backends / sizeof *backends)

const tony_client_backend_ops *tony_client_backend_find(const char *name) {
    for (size_t i = 0; i < NBACKENDS; i++)
        if (strcmp(backends[i]->name, name) == 0) return backends[i];
    return NULL;
}

const tony_client_backend_ops *tony_client_backend_choose(char *why, size_t n) {
    /* A refusal's reason stays the answer when the fallback gives none:
     * "HADOOP_CONF_DIR is not set" says why it is local. */
    snprintf(why, n, "nothing else is configured here");
    for (size_t i = 0; i < NBACKENDS; i++) {
        char w[512] = "";
        bool yes = backends[i]->configured(w, sizeof w);
        if (*w) snprintf(why, n, "%s", w);
        if (yes) return backends[i];
    }
    return backends[NBACKENDS - 1];
}

const char *tony_client_backend_names(void) {
    static char names[128];
    if (!names[0]) {
        tony_strv v = {0};
        for (size_t i = 0; i < NBACKENDS; i++) tony_strv_push(&v, backends[NBACKENDS - 1 - i]->name);
        char *s = tony_strv_join(&v, " or ");
        snprintf(names, sizeof names, "%s", s);
        free(s);
        tony_strv_free(&v);
    }
    return names;
}

const tony_client_backend_ops *tony_client_backend_of_job(const char *job_dir) {
    for (size_t i = 0; i + 1 < NBACKENDS; i++)
        if (backends[i]->owns_job(job_dir)) return backends[i];
    return backends[NBACKENDS - 1];
}

int tony_client_backend_check_plan(const tony_client_backend_ops *ops, const tony_conf *conf, const tony_plan *plan,
                                   char **about, tony_error *err) {
    *about = NULL;
    return ops->check_plan ? ops->check_plan(conf, plan, about, err) : 0;
}

int tony_client_backend_wait_started(tony_client_job *j, tony_error *err) {
    return j->ops->wait_started ? j->ops->wait_started(j, err) : TONY_EXIT_OK;
}

void tony_client_backend_job_finished(tony_client_job *j, const json_t *job) {
    if (j->ops->job_finished) j->ops->job_finished(j, job);
}

void tony_client_backend_print_log_links(const tony_client_backend_ops *ops, FILE *out, const json_t *job,
                                         const char *app_id, bool failed_only) {
    if (ops->print_log_links) ops->print_log_links(out, job, app_id, failed_only);
}

void tony_client_backend_cleanup(const tony_client_backend_ops *ops, const char *job_dir, bool quiet) {
    if (ops->cleanup) ops->cleanup(job_dir, quiet);
}

void tony_client_say(const tony_client_out *o, FILE *stream, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (o && o->say) {
        o->say(o->ctx, stream, fmt, ap);
    } else {
        vfprintf(stream, fmt, ap);
        fflush(stream);
    }
    va_end(ap);
}

void tony_client_job_init(tony_client_job *j, const tony_client_backend_ops *ops, const char *id, const char *job_dir) {
    j->ops = ops;
    j->id = tony_strdup(id);
    j->job_dir = tony_strdup(job_dir);
}

void tony_client_job_clear(tony_client_job *j) {
    free(j->id);
    free(j->job_dir);
    j->id = j->job_dir = NULL;
}

int tony_client_history_fs_open(tony_histloc *where, const tony_conf *conf, const char *key,
                                tony_client_remote_fs *out, tony_error *err) {
    *out = (tony_client_remote_fs){0};
    for (size_t i = 0; i < NBACKENDS; i++)
        if (backends[i]->open_history_fs) return backends[i]->open_history_fs(where, conf, key, out, err);
    char *uri = tony_histloc_uri(where, where->dirs.location);
    tony_err(err, "%s %s: this tony reads history on no cluster file system; give a local directory", key, uri);
    free(uri);
    return -1;
}

void tony_client_remote_entries_free(tony_client_remote_entry *e, size_t n) {
    for (size_t i = 0; i < n && e; i++) free(e[i].name);
    free(e);
}
