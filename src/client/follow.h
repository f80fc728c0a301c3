/* How `tony submit` shows a job it follows, on every backend. Fed each new
 * job JSON (the coordinator's /v1/job), it prints either plain lines (TonY's
 * grouped status lines, each "tony: ...", when they change, and "tony:
 * TensorBoard at URL (task)" once the link is known), or, on a terminal, a
 * block of grouped status lines (per role: counts by state; the web page and
 * TensorBoard links) redrawn in place as things change, with one-off
 * messages (task failures, restarts, whatever the caller says) printed above
 * it. Plain lines whenever stdout is not a terminal, NO_COLOR is set or
 * TERM is dumb or unset. On a terminal it also shows what the job's chief
 * (or worker:0) writes to its stdout, above the block, as `make demo` does. */
#ifndef TONY_FOLLOW_H
#define TONY_FOLLOW_H

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

typedef struct tony_follow tony_follow;

/* Draws on out; live (the redrawn block) when out is a terminal that wants it. */
tony_follow *tony_follow_new(FILE *out);
/* Leaves what is on the screen as it is, the cursor below the block. */
void tony_follow_free(tony_follow *f);
/* Leaves the block on the screen as it is: what the caller prints next goes
 * below it, and a later update draws a new block. */
void tony_follow_leave(tony_follow *f);
void tony_follow_update(tony_follow *f, const json_t *job);
/* When out is a terminal (live block or not): prints what the job's chief (the task marked so: chief:0,
 * else worker:0), a single-node job's am:0, or else its first task wrote
 * to stdout since the last call, whole lines above the block. Read from
 * the task's file where its log dir is on this machine (it outlives the
 * coordinator), else through the coordinator's API (GET .../log, with the
 * read token from the secret in job_dir, the job's record here): every backend. final: the job is
 * over; a last line without its newline is printed too. Never fails the
 * follow: what cannot be read now is tried at the next call. */
void tony_follow_output(tony_follow *f, const char *job_dir, const json_t *job, bool final);
/* A one-off message to stream (out, or stderr): above the block when live. */
void tony_follow_vsay(tony_follow *f, FILE *stream, const char *fmt, va_list ap);

/* The live block for job at wall-clock now_ms, lines cut to cols columns
 * (ANSI colours included when color): malloc'ed, one '\n' after each line. */
char *tony_follow_block(const json_t *job, long long now_ms, int cols, bool color);

#endif
