/* Writes the fuzzers' seed corpora (tests/fuzz/corpus/<harness>/) with
 * tony's own writers where it has them (tony-final.xml, token storage, IPC
 * frames, .jhist, zip and tar.gz), so the seeds are what tony meets in a
 * real job, generated here rather than taken from anywhere. Run by
 * `make fuzz-seeds`: build/fuzz/fuzz/fuzz_seeds tests/fuzz/corpus. */
#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/yarn/amrm_pb.h"
#include "backend/yarn/ids_pb.h"
#include "backend/yarn/ipc.h"
#include "backend/yarn/tokens.h"
#include "common/archive.h"
#include "common/fs.h"
#include "common/jhist.h"
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
    tony_error err;
    tony_rm_rf(tmpl, &err);
    return 0;
}
