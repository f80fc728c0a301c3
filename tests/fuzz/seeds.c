/* Writes the fuzzers' seed corpora (tests/fuzz/corpus/<harness>/) with
 * tony's own writers where it has them (tony-final.xml, token storage, IPC
 * frames, .jhist, zip and tar.gz), so the seeds are what tony meets in a
 * real job, generated here rather than taken from anywhere; the replies of
 * Hadoop's web services come from tests/unit/data where that holds real
 * ones, else are written here as Hadoop 3.3/3.4 sends them. Run by
 * `make fuzz-seeds`: build/fuzz/fuzz/fuzz_seeds tests/fuzz/corpus. */
#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/yarn/amrm_pb.h"
#include "backend/yarn/ids_pb.h"
#include "backend/yarn/ipc.h"
#include "backend/yarn/tokens.h"
#include "common/amapi.h"
#include "common/archive.h"
#include "common/fs.h"
#include "common/jhist.h"
#include "common/jobdir.h"
#include "conf/conf.h"
#include "hadoop_rpc.pb-c.h"

static const char *root;

static void die(const tony_error *err) {
    fprintf(stderr, "fuzz_seeds: %s\n", err->msg);
    exit(1);
}

static char *seed_path(const char *harness, const char *name) {
    char *dir = tony_path_join(root, harness);
    tony_error err;
    if (tony_mkdir_p(dir, 0755, &err)) die(&err);
    char *p = tony_path_join(dir, name);
    free(dir);
    return p;
}

static void seed(const char *harness, const char *name, const void *data, size_t len) {
    char *p = seed_path(harness, name);
    tony_error err;
    if (tony_write_file(p, data, len, 0644, &err)) die(&err);
    free(p);
}

static void seed_str(const char *harness, const char *name, const char *s) { seed(harness, name, s, strlen(s)); }

static void conf_seeds(void) {
    tony_conf *c = tony_conf_new();
    tony_conf_set(c, "tony.worker.instances", "2", "seed");
    tony_conf_set(c, "tony.worker.memory", "2g", "seed");
    tony_conf_set(c, "tony.containers.resources", "data.zip#archive,model::m.bin", "seed");
    tony_conf_set(c, "tony.application.name", "<&\"quoted\">", "seed");
    char *p = seed_path("conf", "final.xml");
    tony_error err;
    if (tony_conf_write_file(c, p, &err)) die(&err);
    free(p);
    tony_conf_free(c);
    seed_str("conf", "final-and-description.xml",
             "<?xml version=\"1.0\"?>\n<configuration>\n  <!-- a comment -->\n  <property>\n"
             "    <name>tony.ps.instances</name>\n    <value>1</value>\n    <final>true</final>\n"
             "    <description>parameter servers</description>\n  </property>\n  <property>\n"
             "    <name>tony.execution.envs</name><value>A=1,B=2</value>\n  </property>\n</configuration>\n");
    seed_str("conf", "entities.xml",
             "<?xml version='1.0' encoding='UTF-8'?><configuration><property><name>k</name>"
             "<value><![CDATA[a<b]]> &amp; &#233;</value></property></configuration>");
    seed_str("conf", "empty.xml", "<configuration/>");
}

static void resource_seeds(void) {
    seed_str("resource", "one", "hdfs:///data/train.zip#archive");
    seed_str("resource", "list", "/tmp/a.txt, model::weights.bin ,data/#archive,,s3://b/k::k");
    seed_str("resource", "named", "file:///x/y/z.tar.gz::z#archive");
}

static void api_seeds(void) {
    seed_str("api", "job", "GET\n/v1/job?since=1\n\n");
    seed_str("api", "events", "GET\n/v1/events?since=0\n\n");
    seed_str("api", "register", "POST\n/v1/tasks/worker/0/register\nContent-Type: application/json\n\n"
                                "{\"attempt\":0,\"host\":\"h1\",\"port\":2222,\"tb_port\":6006,\"log_dir\":\"/tmp/l\","
                                "\"container\":\"c1\",\"log_url\":\"http://nm:8042/node/containerlogs/c1/u\"}");
    seed_str("api", "adopt", "POST\n/v1/tasks/worker/1/register\n\n{\"attempt\":2,\"host\":\"h1\",\"port\":2222,"
                             "\"container\":\"c1\",\"container_attempt\":0,\"adopt\":4321}");
    seed_str("api", "heartbeat", "POST\n/v1/tasks/ps/0/heartbeat\n\n{\"attempt\":0,\"tensorboard\":true}");
    seed_str("api", "started", "POST\n/v1/tasks/worker/1/started\n\n{\"attempt\":0,\"pid\":1234}");
    seed_str("api", "metrics", "POST\n/v1/tasks/worker/1/metrics\n\n{\"attempt\":0,\"t_ms\":1000,\"rss_bytes\":1048576,"
                               "\"cpu_percent\":50.5,\"gpus\":[{\"util\":10,\"mem_bytes\":100}]}");
    seed_str("api", "finished", "POST\n/v1/tasks/worker/0/finished\n\n{\"attempt\":0,\"timed_out\":true}");
    seed_str("api", "log", "GET\n/v1/tasks/worker/0/log?stream=stdout&offset=3&attempt=0\n\n");
    seed_str("api", "metrics-get", "GET\n/v1/tasks/worker/0/metrics\n\n");
    seed_str("api", "kill-bad-auth",
             "POST\n/v1/job/kill\nX-Tony-Auth: v1 ts=1 nonce=00000000000000000000000000000000 mac=00\n\n");
    seed_str("api", "kill", "POST\n/v1/job/kill\n\n");
    seed_str("api", "tensorboard", "GET\n/tensorboard/data/plugins?x=1\n\n");
    seed_str("api", "ui", "GET\n/ui/app.js\n\n");
    seed_str("api", "read-bad-token", "GET\n/v1/job\nX-Tony-Token: nope\n\n");
    seed_str("api", "read-link", "GET\n/ui/app.js?a=1&token=fuzz-read-token\nX-Tony-Token: \n\n");
    seed_str("api", "read-cookie", "GET\n/v1/events\nX-Tony-Token: \nCookie: a=1; tony_token_4242=fuzz-read-token\n\n");
}

