/* The coordinator's job history, laid out as TonY's: while the job runs,
 * <intermediate>/<appId>/ holds tony-final.xml, the Avro event file
 * <appId>-<startMs>-<user>.jhist.inprogress and our event log events.jsonl;
 * at the end the file is renamed <appId>-<startMs>-<endMs>-<user>-<STATUS>.jhist
 * and the directory moved to <finished>/yyyy/mm/dd/<appId>/ (TonY leaves that
 * move to its portal's HistoryFileMover). With a mirror (HDFS on YARN) the
 * same tree is kept in the coordinator's work dir and copied to the
 * mirror's dirs when the job starts, when an attempt ends and at the end,
 * off the loop (backend/history_mirror.h). */
#ifndef TONY_AM_HISTORY_H
#define TONY_AM_HISTORY_H

#include <stdbool.h>

#include "backend/history_mirror.h" /* tony_am_history_mirror: the backend's, handed in */
#include "common/error.h"
#include "common/jhist.h"
#include "conf/conf.h"

struct event_base;

typedef struct am_history am_history;

/* Creates the directories of `local` when missing (TonY writes only when
 * intermediate/ already exists): the job's own dir made here, never one
 * another user made at its name (refused: fs.h's tony_mkdir_own), copies conf_path in as tony-final.xml and
 * opens the event file. mirror (may be NULL) and its dirs `remote`: where
 * the tree is copied, with the mirror's answers coming on base's loop; the
 * caller keeps mirror alive. */
am_history *am_history_new(const tony_jhist_dirs *local, struct event_base *base,
                           const tony_am_history_mirror *mirror, const tony_jhist_dirs *remote, const char *conf_path,
                           const char *app_id, long long start_ms, tony_error *err);
/* The finished tree am_history_finish moves the job into when the one of
 * `local` refuses it (a directory there another user made): the owner's
 * own. NULL: none. */
void am_history_set_fallback(am_history *h, const char *finished);
/* Before base is freed. A copy still out or waiting is given up (and
 * logged): wait for am_history_settled first, as long as one can. */
void am_history_free(am_history *h);
/* The job's history directory (changes when am_history_finish moves it). */
const char *am_history_dir(const am_history *h);
const char *am_history_file(const am_history *h);
/* The writer of the .jhist file, NULL after finishing or stopping. */
tony_jhist_writer *am_history_writer(am_history *h);
/* After a failed write (a full disk): the .jhist is closed as it stands,
 * whole up to its last event (the writer cuts a half-written one), and
 * takes no more; am_history_finish still names and moves it, so the job's
 * history is shorter, not lost or unreadable. */
void am_history_stop_writing(am_history *h);
/* Copies the job's files as they are now to the mirror's intermediate dir
 * (tony-final.xml the first time), off the loop; a copy asked for while
 * one runs waits for it, and replaces any copy waiting. History is best
 * effort: the first failure is logged and the mirror is not used again. */
void am_history_sync(am_history *h);
/* No copy to the mirror is out or waiting. */
bool am_history_settled(const am_history *h);
/* Closes the event file, renames it for status and moves the directory to
 * the finished tree, then asks the mirror for the same (after the copy out,
 * in place of any waiting): the files to <finished>/yyyy/mm/dd/<appId>/
 * (with the .jhist files of earlier coordinators of the job), and
 * <intermediate>/<appId>/ removed. A mirror failure is logged, not
 * returned. */
int am_history_finish(am_history *h, long long end_ms, const char *status, tony_error *err);
/* Where the history is for people: the mirror's hdfs:// URI of the job dir
 * (the finished one after am_history_finish), else the local dir.
 * malloc'ed. */
char *am_history_where(const am_history *h);
/* The user history files are named after: the login name, lower-cased as
 * TonY's portal expects. malloc'ed. */
char *am_history_user(void);

#endif
