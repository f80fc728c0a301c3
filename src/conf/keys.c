/* The registry of every tony.* key (conf/keys.h). Defaults follow TonY's
 * tony-default.xml (which wins over its Java constants where the two
 * disagree), so a TonY user's tony.xml behaves the same here; tony's own
 * keys follow with theirs, then TonY's keys tony accepts and ignores. */
#include "conf/keys.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/strv.h"

#include "conf/conf.h"
#include "conf/logpolicy.h"

/* short names for the table only */
#define STR TONY_KEY_STRING
#define LIST TONY_KEY_LIST
#define INT TONY_KEY_INT
#define BOOL TONY_KEY_BOOL
#define SIZE TONY_KEY_SIZE
#define MS TONY_KEY_MS
#define DUR TONY_KEY_DURATION
#define SEC TONY_KEY_SECONDS
#define ALL TONY_KEY_ALL_BACKENDS
#define LOCAL TONY_KEY_LOCAL
#define YARN TONY_KEY_YARN
#define SLURM TONY_KEY_SLURM
#define CLUSTER (TONY_KEY_YARN | TONY_KEY_SLURM)

/* why_not of the keys TonY's Java code needs and a native binary does not */
#define JAVA_ONLY "TonY's Java processes' setting; tony is one native binary with no JVM."
#define JAVA_PORTAL \
    "A setting of TonY's Java history portal; `tony portal` has its own flags (tony help portal) and reads the " \
    "history directories as they are."

