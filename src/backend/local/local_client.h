/* The local backend's client half (backend/client.h): a job is a dir under
 * the tony root on this machine and a coordinator process started from
 * here; status, kill and logs read that dir and the coordinator's API. */
#ifndef TONY_BACKEND_LOCAL_CLIENT_H
#define TONY_BACKEND_LOCAL_CLIENT_H

#include "backend/client.h"

extern const tony_client_backend_ops tony_local_client_ops;

#endif
