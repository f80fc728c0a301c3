/* Processes: starting the user's command in its own process group, reading
 * the process table (/proc) to measure or kill a whole task, and turning wait
 * statuses into exit codes. */
#ifndef TONY_PROC_H
#define TONY_PROC_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"

typedef struct tony_spawn {
    char *const *argv;      /* argv[0] is looked up on PATH */
    char *const *envp;      /* NULL: inherit */
    const char *cwd;        /* NULL: inherit */
    const char *stdout_path; /* appended; NULL: inherit */
    const char *stderr_path; /* appended; NULL: inherit */
    bool new_session;       /* setsid() (a container); else setpgid(0,0) (a user process group) ... */
    bool keep_group;        /* ... unless this: stay in the caller's process group */
    bool private_output;    /* stdout/stderr files made 0600 (a job dir's logs), else 0644 */
    bool die_with_parent;   /* SIGKILLed should the calling thread end (PR_SET_PDEATHSIG): an executor's user
                               process, which must not outlive the executor watching it unwatched */
    int parent_death_signal; /* with die_with_parent, sent instead of SIGKILL (0): SIGTERM lets a container
                                runtime's process stop its container before it goes */
} tony_spawn;

int tony_proc_spawn(const tony_spawn *s, pid_t *pid, tony_error *err);

/* Runs argv (argv[0] a path: no PATH lookup) and appends its stdout (and
 * its stderr, with_stderr) to out; gives up and kills it after timeout_ms.
 * 0 when it exited 0, else an error saying how it ended (out keeps what it
 * printed). For helpers that may wedge (nvidia-smi, py-spy). */
struct tony_buf;
int tony_proc_capture(char *const argv[], bool with_stderr, long long timeout_ms, struct tony_buf *out,
                      tony_error *err);
/* Runs argv (looked up on PATH, stdin /dev/null) to its end and collects
 * its stdout and stderr (each cut at 1 MiB), for a cluster's command-line
 * tools (sbatch, squeue). A run past timeout_ms is killed and is an error
 * naming the command; so is one that cannot start. Otherwise 0 with
 * *exit_code its exit code (128+signal). */
struct tony_buf;
int tony_proc_run(char *const *argv, long long timeout_ms, struct tony_buf *out, struct tony_buf *errout,
                  int *exit_code, tony_error *err);

/* The executable called name in one of PATH's dirs (PATH unset:
 * /usr/local/bin, /usr/bin, /bin), malloc'ed; NULL when none is. */
char *tony_proc_which(const char *name);

/* The shell that runs a user's command line as `<shell> -c <command>`:
 * bash where it is on PATH (TonY's commands are written for it), else the
 * POSIX shell every image has, TONY_PROC_POSIX_SHELL (docs/images.md: an
 * image needs only /bin/sh). */
#define TONY_PROC_POSIX_SHELL "/bin/sh"
const char *tony_proc_command_shell(void);
/* The same choice made where the command runs (an image), as the script of
 * `/bin/sh -c TONY_PROC_SHELL_CHOOSER sh <command>`. */
#define TONY_PROC_SHELL_CHOOSER \
    "if command -v bash >/dev/null 2>&1; then exec bash -c \"$1\"; fi; exec " TONY_PROC_POSIX_SHELL " -c \"$1\""

/* 0..255 for a normal exit, 128+signal for a death by signal (the shell's and
 * YARN's convention). */
int tony_proc_exit_code(int wait_status);

/* One process as /proc/<pid>/stat shows it. */
typedef struct tony_proc_info {
    pid_t pid, ppid, pgrp, sid;
    long long rss_kb;
    double cpu_seconds; /* utime + stime */
} tony_proc_info;

/* Calls fn for every live (non-zombie) process: callers pick a container's
 * processes by session id (its executor started it with setsid), a process
 * group or parentage. */
typedef void (*tony_proc_visit_fn)(void *ctx, const tony_proc_info *p);
void tony_proc_scan(tony_proc_visit_fn fn, void *ctx);
/* Every live process at once, as tony_proc_scan sees them (a snapshot to
 * walk parentage or compare with a sample); *n gets the count. Free it. */
tony_proc_info *tony_proc_snapshot(size_t *n);
/* Sends sig to every process of session sid (or of process group pgrp),
 * the caller excepted (for a group, the caller's ancestors too: the shell
 * that started it may share its group and wait for it); returns how many
 * got it. */
int tony_proc_kill_session(pid_t sid, int sig);
int tony_proc_kill_group_but_me(pid_t pgrp, int sig);
/* Whether pid's environment (/proc/<pid>/environ, read up to 1 MiB) has
 * an entry that starts with prefix ("NAME=value-start"); false when it
 * cannot be read (gone, or another user's). */
bool tony_proc_env_has(pid_t pid, const char *prefix);
/* Whether pid's working directory (/proc/<pid>/cwd) is dir (compared by
 * real path); false when it cannot be read (gone, another user's). */
bool tony_proc_cwd_is(pid_t pid, const char *dir);
/* pid runs (or is someone else's): neither gone nor a zombie. */
bool tony_proc_alive(pid_t pid);
/* When pid started, in clock ticks since boot (/proc/<pid>/stat), or -1.
 * With the boot's id it names one process for good: a pid is reused, its
 * start time on one boot is not. */
long long tony_proc_start_ticks(pid_t pid);
/* This boot's id (/proc/sys/kernel/random/boot_id) into out, "" if unknown. */
void tony_proc_boot_id(char out[40]);
/* Whether pid is alive (no zombie) and still the process that started at
 * start on boot boot_id. */
bool tony_proc_same(pid_t pid, long long start, const char *boot_id);
/* Sends sig to pid only if tony_proc_same; race-free through a pidfd where
 * the kernel has them (5.3+). 0, or -1 with errno (ESRCH: not that process). */
int tony_proc_signal_same(pid_t pid, long long start, const char *boot_id, int sig);

#endif