static const tony_key keys[] = {
    /* Application */
    {TONY_KEY_YARN_QUEUE, STR, "default", YARN, "Scheduler queue the job is submitted to.", NULL},
    {TONY_KEY_APP_SHARED_DIR, STR, NULL, ALL,
     "A directory every task can reach (ours), given to tasks as TONY_JOB_DIR for checkpoints. The local "
     "backend defaults it to the job dir's shared/; on YARN it is unset unless named (e.g. an NFS mount).", NULL},
    {TONY_KEY_YARN_DIST_CACHE, STR, NULL, YARN,
     "HDFS directory where tony keeps its own self-contained archive, uploaded once per build and localized by "
     "every container (ours; default /user/<user>/.tony/cache). Set it empty to upload tony with each job instead.",
     NULL},
    {TONY_KEY_YARN_MAX_APP_ATTEMPTS, INT, "2", YARN,
     "YARN attempts of the coordinator (ours): when its container is lost, the next attempt adopts the running "
     "tasks (tony.am.recovery-timeout-ms), or reruns the job. The RM caps it at yarn.resourcemanager.am.max-attempts.",
     NULL},
    {TONY_KEY_AM_RECOVERY_TIMEOUT_MS, MS, "300000", YARN,
     "When the coordinator is lost (ours; YARN, with tony.yarn.max-app-attempts above 1): how long the tasks "
     "keep running and look for the next coordinator, which adopts them without a restart; a task whose "
     "coordinator has not come back by then is stopped. 0: off, the containers go with the coordinator and "
     "the next attempt reruns the job.", NULL},
    {TONY_KEY_APP_NAME, STR, "TensorFlowApplication", ALL,
     "Name of the job as the scheduler, tony list and the pages show it. Unset: the framework's name and "
     "Application (TonY's TensorFlowApplication for tensorflow, PyTorchApplication for pytorch).", NULL},
    {TONY_KEY_APP_ID, STR, NULL, ALL, "The job's id, set by tony at submit (not a setting).", NULL},
    {TONY_KEY_APP_TYPE, STR, "TONY", YARN, "Application type reported to YARN.",
     "tony always reports the type TONY, which `yarn application -appTypes TONY` and the portal rely on."},
    {TONY_KEY_APP_TAGS, LIST, "", YARN, "Comma list of tags attached to the application (e.g. Azkaban flow tags).",
     NULL},
    {TONY_KEY_APP_NODE_LABEL, STR, NULL, CLUSTER,
     "Node label expression for the coordinator (AM) container; on Slurm a node feature (constraint).", NULL},
    {TONY_KEY_APP_VIEW_ACLS, STR, "", YARN,
     "Who besides the owner (and the cluster's admins) may view the application in YARN (ours): its containers' "
     "logs on the NodeManagers, its report's details (not its diagnostics: the RM shows those to anyone); YARN's ACL form \"user1,user2 group1,group2\", * for "
     "everyone. Empty: the owner alone. YARN enforces it where yarn.acl.enable is true.", NULL},
    {TONY_KEY_APP_MODIFY_ACLS, STR, "", YARN,
     "Who besides the owner (and the cluster's admins) may modify the application in YARN (ours), e.g. kill it "
     "through the RM; the same form as tony.application.view-acls. Empty: the owner alone.", NULL},
    {"tony.application.enable-preprocess", BOOL, "false", ALL,
     "Run the command in the coordinator before starting the distributed tasks; a failure fails the job.",
     "Run such a step as a job type of the prepare stage (tony.application.prepare-stage) instead."},
    {TONY_KEY_APP_TIMEOUT, MS, "0", ALL, "Maximum run time of the whole job in milliseconds; 0 means no limit.", NULL},
    {TONY_KEY_APP_MAX_EXCLUDED_NODES, INT, NULL, CLUSTER,
     "Most nodes a job keeps its containers off after node-level failures (ours); unset: fewer than half of "
     "the cluster's nodes; 0 turns exclusion off. Never every node.", NULL},
    {TONY_LOGPOLICY_KEY, LIST, TONY_LOGPOLICY_DEFAULTS, ALL,
     "Comma list of ACTION:REGEX matched against every line of a task's stdout and stderr (ours): fail makes a "
     "failure of that task permanent (no restart), exclude-node keeps the job off its node; POSIX extended "
     "regex, (?i) in front for any case, \\, for a comma inside one. Empty: none.", NULL},
    {TONY_KEY_APP_FRAMEWORK, STR, "tensorflow", ALL,
     "Framework runtime that sets up each task's distributed environment (case-insensitive).", NULL},
    {"tony.application.num-client-rm-connect-retries", INT, "3", YARN,
     "How many times the client retries connecting to the resource manager.",
     "tony's client talks to the RM's REST API and reports the first failure with its cause; retry the submit."},
    {TONY_KEY_APP_DISTRIBUTED_MODE, STR, "GANG", ALL,
     "GANG: tasks start once every task registered and get the cluster spec; FCFS: each task starts at once, "
     "without a cluster spec.", NULL},
    {TONY_KEY_APP_UNTRACKED_JOBTYPES, LIST, "ps", ALL,
     "Job types the job does not wait for; they are stopped when the tracked tasks end and fail the job if "
     "they fail on their own.", NULL},
    {TONY_KEY_APP_SIDECAR_JOBTYPES, LIST, "tensorboard", ALL,
     "Job types that run beside the job (e.g. TensorBoard); they are stopped at the end and their failures "
     "are ignored.", NULL},
    {TONY_KEY_APP_STOP_ON_FAILURE_JOBTYPES, LIST, "ps", ALL,
     "Job types whose failure of any instance ends the job at once as FAILED.", NULL},
    {TONY_KEY_APP_FAIL_ON_WORKER_FAILURE, BOOL, "false", ALL,
     "Fail the job at once when any tracked task fails, instead of only when the chief fails.", NULL},
    {TONY_KEY_APP_FAIL_FAST_LOCKSTEP, STR, "auto", ALL,
     "End the attempt at once when one tracked task fails (auto|true|false); auto asks the framework whether "
     "its workers train in lock-step.", NULL},
    {TONY_KEY_APP_RESTART_POLICY, STR, "on-failure", ALL,
     "Which failed attempts are retried, within tony.am.retry-count (ours): on-failure (all), never, or "
     "exit-code (exit codes 1-127 are the script's own error and are not retried; signals, lost or preempted "
     "containers are). tony.<role>.restart-policy overrides it for the job type whose task failed first.", NULL},
    {TONY_KEY_APP_RESTART_BACKOFF_MS, MS, "1000", ALL,
     "Wait before a restart in a crash loop, in ms (ours): the first restart after a failure comes at once; "
     "the second consecutive failure of an attempt that ran less than tony.application.restart-healthy-ms waits "
     "this long, each later one twice as long.",
     NULL},
    {TONY_KEY_APP_RESTART_HEALTHY_MS, MS, "60000", ALL,
     "An attempt whose processes ran at least this long, in ms, before it failed was healthy (ours): its "
     "restart comes at once and the restart backoff starts over; shorter ones count towards a crash loop.",
     NULL},
    {TONY_KEY_APP_SIZING_MIN_RUN_MS, MS, "60000", ALL,
     "Right-sizing advice (ours) comes only from tasks whose process ran at least this long, in ms: a task that "
     "never started or ran briefly says nothing about the memory a real run needs.", NULL},
    {TONY_KEY_APP_RESTART_BACKOFF_MAX_MS, MS, "60000", ALL, "The longest wait between attempts, in ms (ours).", NULL},
    {TONY_KEY_APP_ELASTIC_SETTLE_MS, MS, "5000", ALL,
     "Elastic jobs (ours, docs/elastic.md): how long, in ms, the job waits for missing tasks (at the start, or "
     "a lost task's replacement) before it trains with fewer, down to tony.<role>.min-instances.", NULL},
    {TONY_KEY_APP_RESTART_MODE, STR, "in-place", ALL,
     "How a failed attempt restarts (tony.am.retry-count): in-place keeps the healthy containers and starts the "
     "user processes in them again; reallocate stops every container and asks for new ones.", NULL},
    {TONY_KEY_APP_SECURITY_ENABLED, BOOL, "true", YARN,
     "Kerberos mode: fetch delegation tokens and secure client-coordinator calls.", NULL},
    {"tony.application.hdfs-conf-path", STR, NULL, YARN, "Path of an hdfs-site.xml to use and ship to the containers.",
     "tony reads the cluster's configuration from $HADOOP_CONF_DIR; point it at the directory instead."},
    {"tony.application.yarn-conf-path", STR, NULL, YARN, "Path of a yarn-site.xml to use and ship to the containers.",
     "tony reads the cluster's configuration from $HADOOP_CONF_DIR; point it at the directory instead."},
    {"tony.application.mapred-conf-path", STR, NULL, YARN, "Path of a mapred-site.xml to use.",
     "tony runs no MapReduce code and reads no mapred-site.xml."},
    {TONY_KEY_APP_PREPARE_STAGE, LIST, NULL, ALL,
     "Comma list of job types that run first; the training stage starts when they have finished.", NULL},
    {TONY_KEY_APP_TRAINING_STAGE, LIST, NULL, ALL,
     "Comma list of job types that start after the prepare stage; defaults to the job types not in it.", NULL},
    {TONY_KEY_APP_TENSORBOARD_LOG_DIR, STR, NULL, ALL, "Log directory for a TensorBoard sidecar run by the job.", NULL},
    {TONY_KEY_NOTEBOOK_IDLE_TIMEOUT, DUR, "1h", ALL,
     "`tony notebook`: a Jupyter server with no activity (no request, no busy kernel) this long shuts down and the "
     "job ends; kernels idle this long are culled. 0: never.",
     NULL},
    {TONY_KEY_APP_BACKEND, STR, NULL, ALL,
     "Where tasks run: local, yarn or slurm; unset means the client picks one from the environment.", NULL},
    {TONY_KEY_OTHER_NAMENODES, LIST, NULL, YARN, "Comma list of extra NameNode URIs to get delegation tokens from.",
     NULL},
    {TONY_KEY_PYTHON_EXEC_PATH, STR, NULL, ALL, "Python interpreter of the tasks (--python_binary_path).", NULL},

    /* Tasks */
    {TONY_KEY_TASK_MAX_TOTAL_INSTANCES, INT, "-1", ALL,
     "Limit on the sum of all tony.<role>.instances; -1 means no limit.", NULL},
    {TONY_KEY_TASK_MAX_TOTAL_PREFIX "gpus", INT, "-1", ALL,
     "Limit on the GPUs requested by all tasks together (gpus x instances); -1 means no limit.", NULL},
    {TONY_KEY_TASK_MAX_TOTAL_PREFIX "<resource>", INT, NULL, ALL,
     "Limit on a resource requested by all tasks together (resource x instances); -1 means no limit.", NULL},
    {"tony.task.am.jvm.opts", STR, "", ALL, "Extra JVM options of TonY's Java coordinator.", JAVA_ONLY},
    {"tony.task.executor.jvm.opts", STR, "-Xmx1536m", ALL, "JVM options of TonY's Java executor.", JAVA_ONLY},
    {TONY_KEY_TASK_HEARTBEAT_INTERVAL_MS, MS, "1000", ALL,
     "How often each executor heartbeats to the coordinator, in ms.",
     NULL},
    {TONY_KEY_TASK_MAX_MISSED_HEARTBEATS, INT, "25", ALL, "Missed heartbeats after which a task is declared dead.",
     NULL},
    {TONY_KEY_TASK_METRICS_INTERVAL_MS, MS, "5000", ALL,
     "How often each executor reports memory and GPU metrics, in ms.",
     NULL},
    {TONY_KEY_TASK_GPU_METRICS_ENABLED, BOOL, "true", ALL, "Collect GPU metrics for tasks that requested GPUs.", NULL},
    {TONY_KEY_TASK_EXECUTION_TIMEOUT_MS, MS, "0", ALL,
     "Time limit of every user process in ms; 0 falls back to tony.worker.timeout.", NULL},
    {TONY_KEY_TASK_LOG_MAX_SIZE, SIZE, "1g", ALL,
     "Cap on each task's stdout and stderr file (512m, 2g; plain numbers are MB); past it the file keeps its head and "
     "most recent output with a line saying how much was cut between them. 0: no cap.", NULL},
    {TONY_KEY_TASK_PROGRESS_TIMEOUT, DUR, "0", ALL,
     "Hang diagnosis (ours): a task that writes no output and does not touch $TONY_PROGRESS_FILE for this long "
     "is hung: the coordinator collects every task's Python stacks (py-spy) and fails the attempt. Milliseconds, "
     "or a number with ms, s, m or h (e.g. 30m); 0 turns it off.", NULL},
    {TONY_KEY_TASK_PY_SPY_PATH, STR, "py-spy", ALL,
     "The py-spy that dumps a hung task's stacks (ours): a path, or a name looked up on the executor's PATH and "
     "beside the task's python.", NULL},
    {TONY_KEY_GPU_EXEC_PATH, STR, "nvidia-smi", ALL, "nvidia-smi binary (or its directory) used for GPU metrics.",
     NULL},

    /* Coordinator (AM) */
    {TONY_KEY_AM_RETRY_COUNT, INT, "0", ALL,
     "How many times the coordinator restarts the whole set of tasks after a failed attempt.", NULL},
    {TONY_KEY_AM_MEMORY, SIZE, "2g", CLUSTER, "Memory of the coordinator container (e.g. 2g, 2048m, 2048); more than 0.", NULL},
    {TONY_KEY_AM_VCORES, INT, "1", CLUSTER, "Virtual cores of the coordinator container.", NULL},
    {TONY_KEY_AM_GPUS, INT, "0", CLUSTER, "GPUs of the coordinator container (useful in single-node mode).", NULL},
    {TONY_KEY_AM_WAIT_CLIENT_STOP_SEC, SEC, "15", ALL,
     "Seconds the coordinator waits at the end for the client to fetch the final task states.", NULL},
    {TONY_KEY_AM_COMMAND, STR, NULL, ALL,
     "Command the coordinator runs in single-node mode (no tony.<role>.instances); defaults to "
     "tony.containers.command.", NULL},
    {TONY_KEY_AM_RESOURCES, LIST, NULL, ALL, "Comma list of files for the coordinator, as tony.containers.resources.",
     NULL},

    /* Job types: any [a-z]+ with a tony.<role>.instances is one */
    {"tony.<role>.instances", INT, NULL, ALL,
     "How many tasks of this job type run (tony.worker.instances=4); a job type exists by having this key.", NULL},
    /* TonY's tony-default.xml sets these; a job type's own keys override them */
    {"tony.ps.memory", SIZE, "2g", ALL, "Memory of each parameter server.", NULL},
    {"tony.ps.vcores", INT, "1", ALL, "Virtual cores of each parameter server.", NULL},
    {"tony.worker.memory", SIZE, "2g", ALL, "Memory of each worker.", NULL},
    {"tony.worker.vcores", INT, "1", ALL, "Virtual cores of each worker.", NULL},
    {"tony.worker.gpus", INT, "0", ALL, "GPUs of each worker.", NULL},
    {"tony.<role>.memory", SIZE, "2g", ALL, "Memory of each task of the job type (e.g. 2g, 2048m, 2048); more than 0.", NULL},
    {"tony.<role>.vcores", INT, "1", ALL, "Virtual cores of each task of the job type.", NULL},
    {"tony.<role>.gpus", INT, "0", ALL, "GPUs of each task of the job type.", NULL},
    {"tony.<role>.command", STR, NULL, ALL, "Command of the job type's tasks; defaults to tony.containers.command.",
     NULL},
    {"tony.<role>.resources", LIST, NULL, ALL,
     "Comma list of files for the job type's containers, as tony.containers.resources.", NULL},
    {"tony.<role>.node-label", STR, NULL, CLUSTER,
     "Node label expression of the job type's containers; on Slurm a node feature (constraint).", NULL},
    {"tony.<role>.restart-policy", STR, NULL, ALL,
     "tony.application.restart-policy for a failure that started in this job type (ours).", NULL},
    {"tony.<role>.max-instances", INT, NULL, ALL, "Most tony.<role>.instances the job type may ask for.", NULL},
    {"tony.<role>.min-instances", INT, NULL, ALL,
     "Elastic jobs (ours, docs/elastic.md): the fewest tasks of the job type the job trains with; "
     "tony.<role>.instances is the most. Unset means tony.<role>.instances (not elastic).", NULL},
    {"tony.<role>.nproc-per-node", INT, "1", ALL,
     "Processes each task of the job type runs, as torchrun's --nproc_per_node (ours, docs/frameworks.md): "
     "pytorch only; each gets its own LOCAL_RANK and RANK, and with tony.<role>.gpus set it may not exceed them.",
     NULL},
    {TONY_KEY_WORKER_TIMEOUT, MS, "0", ALL,
     "Time limit of every user process in ms (all job types, despite the name); 0 means no limit.", NULL},
    {"tony.<role>.timeout", MS, NULL, ALL, "TonY's per-job-type time limit.",
     "tony applies one time limit to every task: tony.task.executor.execution-timeout-ms (or tony.worker.timeout)."},
    {"tony.<role>.depends-on", LIST, NULL, ALL, "TonY's job types this one waits for.",
     "Use the stages instead: tony.application.prepare-stage and tony.application.training-stage."},
    {"tony.<role>.allocation-tags", LIST, NULL, YARN, "YARN placement tags of the job type's containers.",
     "tony asks YARN for plain containers without placement constraints."},
    {"tony.<role>.placement-spec", STR, NULL, YARN, "YARN placement constraint of the job type's containers.",
     "tony asks YARN for plain containers without placement constraints."},

    /* Containers */
    {TONY_KEY_CONTAINER_ALLOCATION_TIMEOUT, MS, "-1", ALL,
     "Milliseconds a launched task may take to register before the job fails; -1 means no limit.", NULL},
    {TONY_KEY_CONTAINER_REGISTRATION_TIMEOUT, MS, "-1", ALL,
     "Milliseconds a launched task may take to register; when unset or <= 0, "
     "tony.container.allocation.timeout applies.", NULL},
    {TONY_KEY_CONTAINERS_COMMAND, STR, NULL, ALL,
     "Command of every task without its own tony.<role>.command (--executes).", NULL},
    {TONY_KEY_CONTAINERS_RESOURCES, LIST, NULL, ALL,
     "Comma list of files for every container, SOURCE[::NAME][#archive]; --conf appends to it.", NULL},
    {TONY_KEY_CONTAINERS_ENVS, LIST, NULL, ALL,
     "Comma list of K=V for every container's environment (--container_env); --conf appends to it.", NULL},
    {TONY_KEY_EXECUTION_ENVS, LIST, NULL, ALL,
     "Comma list of K=V for the user process's environment (--shell_env); --conf appends to it.", NULL},

    /* Docker */
    {TONY_KEY_DOCKER_ENABLED, BOOL, "false", ALL,
     "Run each task in its role's image (local, Slurm: podman/docker on the task's node; YARN: its Docker runtime).", NULL},
    {TONY_KEY_DOCKER_CONTAINERS_IMAGE, STR, NULL, ALL,
     "Image of every task without tony.docker.<role>.image (and of the coordinator's without tony.docker.am.image).",
     NULL},
    {TONY_KEY_DOCKER_AM_IMAGE, STR, NULL, LOCAL | YARN,
     "Image of the coordinator's container on YARN; locally, of a single-node job's command (the coordinator runs "
     "bare).",
     NULL},
    {"tony.docker.<role>.image", STR, NULL, ALL, "Image of the job type's containers.", NULL},
    {TONY_KEY_DOCKER_CONTAINERS_MOUNT, LIST, NULL, ALL,
     "Mounts of every container: SRC:DST[:ro|rw], comma-separated (TonY's syntax), absolute paths.", NULL},
    {TONY_KEY_DOCKER_RUNTIME, STR, NULL, LOCAL | SLURM,
     "podman or docker (ours); unset, the first on PATH that answers. Refused at submit when missing.", NULL},
    {TONY_KEY_DOCKER_NETWORK, STR, NULL, ALL, "The containers' network (ours); unset, the host's.", NULL},
    {"tony.application.docker.enabled", BOOL, NULL, YARN, "TonY's older name of tony.docker.enabled.",
     "Read as tony.docker.enabled."},
    {"tony.application.docker.image", STR, NULL, YARN, "TonY's older name of tony.docker.containers.image.",
     "Read as tony.docker.containers.image."},

    /* History and portal */
    {TONY_KEY_HISTORY_LOCATION, STR, "/path/to/tony-history", ALL,
     "History root; the coordinator writes events there only if <location>/intermediate exists.", NULL},
    {TONY_KEY_HISTORY_INTERMEDIATE, STR, "/path/to/tony-history/intermediate", ALL,
     "History directory of running jobs.", NULL},
    {TONY_KEY_HISTORY_FINISHED, STR, "/path/to/tony-history/finished", ALL, "History directory of finished jobs.",
     NULL},
    {TONY_KEY_HISTORY_FINISHED_TZ, STR, "UTC", ALL,
     "Time zone of the finished directory's yyyy/MM/dd layout; only UTC is supported.", NULL},
    {"tony.history.mover-interval-ms", MS, "300000", ALL,
     "How often the portal moves finished jobs out of the intermediate directory, in ms.", JAVA_PORTAL},
    {"tony.history.retention-sec", SEC, "2592000", ALL, "How long history is kept, in seconds (30 days).",
     "tony purges no history: remove old job directories under tony.history.finished yourself."},
    {"tony.history.purger-interval-ms", MS, "21600000", ALL, "How often old history is purged, in ms (6 hours).",
     "tony purges no history: remove old job directories under tony.history.finished yourself."},
    {"tony.history.host", STR, NULL, ALL, "Host of TonY's history server.", JAVA_PORTAL},
    {"tony.history.cache.max-entries", INT, NULL, ALL, "Entries TonY's portal caches.", JAVA_PORTAL},
    {"tony.history.maxAppends", INT, NULL, ALL, "Appends TonY's coordinator makes to one history file.",
     "tony's coordinator writes each job's history file in one stream."},
    {"tony.portal.url", STR, "https://localhost:19886", ALL, "Base URL of the history portal printed by the client.",
     "tony prints the coordinator's own live page and `tony portal` prints its URL when started."},
    {"tony.portal.cache.max-entries", INT, "10000", ALL,
     "Entries the portal caches per kind (config, metadata, events).",
     JAVA_PORTAL},
    {"tony.https.port", INT, "19886", ALL, "HTTPS port of the portal.", JAVA_PORTAL},
    {"tony.https.keystore.path", STR, "/location/to/tony.jks", ALL, "Keystore file of the portal's HTTPS server.",
     JAVA_PORTAL},
    {"tony.https.keystore.type", STR, "JKS", ALL, "Type of the portal's keystore.", JAVA_PORTAL},
    {"tony.https.keystore.password", STR, "password", ALL, "Password of the portal's keystore.", JAVA_PORTAL},
    {"tony.https.keystore.algorithm", STR, "SunX509", ALL, "Key manager algorithm of the portal's keystore.",
     JAVA_PORTAL},
    {"tony.http.port", STR, "disabled", ALL, "Plain HTTP port of the portal, or disabled.", JAVA_PORTAL},
    {"tony.secret.key", STR, "changeme", ALL, "Secret of the portal's web framework.", JAVA_PORTAL},

    /* Kerberos */
    {TONY_KEY_KEYTAB_USER, STR, "user1", YARN,
     "Kerberos principal to log in as from tony.keytab.location (submit, the portal).", NULL},
    {TONY_KEY_KEYTAB_LOCATION, STR, "/location/to/tony.keytab", YARN, "Keytab file of tony.keytab.user.", NULL},
    {TONY_KEY_KEYTAB_REFRESH_TOKENS, BOOL, "true", YARN,
     "With a keytab login on YARN: hand the keytab to the coordinator (in the application's credentials) so that "
     "it renews the job's HDFS tokens past their maximum lifetime; false keeps the keytab on this machine.", NULL},

    /* Horovod */
    {"tony.horovod.mode.test", BOOL, "false", ALL, "Horovod test mode: the driver fakes a rendezvous server.",
     "A test hook of TonY's Java Horovod driver; tony's horovod runtime runs the real rendezvous."},
    {"tony.horovod.mode.test.fast.fail", BOOL, "false", ALL, "Horovod test mode: the driver fails at once.",
     "A test hook of TonY's Java Horovod driver; tony's horovod runtime runs the real rendezvous."},
    {"tony.horovod.driver.mode.debug", BOOL, "false", ALL,
     "Horovod debug mode: the user supplies the driver through tony.driver.command.",
     "tony's horovod runtime always runs its own rendezvous."},
    {"tony.driver.<setting>", STR, NULL, ALL, "TonY's Horovod driver settings (tony.driver.command...).",
     "tony's horovod runtime always runs its own rendezvous."},

    /* Local backend */
    {TONY_KEY_LOCAL_ROOT, STR, NULL, ALL,
     "Directory of local jobs' state and of the client's job records; unset means ~/.tony.", NULL},
    {TONY_KEY_LOCAL_VCORES, INT, NULL, LOCAL,
     "Caps the vcores the local backend hands out at once; unset, vcores oversubscribe this machine's CPUs "
     "(as on YARN).",
     NULL},
    {TONY_KEY_LOCAL_MEMORY, SIZE, NULL, LOCAL,
     "Memory the local backend may hand out; unset means this machine's memory.",
     NULL},
    {TONY_KEY_LOCAL_GPUS, INT, NULL, LOCAL,
     "GPUs the local backend may hand out; unset means the GPUs found on this machine.", NULL},

    /* Slurm backend */
    {TONY_KEY_SLURM_PARTITION, STR, NULL, SLURM, "Slurm partition of the job's tasks (sbatch --partition).", NULL},
    {"tony.slurm.<role>.partition", STR, NULL, SLURM, "Slurm partition of the job type's tasks.", NULL},
    {TONY_KEY_SLURM_ACCOUNT, STR, NULL, SLURM, "Slurm account the job is charged to (sbatch --account).", NULL},
    {TONY_KEY_SLURM_STAGING_DIR, STR, NULL, SLURM,
     "A directory every Slurm node reads, where the job's files are staged; unset means tony.local.root.", NULL},

    /* TonY's, accepted and not acted on */
    {"tony.am.startup-timeout", MS, NULL, YARN, "How long TonY's client waits for its coordinator to start.",
     "tony's client follows the application's YARN state and reports why it did not start."},
    {"tony.application.hadoop.classpath", STR, NULL, YARN, "Hadoop classpath of TonY's Java processes.", JAVA_ONLY},
    {"tony.application.hadoop.location", STR, NULL, YARN, "Hadoop installation of TonY's Java processes.", JAVA_ONLY},
    {"tony.application.placement-spec", STR, NULL, YARN, "YARN placement constraints of the application.",
     "tony asks YARN for plain containers without placement constraints."},
    {"tony.containers.allocation-tags", LIST, NULL, YARN, "YARN placement tags of every container.",
     "tony asks YARN for plain containers without placement constraints."},
    {"tony.containers.placement-spec", STR, NULL, YARN, "YARN placement constraint of every container.",
     "tony asks YARN for plain containers without placement constraints."},
    {"tony.init.module", STR, NULL, ALL, "TonY's Java module to initialize.", JAVA_ONLY},
    {"tony.application.single-node", BOOL, NULL, ALL, "Run the job as one command in the coordinator.",
     "tony runs a job in single-node mode when it has no tony.<role>.instances; set none."},
    {"tony.task.default.jvm.opts", STR, NULL, ALL, "JVM options of TonY's Java tasks.", JAVA_ONLY},
    {"tony.task.executor.execution.error-message-max-depth", INT, NULL, ALL,
     "Depth of Java exception chains in TonY's error messages.", JAVA_ONLY},
    {"tony.task.executor.registry-timeout-sec", SEC, NULL, ALL, "TonY's executor registration timeout.",
     "tony uses tony.container.registration.timeout."},
    {"tony.task.heartbeat-interval", MS, NULL, ALL, "TonY's older name of tony.task.heartbeat-interval-ms.",
     "Read as tony.task.heartbeat-interval-ms."},
    {"tony.chief.name", STR, NULL, ALL, "TonY's name of the chief job type.",
     "tony's chief is the job type named chief (or worker 0, as the framework says)."},
    {"tony.chief.index", INT, NULL, ALL, "TonY's index of the chief task.",
     "tony's chief is the job type named chief (or worker 0, as the framework says)."},
    {"tony.version-info.<field>", STR, NULL, ALL, "TonY's build information written into the job's config.",
     "tony writes its own version into the job's records (tony --version)."},
    {"tony.application.dependency.<setting>", STR, NULL, ALL, "TonY's job dependency checks (Azkaban).",
     "tony checks no dependencies between applications."},
};

