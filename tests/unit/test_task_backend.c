/* Unit tests of the task half's list of backends (backend/task.h): the
 * table an executor's env names (TONY_BACKEND, written by the coordinator),
 * "none" for a missing or unknown name, one table per coordinator backend
 * under the same name, and that the executor's questions reach the named
 * table: YARN's own answers (its token file, its coordinator file on HDFS)
 * only when the env says yarn, none's elsewhere. YARN's answers themselves
 * are exercised in a real container by tests/e2e/test_yarn_adopt.py and the
 * credential tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/client.h"
#include "backend/task.h"
#include "backend/yarn/coordfile.h"
#include "common/fs.h"
#include "common/jobdir.h"
#include "common/taskenv.h"

static void test_env_names_the_table(void **state) {
    (void)state;
    setenv(TASKENV_BACKEND, "yarn", 1);
    const tony_task_backend_ops *b = tony_task_backend();
    assert_string_equal(b->name, "yarn");
    assert_non_null(b->secret);
    assert_non_null(b->update_credentials);
    assert_non_null(b->find_coordinator);
    setenv(TASKENV_BACKEND, "local", 1);
    assert_string_equal(tony_task_backend()->name, "local");
    setenv(TASKENV_BACKEND, "slurm", 1);
    assert_string_equal(tony_task_backend()->name, "slurm");
    setenv(TASKENV_BACKEND, "mesos", 1);
    assert_string_equal(tony_task_backend()->name, "none");
    setenv(TASKENV_BACKEND, "", 1);
    assert_string_equal(tony_task_backend()->name, "none");
    unsetenv(TASKENV_BACKEND);
    assert_string_equal(tony_task_backend()->name, "none");
    assert_string_equal(tony_task_backend_find(NULL)->name, "none");
}

/* The coordinator writes its backend's name; every backend a job can run on
 * (the client's list, the same names) has a task table of that name. */
static void test_every_backend_has_a_table(void **state) {
    (void)state;
    const char *names[] = {"local", "yarn", "slurm"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        assert_non_null(tony_client_backend_find(names[i]));
        assert_string_equal(tony_task_backend_find(names[i])->name, names[i]);
    }
}

static void test_questions_reach_yarn_only_on_yarn(void **state) {
    (void)state;
    unsetenv("HADOOP_TOKEN_FILE_LOCATION");
    /* YARN's reader of the coordinator file refuses an env that names the
     * file but not the NameNodes: an answer only YARN gives. */
    setenv(TONY_YARN_COORDINATOR_FILE_ENV, "/user/x/.tony/app/coordinator.json", 1);
    char *s = NULL;
    tony_error err = {{0}};

    setenv(TASKENV_BACKEND, "yarn", 1);
    assert_int_equal(tony_backend_task_secret(&s, &err), -1);
    assert_non_null(strstr(err.msg, "HADOOP_TOKEN_FILE_LOCATION"));
    assert_int_equal(tony_backend_task_update_credentials("x", 1, &err), -1);
    assert_non_null(strstr(err.msg, "HADOOP_TOKEN_FILE_LOCATION"));
    assert_int_equal(tony_backend_task_find_coordinator(&s, &err), -1);
    assert_non_null(strstr(err.msg, TONY_YARN_COORDINATOR_FILE_ENV));
    assert_null(s);

    for (int i = 0; i < 2; i++) {
        if (i == 0) setenv(TASKENV_BACKEND, "local", 1);
        else unsetenv(TASKENV_BACKEND);
        const char *shown = i == 0 ? "TONY_BACKEND=local" : "TONY_BACKEND=(not set)";
        err = (tony_error){{0}};
        assert_int_equal(tony_backend_task_secret(&s, &err), -1);
        assert_non_null(strstr(err.msg, TASKENV_SECRET " is not set"));
        assert_non_null(strstr(err.msg, shown));
        assert_int_equal(tony_backend_task_update_credentials("x", 1, &err), -1);
        assert_non_null(strstr(err.msg, shown));
        s = (char *)"stale";
        assert_int_equal(tony_backend_task_find_coordinator(&s, &err), 1);
        assert_null(s);
    }
    unsetenv(TONY_YARN_COORDINATOR_FILE_ENV);
    unsetenv(TASKENV_BACKEND);
}

/* On Slurm the user's process loses the one-task step's layout (SLURM_PROCID=0,
 * SLURM_NTASKS=1 in every task, which Lightning and JAX would take for the
 * job's) and keeps what is true of the job; elsewhere nothing changes. */
static void test_slurm_user_env_drops_the_step_layout(void **state) {
    (void)state;
    static const char *const layout[] = {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_LOCALID",
                                         "SLURM_NODEID", "SLURM_NNODES", "SLURM_NODELIST", "SLURM_STEP_NODELIST",
                                         "SLURM_STEP_NUM_TASKS", "SLURM_TASKS_PER_NODE"};
    static const char *const kept[] = {"SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_JOB_NODELIST", "SLURMD_NODENAME",
                                       "SLURM_JOB_NUM_NODES", "RANK"};
    for (int backend = 0; backend < 2; backend++) {
        setenv(TASKENV_BACKEND, backend ? "slurm" : "local", 1);
        tony_env env = {0};
        for (size_t i = 0; i < sizeof layout / sizeof *layout; i++) tony_env_set(&env, layout[i], "1");
        for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) tony_env_set(&env, kept[i], "7");
        tony_backend_task_user_env(&env);
        for (size_t i = 0; i < sizeof layout / sizeof *layout; i++) {
            if (backend) assert_null(tony_env_get(&env, layout[i]));
            else assert_non_null(tony_env_get(&env, layout[i]));
        }
        for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) assert_non_null(tony_env_get(&env, kept[i]));
        tony_env_free(&env);
    }
    unsetenv(TASKENV_BACKEND);
}

/* A local task in an image reads the secret from the job dir it names. */
static void test_local_secret_from_the_job_dir(void **state) {
    (void)state;
    char dir[] = "/tmp/tony-task-backend-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = tony_path_join(dir, TONY_JOBDIR_SECRET);
    assert_int_equal(tony_write_file(path, "s3cret\n", 7, 0600, NULL), 0);
    setenv(TASKENV_BACKEND, "local", 1);
    setenv(TASKENV_SECRET_JOB_DIR, dir, 1);
    char *s = NULL;
    tony_error err = {{0}};
    assert_int_equal(tony_backend_task_secret(&s, &err), 0);
    assert_string_equal(s, "s3cret");
    free(s);
    unlink(path);
    assert_int_equal(tony_backend_task_secret(&s, &err), -1);
    assert_non_null(strstr(err.msg, TONY_JOBDIR_SECRET));
    unsetenv(TASKENV_SECRET_JOB_DIR);
    unsetenv(TASKENV_BACKEND);
    rmdir(dir);
    free(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_names_the_table),
        cmocka_unit_test(test_every_backend_has_a_table),
        cmocka_unit_test(test_questions_reach_yarn_only_on_yarn),
        cmocka_unit_test(test_slurm_user_env_drops_the_step_layout),
        cmocka_unit_test(test_local_secret_from_the_job_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
