/* The YARN backend's task half (backend/task.h): the job's secret and its
 * refreshed credentials in the container's token file (task_tokens.c), and
 * the next AM attempt's address from the file it writes on HDFS
 * (coordfile.c). */
#ifndef TONY_YARN_TASK_H
#define TONY_YARN_TASK_H

#include "backend/task.h"
#include "common/error.h"

extern const tony_task_backend_ops tony_yarn_task_ops;

/* The job's secret from this container's token file
 * (HADOOP_TOKEN_FILE_LOCATION), where the coordinator put it for every task
 * container instead of the env. */
int tony_yarn_task_secret(char **out, tony_error *err);
/* Replaces this container's token file with the coordinator's newer token
 * storage (written beside it, then renamed over it, so that a process
 * never reads half of it). */
int tony_yarn_task_update_credentials(const void *data, size_t len, tony_error *err);
/* The URL of the job's coordinator now, from the file its latest AM
 * attempt wrote on HDFS (coordfile.h): 0 and *url; 1 when this job has no
 * such file (it does not keep its containers across AM attempts); -1 and
 * err when it cannot be read now. */
int tony_yarn_task_find_coordinator(char **url, tony_error *err);

#endif
