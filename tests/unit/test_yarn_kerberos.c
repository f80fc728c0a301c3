/* Unit tests of the client's Kerberos side (backend/yarn/kerberos): when a
 * cluster counts as kerberized, the RM principal with _HOST, the HDFS token
 * service Hadoop's clients look tokens up by, and the login's errors where no
 * KDC is needed to tell them: an empty ticket cache, half of TonY's keytab
 * keys, an unreadable keytab. (Logins against a real KDC are tested end to
 * end on the kerberized test cluster.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/yarn/hadoop_conf.h"
#include "backend/yarn/kerberos.h"
#include "common/fs.h"
#include "common/strv.h"
#include "conf/conf.h"

#define assert_contains(haystack, needle)                                                              \
    do {                                                                                               \
        const char *h_ = (haystack), *n_ = (needle);                                                   \
        if (!h_ || !strstr(h_, n_)) fail_msg("expected \"%s\" to contain \"%s\"", h_ ? h_ : "(null)", n_); \
    } while (0)

static tony_hadoop_conf *conf_with(const char *auth, const char *rm_principal, const char *default_fs) {
    tony_hadoop_conf *h = tony_hadoop_conf_new();
    h->site = tony_conf_new();
    if (auth) tony_conf_set(h->site, "hadoop.security.authentication", auth, "core-site.xml");
    if (rm_principal) tony_conf_set(h->site, "yarn.resourcemanager.principal", rm_principal, "yarn-site.xml");
    h->default_fs = tony_strdup(default_fs);
    return h;
}

static void test_kerberized(void **state) {
    (void)state;
    tony_hadoop_conf *simple = conf_with(NULL, NULL, "hdfs://localhost:9000");
    tony_hadoop_conf *secure = conf_with("Kerberos", NULL, "hdfs://localhost:9000");
    tony_conf *job = tony_conf_new();
    tony_conf_load_defaults(job);
    assert_false(tony_yarn_kerberized(simple, job));
    assert_true(tony_yarn_kerberized(secure, job)); /* TonY's default: security enabled */
    assert_true(tony_yarn_kerberized(secure, NULL));
    tony_conf_set(job, TONY_SECURITY_ENABLED_KEY, "false", "--conf");
    assert_false(tony_yarn_kerberized(secure, job));
    tony_conf_free(job);
    tony_hadoop_conf_free(simple);
    tony_hadoop_conf_free(secure);
}

static void test_rm_principal_and_token_service(void **state) {
    (void)state;
    tony_error err;
    char *p = NULL;
    tony_hadoop_conf *h = conf_with("kerberos", "rm/_HOST@EXAMPLE.COM", "hdfs://localhost:9000");
    assert_int_equal(tony_yarn_rm_principal(h, "rm1.example", &p, &err), 0);
    assert_string_equal(p, "rm/rm1.example@EXAMPLE.COM");
    free(p);
    assert_int_equal(tony_yarn_hdfs_token_service(h, &p, &err), 0);
    assert_string_equal(p, "127.0.0.1:9000"); /* Hadoop's clients file tokens under ip:port */
    free(p);
    tony_hadoop_conf_free(h);

    h = conf_with("kerberos", NULL, "hdfs://mycluster");
    assert_int_equal(tony_yarn_rm_principal(h, "rm1", &p, &err), -1);
    assert_contains(err.msg, "yarn.resourcemanager.principal");
    assert_int_equal(tony_yarn_hdfs_token_service(h, &p, &err), 0);
    assert_string_equal(p, "ha-hdfs:mycluster"); /* an HA nameservice */
    free(p);
    tony_hadoop_conf_free(h);

    h = conf_with("kerberos", NULL, "file:///");
    assert_int_equal(tony_yarn_hdfs_token_service(h, &p, &err), -1);
    assert_contains(err.msg, "fs.defaultFS");
    tony_hadoop_conf_free(h);
}

static void test_login_errors_without_a_kdc(void **state) {
    (void)state;
    char dir[] = "/tmp/tony-test-krb-XXXXXX";
    assert_non_null(mkdtemp(dir));
    /* a krb5.conf of our own, and a ticket cache that does not exist */
    char *krb5conf = tony_path_join(dir, "krb5.conf"), *cc = tony_sprintf("FILE:%s/krb5cc", dir);
    tony_error err;
    const char *conf = "[libdefaults]\n default_realm = EXAMPLE.COM\n dns_lookup_kdc = false\n";
    assert_int_equal(tony_write_file(krb5conf, conf, strlen(conf), 0644, &err), 0);
    setenv("KRB5_CONFIG", krb5conf, 1);
    setenv("KRB5CCNAME", cc, 1);

    tony_krb5_identity id;
    assert_int_equal(tony_krb5_login(NULL, &id, &err), -1);
    assert_contains(err.msg, "no Kerberos ticket");
    assert_contains(err.msg, "kinit");
    assert_contains(err.msg, TONY_KEYTAB_USER_KEY);
    assert_null(id.principal);

    tony_conf *job = tony_conf_new();
    tony_conf_load_defaults(job); /* TonY's placeholders are not a keytab login */
    assert_int_equal(tony_krb5_login(job, &id, &err), -1);
    assert_contains(err.msg, "no Kerberos ticket");
    tony_conf_set(job, TONY_KEYTAB_USER_KEY, "tony@EXAMPLE.COM", "--conf");
    assert_int_equal(tony_krb5_login(job, &id, &err), -1);
    assert_contains(err.msg, "go together");
    char *missing = tony_path_join(dir, "missing.keytab");
    tony_conf_set(job, TONY_KEYTAB_LOCATION_KEY, missing, "--conf");
    assert_int_equal(tony_krb5_login(job, &id, &err), -1);
    assert_contains(err.msg, TONY_KEYTAB_LOCATION_KEY);
    assert_contains(err.msg, missing);

    tony_conf_free(job);
    free(missing);
    unsetenv("KRB5_CONFIG");
    unsetenv("KRB5CCNAME");
    tony_rm_rf(dir, NULL);
    free(krb5conf);
    free(cc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kerberized),
        cmocka_unit_test(test_rm_principal_and_token_service),
        cmocka_unit_test(test_login_errors_without_a_kdc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
