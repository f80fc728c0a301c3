/* The coordinator API's route table (am/api_routes.h): routing's verdicts
 * (found, 404, 405) and the lists its answers give, read off the table;
 * register's kinds, named or (an older executor's body) inferred;
 * and docs/api.md's route list, which must be the table rendered, so that
 * the two cannot drift. After changing the table, rewrite the docs with
 * TONY_WRITE_DOCS=1 build/tests/test_api_routes (run in tests/unit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "am/api.h"
#include "common/amapi.h"
#include "common/fs.h"
#include "common/strv.h"

#define DOCS "../../docs/api.md"
#define BEGIN "<!-- routes: generated from src/am/api.c's table; tests/unit/test_api_routes.c checks it -->\n"
#define END "<!-- /routes -->"

static const am_route *find(const char *path, const char *verb, am_method m, am_route_verdict want) {
    size_t n;
    const am_route *routes = am_api_routes(&n), *r = NULL;
    assert_int_equal(am_route_find(routes, n, path, verb, m, &r), want);
    return r;
}

static void test_paths_and_methods(void **st) {
    (void)st;
    assert_int_equal(find(AM_API_JOB, NULL, AM_METHOD_GET, AM_ROUTE_FOUND)->who, AM_WHO_READER);
    find(AM_API_JOB, NULL, AM_METHOD_POST, AM_ROUTE_NO_METHOD);
    assert_int_equal(find(AM_API_JOB_KILL, NULL, AM_METHOD_POST, AM_ROUTE_FOUND)->who, AM_WHO_CLIENT);
    find(AM_API_JOB_KILL, NULL, AM_METHOD_GET, AM_ROUTE_NO_METHOD);
    find("/v1/nope", NULL, AM_METHOD_GET, AM_ROUTE_NO_PATH);
    find("/", NULL, AM_METHOD_GET, AM_ROUTE_FOUND);
    find("/ui/app.js", NULL, AM_METHOD_GET, AM_ROUTE_FOUND);
    find("/ui", NULL, AM_METHOD_GET, AM_ROUTE_NO_PATH);
    find("/tensorboard", NULL, AM_METHOD_GET, AM_ROUTE_FOUND);
    find("/tensorboard/data/runs", NULL, AM_METHOD_GET, AM_ROUTE_FOUND);
    find("/tensorboardx", NULL, AM_METHOD_GET, AM_ROUTE_NO_PATH);
    find("/tensorboard", NULL, AM_METHOD_POST, AM_ROUTE_NO_METHOD);
}

static void test_task_verbs(void **st) {
    (void)st;
    const am_route *r = find(NULL, AM_API_REGISTER, AM_METHOD_POST, AM_ROUTE_FOUND);
    assert_int_equal(r->who, AM_WHO_EXECUTOR);
    assert_true(r->any_attempt); /* it tells early, returning and stale calls apart itself */
    assert_false(find(NULL, AM_API_HEARTBEAT, AM_METHOD_POST, AM_ROUTE_FOUND)->any_attempt);
    find(NULL, AM_API_HEARTBEAT, AM_METHOD_GET, AM_ROUTE_NO_METHOD);
    find(NULL, AM_API_LOG, AM_METHOD_POST, AM_ROUTE_NO_METHOD);
    assert_int_equal(find(NULL, AM_API_METRICS, AM_METHOD_GET, AM_ROUTE_FOUND)->who, AM_WHO_READER);
    assert_int_equal(find(NULL, AM_API_METRICS, AM_METHOD_POST, AM_ROUTE_FOUND)->who, AM_WHO_EXECUTOR);
    find(NULL, "logs", AM_METHOD_GET, AM_ROUTE_NO_PATH);
    /* a task verb is no path, nor a path a verb */
    find(NULL, "job", AM_METHOD_GET, AM_ROUTE_NO_PATH);
    find(AM_API_TASKS AM_API_LOG, NULL, AM_METHOD_GET, AM_ROUTE_NO_PATH);
}

