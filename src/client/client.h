/* The day-to-day verbs: submit a job and follow it, and status, kill, logs and
 * list for jobs already running or done, and history (and its web portal) for jobs of the past. Each returns the process exit code. */
#ifndef TONY_CLIENT_H
#define TONY_CLIENT_H

#include "backend/client.h" /* the CLI's exit codes (TONY_EXIT_OK, ...), the backends' too */

int tony_cmd_submit(int argc, char **argv);
/* What a caller of tony_submit_run (`tony notebook`) adds to submit's
 * own, each optional. */
typedef struct tony_submit_hooks {
    /* Once the plan is known to fit, before anything is submitted (and for
     * --dry-run too): the caller's own check of what its tasks need;
     * tasks_run_here as the backend says (backend/client.h). Non-zero
     * refuses the job (exit 2) with err. */
    int (*check)(const tony_plan *plan, bool tasks_run_here, void *ctx, tony_error *err);
    /* Once the job started, before it is followed: what `tony notebook`
     * says of its server. */
    void (*started)(const tony_client_job *job, void *ctx);
    void *ctx;
} tony_submit_hooks;

/* tony_cmd_submit with hooks (NULL: none). */
int tony_submit_run(int argc, char **argv, const tony_submit_hooks *hooks);
int tony_cmd_status(int argc, char **argv);
int tony_cmd_kill(int argc, char **argv);
int tony_cmd_logs(int argc, char **argv);
int tony_cmd_list(int argc, char **argv);
int tony_cmd_history(int argc, char **argv);
/* `tony conf keys`: the registry of configuration keys (conf/keys.h). */
int tony_cmd_conf(int argc, char **argv);
/* Serves the history portal (web UI and JSON API) until SIGINT or SIGTERM. */
int tony_cmd_portal(int argc, char **argv);
/* Writes this tony as one self-contained archive (common/self.h). */
int tony_cmd_pack(int argc, char **argv);

#endif
