/* `tony scale JOB ROLE=N` (scale.h): finds the job's coordinator as `tony
 * kill` does (am.json and the secret in the job dir) and asks it, signed,
 * for the new size; the coordinator checks the bounds and says why not. */
#include "client/scale.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/args.h"
#include "client/client.h"
#include "client/confargs.h"
#include "common/amapi.h"
#include "common/fs.h"
#include "common/http.h"
#include "common/jobdir.h"
#include "common/strv.h"
#include "conf/conf.h"

/* How long the coordinator may take to answer (it answers at once). */
#define SCALE_ASK_MS 10000

#define USAGE_LINE "usage: tony scale JOB_ID ROLE=N [--conf K=V] [--conf_file FILE]"
static const char USAGE[] = USAGE_LINE "\n"
                            "  Resizes ROLE of a running elastic job to N tasks, within its tony.ROLE.min-instances\n"
                            "  and tony.ROLE.instances: fewer stops the highest-index tasks and restarts the others\n"
                            "  in place in the smaller world; more asks for containers, and the world grows when\n"
                            "  they register (after tony.application.elastic-settle-ms). See docs/elastic.md.";

int tony_scale_parse(const char *word, char **role, int *n, tony_error *err) {
    const char *eq = strchr(word, '=');
    char *end = NULL;
    long v = -1;
    if (eq && eq > word && eq[1] >= '0' && eq[1] <= '9') {
        errno = 0;
        v = strtol(eq + 1, &end, 10);
    }
    if (v < 0 || !end || *end || errno || v > 1000000)
        return tony_err(err, "'%s' is not ROLE=N (e.g. worker=4: the role's name, '=', a number of tasks)", word);
    *role = strndup(word, (size_t)(eq - word));
    *n = (int)v;
    return 0;
}

/* Asks the coordinator; prints what it said. */
static int ask(const char *job_dir, const char *role, int n) {
    tony_error err;
    char *url = NULL, *secret = NULL;
    int pid = 0;
    if (tony_jobdir_am_url(job_dir, &url, &pid, &err) || !tony_jobdir_am_running(job_dir, NULL)) {
        fprintf(stderr, "tony: error: the job's coordinator is not running (the job is over, or it crashed: see "
                        "`tony status`): nothing to scale\n");
        free(url);
        return TONY_EXIT_UNAVAILABLE;
    }
    if (tony_jobdir_secret(job_dir, &secret, &err)) {
        fprintf(stderr, "tony: error: %s\n", err.msg);
        free(url);
        return TONY_EXIT_UNAVAILABLE;
    }
    json_t *body = json_pack("{s:s,s:i}", AM_API_SCALE_ROLE, role, AM_API_SCALE_INSTANCES, n);
    char *b = json_dumps(body, JSON_COMPACT);
    char *u = tony_sprintf("%s" AM_API_JOB_SCALE, url);
    tony_http_response r = {0};
    int code = TONY_EXIT_OK;
    if (tony_http_call("POST", u, secret, b, SCALE_ASK_MS, &r, &err)) {
        fprintf(stderr, "tony: error: cannot reach the job's coordinator: %s\n", err.msg);
        code = TONY_EXIT_UNAVAILABLE;
    } else if (r.status != 200) {
        json_t *ans = json_loads(r.body, 0, NULL);
        const char *why = json_string_value(json_object_get(ans, AM_API_ERROR));
        fprintf(stderr, "tony: error: %s\n", why ? why : r.body);
        json_decref(ans);
        code = r.status == 400 ? TONY_EXIT_USAGE : TONY_EXIT_UNAVAILABLE;
    } else {
        printf("%s: %s=%d asked for\n", tony_basename(job_dir), role, n);
    }
    tony_http_response_free(&r);
    free(u);
    free(b);
    json_decref(body);
    free(secret);
    free(url);
    return code;
}

int tony_cmd_scale(int argc, char **argv) {
    tony_opt opts[] = {{"root", NULL, true, false, "jobs root (default tony.local.root, else $TONY_HOME or ~/.tony)",
                        false, {0}},
                       TONY_CONF_OPTS,
                       {"help", "h", false, false, "show this help", false, {0}},
                       {NULL, NULL, false, false, NULL, false, {0}}};
    tony_error err;
    tony_strv pos = {0};
    tony_conf *conf = tony_conf_new();
    char *job_dir = NULL, *role = NULL;
    int n = 0, code = TONY_EXIT_USAGE;
    int rc = tony_args_parse(argc, argv, opts, &pos, &err);
    if (rc == 0 && tony_args_get(opts, "help")->seen) {
        tony_args_usage(USAGE, opts);
        code = TONY_EXIT_OK;
        goto out;
    }
    if (rc == 0 && pos.len != 2) rc = tony_err(&err, "%s", USAGE_LINE);
    if (rc == 0) rc = tony_scale_parse(pos.items[1], &role, &n, &err);
    if (rc == 0) rc = tony_confargs_load(opts, conf, &err);
    if (rc == 0) {
        char *root = tony_confargs_root(opts, conf);
        rc = tony_jobdir_find(root, pos.items[0], &job_dir, &err);
        free(root);
    }
    if (rc) fprintf(stderr, "tony: error: %s\n", err.msg);
    else code = ask(job_dir, role, n);
out:
    free(role);
    free(job_dir);
    tony_strv_free(&pos);
    tony_args_free(opts);
    tony_conf_free(conf);
    return code;
}