static void frame_seed(const char *name, uint32_t call_id, ProtobufCMessage *payload) {
    Hadoop__Common__RpcResponseHeaderProto h = HADOOP__COMMON__RPC_RESPONSE_HEADER_PROTO__INIT;
    h.callid = call_id;
    h.status = HADOOP__COMMON__RPC_RESPONSE_HEADER_PROTO__RPC_STATUS_PROTO__SUCCESS;
    tony_buf b = {0};
    yarn_ipc_frame(&b, (const ProtobufCMessage *[]){&h.base, payload, NULL});
    seed("ipc", name, b.data, b.len);
    tony_buf_free(&b);
}

static void ipc_seeds(void) {
    yarn_container_id id;
    tony_error err;
    if (yarn_container_id_parse("container_e17_1700000000000_0001_01_000002", &id, &err)) die(&err);
    yarn_container_id_pb idstore;
    yarn_resource res = {.memory_mb = 2048, .vcores = 2, .gpus = 1};
    yarn_resource_pb resstore, maxstore;
    Hadoop__Yarn__NodeIdProto node = HADOOP__YARN__NODE_ID_PROTO__INIT;
    node.host = "nm1";
    node.has_port = 1;
    node.port = 45454;
    Hadoop__Yarn__ContainerProto c = HADOOP__YARN__CONTAINER_PROTO__INIT;
    c.id = yarn_container_id_to_pb(&id, &idstore);
    c.nodeid = &node;
    c.node_http_address = "nm1:8042";
    c.resource = yarn_resource_to_pb(&res, &resstore);
    Hadoop__Yarn__ContainerProto *cs[] = {&c};
    Hadoop__Yarn__AllocateResponseProto a = HADOOP__YARN__ALLOCATE_RESPONSE_PROTO__INIT;
    a.n_allocated_containers = 1;
    a.allocated_containers = cs;
    a.has_num_cluster_nodes = 1;
    a.num_cluster_nodes = 3;
    frame_seed("allocate", 5, &a.base);
    Hadoop__Yarn__RegisterApplicationMasterResponseProto r = HADOOP__YARN__REGISTER_APPLICATION_MASTER_RESPONSE_PROTO__INIT;
    yarn_resource max = {.memory_mb = 8192, .vcores = 8, .gpus = 2};
    r.maximumcapability = yarn_resource_to_pb(&max, &maxstore);
    r.queue = "default";
    frame_seed("register", 1, &r.base);
    Hadoop__Common__RpcSaslProto s = HADOOP__COMMON__RPC_SASL_PROTO__INIT;
    s.state = HADOOP__COMMON__RPC_SASL_PROTO__SASL_STATE__CHALLENGE;
    const char *ch = "realm=\"default\",nonce=\"abc123\",qop=\"auth\",charset=utf-8,algorithm=md5-sess";
    s.has_token = 1;
    s.token.data = (uint8_t *)ch;
    s.token.len = strlen(ch);
    frame_seed("sasl-challenge", (uint32_t)YARN_IPC_SASL_CALL_ID, &s.base);
    /* An error reply: the header alone. */
    Hadoop__Common__RpcResponseHeaderProto h = HADOOP__COMMON__RPC_RESPONSE_HEADER_PROTO__INIT;
    h.callid = 7;
    h.status = HADOOP__COMMON__RPC_RESPONSE_HEADER_PROTO__RPC_STATUS_PROTO__ERROR;
    h.exceptionclassname = "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException";
    h.errormsg = "Application doesn't exist in cache\n\tat ...";
    tony_buf b = {0};
    yarn_ipc_frame(&b, (const ProtobufCMessage *[]){&h.base, NULL});
    seed("ipc", "error", b.data, b.len);
    tony_buf_free(&b);
}

