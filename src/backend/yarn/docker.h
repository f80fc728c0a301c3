/* TonY's contract with YARN's Docker runtime (DockerLinuxContainerRuntime):
 * with tony.docker.enabled, the launch context of the coordinator's
 * container and of every task's carries the runtime's variables (names in
 * common/taskenv.h), and the command stays the localized self-contained
 * tony, so that an image needs neither a JVM nor tony. Without docker, none
 * of these variables. */
#ifndef TONY_YARN_DOCKER_H
#define TONY_YARN_DOCKER_H

#include "common/env.h"
#include "common/error.h"
#include "conf/conf.h"
#include "conf/plan.h"

/* The network when tony.docker.network is not set: the frameworks' ports
 * (TF_CONFIG, MASTER_ADDR, ...) are the node's. */
#define YARN_DOCKER_DEFAULT_NETWORK "host"

/* At submit, before anything is staged: the mount list and the network
 * parse, and with docker on every role has an image. The error names the
 * key and what to write. */
int yarn_docker_check(const tony_conf *conf, const tony_plan *plan, tony_error *err);
/* The coordinator's image: tony.docker.am.image, else
 * tony.docker.containers.image; NULL without docker or without either. */
const char *yarn_docker_am_image(const tony_conf *conf);
/* Sets the runtime's variables on env for a container of image (nothing
 * when image is NULL): the type, the image, the network and, when
 * tony.docker.containers.mount has any, the mounts in YARN's
 * SRC:DST:MODE form. Fails only on what yarn_docker_check refuses. */
int yarn_docker_env(const tony_conf *conf, const char *image, tony_env *env, tony_error *err);

#endif
