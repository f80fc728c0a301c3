/* `tony notebook`: a Jupyter server as a one-task job (role notebook),
 * reached through the coordinator's proxy with the job's read token; or,
 * with --execute, a notebook run as a job whose executed copy is kept. */
#ifndef TONY_CLIENT_NOTEBOOK_H
#define TONY_CLIENT_NOTEBOOK_H

/* Returns the process exit code (the job's, as `tony submit`'s). */
int tony_cmd_notebook(int argc, char **argv);

#endif
