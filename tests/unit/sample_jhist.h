/* A small real .jhist for the tests that read one back (test_history.c,
 * test_avroread.c): the writer's own events, so the readers are checked
 * against what tony writes. */
#ifndef TONY_TEST_SAMPLE_JHIST_H
#define TONY_TEST_SAMPLE_JHIST_H

#include "common/jhist.h"

/* ApplicationInited, TaskStarted (worker:1) and TaskFinished (FAILED, exit
 * code 3, two metrics) at timestamps 1, 2, 3; 0 or -1 with err. */
static inline int sample_jhist_events(tony_jhist_writer *w, tony_error *err) {
    tony_jhist_metric ms[] = {{"MAX_MEMORY_BYTES", 1e8}, {"AVG_GPU_UTILIZATION", -1}};
    if (tony_jhist_application_inited(w, 1, "application_1_0001", 2, "nm1", NULL, err) ||
        tony_jhist_task_started(w, 2, "worker", 1, "nm2", "container_1_0001_01_000002", err) ||
        tony_jhist_task_finished(w, 3, "worker", 1, "FAILED", ms, 2, "exit code 3", err))
        return -1;
    return 0;
}

#endif
