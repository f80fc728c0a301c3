/* The configuration flags every client verb takes as `tony submit` does,
 * --conf K=V (repeatable) and --conf_file FILE, over TonY's layers: so that
 * what a user's tony.xml says (tony.local.root, tony.history.location, the
 * cluster's fs.* and yarn.* keys) reaches status, kill, logs, list, history
 * and portal as it reaches submit. */
#ifndef TONY_CONFARGS_H
#define TONY_CONFARGS_H

#include "client/args.h"
#include "common/error.h"
#include "conf/conf.h"

/* The two entries for a verb's option table. */
#define TONY_CONF_OPTS                                                                                        \
    {"conf", NULL, true, true, "K=V configuration override (repeatable)", false, {0}},                        \
    {"conf_file", NULL, true, false, "tony.xml to use instead of ./tony.xml", false, {0}}

/* Fills c in TonY's order: built-in defaults, --conf_file (or ./tony.xml),
 * $TONY_CONF_DIR/tony-site.xml, then each --conf in the order given. opts
 * must hold TONY_CONF_OPTS. Errors name the flag or the file. */
int tony_confargs_load(tony_opt *opts, tony_conf *c, tony_error *err);

/* The tony root a verb works in (malloc'ed): --root when opts has it and it
 * was given, else tony.local.root, else $TONY_HOME, else ~/.tony. */
char *tony_confargs_root(tony_opt *opts, const tony_conf *c);

#endif
