/* Tasks in their role's image (container.h): the runtime's command lines
 * for checking an image, running a task, and finding and removing a
 * job's containers. Rootful podman with runc or docker: both
 * take the same words for everything used here. */
#include "backend/container.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/self.h"
#include "common/strv.h"
#include "conf/keys.h"

#define RUNTIME_KEY TONY_KEY_DOCKER_RUNTIME
#define MOUNT_KEY TONY_KEY_DOCKER_CONTAINERS_MOUNT
#define CHECK_TIMEOUT_MS 60000
#define REMOVE_TIMEOUT_MS 30000

static const char *const runtimes[] = {"podman", "docker"};

/* Whether the runtime answers: a docker CLI whose daemon is not running
 * (or a stub called docker) fails `version`. */
static bool answers(const char *path) {
    char *argv[] = {(char *)path, "version", NULL};
    tony_buf out = {0}, errout = {0};
    int code = -1;
    int rc = tony_proc_run(argv, 10000, &out, &errout, &code, NULL);
    tony_buf_free(&out);
    tony_buf_free(&errout);
    return rc == 0 && code == 0;
}

int tony_container_runtime(const char *want, char **path, tony_error *err) {
    *path = NULL;
    if (want && *want) {
        if (strcmp(want, "podman") != 0 && strcmp(want, "docker") != 0)
            return tony_err(err, RUNTIME_KEY "=%s: tony runs images with podman or docker; set one of them", want);
        char *p = tony_proc_which(want);
        if (!p)
            return tony_err(err, RUNTIME_KEY "=%s but there is no %s on PATH: install it (Debian: apt-get install "
                                 "podman runc), or set " RUNTIME_KEY " to the other runtime", want, want);
        if (!answers(p)) {
            tony_err(err, RUNTIME_KEY "=%s but `%s version` fails (is its daemon running?)", want, p);
            free(p);
            return -1;
        }
        *path = p;
        return 0;
    }
    for (size_t i = 0; i < sizeof runtimes / sizeof *runtimes; i++) {
        char *p = tony_proc_which(runtimes[i]);
        if (p && answers(p)) {
            *path = p;
            return 0;
        }
        free(p);
    }
    return tony_err(err, "tony.docker.enabled=true but neither podman nor docker works on this machine: install "
                         "podman (Debian: apt-get install podman runc), or set tony.docker.enabled=false");
}

typedef struct mount_spec {
    char *src, *dst;
    bool ro;
} mount_spec;

/* One entry of TonY's mount syntax, src:dst[:ro|rw]; both paths absolute. */
static int parse_mount(const char *entry, mount_spec *m, tony_error *err) {
    memset(m, 0, sizeof *m);
    char *copy = tony_strdup(entry);
    char *dst = strchr(copy, ':');
    char *mode = dst ? strchr(dst + 1, ':') : NULL;
    if (dst) *dst++ = '\0';
    if (mode) *mode++ = '\0';
    int rc = 0;
    if (!dst || copy[0] != '/' || dst[0] != '/')
        rc = tony_err(err, MOUNT_KEY " entry '%s' is not src:dst[:ro|rw] with both paths absolute", entry);
    else if (mode && strcmp(mode, "ro") != 0 && strcmp(mode, "rw") != 0)
        rc = tony_err(err, MOUNT_KEY " entry '%s': the mode is ro or rw, not '%s'", entry, mode);
    if (rc == 0) {
        m->src = tony_strdup(copy);
        m->dst = tony_strdup(dst);
        m->ro = mode && strcmp(mode, "ro") == 0;
    }
    free(copy);
    return rc;
}

/* The limits a container starts with: this process's own. The runtimes'
 * defaults are higher than a process without CAP_SYS_RESOURCE may set
 * (runc then refuses to start), and a task has always had its
 * coordinator's limits. nproc above pid_max is refused too. */
static void push_ulimits(tony_strv *out) {
    struct rlimit nofile, nproc;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
        tony_strv_push(out, "--ulimit");
        tony_strv_pushf(out, "nofile=%llu:%llu", (unsigned long long)nofile.rlim_cur,
                        (unsigned long long)nofile.rlim_max);
    }
    if (getrlimit(RLIMIT_NPROC, &nproc) == 0) {
        unsigned long long max = 32768, cur, hard;
        char *text = NULL;
        long long pid_max;
        if (tony_read_file("/proc/sys/kernel/pid_max", &text, NULL, NULL) == 0 && tony_parse_ll(tony_trim(text), &pid_max) &&
            pid_max > 0)
            max = (unsigned long long)pid_max;
        free(text);
        hard = nproc.rlim_max == RLIM_INFINITY || nproc.rlim_max > max ? max : nproc.rlim_max;
        cur = nproc.rlim_cur == RLIM_INFINITY || nproc.rlim_cur > hard ? hard : nproc.rlim_cur;
        tony_strv_push(out, "--ulimit");
        tony_strv_pushf(out, "nproc=%llu:%llu", cur, hard);
    }
}

