/* The coordinator (TonY's ApplicationMaster): one per job, a single-threaded
 * libevent loop that owns the job state machine, asks the backend for
 * containers, serves the HTTP API to executors, clients and the web UI, and
 * restarts the whole job from its checkpoints when an attempt fails. */
#ifndef TONY_AM_H
#define TONY_AM_H

/* Runs the coordinator of the job in job_dir (reads tony-final.xml and the
 * secret there). Returns the process exit code: 0 when the job SUCCEEDED. */
int tony_am_main(const char *job_dir);

#endif
