/* The coordinator's event log: what happened to the job, in order, in
 * words — attempts, each task requested / registered / started / finished,
 * missed heartbeats, restarts, kills. The newest few thousand stay in memory
 * for GET /v1/events; every event also goes, flushed, to a JSON-lines file
 * when one is given (the job's history keeps them all). */
#ifndef TONY_AM_EVENTS_H
#define TONY_AM_EVENTS_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"

#define AM_EVENTS_KEEP 4000
#define AM_EVENTS_PAGE 1000 /* the most one GET /v1/events returns */

/* Elastic jobs: the world changed (am/fsm.h); its fields: the world's
 * version (TONY_WORLD_VERSION), its size, each role's count, and every
 * task out of it so far. */
#define AM_EVENT_WORLD_CHANGED "WORLD_CHANGED"
#define AM_EVENT_WORLD_VERSION "world_version"
#define AM_EVENT_WORLD_SIZE "world_size"
#define AM_EVENT_WORLD_ROLES "roles"
#define AM_EVENT_WORLD_OUT "out"

typedef struct am_event {
    long long seq; /* 1, 2, ... */
    long long t_ms; /* wall clock */
    char *type;    /* APPLICATION_INITED, ATTEMPT_STARTED, TASK_REQUESTED, ... */
    char *task;    /* "worker:1", or NULL for the job */
    int attempt;
    char *text;
    json_t *data; /* more fields for the event's JSON (host, status, metrics, ...), or NULL */
} am_event;

typedef struct am_events am_events;

am_events *am_events_new(size_t keep);
void am_events_free(am_events *e);
/* Also appends every later event to path as one JSON object per line. */
int am_events_open_log(am_events *e, const char *path, tony_error *err);
const am_event *am_events_add(am_events *e, long long t_ms, const char *type, const char *task, int attempt,
                              const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* The same with more fields: data (stolen; may be NULL) is merged into the
 * event's JSON, e.g. {"status":..,"exit_status":..,"metrics":{..}}. */
const am_event *am_events_add_data(am_events *e, long long t_ms, const char *type, const char *task, int attempt,
                                   json_t *data, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
json_t *am_event_json(const am_event *ev);
/* {"events":[events with seq > since, oldest first, at most limit],
 *  "next": the seq to pass as since next time}. */
json_t *am_events_since_json(const am_events *e, long long since, size_t limit);

#endif
