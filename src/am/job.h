/* The job's task table: every task of one attempt, what happened to it, and
 * questions about the table (who is chief, is the gang complete, which
 * tasks may be asked for now). Only the state machine (fsm.h) changes it;
 * everyone else reads it. */
#ifndef TONY_AM_JOB_H
#define TONY_AM_JOB_H

#include <stdbool.h>

#include "conf/plan.h"

typedef enum {
    AM_TASK_NEW,        /* not asked for yet (a later stage) */
    AM_TASK_REQUESTED,  /* container asked for */
    AM_TASK_REGISTERED, /* executor registered host:port, waits for the gang */
    AM_TASK_RUNNING,    /* user process started */
    AM_TASK_SUCCEEDED,
    AM_TASK_FAILED,
    AM_TASK_FINISHED,   /* stopped by the coordinator (TonY's FINISHED) */
} am_task_state;

/* Running counts over the task table (am_job_tally), so that the questions
 * asked on each of the N registrations, starts and exits of an attempt
 * take O(1), not a walk over N tasks (issue 26). A task is counted in each
 * one whose predicate holds for it; fsm.c says which after every change. */
typedef enum {
    AM_TALLY_REQUESTED,     /* in the world and asked for (not NEW) */
    AM_TALLY_MISSING,       /* of those, neither registered nor ended: the gang barrier waits for it */
    AM_TALLY_NEW_PREPARE,   /* in the world, NEW, of the prepare stage */
    AM_TALLY_NEW_LATER,     /* in the world, NEW, of the training stage */
    AM_TALLY_PREPARE_OPEN,  /* a tracked prepare-stage task not done (the training stage waits) */
    AM_TALLY_TRACKED_OPEN,  /* a tracked task of the world not done */
    AM_TALLY_LIVE,          /* its container has not ended (am_task_live) */
    AM_TALLY_UNSETTLED,     /* live, and not done in a container that may be kept */
    /* Live and not stopped (no stop_tries) yet, by whether it is done in a
     * container that may be kept and whether its executor was told to stop
     * its process in place (stop_asked_ms): what ending an attempt still
     * has to do to it. */
    AM_TALLY_TO_STOP,       /* not done in a keepable container, not told */
    AM_TALLY_KEPT,          /* done in a keepable container, not told */
    AM_TALLY_STOP_ASKED,    /* not done in a keepable container, told */
    AM_TALLY_KEPT_ASKED,    /* done in a keepable container, told */
    AM_TALLY_PERMANENT,     /* its failure must not be retried (permanent) */
    AM_TALLY_WORLD,         /* in the world (not out) */
    AM_TALLY_OUT,           /* out of the world */
    AM_TALLY_GONE,          /* in the world, its container or executor gone (fsm.c's task_gone) */
    AM_TALLY_COMING,        /* in the world, or on its way back (out with a live container) */
    AM_TALLY_REJOINABLE,    /* out, no container, not given up on: may be asked for again */
    AM_TALLY_LOSS,          /* may be an elastic attempt's lost root cause (fsm.c's loss_root) */
    AM_TALLY_N
} am_tally;

typedef enum { AM_FINAL_UNDEFINED, AM_FINAL_SUCCEEDED, AM_FINAL_FAILED, AM_FINAL_KILLED } am_final_status;

/* What a task did in an earlier attempt of the job (each attempt starts
 * every task anew), for people: how often it ran, which logs exist. */
typedef struct am_task_run {
    int attempt;
    am_task_state state; /* where it ended */
    int exit_status;     /* TONY_EXIT_INVALID when no container exit was seen */
    bool started;        /* its user process started */
    char *log_url;       /* that attempt's log link (its container's), or NULL */
} am_task_run;

