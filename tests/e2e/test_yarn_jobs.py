"""Whole jobs on the real Hadoop test cluster: `tony submit --backend yarn`
stages to HDFS, the coordinator runs in a YARN AM container, speaks Hadoop
IPC to the ResourceManager and the NodeManagers, and each task's executor
runs in its own container. The checks go through YARN's own REST API and
the container log dirs on disk, not only through tony's answers."""
import json
import os
import re
import signal
import time
import urllib.error
import urllib.request

import pytest

from conftest import PYTHON, REPO, SHIPMENT_SEEN, after_states, call, remember_job, shipment, wait_for

pytestmark = pytest.mark.hadoop

SMALL = ["--conf", "tony.worker.memory=256m", "--conf", "tony.ps.memory=256m",
         "--conf", "tony.chief.memory=256m", "--conf", "tony.am.memory=256m"]


def role_cmd(cmds, default="true"):
    cases = " ".join(f'"{k}") {v} ;;' for k, v in cmds.items())
    return f'case "$JOB_NAME:$TASK_INDEX" in {cases} *) case "$JOB_NAME" in {cases} *) {default} ;; esac ;; esac'


class Yarn:
    """The tony fixture pointed at the cluster."""

    def __init__(self, tony, cluster):
        self.tony = tony
        self.cluster = cluster
        tony.env["HADOOP_CONF_DIR"] = cluster.conf_dir

    def submit(self, *args, timeout=180, **kw):
        return self.tony.run("submit", "--backend", "yarn", *SMALL, *args, timeout=timeout, **kw)

    def popen_submit(self, *args):
        return self.tony.popen("submit", "--backend", "yarn", *SMALL, *args)

    def app_id(self, r):
        return r.job_dir().name

    def task_log(self, app_id, role, index, stream="stdout", missing_ok=False):
        """A task's stdout/stderr from its container's log dir, found by the
        task id the executor writes at the top of its log. missing_ok: ""
        while no container's log names the task yet (an executor just
        started has an empty executor.log), for wait_for's predicates."""
        for d in self.cluster.container_logs(app_id):
            log = d / "executor.log"
            if log.exists() and f"[executor {role}:{index}]" in log.read_text(errors="replace")[:4000]:
                p = d / stream
                return p.read_text(errors="replace") if p.exists() else ""
        if missing_ok:
            return ""
        raise AssertionError(f"no container log of {role}:{index} in {app_id}: "
                             f"{[str(d) for d in self.cluster.container_logs(app_id)]}")

    def am_log(self, app_id):
        """The coordinator's log (its AM container's am.stderr)."""
        for d in self.cluster.container_logs(app_id):
            if d.name.endswith("_000001") and (d / "am.stderr").exists():
                return (d / "am.stderr").read_text(errors="replace")
        return ""

    def app(self, app_id):
        """The RM's report of app_id, or None before the submission reached it."""
        try:
            return self.cluster.app(app_id)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def api_url(self, app_id):
        """http://host:port of the coordinator's API once it registered."""
        addr = (self.app(app_id) or {}).get("amRPCAddress") or ""
        host, _, port = addr.rpartition(":")
        if not host or port in ("", "-1", "0"):
            return None
        # the AM listens on IPv4; "localhost" may resolve to ::1 first
        url = f"http://{'127.0.0.1' if host == 'localhost' else host}:{port}"
        remember_job(url, self.tony.home / "jobs" / app_id)  # reads of it carry the job's read token
        return url

    def app_ids(self):
        jobs = self.tony.home / "jobs"
        return [d.name for d in jobs.iterdir()] if jobs.exists() else []

    def wait_no_containers(self, timeout=60):
        """Every application this test submitted has ended and none of its
        container processes is left on the machine (other tests' or tools'
        applications on the shared cluster do not count)."""
        def clean():
            for app_id in self.app_ids():
                app = self.app(app_id)  # None: the submission never reached the RM
                if app and app["state"] not in ("FINISHED", "FAILED", "KILLED"):
                    return False
                if container_pids(prefix=f"CONTAINER_ID=container_{app_id.split('_', 1)[1]}_"):
                    return False
            return True
        wait_for(clean, timeout=timeout, what="this test's applications to end with no container left")


