/* Fuzzes the client's reading of a job dir's am.json and status.json (the
 * coordinator's job JSON, common/jobjson.h, which is also what its
 * GET /v1/job answers): common/jobdir.c (the coordinator's url, pid and
 * start of am.json; status.json), the local backend's client
 * (backend/local/local_client.c: status, list, logs and the lost
 * coordinator's reason, through tony_local_client_ops), and what `tony
 * status` and `tony submit` print from it (client/report.c's grouped lines,
 * task table, coordinator, final line and advice; client/follow.c's live
 * block and plain lines). Input format: one file's bytes, written as both
 * am.json and status.json of a job dir (a JSON object can carry the fields
 * of both). Properties: no crash, leak or UB, whatever types the fields
 * have; a url read is a string; a list row's fields are terminated; the
 * live block's lines are cut to the terminal's width. No HTTP: am.json is
 * read alone first, then taken away before the calls that would ask the
 * coordinator it names. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend/local/local_client.h"
#include "client/follow.h"
#include "client/report.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "fuzz_util.h"

static char *job_dir, *am_json, *status_json;
static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet();
    job_dir = tony_path_join(fuzz_scratch(), "job");
    tony_error err;
    FUZZ_CHECK(tony_mkdir_p(job_dir, 0700, &err) == 0, "%s", err.msg);
    am_json = tony_path_join(job_dir, TONY_JOBDIR_AM_INFO);
    status_json = tony_path_join(job_dir, TONY_JOBDIR_STATUS);
    /* `tony logs` prints the task files it finds on stdout */
    devnull = fopen("/dev/null", "w");
    FUZZ_CHECK(freopen("/dev/null", "w", stdout) != NULL, "cannot silence stdout");
    return 0;
}

/* Each line of block has at most cols visible columns (escape sequences
 * and UTF-8 continuation bytes take none, as follow.c counts them). */
static void check_block(const char *block, int cols) {
    int seen = 0;
    for (const char *p = block; *p; p++) {
        if (*p == '\n') {
            seen = 0;
        } else if (*p == '\x1b') {
            while (p[1] && !((p[1] >= 'a' && p[1] <= 'z') || (p[1] >= 'A' && p[1] <= 'Z'))) p++;
            if (p[1]) p++;
        } else if (((unsigned char)*p & 0xC0) != 0x80) {
            FUZZ_CHECK(++seen <= cols, "a live line is wider than %d columns:\n%s", cols, block);
        }
    }
}

static void show(const json_t *job) {
    free(tony_report_grouped(job));
    tony_report_tasks(devnull, job);
    free(tony_report_coordinator(job));
    tony_report_final(devnull, job);
    tony_report_advice(devnull, job);
    tony_report_name(devnull, job);
    tony_report_cause(devnull, job);
    tony_job_is_finished(job);
    tony_job_succeeded(job);
    for (int cols = 20; cols <= 120; cols += 100) {
        char *b = tony_follow_block(job, 1700000000000LL, cols, cols > 20);
        FUZZ_CHECK(b != NULL, "no live block");
        check_block(b, cols);
        free(b);
    }
    tony_follow *f = tony_follow_new(devnull);
    tony_follow_update(f, job);
    tony_follow_update(f, job);
    tony_follow_free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tony_error err;
    FUZZ_CHECK(tony_write_file(am_json, (const char *)data, size, 0600, &err) == 0, "%s", err.msg);
    FUZZ_CHECK(tony_write_file(status_json, (const char *)data, size, 0600, &err) == 0, "%s", err.msg);
    const tony_client_backend_ops *ops = &tony_local_client_ops;

    char *url = NULL;
    int pid = -1;
    if (tony_jobdir_am_url(job_dir, &url, &pid, &err) == 0) FUZZ_CHECK(url != NULL, "am.json's url read as NULL");
    else FUZZ_CHECK(*err.msg, "no reason for an unreadable am.json");
    free(url);
    int running_pid = -1;
    tony_jobdir_am_running(job_dir, &running_pid);
    free(ops->lost_reason(job_dir, "application_1_0001"));

    /* No coordinator from here on: status.json alone. */
    unlink(am_json);
    tony_client_state st = {0};
    if (ops->state(job_dir, NULL, &st) == 0) {
        FUZZ_CHECK(st.headline != NULL, "a state without a headline");
        show(st.job);
    }
    json_decref(st.job);
    json_decref(st.extra);
    free(st.headline);
    tony_client_row row;
    memset(&row, 'x', sizeof row);
    ops->list_row(job_dir, &row);
    FUZZ_CHECK(memchr(row.state, 0, sizeof row.state) && memchr(row.final_status, 0, sizeof row.final_status) &&
                   memchr(row.framework, 0, sizeof row.framework),
               "a list row's field is not terminated");
    tony_client_logs_opts all = {.attempt = -1}, one = {.task = "worker:0", .attempt = -1},
                          stacks = {.task = "ps:0", .attempt = 0, .stacks = true};
    ops->logs(job_dir, &all, NULL);
    ops->logs(job_dir, &one, NULL);
    ops->logs(job_dir, &stacks, NULL);
    fflush(stdout);
    /* as the coordinator answers it, without the file */
    json_t *j = json_loadb((const char *)data, size, 0, NULL);
    if (j) show(j);
    json_decref(j);
    return 0;
}
