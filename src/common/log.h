/* The process-wide logger: one line per event, "2026-11-21 12:00:00 LEVEL
 * [who] message", to stderr or to a file chosen at start-up. */
#ifndef TONY_LOG_H
#define TONY_LOG_H

#include <stdio.h>

typedef enum { TONY_LOG_DEBUG, TONY_LOG_INFO, TONY_LOG_WARN, TONY_LOG_ERROR } tony_log_level;

/* who: "am", "executor worker:1", ...; out: NULL means stderr. TONY_LOG_LEVEL
 * (debug|info|warn|error) in the environment sets the threshold. */
void tony_log_init(const char *who, FILE *out);
void tony_log(tony_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The message of the last line at `level` that this logger wrote in text
 * (a log file's end), malloc'ed; NULL when there is none. */
char *tony_log_last_message(const char *text, tony_log_level level);

#define tony_debug(...) tony_log(TONY_LOG_DEBUG, __VA_ARGS__)
#define tony_info(...) tony_log(TONY_LOG_INFO, __VA_ARGS__)
#define tony_warn(...) tony_log(TONY_LOG_WARN, __VA_ARGS__)
#define tony_error_log(...) tony_log(TONY_LOG_ERROR, __VA_ARGS__)

#endif
