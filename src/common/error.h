/* Errors a user can act on. Functions that can fail return an int (0 = ok,
 * -1 = failed) and fill a tony_error with a sentence naming the key, file, flag
 * or host involved and what to do; only main() decides to exit. */
#ifndef TONY_ERROR_H
#define TONY_ERROR_H

typedef struct tony_error {
    char msg[2048];
} tony_error;

/* Sets err's message (err may be NULL) and returns -1, so callers can write
 * `return tony_err(err, "...")`. */
int tony_err(tony_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes err's existing message with more context ("while X: <old>"). */
int tony_err_wrap(tony_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
