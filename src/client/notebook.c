/* `tony notebook` (client/notebook.h): builds the job a notebook user needs
 * (one task of role notebook running Jupyter, or nbclient with --execute)
 * and hands it to `tony submit`, whose flags it takes, then says where the
 * server is, once the coordinator's address is known: the coordinator's
 * AM_API_NOTEBOOK path with the read token. */
#include "client/notebook.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/client.h"
#include "client/client.h"
#include "client/confargs.h"
#include "common/amapi.h"
#include "common/fs.h"
#include "common/jobdir.h"
#include "common/jobjson.h"
#include "common/proc.h"
#include "common/strv.h"
#include "common/taskenv.h"
#include "conf/keys.h"

static tony_opt notebook_opts[] = {
    {"execute", NULL, true, false, "run this .ipynb as a job and keep the executed copy (exit status follows it)", false, {0}},
    {"python_venv", NULL, true, false, "zipped virtualenv with jupyter_server (and nbclient), unpacked into venv/", false, {0}},
    {"python_binary_path", NULL, true, false, "interpreter; relative: inside venv/ (default python3)", false, {0}},
    {"src_dir", NULL, true, false, "directory shipped to the task (with --execute: default the notebook's)", false, {0}},
    {"shell_env", NULL, true, true, "K=V for Jupyter and its kernels (repeatable)", false, {0}},
    TONY_CONF_OPTS,
    {"backend", NULL, true, false, "local, yarn or slurm (tony.application.backend)", false, {0}},
    {"detach", NULL, false, false, "print the job id and the notebook's URL and return", false, {0}},
    {"help", "h", false, false, "show this help", false, {0}},
    {NULL, NULL, false, false, NULL, false, {0}},
};

/* Jupyter's server with its idle checks every quarter of the timeout (its
 * own look is once a minute, too coarse for a timeout of minutes), under the
 * proxy's secret folder (common/amapi.h: made here from the token, so that
 * it is on no command line), on the port the executor reserved (TB_PORT) of
 * the host the executor registers (NM_HOST, else the machine's name), which
 * is where the coordinator's proxy connects: loopback on the local backend,
 * the node's address on YARN, where the coordinator runs on another node in
 * general. There it is on the cluster's network, but answers nothing
 * without its token, the job's read token, which comes in the environment,
 * where other users cannot read it (docs/workflows.md says what that
 * exposes). */
static const char jupyter_py[] =
    "import hashlib, hmac, os, sys\n"
    "from jupyter_server.serverapp import ServerApp\n"
    "from tornado import ioloop\n"
    "class TonyServer(ServerApp):\n"
    "    def init_shutdown_no_activity(self):\n"
    "        t = self.shutdown_no_activity_timeout\n"
    "        if t > 0:\n"
    "            ioloop.PeriodicCallback(self.shutdown_no_activity, 1000 * max(1, min(60, t // 4))).start()\n"
    "key = hmac.new(os.environ[\"" TASKENV_READ_TOKEN "\"].encode(), b\"" AM_API_NOTEBOOK_PATH_LABEL "\", "
    "hashlib.sha256).hexdigest()\n"
    "TonyServer.launch_instance(argv=sys.argv[1:] + [\"--ServerApp.base_url=" AM_API_NOTEBOOK "/\" + key + \"/\"])\n";

/* The notebook run by nbclient, stopping at the first failing cell; the
 * executed copy is written either way, where every task and the user see
 * it (TONY_JOB_DIR). */
static const char execute_py[] =
    "import os, sys, nbformat, nbclient\n"
    "src = os.environ[\"TONY_NOTEBOOK\"]\n"
    "out = os.path.join(os.environ.get(\"" TASKENV_JOB_DIR "\") or \".\", os.environ[\"TONY_NOTEBOOK_OUT\"])\n"
    "nb = nbformat.read(src, as_version=4)\n"
    "rc = 0\n"
    "try:\n"
    "    nbclient.NotebookClient(nb, resources={\"metadata\": {\"path\": os.path.dirname(os.path.abspath(src))}}).execute()\n"
    "except nbclient.exceptions.CellExecutionError as e:\n"
    "    print(e, file=sys.stderr)\n"
    "    rc = 1\n"
    "nbformat.write(nb, out)\n"
    "print(\"tony: the executed notebook is \" + os.path.abspath(out), flush=True)\n"
    "sys.exit(rc)\n";

