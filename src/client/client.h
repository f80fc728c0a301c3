/* The day-to-day verbs: submit a job and follow it, and status, kill, logs and
 * list for jobs already running or done, and history (and its web portal) for jobs of the past. Each returns the process exit code. */
#ifndef TONY_CLIENT_H
#define TONY_CLIENT_H

int tony_cmd_submit(int argc, char **argv);
int tony_cmd_status(int argc, char **argv);
int tony_cmd_kill(int argc, char **argv);
int tony_cmd_logs(int argc, char **argv);
int tony_cmd_list(int argc, char **argv);
int tony_cmd_history(int argc, char **argv);
/* Serves the history portal (web UI and JSON API) until SIGINT or SIGTERM. */
int tony_cmd_portal(int argc, char **argv);
/* Writes this tony as one self-contained archive (common/self.h). */
int tony_cmd_pack(int argc, char **argv);

/* Exit codes of the CLI. */
enum { TONY_EXIT_OK = 0, TONY_EXIT_JOB_FAILED = 1, TONY_EXIT_USAGE = 2, TONY_EXIT_UNAVAILABLE = 3 };

#endif
