/* Kerberos login for the client (see kerberos.h), with MIT krb5's API so
 * that each failure can be told apart and named. */
#include "backend/yarn/kerberos.h"

#include <errno.h>
#include <arpa/inet.h>
#include <krb5.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "backend/yarn/rest.h"
#include "common/clock.h"
#include "common/strv.h"

bool tony_yarn_kerberized(const tony_hadoop_conf *h, const tony_conf *job) {
    char *auth = tony_hadoop_conf_get(h, "hadoop.security.authentication");
    bool kerberos = auth && strcasecmp(auth, "kerberos") == 0;
    free(auth);
    const char *enabled = job ? tony_conf_get(job, TONY_SECURITY_ENABLED_KEY) : NULL;
    return kerberos && !(enabled && strcasecmp(enabled, "false") == 0);
}

/* A key the user set, not TonY's placeholder default. */
static const char *user_set(const tony_conf *job, const char *key) {
    if (!job) return NULL;
    const char *v = tony_conf_get(job, key), *src = tony_conf_get_source(job, key);
    return v && *v && !(src && strcmp(src, "default") == 0) ? v : NULL;
}

/* What to do about a krb5 failure, in words. */
static const char *hint(krb5_error_code code) {
    switch (code) {
    case KRB5_KDC_UNREACH:
        return "no KDC of the realm answered: check that it runs and that krb5.conf (KRB5_CONFIG, else "
               "/etc/krb5.conf) names it under [realms]";
    case KRB5_REALM_UNKNOWN:
    case KRB5_REALM_CANT_RESOLVE:
    case KRB5_CONFIG_NODEFREALM:
        return "the realm is not in krb5.conf (KRB5_CONFIG, else /etc/krb5.conf): add it under [realms], or check "
               "the principal's @REALM";
    case KRB5KRB_AP_ERR_SKEW:
        return "this machine's clock and the KDC's differ by more than the allowed skew (5 minutes by default): "
               "synchronize the clock (e.g. chrony or ntpd)";
    case KRB5KDC_ERR_C_PRINCIPAL_UNKNOWN:
        return "the KDC does not know this principal: check the name and its realm";
    case KRB5KDC_ERR_PREAUTH_FAILED:
    case KRB5KRB_AP_ERR_BAD_INTEGRITY:
    case KRB5_KT_NOTFOUND:
    case KRB5_KT_KVNONOTFOUND:
        return "the keytab holds no valid key for this principal (a wrong keytab, or the principal's key changed "
               "since it was exported): export it again";
    case KRB5_FCC_NOFILE:
    case KRB5_CC_NOTFOUND:
    case KRB5_CC_NOSUPP:
        return "there is no ticket";
    default:
        return NULL;
    }
}

static int krb_fail(tony_error *err, krb5_context ctx, krb5_error_code code, const char *doing) {
    const char *msg = krb5_get_error_message(ctx, code);
    const char *h = hint(code);
    tony_err(err, "Kerberos: %s: %s%s%s", doing, msg, h ? "; " : "", h ? h : "");
    krb5_free_error_message(ctx, msg);
    return -1;
}

static int fill_identity(krb5_context ctx, krb5_principal p, long long expires, bool keytab, tony_krb5_identity *out,
                         tony_error *err) {
    char *name = NULL;
    krb5_error_code code = krb5_unparse_name(ctx, p, &name);
    if (code) return krb_fail(err, ctx, code, "cannot read the principal's name");
    out->principal = tony_strdup(name);
    krb5_free_unparsed_name(ctx, name);
    /* Hadoop's default auth_to_local maps a principal of the default realm
     * to its first component. */
    size_t n = strcspn(out->principal, "/@");
    out->short_name = tony_sprintf("%.*s", (int)n, out->principal);
    out->expires = expires;
    out->from_keytab = keytab;
    return 0;
}

static char *ccache_name(krb5_context ctx, krb5_ccache cc) {
    char *full = NULL;
    if (krb5_cc_get_full_name(ctx, cc, &full) != 0) return tony_strdup("the default ticket cache");
    char *s = tony_strdup(full);
    krb5_free_string(ctx, full);
    return s;
}

/* The TGT of the cache's principal: when it ends, or -1 when there is none. */
static long long tgt_end(krb5_context ctx, krb5_ccache cc, krb5_principal client) {
    krb5_cc_cursor cur;
    if (krb5_cc_start_seq_get(ctx, cc, &cur) != 0) return -1;
    long long end = -1;
    krb5_creds c;
    while (krb5_cc_next_cred(ctx, cc, &cur, &c) == 0) {
        const krb5_data *first = krb5_princ_component(ctx, c.server, 0);
        if (first && first->length == 6 && memcmp(first->data, "krbtgt", 6) == 0 &&
            krb5_realm_compare(ctx, c.server, client) && (long long)c.times.endtime > end)
            end = (long long)c.times.endtime;
        krb5_free_cred_contents(ctx, &c);
    }
    krb5_cc_end_seq_get(ctx, cc, &cur);
    return end;
}