def check_after(y):
    y.wait_no_containers()
    # Under ASan/UBSan the coordinator's and executors' reports land in their
    # container logs: fail on any.
    for app_id in y.app_ids():
        for d in y.cluster.container_logs(app_id):
            for log in list(d.glob("am.std*")) + list(d.glob("executor.*")):
                text = log.read_text(errors="replace")
                for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:", "ThreadSanitizer"):
                    assert marker not in text, f"{marker} in {log}:\n{text[-3000:]}"


@pytest.fixture
def yarn(tony, hadoop):
    y = Yarn(tony, hadoop)
    yield y
    check_after(y)


@pytest.mark.hadoop33
def test_ps_worker_pass(yarn):
    r = yarn.submit("--executes", role_cmd({"ps": "sleep 300"}, "echo $JOB_NAME $TASK_INDEX"),
                    "--conf", "tony.ps.instances=1", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.application.name=yarn-ps-worker")
    assert r.rc == 0, r
    app_id = yarn.app_id(r)
    assert app_id.startswith("application_")
    app = yarn.cluster.wait_app(app_id)
    assert (app["state"], app["finalStatus"]) == ("FINISHED", "SUCCEEDED"), app
    assert app["name"] == "yarn-ps-worker"
    st = r.status()
    assert st["final_status"] == "SUCCEEDED"
    assert r.task("ps", 0)["state"] == "FINISHED"
    assert yarn.task_log(app_id, "worker", 1).strip() == "worker 1"
    # every task ran in a container of its own, and the AM in one more
    assert len(yarn.cluster.container_logs(app_id)) == 4


def test_worker_failure_fails_the_application(yarn):
    r = yarn.submit("--executes", role_cmd({"worker": "echo oops >&2; exit 2"}),
                    "--conf", "tony.worker.instances=2")
    assert r.rc == 1, r
    app = yarn.cluster.wait_app(yarn.app_id(r))
    assert app["finalStatus"] == "FAILED", app
    assert "exit code 2" in app["diagnostics"] or "exit code 2" in r.status()["diagnostics"]
    # The first worker to fail fails the job; the other may be stopped before
    # its command ran (the ASan build starts slowly), so look at the failed one.
    failed = [i for i in (0, 1) if r.task("worker", i).get("exit_status") == 2]
    assert failed, r.status()
    assert "oops" in yarn.task_log(yarn.app_id(r), "worker", failed[0], "stderr")


def test_chief_failure_fails_fast(yarn):
    t0 = time.time()
    r = yarn.submit("--executes", role_cmd({"chief": "sleep 1; exit 7"}, "sleep 300"),
                    "--conf", "tony.chief.instances=1", "--conf", "tony.worker.instances=2")
    assert r.rc == 1, r
    assert time.time() - t0 < 90
    st = r.status()
    assert "Chief task [chief:0] failed" in st["diagnostics"]
    assert r.task("chief", 0)["exit_status"] == 7


def test_untracked_and_sidecar_roles(yarn):
    # the worker ends once both run: a sidecar that does not hold the gang may
    # still be starting when the job ends (issue 40)
    running = after_states({"ps:0": "RUNNING", "tensorboard:0": "RUNNING"})
    r = yarn.submit("--executes", role_cmd({"ps": "sleep 300", "tensorboard": "sleep 300"}, running),
                    "--conf", "tony.ps.instances=1", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.tensorboard.instances=1", "--conf", "tony.tensorboard.memory=256m",
                    "--conf", "tony.application.sidecar.jobtypes=tensorboard")
    assert r.rc == 0, r
    assert r.task("ps", 0)["state"] == "FINISHED"
    assert r.task("tensorboard", 0)["state"] == "FINISHED"


def test_tensorflow_cluster_spec_and_src_dir(yarn, scripts):
    (scripts / "show.py").write_text(
        "import json, os\n"
        "tf = json.loads(os.environ['TF_CONFIG'])\n"
        "print(len(tf['cluster']['worker']), tf['task']['type'], tf['task']['index'], open('data.txt').read())\n")
    (scripts / "data.txt").write_text("shipped")
    r = yarn.submit("--src_dir", str(scripts), "--executes", f"{PYTHON} show.py",
                    "--conf", "tony.application.framework=tensorflow", "--conf", "tony.worker.instances=2")
    assert r.rc == 0, r
    assert yarn.task_log(yarn.app_id(r), "worker", 1).strip() == "2 worker 1 shipped"


@pytest.mark.hadoop33
def test_queue_and_node_label_and_gpus(yarn):
    p = yarn.popen_submit("--executes", "sleep 6", "--conf", "tony.worker.instances=1",
                          "--conf", "tony.worker.gpus=2", "--conf", "tony.worker.node-label=gpu",
                          "--conf", "tony.yarn.queue=ml")
    try:
        def gpu_node_busy():
            nodes = yarn.cluster.rm_get("/ws/v1/cluster/nodes")["nodes"]["node"]
            for n in nodes if isinstance(nodes, list) else [nodes]:
                infos = n.get("usedResource", {}).get("resourceInformations", {}).get("resourceInformation", [])
                used = {i["name"]: i["value"] for i in (infos if isinstance(infos, list) else [infos])}
                if used.get("yarn.io/gpu", 0) > 0:
                    return n, used["yarn.io/gpu"]
            return None
        node, gpus = wait_for(gpu_node_busy, timeout=90, what="a container holding GPUs")
        assert gpus == 2
        assert "gpu" in (node.get("nodeLabels") or [])
        app = yarn.cluster.app(yarn.app_ids()[0])
        assert app["queue"] in ("ml", "root.ml"), app
    finally:
        out, err = p.communicate(timeout=120)
    assert p.returncode == 0, out + err


def test_more_gpus_than_any_node_is_refused(yarn):
    t0 = time.time()
    r = yarn.submit("--executes", "true", "--conf", "tony.worker.instances=1", "--conf", "tony.worker.gpus=5")
    assert r.rc == 2, r
    assert "tony.worker.gpus" in r.err
    assert time.time() - t0 < 30


@pytest.mark.hadoop33
def test_list_of_a_detached_job_followed_by_status_shows_its_end(yarn):
    """A detached job followed with `tony status --json` (as Airflow's
    trigger does) until the coordinator says SUCCEEDED: YARN still said
    RUNNING / UNDEFINED then (the coordinator waits for its client before it
    unregisters), and `tony list` kept showing that after YARN recorded the
    app SUCCEEDED."""
    r = yarn.submit("--detach", "--executes", "true", "--conf", "tony.worker.instances=1")
    assert r.rc == 0, r
    app_id = yarn.app_id(r)

    def done():
        st = json.loads(yarn.tony.run("status", app_id, "--json", check_rc=0).out)
        return st if st.get("final_status") == "SUCCEEDED" else None
    last = wait_for(done, timeout=120, interval=0.5, what="the coordinator's SUCCEEDED")
    # what the trigger saw last: the job over, YARN's app not yet
    assert (last["yarn"]["state"], last["yarn"]["finalStatus"]) == ("RUNNING", "UNDEFINED"), last["yarn"]

    def row():
        (job,) = json.loads(yarn.tony.run("list", "--json", check_rc=0).out)["jobs"]
        return job
    assert (row()["state"], row()["final_status"]) == ("FINISHED", "SUCCEEDED"), row()
    app = yarn.cluster.wait_app(app_id)
    assert (app["state"], app["finalStatus"]) == ("FINISHED", "SUCCEEDED"), app
    assert (row()["state"], row()["final_status"]) == ("FINISHED", "SUCCEEDED"), row()
    plain = yarn.tony.run("list", check_rc=0).out
    assert re.search(rf"{app_id}\s+yarn\s+FINISHED\s+SUCCEEDED", plain), plain


def test_kill_leaves_nothing_running(yarn):
    p = yarn.popen_submit("--executes", "sleep 300", "--conf", "tony.worker.instances=2")
    try:
        app_id = wait_for(lambda: next(iter(yarn.app_ids()), None), timeout=90, what="the application to be submitted")
        wait_for(lambda: len(container_pids("TONY_TASK_ID=worker:1", prefix=f"CONTAINER_ID=container_{app_id.split('_', 1)[1]}_")) > 0,
                 timeout=90, what="the task containers")
        k = yarn.tony.run("kill", app_id)
        assert k.rc == 0, k
        app = yarn.cluster.wait_app(app_id, timeout=60)
        assert app["state"] == "KILLED" or app["finalStatus"] == "KILLED", app
    finally:
        out, err = p.communicate(timeout=120)
    assert p.returncode == 1, out + err
    yarn.wait_no_containers()


def container_pids(*markers, prefix="CONTAINER_ID="):
    """Pids of processes running in YARN containers (an env entry starting
    with prefix) whose environment holds every marker (e.g.
    "TONY_TASK_ID=worker:1")."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        if not any(e.startswith(prefix.encode()) for e in env):
            continue
        if all(m.encode() in env for m in markers):
            found.append(int(pid))
    return found


@pytest.mark.hadoop33
def test_killed_task_container_restarts_the_job(yarn, tmp_path):
    # The one-JVM cluster never enforces memory, so its NodeManagers never
    # kill a container by themselves: the test kills one from outside, which
    # YARN reports exactly like a container lost on its node (exit 137).
    flag = tmp_path / "killed-once"
    cmd = role_cmd({"worker:1": f"if [ ! -e {flag} ]; then touch {flag}; sleep 300; fi"}, "sleep 3")
    p = yarn.popen_submit("--executes", cmd, "--conf", "tony.worker.instances=2", "--conf", "tony.am.retry-count=1")
    try:
        wait_for(lambda: flag.exists(), timeout=90, what="worker:1 to start")
        time.sleep(1)
        pids = container_pids("TONY_TASK_ID=worker:1")
        assert pids
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
    finally:
        out, err = p.communicate(timeout=180)
    assert p.returncode == 0, out + err
    st = json.loads(next((yarn.tony.home / "jobs").glob("*/status.json")).read_text())
    assert st["attempt"] == 1, st


@pytest.mark.hadoop33
def test_killed_am_container_gets_a_new_yarn_attempt(yarn, tmp_path):
    # Without recovery (tony.am.recovery-timeout-ms=0) the task containers
    # go with the coordinator and the next attempt reruns the job; with it,
    # test_yarn_adopt.py.
    flag = tmp_path / "am-killed"
    p = yarn.popen_submit("--executes", f"if [ ! -e {flag} ]; then sleep 300; fi",
                          "--conf", "tony.worker.instances=1", "--conf", "tony.am.retry-count=0",
                          "--conf", "tony.am.recovery-timeout-ms=0")
    try:
        app_id = wait_for(lambda: next(iter(yarn.app_ids()), None), timeout=90, what="the application to be submitted")
        wait_for(lambda: len(container_pids("TONY_TASK_ID=worker:0", prefix=f"CONTAINER_ID=container_{app_id.split('_', 1)[1]}_")) > 0,
                 timeout=90, what="the task container")
        flag.touch()
        am = [pid for pid in container_pids(prefix=f"CONTAINER_ID=container_{app_id.split('_', 1)[1]}_")
              if b"am\0--yarn" in open(f"/proc/{pid}/cmdline", "rb").read()]
        assert am, "no coordinator process found"
        for pid in am:
            os.kill(pid, signal.SIGKILL)
    finally:
        out, err = p.communicate(timeout=240)
    assert p.returncode == 0, out + err
    attempts = yarn.cluster.rm_get(f"/ws/v1/cluster/apps/{app_id}/appattempts")["appAttempts"]["appAttempt"]
    assert isinstance(attempts, list) and len(attempts) == 2, attempts


def accuracy(text):
    m = re.search(r"final accuracy: ([0-9.]+)", text)
    assert m, text[-2000:]
    return float(m.group(1))


# The one-JVM cluster does not enforce memory: the asks below only have to
# fit its 3 x 4 GB NodeManagers.
@pytest.mark.ml
def test_tensorflow_parameter_server_strategy(yarn):
    r = yarn.submit("--src_dir", str(REPO / "examples"), "--python_binary_path", PYTHON,
                    "--executes", "tensorflow/ps_strategy.py",
                    "--conf", "tony.chief.instances=1", "--conf", "tony.ps.instances=1",
                    "--conf", "tony.worker.instances=2", "--conf", "tony.chief.memory=1g",
                    "--conf", "tony.ps.memory=1g", "--conf", "tony.worker.memory=1g", timeout=600)
    assert r.rc == 0, r
    assert accuracy(yarn.task_log(yarn.app_id(r), "chief", 0)) >= 0.85


@pytest.mark.ml
def test_pytorch_ddp(yarn):
    r = yarn.submit("--src_dir", str(REPO / "examples"), "--python_binary_path", "/usr/bin/python3",
                    "--executes", "pytorch/ddp_digits.py", "--task_params", "--epochs 20",
                    "--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.worker.memory=1g", timeout=600)
    assert r.rc == 0, r
    assert accuracy(yarn.task_log(yarn.app_id(r), "worker", 0)) >= 0.85


def test_venv_and_resources_localized(yarn, tmp_path, scripts):
    # The local backend's shipment, staged to HDFS and localized by the NMs.
    r = yarn.submit(*shipment(tmp_path, scripts), "--conf", "tony.worker.instances=1")
    assert r.rc == 0, r
    out = yarn.task_log(yarn.app_id(r), "worker", 0)
    assert out.split("\n")[:3] == SHIPMENT_SEEN, out


def test_frozen_executor_detected_by_missed_heartbeats(yarn):
    p = yarn.popen_submit("--executes", "sleep 300", "--conf", "tony.worker.instances=2",
                          "--conf", "tony.task.heartbeat-interval-ms=200", "--conf", "tony.task.max-missed-heartbeats=5")
    try:
        app_id = wait_for(lambda: next(iter(yarn.app_ids()), None), timeout=90, what="the application to be submitted")
        prefix = f"CONTAINER_ID=container_{app_id.split('_', 1)[1]}_"

        def executor():
            for pid in container_pids("TONY_TASK_ID=worker:1", prefix=prefix):
                try:
                    if open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[1:2] == [b"executor"]:
                        return pid
                except OSError:
                    pass
            return None
        pid = wait_for(executor, timeout=90, what="worker:1's executor")
        time.sleep(2)
        t0 = time.time()
        os.kill(pid, signal.SIGSTOP)
        out, err = p.communicate(timeout=90)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 1, out + err
    assert time.time() - t0 < 30
    assert "missed [5] heartbeats" in out + err


def get_timed(url, timeout=30):
    """(seconds, JSON) of one GET of the coordinator's API; (timeout, None)
    when it did not answer in time."""
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            body = json.load(r)
    except TimeoutError:
        return timeout, None
    return time.monotonic() - t0, body


def test_api_answers_while_containers_start_on_three_nodes(yarn):
    # 6 workers of 1536 MB: at most 2 fit a 4096 MB node, so the containers
    # are started on all 3 NodeManagers (the RM hands them out together).
    # The NodeManager calls run on worker threads: the coordinator's loop
    # keeps answering its API in milliseconds while they are under way.
    n = 6
    p = yarn.popen_submit("--executes", "sleep 15", "--conf", f"tony.worker.instances={n}",
                          "--conf", "tony.worker.memory=1536m")
    try:
        app_id = wait_for(lambda: next(iter(yarn.app_ids()), None), timeout=90, what="the application to be submitted")
        url = wait_for(lambda: yarn.api_url(app_id), timeout=90, what="the coordinator's address") + "/v1/job"
        lat = []
        end = time.time() + 120
        while time.time() < end:
            s, job = get_timed(url)
            lat.append(s)
            if sum(t["state"] == "RUNNING" for t in job["tasks"]) == n:
                break
            time.sleep(0.02)
        else:
            raise AssertionError(f"not all {n} workers RUNNING: {[t['state'] for t in job['tasks']]}")
        nodes = {d.parent.parent.name for d in yarn.cluster.container_logs(app_id)}
        assert len(nodes) == 3, nodes
        assert len(lat) > 20, lat
        lat.sort()
        print(f"{len(lat)} API answers while {n} containers started; slowest {lat[-3:]}")
        # the slowest answer but one (a scheduling hiccup of a busy test
        # machine is not the coordinator's doing)
        assert lat[-2] < 0.5, f"{len(lat)} answers, slowest {lat[-5:]}"
    finally:
        out, err = p.communicate(timeout=180)
    assert p.returncode == 0, out + err


# --- on a cluster of this module's own: it is frozen, and its ResourceManager
# rolls the AMRMToken's master key over every 31 s. The RM requires the roll
# interval to exceed 3 x the AM liveness expiry (it activates a new key 1.5 x
# the expiry after making it, so that every live AM has heartbeated and got
# the new token by then): 10 s expiry, 31 s roll, 15 s activation. The
# shared cluster keeps YARN's defaults (1 day, 10 min).
OWN_YARN_SITE = ("yarn.am.liveness-monitor.expiry-interval-ms=10000 "
                 "yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs=31")


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory):
    import hadoop as htc
    d = tmp_path_factory.mktemp("htc")
    # Also a cluster without GPU scheduling: no yarn.io/gpu resource type.
    cluster = htc.start(d, env={"TONY_HTC_YARN_SITE": OWN_YARN_SITE, "TONY_HTC_GPU_TYPE": "0"})
    try:
        yield cluster
    finally:
        os.kill(cluster.pid, signal.SIGCONT)  # whatever a failed test left
        htc.stop(d)


@pytest.fixture
def own_yarn(tony, own_cluster):
    y = Yarn(tony, own_cluster)
    yield y
    check_after(y)


def test_gpus_on_a_cluster_without_gpu_scheduling_are_refused(own_yarn):
    nodes = own_yarn.cluster.rm_get("/ws/v1/cluster/nodes")["nodes"]["node"]
    assert nodes and all("yarn.io/gpu" not in json.dumps(n) for n in nodes)  # the premise
    name = f"tony-test-nogpu-{os.getpid()}-{time.time_ns()}"
    t0 = time.time()
    r = own_yarn.submit("--executes", "true", "--conf", "tony.worker.instances=1", "--conf", "tony.worker.gpus=1",
                        "--conf", f"tony.application.name={name}")
    assert r.rc == 2, r
    assert "tony.worker.gpus: role worker asks 1 GPUs but this cluster has no yarn.io/gpu resource type" in r.err, r
    assert time.time() - t0 < 30
    # Refused before anything reached the cluster: no app, nothing staged.
    assert [a for a in own_yarn.cluster.apps() if a["name"] == name] == []
    user = os.environ.get("USER") or __import__("pwd").getpwuid(os.getuid()).pw_name
    assert own_yarn.cluster.hdfs_list(f"/user/{user}/.tony") == [], "something was staged"


def test_amrmtoken_roll_over_taken_live(own_yarn, tmp_path):
    flag = tmp_path / "go"
    p = own_yarn.popen_submit("--executes", f"while [ ! -e {flag} ]; do sleep 0.5; done",
                              "--conf", "tony.worker.instances=1")
    rm_log = own_yarn.cluster.log
    try:
        app_id = wait_for(lambda: next(iter(own_yarn.app_ids()), None), timeout=90, what="the application")
        wait_for(lambda: "with the rolled-over AMRMToken" in own_yarn.am_log(app_id), timeout=120,
                 what="the coordinator to connect with a rolled-over AMRMToken")
        # The job ends (and unregisters) only once the RM retired the old key.
        sent = f"Send new AMRMToken back to application: {app_id}"

        def retired():
            text = rm_log.read_text(errors="replace")
            return sent in text and "Activating next master key" in text[text.index(sent):]
        wait_for(retired, timeout=60, what="the RM to activate the new master key")
        flag.touch()
        out, err = p.communicate(timeout=120)
    finally:
        flag.touch()
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 0, out + err
    app = own_yarn.cluster.wait_app(app_id)
    assert (app["state"], app["finalStatus"]) == ("FINISHED", "SUCCEEDED"), app
    log = own_yarn.am_log(app_id)
    rolls = re.findall(r"rolled the AMRMToken over \(key id (-?\d+) -> (-?\d+)\)", log)
    assert rolls, log[-3000:]
    old, new = rolls[0]
    assert old != new
    assert f"authenticated to the ResourceManager with the rolled-over AMRMToken (key id {new})" in log
    # taken once per roll, though the RM repeats it until a connection uses it
    assert len(rolls) == rm_log.read_text(errors="replace").count(sent)
    assert "unregistered from the ResourceManager: SUCCEEDED" in log


def test_frozen_cluster_stalls_neither_api_nor_job(own_yarn):
    # SIGSTOP on the cluster's one JVM: the RM and every NodeManager hang
    # with their connections open. A kill through the API while it is frozen
    # makes the coordinator stop the workers: those stopContainers calls and
    # its allocate heartbeats wait on worker threads, and its loop keeps
    # answering. After SIGCONT the calls complete and the job ends KILLED.
    n = 3
    p = own_yarn.popen_submit("--executes", "sleep 300", "--conf", f"tony.worker.instances={n}")
    cluster = own_yarn.cluster
    lat, states = [], set()
    try:
        app_id = wait_for(lambda: next(iter(own_yarn.app_ids()), None), timeout=90, what="the application")
        url = wait_for(lambda: own_yarn.api_url(app_id), timeout=90, what="the coordinator's address")
        wait_for(lambda: sum(t["state"] == "RUNNING" for t in get_timed(url + "/v1/job")[1]["tasks"]) == n,
                 timeout=90, what=f"{n} workers RUNNING")
        secret = (own_yarn.tony.home / "jobs" / app_id / "secret").read_text().strip()
        os.kill(cluster.pid, signal.SIGSTOP)
        try:
            t0 = time.time()
            killed = False
            while time.time() - t0 < 6:
                s, job = get_timed(url + "/v1/job", timeout=2)
                lat.append(s)
                states.add(job["state"] if job else "(no answer)")
                if time.time() - t0 > 1.5 and not killed:
                    k0 = time.monotonic()
                    try:
                        kill_status, _ = call(url + "/v1/job/kill", "POST", "{}", secret=secret)
                    except OSError as e:  # a timeout: the loop is stuck
                        kill_status = e
                    lat.append(time.monotonic() - k0)
                    killed = True
                time.sleep(0.05)
        finally:
            os.kill(cluster.pid, signal.SIGCONT)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    lat.sort()
    print(f"{len(lat)} API answers while the cluster was frozen; slowest {lat[-3:]}")
    assert lat[-2] < 0.5, f"{len(lat)} answers while the cluster was frozen, slowest {lat[-5:]}"
    assert len(lat) > 30, lat
    assert kill_status == 200, kill_status
    assert p.returncode == 1, out + err
    # the kill was taken while the cluster was frozen: the job waited for its
    # containers to end (FINISHING), which YARN could tell only after SIGCONT
    assert "FINISHING" in states, states
    st = json.loads((own_yarn.tony.home / "jobs" / app_id / "status.json").read_text())
    assert st["final_status"] == "KILLED", st
    assert own_yarn.cluster.wait_app(app_id)["finalStatus"] == "KILLED"
    log = own_yarn.am_log(app_id)
    assert "unregistered from the ResourceManager: KILLED" in log, log[-3000:]
    assert "cannot stop" not in log, log[-3000:]
