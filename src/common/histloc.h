/* Which file system a job's history lives on. tony.history.location (and
 * .intermediate / .finished) are TonY's paths on the cluster's default file
 * system: on YARN a bare absolute path or hdfs://... is HDFS, file:///...
 * this node's (or a shared) disk; elsewhere a bare path is local. The
 * coordinator and the readers (`tony history`, `tony portal`) agree through
 * this one module. */
#ifndef TONY_HISTLOC_H
#define TONY_HISTLOC_H

#include <stdbool.h>

#include "common/error.h"
#include "common/jhist.h"

typedef enum {
    TONY_HISTLOC_LOCAL,   /* a directory on this machine */
    TONY_HISTLOC_HDFS,    /* hdfs://AUTHORITY/path, or a bare path on YARN */
    TONY_HISTLOC_WEBHDFS, /* webhdfs://HOST:HTTP_PORT/path: a NameNode's web address, no config needed */
} tony_histloc_fs;

/* The three history directories on one file system. */
typedef struct tony_histloc {
    tony_histloc_fs fs;
    char *authority;     /* the URI's authority; "" for hdfs:///p and bare paths (the default FS) */
    tony_jhist_dirs dirs; /* paths on that file system, no scheme */
} tony_histloc;

/* Resolves the keys' values as tony_jhist_dirs_resolve does (TonY's
 * "/path/to/..." placeholders mean unset; unset location is
 * <local_root>/history on this machine), then their file system.
 * bare_is_hdfs: a bare absolute path means HDFS (the yarn backend). Errors
 * name the key (location_key for the first value: the flag or key it came
 * from): an unknown scheme, a relative remote path, an hdfs URI without a
 * path, ".." in a remote path, keys on different file systems. */
int tony_histloc_resolve(const char *location, const char *intermediate, const char *finished, const char *location_key,
                         bool bare_is_hdfs, const char *local_root, tony_histloc *out, tony_error *err);
void tony_histloc_free(tony_histloc *l);
/* True when the key's value is set (not empty, not TonY's placeholder). */
bool tony_histloc_configured(const char *value);
/* "hdfs://AUTH/path" / "webhdfs://AUTH/path" / the path, for messages. malloc'ed. */
char *tony_histloc_uri(const tony_histloc *l, const char *path);

#endif
