/* The ResourceManager's REST API (/ws/v1/cluster) for the client: find the
 * active RM, ask for an application id, submit, read an app report, kill,
 * and read the scheduler, nodes and labels to check a job before staging.
 * Writes carry ?user.name= (pseudo auth on insecure clusters), or SPNEGO on
 * kerberized ones. */
#ifndef TONY_YARN_REST_H
#define TONY_YARN_REST_H

#include <jansson.h>
#include <stdbool.h>

#include "backend/yarn/hadoop_conf.h"
#include "common/error.h"

typedef struct tony_yarn_rest tony_yarn_rest;

/* user: the name the app runs as (see tony_yarn_user). */
tony_yarn_rest *tony_yarn_rest_new(const char *user);
void tony_yarn_rest_free(tony_yarn_rest *r);
/* Adds a candidate RM (webapp URL, where it came from, its scheduler
 * address or NULL). */
void tony_yarn_rest_add_rm(tony_yarn_rest *r, const char *webapp, const char *from, const char *scheduler);
/* Every RM of a Hadoop configuration, in rm-id order. */
void tony_yarn_rest_add_conf(tony_yarn_rest *r, const tony_hadoop_conf *h);

/* Calls prove the user with SPNEGO (this process's Kerberos ticket) rather
 * than ?user.name=, as a kerberized RM wants (kerberos.h logs in). */
void tony_yarn_rest_use_kerberos(tony_yarn_rest *r);

/* Tries each candidate's /ws/v1/cluster/info until one says it is ACTIVE.
 * When none answers the error says "cannot reach the ResourceManager at URL
 * (from KEY in FILE): ..." and tony_yarn_rest_unreachable() is true. */
int tony_yarn_rest_connect(tony_yarn_rest *r, tony_error *err);
/* True when the last failed call got no HTTP answer at all (exit code 3),
 * false when the RM answered with an error (bad input). */
bool tony_yarn_rest_unreachable(const tony_yarn_rest *r);
const char *tony_yarn_rest_url(const tony_yarn_rest *r);       /* the active RM's webapp URL */
/* The Hadoop version the active RM reports (clusterInfo.hadoopVersion), or
 * NULL when it reported none. */
const char *tony_yarn_rest_hadoop_version(const tony_yarn_rest *r);
const char *tony_yarn_rest_scheduler(const tony_yarn_rest *r); /* its scheduler host:port or NULL */

/* GET path (e.g. "/ws/v1/cluster/scheduler") as JSON. */
int tony_yarn_rest_get(tony_yarn_rest *r, const char *path, json_t **out, tony_error *err);
/* POST new-application: the id and the cluster's maximum-resource-capability. */
int tony_yarn_rest_new_application(tony_yarn_rest *r, char **app_id, json_t **max_capability, tony_error *err);
/* Puts the node label expression `label` (NULL or "" for none: nothing is
 * set) on the REST ApplicationSubmissionContext `context`: on the
 * application and on its AM container's ask alike. The RM copies the
 * application's label onto the AM's ask only when that ask has none, and a
 * REST submission's AM ask carries "" rather than none: Hadoop 3.4 takes ""
 * as none, 3.3 does not and places the AM off the label. */
void tony_yarn_context_set_label(json_t *context, const char *label);
/* POST the ApplicationSubmissionContext (REST JSON form). */
int tony_yarn_rest_submit(tony_yarn_rest *r, const json_t *context, tony_error *err);
/* The app report (the object inside {"app": ...}). */
int tony_yarn_rest_app(tony_yarn_rest *r, const char *app_id, json_t **app, tony_error *err);
/* PUT state KILLED; returns at once (the kill completes asynchronously). */
int tony_yarn_rest_kill(tony_yarn_rest *r, const char *app_id, tony_error *err);

/* "Exception: message" of a Hadoop RemoteException JSON body, or NULL. */
char *tony_yarn_remote_exception(const char *body);
/* The user jobs run as: HADOOP_USER_NAME, else this process's user. */
char *tony_yarn_user(void);
/* JAXB renders a one-element list as a bare object: this gives an array
 * either way (a new reference; empty for NULL). */
json_t *tony_yarn_json_list(json_t *v);

#endif