static void token_seeds(void) {
    yarn_credentials *c = yarn_credentials_new();
    yarn_token *t = yarn_token_new("\x00\x01ident", 7, "pw-bytes", 8, YARN_AMRM_TOKEN_KIND, "10.0.0.1:8030");
    yarn_credentials_add_token(c, "amrm", t);
    yarn_token *h = yarn_token_new("hdfs-id", 7, "hdfs-pw", 7, YARN_HDFS_TOKEN_KIND, "ha-hdfs:nn");
    yarn_credentials_add_token(c, "hdfs", h);
    yarn_credentials_add_secret(c, "tony.secret", "s3cret", 6);
    tony_buf b = {0};
    yarn_credentials_write(c, &b);
    seed("tokens", "writable", b.data, b.len);
    tony_buf_free(&b);
    /* Format 1: "HDTS" 1, then one varint-delimited CredentialsProto. */
    Hadoop__Common__TokenProto tp = HADOOP__COMMON__TOKEN_PROTO__INIT;
    tp.identifier.data = t->identifier;
    tp.identifier.len = t->identifier_len;
    tp.password.data = t->password;
    tp.password.len = t->password_len;
    tp.kind = t->kind;
    tp.service = t->service;
    Hadoop__Common__CredentialsKVProto kv = HADOOP__COMMON__CREDENTIALS_KVPROTO__INIT, sk = kv;
    kv.alias = "amrm";
    kv.token = &tp;
    sk.alias = "tony.secret";
    sk.has_secret = 1;
    sk.secret.data = (uint8_t *)"s3cret";
    sk.secret.len = 6;
    Hadoop__Common__CredentialsKVProto *toks[] = {&kv}, *secs[] = {&sk};
    Hadoop__Common__CredentialsProto cp = HADOOP__COMMON__CREDENTIALS_PROTO__INIT;
    cp.n_tokens = 1;
    cp.tokens = toks;
    cp.n_secrets = 1;
    cp.secrets = secs;
    size_t n = hadoop__common__credentials_proto__get_packed_size(&cp);
    unsigned char *buf = tony_xmalloc(n + 16);
    memcpy(buf, "HDTS\x01", 5);
    size_t pos = 5;
    for (size_t v = n; ; v >>= 7) {
        buf[pos++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        if (v <= 0x7f) break;
    }
    hadoop__common__credentials_proto__pack(&cp, buf + pos);
    seed("tokens", "protobuf", buf, pos + n);
    free(buf);
    yarn_token_free(t);
    yarn_token_free(h);
    yarn_credentials_free(c);
}

static void jhist_seeds(const char *scratch) {
    char *p = tony_path_join(scratch, "seed.jhist");
    tony_error err;
    tony_jhist_writer *w = tony_jhist_writer_new(p, &err);
    if (!w) die(&err);
    tony_jhist_metric ms[] = {{"MAX_MEMORY_BYTES", 1e8}, {"AVG_CPU_PERCENT", 42.5}};
    if (tony_jhist_application_inited(w, 1, "application_1_0001", 2, "nm1", NULL, &err) ||
        tony_jhist_task_started(w, 2, "worker", 0, "nm2", "container_1_0001_01_000002", &err) ||
        tony_jhist_task_finished(w, 3, "worker", 0, "SUCCEEDED", ms, 2, "", &err) ||
        tony_jhist_application_finished(w, 4, "application_1_0001", 1, 0, &err))
        die(&err);
    tony_jhist_writer_free(w);
    char *data;
    size_t len;
    if (tony_read_file(p, &data, &len, &err)) die(&err);
    seed("jhist", "job.jhist", data, len);
    /* A writer still at work: its last block cut short. */
    seed("jhist", "cut.jhist.inprogress", data, len - len / 5);
    free(data);
    free(p);
}

static void archive_seeds(const char *scratch) {
    tony_error err;
    char *dir = tony_path_join(scratch, "src");
    char *sub = tony_path_join(dir, "pkg");
    if (tony_mkdir_p(sub, 0755, &err)) die(&err);
    char *f1 = tony_path_join(dir, "train.py"), *f2 = tony_path_join(sub, "__init__.py");
    if (tony_write_file(f1, "print('hi')\n", 12, 0755, &err) || tony_write_file(f2, "", 0, 0644, &err)) die(&err);
    char *zip = tony_path_join(scratch, "src.zip");
    if (tony_archive_zip_dir(dir, zip, &err)) die(&err);
    char *data;
    size_t len;
    if (tony_read_file(zip, &data, &len, &err)) die(&err);
    seed("archive", "src.zip", data, len);
    free(data);
    tony_archive_member m[] = {{f1, "train.py"}, {f2, "pkg/__init__.py"}};
    char *tgz = tony_path_join(scratch, "src.tar.gz");
    if (tony_archive_write_tgz(tgz, m, 2, &err)) die(&err);
    if (tony_read_file(tgz, &data, &len, &err)) die(&err);
    seed("archive", "src.tar.gz", data, len);
    free(data);
    /* A plain tar with what extraction must keep inside: a symlink out,
     * a file through it, a ".." entry, a hard link. */
    char *tar = seed_path("archive", "links.tar");
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    archive_write_open_filename(a, tar);
    struct {
        const char *path;
        int type;
        const char *link;
        const char *body;
    } es[] = {{"venv/", AE_IFDIR, NULL, NULL},
              {"venv/bin/python", AE_IFLNK, "/usr/bin/python3", NULL},
              {"out", AE_IFLNK, "..", NULL},
              {"out/escaped", AE_IFREG, NULL, "x"},
              {"../up", AE_IFREG, NULL, "y"},
              {"data.txt", AE_IFREG, NULL, "z"},
              {"hard", AE_IFREG, "data.txt", NULL}};
    for (size_t i = 0; i < sizeof es / sizeof *es; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, es[i].path);
        archive_entry_set_perm(e, 0644);
        if (strcmp(es[i].path, "hard") == 0) {
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_hardlink(e, es[i].link);
        } else {
            archive_entry_set_filetype(e, (unsigned)es[i].type);
            if (es[i].type == AE_IFLNK) archive_entry_set_symlink(e, es[i].link);
        }
        size_t n = es[i].body ? strlen(es[i].body) : 0;
        archive_entry_set_size(e, (la_int64_t)n);
        archive_write_header(a, e);
        if (n) archive_write_data(a, es[i].body, n);
        archive_entry_free(e);
    }
    archive_write_free(a);
    free(tar);
    free(tgz);
    free(zip);
    free(f1);
    free(f2);
    free(sub);
    free(dir);
}

