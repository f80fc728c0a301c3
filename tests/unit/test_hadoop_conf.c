/* Unit tests of the YARN client's configuration reading (hadoop_conf: site
 * files written by each test, defaults, 0.0.0.0, ${var}, HA RMs and
 * NameNodes, --conf on top, errors naming file and key) and of the
 * pre-staging cluster check, fed with JSON the test cluster's RM really
 * returned (data/yarn/, trimmed of fields the check does not read). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "backend/yarn/cluster_check.h"
#include "backend/yarn/hadoop_conf.h"
#include "backend/yarn/kerberos.h"
#include "backend/yarn/rest.h"
#include "common/fs.h"
#include "common/strv.h"
#include "conf/conf.h"
#include "conf/plan.h"
#include "runtime/runtime.h"

#define assert_contains(haystack, needle)                                                              \
    do {                                                                                               \
        const char *h_ = (haystack), *n_ = (needle);                                                   \
        if (!h_ || !strstr(h_, n_)) fail_msg("expected \"%s\" to contain \"%s\"", h_ ? h_ : "(null)", n_); \
    } while (0)

typedef struct fixture {
    char *dir;
} fixture;

static int setup(void **state) {
    char tmpl[] = "/tmp/tony-test-hconf-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    fixture *f = calloc(1, sizeof *f);
    f->dir = strdup(d);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    tony_rm_rf(f->dir, NULL);
    free(f->dir);
    free(f);
    return 0;
}

/* Writes DIR/name with the given key/value pairs (NULL-terminated). */
static void write_site(const char *dir, const char *name, ...) {
    tony_buf b = {0};
    tony_buf_puts(&b, "<?xml version=\"1.0\"?>\n<configuration>\n");
    va_list ap;
    va_start(ap, name);
    for (const char *k; (k = va_arg(ap, const char *));) {
        const char *v = va_arg(ap, const char *);
        tony_buf_printf(&b, "  <property><name>%s</name><value>%s</value></property>\n", k, v);
    }
    va_end(ap);
    tony_buf_puts(&b, "</configuration>\n");
    char *p = tony_path_join(dir, name);
    tony_error err;
    assert_int_equal(tony_write_file(p, b.data, b.len, 0644, &err), 0);
    free(p);
    tony_buf_free(&b);
}

static tony_hadoop_conf *load_ok(const char *dir, const tony_conf *job) {
    tony_hadoop_conf *h = tony_hadoop_conf_new();
    tony_error err = {{0}};
    if (tony_hadoop_conf_load(h, dir, job, &err)) fail_msg("load failed: %s", err.msg);
    return h;
}

static void load_fails(const char *dir, const char *want1, const char *want2) {
    tony_hadoop_conf *h = tony_hadoop_conf_new();
    tony_error err = {{0}};
    assert_int_equal(tony_hadoop_conf_load(h, dir, NULL, &err), -1);
    assert_contains(err.msg, want1);
    if (want2) assert_contains(err.msg, want2);
    tony_hadoop_conf_free(h);
}

static void test_defaults(void **state) {
    fixture *f = *state;
    write_site(f->dir, "core-site.xml", "fs.defaultFS", "hdfs://nn.example", NULL);
    write_site(f->dir, "yarn-site.xml", "yarn.resourcemanager.hostname", "rm.example", NULL);
    tony_hadoop_conf *h = load_ok(f->dir, NULL);
    assert_int_equal(h->nrms, 1);
    assert_null(h->rms[0].id);
    assert_string_equal(h->rms[0].webapp, "http://rm.example:8088");
    assert_string_equal(h->rms[0].scheduler, "rm.example:8030");
    assert_contains(h->rms[0].webapp_from, "yarn.resourcemanager.webapp.address unset");
    assert_contains(h->rms[0].webapp_from, "yarn-site.xml");
    assert_string_equal(h->default_fs, "hdfs://nn.example:8020");
    assert_int_equal(h->nnns, 1);
    assert_string_equal(h->nns[0].http, "http://nn.example:9870");
    assert_contains(h->nns[0].http_from, "dfs.namenode.http-address unset");
    tony_hadoop_conf_free(h);
}

/* yarn.http.policy HTTPS_ONLY: the RM's REST API (and the secret the
 * submission carries) over its https address, per RM with HA. */
