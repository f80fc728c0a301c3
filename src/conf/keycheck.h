/* Typos in tony.* keys: a key that is no key tony (or TonY) reads but is
 * close to one is refused before anything starts, naming the key it
 * resembles; TonY users' configs are long and typed by hand, and a
 * misspelled key silently ignored runs the wrong job. Keys outside tony.*
 * are never checked (they are the user's own, or Hadoop's). */
#ifndef TONY_CONF_KEYCHECK_H
#define TONY_CONF_KEYCHECK_H

#include "common/error.h"
#include "common/strv.h"
#include "conf/conf.h"

/* Every tony.* key the user set (any source but the built-in defaults):
 * -1 and an error for the first one close to a known key ("did you mean");
 * unknown keys close to nothing are added to *unknown (may be NULL), for a
 * note: TonY allows any tony.<type>.<resource>, so they may be meant. */
int tony_conf_check_keys(const tony_conf *c, tony_strv *unknown, tony_error *err);

/* The known key closest to key, or NULL when none is close (exposed for
 * the unit tests); free it. */
char *tony_conf_suggest_key(const char *key);

/* Whether tony or TonY reads key (exact, a <type> pattern or a prefix). */
bool tony_conf_key_is_known(const char *key);

#endif