static void when(long long t, char *buf, size_t n) {
    time_t tt = (time_t)t;
    struct tm tm;
    strftime(buf, n, "%Y-%m-%d %H:%M:%S %Z", localtime_r(&tt, &tm));
}

static int login_cache(krb5_context ctx, tony_krb5_identity *out, tony_error *err) {
    krb5_ccache cc = NULL;
    krb5_principal p = NULL;
    int rc = 0;
    krb5_error_code code = krb5_cc_default(ctx, &cc);
    if (code) return krb_fail(err, ctx, code, "cannot open the default ticket cache");
    char *name = ccache_name(ctx, cc);
    code = krb5_cc_get_principal(ctx, cc, &p);
    if (code) {
        rc = tony_err(err,
                      "no Kerberos ticket in %s: the cluster is kerberized (hadoop.security.authentication=kerberos): "
                      "run `kinit <you>@<REALM>` first, or give tony a keytab with %s and %s",
                      name, TONY_KEYTAB_USER_KEY, TONY_KEYTAB_LOCATION_KEY);
        goto out;
    }
    long long end = tgt_end(ctx, cc, p);
    char *pname = NULL;
    krb5_unparse_name(ctx, p, &pname);
    if (end < 0) {
        rc = tony_err(err, "no ticket-granting ticket for %s in %s: run `kinit %s`", pname ? pname : "you", name,
                      pname ? pname : "<you>@<REALM>");
    } else if (end <= tony_wall_ms() / 1000) {
        char t[64];
        when(end, t, sizeof t);
        rc = tony_err(err, "the Kerberos ticket of %s in %s expired at %s: run `kinit %s` again", pname, name, t,
                      pname);
    } else {
        rc = fill_identity(ctx, p, end, false, out, err);
    }
    if (pname) krb5_free_unparsed_name(ctx, pname);
out:
    free(name);
    if (p) krb5_free_principal(ctx, p);
    krb5_cc_close(ctx, cc);
    return rc;
}

static int login_keytab(krb5_context ctx, const char *user, const char *keytab, tony_krb5_identity *out,
                        tony_error *err) {
    if (access(keytab, R_OK) != 0)
        return tony_err(err, "%s: cannot read the keytab %s: %s", TONY_KEYTAB_LOCATION_KEY, keytab, strerror(errno));
    krb5_principal p = NULL;
    krb5_keytab kt = NULL;
    krb5_ccache cc = NULL;
    krb5_creds creds;
    memset(&creds, 0, sizeof creds);
    bool have_creds = false;
    int rc = -1;
    char *doing = tony_sprintf("%s %s", TONY_KEYTAB_USER_KEY, user);
    krb5_error_code code = krb5_parse_name(ctx, user, &p);
    if (code) {
        krb_fail(err, ctx, code, doing);
        goto out;
    }
    char *kt_name = tony_sprintf("FILE:%s", keytab);
    code = krb5_kt_resolve(ctx, kt_name, &kt);
    free(kt_name);
    if (code) {
        krb_fail(err, ctx, code, keytab);
        goto out;
    }
    free(doing);
    doing = tony_sprintf("cannot log %s in from the keytab %s (%s)", user, keytab, TONY_KEYTAB_LOCATION_KEY);
    code = krb5_get_init_creds_keytab(ctx, &creds, p, kt, 0, NULL, NULL);
    if (code) {
        krb_fail(err, ctx, code, doing);
        goto out;
    }
    have_creds = true;
    /* A cache in this process's memory only (nothing is written to disk);
     * GSS-API (libcurl's SPNEGO) finds it through KRB5CCNAME. */
    char *cc_name = tony_sprintf("MEMORY:tony-%d", (int)getpid());
    code = krb5_cc_resolve(ctx, cc_name, &cc);
    if (!code) code = krb5_cc_initialize(ctx, cc, p);
    if (!code) code = krb5_cc_store_cred(ctx, cc, &creds);
    /* Set once: a later login (the coordinator's, on a worker thread)
     * refills the same cache without touching the environment. */
    const char *cur = getenv("KRB5CCNAME");
    if (!code && !(cur && strcmp(cur, cc_name) == 0)) setenv("KRB5CCNAME", cc_name, 1);
    free(cc_name);
    if (code) {
        krb_fail(err, ctx, code, "cannot keep the keytab's ticket in memory");
        goto out;
    }
    rc = fill_identity(ctx, p, (long long)creds.times.endtime, true, out, err);
out:
    free(doing);
    if (have_creds) krb5_free_cred_contents(ctx, &creds);
    if (cc) krb5_cc_close(ctx, cc);
    if (kt) krb5_kt_close(ctx, kt);
    if (p) krb5_free_principal(ctx, p);
    return rc;
}