/* A file of tests/unit/data (real replies captured from Hadoop 3.3 and
 * 3.4), read from the repository root `make fuzz-seeds` runs in. */
static char *unit_data(const char *name) {
    char *p = tony_path_join("tests/unit/data", name);
    char *data;
    tony_error err;
    if (tony_read_file(p, &data, NULL, &err)) die(&err);
    free(p);
    return data;
}

/* fuzz_http.h's input: replies (status, body) joined by its separator. */
static void http_seed(const char *harness, const char *name, const char *const *replies) {
    tony_buf b = {0};
    tony_buf_puts(&b, "");
    for (size_t i = 0; replies[i]; i += 2)
        tony_buf_printf(&b, "%s%s\n%s", i ? "\n===\n" : "", replies[i], replies[i + 1]);
    seed(harness, name, b.data, b.len);
    tony_buf_free(&b);
}

#define APP_ID "application_1700000000000_0001"
#define AM_CONTAINER "container_1700000000000_0001_01_000001"

static void rmrest_seeds(void) {
    char *max = unit_data("yarn/max-capability.json"), *sched = unit_data("yarn/scheduler.json"),
         *sched33 = unit_data("yarn/scheduler-3.3.json"), *labels = unit_data("yarn/node-labels.json"),
         *labels33 = unit_data("yarn/node-labels-3.3.json");
    char *newapp = tony_sprintf("{\"application-id\":\"" APP_ID "\",\"maximum-resource-capability\":%s}", max);
    const char *info = "{\"clusterInfo\":{\"id\":1700000000000,\"startedOn\":1700000000000,\"state\":\"STARTED\","
                       "\"haState\":\"ACTIVE\",\"rmStateStoreName\":\"org.apache.hadoop.yarn.server.resourcemanager."
                       "recovery.NullRMStateStore\",\"resourceManagerVersion\":\"3.4.1\",\"hadoopVersion\":\"3.4.1\"}}";
    /* "@@": the stand-in's address (fuzz_http.h), so that the coordinator's /v1/job is asked of it */
    const char *app = "{\"app\":{\"id\":\"" APP_ID "\",\"user\":\"fuzz\",\"name\":\"tony\",\"queue\":\"default\","
                      "\"state\":\"RUNNING\",\"finalStatus\":\"UNDEFINED\",\"progress\":0.0,\"trackingUI\":\"ApplicationMaster\","
                      "\"trackingUrl\":\"http://rm:8088/proxy/" APP_ID "/\",\"diagnostics\":\"\",\"applicationType\":\"TONY\","
                      "\"amContainerLogs\":\"http://nm1:8042/node/containerlogs/" AM_CONTAINER "/fuzz\","
                      "\"amHostHttpAddress\":\"nm1:8042\",\"amRPCAddress\":\"@@\"}}";
    const char *job = "{\"app_id\":\"" APP_ID "\",\"state\":\"RUNNING\",\"tensorboard_url\":\"http://nm1:6006\","
                      "\"tasks\":[{\"role\":\"worker\",\"index\":0,\"state\":\"RUNNING\"}]}";
    http_seed("rmrest", "submit-3.4", (const char *[]){"200", info, "200", newapp, "200", sched, "200", labels,
                                                       "200", app, "202", "{\"state\":\"KILLED\"}", "200", job, NULL});
    http_seed("rmrest", "submit-3.3", (const char *[]){"200", info, "200", newapp, "200", sched33, "200", labels33,
                                                       "200", app, "200", "", NULL});
    http_seed("rmrest", "standby", (const char *[]){"200", "{\"clusterInfo\":{\"state\":\"STARTED\",\"haState\":\"STANDBY\"}}", NULL});
    http_seed("rmrest", "remote-exception",
              (const char *[]){"200", info, "403", "{\"RemoteException\":{\"exception\":\"AuthorizationException\","
                               "\"message\":\"User fuzz cannot submit applications\",\"javaClassName\":"
                               "\"org.apache.hadoop.security.authorize.AuthorizationException\"}}", NULL});
    /* found by this harness: a report without "id" made status.json NULL (client_jobs.c) */
    http_seed("rmrest", "app-without-id", (const char *[]){"200", "{\"clusterInfo\":{}}", "500", "", "500", "",
                                                           "500", "", "200", "{\"app\":{\"state\":\"KILLED\"}}", NULL});
    /* found by this harness: this refusal did not say which RM gave it (rest.c) */
    http_seed("rmrest", "report-without-app", (const char *[]){"200", info, "500", "", "500", "", "500", "",
                                                               "200", "{\"apps\":null}", NULL});
    free(newapp);
    free(max), free(sched), free(sched33), free(labels), free(labels33);
}

