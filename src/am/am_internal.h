/* The coordinator's state, which its files share (am.c carries out the
 * state machine's actions, api.c serves HTTP, record.c records, view.c
 * renders, logfetch.c reads logs through the backend); nothing outside am/
 * includes this. Each of those files has its own header for what the
 * others may call, and none calls back into am.c. */
#ifndef TONY_AM_INTERNAL_H
#define TONY_AM_INTERNAL_H

#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <time.h>

#include "am/events.h"
#include "am/history.h"
#include "am/fsm.h"
#include "am/metrics.h"
#include "am/rendezvous.h"
#include "backend/backend.h"
#include "common/apiauth.h"
#include "common/clock.h"
#include "common/hostcheck.h"
#include "common/httpserver.h"
#include "common/readtoken.h"
#include "common/reaper.h"
#include "common/strv.h"
#include "conf/conf.h"
#include "conf/plan.h"
#include "runtime/runtime.h"

/* The API's part (api.c: its HTTP server, the Host check, the read gate,
 * signed calls seen, executors' held polls, the "go" answers' cache, the
 * notebook proxy's DNS; made by am_api_start). */
typedef struct am_api am_api;

/* The recorder's part (record.c: the event log, the history files, each
 * task's metrics in this attempt, why status.json or the history could not
 * be written; made by am_record_start). */
typedef struct am_recorder am_recorder;

/* Executors' held watches (watch.c's part: made on the first watch). */
typedef struct am_watches am_watches;

/* A log read by the backend in flight, with its client (logfetch.c). */
typedef struct am_logfetch am_logfetch;
/* A failed task's stderr tail read by the backend, its exit held (lastfetch.c). */
typedef struct am_lastfetch am_lastfetch;

typedef struct tony_am {
    struct event_base *base;
    tony_reaper *reaper;
    tony_conf *conf;
    tony_plan plan;
    const tony_runtime *runtime;
    am_fsm fsm;          /* the job's and its tasks' states: changed only through fsm.h */
    am_actions pending;  /* what the state machine decided, for am.c to carry out */
    struct event *act_ev; /* run by am_kick: carries pending out from the loop */
    bool carrying;       /* am.c is carrying actions out (they queue meanwhile) */
    bool client_finished; /* the client said it read the final state */
    tony_backend *backend;
    am_rendezvous *rendezvous; /* frameworks that rendezvous through us (Horovod) */
    char *job_dir;
    char *app_id;
    char *secret;
    char *self_exe;
    char *host; /* address executors reach us at */
    int port;
    char *url;
    char *read_token;     /* GETs need it (common/readtoken.h): the secret's, set at setup */
    long long started_ms;
    long long wall_offset_ms; /* wall clock minus monotonic clock, at start */
    am_api *api;              /* the API's (api.c) */
    am_watches *watches;  /* executors' watches, answered "stop" when due (watch.c) */
    struct event *tick;
    struct event *exit_timer;
    struct event *sigterm, *sigint;
    /* Single-node mode: the user's command runs in the coordinator. */
    int single_pid;       /* while it runs */
    bool single_exited;
    int single_exit_code; /* once it exited: 0..255, 128+signal */
    tony_am_place single; /* where it runs and logs (empty before it starts) */
    char *shared_dir;     /* TONY_JOB_DIR for tasks; NULL when none is shared */
    bool on_cluster;      /* in a cluster's container (YARN), not on the user's machine */
    bool status_dirty;
    am_recorder *rec;     /* what the job did, for people (record.c) */
    am_logfetch *logfetches; /* log reads by the backend in flight */
    am_lastfetch *lastfetches; /* stderr tails of failed tasks read by the backend, their exits held */
} tony_am;

/* Deadlines run on a monotonic clock, immune to clock steps; am_wall_ms
 * turns one of its readings into wall-clock ms for people. */
static inline long long am_now_ms(void) { return tony_now_ms(); }

static inline long long am_wall_clock_ms(void) { return tony_wall_ms(); }

/* One offset, taken at start, so that a time reads the same in every answer
 * (the job's ETag depends on it). */
static inline long long am_wall_ms(const tony_am *am, long long mono_ms) { return mono_ms + am->wall_offset_ms; }

/* Has the loop carry out am->pending soon (from the loop, never from inside
 * the caller): the API feeds the state machine events and leaves the
 * actions to am.c this way, so it never calls into am.c. */
static inline void am_kick(tony_am *am) { event_active(am->act_ev, 0, 0); }

#endif
