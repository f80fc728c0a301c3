/* The coordinator's state machine: the only place where the job's and its
 * tasks' states change. Each function takes one event (a task registered,
 * started, sent a heartbeat, its container ended; the user killed the job;
 * time passed) and appends to a list the actions the coordinator (am.c)
 * must carry out: ask for a container, answer the gang, stop a container,
 * restart the attempt, finish the job. It does no I/O, so whole event
 * sequences run in unit tests without HTTP, processes or a clock. TonY's
 * completion rules (what an exit means) are in here too. */
#ifndef TONY_AM_FSM_H
#define TONY_AM_FSM_H

#include <stdbool.h>

#include "am/cause.h"
#include "am/hang.h"
#include "am/exclusion.h"
#include "am/job.h"
#include "common/error.h"
#include "conf/plan.h"

/* The job's own state. Backends tell of containers only when they end, so
 * waiting for containers and for their executors to register is one state. */
typedef enum {
    AM_JOB_NEW,         /* before the first attempt */
    AM_JOB_REGISTERING, /* containers asked for; not every executor registered yet */
    AM_JOB_RUNNING,     /* every requested task registered (or the single-node command runs) */
    AM_JOB_FINISHING,   /* the attempt is decided: stopping what still runs */
    AM_JOB_BACKOFF,     /* the attempt failed, every container ended: waiting restart_at_ms to restart */
    AM_JOB_DONE,        /* the final status is decided */
} am_job_state;

/* A stop that does not end its container is tried again after
 * AM_FSM_STOP_RETRY_MS, then after twice as long each time, AM_FSM_STOP_TRIES
 * times in all; a container still there 16 s after the last try (31 s
 * after the first) is given up on (left to the backend's shutdown), so that a stop that
 * cannot work (a node that no longer answers, a process table that cannot
 * be read) never holds the job in FINISHING. */
#define AM_FSM_STOP_TRIES 5
#define AM_FSM_STOP_RETRY_MS 1000
/* The most of a task's last words (stderr tail, torch's error report) kept. */
#define AM_FSM_OUTPUT_MAX 8192
/* In-place restarts: an executor told to stop its process has a heartbeat
 * interval plus this long to report it ended (its stop's grace is 2 s);
 * then its container is stopped instead, and asked for anew. */
#define AM_FSM_IN_PLACE_STOP_MS 5000

typedef enum {
    AM_ACT_REQUEST,      /* task: ask the backend for its container (it is REQUESTED now) */
    AM_ACT_RELEASE_GANG, /* answer the executors waiting at the barrier: go, or "ending" once FINISHING */
    AM_ACT_STOP,         /* task (NULL: the single-node command): stop it; try says which time */
    AM_ACT_LOST,         /* task: declared dead for missed heartbeats (its diagnostics say so) */
    AM_ACT_RESTART,      /* the attempt failed, the policy retries it, its backoff is over: record it,
                            then am_fsm_next_attempt */
    AM_ACT_FINISH,       /* the job is decided: final_status and diagnostics are set */
    AM_ACT_HANG,         /* task: idle past tony.task.progress-timeout; every task's stacks are being collected */
    AM_ACT_EXCLUDE_NODE, /* note: a node task's end marked bad; excluded if am_exclusion_has says so, else refused (the cap) */
    AM_ACT_WORLD,        /* elastic jobs: the world changed (tasks left or joined it); world_version and world_note say how */
    AM_ACT_ADOPTED,      /* the recovery from a lost coordinator is over: f->adopted tasks came back; the
                            containers of the last coordinator that no task claimed are to be stopped */
} am_action_kind;

/* How an attempt ended, for people (the job JSON's attempts, the RESTART
 * event, history): an elastic world's change of membership ends the
 * attempt to restart its tasks in place, which is not a failure. */
typedef enum {
    AM_END_NONE,      /* not decided yet */
    AM_END_SUCCEEDED, /* the job's tracked tasks succeeded */
    AM_END_FAILED,    /* a failure, judged by the restart policy */
    AM_END_KILLED,    /* by the user */
    AM_END_RESIZED,   /* the world changed: tasks joined (grown back, tony scale up), left (tony scale down),
                         or one was lost while its role keeps its minimum (its own end stays FAILED) */
} am_attempt_end;