static void test_rm_https_only(void **state) {
    fixture *f = *state;
    write_site(f->dir, "core-site.xml", "fs.defaultFS", "hdfs://nn.example", NULL);
    write_site(f->dir, "yarn-site.xml", "yarn.resourcemanager.hostname", "rm.example", "yarn.http.policy", "HTTPS_ONLY",
               "yarn.resourcemanager.webapp.address", "rm.example:8088", NULL);
    tony_hadoop_conf *h = load_ok(f->dir, NULL);
    assert_string_equal(h->rms[0].webapp, "https://rm.example:8090");
    assert_contains(h->rms[0].webapp_from, "yarn.resourcemanager.webapp.https.address unset");
    tony_hadoop_conf_free(h);
    write_site(f->dir, "yarn-site.xml", "yarn.http.policy", "HTTPS_ONLY", "yarn.resourcemanager.ha.enabled", "true",
               "yarn.resourcemanager.ha.rm-ids", "rm1,rm2", "yarn.resourcemanager.hostname.rm1", "a.example",
               "yarn.resourcemanager.hostname.rm2", "b.example", "yarn.resourcemanager.webapp.https.address.rm2",
               "b.example:9443", NULL);
    h = load_ok(f->dir, NULL);
    assert_string_equal(h->rms[0].webapp, "https://a.example:8090");
    assert_string_equal(h->rms[1].webapp, "https://b.example:9443");
    tony_hadoop_conf_free(h);
    /* HTTP_AND_HTTPS serves both: YARN's clients stay on http, as tony */
    write_site(f->dir, "yarn-site.xml", "yarn.resourcemanager.hostname", "rm.example", "yarn.http.policy",
               "HTTP_AND_HTTPS", NULL);
    h = load_ok(f->dir, NULL);
    assert_string_equal(h->rms[0].webapp, "http://rm.example:8088");
    tony_hadoop_conf_free(h);
}

static void test_wildcard_and_substitution(void **state) {
    fixture *f = *state;
    write_site(f->dir, "core-site.xml", "fs.defaultFS", "hdfs://nnhost:9000/", NULL);
    write_site(f->dir, "hdfs-site.xml", "dfs.namenode.http-address", "0.0.0.0:50070", NULL);
    write_site(f->dir, "yarn-site.xml", "yarn.resourcemanager.hostname", "rmhost", "yarn.resourcemanager.webapp.address",
               "${yarn.resourcemanager.hostname}:8188", "yarn.resourcemanager.scheduler.address", "0.0.0.0:8031", NULL);
    tony_hadoop_conf *h = load_ok(f->dir, NULL);
    assert_string_equal(h->rms[0].webapp, "http://rmhost:8188");
    assert_string_equal(h->rms[0].scheduler, "rmhost:8031");
    assert_contains(h->rms[0].scheduler_from, "yarn.resourcemanager.scheduler.address in ");
    assert_string_equal(h->default_fs, "hdfs://nnhost:9000");
    assert_string_equal(h->nns[0].http, "http://nnhost:50070");
    char *v = tony_hadoop_conf_get(h, "yarn.resourcemanager.webapp.address");
    assert_string_equal(v, "rmhost:8188");
    free(v);
    tony_hadoop_conf_free(h);

    /* No hostname: a wildcard scheduler takes the webapp's host. */
    write_site(f->dir, "yarn-site.xml", "yarn.resourcemanager.webapp.address", "rm9:8088",
               "yarn.resourcemanager.scheduler.address", "0.0.0.0:8030", NULL);
    h = load_ok(f->dir, NULL);
    assert_string_equal(h->rms[0].scheduler, "rm9:8030");
    tony_hadoop_conf_free(h);
}

