/* The coordinator's job history, laid out as TonY's: while the job runs,
 * <intermediate>/<appId>/ holds tony-final.xml, the Avro event file
 * <appId>-<startMs>-<user>.jhist.inprogress and our event log events.jsonl;
 * at the end the file is renamed <appId>-<startMs>-<endMs>-<user>-<STATUS>.jhist
 * and the directory moved to <finished>/yyyy/mm/dd/<appId>/ (TonY leaves that
 * move to its portal's HistoryFileMover). */
#ifndef TONY_AM_HISTORY_H
#define TONY_AM_HISTORY_H

#include "common/error.h"
#include "common/jhist.h"
#include "conf/conf.h"

typedef struct am_history am_history;

/* Creates the directories when missing (TonY writes only when intermediate/
 * already exists), copies conf_path in as tony-final.xml and opens the event
 * file. local_root: the tony root that holds the default location. */
am_history *am_history_new(const tony_conf *conf, const char *conf_path, const char *local_root, const char *app_id,
                           long long start_ms, tony_error *err);
void am_history_free(am_history *h);
/* The job's history directory (changes when am_history_finish moves it). */
const char *am_history_dir(const am_history *h);
const char *am_history_file(const am_history *h);
/* The writer of the .jhist file, NULL after finishing. */
tony_jhist_writer *am_history_writer(am_history *h);
/* Closes the event file, renames it for status and moves the directory to
 * the finished tree. */
int am_history_finish(am_history *h, long long end_ms, const char *status, tony_error *err);
/* The user history files are named after: the login name, lower-cased as
 * TonY's portal expects. malloc'ed. */
char *am_history_user(void);

#endif
