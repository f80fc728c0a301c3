/* The check of the tony.* keys a user set, against the registry
 * (conf/keys.h): an unknown key is refused before anything starts, naming
 * the key it resembles (TonY users' configs are long and typed by hand, and
 * a misspelled key silently ignored runs the wrong job), and so is a known
 * key whose value is not of its type. Keys outside tony.* are never checked
 * (they are the user's own, or Hadoop's). */
#ifndef TONY_CONF_KEYCHECK_H
#define TONY_CONF_KEYCHECK_H

#include "common/error.h"
#include "common/strv.h"
#include "conf/conf.h"

/* Every tony.* key the user set (any source but the built-in defaults):
 * -1 and an error for the first unknown one ("did you mean" when one is
 * close) or the first value not of its key's type. The one unknown shape
 * let through is TonY's tony.<type>.<resource> of a job type the job has:
 * it is added to *unknown (may be NULL), for a note. */
int tony_conf_check_keys(const tony_conf *c, tony_strv *unknown, tony_error *err);

/* TonY's older name of a key tony reads (tony.application.docker.enabled
 * for tony.docker.enabled, tony.task.heartbeat-interval for
 * tony.task.heartbeat-interval-ms), set by the user to ask for something
 * while the key tony reads is not: the value is set on that key (its
 * source says from where, and as which name), so a TonY config runs as it
 * did under TonY, and a note for each is appended to *notes (may be
 * NULL). With both set, the key tony reads wins and nothing is said. */
void tony_conf_take_older_names(tony_conf *c, tony_strv *notes);

/* A warning (appended to *warnings) for each per-role sizing key the user
 * set (tony.<role>.memory, .vcores, .gpus, .resources) of a job type with
 * no tony.<role>.instances: the key does nothing. Without any instances the
 * job is single-node and tony.am.* size its command, which the warning
 * says. A warning, not a refusal: the job may still be the one wanted. */
void tony_conf_idle_role_keys(const tony_conf *c, tony_strv *warnings);

/* The known key closest to key, or NULL when none is close (exposed for
 * the unit tests); free it. */
char *tony_conf_suggest_key(const char *key);

/* Whether the registry has key (exact or by a <role> pattern). */
bool tony_conf_key_is_known(const char *key);

#endif