static void test_rm_ha(void **state) {
    fixture *f = *state;
    write_site(f->dir, "core-site.xml", "fs.defaultFS", "hdfs://nn:8020", NULL);
    write_site(f->dir, "yarn-site.xml", "yarn.resourcemanager.ha.enabled", "true", "yarn.resourcemanager.ha.rm-ids",
               "rm1, rm2", "yarn.resourcemanager.hostname.rm1", "a.example", "yarn.resourcemanager.scheduler.address.rm1",
               "a.example:7030", "yarn.resourcemanager.webapp.address.rm2", "b.example:9999",
               /* the non-HA keys are ignored once HA is on */
               "yarn.resourcemanager.webapp.address", "ignored:1", NULL);
    tony_hadoop_conf *h = load_ok(f->dir, NULL);
    assert_int_equal(h->nrms, 2);
    assert_string_equal(h->rms[0].id, "rm1");
    assert_string_equal(h->rms[0].webapp, "http://a.example:8088");
    assert_string_equal(h->rms[0].scheduler, "a.example:7030");
    assert_string_equal(h->rms[1].id, "rm2");
    assert_string_equal(h->rms[1].webapp, "http://b.example:9999");
    assert_contains(h->rms[1].webapp_from, "yarn.resourcemanager.webapp.address.rm2 in ");
    assert_string_equal(h->rms[1].scheduler, "b.example:8030");

    /* The REST client gets both, in rm-id order, without duplicates. */
    tony_yarn_rest *r = tony_yarn_rest_new("u");
    tony_yarn_rest_add_conf(r, h);
    tony_yarn_rest_add_conf(r, h);
    assert_string_equal(tony_yarn_rest_url(r), "http://a.example:8088");
    tony_yarn_rest_free(r);
    tony_hadoop_conf_free(h);

    write_site(f->dir, "yarn-site.xml", "yarn.resourcemanager.ha.enabled", "true", NULL);
    load_fails(f->dir, "yarn.resourcemanager.ha.rm-ids", "yarn.resourcemanager.ha.enabled in ");
}

static void test_nn_ha(void **state) {
    fixture *f = *state;
    write_site(f->dir, "core-site.xml", "fs.defaultFS", "hdfs://ns1", NULL);
    write_site(f->dir, "hdfs-site.xml", "dfs.ha.namenodes.ns1", "nn1,nn2", "dfs.namenode.http-address.ns1.nn1",
               "h1:9870", "dfs.namenode.http-address.ns1.nn2", "h2:9870", NULL);
    write_site(f->dir, "yarn-site.xml", "yarn.resourcemanager.hostname", "rm", NULL);
    tony_hadoop_conf *h = load_ok(f->dir, NULL);
    assert_string_equal(h->default_fs, "hdfs://ns1");
    assert_int_equal(h->nnns, 2);
    assert_string_equal(h->nns[0].http, "http://h1:9870");
    assert_string_equal(h->nns[1].http, "http://h2:9870");
    tony_hadoop_conf_free(h);
    write_site(f->dir, "hdfs-site.xml", "dfs.ha.namenodes.ns1", "nn1,nn2", "dfs.namenode.http-address.ns1.nn1",
               "h1:9870", NULL);
    load_fails(f->dir, "dfs.namenode.http-address.ns1.nn2", "'nn2'");
}

/* Secure clusters often serve WebHDFS on HTTPS only; TonY's
 * tony.other.namenodes name other file systems to get tokens for. */
static void test_https_only_and_other_hdfs(void **state) {
    fixture *f = *state;
    write_site(f->dir, "core-site.xml", "fs.defaultFS", "hdfs://nn.example:8020", NULL);
    write_site(f->dir, "hdfs-site.xml", "dfs.http.policy", "HTTPS_ONLY", "dfs.namenode.https-address",
               "nn.example:50470", "dfs.ha.namenodes.ns2", "a,b", "dfs.namenode.https-address.ns2.a", "a.example:9871",
               "dfs.namenode.https-address.ns2.b", "b.example:9871", NULL);
    write_site(f->dir, "yarn-site.xml", "yarn.resourcemanager.hostname", "rm.example", NULL);
    tony_hadoop_conf *h = load_ok(f->dir, NULL);
    assert_string_equal(h->nns[0].http, "https://nn.example:50470");
    assert_contains(h->nns[0].http_from, "dfs.namenode.https-address");

    tony_hadoop_conf *o = NULL;
    tony_error err;
    assert_int_equal(tony_hadoop_conf_other_hdfs(h, "hdfs://ns2/data", "tony.other.namenodes", &o, &err), 0);
    assert_string_equal(o->default_fs, "hdfs://ns2");
    assert_int_equal(o->nnns, 2);
    assert_string_equal(o->nns[0].http, "https://a.example:9871");
    assert_string_equal(o->nns[1].http, "https://b.example:9871");
    char *service = NULL;
    assert_int_equal(tony_yarn_hdfs_token_service(o, &service, &err), 0);
    assert_string_equal(service, "ha-hdfs:ns2");
    free(service);
    tony_hadoop_conf_free(o);

    /* a plain NameNode of another cluster: its web port on its host */
    assert_int_equal(tony_hadoop_conf_other_hdfs(h, "hdfs://127.0.0.1:9000", "tony.other.namenodes", &o, &err), 0);
    assert_string_equal(o->default_fs, "hdfs://127.0.0.1:9000");
    assert_int_equal(o->nnns, 1);
    assert_string_equal(o->nns[0].http, "https://127.0.0.1:9871");
    assert_int_equal(tony_yarn_hdfs_token_service(o, &service, &err), 0);
    assert_string_equal(service, "127.0.0.1:9000");
    free(service);
    tony_hadoop_conf_free(o);

    assert_int_equal(tony_hadoop_conf_other_hdfs(h, "s3a://bucket/x", "tony.other.namenodes", &o, &err), -1);
    assert_contains(err.msg, "tony.other.namenodes");
    tony_hadoop_conf_free(h);
}