static void webhdfs_seeds(void) {
    const char *dir = "{\"FileStatus\":{\"accessTime\":0,\"blockSize\":0,\"childrenNum\":3,\"fileId\":16386,\"group\":"
                      "\"supergroup\",\"length\":0,\"modificationTime\":1700000000000,\"owner\":\"hdfs\",\"pathSuffix\":\"\","
                      "\"permission\":\"755\",\"replication\":0,\"storagePolicy\":0,\"type\":\"DIRECTORY\"}}";
    const char *list = "{\"FileStatuses\":{\"FileStatus\":[{\"accessTime\":1700000000000,\"blockSize\":134217728,"
                       "\"childrenNum\":0,\"fileId\":16390,\"group\":\"supergroup\",\"length\":24930,\"modificationTime\":"
                       "1700000000001,\"owner\":\"fuzz\",\"pathSuffix\":\"tony-final.xml\",\"permission\":\"644\","
                       "\"replication\":1,\"storagePolicy\":0,\"type\":\"FILE\"},{\"pathSuffix\":\"logs\",\"type\":"
                       "\"DIRECTORY\",\"length\":0,\"modificationTime\":1}]}}";
    const char *yes = "{\"boolean\":true}";
    http_seed("webhdfs", "all", (const char *[]){"200", dir, "200", dir, "200", list, "200", yes, "200",
                                                 "{\"Token\":{\"urlString\":\"JQAIaGRmcy11c2VyAA\"}}", "200",
                                                 "{\"long\":1700086400000}", "200", yes, "200", yes, "200",
                                                 "{\"Location\":\"http://@@/webhdfs/v1/user/fuzz/b?op=OPEN&"
                                                 "namenoderpcaddress=nn:8020&offset=0\"}", "200", "the file's bytes", NULL});
    /* found by this harness: this refusal did not say which NameNode gave it */
    http_seed("webhdfs", "stat-without-filestatus", (const char *[]){"200", dir, "200", "{}", NULL});
    http_seed("webhdfs", "standby", (const char *[]){"403", "{\"RemoteException\":{\"exception\":\"StandbyException\","
                                                     "\"javaClassName\":\"org.apache.hadoop.ipc.StandbyException\",\"message\":"
                                                     "\"Operation category READ is not supported in state standby\"}}", NULL});
    http_seed("webhdfs", "missing", (const char *[]){"200", dir, "404", "{\"RemoteException\":{\"exception\":"
                                                     "\"FileNotFoundException\",\"javaClassName\":\"java.io.FileNotFoundException\","
                                                     "\"message\":\"File does not exist: /user/fuzz/a b\"}}", NULL});
}

static void nm_seeds(void) {
    const char *head = "LogType:stdout\nLogLastModifiedTime:Sat Nov 21 15:03:40 +0000 2026\nLogLength:200\nLogContents:\n";
    char *log = tony_sprintf("%s%0100d\nEnd of LogType:stdout.\n", head, 0);
    char *v33 = tony_sprintf("Container: " AM_CONTAINER " on localhost:41473\nLogAggregationType: LOCAL\n"
                             "====================================================================\n%s"
                             "******************************************************************************\n\n", log);
    /* the first line is also read as a link */
    http_seed("nm", "hadoop-3.2", (const char *[]){"200", log, "200", log, NULL});
    http_seed("nm", "hadoop-3.3", (const char *[]){"200", v33, NULL});
    http_seed("nm", "not-yet", (const char *[]){"404", "Cannot find this log on the local disk.", NULL});
    seed_str("nm", "link", "http://nm1:8042/node/containerlogs/" AM_CONTAINER "/fuzz\n===\n200\n");
    free(log);
    free(v33);
}

static void slurm_seeds(void) {
    seed_str("slurm", "sinfo", "n1|cpu*|4|4096|(null)|fast\nn2|cpu*|4|4096|gpu:4|(null)\nn2|gpu|4|4096|gpu:4|(null)\n"
                               "n3|cpu*|4|4096|gpu:tesla:4(S:0-1)|a100,nvlink\nn3|gpu|4|4096|gpu:tesla:4(S:0-1)|a100,nvlink\n");
    seed_str("slurm", "sbatch", "4242;cluster1\n");
    seed_str("slurm", "squeue", "  RUNNING\n");
    seed_str("slurm", "sacct", "CANCELLED by 1000\nCANCELLED\n");
}