const tony_key *tony_keys(size_t *n) {
    *n = sizeof keys / sizeof keys[0];
    return keys;
}

bool tony_key_is_pattern(const tony_key *k) { return strchr(k->name, '<') != NULL; }

/* name against pattern: <role> takes [a-z]+, another <...> one dotted
 * segment, or the rest of the name when it ends the pattern. */
static bool matches(const char *pat, const char *name) {
    while (*pat) {
        if (*pat != '<') {
            if (*pat++ != *name++) return false;
            continue;
        }
        const char *close = strchr(pat, '>');
        if (!close) return false;
        bool role = strncmp(pat, "<role>", 6) == 0;
        pat = close + 1;
        size_t n = role ? strspn(name, "abcdefghijklmnopqrstuvwxyz") : *pat ? strcspn(name, ".") : strlen(name);
        if (n == 0) return false;
        name += n;
    }
    return *name == '\0';
}

bool tony_key_matches(const tony_key *k, const char *name) {
    return tony_key_is_pattern(k) ? matches(k->name, name) : strcmp(k->name, name) == 0;
}

const tony_key *tony_key_find(const char *name) {
    size_t n = sizeof keys / sizeof keys[0];
    for (size_t i = 0; i < n; i++)
        if (!tony_key_is_pattern(&keys[i]) && strcmp(keys[i].name, name) == 0) return &keys[i];
    for (size_t i = 0; i < n; i++)
        if (tony_key_is_pattern(&keys[i]) && matches(keys[i].name, name)) return &keys[i];
    return NULL;
}

