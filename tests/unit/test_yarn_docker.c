/* TonY's contract with YARN's Docker runtime (backend/yarn/docker.h): the
 * variables a container's launch context gets with tony.docker.enabled
 * (type, image, network, mounts in YARN's form), the coordinator's image,
 * none without docker, and the refusals at submit naming the key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/yarn/docker.h"
#include "common/taskenv.h"
#include "conf_pairs.h"

static void test_env_of_an_image(void **state) {
    (void)state;
    tony_conf *c = CONF("tony.docker.enabled=true", "tony.docker.containers.image=base:1",
                        "tony.docker.containers.mount=/data:/in:ro,/scratch:/out");
    tony_env env = {0};
    tony_error err = {0};
    assert_int_equal(yarn_docker_env(c, "gpu:2", &env, &err), 0);
    assert_string_equal(tony_env_get(&env, TASKENV_DOCKER_RUNTIME), "docker");
    assert_string_equal(tony_env_get(&env, TASKENV_DOCKER_IMAGE), "gpu:2");
    assert_string_equal(tony_env_get(&env, TASKENV_DOCKER_MOUNTS), "/data:/in:ro,/scratch:/out:rw");
    assert_string_equal(tony_env_get(&env, TASKENV_DOCKER_NETWORK), "host");
    tony_env_free(&env);
    tony_conf_set_cli(c, "tony.docker.network", "ml-net");
    tony_conf_set_cli(c, "tony.docker.containers.mount", "");
    assert_int_equal(yarn_docker_env(c, "gpu:2", &env, &err), 0);
    assert_string_equal(tony_env_get(&env, TASKENV_DOCKER_NETWORK), "ml-net");
    assert_null(tony_env_get(&env, TASKENV_DOCKER_MOUNTS));
    tony_env_free(&env);
    tony_conf_free(c);
}

static void test_no_image_no_variables(void **state) {
    (void)state;
    tony_conf *c = CONF("tony.docker.containers.mount=/data:/in:ro");
    tony_env env = {0};
    tony_error err = {0};
    assert_int_equal(yarn_docker_env(c, NULL, &env, &err), 0);
    assert_int_equal(env.kv.len, 0);
    /* docker off: the coordinator has no image, whatever the keys say */
    tony_conf_set_cli(c, "tony.docker.am.image", "am:1");
    assert_null(yarn_docker_am_image(c));
    tony_conf_free(c);
}

static void test_the_coordinators_image(void **state) {
    (void)state;
    tony_conf *c = CONF("tony.docker.enabled=true");
    assert_null(yarn_docker_am_image(c));
    tony_conf_set_cli(c, "tony.docker.containers.image", "base:1");
    assert_string_equal(yarn_docker_am_image(c), "base:1");
    tony_conf_set_cli(c, "tony.docker.am.image", "am:1");
    assert_string_equal(yarn_docker_am_image(c), "am:1");
    tony_conf_free(c);
}

/* yarn_docker_check's error for the conf of pairs, or NULL when it passes. */
static char *check(const char *const *kvs) {
    tony_conf *c = conf_with(kvs);
    tony_plan p = {0};
    tony_error err = {0};
    assert_int_equal(tony_plan_from_conf(c, &p, &err), 0);
    char *msg = yarn_docker_check(c, &p, &err) ? strdup(err.msg) : NULL;
    tony_plan_free(&p);
    tony_conf_free(c);
    return msg;
}
#define CHECK(...) check((const char *const[]){"tony.containers.command=x", "tony.worker.instances=1", __VA_ARGS__, NULL})

static void test_submit_refusals(void **state) {
    (void)state;
    char *m = CHECK("tony.docker.enabled=true", "tony.docker.containers.image=i", "tony.docker.containers.mount=/a:/b:x");
    assert_contains(m, "tony.docker.containers.mount");
    assert_contains(m, "'/a:/b:x'");
    free(m);
    m = CHECK("tony.docker.enabled=true", "tony.docker.containers.image=i", "tony.docker.network=a b");
    assert_contains(m, "tony.docker.network='a b'");
    free(m);
    m = CHECK("tony.docker.enabled=true", "tony.ps.instances=1", "tony.docker.worker.image=w");
    assert_contains(m, "role 'ps' has no image");
    assert_contains(m, "tony.docker.ps.image");
    free(m);
    assert_null(CHECK("tony.docker.enabled=true", "tony.docker.containers.image=i",
                      "tony.docker.containers.mount=/a:/b:ro"));
    /* without docker the keys are not used, as TonY */
    assert_null(CHECK("tony.docker.enabled=false", "tony.docker.containers.mount=/a:/b:x"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_of_an_image),
        cmocka_unit_test(test_no_image_no_variables),
        cmocka_unit_test(test_the_coordinators_image),
        cmocka_unit_test(test_submit_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
