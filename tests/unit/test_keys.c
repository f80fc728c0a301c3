/* The registry of tony.* keys (conf/keys.h): every entry typed and
 * described, every TONY_KEY_* name in it, <role> patterns matched, and
 * values refused when they are not of the key's type. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/strv.h"
#include "conf/conf.h"
#include "conf/keycheck.h"
#include "conf/keys.h"

static void test_every_entry_is_typed_and_described(void **state) {
    (void)state;
    size_t n;
    const tony_key *k = tony_keys(&n);
    assert_true(n > 100);
    for (size_t i = 0; i < n; i++) {
        if (strncmp(k[i].name, "tony.", 5) != 0) fail_msg("%s: not a tony.* key", k[i].name);
        if (!k[i].doc || strlen(k[i].doc) < 10) fail_msg("%s: no doc", k[i].name);
        if (!tony_key_type_name(k[i].type) || !tony_key_type_form(k[i].type)) fail_msg("%s: no type", k[i].name);
        if (!*tony_key_backends_text(k[i].backends)) fail_msg("%s: no backend", k[i].name);
        if (k[i].why_not && strlen(k[i].why_not) < 10) fail_msg("%s: a why too short", k[i].name);
        /* a default is a value of the key's own type */
        tony_error err = {0};
        if (k[i].value && tony_key_check_value(&k[i], k[i].name, k[i].value, NULL, &err))
            fail_msg("%s: its default: %s", k[i].name, err.msg);
        for (size_t j = 0; j < i; j++)
            if (strcmp(k[i].name, k[j].name) == 0) fail_msg("%s: twice", k[i].name);
        /* an exact key is found as itself, not as a pattern's match */
        if (!tony_key_is_pattern(&k[i])) assert_ptr_equal(tony_key_find(k[i].name), &k[i]);
    }
}

/* Each name code reads a key through is in the registry. */
static void test_every_name_is_registered(void **state) {
    (void)state;
    static const char *const names[] = {
        TONY_KEY_YARN_QUEUE, TONY_KEY_YARN_DIST_CACHE, TONY_KEY_YARN_MAX_APP_ATTEMPTS, TONY_KEY_APP_ID,
        TONY_KEY_APP_SHARED_DIR, TONY_KEY_APP_NAME, TONY_KEY_APP_TYPE, TONY_KEY_APP_TAGS,
        TONY_KEY_APP_NODE_LABEL, TONY_KEY_APP_TIMEOUT, TONY_KEY_APP_MAX_EXCLUDED_NODES,
        TONY_KEY_APP_LOG_POLICIES, TONY_KEY_APP_FRAMEWORK, TONY_KEY_APP_DISTRIBUTED_MODE,
        TONY_KEY_APP_UNTRACKED_JOBTYPES, TONY_KEY_APP_SIDECAR_JOBTYPES, TONY_KEY_APP_STOP_ON_FAILURE_JOBTYPES,
        TONY_KEY_APP_FAIL_ON_WORKER_FAILURE, TONY_KEY_APP_FAIL_FAST_LOCKSTEP, TONY_KEY_APP_RESTART_POLICY,
        TONY_KEY_APP_RESTART_BACKOFF_MS, TONY_KEY_APP_RESTART_BACKOFF_MAX_MS, TONY_KEY_APP_RESTART_MODE,
        TONY_KEY_APP_SIZING_MIN_RUN_MS, TONY_KEY_APP_SECURITY_ENABLED, TONY_KEY_APP_PREPARE_STAGE,
        TONY_KEY_APP_TRAINING_STAGE, TONY_KEY_APP_TENSORBOARD_LOG_DIR, TONY_KEY_APP_BACKEND,
        TONY_KEY_OTHER_NAMENODES, TONY_KEY_PYTHON_EXEC_PATH, TONY_KEY_TASK_MAX_TOTAL_INSTANCES,
        TONY_KEY_TASK_HEARTBEAT_INTERVAL_MS, TONY_KEY_TASK_MAX_MISSED_HEARTBEATS,
        TONY_KEY_TASK_METRICS_INTERVAL_MS, TONY_KEY_TASK_GPU_METRICS_ENABLED,
        TONY_KEY_TASK_EXECUTION_TIMEOUT_MS, TONY_KEY_TASK_LOG_MAX_SIZE, TONY_KEY_TASK_PROGRESS_TIMEOUT,
        TONY_KEY_TASK_PY_SPY_PATH, TONY_KEY_GPU_EXEC_PATH, TONY_KEY_AM_RETRY_COUNT, TONY_KEY_AM_MEMORY,
        TONY_KEY_AM_VCORES, TONY_KEY_AM_GPUS, TONY_KEY_AM_WAIT_CLIENT_STOP_SEC, TONY_KEY_AM_COMMAND,
        TONY_KEY_AM_RESOURCES, TONY_KEY_AM_RECOVERY_TIMEOUT_MS, TONY_KEY_WORKER_TIMEOUT,
        TONY_KEY_TENSORBOARD_INSTANCES, TONY_KEY_TENSORBOARD_COMMAND, TONY_KEY_CONTAINER_ALLOCATION_TIMEOUT,
        TONY_KEY_CONTAINER_REGISTRATION_TIMEOUT, TONY_KEY_CONTAINERS_COMMAND, TONY_KEY_CONTAINERS_RESOURCES,
        TONY_KEY_CONTAINERS_ENVS, TONY_KEY_EXECUTION_ENVS, TONY_KEY_DOCKER_ENABLED,
        TONY_KEY_DOCKER_CONTAINERS_IMAGE, TONY_KEY_DOCKER_AM_IMAGE, TONY_KEY_DOCKER_CONTAINERS_MOUNT,
        TONY_KEY_DOCKER_RUNTIME, TONY_KEY_DOCKER_NETWORK, TONY_KEY_HISTORY_LOCATION,
        TONY_KEY_HISTORY_INTERMEDIATE, TONY_KEY_HISTORY_FINISHED, TONY_KEY_HISTORY_FINISHED_TZ,
        TONY_KEY_KEYTAB_USER, TONY_KEY_KEYTAB_LOCATION, TONY_KEY_KEYTAB_REFRESH_TOKENS, TONY_KEY_LOCAL_ROOT,
        TONY_KEY_LOCAL_VCORES, TONY_KEY_LOCAL_MEMORY, TONY_KEY_LOCAL_GPUS, TONY_KEY_SLURM_ACCOUNT,
        TONY_KEY_SLURM_PARTITION, TONY_KEY_SLURM_STAGING_DIR,
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!tony_key_find(names[i])) fail_msg("%s is read but not in the registry", names[i]);
    static const char *const fmts[] = {
        TONY_KEY_ROLE_INSTANCES_FMT, TONY_KEY_ROLE_MEMORY_FMT, TONY_KEY_ROLE_VCORES_FMT, TONY_KEY_ROLE_GPUS_FMT,
        TONY_KEY_ROLE_COMMAND_FMT, TONY_KEY_ROLE_RESOURCES_FMT, TONY_KEY_ROLE_NODE_LABEL_FMT,
        TONY_KEY_ROLE_RESTART_POLICY_FMT, TONY_KEY_ROLE_MAX_INSTANCES_FMT, TONY_KEY_DOCKER_ROLE_IMAGE_FMT,
        TONY_KEY_SLURM_ROLE_PARTITION_FMT,
    };
    for (size_t i = 0; i < sizeof fmts / sizeof *fmts; i++) {
        char key[128];
        snprintf(key, sizeof key, fmts[i], "evaluator");
        const tony_key *k = tony_key_find(key);
        if (!k || !tony_key_is_pattern(k)) fail_msg("%s: no <role> pattern", key);
    }
}

