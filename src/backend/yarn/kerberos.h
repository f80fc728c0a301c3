/* Kerberos for the client verbs on a secure Hadoop cluster
 * (hadoop.security.authentication=kerberos): whether the cluster is one, and
 * the login that the HTTP calls then prove with SPNEGO, either the ticket
 * cache the user filled with kinit or TonY's keytab keys. Errors say what is
 * wrong (no ticket, an expired one, an unknown realm, an unreachable KDC,
 * the clock, the keytab) and the command that fixes it. */
#ifndef TONY_YARN_KERBEROS_H
#define TONY_YARN_KERBEROS_H

#include <stdbool.h>

#include "backend/yarn/hadoop_conf.h"
#include "common/error.h"
#include "conf/conf.h"
#include "conf/keys.h"

/* TonY's keys. */
#define TONY_SECURITY_ENABLED_KEY TONY_KEY_APP_SECURITY_ENABLED
#define TONY_KEYTAB_USER_KEY TONY_KEY_KEYTAB_USER
#define TONY_KEYTAB_LOCATION_KEY TONY_KEY_KEYTAB_LOCATION
/* Ours: whether a keytab login also refreshes the job's tokens on YARN. */
#define TONY_KEYTAB_REFRESH_KEY TONY_KEY_KEYTAB_REFRESH_TOKENS

/* True when the cluster's core-site.xml says kerberos and the job does not
 * turn security off (tony.application.security.enabled=false). */
bool tony_yarn_kerberized(const tony_hadoop_conf *h, const tony_conf *job);

typedef struct tony_krb5_identity {
    char *principal;   /* user/instance@REALM */
    char *short_name;  /* Hadoop's user name for it: the first component */
    long long expires; /* the ticket-granting ticket's end, seconds since the epoch */
    bool from_keytab;
} tony_krb5_identity;

/* With tony.keytab.user and tony.keytab.location, obtains a ticket from the
 * keytab into a ticket cache private to this process (KRB5CCNAME is set to
 * it, so that libcurl's GSS-API uses it); else checks that the default
 * ticket cache holds a ticket-granting ticket that has not expired. */
int tony_krb5_login(const tony_conf *job, tony_krb5_identity *out, tony_error *err); /* job may be NULL */
void tony_krb5_identity_free(tony_krb5_identity *id);
/* tony_krb5_login for a caller that only needs SPNEGO to work next (the
 * verbs after submit): the identity is not kept. */
int tony_krb5_ready(const tony_conf *job, tony_error *err);
/* The keytab login alone (the coordinator's, from the keytab the client
 * handed it): into the same process-private cache, which a later call
 * refills; KRB5CCNAME is set by the first call only, so later ones may run
 * on another thread. */
int tony_krb5_login_keytab(const char *principal, const char *keytab, tony_krb5_identity *out, tony_error *err);
/* The keytab login the job asks for: true with *principal and *keytab
 * (borrowed) when tony.keytab.user and tony.keytab.location are both set. */
bool tony_krb5_keytab_configured(const tony_conf *job, const char **principal, const char **keytab);

/* The client's user on the cluster. Kerberized: logs in and gives the
 * principal's short name (*secure true; the caller then makes its REST and
 * WebHDFS calls use SPNEGO); else HADOOP_USER_NAME or this process's user. */
int tony_yarn_client_login(const tony_hadoop_conf *h, const tony_conf *job, char **user, bool *secure, tony_error *err);

/* The principal that renews the job's delegation tokens: the RM's
 * (yarn.resourcemanager.principal, _HOST made rm_host). malloc'ed. */
int tony_yarn_rm_principal(const tony_hadoop_conf *h, const char *rm_host, char **out, tony_error *err);
/* The service an HDFS delegation token is looked up by, as Hadoop's clients
 * name it for fs.defaultFS: "<ip>:<port>" of the NameNode's RPC address, or
 * "ha-hdfs:<nameservice>" for an HA name without a port. malloc'ed. */
int tony_yarn_hdfs_token_service(const tony_hadoop_conf *h, char **out, tony_error *err);

#endif
