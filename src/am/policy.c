/* Restart policies and the backoff between attempts (see policy.h). */
#include "am/policy.h"

#include <limits.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "common/amapi.h"
#include "common/strv.h"
#include "conf/keys.h"

bool am_policy_exit_is_permanent(int exit_status) { return exit_status >= 1 && exit_status <= 127; }

/* The key that set a role's policy, for the message: its own when it
 * differs from the job's (role keys override), else the job's. */
static char *policy_key(const tony_plan *p, const tony_role *r) {
    if (r && r->restart_policy != p->restart_policy) return tony_sprintf(TONY_KEY_ROLE_RESTART_POLICY_FMT, r->name);
    return tony_strdup(TONY_KEY_APP_RESTART_POLICY);
}

bool am_policy_should_retry(const tony_plan *p, const am_failure *f, int retries_left, char **why) {
    *why = NULL;
    /* With no budget at all nobody asked for a retry: nothing to explain. */
    if (p->retry_count == 0 && !f->coordinator_lost) return false;
    if (f->killed) {
        *why = tony_strdup("Not retried: the job was killed");
        return false;
    }
    if (f->timed_out) {
        *why = tony_sprintf("Not retried: the job ran out of time (tony.application.timeout=%lld ms)",
                            p->app_timeout_ms);
        return false;
    }
    if (f->permanent) {
        *why = tony_sprintf("Not retried: %s", f->permanent);
        return false;
    }
    tony_restart_policy policy = f->role ? f->role->restart_policy : p->restart_policy;
    if (policy == TONY_RESTART_NEVER) {
        char *key = policy_key(p, f->role);
        *why = tony_sprintf("Not retried: %s is never", key);
        free(key);
        return false;
    }
    /* The executor's own exit for the job's inputs (amapi.h) would come
     * again; a container that did not start (the runtime's 125...) is
     * retried as a launch that failed. */
    if (policy == TONY_RESTART_EXIT_CODE && f->role && f->never_ran && f->exit_status == AM_EXEC_EXIT_NOT_STARTED) {
        char *key = policy_key(p, f->role);
        *why = tony_sprintf("Not retried: the command never ran, its executor could not set the task up from the "
                            "job's own inputs, which another attempt would repeat (%s is exit-code)", key);
        free(key);
        return false;
    }
    if (policy == TONY_RESTART_EXIT_CODE && f->role && !f->never_ran && am_policy_exit_is_permanent(f->exit_status)) {
        char *key = policy_key(p, f->role);
        *why = tony_sprintf("Not retried: exit code %d is the script's own error, which another attempt would "
                            "repeat (%s is exit-code: only signals and lost or preempted containers are retried)",
                            f->exit_status, key);
        free(key);
        return false;
    }
    if (retries_left <= 0) {
        *why = tony_sprintf("Not retried: no restarts left (tony.am.retry-count=%d)", p->retry_count);
        return false;
    }
    return true;
}

int am_policy_quick_failures(const tony_plan *p, int quick, long long ran_ms) {
    if (ran_ms >= p->restart_healthy_ms) return 0;
    return quick < INT_MAX ? quick + 1 : quick;
}

long long am_policy_backoff_ms(const tony_plan *p, int quick) {
    if (quick < 2) return 0;
    long long wait = p->restart_backoff_ms, max = p->restart_backoff_max_ms;
    for (int i = 2; i < quick && wait < max; i++) wait *= 2;
    return wait > max ? max : wait;
}
