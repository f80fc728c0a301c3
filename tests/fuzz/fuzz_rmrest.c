/* Fuzzes what the YARN client reads from the ResourceManager's REST API
 * (backend/yarn/rest.c: the cluster info of its HA failover, new-application,
 * an app report, kill, RemoteException bodies; cluster_check.c: the
 * scheduler, node labels and maximum capability a job is checked against
 * before staging; client_jobs.c: an app report's amRPCAddress and
 * trackingUrl, the coordinator's /v1/job at that address, and the job dir's
 * yarn.json and status.json written from the report), each reply served
 * by a stand-in RM over real HTTP (fuzz_http.h). Input format: replies
 * separated by "\n===\n", each its HTTP status on the first line then its
 * body, answering in turn: cluster info, new-application, scheduler, node
 * labels, app report, kill, the coordinator's /v1/job ("@@" in a body is
 * the stand-in's host:port). Properties: no crash, leak or UB; a call that
 * succeeds gives what it promises (an application id, an "app" object); a
 * refusal says which RM refused; and the checks and the job dir's files
 * take whatever JSON types the RM sends. */
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "backend/yarn/cluster_check.h"
#include "backend/yarn/rest.h"
#include "backend/yarn/yarn_client.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "conf/plan.h"
#include "fuzz_http.h"
#include "runtime/runtime.h"

static tony_conf *conf;
static tony_plan plan;
static char *rm_url, *job_dir;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet();
    rm_url = fuzz_http_url();
    conf = fuzz_tf_conf();
    tony_conf_set(conf, "tony.worker.gpus", "1", "fuzz");
    tony_conf_set(conf, "tony.worker.node-label", "gpu", "fuzz");
    tony_error err;
    FUZZ_CHECK(tony_runtime_plan(conf, &plan, &err) == 0, "the fuzzer's plan: %s", err.msg);
    job_dir = tony_path_join(fuzz_scratch(), "job");
    FUZZ_CHECK(tony_mkdir_p(job_dir, 0700, &err) == 0, "%s", err.msg);
    return 0;
}

/* A refusal names the RM it came from (the user must know which). */
static void check_refusal(const tony_error *err) {
    FUZZ_CHECK(strstr(err->msg, rm_url) != NULL, "an RM's refusal does not name it: %s", err->msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_http_set(data, size);
    tony_yarn_rest *r = tony_yarn_rest_new("fuzz");
    tony_yarn_rest_add_rm(r, rm_url, "the fuzzer", NULL);
    tony_error err;
    json_t *max = NULL, *scheduler = NULL, *labels = NULL, *app = NULL;
    char *app_id = NULL;
    if (tony_yarn_rest_connect(r, &err) != 0) {
        check_refusal(&err);
        goto out;
    }
    tony_yarn_check_hadoop_version(tony_yarn_rest_hadoop_version(r), rm_url, &err);
    if (tony_yarn_rest_new_application(r, &app_id, &max, &err) == 0)
        FUZZ_CHECK(app_id != NULL, "new-application succeeded without an id");
    else
        check_refusal(&err);
    if (tony_yarn_rest_get(r, "/ws/v1/cluster/scheduler", &scheduler, &err) == 0)
        FUZZ_CHECK(scheduler != NULL, "a GET succeeded with no JSON");
    else
        check_refusal(&err);
    if (tony_yarn_rest_get(r, "/ws/v1/cluster/get-node-labels", &labels, &err)) check_refusal(&err);
    if (scheduler) {
        tony_yarn_cluster_info info = {.scheduler = scheduler, .node_labels = labels, .max_capability = max};
        long long am_mem = 0;
        int am_vcores = 0;
        if (tony_yarn_check_plan(&plan, conf, &info, &am_mem, &am_vcores, &err) != 0)
            FUZZ_CHECK(*err.msg, "a refused plan has no reason");
    }
    const char *id = app_id ? app_id : "application_1_0001";
    if (tony_yarn_rest_app(r, id, &app, &err) == 0) {
        FUZZ_CHECK(app != NULL, "an app report without \"app\" was taken");
        /* what the client does with a report: its record, the
         * coordinator's address and /v1/job, and a job's final status */
        tony_error werr;
        json_t *rec = json_pack("{s:s,s:s}", "rm", rm_url, "app_id", id);
        FUZZ_CHECK(tony_jobdir_write_json(job_dir, TONY_JOBDIR_YARN, rec, &werr) == 0, "%s", werr.msg);
        json_decref(rec);
        tony_yarn_record_update(job_dir, app);
        char *am = tony_yarn_am_url(app);
        if (am) FUZZ_CHECK(strncmp(am, "http://", 7) == 0, "a coordinator URL that is not http: %s", am);
        /* only the stand-in is asked ("@@"): another address would have
         * the fuzzer wait on connections that go nowhere */
        bool here = am && strcmp(am + 7, fuzz_http_start()) == 0;
        free(am);
        /* no job dir on this side: the read is made without a token */
        json_t *job = here ? tony_yarn_am_job(app, "/nonexistent/tony-fuzz-job") : NULL;
        if (job) {
            tony_job_is_finished(job);
            tony_job_succeeded(job);
        }
        json_decref(job);
        tony_yarn_state_final(json_string_value(json_object_get(app, "state")));
        tony_yarn_status_finalize(job_dir, app);
        json_t *st = tony_jobdir_read_json(job_dir, TONY_JOBDIR_STATUS);
        FUZZ_CHECK(tony_job_is_finished(st), "status.json is not final after finalize");
        json_decref(st);
        char *p = tony_path_join(job_dir, TONY_JOBDIR_STATUS);
        unlink(p);
        free(p);
    } else {
        check_refusal(&err);
    }
    if (tony_yarn_rest_kill(r, id, &err)) check_refusal(&err);
out:
    json_decref(app);
    json_decref(labels);
    json_decref(scheduler);
    json_decref(max);
    free(app_id);
    tony_yarn_rest_free(r);
    fuzz_http_done();
    return 0;
}