static void jobstate_seeds(void) {
    /* am.json as the coordinator writes it (common/jobdir.c) */
    const char *url = "http://127.0.0.1:4242";
    json_t *am = tony_jobdir_am_info_self(url);
    /* this process's pid, start and boot id, made the same on every run
     * (the corpus stays as it is when nothing else changed) */
    const char *k;
    json_t *v;
    json_object_foreach(am, k, v) {
        if (json_is_integer(v)) json_integer_set(v, 4242);
        else if (json_is_string(v) && strcmp(json_string_value(v), url) != 0)
            json_string_set(v, "0b6f2c1e-8d1a-4c55-9f2e-3f1d2a4b5c6d");
    }
    char *s = json_dumps(am, JSON_INDENT(2));
    seed_str("jobstate", "am.json", s);
    free(s);
    json_decref(am);
    seed_str("jobstate", "running.json",
        "{\"app_id\": \"application_1700000000000_0001\", \"state\": \"RUNNING\", \"final_status\": \"UNDEFIN"
        "ED\", \"attempt\": 1, \"backend\": \"local\", \"framework\": \"tensorflow\", \"job_dir\": \"/tmp/j\""
        ", \"started_ms\": 1699999990000, \"retries_left\": 1, \"single_node\": false, \"root_cause\": {\"tas"
        "k\": \"worker:1\", \"attempt\": 0, \"exit_status\": 137, \"exit_meaning\": \"killed (SIGKILL): out o"
        "f memory?\", \"host\": \"h1\", \"stderr_tail\": \"Traceback\\n  MemoryError\", \"text\": \"worker:1 "
        "failed\"}, \"coordinator_restarted\": {\"waiting\": 1, \"adopted\": 2}, \"tensorboard_url\": \"http:"
        "//h1:6006\", \"tensorboard_task\": \"worker:0\", \"excluded_nodes\": [{\"node\": \"h2\", \"task\": \""
        "worker:1\", \"reason\": \"exit 137\", \"attempt\": 0, \"time_ms\": 1699999995000, \"excluded\": true"
        "}, {\"node\": \"h3\", \"excluded\": false, \"refused\": \"cap\"}], \"advice\": [{\"role\": \"worker\""
        ", \"kind\": \"memory\", \"text\": \"worker used 10% of its memory\", \"key\": \"tony.worker.memory\""
        ", \"value\": \"1g\"}], \"tasks\": [{\"role\": \"ps\", \"index\": 0, \"state\": \"RUNNING\", \"attemp"
        "t\": 1, \"host\": \"h1\", \"port\": 2222, \"pid\": 100, \"kind\": \"tracked\", \"starts\": 1, \"star"
        "ted_ms\": 1699999991000, \"runs\": [{\"attempt\": 0, \"state\": \"FAILED\", \"started\": true, \"exi"
        "t_status\": 1, \"exit_meaning\": \"error\"}], \"stdout\": \"/tmp/j/attempts/1/ps-0/stdout\", \"stder"
        "r\": \"/tmp/j/attempts/1/ps-0/stderr\", \"metrics\": {\"MAX_MEMORY_BYTES\": 100000000.0}, \"last_sam"
        "ple\": {\"t_ms\": 1699999999000, \"rss_bytes\": 1000000, \"cpu_percent\": 50.5}}, {\"role\": \"worke"
        "r\", \"index\": 0, \"state\": \"SUCCEEDED\", \"attempt\": 1, \"exit_status\": 0, \"chief\": true, \""
        "finished_ms\": 1699999999000, \"requested\": {\"memory_bytes\": 2147483648, \"vcores\": 1, \"gpus\":"
        " 0}, \"stacks\": \"/v1/tasks/worker/0/stacks\"}, {\"role\": \"worker\", \"index\": 1, \"state\": \"F"
        "AILED\", \"exit_status\": 137, \"exit_meaning\": \"SIGKILL\", \"diagnostics\": \"Container killed\\u"
        "001b[2J\", \"log_url\": \"http://nm:8042/node/containerlogs/c/u\"}, {\"role\": \"\\u00e9valuator\", "
        "\"index\": 0, \"state\": \"NEW\", \"kind\": \"untracked\"}]}");
    seed_str("jobstate", "single-node.json",
             "{\"app_id\":\"local_1\",\"state\":\"FINISHED\",\"final_status\":\"SUCCEEDED\",\"single_node\":true,"
             "\"tasks\":[{\"role\":\"am\",\"index\":0,\"state\":\"SUCCEEDED\"}]}");
    /* found by this harness: tasks without role or state (report.c, local_client.c) */
    seed_str("jobstate", "damaged.json", "{\"state\":\"FINISHED\",\"tasks\":[{\"index\":0},{\"role\":3,\"state\":[]}]}");
}

/* The YARN client's verbs on a job: the RM's report, then the running
 * coordinator's /v1/job and log answers, or an ended job's NodeManager
 * files (its status the coordinator left in its container's log dir). */
static void nm_file(tony_buf *b, const char *name, const char *content) {
    tony_buf_printf(b, "LogType:%s\nLogLastModifiedTime:Sat Nov 21 15:03:40 +0000 2026\nLogLength:%zu\nLogContents:\n%s"
                       "End of LogType:%s.\n", name, strlen(content), content, name);
}

static void yarnclient_seeds(void) {
    const char *info = "{\"clusterInfo\":{\"state\":\"STARTED\",\"haState\":\"ACTIVE\",\"hadoopVersion\":\"3.4.1\"}}";
#define YAPP "{\"app\":{\"id\":\"" APP_ID "\",\"user\":\"fuzz\",\"trackingUrl\":\"http://rm:8088/proxy/" APP_ID "/\"," \
             "\"amRPCAddress\":\"@@\",\"amContainerLogs\":\"http://@@/node/containerlogs/" AM_CONTAINER "/fuzz\","
    const char *running = YAPP "\"state\":\"RUNNING\",\"finalStatus\":\"UNDEFINED\",\"diagnostics\":\"\"}}";
    const char *finished = YAPP "\"state\":\"FINISHED\",\"finalStatus\":\"FAILED\",\"diagnostics\":\"worker:1 failed\"}}";
#undef YAPP
#define TASKS "\"tasks\":[{\"role\":\"worker\",\"index\":0,\"state\":\"RUNNING\",\"host\":\"nm1\",\"container\":" \
              "\"container_1700000000000_0001_01_000002\",\"log_url\":\"http://@@/node/containerlogs/" \
              "container_1700000000000_0001_01_000002/fuzz\",\"stacks\":\"/v1/tasks/worker/0/stacks\"},{\"role\":\"ps\"," \
              "\"index\":0,\"state\":\"FAILED\",\"exit_status\":1,\"log_url\":\"http://@@/node/containerlogs/" \
              "container_1700000000000_0001_01_000003/fuzz\"}]"
    const char *job = "{\"app_id\":\"" APP_ID "\",\"state\":\"RUNNING\",\"attempt\":0,\"backend\":\"yarn\"," TASKS "}";
    const char *ended = "{\"app_id\":\"" APP_ID "\",\"state\":\"FINISHED\",\"final_status\":\"FAILED\",\"attempt\":0,"
                        "\"backend\":\"yarn\"," TASKS "}";
#undef TASKS
    http_seed("yarnclient", "running", (const char *[]){"200", info, "200", running, "200", job, "200",
                                                        "{\"data\":\"epoch 1\\n\",\"next\":8,\"size\":16}", "200",
                                                        "{\"data\":\"epoch 2\\n\",\"next\":16,\"size\":16}", NULL});
    tony_buf status = {0}, out = {0}, err = {0};
    nm_file(&status, "tony-status.json", ended);
    nm_file(&out, "stdout", "epoch 1\n");
    nm_file(&err, "stderr", "Traceback (most recent call last):\n");
    http_seed("yarnclient", "finished", (const char *[]){"200", info, "200", finished, "200", status.data, "200",
                                                         out.data, "404", "Cannot find this log on the local disk.",
                                                         "200", err.data, NULL});
    tony_buf_free(&status), tony_buf_free(&out), tony_buf_free(&err);
    /* links off this machine: the harness reaches none of them */
    http_seed("yarnclient", "elsewhere", (const char *[]){"200", info, "200", "{\"app\":{\"id\":\"" APP_ID "\",\"state\":"
                                                          "\"RUNNING\",\"amRPCAddress\":\"10.1.2.3:80\",\"amContainerLogs\":"
                                                          "\"http://nm-gone.example:8042/node/containerlogs/c_1/u\"}}", NULL});
    /* a task without a role: the verbs printed and asked for "(null)" (printf of NULL, client_logs.c) */
    http_seed("yarnclient", "task-without-role",
              (const char *[]){"200", info, "200", running, "200",
                               "{\"state\":\"RUNNING\",\"tasks\":[{\"index\":0,\"state\":\"RUNNING\"}]}", NULL});
    http_seed("yarnclient", "rm-down", (const char *[]){"503", "{\"RemoteException\":{\"exception\":\"ConnectException\","
                                                        "\"message\":\"Connection refused\"}}", NULL});
}

