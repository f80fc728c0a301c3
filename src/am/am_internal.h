/* The coordinator's handle (tony_am): the state its files share. am.c owns
 * it, sets it up and carries out the state machine's actions; api.c (the
 * HTTP API), record.c (event log, history, metrics), view.c (the job as
 * JSON), taskenv.c (tasks' environment), stacks.c (hang diagnosis),
 * watch.c, logfetch.c and lastfetch.c (log reads through the backend) take
 * it. Outside am/ only tests include it (the API's fuzzer builds one).
 *
 * As curl groups its handle, each part is written by one file: the job's
 * identity (am_ident) by am.c as it sets up (port and url by api.c as it
 * starts listening), then only read; single-node mode's (am_single) by
 * am.c; the API's, the recorder's, the watches', the log reads' and am.c's
 * loop are opaque, defined in their owner's .c and reached through its
 * header. What is left at the top is what several files use as the job
 * goes: the loop, the configuration and plan, the state machine and the
 * actions it decided, the backend. This header includes none of its
 * users' headers, so that am/ has no include cycle (scripts/check-layers). */
#ifndef TONY_AM_INTERNAL_H
#define TONY_AM_INTERNAL_H

#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <stdbool.h>

#include "am/fsm.h"
#include "am/rendezvous.h"
#include "backend/backend.h"
#include "common/clock.h"
#include "common/reaper.h"
#include "common/strv.h"
#include "conf/conf.h"
#include "conf/plan.h"
#include "runtime/runtime.h"

/* Who the job and this coordinator are: set once by am.c's setup (port
 * and url by am_api_start as it listens; started_ms moved back by a
 * coordinator that replaced a lost one, before the loop runs), read-only
 * once the loop runs. */
typedef struct am_ident {
    char *app_id;
    char *job_dir;
    char *secret;
    char *read_token; /* GETs need it (common/readtoken.h): the secret's */
    char *host;       /* address executors reach us at */
    int port;
    char *url;
    long long started_ms;     /* monotonic */
    long long wall_offset_ms; /* wall clock minus monotonic clock, at start */
    char *self_exe;           /* this binary, for the single-node command's executor */
    char *shared_dir;         /* TONY_JOB_DIR for tasks; NULL when none is shared */
    bool on_cluster;          /* in a cluster's container (YARN), not on the user's machine */
} am_ident;

/* Single-node mode: the user's command runs in the coordinator. Written by
 * am.c; view.c and api.c read it (its task's JSON and logs). */
typedef struct am_single {
    int pid;             /* while it runs */
    bool exited;
    int exit_code;       /* once it exited: 0..255, 128+signal */
    tony_am_place place; /* where it runs and logs (empty before it starts) */
} am_single;

/* The API's part (api.c: its HTTP server, the Host check, the read gate,
 * signed calls seen, executors' held polls, the "go" answers' cache, the
 * notebook proxy's DNS; made by am_api_start). */
typedef struct am_api am_api;
/* The recorder's part (record.c: the event log, the history files, each
 * task's metrics in this attempt, why status.json or the history could not
 * be written; made by am_record_start). */
typedef struct am_recorder am_recorder;
/* Executors' held watches (watch.c: made on the first watch). */
typedef struct am_watches am_watches;
/* A log read by the backend in flight, with its client (logfetch.c). */
typedef struct am_logfetch am_logfetch;
/* A failed task's stderr tail read by the backend, its exit held (lastfetch.c). */
typedef struct am_lastfetch am_lastfetch;
/* am.c's loop: its timers and signals (am.c). */
typedef struct am_loop am_loop;

typedef struct tony_am {
    struct event_base *base;
    tony_reaper *reaper; /* children's exits: the single-node command's (am.c), the backend's */
    tony_conf *conf;
    tony_plan plan;
    const tony_runtime *runtime;
    am_fsm fsm;           /* the job's and its tasks' states: changed only through fsm.h */
    am_actions pending;   /* what the state machine decided, for am.c to carry out */
    struct event *act_ev; /* run by am_kick: carries pending out from the loop */
    bool carrying;        /* am.c is carrying actions out (they queue meanwhile) */
    bool status_dirty;    /* status.json is behind the job: am.c rewrites it on its tick */
    bool client_finished; /* the client said it read the final state (api.c: am.c ends sooner) */
    tony_backend *backend;
    am_rendezvous *rendezvous; /* frameworks that rendezvous through us (Horovod): am.c's, api.c scopes it */
    am_ident id;
    am_single single;
    am_api *api;
    am_recorder *rec;
    am_watches *watches;
    am_logfetch *logfetches;   /* log reads by the backend in flight */
    am_lastfetch *lastfetches; /* stderr tails of failed tasks read by the backend, their exits held */
    am_loop *loop;
} tony_am;

/* Deadlines run on a monotonic clock, immune to clock steps; am_wall_ms
 * turns one of its readings into wall-clock ms for people. */
static inline long long am_now_ms(void) { return tony_now_ms(); }

static inline long long am_wall_clock_ms(void) { return tony_wall_ms(); }

/* One offset, taken at start, so that a time reads the same in every answer
 * (the job's ETag depends on it). */
static inline long long am_wall_ms(const tony_am *am, long long mono_ms) { return mono_ms + am->id.wall_offset_ms; }

/* Has the loop carry out am->pending soon (from the loop, never from inside
 * the caller): the API feeds the state machine events and leaves the
 * actions to am.c this way, so it never calls into am.c. */
static inline void am_kick(tony_am *am) { event_active(am->act_ev, 0, 0); }

#endif