/* Options given to `tony notebook` that `tony submit` takes as they are. */
static void pass_on(tony_strv *a, const char *name) {
    tony_opt *o = tony_args_get(notebook_opts, name);
    for (size_t i = 0; i < o->values.len; i++) {
        tony_strv_pushf(a, "--%s", name);
        tony_strv_push(a, o->values.items[i]);
    }
    if (!o->takes_value && o->seen) tony_strv_pushf(a, "--%s", name);
}

/* As submit reads --python_binary_path: relative, inside the shipped venv;
 * else a path from here is made absolute (the task runs elsewhere); a bare
 * name is looked up on the task's PATH. */
static char *interpreter(void) {
    const char *py = tony_args_value(notebook_opts, "python_binary_path");
    if (!py) return tony_strdup("python3");
    if (py[0] != '/' && tony_args_value(notebook_opts, "python_venv")) return tony_sprintf("venv/%s", py);
    if (py[0] != '/' && strchr(py, '/')) return tony_abspath(py);
    return tony_strdup(py);
}

typedef struct started_ctx {
    const char *out_name; /* --execute: the executed copy's file name */
    bool detach;
    const char *python;   /* the task's interpreter, as its command names it */
} started_ctx;

/* How long the interpreter may take to import what the task needs. */
#define IMPORT_CHECK_MS 60000

/* Before the job is submitted (submit's hook): where the tasks run on this
 * machine, bare, with an interpreter not inside the shipped venv, that
 * interpreter imports what the task runs (jupyter_server; nbclient and
 * nbformat for --execute). Else the job would start, the URL be printed
 * and the server die a second later. */
static int check_jupyter(const tony_plan *plan, bool tasks_run_here, void *arg, tony_error *err) {
    const started_ctx *c = arg;
    if (!tasks_run_here || tony_plan_in_images(plan) || strncmp(c->python, "venv/", 5) == 0) return 0;
    const char *modules = c->out_name ? "nbclient, nbformat" : "jupyter_server.serverapp";
    char *code = tony_sprintf("import %s", modules);
    char *argv[] = {(char *)c->python, "-c", code, NULL};
    tony_buf out = {0}, errout = {0};
    int exit_code = 0, rc = tony_proc_run(argv, IMPORT_CHECK_MS, &out, &errout, &exit_code, err);
    free(code);
    if (rc == 0 && exit_code != 0) {
        /* its last line names what is missing (ModuleNotFoundError: ...) */
        char *said = errout.data ? errout.data : "";
        size_t n = strlen(said);
        while (n && (said[n - 1] == '\n' || said[n - 1] == ' ')) said[--n] = '\0';
        const char *last = strrchr(said, '\n');
        rc = tony_err(err, "%s cannot import %s (%s): install Jupyter in it (pip install %s), or give "
                           "--python_binary_path a Python that has it (in a checkout, `make demo` makes build/pyenv/bin/python)",
                      c->python, modules, last ? last + 1 : *said ? said : "no message",
                      c->out_name ? "nbclient nbformat ipykernel" : "jupyter_server");
    } else if (rc) {
        tony_err_wrap(err, "cannot run the notebook's Python %s", c->python);
    }
    tony_buf_free(&out);
    tony_buf_free(&errout);
    return rc;
}

static volatile sig_atomic_t stop_signal;
static void on_stop(int sig) { stop_signal = sig; }

/* The coordinator's URL (http://host:port, malloc'ed), or NULL when the
 * job ended, or could not be looked at, before its coordinator answered,
 * or on Ctrl-C. Where the client shares the job dir with the coordinator
 * (local, Slurm: the backends with wait_started), am.json names it a
 * moment after it started. Elsewhere (YARN) the backend's look at the job,
 * as `tony status` takes it: the cluster's report, then the coordinator's
 * own job, whose URL submit's follow shows as the job page's; asked again
 * until the coordinator runs, however long a queue holds the job (Slurm's
 * too, once am.json is late). */
