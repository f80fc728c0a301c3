/* The variables YARN's Docker runtime reads from a container's launch
 * context, built from TonY's keys (tony.docker.*), and their checks at
 * submit. What the NodeManager then does with them (LCE, the images it
 * allows, its mount allow-lists) is the cluster's; see docs/yarn.md. */
#include "backend/yarn/docker.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/strv.h"
#include "common/taskenv.h"
#include "conf/dockermount.h"
#include "conf/keys.h"

#define NETWORK_KEY TONY_KEY_DOCKER_NETWORK

static bool docker_enabled(const tony_conf *conf) {
    bool on = false;
    /* The plan already refused a value that is not a boolean. */
    if (tony_conf_get_bool(conf, TONY_KEY_DOCKER_ENABLED, false, &on, NULL)) return false;
    return on;
}

static const char *nonblank(const char *s) {
    return s && *s ? s : NULL;
}

/* tony.docker.network, or the default: a Docker network's name (YARN then
 * checks it against yarn.nodemanager.runtime.linux.docker.allowed-container-networks). */
static int network(const tony_conf *conf, const char **out, tony_error *err) {
    const char *n = nonblank(tony_conf_get(conf, NETWORK_KEY));
    if (!n) n = YARN_DOCKER_DEFAULT_NETWORK;
    for (const char *s = n; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
            return tony_err(err, "%s='%s' is not a Docker network name (letters, digits, '_', '.', '-'); leave it "
                                 "unset for the host network", NETWORK_KEY, n);
    *out = n;
    return 0;
}

int yarn_docker_check(const tony_conf *conf, const tony_plan *plan, tony_error *err) {
    if (!docker_enabled(conf)) return 0;
    tony_docker_mounts m;
    if (tony_docker_mounts_parse(tony_conf_get(conf, TONY_DOCKER_MOUNT_KEY), &m, err)) return -1;
    tony_docker_mounts_free(&m);
    const char *net;
    if (network(conf, &net, err)) return -1;
    for (size_t i = 0; i < plan->nroles; i++)
        if (!plan->roles[i].docker_image)
            return tony_err(err, "tony.docker.enabled is true but role '%s' has no image: set tony.docker.%s.image "
                                 "or tony.docker.containers.image (or tony.docker.enabled=false)",
                            plan->roles[i].name, plan->roles[i].name);
    return 0;
}

const char *yarn_docker_am_image(const tony_conf *conf) {
    if (!docker_enabled(conf)) return NULL;
    const char *img = nonblank(tony_conf_get(conf, TONY_KEY_DOCKER_AM_IMAGE));
    return img ? img : nonblank(tony_conf_get(conf, TONY_KEY_DOCKER_CONTAINERS_IMAGE));
}

int yarn_docker_env(const tony_conf *conf, const char *image, tony_env *env, tony_error *err) {
    if (!image) return 0;
    const char *net;
    if (network(conf, &net, err)) return -1;
    tony_docker_mounts m;
    if (tony_docker_mounts_parse(tony_conf_get(conf, TONY_DOCKER_MOUNT_KEY), &m, err)) return -1;
    tony_env_set(env, TASKENV_DOCKER_RUNTIME, "docker");
    tony_env_set(env, TASKENV_DOCKER_IMAGE, image);
    tony_env_set(env, TASKENV_DOCKER_NETWORK, net);
    char *mounts = tony_docker_mounts_format(&m);
    if (mounts) tony_env_set(env, TASKENV_DOCKER_MOUNTS, mounts);
    free(mounts);
    tony_docker_mounts_free(&m);
    return 0;
}
