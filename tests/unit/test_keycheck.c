/* The typo check of tony.* keys (conf/keycheck.h): misspelled keys, job
 * types and families refused with the key meant; TonY's own keys, per-type
 * resources, families under a prefix and keys outside tony.* let through;
 * the warning for a job type's sizing keys that do nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf/conf.h"
#include "conf/keycheck.h"

/* The check of a configuration of TonY's defaults plus key=value (--conf):
 * the error's text, or NULL when accepted; *noted: whether it was named as
 * unknown. */
static char *check(const char *key, const char *value, bool *noted) {
    tony_conf *c = tony_conf_new();
    tony_conf_load_defaults(c);
    tony_conf_set_cli(c, "tony.worker.instances", "2");
    tony_conf_set_cli(c, key, value);
    tony_strv unknown = {0};
    tony_error err = {0};
    char *msg = tony_conf_check_keys(c, &unknown, &err) ? strdup(err.msg) : NULL;
    if (noted) *noted = unknown.len == 1 && strcmp(unknown.items[0], key) == 0;
    tony_strv_free(&unknown);
    tony_conf_free(c);
    return msg;
}

static void refused_meaning(const char *key, const char *meant) {
    char *msg = check(key, "1", NULL);
    if (!msg) fail_msg("%s was accepted", key);
    char *want = tony_sprintf("did you mean %s?", meant);
    if (!strstr(msg, want) || !strstr(msg, key) || !strstr(msg, "--conf")) fail_msg("%s: %s", key, msg);
    free(want);
    free(msg);
}

static void accepted(const char *key, bool noted_as_unknown) {
    bool noted = false;
    char *msg = check(key, "1", &noted);
    if (msg) fail_msg("%s refused: %s", key, msg);
    assert_int_equal(noted, noted_as_unknown);
}

static void test_typos_are_refused_with_the_key_meant(void **state) {
    (void)state;
    refused_meaning("tony.worker.instance", "tony.worker.instances");
    refused_meaning("tony.worker.gpu", "tony.worker.gpus");
    refused_meaning("tony.am.memroy", "tony.am.memory");
    refused_meaning("tony.application.framwork", "tony.application.framework");
    /* a key of TonY's in the wrong family */
    refused_meaning("tony.application.python-exec-path", "tony.python-exec-path");
    /* a misspelled job type (it has no instances) or family */
    refused_meaning("tony.wroker.memory", "tony.worker.memory");
    refused_meaning("tony.applicaton.timeout", "tony.application.timeout");
}

static void test_what_tony_allows_passes(void **state) {
    (void)state;
    accepted("tony.worker.instances", false);
    accepted("tony.python-exec-path", false);
    accepted("tony.evaluator.memory", false);  /* a type this job may not have */
    accepted("tony.ps.memory", false);         /* not a typo of tony.am.memory */
    accepted("tony.docker.worker.image", false);
    accepted("tony.task.max-total-gpus", false);
    accepted("tony.application.dependency.worker.timeout.after.chief", false);
    accepted("my.own.setting", false);         /* outside tony.*: never checked */
    accepted("yarn.resourcemanager.address", false);
    accepted("tony.worker.fpga", true);        /* tony.<type>.<resource>: named, let through */
}

static void test_a_file_is_named(void **state) {
    (void)state;
    tony_conf *c = tony_conf_new();
    tony_conf_load_defaults(c);
    tony_conf_set(c, "tony.worker.memroy", "2g", "/home/u/tony.xml");
    tony_error err = {0};
    assert_int_equal(tony_conf_check_keys(c, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "tony.worker.memroy (from /home/u/tony.xml): did you mean tony.worker.memory?"));
    tony_conf_free(c);
}

/* The warnings for a configuration of TonY's defaults plus the pairs given
 * (--conf), joined by newlines ("" for none). */
static char *idle_warnings(const char *const *kv) {
    tony_conf *c = tony_conf_new();
    tony_conf_load_defaults(c);
    for (; *kv; kv += 2) tony_conf_set_cli(c, kv[0], kv[1]);
    tony_strv w = {0};
    tony_conf_idle_role_keys(c, &w);
    char *joined = tony_strv_join(&w, "\n");
    tony_strv_free(&w);
    tony_conf_free(c);
    return joined;
}

static void test_sizing_keys_of_a_type_without_instances_are_warned_about(void **state) {
    (void)state;
    /* single-node: the coordinator's keys size the command */
    char *w = idle_warnings((const char *const[]){"tony.worker.gpus", "1", "tony.am.memory", "1g", NULL});
    assert_non_null(strstr(w, "tony.worker.gpus=1 (from --conf) does nothing: no tony.worker.instances is set"));
    assert_non_null(strstr(w, "single-node") && strstr(w, "or use tony.am.gpus"));
    assert_null(strchr(w, '\n')); /* tony.am.memory is the coordinator's, no job type's */
    free(w);
    /* with tasks: every sizing key of a type that runs none, nothing else */
    w = idle_warnings((const char *const[]){"tony.worker.instances", "2", "tony.ps.memory", "1g", "tony.ps.vcores",
                                            "2", "tony.evaluator.resources", "a.zip", "tony.chief.instances", "0",
                                            "tony.chief.gpus", "1", "tony.ps.command", "x", "tony.worker.memory", "1g",
                                            "tony.local.memory", "8g", "tony.containers.resources", "b.zip", NULL});
    assert_non_null(strstr(w, "tony.ps.memory=1g (from --conf) does nothing: no tony.ps.instances is set, so the job "
                              "runs no ps task"));
    assert_non_null(strstr(w, "tony.ps.vcores=2"));
    assert_non_null(strstr(w, "tony.evaluator.resources=a.zip"));
    assert_null(strstr(w, "chief")); /* instances=0: turned off on purpose */
    assert_null(strstr(w, "command"));
    assert_null(strstr(w, "worker"));
    assert_null(strstr(w, "local"));
    assert_null(strstr(w, "containers"));
    free(w);
    /* the defaults alone warn of nothing */
    w = idle_warnings((const char *const[]){NULL});
    assert_string_equal(w, "");
    free(w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_typos_are_refused_with_the_key_meant),
        cmocka_unit_test(test_what_tony_allows_passes),
        cmocka_unit_test(test_a_file_is_named),
        cmocka_unit_test(test_sizing_keys_of_a_type_without_instances_are_warned_about),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