/* The job JSON's word for it (common/jobjson.h's JOB_END_*); NULL for AM_END_NONE. */
const char *am_attempt_end_name(am_attempt_end e);

typedef struct am_action {
    am_action_kind kind;
    am_task *task;
    int try_no;       /* AM_ACT_STOP: 1 for the first stop, up to AM_FSM_STOP_TRIES */
    const char *note; /* AM_ACT_STOP of the single-node command: why, for the log */
} am_action;

typedef struct am_actions {
    am_action *items;
    size_t len, cap;
} am_actions;

void am_actions_free(am_actions *a);

typedef struct am_fsm {
    am_job job; /* the task table of the current attempt */
    am_job_state state;
    int retries_left;        /* tony.am.retry-count, counted down per restart */
    bool in_place;           /* tony.application.restart-mode in-place: restarts keep healthy containers */
    bool killed;             /* by the user: no restart */
    bool timed_out;          /* tony.application.timeout (or the single-node command's): no restart */
    long long started_ms;    /* the first event's clock, for tony.application.timeout */
    long long finished_ms;   /* when DONE */
    am_final_status final_status;
    char *diagnostics;       /* why, once DONE */
    bool restarting;         /* AM_ACT_RESTART given, am_fsm_next_attempt not called yet */
    /* Restart policies (policy.h): in AM_JOB_BACKOFF, when the next attempt
     * starts; why the current attempt may not be retried, whatever the
     * policy (am_fsm_fail_permanently); the last failed attempt's root cause. */
    long long restart_at_ms;
    int quick_failures; /* failed attempts in a row that ran under tony.application.restart-healthy-ms */
    char *permanent;
    am_root_cause root_cause;
    /* The single-node command (plan.single_node): its end decides the job. */
    bool single_running;
    am_hang hang; /* tony.task.progress-timeout: a hang whose stacks are being collected (hang.h) */
    /* Bad nodes and log policies: */
    am_exclusion exclusion;  /* nodes kept off, and those the cap refused */
    int cluster_nodes;       /* the cluster's size as the backend last said (0: not known) */
    /* Coordinator loss (am_fsm_recover): this coordinator replaced a lost
     * one whose task containers still run; their executors come back
     * until recover_until_ms. */
    bool recovering;
    long long recover_until_ms;
    int recover_expected;       /* the containers the backend handed back */
    bool recover_attempt_known; /* the first task that came back named the job's attempt */
    int adopted;                /* tasks that came back: with their process running, or ... */
    int rejoined;               /* ... (of those) waiting at the gang barrier */
    int asked_anew;             /* missing when no gang had formed: their containers asked for again */
    bool recover_failed;        /* this attempt failed for tasks that did not come back (policy.h's coordinator_lost) */
    /* Elastic jobs (tony.<role>.min-instances): the world is the tasks not
     * `out` (job.h). A task lost while its role keeps its minimum restarts
     * the attempt in place on the world's account (not tony.am.retry-count's,
     * no backoff); a task still missing at the barrier settle_at_ms (the
     * attempt's start plus tony.application.elastic-settle-ms), or whose
     * container ends before it registers, leaves the world where every role
     * keeps its minimum without it, and the gang goes with the others, their
     * ranks renumbered densely (am_fsm_world_index). Below the minimum the
     * job waits and fails as it would without elasticity. */
    int world_version;      /* 0, then one more per change (TONY_WORLD_VERSION) */
    long long settle_at_ms; /* while the barrier waits for missing tasks: when it stops waiting; 0: not */
    char *world_note;       /* the last change in words: who left, the world's size (AM_ACT_WORLD) */
    /* Growing back: a task out of the world is asked for again (after a
     * backoff: tony.application.elastic-settle-ms, doubling per try, up to
     * AM_FSM_REJOIN_MAX_SHIFT doublings) while its role has fewer tasks in
     * the world or on their way than world_target (tony.<role>.instances,
     * or what `tony scale` set). Its executor, once registered, waits; the
     * first one starts grow_at_ms (its registration plus the settle time),
     * when every one there joins the world at once: a world that was
     * training restarts in place with them (reworld: the attempt ends on
     * the world's account, not as a failure). */
    int *world_target;      /* per role, in plan order */
    long long grow_at_ms;   /* 0: no task waits to join */
    bool reworld;           /* the attempt ends because the world changes (grow, or scale) */
    /* A lost task's peers often fail first: their collective breaks the
     * moment the task dies, while the backend tells of its container a
     * heartbeat or two later. So in an elastic job an attempt whose first
     * failure is not a loss waits, its containers kept, until loss_wait_ms
     * (that failure plus the settle time) before the restart policy judges
     * it; a loss told meanwhile makes it the world's (world_loss). */
    long long loss_wait_ms; /* 0: not waiting */
    bool loss_wait_over;
    /* How the current attempt ended, once decided (after its containers
     * settled: the restart, or the job's end); and each earlier one's,
     * indexed by attempt number (AM_END_NONE for one this coordinator did
     * not see: a lost coordinator's). */
    am_attempt_end attempt_end;
    am_attempt_end *ends;
    int nends;
    /* What spares the events that come once per task (registrations,
     * starts, exits) a walk over every task (issue 26), beside job.h's
     * counts: the attempt's stops are walked for again once a count says a
     * task needs one, the mode changed (stop_walk_mode: 0 none yet, 1 in
     * place, 2 not), or stop_due_ms (the earliest end of an in-place
     * stop's wait) passed; the elastic growing back once rejoin_due_ms (0:
     * at once) came; memo keeps answers found by a walk until a task they
     * depend on changes (a pointer: the const questions fill it). */
    long long stop_due_ms;
    int stop_walk_mode;
    long long rejoin_due_ms;
    struct am_fsm_memo *memo;
} am_fsm;

