/* Hang diagnosis, the executor's part: the stacks of every process of its
 * task, as text for the coordinator (am/stacks.h). Python processes are
 * dumped with py-spy, with native frames where it can pause the process;
 * a stopped process (SIGSTOP) cannot be paused, so its Python frames are
 * read without pausing it (--nonblocking). Without py-spy, gdb gives the
 * native frames where it is installed. Every process also gets a line of
 * what the kernel says it does (its state, what it waits in). py-spy and
 * gdb need ptrace rights over the processes: the executor is their
 * ancestor, which kernel.yama.ptrace_scope 0 or 1 allows (2 needs
 * CAP_SYS_PTRACE, 3 forbids it). */
#ifndef TONY_EXECUTOR_STACKS_H
#define TONY_EXECUTOR_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The most one dump takes, every process together (the coordinator waits a
 * little longer: am/hang.h), and the most text it returns. */
#define TONY_STACKS_BUDGET_MS 10000
#define TONY_STACKS_MAX_BYTES (512 * 1024)

/* The processes of the user's task: the npids processes the executor
 * started (tony.<role>.nproc-per-node of them), their process groups (or,
 * with share_group, the executor's own but the executor) and every
 * descendant of those. py_spy: a path or a name to look for on PATH and
 * beside each python (NULL: "py-spy"). Returns malloc'ed text, never NULL. */
char *tony_stacks_dump(const pid_t *user_pids, size_t npids, bool share_group, const char *py_spy,
                       long long budget_ms);

#endif
