/* Questions every reader of a job JSON asks (jobjson.h), answered once. */
#include "common/jobjson.h"

#include <string.h>

static bool field_is(const json_t *job, const char *field, const char *word) {
    const char *v = json_string_value(json_object_get(job, field));
    return v && strcmp(v, word) == 0;
}

bool tony_job_is_finished(const json_t *job) { return field_is(job, JOB_STATE, JOB_STATE_FINISHED); }

bool tony_job_succeeded(const json_t *job) { return field_is(job, JOB_FINAL_STATUS, JOB_FINAL_STATUS_SUCCEEDED); }