static void test_lists_for_answers(void **st) {
    (void)st;
    size_t n;
    const am_route *routes = am_api_routes(&n);
    assert_string_equal(am_route_methods(routes, n, NULL, AM_API_LOG), "GET");
    assert_string_equal(am_route_methods(routes, n, NULL, AM_API_FINISHED), "POST");
    assert_string_equal(am_route_methods(routes, n, NULL, AM_API_STACKS), "GET or POST");
    assert_string_equal(am_route_methods(routes, n, AM_API_JOB_FINISH, NULL), "POST");
    char *verbs = am_route_verbs(routes, n, ", ", " or ");
    /* every verb of amapi.h, each once */
    const char *all[] = {AM_API_REGISTER, AM_API_HEARTBEAT, AM_API_STARTED, AM_API_FINISHED,
                         AM_API_METRICS,  AM_API_LOG,       AM_API_STACKS,  AM_API_WATCH};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        const char *at = strstr(verbs, all[i]);
        assert_non_null(at);
        assert_null(strstr(at + strlen(all[i]), all[i]));
    }
    assert_non_null(strstr(verbs, " or "));
    free(verbs);
}

static const char *kind_of(const char *body_text) {
    json_t *body = json_loads(body_text, 0, NULL);
    assert_non_null(body);
    const char *k = am_route_registration_kind(body);
    json_decref(body);
    return k; /* amapi.h's constants, or NULL */
}

/* register's kind: named, or (an older executor) told by its fields */
static void test_registration_kinds(void **st) {
    (void)st;
    assert_string_equal(kind_of("{\"kind\":\"join\",\"returning\":true}"), AM_API_REG_JOIN);
    assert_string_equal(kind_of("{\"kind\":\"adopt\",\"adopt\":12}"), AM_API_REG_ADOPT);
    assert_string_equal(kind_of("{\"kind\":\"return\"}"), AM_API_REG_RETURN);
    assert_null(kind_of("{\"kind\":\"steal\"}"));
    assert_null(kind_of("{\"kind\":3}"));
    assert_string_equal(kind_of("{\"host\":\"h\"}"), AM_API_REG_JOIN);
    assert_string_equal(kind_of("{\"adopt\":12}"), AM_API_REG_ADOPT);
    assert_string_equal(kind_of("{\"returning\":true}"), AM_API_REG_RETURN);
    assert_string_equal(kind_of("{\"returning\":false}"), AM_API_REG_JOIN);
}

/* docs/api.md's route list is the table, rendered. */
static void test_docs_list_the_table(void **st) {
    (void)st;
    size_t n;
    const am_route *routes = am_api_routes(&n);
    char *table = am_route_markdown(routes, n), *text = NULL;
    tony_error err;
    assert_int_equal(tony_read_file(DOCS, &text, NULL, &err), 0);
    char *begin = strstr(text, BEGIN), *end = begin ? strstr(begin, END) : NULL;
    assert_non_null(begin);
    assert_non_null(end);
    begin += strlen(BEGIN);
    if (getenv("TONY_WRITE_DOCS")) {
        FILE *f = fopen(DOCS, "w");
        assert_non_null(f);
        fprintf(f, "%.*s%s%s", (int)(begin - text), text, table, end);
        fclose(f);
    } else if ((size_t)(end - begin) != strlen(table) || strncmp(begin, table, strlen(table)) != 0) {
        fprintf(stderr, "docs/api.md's route list is not the table of src/am/api.c; it should read:\n%s"
                        "(TONY_WRITE_DOCS=1 build/tests/test_api_routes in tests/unit writes it)\n", table);
        fail();
    }
    free(text);
    free(table);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths_and_methods),
        cmocka_unit_test(test_task_verbs),
        cmocka_unit_test(test_lists_for_answers),
        cmocka_unit_test(test_registration_kinds),
        cmocka_unit_test(test_docs_list_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
