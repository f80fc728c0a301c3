/* Log policies (tony.application.log-policies): regular expressions on a
 * task's output, each paired with what a match means when the task fails:
 * `fail` (the failure is the user's for good: no restart) or
 * `exclude-node` (the node is bad: later containers go elsewhere). Parsed
 * here once for everyone: the client refuses a bad value at submit, the
 * coordinator hands the value to executors, executors compile and match. */
#ifndef TONY_CONF_LOGPOLICY_H
#define TONY_CONF_LOGPOLICY_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "conf/conf.h"
#include "conf/keys.h"

#define TONY_LOGPOLICY_KEY TONY_KEY_APP_LOG_POLICIES

/* What is used when the key is unset; an empty value turns them all off.
 * Entries are ACTION:REGEX, comma-separated ("\," is a comma inside a
 * regex); a leading (?i) makes the match case-insensitive. */
#define TONY_LOGPOLICY_DEFAULTS                                                                                    \
    "fail:CUDA out of memory, fail:ModuleNotFoundError: No module named, "                                         \
    "exclude-node:(?i)uncorrectable ECC error"

typedef enum { TONY_LOGPOLICY_FAIL, TONY_LOGPOLICY_EXCLUDE_NODE } tony_logpolicy_action;

typedef struct tony_logpolicy {
    tony_logpolicy_action action;
    char *text;    /* the entry as written, trimmed ("fail:CUDA out of memory"): its name for people */
    regex_t re;    /* POSIX extended, REG_NOSUB */
} tony_logpolicy;

typedef struct tony_logpolicies {
    tony_logpolicy *items;
    size_t len;
} tony_logpolicies;

/* Parses and compiles value (NULL: the defaults). An error names the key,
 * the entry and what is wrong with it (unknown action, bad regex). */
int tony_logpolicies_parse(const char *value, tony_logpolicies *out, tony_error *err);
/* The job's value: the key's, or the defaults when it is unset. */
const char *tony_logpolicies_value(const tony_conf *c);
void tony_logpolicies_free(tony_logpolicies *p);

const char *tony_logpolicy_action_name(tony_logpolicy_action a); /* "fail" | "exclude-node" */
/* false for a word that is no action. */
bool tony_logpolicy_action_parse(const char *word, tony_logpolicy_action *out);

#endif
