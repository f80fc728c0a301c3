/* The executor's reading of its coordinator's answers (am/api.c, am/watch.c
 * write them): one call turns a verb's HTTP status and JSON body into what
 * the executor acts on, checked first. No I/O, so that it is fuzzed
 * (tests/fuzz/fuzz_executor.c) apart from the executor that runs commands. */
#ifndef TONY_EXECUTOR_REPLY_H
#define TONY_EXECUTOR_REPLY_H

#include <jansson.h>

#include "common/env.h"
#include "common/strv.h"

typedef enum {
    EXEC_ANS_OK,       /* 200 with nothing to act on but what rides along (a heartbeat's stacks, credentials) */
    EXEC_ANS_GO,       /* register: the gang is complete; run command */
    EXEC_ANS_WAIT,     /* register, watch: ask again */
    EXEC_ANS_NEXT,     /* register, finished: the container is kept for next_attempt */
    EXEC_ANS_ADOPTED,  /* register with adopt: a new coordinator took the task back */
    EXEC_ANS_STOP,     /* heartbeat, watch: the attempt is ending; stop the process */
    EXEC_ANS_STALE,    /* heartbeat, watch (409): a newer attempt runs; stop the process */
    EXEC_ANS_REFUSED,  /* the coordinator said no (HTTP other than 200; error says why) */
    EXEC_ANS_INVALID,  /* an answer that breaks the contract (why says how): treated as no answer */
    EXEC_ANS_UNKNOWN,  /* 200 with a status this verb does not expect */
} tony_exec_kind;

/* What the executor holds when it reads an answer. */
typedef struct {
    int attempt;           /* the attempt it works for: a NEXT must name a later one */
    long long credentials; /* the credentials' generation it holds: only newer ones are taken */
    const char *job_dir;   /* a NEXT's log dir must lie inside it; NULL: none may be named */
} tony_exec_held;

typedef struct {
    tony_exec_kind kind;
    char *why;          /* INVALID: what is wrong; OK with refused credentials: why they were left */
    char *error;        /* REFUSED, STOP, STALE: the coordinator's error, when it gave one */
    /* GO */
    char *command;      /* never empty */
    tony_env env;       /* the framework's variables: keys non-empty, without '=' */
    long long timeout_ms; /* the execution timeout; <= 0: none */
    char *log_policies; /* tony.application.log-policies as conf/logpolicy.h parses it; "" when none */
    /* NEXT */
    int next_attempt;   /* > held attempt */
    char *next_log_dir; /* NULL: the output goes on in the container's log dir */
    /* OK of a heartbeat */
    bool dump_stacks;
    long long credentials; /* > held generation, with credentials_data; 0: none */
    tony_buf credentials_data;
} tony_exec_answer;

/* Reads body (may be NULL: no JSON) as the answer to verb (AM_API_REGISTER,
 * _HEARTBEAT, _WATCH, _FINISHED; any other gets OK, REFUSED or UNKNOWN)
 * given HTTP status http. Fills *a (free with tony_exec_answer_free) and
 * returns a->kind. */
tony_exec_kind tony_exec_reply_read(const char *verb, long http, const json_t *body, const tony_exec_held *held,
                                    tony_exec_answer *a);
void tony_exec_answer_free(tony_exec_answer *a);

/* The job dir a task's first log dir lies in: log_dir less its
 * "/attempts/<attempt>/<role>-<index>" (common/jobdir.h's layout); NULL
 * (a cluster's container log dir) when it has another form. Malloc'ed. */
char *tony_exec_job_dir_of(const char *log_dir, int attempt, const char *role, int index);

#endif
