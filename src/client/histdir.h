/* The job history tree read back: finished/yyyy/mm/dd/<appId>/ and
 * intermediate/<appId>/ as a list of jobs, and one job in full (events,
 * tasks with exit meanings and metrics, right-sizing, config, metric
 * series). Shared by `tony history` and `tony portal`. Reading never fails
 * on a broken or half-written job: what cannot be read is named in the
 * job's "problems" and the rest is shown. */
#ifndef TONY_HISTDIR_H
#define TONY_HISTDIR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "common/jhist.h"
#include "conf/conf.h"

typedef struct tony_hist_job {
    tony_jhist_meta meta; /* from the .jhist's name; a dir without one: its name, status UNKNOWN */
    char *dir;
    char *file; /* the .jhist chosen (TonY's rule: the newest start), NULL when the dir has none */
    char *tree; /* the real path of the tree it was found in: every file read must lie in it */
} tony_hist_job;

typedef struct tony_hist_list {
    tony_hist_job *items;
    size_t len, cap;
} tony_hist_list;

/* Where the history is: a --location flag replaces the whole tree, as
 * tony.history.location does; else the conf's keys, else <root>/history. */
void tony_hist_dirs_from(const tony_conf *conf, const char *location_flag, const char *root, tony_jhist_dirs *out);

/* Both trees of d into out, newest start first. Directories that cannot be
 * read are skipped. */
void tony_hist_scan(const tony_jhist_dirs *d, tony_hist_list *out);
void tony_hist_list_free(tony_hist_list *l);
const tony_hist_job *tony_hist_find(const tony_hist_list *l, const char *app_id);

/* What an app id may look like before it is looked up: letters, digits,
 * '_', '-', '.', not starting with '.', under 128 characters (no '/'). */
bool tony_hist_valid_id(const char *s);
/* A role name as the plan allows: [a-z]+, under 64 characters. */
bool tony_hist_valid_role(const char *s);

/* {"app_id","user","status","started_ms","finished_ms","duration_ms",
 * "in_progress","file","dir"}: what the file's name says. */
json_t *tony_hist_job_json(const tony_hist_job *j);

/* Why a job whose history says it is still running is not: its
 * coordinator on this machine (found through <root>/jobs/<appId>/) is gone,
 * or YARN said the application ended, and nobody finished the history
 * (kill -9, a crash, a lost node). malloc'ed sentence, or NULL when it may
 * well be running or this machine cannot tell. */
char *tony_hist_lost_reason(const tony_hist_job *j, const char *root);
/* With such a reason, o (a job's JSON) gets "status": "LOST", "lost": the
 * reason, and the reason among its "problems". */
void tony_hist_note_lost(json_t *o, const tony_hist_job *j, const char *root);

/* A history tree is written by the jobs of everyone who runs them, and read
 * by a portal that may serve it to others: each of a job's files is opened
 * as the portal opens logs (no symbolic link, a regular file, inside the
 * tree: tony_open_within) and read only when it has at most so many bytes;
 * a larger one is a problem that says so, never read. */
#define TONY_HIST_JHIST_MAX (128u << 20)
#define TONY_HIST_EVENTS_MAX (128u << 20)
#define TONY_HIST_METRICS_MAX (128u << 20)
/* (tony-final.xml: TONY_CONF_FILE_MAX, as any configuration file.) */

/* What tony-final.xml says for the job list: {"name","framework",
 * "queue","roles":{"worker":2,..},"task_count":N}; -1 with err when it cannot be
 * read. */
int tony_hist_conf_facts(const tony_hist_job *j, json_t **out, tony_error *err);

enum { TONY_HIST_WITH_CONFIG = 1 };
/* The job in full: tony_hist_job_json plus "events" (the .jhist's records),
 * "log" (events.jsonl), "tasks" (per role:index, the last attempt's word:
 * status, exit status and meaning, diagnostics, host, container, log dir,
 * requested resources, metric aggregates, "series_attempts" with a plot),
 * "advice", "problems" (sentences) and, with TONY_HIST_WITH_CONFIG,
 * "config" ([{"key","value","source"}] of tony-final.xml). */
json_t *tony_hist_job_detail(const tony_hist_job *j, int flags);

/* One task's metric series from the job's metrics file: the arrays of
 * am_metrics_series_json plus "role", "index", "attempt". attempt < 0: the
 * last attempt that has one. NULL with err when there is none. */
json_t *tony_hist_task_series(const tony_hist_job *j, const char *role, int index, int attempt, tony_error *err);

#endif
