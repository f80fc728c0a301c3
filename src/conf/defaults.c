/* The built-in defaults. Values follow TonY's tony-default.xml (which wins
 * over its Java constants where the two disagree), so a TonY user's tony.xml
 * behaves the same here; tony's own keys follow with their defaults. */
#include "conf/defaults.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "common/strv.h"

#include "conf/logpolicy.h"

static const tony_conf_default defaults[] = {
    /* Application */
    {"tony.yarn.queue", "default", "Scheduler queue the job is submitted to."},
    {"tony.application.shared-dir", NULL,
     "A directory every task can reach (ours), given to tasks as TONY_JOB_DIR for checkpoints. The local "
     "backend defaults it to the job dir's shared/; on YARN it is unset unless named (e.g. an NFS mount)."},
    {"tony.yarn.dist-cache", NULL,
     "HDFS directory where tony keeps its own self-contained archive, uploaded once per build and localized by "
     "every container (ours; default /user/<user>/.tony/cache). Set it empty to upload tony with each job instead."},
    {"tony.yarn.max-app-attempts", "2",
     "YARN attempts of the coordinator (ours): when its container is lost, the next attempt adopts the running "
     "tasks (tony.am.recovery-timeout-ms), or reruns the job. The RM caps it at yarn.resourcemanager.am.max-attempts."},
    {"tony.am.recovery-timeout-ms", "300000",
     "When the coordinator is lost (ours; YARN, with tony.yarn.max-app-attempts above 1): how long the tasks "
     "keep running and look for the next coordinator, which adopts them without a restart; a task whose "
     "coordinator has not come back by then is stopped. 0: off, the containers go with the coordinator and "
     "the next attempt reruns the job."},
    {"tony.application.name", "TensorFlowApplication",
     "Name of the job as the scheduler, tony list and the pages show it. Unset: the framework's name and "
     "Application (TonY's TensorFlowApplication for tensorflow, PyTorchApplication for pytorch)."},
    {"tony.application.type", "TONY", "Application type reported to YARN."},
    {"tony.application.tags", "", "Comma list of tags attached to the application (e.g. Azkaban flow tags)."},
    {"tony.application.node-label", NULL, "Node label expression for the coordinator (AM) container."},
    {"tony.application.enable-preprocess", "false",
     "Run the command in the coordinator before starting the distributed tasks; a failure fails the job."},
    {"tony.application.timeout", "0", "Maximum run time of the whole job in milliseconds; 0 means no limit."},
    {"tony.application.max-excluded-nodes", NULL,
     "Most nodes a job keeps its containers off after node-level failures (ours); unset: fewer than half of "
     "the cluster's nodes; 0 turns exclusion off. Never every node."},
    {TONY_LOGPOLICY_KEY, TONY_LOGPOLICY_DEFAULTS,
     "Comma list of ACTION:REGEX matched against every line of a task's stdout and stderr (ours): fail makes a "
     "failure of that task permanent (no restart), exclude-node keeps the job off its node; POSIX extended "
     "regex, (?i) in front for any case, \\, for a comma inside one. Empty: none."},
    {"tony.application.framework", "tensorflow",
     "Framework runtime that sets up each task's distributed environment (case-insensitive)."},
    {"tony.application.num-client-rm-connect-retries", "3",
     "How many times the client retries connecting to the resource manager."},
    {"tony.application.distributed-mode", "GANG",
     "GANG: tasks start once every task registered and get the cluster spec; FCFS: each task starts at once, "
     "without a cluster spec."},
    {"tony.application.untracked.jobtypes", "ps",
     "Job types the job does not wait for; they are stopped when the tracked tasks end and fail the job if "
     "they fail on their own."},
    {"tony.application.sidecar.jobtypes", "tensorboard",
     "Job types that run beside the job (e.g. TensorBoard); they are stopped at the end and their failures "
     "are ignored."},
    {"tony.application.stop-on-failure-jobtypes", "ps",
     "Job types whose failure of any instance ends the job at once as FAILED."},
    {"tony.application.fail-on-worker-failure-enabled", "false",
     "Fail the job at once when any tracked task fails, instead of only when the chief fails."},
    {"tony.application.fail-fast-lockstep", "auto",
     "End the attempt at once when one tracked task fails (auto|true|false); auto asks the framework whether "
     "its workers train in lock-step."},
    {"tony.application.restart-policy", "on-failure",
     "Which failed attempts are retried, within tony.am.retry-count (ours): on-failure (all), never, or "
     "exit-code (exit codes 1-127 are the script's own error and are not retried; signals, lost or preempted "
     "containers are). tony.<type>.restart-policy overrides it for the job type whose task failed first."},
    {"tony.application.restart-backoff-ms", "1000",
     "Wait before the first restart of a failed attempt, in ms (ours); each later restart waits twice as long."},
    {"tony.application.sizing-min-run-ms", "60000",
     "Right-sizing advice (ours) comes only from tasks whose process ran at least this long, in ms: a task that "
     "never started or ran briefly says nothing about the memory a real run needs."},
    {"tony.application.restart-backoff-max-ms", "60000", "The longest wait between attempts, in ms (ours)."},
    {"tony.application.restart-mode", "in-place",
     "How a failed attempt restarts (tony.am.retry-count): in-place keeps the healthy containers and starts the "
     "user processes in them again; reallocate stops every container and asks for new ones."},
    {"tony.application.security.enabled", "true",
     "Kerberos mode: fetch delegation tokens and secure client-coordinator calls."},
    {"tony.application.hdfs-conf-path", NULL, "Path of an hdfs-site.xml to use and ship to the containers."},
    {"tony.application.yarn-conf-path", NULL, "Path of a yarn-site.xml to use and ship to the containers."},
    {"tony.application.mapred-conf-path", NULL, "Path of a mapred-site.xml to use."},
    {"tony.application.prepare-stage", NULL,
     "Comma list of job types that run first; the training stage starts when they have finished."},
    {"tony.application.training-stage", NULL,
     "Comma list of job types that start after the prepare stage; defaults to the job types not in it."},
    {"tony.application.tensorboard-log-dir", NULL, "Log directory for a TensorBoard sidecar run by the job."},
    {"tony.application.backend", NULL,
     "Where tasks run: local, yarn, ...; unset means the client picks one from the environment."},
    {"tony.other.namenodes", NULL, "Comma list of extra NameNode URIs to get delegation tokens from."},

    /* Tasks */
    {"tony.task.max-total-instances", "-1", "Limit on the sum of all tony.<type>.instances; -1 means no limit."},
    {"tony.task.max-total-gpus", "-1",
     "Limit on the GPUs requested by all tasks together (gpus x instances); -1 means no limit."},
    {"tony.task.am.jvm.opts", "", "Extra JVM options of TonY's Java coordinator; accepted and unused here."},
    {"tony.task.executor.jvm.opts", "-Xmx1536m", "JVM options of TonY's Java executor; accepted and unused here."},
    {"tony.task.heartbeat-interval-ms", "1000", "How often each executor heartbeats to the coordinator, in ms."},
    {"tony.task.max-missed-heartbeats", "25", "Missed heartbeats after which a task is declared dead."},
    {"tony.task.metrics-interval-ms", "5000", "How often each executor reports memory and GPU metrics, in ms."},
    {"tony.task.gpu-metrics.enabled", "true", "Collect GPU metrics for tasks that requested GPUs."},
    {"tony.task.executor.execution-timeout-ms", "0",
     "Time limit of every user process in ms; 0 falls back to tony.worker.timeout."},
    {"tony.task.log-max-size", "1g",
     "Cap on each task's stdout and stderr file (512m, 2g; plain numbers are MB); past it the file keeps its head and "
     "most recent output with a line saying how much was cut between them. 0: no cap."},
    {"tony.task.progress-timeout", "0",
     "Hang diagnosis (ours): a task that writes no output and does not touch $TONY_PROGRESS_FILE for this long "
     "is hung: the coordinator collects every task's Python stacks (py-spy) and fails the attempt. Milliseconds, "
     "or a number with ms, s, m or h (e.g. 30m); 0 turns it off."},
    {"tony.task.py-spy-path", "py-spy",
     "The py-spy that dumps a hung task's stacks (ours): a path, or a name looked up on the executor's PATH and "
     "beside the task's python."},
    {"tony.gpu-exec-path", "nvidia-smi", "nvidia-smi binary (or its directory) used for GPU metrics."},

    /* Coordinator (AM) */
    {"tony.am.retry-count", "0",
     "How many times the coordinator restarts the whole set of tasks after a failed attempt."},
    {"tony.am.memory", "2g", "Memory of the coordinator container (e.g. 2g, 2048m, 2048)."},
    {"tony.am.vcores", "1", "Virtual cores of the coordinator container."},
    {"tony.am.gpus", "0", "GPUs of the coordinator container (useful in single-node mode)."},
    {"tony.am.wait-client-signal-stop-timeout-sec", "15",
     "Seconds the coordinator waits at the end for the client to fetch the final task states."},
    {"tony.am.command", NULL,
     "Command the coordinator runs in single-node or preprocess mode; defaults to tony.containers.command."},

    /* Parameter servers and workers */
    {"tony.ps.memory", "2g", "Memory of each parameter server."},
    {"tony.ps.vcores", "1", "Virtual cores of each parameter server."},
    {"tony.worker.memory", "2g", "Memory of each worker."},
    {"tony.worker.vcores", "1", "Virtual cores of each worker."},
    {"tony.worker.gpus", "0", "GPUs of each worker."},
    {"tony.worker.timeout", "0",
     "Time limit of every user process in ms (all job types, despite the name); 0 means no limit."},

    /* Containers */
    {"tony.container.allocation.timeout", "-1",
     "Milliseconds a launched task may take to register before the job fails; -1 means no limit."},
    {"tony.container.registration.timeout", "-1",
     "Milliseconds a launched task may take to register; when unset or <= 0, "
     "tony.container.allocation.timeout applies."},
    {"tony.containers.command", NULL, "Command of every task without its own tony.<type>.command (--executes)."},
    {"tony.containers.resources", NULL,
     "Comma list of files for every container, SOURCE[::NAME][#archive]; --conf appends to it."},
    {"tony.containers.envs", NULL, "Comma list of K=V for every container's environment (--container_env)."},
    {"tony.execution.envs", NULL, "Comma list of K=V for the user process's environment (--shell_env)."},

    /* Docker */
    {"tony.docker.enabled", "false", "Run the coordinator and tasks in Docker containers."},
    {"tony.docker.containers.image", NULL, "Docker image for every container without tony.docker.<type>.image."},
    {"tony.docker.containers.mount", NULL, "Docker mounts for every container."},

    /* History and portal */
    {"tony.portal.url", "https://localhost:19886", "Base URL of the history portal printed by the client."},
    {"tony.history.location", "/path/to/tony-history",
     "History root; the coordinator writes events there only if <location>/intermediate exists."},
    {"tony.history.intermediate", "/path/to/tony-history/intermediate", "History directory of running jobs."},
    {"tony.history.finished", "/path/to/tony-history/finished", "History directory of finished jobs."},
    {"tony.history.mover-interval-ms", "300000",
     "How often the portal moves finished jobs out of the intermediate directory, in ms."},
    {"tony.history.retention-sec", "2592000", "How long history is kept, in seconds (30 days)."},
    {"tony.history.purger-interval-ms", "21600000", "How often old history is purged, in ms (6 hours)."},
    {"tony.history.finished-dir-timezone", "UTC", "Time zone of the finished directory's yyyy/MM/dd layout."},
    {"tony.portal.cache.max-entries", "10000", "Entries the portal caches per kind (config, metadata, events)."},
    {"tony.keytab.user", "user1", "Kerberos principal to log in as from tony.keytab.location (submit, the portal)."},
    {"tony.keytab.location", "/location/to/tony.keytab", "Keytab file of tony.keytab.user."},
    {"tony.keytab.refresh-tokens", "true",
     "With a keytab login on YARN: hand the keytab to the coordinator (in the application's credentials) so that "
     "it renews the job's HDFS tokens past their maximum lifetime; false keeps the keytab on this machine."},
    {"tony.https.port", "19886", "HTTPS port of the portal."},
    {"tony.https.keystore.path", "/location/to/tony.jks", "Keystore file of the portal's HTTPS server."},
    {"tony.https.keystore.type", "JKS", "Type of the portal's keystore."},
    {"tony.https.keystore.password", "password", "Password of the portal's keystore."},
    {"tony.https.keystore.algorithm", "SunX509", "Key manager algorithm of the portal's keystore."},
    {"tony.http.port", "disabled", "Plain HTTP port of the portal, or disabled."},
    {"tony.secret.key", "changeme", "Secret of the portal's web framework."},

    /* Horovod */
    {"tony.horovod.mode.test", "false", "Horovod test mode: the driver fakes a rendezvous server."},
    {"tony.horovod.mode.test.fast.fail", "false", "Horovod test mode: the driver fails at once."},
    {"tony.horovod.driver.mode.debug", "false",
     "Horovod debug mode: the user supplies the driver through tony.driver.command."},

    /* Local backend */
    {"tony.local.root", NULL, "Directory of local jobs' state; unset means ~/.tony."},
    {"tony.local.vcores", NULL,
     "Caps the vcores the local backend hands out at once; unset, vcores oversubscribe this machine's CPUs (as on YARN)."},
    {"tony.local.memory", NULL, "Memory the local backend may hand out; unset means this machine's memory."},
    {"tony.local.gpus", NULL, "GPUs the local backend may hand out; unset means the GPUs found on this machine."},
};

const tony_conf_default *tony_conf_defaults(size_t *n) {
    *n = sizeof defaults / sizeof defaults[0];
    return defaults;
}

const tony_conf_default *tony_conf_default_find(const char *key) {
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        if (strcmp(defaults[i].key, key) == 0) return &defaults[i];
    return NULL;
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