static const struct {
    const char *name, *form;
} types[] = {
    [TONY_KEY_STRING] = {"string", "any text"},
    [TONY_KEY_LIST] = {"list", "a comma list"},
    [TONY_KEY_INT] = {"int", "an integer (e.g. 4)"},
    [TONY_KEY_BOOL] = {"bool", "true or false"},
    [TONY_KEY_SIZE] = {"size", "a memory size in MB, optionally with an m or g suffix (e.g. 2048, 512m, 2g)"},
    [TONY_KEY_MS] = {"ms", "a number of milliseconds (e.g. 60000)"},
    [TONY_KEY_DURATION] = {"duration", "a duration: milliseconds (300000) or a number with ms, s, m or h (5m)"},
    [TONY_KEY_SECONDS] = {"seconds", "a number of seconds (e.g. 15)"},
};

const char *tony_key_type_name(tony_key_type t) { return types[t].name; }
const char *tony_key_type_form(tony_key_type t) { return types[t].form; }

const char *tony_key_backends_text(unsigned b) {
    static const char *const text[8] = {"",           "local",       "yarn",       "local,yarn",
                                        "slurm",      "local,slurm", "yarn,slurm", "local,yarn,slurm"};
    return text[b & TONY_KEY_ALL_BACKENDS];
}

