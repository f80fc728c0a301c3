/* The day-to-day verbs: submit a job and follow it, and status, kill, logs and
 * list for jobs already running or done, and history (and its web portal) for jobs of the past. Each returns the process exit code. */
#ifndef TONY_CLIENT_H
#define TONY_CLIENT_H

#include "backend/client.h" /* the CLI's exit codes (TONY_EXIT_OK, ...), the backends' too */

int tony_cmd_submit(int argc, char **argv);
/* tony_cmd_submit, calling started (when not NULL) once the job started,
 * before it is followed: what `tony notebook` says of its server. */
int tony_submit_run(int argc, char **argv, void (*started)(const tony_client_job *job, void *ctx), void *ctx);
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