static int check_image(const char *runtime, const tony_role *r, tony_error *err) {
    char *key = tony_sprintf(TONY_KEY_DOCKER_ROLE_IMAGE_FMT, r->name);
    char *inspect[] = {(char *)runtime, "image", "inspect", "--format", "{{.Id}}", r->docker_image, NULL};
    tony_buf out = {0}, errout = {0};
    int code = -1;
    int rc = tony_proc_run(inspect, CHECK_TIMEOUT_MS, &out, &errout, &code, err);
    if (rc == 0 && code != 0)
        rc = tony_err(err, "image %s (%s or tony.docker.containers.image, for %s) is not in %s's store: build or "
                           "import it there first (tony pulls from no registry)",
                      r->docker_image, key, r->name, runtime);
    if (rc == 0) {
        /* A task's command is a shell line: an image without /bin/sh
         * cannot run one. */
        tony_strv argv = {0};
        tony_strv_push(&argv, runtime);
        tony_strv_push(&argv, "run");
        tony_strv_push(&argv, "--rm");
        tony_strv_push(&argv, "--network=none");
        push_ulimits(&argv);
        tony_strv_push(&argv, "--entrypoint=");
        tony_strv_push(&argv, r->docker_image);
        tony_strv_push(&argv, "/bin/sh");
        tony_strv_push(&argv, "-c");
        tony_strv_push(&argv, ":");
        tony_buf_free(&out);
        tony_buf_free(&errout);
        rc = tony_proc_run(argv.items, CHECK_TIMEOUT_MS, &out, &errout, &code, err);
        if (rc == 0 && code != 0)
            rc = tony_err(err, "image %s (%s, for %s) cannot run /bin/sh (%s run: %s): a task's command is a shell "
                               "line; use an image with a shell",
                          r->docker_image, key, r->name, runtime, errout.data ? tony_trim(errout.data) : "failed");
        tony_strv_free(&argv);
    }
    tony_buf_free(&out);
    tony_buf_free(&errout);
    free(key);
    return rc;
}

static int check_mounts(const tony_role *r, tony_error *err) {
    tony_strv entries = {0};
    tony_split_csv(r->docker_mounts, &entries);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < entries.len; i++) {
        mount_spec m;
        if (parse_mount(entries.items[i], &m, err)) {
            rc = tony_err_wrap(err, "image %s", r->docker_image);
            break;
        }
        if (!tony_file_exists(m.src))
            rc = tony_err(err, MOUNT_KEY " entry '%s': its source %s does not exist on this machine (image %s)",
                          entries.items[i], m.src, r->docker_image);
        free(m.src);
        free(m.dst);
    }
    tony_strv_free(&entries);
    return rc;
}

/* r's checks, the runtime found once (*runtime) and each image once
 * (checked). */
static int check_role(const tony_role *r, char **runtime, tony_strv *checked, tony_error *err) {
    if (!*runtime && tony_container_runtime(r->docker_runtime, runtime, err))
        return tony_err_wrap(err, "image %s", r->docker_image);
    if (check_mounts(r, err)) return -1;
    if (tony_strv_contains(checked, r->docker_image)) return 0;
    tony_strv_push(checked, r->docker_image);
    return check_image(*runtime, r, err);
}

int tony_container_check_plan(const tony_plan *plan, bool am, tony_error *err) {
    char *runtime = NULL;
    tony_strv checked = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < plan->nroles; i++)
        if (plan->roles[i].docker_image) rc = check_role(&plan->roles[i], &runtime, &checked, err);
    if (rc == 0 && am && plan->am_image.docker_image) rc = check_role(&plan->am_image, &runtime, &checked, err);
    tony_strv_free(&checked);
    free(runtime);
    return rc;
}

/* Variables the image's own values must win for: the host's PATH, HOME
 * or loader settings name places the image does not have. */
