/* tony: one binary, many verbs. The client verbs run on the user's machine;
 * `am` (the coordinator) and `executor` run inside the job's containers. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "am/am.h"
#include "backend/yarn/yarn_backend.h"
#include "client/client.h"
#include "client/notebook.h"
#include "client/scale.h"
#include "common/self.h"
#include "executor/executor.h"


typedef struct verb {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} verb;

static int run_am(int argc, char **argv) {
    if (argc == 1 && strcmp(argv[0], "--yarn") == 0) {
        /* the backend reads its container; the coordinator runs the job */
        tony_yarn_am_start s;
        if (tony_yarn_am_prepare(&s)) return 1;
        tony_am_options o = {.job_dir = s.job_dir, .app_id = s.app_id, .host = s.host, .yarn = true,
                             .history_mirror = s.history_mirror, .backend_data = s.credentials};
        int code = tony_am_main(&o);
        tony_yarn_am_release(&s);
        return code;
    }
    /* --slurm: in the batch step of the job's Slurm job; executors on other
     * nodes reach it at this node's name. */
    bool slurm = argc == 2 && strcmp(argv[0], "--slurm") == 0;
    if (slurm) argv++, argc--;
    if (argc != 1 || argv[0][0] == '-') {
        fprintf(stderr, "usage: tony am [--slurm] JOB_DIR | --yarn (started by `tony submit`)\n");
        return 2;
    }
    char host[256] = "";
    if (slurm && gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "127.0.0.1");
    tony_am_options o = {.job_dir = argv[0], .backend = slurm ? "slurm" : NULL, .listen_all = slurm,
                         .host = slurm ? host : NULL};
    return tony_am_main(&o);
}

static int run_executor(int argc, char **argv) {
    (void)argv;
    if (argc != 0) {
        fprintf(stderr, "usage: tony executor (started by the coordinator in each container)\n");
        return 2;
    }
    return tony_executor_main();
}

static const verb verbs[] = {
    {"submit", tony_cmd_submit, "submit a job and follow it to the end (TonY's flags)"},
    {"status", tony_cmd_status, "show a job's state and tasks"},
    {"kill", tony_cmd_kill, "kill a running job"},
    {"scale", tony_cmd_scale, "resize a role of a running elastic job (tony scale JOB worker=4)"},
    {"logs", tony_cmd_logs, "print the tasks' stdout and stderr"},
    {"list", tony_cmd_list, "list jobs"},
    {"history", tony_cmd_history, "past jobs from the history files; one job's events, metrics and right-sizing"},
    {"conf", tony_cmd_conf, "list every configuration key: type, default, backends (tony conf keys [--json])"},
    {"notebook", tony_cmd_notebook, "a Jupyter server as a job, behind the coordinator (or --execute NB.ipynb as a job)"},
    {"portal", tony_cmd_portal, "serve a web UI over the job history (TonY's history portal)"},
    {"pack", tony_cmd_pack, NULL},
    {"am", run_am, NULL},
    {"executor", run_executor, NULL},
};

static const verb *find_verb(const char *name) {
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++)
        if (strcmp(name, verbs[i].name) == 0) return &verbs[i];
    return NULL;
}

static void usage(FILE *out) {
    fprintf(out, "tony %s: distributed ML jobs (TensorFlow, PyTorch, MXNet, JAX, XGBoost) on one machine or a cluster\n\n"
                 "usage: tony VERB [options]   (tony VERB --help for a verb's options)\n\n", TONY_VERSION);
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++)
        if (verbs[i].help) fprintf(out, "  %-8s %s\n", verbs[i].name, verbs[i].help);
    fprintf(out, "\nEvery verb takes --conf K=V (repeatable) and --conf_file FILE, layered as for submit: built-in\n"
                 "defaults, then --conf_file or ./tony.xml, then $TONY_CONF_DIR/tony-site.xml, then --conf.\n");
}

int main(int argc, char **argv) {
    tony_self_tidy_cmdline(argc, argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        if (argc < 3) {
            usage(stdout);
            return 0;
        }
        /* tony help VERB: that verb's own options, as VERB --help prints them */
        const verb *v = find_verb(argv[2]);
        if (!v || !v->help) {
            fprintf(stderr, "tony help: unknown verb '%s'\n\n", argv[2]);
            usage(stderr);
            return 2;
        }
        char *help_argv[] = {(char *)"--help", NULL};
        return v->run(1, help_argv);
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("tony %s\n", TONY_VERSION);
        return 0;
    }
    const verb *v = find_verb(argv[1]);
    if (v) return v->run(argc - 2, argv + 2);
    fprintf(stderr, "tony: unknown verb '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