static void test_patterns(void **state) {
    (void)state;
    const tony_key *k = tony_key_find("tony.worker.instances");
    assert_non_null(k);
    assert_string_equal(k->name, "tony.<role>.instances");
    assert_int_equal(k->type, TONY_KEY_INT);
    assert_true(tony_key_matches(k, "tony.evaluator.instances"));
    assert_false(tony_key_matches(k, "tony.Worker.instances")); /* a job type is lowercase */
    assert_false(tony_key_matches(k, "tony..instances"));
    assert_false(tony_key_matches(k, "tony.worker.instances.x"));
    assert_false(tony_key_matches(k, "tony.a.b.instances"));
    assert_string_equal(tony_key_find("tony.am.memory")->name, "tony.am.memory"); /* exact beats the pattern */
    assert_string_equal(tony_key_find("tony.docker.chief.image")->name, "tony.docker.<role>.image");
    assert_string_equal(tony_key_find("tony.slurm.ps.partition")->name, "tony.slurm.<role>.partition");
    assert_string_equal(tony_key_find("tony.task.max-total-fpga")->name, "tony.task.max-total-<resource>");
    assert_string_equal(tony_key_find("tony.version-info.version")->name, "tony.version-info.<field>");
    assert_null(tony_key_find("tony.worker.fpga"));
    assert_null(tony_key_find("tony.no.such.key"));
    /* TonY's keys tony accepts and ignores say why */
    k = tony_key_find("tony.task.executor.jvm.opts");
    assert_non_null(k);
    assert_non_null(k->why_not);
    assert_null(tony_key_find("tony.worker.memory")->why_not);
    assert_string_equal(tony_key_backends_text(tony_key_find("tony.local.vcores")->backends), "local");
    assert_string_equal(tony_key_backends_text(tony_key_find("tony.worker.instances")->backends), "local,yarn,slurm");
}

static bool valid(const char *key, const char *value) {
    tony_error err = {0};
    const tony_key *k = tony_key_find(key);
    if (!k) fail_msg("%s: not registered", key);
    return tony_key_check_value(k, key, value, "--conf", &err) == 0;
}

