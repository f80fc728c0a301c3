/* The YARN backend's task half (backend/task.h): the job's secret and its
 * refreshed credentials in the container's token file (task_tokens.c), and
 * the next AM attempt's address from the file it writes on HDFS
 * (coordfile.c). */
#ifndef TONY_YARN_TASK_H
#define TONY_YARN_TASK_H

#include "backend/task.h"

extern const tony_task_backend_ops tony_yarn_task_ops;

#endif