static void test_job_keys_win(void **state) {
    fixture *f = *state;
    write_site(f->dir, "core-site.xml", "fs.defaultFS", "hdfs://nn:8020", NULL);
    write_site(f->dir, "yarn-site.xml", "yarn.resourcemanager.webapp.address", "site:8088", NULL);
    tony_conf *job = tony_conf_new();
    tony_conf_set_cli(job, "yarn.resourcemanager.webapp.address", "cli:7777");
    tony_conf_set(job, "tony.worker.instances", "2", "tony.xml"); /* not a Hadoop key: stays out */
    tony_hadoop_conf *h = load_ok(f->dir, job);
    assert_string_equal(h->rms[0].webapp, "http://cli:7777");
    assert_null(tony_conf_get(h->site, "tony.worker.instances"));
    char *where = tony_hadoop_conf_where(h, "yarn.resourcemanager.webapp.address");
    assert_contains(where, "yarn.resourcemanager.webapp.address in --conf");
    free(where);
    tony_hadoop_conf_free(h);
    tony_conf_free(job);
}

static void test_errors(void **state) {
    fixture *f = *state;
    load_fails(f->dir, "yarn-site.xml does not exist", "HADOOP_CONF_DIR");
    write_site(f->dir, "yarn-site.xml", "yarn.resourcemanager.hostname", "rm", NULL);
    load_fails(f->dir, "fs.defaultFS (unset", "file:///");
    write_site(f->dir, "core-site.xml", "fs.defaultFS", "file:///", NULL);
    load_fails(f->dir, "fs.defaultFS in ", "core-site.xml is 'file:///'");
    write_site(f->dir, "core-site.xml", "fs.defaultFS", "hdfs://nn:http", NULL);
    load_fails(f->dir, "fs.defaultFS in ", "'nn:http' is not a host:port");
    write_site(f->dir, "core-site.xml", "fs.defaultFS", "hdfs://nn:8020", NULL);
    write_site(f->dir, "yarn-site.xml", "yarn.resourcemanager.webapp.address", "rm:99999", NULL);
    load_fails(f->dir, "yarn.resourcemanager.webapp.address in ", "yarn-site.xml: 'rm:99999'");
    write_site(f->dir, "yarn-site.xml", "yarn.resourcemanager.webapp.address", "rm:1", NULL);
    write_site(f->dir, "hdfs-site.xml", "dfs.namenode.http-address", ":9870", NULL);
    load_fails(f->dir, "dfs.namenode.http-address in ", "has no host name");
}

/* ---- cluster check, on the test cluster's real REST answers */

typedef struct cluster_json {
    json_t *scheduler, *labels, *max;
} cluster_json;

static json_t *load_json(const char *path) {
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j) fail_msg("%s: %s", path, je.text);
    return j;
}

static cluster_json cluster(void) {
    return (cluster_json){load_json("data/yarn/scheduler.json"), load_json("data/yarn/node-labels.json"),
                          load_json("data/yarn/max-capability.json")};
}