static void test_type_checks(void **state) {
    (void)state;
    assert_true(valid("tony.worker.instances", "4"));
    assert_true(valid("tony.worker.instances", " 4 "));
    assert_true(valid("tony.worker.instances", ""));   /* blank: the default */
    assert_false(valid("tony.worker.instances", "two"));
    assert_false(valid("tony.worker.instances", "4x"));
    assert_true(valid("tony.worker.memory", "2g"));
    assert_true(valid("tony.worker.memory", "512M"));
    assert_true(valid("tony.worker.memory", "2048"));
    assert_false(valid("tony.worker.memory", "2gb"));
    assert_false(valid("tony.worker.memory", "-1"));
    assert_true(valid("tony.docker.enabled", "TRUE"));
    assert_false(valid("tony.docker.enabled", "yes"));
    assert_true(valid("tony.task.progress-timeout", "30m"));
    assert_false(valid("tony.task.progress-timeout", "30 minutes"));
    assert_true(valid("tony.application.timeout", "60000"));
    assert_false(valid("tony.application.timeout", "1m")); /* ms keys are plain numbers, as TonY reads them */
    assert_true(valid("tony.container.allocation.timeout", "-1"));
    assert_true(valid("tony.application.name", "anything at all"));

    tony_error err = {0};
    const tony_key *k = tony_key_find("tony.worker.instances");
    assert_int_equal(tony_key_check_value(k, "tony.worker.instances", "two", "tony.xml", &err), -1);
    assert_non_null(strstr(err.msg, "tony.worker.instances must be an integer (e.g. 4), got 'two' from tony.xml"));
    assert_non_null(strstr(err.msg, "its type: int"));
}

/* The check at submit: a bad value of a key the user set is refused, one
 * of a default never is (its source is "default"). */
static void test_check_keys_refuses_a_bad_value(void **state) {
    (void)state;
    tony_conf *c = tony_conf_new();
    tony_conf_load_defaults(c);
    tony_error err = {0};
    assert_int_equal(tony_conf_check_keys(c, NULL, &err), 0);
    tony_conf_set_cli(c, "tony.worker.instances", "two");
    assert_int_equal(tony_conf_check_keys(c, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "tony.worker.instances must be an integer (e.g. 4), got 'two' from --conf"));
    tony_conf_set(c, "tony.worker.instances", "2", "/home/u/tony.xml");
    tony_conf_set(c, "tony.am.memory", "lots", "/home/u/tony.xml");
    assert_int_equal(tony_conf_check_keys(c, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "tony.am.memory must be a memory size in MB"));
    assert_non_null(strstr(err.msg, "got 'lots' from /home/u/tony.xml (its type: size"));
    tony_conf_set(c, "tony.am.memory", "4g", "/home/u/tony.xml");
    tony_conf_set(c, "myjob.learning-rate", "fast", "--conf"); /* the user's own key: never checked */
    assert_int_equal(tony_conf_check_keys(c, NULL, &err), 0);
    tony_conf_free(c);
}

/* An unknown tony.* key is refused even when no known key is close, unless
 * it is a resource of a job type the job has (TonY's tony.<role>.<resource>). */
static void test_unknown_keys_are_refused(void **state) {
    (void)state;
    tony_conf *c = tony_conf_new();
    tony_conf_load_defaults(c);
    tony_conf_set_cli(c, "tony.worker.instances", "1");
    tony_conf_set_cli(c, "tony.worker.fpga", "1");
    tony_error err = {0};
    tony_strv unknown = {0};
    assert_int_equal(tony_conf_check_keys(c, &unknown, &err), 0);
    assert_int_equal(unknown.len, 1);
    tony_strv_free(&unknown);
    tony_conf_set_cli(c, "tony.application.fail-on-worker-failure", "true");
    assert_int_equal(tony_conf_check_keys(c, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "did you mean tony.application.fail-on-worker-failure-enabled?"));
    tony_conf_unset(c, "tony.application.fail-on-worker-failure");
    tony_conf_set_cli(c, "tony.nothing.like.this", "1");
    assert_int_equal(tony_conf_check_keys(c, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "unknown key tony.nothing.like.this (from --conf): tony reads no such key"));
    tony_conf_unset(c, "tony.nothing.like.this");
    tony_conf_set_cli(c, "tony.evaluator.fpga", "1"); /* no evaluator in this job */
    assert_int_equal(tony_conf_check_keys(c, NULL, &err), -1);
    tony_conf_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_entry_is_typed_and_described),
        cmocka_unit_test(test_every_name_is_registered),
        cmocka_unit_test(test_patterns),
        cmocka_unit_test(test_type_checks),
        cmocka_unit_test(test_check_keys_refuses_a_bad_value),
        cmocka_unit_test(test_unknown_keys_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
