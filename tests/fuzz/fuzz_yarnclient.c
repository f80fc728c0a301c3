/* Fuzzes the YARN client's verbs on a job it submitted, which read the
 * ResourceManager, the coordinator and the NodeManagers
 * (backend/yarn/client_jobs.c: `tony status`, `tony list` and the lost
 * job's reason; client_logs.c: `tony logs` of every task, of one task, of
 * the coordinator, the stacks of a hang, and the log links `tony status`
 * prints), through tony_yarn_client_ops against stand-ins of all three
 * (fuzz_http.h; nothing off 127.0.0.1 is reached) from a job dir whose
 * yarn.json names the stand-in as the RM. Input format: replies separated
 * by "\n===\n", each its HTTP status on the first line then its body,
 * answering in turn whatever the verbs ask: the RM's cluster info and app
 * report, then the coordinator's /v1/job (at the report's amRPCAddress:
 * "@@" is the stand-in) or, for a job that ended, the NodeManager's log
 * files (at amContainerLogs and each task's log_url), the coordinator's
 * log and stacks answers. Each verb starts again from the first reply;
 * which of `tony logs`' ways runs is the input's length modulo 4.
 * Properties: no crash, leak or UB, whatever the replies hold; a verb
 * ends (none may wait on a reply that does not come: no follow, no kill);
 * what status says is a state with a headline. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend/yarn/yarn_client.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "fuzz_http.h"

#define APP "application_1700000000000_0001"

static char *job_dir, *status_json, *record;
static tony_conf *conf;
static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet();
    /* the RM is the one yarn.json names, none of a Hadoop config */
    unsetenv("HADOOP_CONF_DIR");
    char *rm = fuzz_http_url();
    job_dir = tony_path_join(fuzz_scratch(), "job");
    tony_error err;
    FUZZ_CHECK(tony_mkdir_p(job_dir, 0700, &err) == 0, "%s", err.msg);
    status_json = tony_path_join(job_dir, TONY_JOBDIR_STATUS);
    json_t *rec = json_pack("{s:s,s:s,s:s}", "rm", rm, "app_id", APP, "user", "fuzz");
    char *text = json_dumps(rec, JSON_COMPACT);
    record = text;
    json_decref(rec);
    free(rm);
    conf = tony_conf_new();
    devnull = fopen("/dev/null", "w");
    /* the verbs print logs and lines on stdout and stderr */
    FUZZ_CHECK(freopen("/dev/null", "w", stdout) != NULL, "cannot silence stdout");
    return 0;
}

/* A fresh job dir for each verb: yarn.json as submit left it, no status.json. */
static void reset(const uint8_t *data, size_t size) {
    tony_error err;
    char *p = tony_path_join(job_dir, TONY_JOBDIR_YARN);
    FUZZ_CHECK(tony_write_file(p, record, strlen(record), 0600, &err) == 0, "%s", err.msg);
    free(p);
    unlink(status_json);
    fuzz_http_set(data, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const tony_client_backend_ops *ops = &tony_yarn_client_ops;
    reset(data, size);
    tony_client_state st = {0};
    if (ops->state(job_dir, conf, &st) == 0) FUZZ_CHECK(st.headline && *st.headline, "a state with no headline");
    if (st.job) ops->print_log_links(devnull, st.job, APP, false);
    json_decref(st.job);
    json_decref(st.extra);
    free(st.headline);
    tony_client_row row;
    ops->list_row(job_dir, &row);
    free(ops->lost_reason(job_dir, APP));
    const tony_client_logs_opts opts[] = {{.attempt = -1},
                                          {.task = "worker:0", .attempt = -1, .am = true},
                                          {.task = "ps:0", .attempt = 0, .stacks = true},
                                          {.attempt = 1}};
    /* one way of `tony logs` per input (each asks many replies) */
    reset(data, size);
    ops->logs(job_dir, &opts[size % (sizeof opts / sizeof *opts)], conf);
    fflush(stdout);
    fuzz_http_done();
    return 0;
}
