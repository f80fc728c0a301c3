/* `tony scale JOB ROLE=N`: resizes a role of a running elastic job through
 * its coordinator's API (POST AM_API_JOB_SCALE, signed with the job's key),
 * within tony.<role>.min-instances .. tony.<role>.instances (docs/elastic.md). */
#ifndef TONY_CLIENT_SCALE_H
#define TONY_CLIENT_SCALE_H

#include "common/error.h"

/* Exit codes: TONY_EXIT_OK once the coordinator took the new size;
 * TONY_EXIT_USAGE for a bad request (syntax, not elastic, no such role,
 * out of bounds, said by the coordinator); TONY_EXIT_UNAVAILABLE when no
 * coordinator runs or it cannot take it now. */
int tony_cmd_scale(int argc, char **argv);

/* Parses "ROLE=N" (N a non-negative integer). -1 with err naming the word. */
int tony_scale_parse(const char *word, char **role, int *n, tony_error *err);

#endif