static char *coordinator_url(const tony_client_job *job, bool detach) {
    char *url = NULL;
    int pid;
    tony_conf *conf = tony_conf_new();
    tony_error err;
    bool looks = tony_confargs_load(notebook_opts, conf, &err) == 0;
    struct sigaction mine = {.sa_handler = on_stop}, old_int, old_term;
    sigaction(SIGINT, &mine, &old_int);
    sigaction(SIGTERM, &mine, &old_term);
    stop_signal = 0;
    bool told = false;
    for (int i = 0; !stop_signal; i++) {
        if (tony_jobdir_am_url(job->job_dir, &url, &pid, NULL) == 0) break;
        if (!looks || (job->ops->wait_started && i < 100) || i % 10 != 0) {
            tony_sleep_ms(100);
            continue;
        }
        if (!told) {
            printf("tony: waiting for the coordinator, to say where the notebook is (Ctrl-C %s)\n",
                   detach ? "stops waiting; the job goes on" : "stops the job");
            fflush(stdout);
            told = true;
        }
        tony_client_state st = {0};
        int code = job->ops->state(job->job_dir, conf, &st);
        const char *u = st.live ? json_string_value(json_object_get(st.job, JOB_URL)) : NULL;
        if (u && *u) url = tony_strdup(u);
        bool over = code != TONY_EXIT_OK || st.final || tony_job_is_finished(st.job);
        json_decref(st.job);
        json_decref(st.extra);
        free(st.headline);
        if (url || over) break;
        tony_sleep_ms(100);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    /* followed, the job is submit's to stop: its handler hears it now */
    if (stop_signal && !detach) raise(stop_signal);
    tony_conf_free(conf);
    return url;
}

static void say_where(const tony_client_job *job, void *arg) {
    const started_ctx *c = arg;
    if (c->out_name) {
        char *shared = tony_path_join(job->job_dir, TONY_JOBDIR_SHARED);
        char *kept = tony_path_join(shared, c->out_name);
        printf("tony: the executed notebook will be kept as %s\n", kept);
        free(kept);
        free(shared);
        return;
    }
    char *url = coordinator_url(job, c->detach), *token = NULL;
    if (!url && stop_signal) return; /* Ctrl-C: the user stopped waiting */
    if (!url || tony_jobdir_read_token(job->job_dir, &token, NULL)) {
        printf("tony: the notebook is at the job's web page URL with " AM_API_NOTEBOOK "/ after the host "
               "(`tony status %s` shows it)\n",
               job->id);
    } else {
        printf("tony: the notebook is at %s" AM_API_NOTEBOOK "/?" AM_API_TOKEN_PARAM "=%s (Jupyter, through the "
               "coordinator, from a few seconds from now; its files are the task's work dir; `tony kill %s` ends it and "
               "its kernels)\n",
               url, token, job->id);
    }
    fflush(stdout);
    free(url);
    free(token);
}

/* --execute NB: ships NB's directory (unless --src_dir does) and names the
 * copy NAME.executed.ipynb. */
static int execute_args(const char *nb, tony_strv *a, char **out_name, tony_error *err) {
    if (!tony_args_value(notebook_opts, "src_dir")) {
        char *abs = tony_abspath(nb);
        FILE *f = fopen(abs, "r");
        if (!f) {
            free(abs);
            return tony_err(err, "--execute %s: cannot read it; give the path of a .ipynb file", nb);
        }
        fclose(f);
        char *slash = strrchr(abs, '/');
        *slash = '\0';
        tony_strv_push(a, "--src_dir");
        tony_strv_push(a, *abs ? abs : "/");
        free(abs);
        nb = tony_basename(nb);
    }
    const char *base = tony_basename(nb);
    size_t n = strlen(base);
    if (n > 6 && strcmp(base + n - 6, ".ipynb") == 0) n -= 6;
    *out_name = tony_sprintf("%.*s.executed.ipynb", (int)n, base);
    tony_strv_push(a, "--shell_env");
    tony_strv_pushf(a, "TONY_NOTEBOOK=%s", nb);
    tony_strv_push(a, "--shell_env");
    tony_strv_pushf(a, "TONY_NOTEBOOK_OUT=%s", *out_name);
    return 0;
}

static int idle_seconds(long long *secs, tony_error *err) {
    tony_conf *c = tony_conf_new();
    long long ms = 0;
    int rc = tony_confargs_load(notebook_opts, c, err);
    if (!rc) rc = tony_conf_get_duration_ms(c, TONY_KEY_NOTEBOOK_IDLE_TIMEOUT, 3600000, &ms, err);
    tony_conf_free(c);
    *secs = ms <= 0 ? 0 : ms < 1000 ? 1 : ms / 1000;
    return rc;
}

int tony_cmd_notebook(int argc, char **argv) {
    tony_strv positional = {0}, a = {0};
    tony_error err = {{0}};
    char *py = NULL, *out_name = NULL;
    int code = TONY_EXIT_USAGE;
    long long idle = 0;
    if (tony_args_parse(argc, argv, notebook_opts, &positional, &err)) goto fail;
    if (tony_args_get(notebook_opts, "help")->seen) {
        tony_args_usage("usage: tony notebook [--execute NB.ipynb] [options]\n"
                        "A Jupyter server (jupyter_server in the task's Python) as a job of one task of role " TONY_NOTEBOOK_ROLE
                        "\n(tony." TONY_NOTEBOOK_ROLE ".memory/vcores/gpus), reached through the coordinator with the "
                        "job's token;\nidle shutdown after " TONY_KEY_NOTEBOOK_IDLE_TIMEOUT ".",
                        notebook_opts);
        code = TONY_EXIT_OK;
        goto out;
    }
    if (positional.len) {
        tony_err(&err, "unexpected argument '%s' (to run a notebook as a job: --execute %s)", positional.items[0],
                 positional.items[0]);
        goto fail;
    }
    if (idle_seconds(&idle, &err)) goto fail;
    const char *nb = tony_args_value(notebook_opts, "execute");
    tony_strv_push(&a, "notebook");
    if (nb && execute_args(nb, &a, &out_name, &err)) goto fail;
    py = interpreter();
    tony_strv_push(&a, "--executes");
    /* The scripts in single quotes, their lines as they are: POSIX quoting,
     * for a task whose shell is /bin/sh (no bash, common/proc.h). Neither
     * script holds a single quote. */
    if (nb)
        tony_strv_pushf(&a, "exec %s -c '%s'", py, execute_py);
    else
        tony_strv_pushf(&a, "JUPYTER_TOKEN=\"$" TASKENV_READ_TOKEN "\" exec %s -c '%s' "
                                        "--ServerApp.ip=\"${" TASKENV_NM_HOST ":-$(hostname)}\" --ServerApp.port=\"$" TASKENV_TB_PORT "\" "
                                        "--ServerApp.port_retries=0 "
                                        "--ServerApp.open_browser=False --ServerApp.allow_remote_access=True --ServerApp.allow_root=True "
                                        "--ServerApp.root_dir=. --ServerApp.shutdown_no_activity_timeout=%lld "
                                        "--MappingKernelManager.cull_idle_timeout=%lld "
                                        "--MappingKernelManager.cull_interval=%lld "
                                        "--MappingKernelManager.cull_connected=True",
                                        py, jupyter_py, idle, idle, idle ? (idle / 4 > 60 ? 60 : idle / 4 + 1) : 300);
    tony_strv_push(&a, "--conf");
    tony_strv_push(&a, "tony.application.framework=standalone");
    tony_strv_push(&a, "--conf");
    tony_strv_push(&a, "tony." TONY_NOTEBOOK_ROLE ".instances=1");
    static const char *const passed[] = {"python_venv", "src_dir", "shell_env", "conf", "conf_file", "backend", "detach"};
    for (size_t i = 0; i < sizeof passed / sizeof *passed; i++) pass_on(&a, passed[i]);
    started_ctx ctx = {out_name, tony_args_get(notebook_opts, "detach")->seen, py};
    tony_submit_hooks hooks = {.check = check_jupyter, .started = say_where, .ctx = &ctx};
    code = tony_submit_run((int)a.len - 1, a.items + 1, &hooks);
    goto out;
fail:
    fprintf(stderr, "tony notebook: error: %s\n", err.msg);
out:
    free(py);
    free(out_name);
    tony_strv_free(&a);
    tony_strv_free(&positional);
    tony_args_free(notebook_opts);
    return code;
}
