/* Picks a backend by name from one table, so that the coordinator names
 * none: each one's constructor and options stay behind its own header. Holds
 * the policy for the ops a backend may leave NULL (tony_backend_* wrappers),
 * and frees what every backend hands out alike (tony_am_place). */
#include "backend/backend.h"

#include <stdlib.h>
#include <string.h>

#include "backend/local/local.h"
#include "backend/slurm/slurm_backend.h"
#include "backend/yarn/yarn_backend.h"

/* In the order the error for an unknown name lists them. */
static const tony_backend_entry backends[] = {
    {"local", tony_backend_local_new},
    {"yarn", tony_backend_yarn_new},
    {"slurm", tony_backend_slurm_new},
};
#define NBACKENDS (sizeof backends / sizeof *backends)

const tony_backend_entry *tony_backend_table(size_t *n) {
    *n = NBACKENDS;
    return backends;
}

tony_backend *tony_backend_new(const char *name, const tony_backend_opts *o, tony_error *err) {
    for (size_t i = 0; i < NBACKENDS; i++)
        if (strcmp(backends[i].name, name) == 0) return backends[i].create(o, err);
    tony_strv names = {0};
    for (size_t i = 0; i < NBACKENDS; i++) tony_strv_push(&names, backends[i].name);
    char *list = tony_strv_join(&names, ", ");
    tony_err(err, "no backend called '%s' (there are: %s)", name, list);
    free(list);
    tony_strv_free(&names);
    return NULL;
}

const char *tony_backend_name(const tony_backend *b) { return b->ops->name; }

bool tony_backend_shares_job_dir(const tony_backend *b) { return b->ops->shares_job_dir; }

int tony_backend_check_plan(tony_backend *b, const tony_plan *plan, tony_error *err) {
    return b->ops->check_plan(b, plan, err);
}

int tony_backend_launch(tony_backend *b, const tony_launch *l, tony_error *err) { return b->ops->launch(b, l, err); }

void tony_backend_stop(tony_backend *b, const char *role, int index, int attempt) {
    b->ops->stop(b, role, index, attempt);
}

int tony_backend_active(const tony_backend *b) { return b->ops->active(b); }

void tony_backend_finish(tony_backend *b, const char *final_status, const char *diagnostics, const char *url) {
    if (b->ops->finish) b->ops->finish(b, final_status, diagnostics, url);
}

bool tony_backend_reads_logs(const tony_backend *b) { return b->ops->check_log_url && b->ops->read_log; }

int tony_backend_check_log_url(const tony_backend *b, const char *link, tony_error *err) {
    if (!tony_backend_reads_logs(b))
        return tony_err(err, "the %s backend reads no log links (its tasks' logs are files here)", b->ops->name);
    return b->ops->check_log_url(b, link, err);
}

int tony_backend_read_log(tony_backend *b, const tony_log_request *r, tony_log_cb cb, void *ctx, tony_log_read **out,
                          tony_error *err) {
    if (!tony_backend_reads_logs(b))
        return tony_err(err, "the %s backend reads no log links (its tasks' logs are files here)", b->ops->name);
    return b->ops->read_log(b, r, cb, ctx, out, err);
}

void tony_backend_cancel_log(tony_backend *b, tony_log_read *read) {
    /* a read exists only where read_log does, and cancel_log with it */
    if (read && b->ops->cancel_log) b->ops->cancel_log(b, read);
}

int tony_backend_prepare_am_command(tony_backend *b, const char *resources, tony_am_place *out, tony_error *err) {
    if (!b->ops->prepare_am_command)
        return tony_err(err, "the %s backend runs no single-node job: set tony.<role>.instances for at least one role",
                        b->ops->name);
    return b->ops->prepare_am_command(b, resources, out, err);
}

int tony_backend_am_command_argv(tony_backend *b, const tony_am_place *place, const tony_env *env, char *const *cmd,
                                 tony_strv *out) {
    return b->ops->am_command_argv ? b->ops->am_command_argv(b, place, env, cmd, out) : 0;
}

void tony_backend_am_command_ended(tony_backend *b, int wait_status) {
    if (b->ops->am_command_ended) b->ops->am_command_ended(b, wait_status);
}

long long tony_backend_newer_credentials(tony_backend *b, long long have, tony_buf *out) {
    return b->ops->task_credentials ? b->ops->task_credentials(b, have, out) : 0;
}

void tony_backend_exclude_node(tony_backend *b, const char *node) {
    if (b->ops->exclude_node) b->ops->exclude_node(b, node);
}

int tony_backend_cluster_nodes(const tony_backend *b) { return b->ops->cluster_nodes ? b->ops->cluster_nodes(b) : 1; }

void tony_backend_previous_of(const tony_backend *b, tony_backend_previous *out) {
    *out = (tony_backend_previous){0};
    if (b->ops->previous) b->ops->previous(b, out);
}

int tony_backend_adopt(tony_backend *b, const char *role, int index, int attempt, const char *container,
                       tony_error *err) {
    if (!b->ops->adopt) return tony_err(err, "this backend hands no container back");
    return b->ops->adopt(b, role, index, attempt, container, err);
}

void tony_backend_adopt_end(tony_backend *b) {
    if (b->ops->adopt_end) b->ops->adopt_end(b);
}

void tony_backend_shutdown(tony_backend *b) { b->ops->shutdown(b); }

void tony_backend_free(tony_backend *b) { b->ops->free(b); }

void tony_am_place_free(tony_am_place *p) {
    free(p->work_dir);
    free(p->log_dir);
    free(p->log_url);
    free(p->container);
    *p = (tony_am_place){0};
}
