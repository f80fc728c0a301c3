/* The mxnet runtime: the DMLC_* variables of MXNet's parameter-server
 * (ps-lite) mode, with the scheduler's host resolved to an IP address, as
 * ps-lite wants. Roles are scheduler, server and worker. */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "runtime/runtime.h"

static int role_instances(const tony_plan *plan, const char *name) {
    const tony_role *r = tony_plan_role(plan, name);
    return r ? r->instances : 0;
}

/* ps-lite builds "tcp://<uri>:<port>" and cannot take a bracketed IPv6
 * literal, so an IPv4 address is preferred when the host has one. */
static int resolve_ip(const char *host, char *out, size_t outlen, tony_error *err) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0)
        return tony_err(err, "cannot resolve the mxnet scheduler's host '%s' for DMLC_PS_ROOT_URI: %s", host,
                        gai_strerror(rc));
    const struct addrinfo *pick = res;
    for (const struct addrinfo *a = res; a; a = a->ai_next)
        if (a->ai_family == AF_INET) {
            pick = a;
            break;
        }
    const void *addr = pick->ai_family == AF_INET ? (const void *)&((const struct sockaddr_in *)pick->ai_addr)->sin_addr
                                                  : (const void *)&((const struct sockaddr_in6 *)pick->ai_addr)->sin6_addr;
    const char *ok = inet_ntop(pick->ai_family, addr, out, (socklen_t)outlen);
    freeaddrinfo(res);
    if (!ok) return tony_err(err, "cannot format the address of the mxnet scheduler's host '%s'", host);
    return 0;
}

static int mx_task_env(const tony_runtime_task *task, tony_env *env, tony_error *err) {
    tony_env_set(env, "DMLC_ROLE", task->role);
    tony_env_set(env, "DMLC_LOCAL", "0");
    tony_env_setf(env, "DMLC_NUM_SERVER", "%d", role_instances(task->plan, "server"));
    tony_env_setf(env, "DMLC_NUM_WORKER", "%d", role_instances(task->plan, "worker"));

    char *host = NULL;
    int port = 0;
    if (tony_cluster_spec_addr(task->cluster_spec, "scheduler", 0, &host, &port) < 0) {
        /* FCFS: the scheduler may not have registered yet. */
        if (!task->plan->gang) return 0;
        return tony_err(err, "the cluster spec has no address for scheduler:0, which every mxnet task "
                             "connects to (DMLC_PS_ROOT_URI); set tony.scheduler.instances to 1");
    }
    char ip[INET6_ADDRSTRLEN];
    int rc = resolve_ip(host, ip, sizeof ip, err);
    free(host);
    if (rc < 0) return -1;
    tony_env_set(env, "DMLC_PS_ROOT_URI", ip);
    tony_env_setf(env, "DMLC_PS_ROOT_PORT", "%d", port);
    return 0;
}

/* ps-lite has exactly one scheduler, which every server and worker
 * registers with. */
static int mx_validate(const tony_plan *plan, tony_error *err) {
    int n = role_instances(plan, "scheduler");
    if (n != 1)
        return tony_err(err,
                        "the mxnet framework needs exactly one scheduler; tony.scheduler.instances is %d: "
                        "set it to 1",
                        n);
    return 0;
}

/* Parameter-server training: workers push to and pull from servers
 * independently, so the loss of one worker does not stop the others. */
static bool mx_lockstep(const tony_plan *plan) {
    (void)plan;
    return false;
}

/* ps-lite: every node registers with the scheduler; the servers hold the model. */
static const char *const mx_elastic_needs[] = {"scheduler", "server", NULL};

const tony_runtime tony_runtime_mxnet = {
    .name = "mxnet",
    .validate = mx_validate,
    .lockstep = mx_lockstep,
    .task_env = mx_task_env,
    .elastic_needs = mx_elastic_needs,
};
