/* Where the Hadoop cluster is, as its own clients find it: $HADOOP_CONF_DIR's
 * core-site.xml, hdfs-site.xml and yarn-site.xml (HA ResourceManagers and
 * NameNodes included), with the job's keys (--conf, tony.xml) on top. Every
 * address remembers the key and file it came from, for error messages. */
#ifndef TONY_HADOOP_CONF_H
#define TONY_HADOOP_CONF_H

#include <stddef.h>

#include "common/error.h"
#include "conf/conf.h"

/* One ResourceManager (one HA rm-id, or the only one). */
typedef struct tony_hadoop_rm {
    char *id;             /* HA rm-id, NULL without HA */
    char *webapp;         /* http://host:port, https:// where yarn.http.policy is HTTPS_ONLY */
    char *webapp_from;    /* "yarn.resourcemanager.webapp.address in /dir/yarn-site.xml" */
    char *scheduler;      /* host:port for the AM; 0.0.0.0 replaced by the RM's host */
    char *scheduler_from;
} tony_hadoop_rm;

/* One NameNode web endpoint (several with HDFS HA). */
typedef struct tony_hadoop_nn {
    char *http;           /* http://host:port (WebHDFS) */
    char *http_from;
} tony_hadoop_nn;

typedef struct tony_hadoop_conf {
    char *conf_dir;
    tony_conf *site;       /* the merged *-site.xml keys, job keys on top */
    char *default_fs;      /* hdfs://authority, no trailing slash */
    char *default_fs_from;
    tony_hadoop_rm *rms;
    size_t nrms;
    tony_hadoop_nn *nns;
    size_t nnns;
} tony_hadoop_conf;

tony_hadoop_conf *tony_hadoop_conf_new(void);
void tony_hadoop_conf_free(tony_hadoop_conf *h);

/* Reads conf_dir's site files (a missing core-site/hdfs-site is allowed,
 * a missing yarn-site is not) and then the fs.*, dfs.*, yarn.* and hadoop.*
 * keys of job (may be NULL), which win. Errors name the file and key. */
int tony_hadoop_conf_load(tony_hadoop_conf *h, const char *conf_dir, const tony_conf *job, tony_error *err);

/* Another HDFS than fs.defaultFS (TonY's tony.other.namenodes: uri is
 * hdfs://host:port or hdfs://nameservice; from names where it came from):
 * *out has its default_fs and NameNodes (HA ones from h's keys; a plain
 * host:port's web endpoint on that host at the default port), no RMs and no
 * site keys. */
int tony_hadoop_conf_other_hdfs(const tony_hadoop_conf *h, const char *uri, const char *from, tony_hadoop_conf **out,
                                tony_error *err);

/* A site value with ${key} references expanded (Hadoop's variable
 * substitution); NULL if unset. malloc'ed. */
char *tony_hadoop_conf_get(const tony_hadoop_conf *h, const char *key);
/* "KEY in FILE" (or "KEY (default)" when unset), for messages. malloc'ed. */
char *tony_hadoop_conf_where(const tony_hadoop_conf *h, const char *key);

#endif
