/* TonY's job history files (contract §6.1-6.2): Avro data files of `Event`
 * records (com.linkedin.tony.events), named after the job, its start and end
 * times, its user and final status, so that TonY's portal and Dr. Elephant
 * read ours. The coordinator writes them; `tony history` reads them. */
#ifndef TONY_JHIST_H
#define TONY_JHIST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

#define TONY_JHIST_SUFFIX ".jhist"
#define TONY_JHIST_INPROGRESS_SUFFIX ".jhist.inprogress"
/* Beside the .jhist in a job's history dir: our event log (JSON lines, as
 * events happen) and, written as each attempt ends, every task's final state
 * and metric series ({"app_id","coordinator_started_ms","attempts":
 * [{"attempt","interval_ms","tasks":[..]}]}). */
#define TONY_JHIST_EVENTS_LOG "events.jsonl"
#define TONY_JHIST_METRICS "metrics.json"

/* The Event schema as JSON. */
const char *tony_jhist_schema(void);

/* <appId>-<startMs>-<user>.jhist.inprogress */
char *tony_jhist_inprogress_name(const char *app_id, long long start_ms, const char *user);
/* <appId>-<startMs>-<endMs>-<user>-<STATUS>.jhist */
char *tony_jhist_final_name(const char *app_id, long long start_ms, long long end_ms, const char *user,
                            const char *status);

/* What a history file's name says about its job. */
typedef struct tony_jhist_meta {
    char app_id[128];
    char user[128];
    char status[32]; /* "RUNNING" for an in-progress file */
    long long start_ms, end_ms; /* end_ms 0 while in progress */
    bool in_progress;
} tony_jhist_meta;
/* False when name is not a history file name (TonY's portal ignores it too). */
bool tony_jhist_parse_name(const char *name, tony_jhist_meta *m);

/* Where history lives: tony.history.location, .intermediate and .finished
 * as configured, TonY's "/path/to/..." placeholders meaning unset. Unset
 * location: <local_root>/history (the tony root, see jobdir.h); unset
 * intermediate/finished: <location>/intermediate and <location>/finished. */
typedef struct tony_jhist_dirs {
    char *location, *intermediate, *finished;
} tony_jhist_dirs;
void tony_jhist_dirs_resolve(const char *location, const char *intermediate, const char *finished,
                             const char *local_root, tony_jhist_dirs *out);
void tony_jhist_dirs_free(tony_jhist_dirs *d);
/* <finished>/yyyy/mm/dd/<appId> for a job that ended at end_ms (UTC). */
char *tony_jhist_finished_dir(const char *finished, long long end_ms, const char *app_id);

/* A metric of a TASK_FINISHED event. */
typedef struct tony_jhist_metric {
    const char *name;
    double value;
} tony_jhist_metric;

typedef struct tony_jhist_writer tony_jhist_writer;

/* Creates path (which must not exist) as an Avro data file of Events. */
tony_jhist_writer *tony_jhist_writer_new(const char *path, tony_error *err);
/* Each event is flushed to the file before returning: a coordinator that
 * dies keeps what it wrote. container_id may be NULL. */
int tony_jhist_application_inited(tony_jhist_writer *w, long long t_ms, const char *app_id, int num_tasks,
                                  const char *host, const char *container_id, tony_error *err);
int tony_jhist_task_started(tony_jhist_writer *w, long long t_ms, const char *type, int index, const char *host,
                            const char *container_id, tony_error *err);
int tony_jhist_task_finished(tony_jhist_writer *w, long long t_ms, const char *type, int index, const char *status,
                             const tony_jhist_metric *metrics, size_t nmetrics, const char *diagnostic,
                             tony_error *err);
int tony_jhist_application_finished(tony_jhist_writer *w, long long t_ms, const char *app_id, int finished_tasks,
                                    int failed_tasks, tony_error *err);
void tony_jhist_writer_free(tony_jhist_writer *w); /* closes the file */

/* Reads every Event of a history file as
 * [{"type":"TASK_FINISHED","timestamp":ms,"event":{<the record's fields>}}],
 * unions unwrapped (null or the value), with a careful decoder of its own
 * (avroread.h). An in-progress file's cut-off last block is not an error.
 * A damaged file: -1, err naming it and the byte, and *events the events
 * before the damage (the caller frees them), NULL when there are none. */
int tony_jhist_read(const char *path, json_t **events, tony_error *err);
/* The same from the file's bytes, read by the caller (path for messages). */
int tony_jhist_decode(const char *path, const char *data, size_t len, json_t **events, tony_error *err);

#endif
