/* The standalone runtime: one task that simply runs its command, with no
 * framework env and no peers. Its only rule is that the plan has exactly one
 * instance in all. */
#include <stdlib.h>

#include "common/strv.h"
#include "runtime/runtime.h"

static int sa_validate(const tony_plan *plan, tony_error *err) {
    int total = 0;
    tony_buf roles = {0};
    for (size_t i = 0; i < plan->nroles; i++) {
        total += plan->roles[i].instances;
        tony_buf_printf(&roles, "%stony.%s.instances=%d", roles.len ? ", " : "", plan->roles[i].name,
                        plan->roles[i].instances);
    }
    int rc = 0;
    if (total != 1)
        rc = tony_err(err,
                      "standalone framework runs exactly one task; found %d instances (%s). "
                      "Use another framework or set the instances to 1",
                      total, roles.len ? roles.data : "no tony.<role>.instances set");
    tony_buf_free(&roles);
    return rc;
}

/* One task: nobody to keep in step with. */
static bool sa_lockstep(const tony_plan *plan) {
    (void)plan;
    return false;
}

const tony_runtime tony_runtime_standalone = {
    .name = "standalone",
    .validate = sa_validate,
    .lockstep = sa_lockstep,
    .task_env = NULL,
    .fixed_world = "it runs exactly one task",
};