bool tony_krb5_keytab_configured(const tony_conf *job, const char **principal, const char **keytab) {
    *principal = user_set(job, TONY_KEYTAB_USER_KEY);
    *keytab = user_set(job, TONY_KEYTAB_LOCATION_KEY);
    return *principal && *keytab;
}

/* From the keytab (principal and keytab set) or the ticket cache (both NULL). */
static int login(const char *principal, const char *keytab, tony_krb5_identity *out, tony_error *err) {
    memset(out, 0, sizeof *out);
    krb5_context ctx = NULL;
    krb5_error_code code = krb5_init_context(&ctx);
    if (code)
        return tony_err(err, "Kerberos: cannot read its configuration (KRB5_CONFIG, else /etc/krb5.conf): %s",
                        error_message(code));
    int rc = keytab ? login_keytab(ctx, principal, keytab, out, err) : login_cache(ctx, out, err);
    krb5_free_context(ctx);
    if (rc) tony_krb5_identity_free(out);
    return rc;
}

int tony_krb5_login(const tony_conf *job, tony_krb5_identity *out, tony_error *err) {
    const char *user, *keytab;
    if (tony_krb5_keytab_configured(job, &user, &keytab)) return login(user, keytab, out, err);
    memset(out, 0, sizeof *out);
    if (user || keytab)
        return tony_err(err, "%s and %s go together: set both to log in from a keytab, or neither to use `kinit`'s "
                             "ticket", TONY_KEYTAB_USER_KEY, TONY_KEYTAB_LOCATION_KEY);
    return login(NULL, NULL, out, err);
}

int tony_krb5_login_keytab(const char *principal, const char *keytab, tony_krb5_identity *out, tony_error *err) {
    return login(principal, keytab, out, err);
}

int tony_krb5_ready(const tony_conf *job, tony_error *err) {
    tony_krb5_identity id;
    if (tony_krb5_login(job, &id, err)) return -1;
    tony_krb5_identity_free(&id);
    return 0;
}

int tony_yarn_client_login(const tony_hadoop_conf *h, const tony_conf *job, char **user, bool *secure, tony_error *err) {
    *secure = tony_yarn_kerberized(h, job);
    if (!*secure) {
        *user = tony_yarn_user();
        return 0;
    }
    tony_krb5_identity id;
    if (tony_krb5_login(job, &id, err)) return -1;
    *user = tony_strdup(id.short_name);
    tony_krb5_identity_free(&id);
    return 0;
}

int tony_yarn_rm_principal(const tony_hadoop_conf *h, const char *rm_host, char **out, tony_error *err) {
    char *p = tony_hadoop_conf_get(h, "yarn.resourcemanager.principal");
    if (!p || !*p) {
        free(p);
        return tony_err(err, "yarn.resourcemanager.principal is not set (yarn-site.xml in %s): a kerberized cluster's "
                        "client configuration names the ResourceManager's principal, which renews the job's tokens",
                        h->conf_dir ? h->conf_dir : "HADOOP_CONF_DIR");
    }
    char *at = strstr(p, "_HOST");
    *out = at ? tony_sprintf("%.*s%s%s", (int)(at - p), p, rm_host, at + 5) : tony_strdup(p);
    free(p);
    return 0;
}

int tony_yarn_hdfs_token_service(const tony_hadoop_conf *h, char **out, tony_error *err) {
    const char *fs = h->default_fs;
    if (!fs || !tony_str_starts_with(fs, "hdfs://"))
        return tony_err(err, "fs.defaultFS (%s) is not an hdfs:// URI: no HDFS to get a delegation token from",
                        fs ? fs : "unset");
    const char *auth = fs + strlen("hdfs://");
    size_t n = strcspn(auth, "/");
    const char *colon = memchr(auth, ':', n);
    if (!colon) {
        *out = tony_sprintf("ha-hdfs:%.*s", (int)n, auth);
        return 0;
    }
    char *host = tony_sprintf("%.*s", (int)(colon - auth), auth);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int gai = getaddrinfo(host, NULL, &hints, &res);
    int rc = 0;
    if (gai != 0) {
        rc = tony_err(err, "cannot resolve the NameNode %s (fs.defaultFS %s): %s", host, fs, gai_strerror(gai));
    } else {
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, ip, sizeof ip);
        *out = tony_sprintf("%s:%.*s", ip, (int)(n - (size_t)(colon + 1 - auth)), colon + 1);
        freeaddrinfo(res);
    }
    free(host);
    return rc;
}

void tony_krb5_identity_free(tony_krb5_identity *id) {
    free(id->principal);
    free(id->short_name);
    memset(id, 0, sizeof *id);
}
