/* backend/container: the runtime's `run` command line for a task in an
 * image (no env value in it, the job's label, the mounts in TonY's syntax,
 * the role's limits) and the checks a submit makes that need no runtime. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "backend/container.h"
#include "common/strv.h"

static int find(const tony_strv *v, const char *s) {
    for (size_t i = 0; i < v->len; i++)
        if (strcmp(v->items[i], s) == 0) return (int)i;
    return -1;
}

static void test_run_argv(void **state) {
    (void)state;
    tony_env env = {0};
    tony_env_set(&env, "TONY_AM_URL", "http://127.0.0.1:1");
    tony_env_set(&env, "PATH", "/host/only/bin");
    tony_env_set(&env, "JOB_NAME", "worker");
    int gpus[] = {1};
    char *cmd[] = {"/j/tony-self/bin/tony", "executor", NULL};
    tony_container_run r = {.runtime = "/usr/bin/podman", .image = "img:1", .mounts = "/data:/in:ro, /out:/out",
                            .name = "tony-app-worker-0-0-1", .app_id = "application_1_0001", .job_dir = "/j",
                            .self_root = "/j/tony-self", .work_dir = "/j/attempts/0/worker-0/work",
                            .memory_mb = 512, .vcores = 2, .gpu_ids = gpus, .ngpus = 1, .env = &env,
                            .argv = cmd};
    tony_strv argv = {0};
    tony_container_run_argv(&r, &argv);
    assert_string_equal(argv.items[0], "/usr/bin/podman");
    assert_string_equal(argv.items[1], "run");
    assert_true(find(&argv, "--rm") > 0);
    assert_true(find(&argv, "--label=" TONY_CONTAINER_LABEL_APP "=application_1_0001") > 0);
    assert_true(find(&argv, "--network=host") > 0);
    assert_true(find(&argv, "/j:/j") > 0);
    assert_true(find(&argv, "/j/tony-self:/j/tony-self:ro") > 0);
    assert_true(find(&argv, "/data:/in:ro") > 0);
    assert_true(find(&argv, "/out:/out") > 0);
    assert_true(find(&argv, "--memory=512m") > 0);
    assert_true(find(&argv, "--cpus=2") > 0);
    assert_true(find(&argv, "--device=/dev/nvidia1") > 0);
    assert_true(find(&argv, "--workdir=/j/attempts/0/worker-0/work") > 0);
    assert_int_equal(find(&argv, "--cgroups=no-conmon"), -1); /* the runtime's default unless asked */
    /* by name only, and not the host's PATH */
    assert_true(find(&argv, "TONY_AM_URL") > 0);
    assert_true(find(&argv, "JOB_NAME") > 0);
    assert_int_equal(find(&argv, "PATH"), -1);
    for (size_t i = 0; i < argv.len; i++) assert_null(strstr(argv.items[i], "http://127.0.0.1:1"));
    /* the image, then the command */
    int img = find(&argv, "img:1");
    assert_true(img > 0);
    assert_string_equal(argv.items[img + 1], "/j/tony-self/bin/tony");
    assert_string_equal(argv.items[img + 2], "executor");
    assert_int_equal((int)argv.len, img + 3);
    tony_strv_free(&argv);

    r.network = "none";
    r.memory_mb = 0;
    r.ngpus = 0;
    r.cgroups = "no-conmon"; /* Slurm's: conmon stays in the task's step */
    tony_container_run_argv(&r, &argv);
    assert_true(find(&argv, "--network=none") > 0);
    assert_true(find(&argv, "--cgroups=no-conmon") > 0);
    assert_int_equal(find(&argv, "--memory=512m"), -1);
    assert_int_equal(find(&argv, "--device=/dev/nvidia1"), -1);
    tony_strv_free(&argv);
    tony_env_free(&env);
}

static tony_role role(char *image, char *mounts, char *runtime) {
    return (tony_role){.name = "worker", .instances = 1, .docker_image = image, .docker_mounts = mounts,
                       .docker_runtime = runtime};
}

static void test_check_plan_refusals_without_a_runtime(void **state) {
    (void)state;
    tony_error err = {{0}};
    tony_role roles[1] = {role(NULL, NULL, NULL)};
    tony_plan plan = {.roles = roles, .nroles = 1};
    assert_int_equal(tony_container_check_plan(&plan, true, &err), 0); /* no image: nothing to check */

    roles[0] = role("img:1", NULL, "rkt");
    assert_int_equal(tony_container_check_plan(&plan, false, &err), -1);
    assert_non_null(strstr(err.msg, "tony.docker.runtime=rkt"));
    assert_non_null(strstr(err.msg, "img:1"));
}

/* The coordinator's image is checked only where something runs in it. */
static void test_check_plan_am_image(void **state) {
    (void)state;
    tony_error err = {{0}};
    tony_plan plan = {.single_node = true, .am_image = role("amimg:1", NULL, "rkt")};
    plan.am_image.name = "am";
    assert_int_equal(tony_container_check_plan(&plan, false, &err), 0);
    assert_int_equal(tony_container_check_plan(&plan, true, &err), -1);
    assert_non_null(strstr(err.msg, "tony.docker.runtime=rkt"));
    assert_non_null(strstr(err.msg, "amimg:1"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_argv),
        cmocka_unit_test(test_check_plan_refusals_without_a_runtime),
        cmocka_unit_test(test_check_plan_am_image),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