/* Requests as Horovod's gloo workers send them (its HTTP store: PUT a
 * rank's address, GET the others', DELETE at the end), raw and pipelined. */
static void rendezvous_seeds(void) {
    seed_str("rendezvous", "put", "PUT /global/rank_0 HTTP/1.1\r\nHost: 127.0.0.1:4242\r\nContent-Length: 11\r\n\r\n"
                                  "host1:12345");
    seed_str("rendezvous", "get", "GET /global/rank_0 HTTP/1.1\r\nHost: 127.0.0.1:4242\r\n\r\n");
    seed_str("rendezvous", "pipelined", "PUT /local_127.0.0.1/rank_1 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
                                        "GET /local_127.0.0.1/rank_1 HTTP/1.1\r\n\r\n"
                                        "DELETE /local_127.0.0.1/rank_1 HTTP/1.1\r\n\r\n"
                                        "DELETE /local_127.0.0.1/rank_0 HTTP/1.1\r\n\r\n");
    seed_str("rendezvous", "chunked", "PUT /cross_0/k HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
}

/* What the portal's page and a user's browser ask (fuzz_portal.c's jobs). */
static void portal_seeds(void) {
#define PAPP "application_1700000000000_0001"
    seed_str("portal", "jobs", "GET\n/v1/jobs\n\n");
    seed_str("portal", "job", "GET\n/v1/jobs/" PAPP "\n\n");
    seed_str("portal", "in-progress", "GET\n/v1/jobs/application_1700000000000_0002\n\n");
    seed_str("portal", "log", "GET\n/v1/jobs/" PAPP "/tasks/worker/0/log?stream=stdout&offset=2&attempt=0\n\n");
    seed_str("portal", "log-tail", "GET\n/v1/jobs/" PAPP "/tasks/worker/0/log?stream=stderr&tail=1\n\n");
    seed_str("portal", "metrics", "GET\n/v1/jobs/" PAPP "/tasks/worker/0/metrics?attempt=0\n\n");
    seed_str("portal", "am-log", "GET\n/v1/jobs/" PAPP "/am/log?offset=0\n\n");
    seed_str("portal", "page", "GET\n/\n\n");
    seed_str("portal", "ui", "HEAD\n/ui/portal.js\n\n");
    seed_str("portal", "tony-path", "GET\n/jobs/" PAPP "\n\n");
    seed_str("portal", "config", "GET\n/config/" PAPP "\n\n");
    seed_str("portal", "post", "POST\n/v1/jobs\nContent-Type: application/json\n\n{}");
    seed_str("portal", "traversal", "GET\n/v1/jobs/..%2F..%2Fprivate.txt\n\n");
    seed_str("portal", "other-host", "GET\n/v1/jobs\nHost: rebind.example:19886\n\n");
    seed_str("portal", "token", "GET\n/v1/jobs?token=0123456789abcdef0123456789abcdef\nCookie: tony_portal_token=x\n\n");
#undef PAPP
}

/* The coordinator's answers to an executor, as am/api.c and am/watch.c
 * write them (their writers are static there: built here with the same
 * names), for fuzz_executor: the verb, the HTTP status, the body. */
static void executor_seed(const char *name, const char *verb, int http, json_t *body) {
    char *text = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
    char *s = tony_sprintf("%s\n%d\n%s", verb, http, text);
    seed_str("executor", name, s);
    free(s);
    free(text);
    json_decref(body);
}

static void executor_seeds(void) {
    const char *job = "/tmp/tony/jobs/application_1_0001";
    executor_seed("go", AM_API_REGISTER, 200,
                  json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:[s],s:[s,s]},s:I,s:s}", AM_API_STATUS, AM_API_GO,
                            AM_API_COMMAND, "python train.py --steps 100", AM_API_ENV, "TF_CONFIG",
                            "{\"cluster\":{\"ps\":[\"h1:2222\"]},\"task\":{\"type\":\"worker\",\"index\":0}}",
                            "JOB_NAME", "worker", "TASK_INDEX", "0", AM_API_CLUSTER_SPEC, "ps", "h1:2222", "worker",
                            "h1:2223", "h2:2224", AM_API_EXECUTION_TIMEOUT_MS, (json_int_t)600000, AM_API_LOG_POLICIES,
                            "CUDA out of memory:fail"));
    /* the spec once, CLUSTER_SPEC and TF_CONFIG spliced around it (amapi.h, AM_API_ENV) */
    executor_seed("go-spliced", AM_API_REGISTER, 200,
                  json_pack("{s:s,s:s,s:{s:[s,s],s:[s,s],s:s},s:{s:[s],s:[s,s]},s:I,s:s,s:I}", AM_API_STATUS,
                            AM_API_GO, AM_API_COMMAND, "python train.py", AM_API_ENV, "CLUSTER_SPEC", "", "",
                            "TF_CONFIG", "{\"cluster\":", ",\"task\":{\"type\":\"worker\",\"index\":1}}",
                            "TASK_INDEX", "1", AM_API_CLUSTER_SPEC, "ps", "h1:2222", "worker", "h1:2223", "h2:2224",
                            AM_API_EXECUTION_TIMEOUT_MS, (json_int_t)0, AM_API_LOG_POLICIES, "",
                            AM_API_CLUSTER_SPEC_BYTES, (json_int_t)49));
    executor_seed("wait", AM_API_REGISTER, 200, json_pack("{s:s}", AM_API_STATUS, AM_API_WAIT));
    char *dir = tony_jobdir_task_dir(job, 2, "worker", 0);
    executor_seed("next", AM_API_REGISTER, 200,
                  json_pack("{s:s,s:i,s:s}", AM_API_STATUS, AM_API_NEXT, AM_API_NEXT_ATTEMPT, 2, AM_API_NEXT_LOG_DIR, dir));
    free(dir);
    executor_seed("next-cluster", AM_API_FINISHED, 200,
                  json_pack("{s:s,s:i}", AM_API_STATUS, AM_API_NEXT, AM_API_NEXT_ATTEMPT, 2));
    executor_seed("next-forged", AM_API_FINISHED, 200,
                  json_pack("{s:s,s:i,s:s}", AM_API_STATUS, AM_API_NEXT, AM_API_NEXT_ATTEMPT, 2, AM_API_NEXT_LOG_DIR,
                            "/tmp/tony/jobs/application_1_0001/../../../etc/cron.d"));
    executor_seed("adopted", AM_API_REGISTER, 200, json_pack("{s:s}", AM_API_STATUS, AM_API_ADOPTED));
    executor_seed("adopt-refused", AM_API_REGISTER, 409,
                  json_pack("{s:s,s:s}", AM_API_STATUS, AM_API_STOP, AM_API_ERROR, "the job is finishing"));
    executor_seed("heartbeat", AM_API_HEARTBEAT, 200, json_object());
    executor_seed("heartbeat-stacks", AM_API_HEARTBEAT, 200, json_pack("{s:b}", AM_API_DUMP_STACKS, 1));
    char *b64 = tony_base64_encode("HDTS\0\1token", 11, false);
    executor_seed("heartbeat-credentials", AM_API_HEARTBEAT, 200,
                  json_pack("{s:{s:I,s:s}}", TONY_HEARTBEAT_CREDENTIALS, TONY_HEARTBEAT_CREDENTIALS_GENERATION,
                            (json_int_t)3, TONY_HEARTBEAT_CREDENTIALS_DATA, b64));
    free(b64);
    executor_seed("heartbeat-stop", AM_API_HEARTBEAT, 409,
                  json_pack("{s:s,s:s}", AM_API_STATUS, AM_API_STOP, AM_API_ERROR, "the job is finishing"));
    executor_seed("heartbeat-stale", AM_API_HEARTBEAT, 409,
                  json_pack("{s:s,s:s}", AM_API_STATUS, AM_API_STALE, AM_API_ERROR, "this attempt is over"));
    executor_seed("watch-wait", AM_API_WATCH, 200, json_pack("{s:s}", AM_API_STATUS, AM_API_WAIT));
    executor_seed("watch-stop", AM_API_WATCH, 200, json_pack("{s:s}", AM_API_STATUS, AM_API_STOP));
    executor_seed("finished", AM_API_FINISHED, 200, json_object());
    executor_seed("bad-request", AM_API_REGISTER, 400, json_pack("{s:s}", AM_API_ERROR, "port must be a number"));
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seeds CORPUS_DIR\n");
        return 2;
    }
    root = argv[1];
    char tmpl[] = "/tmp/tony-seeds-XXXXXX";
    if (!mkdtemp(tmpl)) return 1;
    conf_seeds();
    resource_seeds();
    api_seeds();
    ipc_seeds();
    token_seeds();
    jhist_seeds(tmpl);
    archive_seeds(tmpl);
    rmrest_seeds();
    webhdfs_seeds();
    nm_seeds();
    slurm_seeds();
    jobstate_seeds();
    yarnclient_seeds();
    rendezvous_seeds();
    portal_seeds();
    executor_seeds();
    tony_error err;
    tony_rm_rf(tmpl, &err);
    return 0;
}