static void cluster_free(cluster_json *c) {
    json_decref(c->scheduler);
    json_decref(c->labels);
    json_decref(c->max);
}

/* Plans the given --conf pairs (NULL-terminated) and checks them. */
static int check(cluster_json *c, tony_error *err, long long *am_mb, ...) {
    tony_conf *conf = tony_conf_new();
    tony_conf_load_defaults(conf);
    tony_conf_set(conf, "tony.containers.command", "true", "test");
    va_list ap;
    va_start(ap, am_mb);
    for (const char *k; (k = va_arg(ap, const char *));) tony_conf_set_cli(conf, k, va_arg(ap, const char *));
    va_end(ap);
    tony_plan plan = {0};
    if (tony_runtime_plan(conf, &plan, err)) fail_msg("plan: %s", err->msg);
    tony_yarn_cluster_info info = {c->scheduler, c->labels, c->max};
    long long mb = 0;
    int vc = 0;
    int rc = tony_yarn_check_plan(&plan, conf, &info, &mb, &vc, err);
    if (am_mb) *am_mb = mb;
    tony_plan_free(&plan);
    tony_conf_free(conf);
    return rc;
}

static void test_check_queues(void **state) {
    (void)state;
    cluster_json c = cluster();
    tony_error err = {{0}};
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "2", NULL), 0); /* default queue */
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "2", "tony.yarn.queue", "ml", NULL), 0);
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "2", "tony.yarn.queue", "root.ml", NULL), 0);
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "2", "tony.yarn.queue", "nope", NULL), -1);
    assert_contains(err.msg, "tony.yarn.queue is 'nope' in --conf");
    assert_contains(err.msg, "leaf queues: default, ml");
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "2", "tony.yarn.queue", "root", NULL), -1);
    assert_contains(err.msg, "parent queue");
    cluster_free(&c);
}

static void test_check_resources(void **state) {
    (void)state;
    cluster_json c = cluster();
    tony_error err = {{0}};
    long long am_mb = 0;
    assert_int_equal(check(&c, &err, &am_mb, "tony.worker.instances", "1", "tony.worker.memory", "4g",
                           "tony.worker.vcores", "8", "tony.worker.gpus", "4", NULL), 0);
    assert_int_equal(am_mb, 2048);
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "1", "tony.worker.memory", "5g", NULL), -1);
    assert_contains(err.msg, "tony.worker.memory: role worker asks 5120 MB");
    assert_contains(err.msg, "(4096 MB)");
    assert_int_equal(check(&c, &err, NULL, "tony.ps.instances", "1", "tony.worker.instances", "1", "tony.ps.vcores", "9",
                           NULL), -1);
    assert_contains(err.msg, "tony.ps.vcores: role ps asks 9 vcores");
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "1", "tony.worker.gpus", "5", NULL), -1);
    assert_contains(err.msg, "tony.worker.gpus: role worker asks 5 GPUs per container");
    assert_contains(err.msg, "(4)");
    /* The AM is truncated to the maximum, as TonY does. */
    assert_int_equal(check(&c, &err, &am_mb, "tony.worker.instances", "1", "tony.am.memory", "8g", NULL), 0);
    assert_int_equal(am_mb, 4096);
    cluster_free(&c);
}

/* Drops yarn.io/gpu from every resourceInformation list under v: how a
 * cluster without the GPU resource type answers. */
static void drop_gpu(json_t *v) {
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) drop_gpu(x);
    } else if (json_is_array(v)) {
        for (size_t i = json_array_size(v); i-- > 0;) {
            json_t *x = json_array_get(v, i);
            const char *n = json_string_value(json_object_get(x, "name"));
            if (n && strcmp(n, TONY_YARN_GPU) == 0) json_array_remove(v, i);
            else drop_gpu(x);
        }
    }
}

static void test_check_no_gpu_type(void **state) {
    (void)state;
    cluster_json c = cluster();
    drop_gpu(c.scheduler);
    drop_gpu(c.max);
    tony_error err = {{0}};
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "2", NULL), 0);
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "2", "tony.worker.gpus", "1", NULL), -1);
    assert_contains(err.msg, "tony.worker.gpus: role worker asks 1 GPUs but this cluster has no yarn.io/gpu");
    cluster_free(&c);
}

