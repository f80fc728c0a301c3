/* Reading a Hadoop client configuration: the site files through conf.c's
 * Hadoop XML reader, Hadoop's ${var} substitution and default ports, HA
 * ResourceManagers (yarn.resourcemanager.ha.rm-ids) and HA NameNodes
 * (dfs.ha.namenodes.<nameservice>). */
#include "backend/yarn/hadoop_conf.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/strv.h"

#define RM_WEBAPP_PORT 8088
#define RM_WEBAPP_HTTPS_PORT 8090
#define RM_SCHEDULER_PORT 8030
#define NN_HTTP_PORT 9870
#define NN_HTTPS_PORT 9871
#define NN_RPC_PORT 8020

tony_hadoop_conf *tony_hadoop_conf_new(void) { return tony_xcalloc(1, sizeof(tony_hadoop_conf)); }

void tony_hadoop_conf_free(tony_hadoop_conf *h) {
    if (!h) return;
    for (size_t i = 0; i < h->nrms; i++) {
        free(h->rms[i].id);
        free(h->rms[i].webapp);
        free(h->rms[i].webapp_from);
        free(h->rms[i].scheduler);
        free(h->rms[i].scheduler_from);
    }
    for (size_t i = 0; i < h->nnns; i++) {
        free(h->nns[i].http);
        free(h->nns[i].http_from);
    }
    free(h->rms);
    free(h->nns);
    free(h->conf_dir);
    free(h->default_fs);
    free(h->default_fs_from);
    tony_conf_free(h->site);
    free(h);
}

/* Hadoop substitutes ${name} with another key's value; the depth bound stops
 * a key that refers to itself. Unknown names stay as written, as in Hadoop. */
static char *expand(const tony_conf *c, const char *v, int depth) {
    tony_buf b = {0};
    tony_buf_puts(&b, "");
    for (const char *p = v; *p;) {
        const char *open = strstr(p, "${");
        const char *close = open ? strchr(open + 2, '}') : NULL;
        if (!open || !close) {
            tony_buf_puts(&b, p);
            break;
        }
        tony_buf_append(&b, p, (size_t)(open - p));
        char *name = tony_sprintf("%.*s", (int)(close - open - 2), open + 2);
        const char *sub = depth < 20 ? tony_conf_get(c, name) : NULL;
        if (sub) {
            char *x = expand(c, sub, depth + 1);
            tony_buf_puts(&b, x);
            free(x);
        } else {
            tony_buf_append(&b, open, (size_t)(close - open + 1));
        }
        free(name);
        p = close + 1;
    }
    return b.data;
}

char *tony_hadoop_conf_get(const tony_hadoop_conf *h, const char *key) {
    const char *v = tony_conf_get(h->site, key);
    if (!v) return NULL;
    char *x = expand(h->site, v, 0);
    const char *t = tony_trim(x);
    char *out = *t ? tony_strdup(t) : NULL;
    free(x);
    return out;
}

char *tony_hadoop_conf_where(const tony_hadoop_conf *h, const char *key) {
    const char *src = tony_conf_get_source(h->site, key);
    return src ? tony_sprintf("%s in %s", key, src) : tony_sprintf("%s (unset, so the default)", key);
}

/* Splits "host:port" (port optional: *port = def). */
static int split_addr(const char *addr, const char *where, int def, char **host, int *port, tony_error *err) {
    const char *colon = strrchr(addr, ':');
    long long p = def;
    if (colon && (!tony_parse_ll(colon + 1, &p) || p <= 0 || p > 65535))
        return tony_err(err, "%s: '%s' is not a host:port address", where, addr);
    size_t hlen = colon ? (size_t)(colon - addr) : strlen(addr);
    if (hlen == 0) return tony_err(err, "%s: '%s' has no host name", where, addr);
    *host = tony_sprintf("%.*s", (int)hlen, addr);
    *port = (int)p;
    return 0;
}

static bool is_wildcard(const char *host) { return !host || !*host || strcmp(host, "0.0.0.0") == 0; }

static char *local_hostname(void) {
    char name[256] = "localhost";
    if (gethostname(name, sizeof name) != 0) strcpy(name, "localhost");
    name[sizeof name - 1] = '\0';
    return tony_strdup(name);
}

/* key (or key.<id> with HA) as "host:port"; unset gives host_default:port_default. */
static int rm_address(const tony_hadoop_conf *h, const char *key, const char *id, const char *rm_host, int def_port,
                      char **host, int *port, char **from, tony_error *err) {
    char *k = id ? tony_sprintf("%s.%s", key, id) : tony_strdup(key);
    char *v = tony_hadoop_conf_get(h, k);
    int rc = 0;
    if (v) {
        *from = tony_hadoop_conf_where(h, k);
        rc = split_addr(v, *from, def_port, host, port, err);
    } else {
        char *hk = id ? tony_sprintf("yarn.resourcemanager.hostname.%s", id) : tony_strdup("yarn.resourcemanager.hostname");
        char *hw = tony_hadoop_conf_where(h, hk);
        *from = tony_sprintf("%s unset, so %s and port %d", k, hw, def_port);
        *host = tony_strdup(rm_host);
        *port = def_port;
        free(hk);
        free(hw);
    }
    free(v);
    free(k);
    return rc;
}

