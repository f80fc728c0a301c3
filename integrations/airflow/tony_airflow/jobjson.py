"""The names in `tony status --json` and `tony list --json` that the provider
reads. They are tony's contract, owned by src/common/jobjson.h; this is their
one copy on the Python side (tests/e2e/test_airflow.py checks the two agree)."""

JOB_APP_ID = "app_id"
JOB_STATE = "state"
JOB_FINAL_STATUS = "final_status"
JOB_NAME = "name"
JOB_URL = "url"
JOB_DIAGNOSTICS = "diagnostics"
JOB_ROOT_CAUSE = "root_cause"
JOB_CAUSE_TEXT = "text"
JOB_TASKS = "tasks"
JOB_TASK_STATE = "state"
JOB_TASK_STDERR = "stderr"

JOB_STATE_FINISHED = "FINISHED"
JOB_STATE_LOST = "LOST"
JOB_FINAL_STATUS_SUCCEEDED = "SUCCEEDED"
JOB_FINAL_STATUS_FAILED = "FAILED"
JOB_FINAL_STATUS_KILLED = "KILLED"
JOB_TASK_STATE_FAILED = "FAILED"
# A task that failed: a single-node job's one task says the job's final status.
TASK_FAILED_STATES = (JOB_TASK_STATE_FAILED, JOB_FINAL_STATUS_FAILED, JOB_FINAL_STATUS_KILLED)

# tony list --json: {"root": ..., "jobs": [...]}
LIST_JOBS = "jobs"

# The conf key (src/conf/keys.h, TONY_KEY_APP_NAME) the operator names its job
# by, so a retried task finds the job its earlier try started.
KEY_APP_NAME = "tony.application.name"