#define AM_FSM_REJOIN_MAX_SHIFT 4

/* barrier_poll_ms: how long an executor waiting at the gang barrier may
 * stay silent (its long poll's length, and some). */
void am_fsm_init(am_fsm *f, const tony_plan *plan, long long barrier_poll_ms, long long now_ms);
void am_fsm_free(am_fsm *f);
/* TonY's words for the job state in the API ("RUNNING", "FINISHED", ...). */
const char *am_job_state_name(am_job_state s);
const char *am_final_status_name(am_final_status s);

/* The first attempt starts: the first stage's containers are asked for. */
void am_fsm_start(am_fsm *f, long long now_ms, am_actions *out);
/* Coordinator loss (YARN's next AM attempt with the containers kept):
 * instead of am_fsm_start, when the backend hands back `expected`
 * containers of the coordinator this one replaces. No container is asked
 * for: every task waits for its executor to come back (am_fsm_adopted,
 * am_fsm_rejoined) until until_ms; then, or once `expected` tasks (or all)
 * are back, AM_ACT_ADOPTED. A task still missing then is asked for anew
 * when no task that came back had started its process (the gang had not
 * formed); else it fails the attempt, which the restart policy then judges
 * as any failure. */
void am_fsm_recover(am_fsm *f, int expected, long long until_ms, long long now_ms, am_actions *out);
/* After AM_ACT_RESTART was carried out: the next attempt starts afresh. */
void am_fsm_next_attempt(am_fsm *f, long long now_ms, am_actions *out);
/* An AM_ACT_REQUEST that was not carried out because, meanwhile, the
 * attempt ended: the task is as if never asked for. */
void am_fsm_request_dropped(am_fsm *f, am_task *t, long long now_ms, am_actions *out);

/* What an executor reports when it registers. */
typedef struct am_registration {
    const char *host;
    int port;
    int tb_port;           /* 0: none reserved */
    const char *log_dir;   /* NULL or "": not said */
    const char *container; /* NULL or "": none */
    const char *log_url;   /* NULL: none the backend can read */
} am_registration;

typedef enum {
    AM_REG_NEW,    /* registered now: wait at the barrier */
    AM_REG_AGAIN,  /* already registered (a renewed poll): wait at the barrier */
    AM_REG_ENDING, /* the attempt is over: refused */
} am_reg_result;