static int load_rm(tony_hadoop_conf *h, const char *id, tony_hadoop_rm *rm, tony_error *err) {
    char *hk = id ? tony_sprintf("yarn.resourcemanager.hostname.%s", id) : tony_strdup("yarn.resourcemanager.hostname");
    char *rm_host = tony_hadoop_conf_get(h, hk);
    free(hk);
    if (!rm_host) rm_host = tony_strdup("0.0.0.0");
    char *whost = NULL, *shost = NULL;
    int wport = 0, sport = 0;
    /* yarn.http.policy HTTPS_ONLY (as YARN's own clients read it): the RM
     * serves its REST API on its https address alone, and the submission
     * that carries the job's secret goes over TLS. */
    char *policy = tony_hadoop_conf_get(h, "yarn.http.policy");
    bool https = policy && strcasecmp(policy, "HTTPS_ONLY") == 0;
    free(policy);
    int rc = rm_address(h, https ? "yarn.resourcemanager.webapp.https.address" : "yarn.resourcemanager.webapp.address",
                        id, rm_host, https ? RM_WEBAPP_HTTPS_PORT : RM_WEBAPP_PORT, &whost, &wport, &rm->webapp_from,
                        err);
    if (rc == 0)
        rc = rm_address(h, "yarn.resourcemanager.scheduler.address", id, rm_host, RM_SCHEDULER_PORT, &shost, &sport,
                        &rm->scheduler_from, err);
    if (rc == 0) {
        /* A server bound to the wildcard is reached through the RM's own
         * name; only the scheduler address travels to other machines. */
        char *host = !is_wildcard(rm_host) ? tony_strdup(rm_host)
                     : !is_wildcard(whost) ? tony_strdup(whost)
                                           : local_hostname();
        rm->id = tony_strdup(id);
        rm->webapp = tony_sprintf("%s://%s:%d", https ? "https" : "http", is_wildcard(whost) ? host : whost, wport);
        rm->scheduler = tony_sprintf("%s:%d", is_wildcard(shost) ? host : shost, sport);
        free(host);
    }
    free(rm_host);
    free(whost);
    free(shost);
    return rc;
}

static int load_rms(tony_hadoop_conf *h, tony_error *err) {
    char *ha = tony_hadoop_conf_get(h, "yarn.resourcemanager.ha.enabled");
    bool is_ha = ha && strcasecmp(ha, "true") == 0;
    free(ha);
    tony_strv ids = {0};
    if (is_ha) {
        char *v = tony_hadoop_conf_get(h, "yarn.resourcemanager.ha.rm-ids");
        tony_split_csv(v, &ids);
        free(v);
        if (ids.len == 0) {
            char *w = tony_hadoop_conf_where(h, "yarn.resourcemanager.ha.enabled");
            tony_err(err, "%s is true but yarn.resourcemanager.ha.rm-ids lists no ResourceManager ids", w);
            free(w);
            return -1;
        }
    }
    size_t n = is_ha ? ids.len : 1;
    h->rms = tony_xcalloc(n, sizeof *h->rms);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = load_rm(h, is_ha ? ids.items[i] : NULL, &h->rms[i], err);
        h->nrms = i + 1;
    }
    tony_strv_free(&ids);
    return rc;
}

static void add_nn(tony_hadoop_conf *h, char *http, char *from) {
    h->nns = tony_xrealloc(h->nns, (h->nnns + 1) * sizeof *h->nns);
    h->nns[h->nnns++] = (tony_hadoop_nn){http, from};
}

/* Which of the NameNode's web endpoints WebHDFS must use: HTTPS when
 * dfs.http.policy is HTTPS_ONLY (secure clusters often are), else HTTP. */
typedef struct nn_web {
    const char *scheme; /* "http" or "https" */
    const char *key;    /* dfs.namenode.http-address or dfs.namenode.https-address */
    int port;
} nn_web;

static nn_web web_endpoint(const tony_hadoop_conf *h) {
    char *policy = tony_hadoop_conf_get(h, "dfs.http.policy");
    bool https = policy && strcasecmp(policy, "HTTPS_ONLY") == 0;
    free(policy);
    return https ? (nn_web){"https", "dfs.namenode.https-address", NN_HTTPS_PORT}
                 : (nn_web){"http", "dfs.namenode.http-address", NN_HTTP_PORT};
}

/* dst's default_fs and NameNodes for the HDFS at fs (hdfs://authority,
 * named by from in messages), with h's keys: an HA nameservice's NameNodes
 * each at their own web address; a single NameNode at h's web address when
 * it is h's own file system (own), else on its host at the web port of the
 * scheme (a plain host:port of another cluster names nothing more). */
