/* Job history wherever it is, for `tony history` and `tony portal`: a
 * local tree is read in place; a tree on HDFS is copied into a local cache
 * (<tony root>/history-cache/<NameNode authority>/<path>) that histdir
 * reads. A sync lists the remote directories and downloads only files whose
 * size or modification time differ from the cached copy (each copy keeps
 * the remote mtime); cached entries the remote no longer has are dropped
 * from the cache (a job moved from intermediate/ to finished/). Nothing is
 * ever written to the remote. */
#ifndef TONY_HISTCACHE_H
#define TONY_HISTCACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/client.h"
#include "common/error.h"
#include "common/histloc.h"
#include "common/jhist.h"
#include "conf/conf.h"

typedef struct tony_hist_sync_stats {
    int listed;      /* remote directories listed */
    int downloaded;  /* files fetched */
    int removed;     /* cache entries dropped */
    bool found;      /* the intermediate or the finished dir exists remotely */
} tony_hist_sync_stats;

/* <cache_root>/<authority>/<remote_path>, the authority's characters other
 * than [A-Za-z0-9._:-] replaced by '_'. remote_path must be absolute.
 * malloc'ed. */
char *tony_hist_cache_path(const char *cache_root, const char *authority, const char *remote_path);
/* Whether a remote name may become a cache entry: not empty, no '/', not
 * starting with '.'. */
bool tony_hist_cache_name_ok(const char *name);

/* Brings the cache copy of the remote tree `remote_dirs` (its intermediate
 * and finished dirs) up to date under cache_dirs. Stops at the first
 * remote failure (the cache keeps what it had). remote: a cluster's file
 * system in the binary, a directory in unit tests (list and fetch only). */
int tony_hist_cache_sync(const tony_client_remote_fs *remote, const tony_jhist_dirs *remote_dirs,
                         const tony_jhist_dirs *cache_dirs, tony_hist_sync_stats *stats, tony_error *err);

/* A history tree to read: where it is, and what to scan. */
typedef struct tony_hist_source {
    tony_histloc where;   /* the resolved location (remote ones with their authority filled in) */
    tony_jhist_dirs scan; /* local dirs for tony_hist_scan: the tree itself, or its cache copy */
    char *shown;          /* the location for people: a path, or hdfs:// / webhdfs:// URI */
    char *shown_intermediate, *shown_finished;
    tony_client_remote_fs fs; /* remote only (its backend's, client.h) */
    const char *key;      /* "--location" or "tony.history.location", for messages */
    bool unreachable;     /* the last failure was HDFS's (exit 3), not the user's input */
} tony_hist_source;

/* location_flag (--location; a bare path is a local directory) or the
 * conf's tony.history.* keys (a bare path is on HDFS when the backend is
 * yarn: tony.application.backend, else HADOOP_CONF_DIR with a
 * yarn-site.xml, as `tony submit` chooses). Remote: finds a NameNode that
 * answers (hdfs:// through HADOOP_CONF_DIR's NameNodes; webhdfs://HOST:PORT
 * directly). root: the tony root (cache under <root>/history-cache). Errors
 * name the flag or key and the NameNode's address. */
int tony_hist_source_open(tony_hist_source *s, const tony_conf *conf, const char *location_flag, const char *root,
                          tony_error *err);
bool tony_hist_source_remote(const tony_hist_source *s);
/* Syncs the cache of a remote source (nothing for a local one). A location
 * with neither tree is an error naming it. */
int tony_hist_source_refresh(tony_hist_source *s, tony_hist_sync_stats *stats, tony_error *err);
/* A path in the scanned tree as people should see it: on a remote source
 * its URI (the cache copy's path otherwise means little). malloc'ed. */
char *tony_hist_source_shown_path(const tony_hist_source *s, const char *path);
void tony_hist_source_free(tony_hist_source *s);

#endif
