/* TonY's container mount syntax (tony.docker.containers.mount):
 * SRC:DST[:ro|rw], comma separated, both paths absolute, read-write unless
 * ":ro". Parsed here, purely (no file is looked at: on YARN the source is on
 * the node, not where tony submit runs), for every backend that mounts. */
#ifndef TONY_DOCKERMOUNT_H
#define TONY_DOCKERMOUNT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "conf/keys.h"

/* The key whose value tony_docker_mounts_parse reads; errors name it. */
#define TONY_DOCKER_MOUNT_KEY TONY_KEY_DOCKER_CONTAINERS_MOUNT

typedef struct tony_docker_mount {
    char *src;     /* absolute path on the node */
    char *dst;     /* absolute path in the container */
    bool readonly; /* ":ro"; ":rw" or no mode: read-write */
} tony_docker_mount;

typedef struct tony_docker_mounts {
    tony_docker_mount *items;
    size_t len;
} tony_docker_mounts;

/* Parses spec (NULL or blank: no mounts; empty entries are skipped, as
 * TonY's lists allow "a,,b"). An entry with other than 2 or 3 fields, an
 * empty or relative path, a mode other than ro/rw, or a control character
 * is an error naming the entry and TONY_DOCKER_MOUNT_KEY; out is then
 * empty. */
int tony_docker_mounts_parse(const char *spec, tony_docker_mounts *out, tony_error *err);
/* The canonical form: "SRC:DST:ro|rw" entries joined by ",", the mode
 * always written (YARN's Docker runtime asks for it); NULL when there are
 * none. Caller frees. */
char *tony_docker_mounts_format(const tony_docker_mounts *m);
void tony_docker_mounts_free(tony_docker_mounts *m);

#endif
