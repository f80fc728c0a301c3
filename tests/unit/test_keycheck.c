/* The typo check of tony.* keys (conf/keycheck.h): misspelled keys, job
 * types and families refused with the key meant; TonY's own keys, per-type
 * resources, families under a prefix and keys outside tony.* let through. */
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_typos_are_refused_with_the_key_meant),
        cmocka_unit_test(test_what_tony_allows_passes),
        cmocka_unit_test(test_a_file_is_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
