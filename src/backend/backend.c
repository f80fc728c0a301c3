/* Picks a backend by name, so that the coordinator names none: each one's
 * constructor and options stay behind its own header. Also frees what every
 * backend hands out alike (tony_am_place). */
#include "backend/backend.h"

#include <stdlib.h>
#include <string.h>

#include "backend/local/local.h"
#include "backend/slurm/slurm_backend.h"
#include "backend/yarn/yarn_backend.h"

tony_backend *tony_backend_new(const char *name, const tony_backend_opts *o, tony_error *err) {
    if (strcmp(name, "local") == 0)
        return tony_backend_local_new(o->base, o->reaper, o->job_dir, o->conf, err);
    if (strcmp(name, "yarn") == 0) {
        tony_yarn_backend_opts yo = {.job_dir = o->job_dir, .conf = o->conf, .api_host = o->api_host,
                                     .api_port = o->api_port, .tracking_url = o->tracking_url,
                                     .credentials = o->backend_data};
        return tony_backend_yarn_new(o->base, &yo, err);
    }
    if (strcmp(name, "slurm") == 0) return tony_backend_slurm_new(o->base, o->reaper, o->job_dir, o->conf, err);
    tony_err(err, "no backend called '%s' (there are: local, yarn, slurm)", name);
    return NULL;
}

void tony_am_place_free(tony_am_place *p) {
    free(p->work_dir);
    free(p->log_dir);
    free(p->log_url);
    free(p->container);
    *p = (tony_am_place){0};
}