static int fill_nns(const tony_hadoop_conf *h, const char *fs, const char *from, bool own, tony_hadoop_conf *dst,
                    tony_error *err) {
    nn_web web = web_endpoint(h);
    if (!fs || !tony_str_starts_with(fs, "hdfs://") || !fs[7] || fs[7] == '/')
        return tony_err(err, "%s is '%s': it must name a NameNode, hdfs://host:port or hdfs://nameservice", from,
                        fs ? fs : "file:///");
    char *authority = tony_sprintf("%.*s", (int)strcspn(fs + 7, "/"), fs + 7);
    int rc = 0;
    char *ha_key = tony_sprintf("dfs.ha.namenodes.%s", authority);
    char *ha_ids = tony_hadoop_conf_get(h, ha_key);
    if (ha_ids) {
        /* A nameservice: the authority is a logical name, each NameNode has
         * its own web address. */
        dst->default_fs = tony_sprintf("hdfs://%s", authority);
        tony_strv ids = {0};
        tony_split_csv(ha_ids, &ids);
        for (size_t i = 0; rc == 0 && i < ids.len; i++) {
            char *k = tony_sprintf("%s.%s.%s", web.key, authority, ids.items[i]);
            char *v = tony_hadoop_conf_get(h, k);
            if (!v) {
                char *w = tony_hadoop_conf_where(h, ha_key);
                rc = tony_err(err, "%s names NameNode '%s' but %s is not set", w, ids.items[i], k);
                free(w);
            } else {
                add_nn(dst, tony_sprintf("%s://%s", web.scheme, v), tony_hadoop_conf_where(h, k));
            }
            free(k);
            free(v);
        }
        tony_strv_free(&ids);
    } else {
        char *host = NULL;
        int port = 0;
        rc = split_addr(authority, from, NN_RPC_PORT, &host, &port, err);
        if (rc == 0) dst->default_fs = tony_sprintf("hdfs://%s:%d", host, port);
        char *v = rc == 0 && own ? tony_hadoop_conf_get(h, web.key) : NULL;
        char *wfrom = NULL, *whost = NULL;
        int wport = web.port;
        if (rc == 0 && v) {
            wfrom = tony_hadoop_conf_where(h, web.key);
            rc = split_addr(v, wfrom, web.port, &whost, &wport, err);
        } else if (rc == 0) {
            wfrom = own ? tony_sprintf("%s unset, so the host of %s and port %d", web.key, from, web.port)
                        : tony_sprintf("the host of %s and the default %s port %d", from, web.scheme, web.port);
        }
        if (rc == 0)
            add_nn(dst, tony_sprintf("%s://%s:%d", web.scheme, whost && !is_wildcard(whost) ? whost : host, wport),
                   wfrom);
        else free(wfrom);
        free(v);
        free(whost);
        free(host);
    }
    free(ha_ids);
    free(ha_key);
    free(authority);
    return rc;
}

static int load_nns(tony_hadoop_conf *h, tony_error *err) {
    char *fs = tony_hadoop_conf_get(h, "fs.defaultFS");
    h->default_fs_from = tony_hadoop_conf_where(h, "fs.defaultFS");
    int rc = fill_nns(h, fs, h->default_fs_from, true, h, err);
    if (rc && (!fs || !tony_str_starts_with(fs, "hdfs://")))
        tony_err(err, "%s is '%s': the yarn backend stages files in HDFS; set it to the NameNode's hdfs://host:port",
                 h->default_fs_from, fs ? fs : "file:///");
    free(fs);
    return rc;
}

int tony_hadoop_conf_other_hdfs(const tony_hadoop_conf *h, const char *uri, const char *from, tony_hadoop_conf **out,
                                tony_error *err) {
    tony_hadoop_conf *o = tony_hadoop_conf_new();
    o->conf_dir = tony_strdup(h->conf_dir);
    o->default_fs_from = tony_strdup(from);
    if (fill_nns(h, uri, from, false, o, err)) {
        tony_hadoop_conf_free(o);
        return -1;
    }
    *out = o;
    return 0;
}

static bool is_hadoop_key(const char *k) {
    return tony_str_starts_with(k, "fs.") || tony_str_starts_with(k, "dfs.") || tony_str_starts_with(k, "yarn.") ||
           tony_str_starts_with(k, "hadoop.");
}

int tony_hadoop_conf_load(tony_hadoop_conf *h, const char *conf_dir, const tony_conf *job, tony_error *err) {
    h->conf_dir = tony_strdup(conf_dir);
    h->site = tony_conf_new();
    static const char *files[] = {"core-site.xml", "hdfs-site.xml", "yarn-site.xml"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char *p = tony_path_join(conf_dir, files[i]);
        int rc = 0;
        if (tony_file_exists(p)) rc = tony_conf_load_file(h->site, p, err);
        else if (strcmp(files[i], "yarn-site.xml") == 0)
            rc = tony_err(err, "%s does not exist: HADOOP_CONF_DIR must be the cluster's client configuration "
                               "directory (core-site.xml, hdfs-site.xml, yarn-site.xml)", p);
        free(p);
        if (rc) return -1;
    }
    for (size_t i = 0; job && i < tony_conf_size(job); i++) {
        const char *k = tony_conf_key_at(job, i);
        if (is_hadoop_key(k)) tony_conf_set(h->site, k, tony_conf_value_at(job, i), tony_conf_get_source(job, k));
    }
    if (load_rms(h, err)) return -1;
    return load_nns(h, err);
}
