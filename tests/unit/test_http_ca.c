/* Unit test of the CA bundle choice (common/http.c): libcurl's built-in path
 * when it exists here, else the first readable of the other distributions'
 * paths, else none (libcurl's own, failing with its own words); and a real
 * HTTPS server whose certificate no CA we trust signed (openssl s_server,
 * self-signed, as a private CA's would look): the error says SSL_CERT_FILE. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fs.h"
#include "common/http.h"
#include "common/strv.h"

static void test_pick_ca_file(void **state) {
    (void)state;
    char dir[] = "/tmp/tony-test-ca-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *present = tony_path_join(dir, "bundle.pem"), *other = tony_path_join(dir, "other.pem");
    char *missing = tony_path_join(dir, "missing.pem");
    tony_error err;
    assert_int_equal(tony_write_file(present, "x", 1, 0644, &err), 0);
    assert_int_equal(tony_write_file(other, "x", 1, 0644, &err), 0);
    const char *candidates[] = {missing, present, other, NULL};
    assert_null(tony_http_pick_ca_file(present, candidates)); /* the built-in one exists: keep it */
    assert_null(tony_http_pick_ca_file(NULL, candidates));    /* libcurl names none: keep its way */
    assert_string_equal(tony_http_pick_ca_file(missing, candidates), present);
    const char *none[] = {missing, NULL};
    assert_null(tony_http_pick_ca_file(missing, none));
    tony_rm_rf(dir, NULL);
    free(present);
    free(other);
    free(missing);
}

static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t n = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &n), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static bool accepts(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

static void test_private_ca_error_names_ssl_cert_file(void **state) {
    (void)state;
    char dir[] = "/tmp/tony-test-ca-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *cmd = tony_sprintf("openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -days 1 -keyout %s/key.pem "
                             "-out %s/cert.pem >/dev/null 2>&1", dir, dir);
    if (system(cmd) != 0) skip(); /* no openssl command here */
    free(cmd);
    int port = free_port();
    char *key = tony_path_join(dir, "key.pem"), *cert = tony_path_join(dir, "cert.pem");
    char accept_on[16];
    snprintf(accept_on, sizeof accept_on, "%d", port);
    pid_t pid = fork();
    if (pid == 0) {
        execlp("openssl", "openssl", "s_server", "-quiet", "-www", "-accept", accept_on, "-cert", cert, "-key", key,
               (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 100 && !accepts(port); i++) usleep(50 * 1000);
    char *url = tony_sprintf("https://127.0.0.1:%d/", port);
    tony_http_response r = {0};
    tony_error err = {0};
    unsetenv("SSL_CERT_FILE");
    assert_int_equal(tony_http_call("GET", url, NULL, NULL, 5000, &r, &err), -1);
    assert_non_null(strstr(err.msg, "private CA needs that CA's PEM bundle in SSL_CERT_FILE"));
    setenv("SSL_CERT_FILE", "/nonexistent/bundle.pem", 1);
    assert_int_equal(tony_http_call("GET", url, NULL, NULL, 5000, &r, &err), -1);
    assert_non_null(strstr(err.msg, "SSL_CERT_FILE=/nonexistent/bundle.pem"));
    unsetenv("SSL_CERT_FILE");
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    tony_rm_rf(dir, NULL);
    free(url);
    free(key);
    free(cert);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_pick_ca_file),
                                       cmocka_unit_test(test_private_ca_error_names_ssl_cert_file)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
