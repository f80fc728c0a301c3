/* The root cause of a failed attempt, for people: the first task to fail
 * (by time), what its exit means, and its own last words: the error file
 * torch's @record wrote (TORCHELASTIC_ERROR_FILE), else the tail of its
 * stderr (the Python traceback). The state machine keeps one for the last
 * failed attempt; the job's JSON, its diagnostics (so submit, status,
 * history and YARN's application diagnostics) show it. No I/O. */
#ifndef TONY_AM_CAUSE_H
#define TONY_AM_CAUSE_H

#include <jansson.h>
#include <stdbool.h>

#include "am/job.h"

typedef struct am_root_cause {
    char *task;        /* "worker:1"; NULL: no root cause known */
    int attempt;
    int exit_status;   /* TONY_EXIT_INVALID when no exit was seen (lost) */
    char *host;        /* where it ran, when it registered */
    char *error;       /* torch's error file: the message and its traceback, or NULL */
    char *stderr_tail; /* the last lines of its stderr, or NULL */
    char *diagnostics; /* the task's own (the container's word, missed heartbeats...), or NULL */
    /* false: its container ended before its command ran (its executor's
     * setup, the container's start failed), which is then the cause, never
     * the script; its executor.log's end and path where read, and the
     * image it was to run in (the runtime's own exit codes 125-127) */
    bool command_started;
    char *start_log;
    char *start_log_path;
    char *image;
} am_root_cause;

/* Whether t's command ran, by its end: false for a process's exit (not
 * the backend's word for a lost or stopped container) before it said
 * "started" or "finished", when it had not registered (no command to run
 * yet) or with the executor's own code for a setup that failed (amapi.h). */
bool am_cause_command_ran(const am_task *t);

/* c becomes the root cause of attempt `attempt` that t (the first task to
 * fail) gives; what c held before is freed. */
void am_cause_set(am_root_cause *c, const am_task *t, int attempt);
/* The same for a single-node job's command (no task: it runs in the
 * coordinator's place, JOB_SINGLE_NODE_ROLE:0): its exit status, where it
 * ran and its last words (either may be NULL), read by the caller. */
void am_cause_set_single(am_root_cause *c, int attempt, int exit_status, const char *host, const char *error,
                         const char *stderr_tail);
void am_cause_free(am_root_cause *c);
/* "Root cause: worker:1 failed first ...", with its last words indented;
 * NULL when none is known. */
char *am_cause_text(const am_root_cause *c);
/* diagnostics (of any attempt: a restart's keep the earlier causes) with
 * every task's last words (error file, stderr tail) left out, saying
 * where to read them: what a scheduler, which shows them to others (YARN's
 * RM), is told; malloc'ed. */
char *am_cause_without_output(const char *diagnostics);
/* The job JSON's "root_cause" (view.c); NULL when none is known. */
json_t *am_cause_json(const am_root_cause *c);

#endif
