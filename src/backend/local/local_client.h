/* The local backend's client half (backend/client.h): a job is a dir under
 * the tony root on this machine and a coordinator process started from
 * here; status, kill and logs read that dir and the coordinator's API. */
#ifndef TONY_BACKEND_LOCAL_CLIENT_H
#define TONY_BACKEND_LOCAL_CLIENT_H

#include "backend/client.h"

extern const tony_client_backend_ops tony_local_client_ops;

/* Creates <root>/jobs/<app_id>, stages files into it, rewrites the resource
 * keys of conf to the staged paths and writes tony-final.xml and the secret;
 * nothing stays behind on failure. Errors name the flag or key whose file
 * is missing. Also for backends whose job dir is the local one's on a file
 * system their nodes share (Slurm). */
int tony_local_stage_job(tony_conf *conf, const tony_stage_input *in, const char *root, char **job_dir,
                         char **app_id, tony_error *err);

#endif