am_reg_result am_fsm_registered(am_fsm *f, am_task *t, const am_registration *r, long long now_ms, am_actions *out);
/* An executor of the lost coordinator comes back: its task's process
 * (pid) runs for `attempt` in a container asked for in container_attempt.
 * The task goes on where it was, RUNNING with its address, without a gang
 * or a restart. AM_REG_ENDING: refused (not recovering, no process, the
 * task came back already, or another attempt than the first one back
 * named); its executor stops its process. */
am_reg_result am_fsm_adopted(am_fsm *f, am_task *t, const am_registration *r, int attempt, int container_attempt,
                             int pid, long long now_ms, am_actions *out);
/* While recovering: a task that comes back for an earlier attempt than
 * the one the first task back named (the lost coordinator had begun a
 * restart: some executors already waited for the next attempt) is told to
 * go on to the named one ("next"): its process stops and it comes back
 * waiting at the barrier (am_fsm_rejoined). */
bool am_fsm_superseded(const am_fsm *f, int attempt);
/* The same for an executor that was waiting at the lost coordinator's gang
 * barrier (no process yet): the task is REGISTERED again and its long poll
 * is held; the gang goes once it is whole (AM_ACT_RELEASE_GANG) with the
 * addresses the tasks registered, which are those the lost one had.
 * AM_REG_AGAIN: its long poll again (hold it); AM_REG_ENDING: refused. */
am_reg_result am_fsm_rejoined(am_fsm *f, am_task *t, const am_registration *r, int attempt, int container_attempt,
                              long long now_ms, am_actions *out);

/* The backend says where t's container ran (node; NULL: nowhere yet) and
 * how many nodes the cluster has (0: not known): before am_fsm_exited. */
void am_fsm_node(am_fsm *f, am_task *t, const char *node, int cluster_nodes);
/* The executor says a log policy (conf/logpolicy.h) matched a line of its
 * task's output (stream: "stdout" or "stderr"); it counts if the task fails. */
void am_fsm_log_matched(am_fsm *f, am_task *t, bool fail, const char *policy, const char *stream, const char *line);
/* The register long poll of t's executor (held since am_fsm_registered or
 * am_fsm_rejoined said NEW or AGAIN) was answered: "go", "wait", "next" or
 * "ending". While held, a task at the barrier is not expired for missed
 * heartbeats; from the answer on its silence counts again. */
void am_fsm_poll_answered(am_fsm *f, am_task *t, long long now_ms);
/* That answer was "go": t's executor starts its process now. An attempt
 * ending before its "started" comes stops it as a running one. */
void am_fsm_released(am_fsm *f, am_task *t);
/* The executor started the user's process. */
void am_fsm_started(am_fsm *f, am_task *t, int pid, long long now_ms);

typedef enum {
    AM_HB_OK,   /* keep going */
    AM_HB_STOP, /* the attempt is ending: the executor stops its task itself */
} am_hb_answer;

/* A heartbeat; tensorboard: -1 when not said, else whether TB_PORT serves
 * (*tb_changed tells a change worth showing). */
am_hb_answer am_fsm_heartbeat(am_fsm *f, am_task *t, int tensorboard, long long now_ms, bool *tb_changed);
/* A sign of life that is not a heartbeat (a metrics sample). */
void am_fsm_alive(am_fsm *f, am_task *t, long long now_ms);
/* The executor says its user process ended with exit_code: heartbeats are
 * no longer expected. Reallocating, the result is still the container's
 * exit status (TonY's rule); in place, where the container outlives the
 * process, exit_code is the task's end in this attempt. timed_out: it was
 * killed for tony.task.executor.execution-timeout-ms. */
void am_fsm_result_reported(am_fsm *f, am_task *t, int exit_code, bool timed_out, long long now_ms, am_actions *out);
/* In-place restarts: whether t's executor, its process ended, waits to
 * register for the next attempt (true) or exits, ending its container
 * (false: reallocate mode, no retry left, the job decided, a container
 * being stopped). */
bool am_fsm_keeps_container(const am_fsm *f, const am_task *t);
/* The hook of that decision about the container itself: registered, still
 * there, not being stopped. Bad-node exclusion vetoes here. */
bool am_fsm_may_keep(const am_fsm *f, const am_task *t);
/* A container ended with exit_status (0, YARN's negative codes, or
 * 128+signal): TonY's rules (contract §3.5) plus ours decide what it means. */
