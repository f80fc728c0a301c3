/* Unit tests of who the Horovod rendezvous answers (am/rendezvous.h): on a
 * cluster, only the hosts the job's tasks registered from (an address at
 * once, a name once resolved off the loop); on this machine, processes of
 * the job's owner. Real sockets on 127.0.0.1, the loop run in slices. (A
 * process of another user is refused in tests/e2e/test_inputs.py.) */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "am/job.h"
#include "am/rendezvous.h"

typedef struct fixture {
    struct event_base *base;
    am_rendezvous *r;
    am_task tasks[2];
    am_job job;
} fixture;

static void start(fixture *f, bool same_machine, const char *host0, const char *host1) {
    memset(f, 0, sizeof *f);
    f->tasks[0].host = (char *)host0;
    f->tasks[1].host = (char *)host1;
    f->job.tasks = f->tasks;
    f->job.ntasks = 2;
    f->base = event_base_new();
    tony_error err;
    f->r = am_rendezvous_start(f->base, "127.0.0.1", &f->job, same_machine, &err);
    assert_non_null(f->r);
}

static void stop(fixture *f) {
    am_rendezvous_free(f->r);
    event_base_free(f->base);
}

static void run_ms(fixture *f, int ms) {
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_loopexit(f->base, &tv);
    event_base_dispatch(f->base);
}

/* One request from this process; the reply's status (its body in body). */
static int request(fixture *f, const char *method, const char *path, char *body, size_t n) {
    int port = am_rendezvous_port(f->r);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    char req[256];
    int len = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\n\r\n%s", method,
                       path, port, strcmp(method, "PUT") == 0 ? 1 : 0, strcmp(method, "PUT") == 0 ? "v" : "");
    assert_int_equal(send(fd, req, (size_t)len, MSG_NOSIGNAL), len);
    char buf[2048];
    size_t got = 0;
    for (int i = 0; i < 50 && got == 0; i++) {
        run_ms(f, 20);
        ssize_t k = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
        if (k > 0) got = (size_t)k;
    }
    close(fd);
    assert_true(got > 0);
    buf[got] = '\0';
    int status = 0;
    assert_int_equal(sscanf(buf, "HTTP/1.1 %d", &status), 1);
    const char *b = strstr(buf, "\r\n\r\n");
    snprintf(body, n, "%s", b ? b + 4 : "");
    return status;
}

static void test_cluster_answers_only_task_hosts(void **state) {
    (void)state;
    fixture f;
    char body[1024];
    /* no task here: this machine is a stranger */
    start(&f, false, "192.0.2.7", NULL);
    assert_int_equal(request(&f, "PUT", "/global/k", body, sizeof body), 403);
    assert_non_null(strstr(body, "none of the hosts the job's tasks registered from"));
    assert_int_equal(request(&f, "GET", "/global/k", body, sizeof body), 403);
    /* a task registers from this machine's address */
    f.tasks[1].host = "127.0.0.1";
    assert_int_equal(request(&f, "PUT", "/global/k", body, sizeof body), 200);
    assert_int_equal(request(&f, "GET", "/global/k", body, sizeof body), 200);
    assert_string_equal(body, "v");
    /* its attempt ended: no longer */
    f.tasks[1].host = NULL;
    assert_int_equal(request(&f, "DELETE", "/global/k", body, sizeof body), 403);
    stop(&f);
}

static void test_cluster_resolves_names_off_the_loop(void **state) {
    (void)state;
    fixture f;
    char body[1024];
    start(&f, false, "localhost", NULL);
    /* the gang is whole: its hosts are resolved from now on */
    json_t *scopes = json_pack("{s:i}", "global", 1);
    am_rendezvous_set_scopes(f.r, scopes);
    json_decref(scopes);
    int status = 503;
    for (int i = 0; i < 100 && status == 503; i++) {
        status = request(&f, "GET", "/global/none", body, sizeof body);
        if (status == 503) assert_non_null(strstr(body, "still being resolved"));
    }
    assert_int_equal(status, 404); /* allowed: the key is not there */
    stop(&f);
}

static void test_same_machine_answers_the_owner(void **state) {
    (void)state;
    fixture f;
    char body[1024];
    /* tasks' hosts do not matter here: the peer's uid does (ours) */
    start(&f, true, "192.0.2.7", NULL);
    assert_int_equal(request(&f, "PUT", "/global/k", body, sizeof body), 200);
    assert_int_equal(request(&f, "GET", "/global/k", body, sizeof body), 200);
    assert_string_equal(body, "v");
    stop(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cluster_answers_only_task_hosts),
        cmocka_unit_test(test_cluster_resolves_names_off_the_loop),
        cmocka_unit_test(test_same_machine_answers_the_owner),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
