/* Container exit statuses in words, the same on every backend (TonY #30:
 * users want "killed for exceeding memory", not "-104"). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"

const char *tony_exit_status_meaning(int s, char *buf, size_t n) {
    switch (s) {
    case TONY_EXIT_SUCCESS: return "succeeded (exit code 0)";
    case TONY_EXIT_INVALID: return "no exit status (the container never ran)";
    case TONY_EXIT_ABORTED: return "aborted: the container was released or its node was lost";
    case TONY_EXIT_DISKS_FAILED: return "failed because the node's disks failed";
    case TONY_EXIT_PREEMPTED: return "preempted by the scheduler";
    case TONY_EXIT_KILLED_EXCEEDED_VMEM: return "killed for exceeding its virtual memory limit";
    case TONY_EXIT_KILLED_EXCEEDED_PMEM: return "killed for exceeding its physical memory limit (raise tony.<role>.memory)";
    case TONY_EXIT_KILLED_BY_APPMASTER: return "stopped by the coordinator";
    case TONY_EXIT_KILLED_BY_RESOURCEMANAGER: return "killed by the ResourceManager";
    case TONY_EXIT_KILLED_AFTER_APP_COMPLETION: return "killed after the application completed";
    case TONY_EXIT_KILLED_BY_CONTAINER_SCHEDULER: return "killed by the container scheduler";
    case TONY_EXIT_KILLED_FOR_EXCESS_LOGS: return "killed for writing too many logs";
    default: break;
    }
    if (s > 128 && s < 128 + NSIG) {
        const char *abbrev = sigabbrev_np(s - 128);
        snprintf(buf, n, "killed by signal %d (SIG%s)", s - 128, abbrev ? abbrev : "?");
    } else {
        snprintf(buf, n, "exit code %d", s);
    }
    return buf;
}

const char *tony_exit_status_explain(int s, char *buf, size_t n) {
    /* 126 and 127 are the shell's own (the command line runs under bash -c,
     * or /bin/sh -c where there is no bash) */
    if (s == 126) snprintf(buf, n, "exit code 126 (the command could not be executed)");
    else if (s == 127) snprintf(buf, n, "exit code 127 (the command was not found)");
    else if (s >= 1 && s < 126) snprintf(buf, n, "exit code %d (the script's own error)", s);
    else return tony_exit_status_meaning(s, buf, n);
    return buf;
}