static bool is_blank(const char *s) {
    for (; *s; s++)
        if (!isspace((unsigned char)*s)) return false;
    return true;
}

int tony_key_check_value(const tony_key *k, const char *key, const char *value, const char *source, tony_error *err) {
    if (!value || is_blank(value)) return 0; /* blank: the default, as the getters read it */
    long long n;
    bool ok = true;
    switch (k->type) {
    case TONY_KEY_STRING:
    case TONY_KEY_LIST: break;
    case TONY_KEY_INT:
    case TONY_KEY_MS:
    case TONY_KEY_SECONDS: ok = tony_parse_ll(value, &n); break;
    case TONY_KEY_BOOL: {
        char *t = tony_strdup(value), *s = tony_trim(t);
        ok = strcasecmp(s, "true") == 0 || strcasecmp(s, "false") == 0;
        free(t);
        break;
    }
    case TONY_KEY_SIZE: ok = tony_parse_memory_mb(value, &n); break;
    case TONY_KEY_DURATION: ok = tony_parse_duration_ms(value, &n); break;
    }
    if (ok) return 0;
    return tony_err(err, "%s must be %s, got '%s'%s%s (its type: %s; tony conf keys lists every key's)", key,
                    tony_key_type_form(k->type), value, source ? " from " : "", source ? source : "",
                    tony_key_type_name(k->type));
}

char *tony_conf_default_app_name(const char *framework) {
    /* the frameworks' own spelling; others get a capital first letter */
    static const char *const spelled[] = {"TensorFlow", "PyTorch", "MXNet", "XGBoost", "JAX", "Horovod"};
    for (size_t i = 0; i < sizeof spelled / sizeof *spelled; i++)
        if (strcasecmp(framework, spelled[i]) == 0) return tony_sprintf("%sApplication", spelled[i]);
    char *s = tony_sprintf("%sApplication", framework);
    s[0] = (char)toupper((unsigned char)s[0]);
    return s;
}