typedef struct am_task {
    const tony_role *role;
    int index;
    am_task_state state;
    char *host;
    char *log_dir;        /* where its stdout/stderr are, as its executor reported (on its node) */
    char *container;      /* the cluster's container id, when there is one */
    char *log_url;        /* its log link, kept when the backend reads it (YARN: its NodeManager's page) */
    int port;
    int tb_port;          /* TensorBoard's port when this task reserved one (TB_PORT) */
    bool tb_listening;    /* its executor saw something serve on tb_port */
    int pid;
    int exit_status;
    bool exited;          /* its container ended */
    bool result_reported; /* its executor said the user process ended: no more heartbeats expected */
    char *diagnostics;
    long long requested_ms, registered_ms, started_ms, finished_ms, last_heartbeat_ms;
    int stop_tries;       /* stops asked of the backend in this attempt */
    long long stop_ms;    /* the last one */
    bool stop_given_up;   /* AM_FSM_STOP_TRIES stops did not end it: no longer waited for */
    /* Its last words when it failed (root cause, cause.h): the tail of its
     * stderr and torch's error file, as its executor (or the coordinator,
     * reading its log) found them. */
    char *stderr_tail;
    char *error_report;
    /* When its command never ran (its container ended before "started"):
     * the end of its executor.log, and that file's path, where the
     * coordinator could read it (the local backend). */
    char *start_log;
    char *start_log_path;
    char *permanent;      /* non-NULL: its failure must not be retried, because of this (policy.h) */
    /* Hang diagnosis (am/hang.h): how long its user process had shown no
     * output or progress when its executor last said, and when that was. */
    long long idle_ms;      /* as last reported */
    long long idle_seen_ms; /* 0: no report yet (idle is counted from started_ms) */
    bool stacks_in;         /* its stacks arrived (written to the job dir) */
    /* In-place restarts (tony.application.restart-mode): a container
     * outlives the attempt it was asked for in, and the backend knows it by
     * that attempt's number. */
    int container_attempt; /* the attempt its container was asked for in */
    long long stop_asked_ms; /* in place: since when its executor has been told to stop its process (or exit); 0: not */
    bool lost;            /* declared dead for missed heartbeats: its executor no longer answers */
    /* Its executor's register long poll is held (fsm.h, am_fsm_poll_answered):
     * it waits at the gang barrier, alive whatever the time since its last
     * heartbeat (a gang of thousands takes a while to answer). */
    bool polling;
    /* Its executor was answered "go" this attempt: it starts its process,
     * though its "started" may not have come yet; no longer at the barrier. */
    bool released;
    bool node_judgement_due; /* a node-level failure waits for its container's end to name the node (exclusion.h) */
    am_task_run *runs;    /* earlier attempts it got a container in, oldest first; kept across resets */
    /* Bad nodes and log policies (exclusion.h, conf/logpolicy.h), this attempt: */
    char *node;           /* where its container ran, as the backend names it (NULL: not known) */
    char *log_fail;       /* a `fail` log policy matched its output: the policy and the line, in words */
    char *log_exclude;    /* an `exclude-node` one did */
    size_t nruns;
    /* Elastic jobs (fsm.h): the task left the job's world (it was lost, or
     * never came, and its replacement did not come within
     * tony.application.elastic-settle-ms); kept across attempts. The
     * world's tables (gang, tracked tasks, requests) pass it by. */
    bool out;
    /* Growing back (fsm.h): a task out of the world without a container is
     * asked for again at rejoin_at_ms (planned once rejoin_planned), after a
     * backoff that doubles with each try that did not bring it back. */
    bool rejoin_planned;
    long long rejoin_at_ms;
    int rejoin_tries;
    unsigned tallied;     /* the am_tally counts it is in now (bit k: count k) */
    int world_rank;       /* its rank among its role's tasks in the world (fsm.h's am_fsm_world_index) */
} am_task;

typedef struct am_job {
    const tony_plan *plan;
    am_task *tasks; /* every task of every role, in plan order then index */
    size_t ntasks;
    int nregistered; /* tasks with a host (registered this attempt): kept by fsm.c as hosts come and go */
    int tally[AM_TALLY_N]; /* how many tasks each am_tally counts (am_job_tally) */
    int *role_tally;       /* the same per role: AM_TALLY_N per role, in plan order */
    int hosts_version; /* one more each time a task's host is set or cleared (what the cluster spec lists) */
    int attempt;
    /* How long an executor waiting at the gang barrier may stay silent: it
     * sits in a long poll that long, and re-polls at once after. */
    long long barrier_poll_ms;
    /* Set once the attempt must end (a decisive failure, or all tracked tasks
     * done); the coordinator then stops what is still running. */
    bool attempt_over;
    am_final_status attempt_status;
    char *attempt_diagnostics;
    am_task *first_failed; /* the first task of this attempt to fail (root cause), or NULL */
    long long first_failed_ms; /* when it failed */
} am_job;

/* The table of attempt 0, every task NEW; the state machine (fsm.h) is
 * the only one to change it after that. */
void am_job_init(am_job *j, const tony_plan *plan);
void am_job_free(am_job *j);
/* Frees what one attempt of t allocated (its host, log places, diagnostics). */
void am_task_clear(am_task *t);

am_task *am_job_task(am_job *j, const char *role, int index);
const char *am_task_state_name(am_task_state s); /* TonY's names: NEW READY RUNNING SUCCEEDED FAILED FINISHED */
bool am_task_done(const am_task *t);

/* Whether t's executor reserves TB_PORT (TonY §3.8): the `tensorboard`
 * sidecar when the job has one, else the chief. */
bool am_job_reserves_tb_port(const am_job *j, const am_task *t);
/* Tasks whose containers should be asked for now: the prepare stage first,
 * the training stage once every tracked prepare task has ended. */
bool am_job_should_request(const am_job *j, const am_task *t);
/* GANG: every requested task registered. */
bool am_job_gang_ready(const am_job *j);
/* Tasks requested so far / registered so far (running counts). */
int am_job_count_requested(const am_job *j);
int am_job_count_registered(const am_job *j);

/* True when every tracked task has ended. */
bool am_job_tracked_done(const am_job *j);
/* Whether t has a container that has not ended yet (asked for, running,
 * or being stopped; not one given up on). */
bool am_task_live(const am_task *t);

/* t is now counted in the am_tally counts of `bits` (bit k: count k) and
 * no other: moves it from those it was in (t->tallied). Returns the bits
 * that changed. fsm.c calls it after each change to a task. */
unsigned am_job_tally(am_job *j, am_task *t, unsigned bits);
/* How many tasks of role r count in `which`. */
int am_job_role_tally(const am_job *j, const tony_role *r, am_tally which);

#endif
