/* The coordinator's logins to kerberized NodeManagers' web pages, for the
 * job page's log tail (nmlog.h reads those pages on the loop and cannot do
 * Kerberos there). With the job's keytab (job_credentials.h), the first
 * 401 from a NodeManager starts one SPNEGO login to it on the KDC lane; the
 * session cookie Hadoop's web server sets (hadoop.auth, valid for hours)
 * is then carried by every read of that NodeManager, until a 401 says it
 * expired and the next login replaces it. */
#ifndef TONY_YARN_NM_SPNEGO_H
#define TONY_YARN_NM_SPNEGO_H

#include "backend/yarn/job_credentials.h"
#include "backend/yarn/nmlog.h"
#include "common/workq.h"

/* Hadoop's authentication cookie. */
#define YARN_HADOOP_AUTH_COOKIE "hadoop.auth"

typedef struct yarn_nm_spnego yarn_nm_spnego;

/* Logins go through creds on q's KDC lane; the loop thread only. */
yarn_nm_spnego *yarn_nm_spnego_new(yarn_job_credentials *creds, tony_workq *q);
/* The hooks for yarn_nmlog_set_auth (valid while s lives). */
yarn_nmlog_auth yarn_nm_spnego_auth(yarn_nm_spnego *s);
/* After q is freed (its last done callbacks still use s). */
void yarn_nm_spnego_free(yarn_nm_spnego *s);

#endif
