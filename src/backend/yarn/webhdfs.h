/* HDFS over WebHDFS (the NameNode's HTTP port) for staging a job: mkdirs,
 * upload (NameNode, then the DataNode it names), file status for YARN's
 * LocalResources, recursive delete, list. Paths are absolute HDFS paths;
 * tony_webhdfs_uri turns one into the hdfs:// URI containers localize. */
#ifndef TONY_WEBHDFS_H
#define TONY_WEBHDFS_H

#include <stdbool.h>

#include "backend/yarn/hadoop_conf.h"
#include "common/error.h"
#include "common/strv.h"

typedef struct tony_webhdfs tony_webhdfs;

typedef struct tony_hdfs_status {
    long long length;
    long long mtime_ms; /* modificationTime: YARN's LocalResource timestamp */
    bool is_dir;
} tony_hdfs_status;

typedef struct tony_hdfs_entry {
    char *name; /* pathSuffix: the entry's name in its directory */
    tony_hdfs_status st;
} tony_hdfs_entry;

tony_webhdfs *tony_webhdfs_new(const tony_hadoop_conf *h, const char *user);
/* Without a Hadoop config: NameNode web addresses (comma list of
 * http://host:port or host:port), where they came from (for messages, e.g.
 * "--location" or "TONY_YARN_WEBHDFS in the AM's environment"), and the
 * fs.defaultFS they serve and where that came from (NULL: not told in
 * messages). */
tony_webhdfs *tony_webhdfs_new_at(const char *http_csv, const char *from, const char *default_fs,
                                  const char *default_fs_from, const char *user);
void tony_webhdfs_free(tony_webhdfs *w);
/* Limits of each NameNode call, of a transfer that moves nothing, and of a
 * whole transfer (defaults 30 s, 120 s and none: staged files can be
 * large; the coordinator's history copies, small files it waits for at
 * its end, use a few seconds and an overall bound). */
void tony_webhdfs_set_timeouts(tony_webhdfs *w, long call_ms, long stall_s, long transfer_max_s);
/* The NameNode in use (http://host:port), fs.defaultFS, the user. */
const char *tony_webhdfs_namenode(const tony_webhdfs *w);
const char *tony_webhdfs_default_fs(const tony_webhdfs *w);
const char *tony_webhdfs_user(const tony_webhdfs *w);

/* How calls prove who they are (default: user.name=, insecure clusters):
 * SPNEGO with this process's Kerberos ticket (the client on a kerberized
 * cluster), or a delegation token in its URL-string form (the coordinator,
 * which has no ticket, only the job's tokens). */
void tony_webhdfs_use_kerberos(tony_webhdfs *w);
void tony_webhdfs_use_delegation(tony_webhdfs *w, const char *url_string);
/* GETDELEGATIONTOKEN (needs SPNEGO): an HDFS delegation token that renewer
 * (the ResourceManager's principal) may renew, with service set to the
 * NameNode's RPC address as HDFS clients look tokens up by (e.g.
 * "127.0.0.1:8020" or "ha-hdfs:<nameservice>"). *url_string: the token in
 * Hadoop's URL-safe encoding, as the RM's REST submission takes it. */
int tony_webhdfs_delegation_token(tony_webhdfs *w, const char *renewer, const char *service, char **url_string,
                                  tony_error *err);

/* RENEWDELEGATIONTOKEN (needs SPNEGO as the token's renewer): pushes the
 * token's expiry on by the NameNode's renew interval, up to its maximum
 * lifetime; *expiry_ms is the new expiry (ms since the epoch). */
int tony_webhdfs_renew_delegation_token(tony_webhdfs *w, const char *url_string, long long *expiry_ms,
                                        tony_error *err);

/* Finds a NameNode that answers (the active one with HA). Errors name
 * fs.defaultFS / dfs.namenode.http-address and where they were set. */
int tony_webhdfs_connect(tony_webhdfs *w, tony_error *err);
/* hdfs://authority/path (malloc'ed). */
char *tony_webhdfs_uri(const tony_webhdfs *w, const char *path);
/* The path of an hdfs:// URI on this cluster (hdfs:///p or
 * hdfs://<fs.defaultFS authority>/p); an error for another file system. */
int tony_webhdfs_path_of(const tony_webhdfs *w, const char *uri, char **path, tony_error *err);

int tony_webhdfs_mkdirs(tony_webhdfs *w, const char *path, const char *permission, tony_error *err);
/* Uploads a local file (overwriting) with an octal permission such as
 * "600" and returns its status after close (one more call; st NULL: not
 * asked). */
int tony_webhdfs_put(tony_webhdfs *w, const char *local, const char *path, const char *permission,
                     tony_hdfs_status *st, tony_error *err);
/* *exists = false (and 0 returned) when path does not exist. */
int tony_webhdfs_stat(tony_webhdfs *w, const char *path, tony_hdfs_status *st, bool *exists, tony_error *err);
int tony_webhdfs_delete(tony_webhdfs *w, const char *path, bool recursive, tony_error *err);
/* Names in a directory (empty for a missing one). */
int tony_webhdfs_list(tony_webhdfs *w, const char *path, tony_strv *names, tony_error *err);
/* A directory's entries with their status; *missing (may be NULL) when the
 * directory does not exist (then 0 entries and 0 returned). */
int tony_webhdfs_list_status(tony_webhdfs *w, const char *path, tony_hdfs_entry **out, size_t *n, bool *missing,
                             tony_error *err);
void tony_hdfs_entries_free(tony_hdfs_entry *e, size_t n);
/* Downloads a file to local (overwritten). */
int tony_webhdfs_get(tony_webhdfs *w, const char *path, const char *local, tony_error *err);
/* RENAME; an error when HDFS refuses (from missing, to existing). */
int tony_webhdfs_rename(tony_webhdfs *w, const char *from, const char *to, tony_error *err);

#endif
