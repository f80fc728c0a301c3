/* A failed task's last words, for its root cause: the last lines of its
 * stderr (the Python traceback) and the report torch's @record decorator
 * writes to TORCHELASTIC_ERROR_FILE. Read by the executor when its user's
 * process ends, and by the coordinator from a task's log when the
 * container died without saying. Bounded, valid UTF-8 whatever the file
 * holds (what comes out goes into JSON), and what a terminal would show of
 * it: no escape sequences (colors, a progress bar's carriage returns). */
#ifndef TONY_LASTWORDS_H
#define TONY_LASTWORDS_H

#include <stdbool.h>
#include <stddef.h>

#define TONY_LASTWORDS_LINES 20   /* lines of stderr kept */
#define TONY_LASTWORDS_BYTES 4096 /* and bytes */
/* The executor's own log in the task's log dir (the backend sends the
 * executor's, and its container runtime's, output there): the cause of a
 * command that never ran. */
#define TONY_EXECUTOR_LOG "executor.log"
/* The error file's name in the task's log dir, for each attempt anew. */
#define TONY_TORCH_ERROR_FILE "torchelastic_error.json"

/* The last `lines` lines of the file at path, at most max_bytes of them
 * (whole lines), without the trailing newline; NULL when it is missing,
 * unreadable or holds only blank space. */
char *tony_lastwords_tail(const char *path, int lines, size_t max_bytes);

/* The same from text[0..n), the end of a file read elsewhere (a YARN
 * NodeManager's answer); cut: text starts inside the file, so its first
 * line may be partial and is dropped. */
char *tony_lastwords_text(const char *text, size_t n, bool cut, int lines, size_t max_bytes);

/* The exception and its traceback's last `lines` lines from torch's error
 * file at path (either of its two formats); NULL when there is none or it
 * is not torch's. */
char *tony_lastwords_torch_error(const char *path, int lines, size_t max_bytes);

#endif