static void test_check_labels(void **state) {
    (void)state;
    cluster_json c = cluster();
    tony_error err = {{0}};
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "1", "tony.worker.node-label", "gpu", NULL), 0);
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "1", "tony.worker.node-label", "tpu", NULL), -1);
    assert_contains(err.msg, "tony.worker.node-label: role worker asks for node label 'tpu'");
    assert_contains(err.msg, "its labels: gpu");
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "1", "tony.application.node-label", "tpu", NULL), -1);
    assert_contains(err.msg, "tony.application.node-label: the application asks for node label 'tpu'");
    /* A queue that may not use the label. */
    json_t *queues = json_object_get(json_object_get(json_object_get(json_object_get(c.scheduler, "scheduler"),
                                                                     "schedulerInfo"), "queues"), "queue");
    for (size_t i = 0; i < json_array_size(queues); i++)
        json_object_set_new(json_array_get(queues, i), "nodeLabels", json_array());
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "1", "tony.worker.node-label", "gpu", NULL), -1);
    assert_contains(err.msg, "queue 'default' (tony.yarn.queue) may not use it");
    cluster_free(&c);
}

/* Hadoop 3.3's Capacity Scheduler names its queues by leaf name only (no
 * queuePath, which 3.4 adds), and its node-label list has no partitionInfo;
 * its RM takes a submission to "root.ml" as to "ml". The check finds a queue
 * by its name or its path either way, the path built from the parents'
 * names where the RM gives none. */
static void test_check_queues_hadoop33(void **state) {
    (void)state;
    cluster_json c = {load_json("data/yarn/scheduler-3.3.json"), load_json("data/yarn/node-labels-3.3.json"),
                      load_json("data/yarn/max-capability.json")};
    tony_error err = {{0}};
    char *text = json_dumps(c.scheduler, 0);
    assert_null(strstr(text, "queuePath")); /* what this test is about */
    free(text);
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "2", NULL), 0);
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "2", "tony.yarn.queue", "ml", NULL), 0);
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "2", "tony.yarn.queue", "root.ml", NULL), 0);
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "2", "tony.yarn.queue", "root.nope", NULL), -1);
    assert_contains(err.msg, "leaf queues: default, ml");
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "2", "tony.yarn.queue", "root", NULL), -1);
    assert_contains(err.msg, "parent queue");
    /* the queue's label access and maximum allocation are read there too */
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "1", "tony.yarn.queue", "root.ml",
                           "tony.worker.node-label", "gpu", "tony.worker.gpus", "4", NULL), 0);
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "1", "tony.worker.node-label", "tpu", NULL), -1);
    assert_contains(err.msg, "its labels: gpu");
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "1", "tony.yarn.queue", "root.ml",
                           "tony.worker.memory", "5g", NULL), -1);
    assert_contains(err.msg, "queue 'root.ml''s maximum allocation allows (4096 MB)");
    cluster_free(&c);
}

/* A nested queue without queuePath (3.3) is found by its full path; the
 * Fair Scheduler's names are full paths already. */
static void test_check_nested_queue_paths(void **state) {
    (void)state;
    json_t *leaf = json_pack("{s:s, s:s}", "queueName", "b", "state", "RUNNING");
    json_t *cs = json_pack("{s:{s:{s:s, s:s, s:{s:[{s:s, s:{s:o}}]}}}}", "scheduler", "schedulerInfo", "type",
                           "capacityScheduler", "queueName", "root", "queues", "queue", "queueName", "a", "queues",
                           "queue", leaf);
    cluster_json c = {cs, NULL, load_json("data/yarn/max-capability.json")};
    tony_error err = {{0}};
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "1", "tony.yarn.queue", "root.a.b", NULL), 0);
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "1", "tony.yarn.queue", "a.b", NULL), 0);
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "1", "tony.yarn.queue", "b", NULL), 0);
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "1", "tony.yarn.queue", "root.b", NULL), -1);
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "1", "tony.yarn.queue", "root.a", NULL), -1);
    assert_contains(err.msg, "parent queue");
    cluster_free(&c);
    json_t *fair = json_pack("{s:{s:{s:s, s:{s:s, s:{s:[{s:s}]}}}}}", "scheduler", "schedulerInfo", "type",
                             "fairScheduler", "rootQueue", "queueName", "root", "childQueues", "queue", "queueName",
                             "root.ml");
    c = (cluster_json){fair, NULL, load_json("data/yarn/max-capability.json")};
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "1", "tony.yarn.queue", "ml", NULL), 0);
    assert_int_equal(check(&c, &err, NULL, "tony.worker.instances", "1", "tony.yarn.queue", "root.ml", NULL), 0);
    cluster_free(&c);
}

