/* The self-contained tony (common/self.h) that every container of a YARN job
 * runs, so nodes need nothing installed. As with Spark's spark.yarn.archive
 * it goes to HDFS once per build, into tony.yarn.dist-cache (default
 * /user/<user>/.tony/cache), named by the build (tony-<version>-<hash>.tar.gz),
 * and is localized with PRIVATE visibility, so each NodeManager also keeps
 * its unpacked copy across jobs. With tony.yarn.dist-cache set empty it is
 * uploaded into the job's staging dir instead, for that job only. Client
 * side (`tony submit`). */
#ifndef TONY_YARN_DIST_CACHE_H
#define TONY_YARN_DIST_CACHE_H

#include <stdbool.h>

#include "backend/yarn/webhdfs.h"
#include "conf/conf.h"
#include "conf/keys.h"

#define TONY_YARN_DIST_CACHE_KEY TONY_KEY_YARN_DIST_CACHE

typedef struct tony_yarn_dist {
    char *uri;              /* hdfs://… of the archive */
    tony_hdfs_status st;    /* its size and mtime, as YARN checks them */
    bool shared;            /* in the cache (PRIVATE), not the job's staging dir (APPLICATION) */
    bool uploaded;          /* this call put it there */
} tony_yarn_dist;

/* Finds this build's archive in the cache, or packs and uploads it (to a
 * temporary name, then renamed, so a concurrent submit or an interrupted
 * upload never leaves a partial archive under the final name). Progress goes
 * to stderr. *cluster_failed tells an HDFS failure (exit 3) from a local one. */
int tony_yarn_dist_stage(tony_webhdfs *w, const tony_conf *conf, const char *user, const char *staging_path,
                         tony_yarn_dist *out, bool *cluster_failed, tony_error *err);
void tony_yarn_dist_free(tony_yarn_dist *d);

#endif