void am_fsm_exited(am_fsm *f, am_task *t, int exit_status, const char *diagnostics, long long now_ms,
                   am_actions *out);
/* The attempt cannot go on (e.g. a task's env cannot be built). */
void am_fsm_fail_attempt(am_fsm *f, const char *why, long long now_ms, am_actions *out);
/* The same, and no other attempt could do better (a config error: a task's
 * env cannot be built): no retry whatever the policy; `why` says so. */
void am_fsm_fail_permanently(am_fsm *f, const char *why, long long now_ms, am_actions *out);
/* t's failure (now or when it comes) must not be retried, because of
 * `reason` (e.g. a log policy's `fail` action: "its output matched ...
 * (tony.application.log-policies)"). */
void am_fsm_task_permanent(am_fsm *f, am_task *t, const char *reason);
/* What a task left behind for its root cause (cause.h), as its executor
 * reports it when its process ended, or as read from its log: the tail of
 * its stderr and torch's error file's report (either NULL). */
void am_fsm_task_output(am_fsm *f, am_task *t, const char *stderr_tail, const char *error_report);
/* What a task whose command never ran left in its executor.log (the end of
 * it, and where the file is), for its root cause. */
void am_fsm_task_start_log(am_fsm *f, am_task *t, const char *tail, const char *path);
/* The user asked to kill the job: no restart. */
void am_fsm_kill(am_fsm *f, long long now_ms, am_actions *out);
/* Time passed: heartbeats, the registration and application timeouts,
 * stops to try again. */
void am_fsm_tick(am_fsm *f, long long now_ms, am_actions *out);

/* Hang diagnosis (hang.h). What the executor says with its heartbeat: its
 * user process showed no output or progress for idle_ms. */
void am_fsm_progress(am_fsm *f, am_task *t, long long idle_ms, long long now_ms);
/* Whether t's heartbeat answer asks its executor for its stacks (a hang is
 * being diagnosed and they are not in yet). */
bool am_fsm_wants_stacks(am_fsm *f, am_task *t);
/* t's stacks arrived (the coordinator wrote them): once every running
 * task's are in, the hung attempt fails. */
void am_fsm_stacks_in(am_fsm *f, am_task *t, long long now_ms, am_actions *out);

/* Elastic jobs: t's rank among its role's tasks in the world (dense: the
 * tasks that left are skipped, so rank 0 stays on task 0 while it is
 * there), and how many tasks of role r the world has. */
int am_fsm_world_index(const am_job *j, const am_task *t);
int am_fsm_world_count(const am_job *j, const tony_role *r);

typedef enum {
    AM_SCALE_OK,   /* the target is set; the world changes now or as containers come */
    AM_SCALE_BAD,  /* not elastic, no such role, out of min..max: err says which (the user's mistake) */
    AM_SCALE_BUSY, /* the job is over, or between attempts: err says so */
} am_scale_result;

/* `tony scale`: role's tasks in the world become n (its min-instances ..
 * instances). Fewer: the highest-index tasks leave (their containers
 * stopped) and a world that was training restarts in place without them.
 * More: tasks out of the world are asked for at once and join as they
 * register (growing back, above). */
am_scale_result am_fsm_scale(am_fsm *f, const char *role, int n, long long now_ms, am_actions *out, tony_error *err);

/* The unit tests' self-check, not for production paths: recounts job.h's
 * am_tally counts, nregistered and fsm.c's memo by a walk and compares
 * them with the running ones. 0 when they agree; -1 with err saying which
 * count differs, for which task. */
int am_fsm_check_counts(const am_fsm *f, tony_error *err);

/* Single-node mode: the command runs in the coordinator. */
void am_fsm_single_started(am_fsm *f);
/* Its exit code (0..255, 128+signal) decides the job. */
void am_fsm_single_exited(am_fsm *f, int code, long long now_ms, am_actions *out);

/* The job failed before it could start (bad config, no backend...). */
void am_fsm_fail_job(am_fsm *f, const char *why, long long now_ms, am_actions *out);
/* The coordinator stops before the job ended (a signal after the end). */
void am_fsm_abandon(am_fsm *f, long long now_ms, am_actions *out);

#endif