/* The application's node label goes on the AM's ask too: a REST submission
 * without am-container-node-label-expression gives the AM's ask "", which
 * Hadoop 3.3's RM keeps (the AM lands off the label) and 3.4's replaces with
 * the application's label. */
static void test_submission_label_on_the_am_too(void **state) {
    (void)state;
    json_t *ctx = json_object();
    tony_yarn_context_set_label(ctx, "gpu");
    assert_string_equal(json_string_value(json_object_get(ctx, "app-node-label-expression")), "gpu");
    assert_string_equal(json_string_value(json_object_get(ctx, "am-container-node-label-expression")), "gpu");
    json_decref(ctx);
    ctx = json_object();
    tony_yarn_context_set_label(ctx, "");
    tony_yarn_context_set_label(ctx, NULL);
    assert_int_equal(json_object_size(ctx), 0);
    json_decref(ctx);
}

/* tony speaks Hadoop 3; a 2.x RM is refused before anything is staged. */
static void test_hadoop_versions(void **state) {
    (void)state;
    tony_error err;
    assert_int_equal(tony_yarn_check_hadoop_version("3.4.1", "http://rm:8088", &err), 0);
    assert_int_equal(tony_yarn_check_hadoop_version("3.3.6", "http://rm:8088", &err), 0);
    assert_int_equal(tony_yarn_check_hadoop_version("3.1.1.7.1.7.1000-141", "http://rm:8088", &err), 0); /* a vendor's */
    assert_int_equal(tony_yarn_check_hadoop_version(NULL, "http://rm:8088", &err), 0);
    assert_int_equal(tony_yarn_check_hadoop_version("unknown", "http://rm:8088", &err), 0);
    assert_int_equal(tony_yarn_check_hadoop_version("2.10.1", "http://rm:8088", &err), -1);
    assert_contains(err.msg, "2.10.1");
    assert_contains(err.msg, "http://rm:8088");
    assert_contains(err.msg, "Hadoop 3");
}

static void test_json_list_and_remote_exception(void **state) {
    (void)state;
    json_t *one = json_pack("{s:s}", "name", "gpu");
    json_t *l = tony_yarn_json_list(one);
    assert_int_equal(json_array_size(l), 1);
    json_decref(l);
    l = tony_yarn_json_list(NULL);
    assert_int_equal(json_array_size(l), 0);
    json_decref(l);
    json_decref(one);
    char *m = tony_yarn_remote_exception(
        "{\"RemoteException\":{\"exception\":\"BadRequestException\",\"message\":\"Invalid queue\",\"javaClassName\":\"x\"}}");
    assert_string_equal(m, "BadRequestException: Invalid queue");
    free(m);
    assert_null(tony_yarn_remote_exception("<html>not json</html>"));
    char *b = tony_base64_encode("\xfb\xff", 2, true);
    assert_string_equal(b, "-_8");
    free(b);
    b = tony_base64_encode("\xfb\xff", 2, false);
    assert_string_equal(b, "+/8=");
    free(b);
    b = tony_base64_encode("abc", 3, true);
    assert_string_equal(b, "YWJj");
    free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rm_https_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wildcard_and_substitution, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rm_ha, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nn_ha, setup, teardown),
        cmocka_unit_test_setup_teardown(test_https_only_and_other_hdfs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_keys_win, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test(test_check_queues),
        cmocka_unit_test(test_check_resources),
        cmocka_unit_test(test_check_no_gpu_type),
        cmocka_unit_test(test_check_labels),
        cmocka_unit_test(test_check_queues_hadoop33),
        cmocka_unit_test(test_check_nested_queue_paths),
        cmocka_unit_test(test_submission_label_on_the_am_too),
        cmocka_unit_test(test_hadoop_versions),
        cmocka_unit_test(test_json_list_and_remote_exception),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