static bool host_only(const char *kv) {
    static const char *const names[] = {"PATH=", "HOME=", "HOSTNAME=", "PWD=", "TERM=", "TMPDIR=", "LD_"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (tony_str_starts_with(kv, names[i])) return true;
    return false;
}

static void push_volume(tony_strv *out, const char *src, const char *dst, bool ro) {
    tony_strv_push(out, "--volume");
    tony_strv_pushf(out, "%s:%s%s", src, dst, ro ? ":ro" : "");
}

void tony_container_run_argv(const tony_container_run *r, tony_strv *out) {
    tony_strv_push(out, r->runtime);
    tony_strv_push(out, "run");
    /* In the foreground: the runtime's process is the container's main
     * process for the backend, and hands it the signals it gets. --init:
     * a pid 1 that forwards them to the executor and reaps. */
    tony_strv_push(out, "--rm");
    tony_strv_push(out, "--init");
    tony_strv_pushf(out, "--name=%s", r->name);
    tony_strv_pushf(out, "--label=%s=%s", TONY_CONTAINER_LABEL_APP, r->app_id);
    tony_strv_pushf(out, "--network=%s", r->network && *r->network ? r->network : "host");
    if (r->cgroups) tony_strv_pushf(out, "--cgroups=%s", r->cgroups);
    push_ulimits(out);
    push_volume(out, r->job_dir, r->job_dir, false);
    if (r->self_root) push_volume(out, r->self_root, r->self_root, true);
    tony_strv entries = {0};
    tony_split_csv(r->mounts, &entries);
    for (size_t i = 0; i < entries.len; i++) {
        mount_spec m;
        if (parse_mount(entries.items[i], &m, NULL)) continue; /* refused at submit */
        push_volume(out, m.src, m.dst, m.ro);
        free(m.src);
        free(m.dst);
    }
    tony_strv_free(&entries);
    tony_strv_pushf(out, "--workdir=%s", r->work_dir);
    if (r->memory_mb > 0) {
        /* memory-swap = memory: the limit is the task's memory, not more
         * through swap */
        tony_strv_pushf(out, "--memory=%lldm", r->memory_mb);
        tony_strv_pushf(out, "--memory-swap=%lldm", r->memory_mb);
    }
    if (r->vcores > 0) tony_strv_pushf(out, "--cpus=%d", r->vcores);
    if (r->ngpus > 0) {
        for (int i = 0; i < r->ngpus; i++) tony_strv_pushf(out, "--device=/dev/nvidia%d", r->gpu_ids[i]);
        static const char *const shared[] = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"};
        for (size_t i = 0; i < sizeof shared / sizeof *shared; i++)
            if (tony_file_exists(shared[i])) tony_strv_pushf(out, "--device=%s", shared[i]);
    }
    for (size_t i = 0; r->env && i < r->env->kv.len; i++) {
        const char *kv = r->env->kv.items[i];
        const char *eq = strchr(kv, '=');
        if (!eq || host_only(kv)) continue;
        tony_strv_push(out, "--env");
        tony_strv_pushf(out, "%.*s", (int)(eq - kv), kv);
    }
    tony_strv_push(out, "--entrypoint=");
    tony_strv_push(out, r->image);
    for (char *const *a = r->argv; *a; a++) tony_strv_push(out, *a);
}

static void remove_names(const char *runtime, const tony_strv *names) {
    if (names->len == 0) return;
    tony_strv argv = {0};
    tony_strv_push(&argv, runtime);
    tony_strv_push(&argv, "rm");
    tony_strv_push(&argv, "--force");
    tony_strv_push(&argv, "--time=0");
    for (size_t i = 0; i < names->len; i++) tony_strv_push(&argv, names->items[i]);
    tony_buf out = {0}, errout = {0};
    int code = -1;
    tony_error err;
    if (tony_proc_run(argv.items, REMOVE_TIMEOUT_MS, &out, &errout, &code, &err))
        tony_warn("removing containers: %s", err.msg);
    tony_buf_free(&out);
    tony_buf_free(&errout);
    tony_strv_free(&argv);
}

void tony_container_remove(const char *runtime, const char *name) {
    tony_strv names = {0};
    tony_strv_push(&names, name);
    /* one already gone makes the runtime exit non-zero, which is no error here */
    remove_names(runtime, &names);
    tony_strv_free(&names);
}

int tony_container_sweep(const char *runtime, const char *app_id) {
    char *filter = tony_sprintf("label=%s=%s", TONY_CONTAINER_LABEL_APP, app_id);
    char *argv[] = {(char *)runtime, "ps", "--all", "--quiet", "--filter", filter, NULL};
    tony_buf out = {0}, errout = {0};
    int code = -1;
    tony_strv ids = {0};
    if (tony_proc_run(argv, CHECK_TIMEOUT_MS, &out, &errout, &code, NULL) == 0 && code == 0 && out.data) {
        for (char *save = NULL, *id = strtok_r(out.data, "\n", &save); id; id = strtok_r(NULL, "\n", &save))
            if (*tony_trim(id)) tony_strv_push(&ids, id);
    }
    remove_names(runtime, &ids);
    int n = (int)ids.len;
    if (n) tony_info("removed %d container(s) of %s left behind", n, app_id);
    tony_strv_free(&ids);
    tony_buf_free(&out);
    tony_buf_free(&errout);
    free(filter);
    return n;
}

int tony_container_self(const char *cache_dir, char **root, tony_error *err) {
    *root = NULL;
    tony_self self;
    if (tony_self_find(&self, err)) return -1;
    int rc = 0;
    if (self.root)
        *root = tony_strdup(self.root);
    else if ((rc = tony_self_cached_tree(&self, cache_dir, root, err)))
        tony_err_wrap(err, "making a self-contained tony for the job's containers");
    tony_self_free(&self);
    return rc;
}
