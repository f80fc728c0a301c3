"""Elastic jobs on YARN (issue 24, docs/elastic.md) on a Hadoop test cluster
of this file's own, sized for it: one NodeManager of 2560 MB, room for five
512 MB containers: an elastic job's coordinator and 3 of its workers, and
one more application (a "sleeper": a single-node tony job whose coordinator
sleeps, in the `ml` queue). A real PyTorch DDP training (gloo, CPU; the
script of test_elastic, checkpointing to a shared dir) with min=2 max=4
workers starts with the 3 the cluster has room for, grows to 4 once the
sleeper is killed, and goes on with 3 when a worker's container is killed
while another application waits for the room it frees; each world's ranks
report their loss. Two elastic jobs that together need more than the
cluster both finish; the same two without elasticity wait for each other
until tony.container.allocation.timeout fails them."""
import json
import os
import re
import signal

import pytest

from conftest import REPO, wait_for
from test_elastic import DDP_SCRIPT
from test_ml import TORCH_PY
from test_yarn_inplace import container_id_of, process_of
from test_yarn_jobs import Yarn, check_after

# Not `ml`: tony under ASan runs them as well (the Hadoop suite runs once, under ASan).
pytestmark = pytest.mark.hadoop

MB = 512
# One NodeManager with room for exactly five containers of MB.
CLUSTER_ENV = {"TONY_HTC_NODEMANAGERS": "1", "TONY_HTC_WEB_NODEMANAGERS": "0",
               "TONY_HTC_NM_MEMORY_MB": str(5 * MB), "TONY_HTC_NM_VCORES": "16", "TONY_HTC_NODE_LABEL": ""}
SETTLE_MS = 6000


@pytest.fixture(scope="module")
def elastic_cluster():
    import hadoop as htc
    d = REPO / "build" / "htc-elastic"
    cluster = htc.start(d, env=CLUSTER_ENV)
    try:
        yield cluster
    finally:
        htc.stop(d)


@pytest.fixture
def eyarn(tony, elastic_cluster):
    y = Yarn(tony, elastic_cluster)
    yield y
    check_after(y)


def submit_sleeper(y):
    """A single-node job whose coordinator holds one MB container, in the
    ml queue (served before the default queue while that one is over its
    share); its app id once YARN runs it."""
    before = set(y.app_ids())
    r = y.tony.run("submit", "--backend", "yarn", "--detach", "--executes", "sleep 900",
                   "--conf", f"tony.am.memory={MB}m", "--conf", "tony.yarn.queue=ml", timeout=180)
    assert r.rc == 0, r
    return wait_for(lambda: next(iter(set(y.app_ids()) - before), None), 60, what="the sleeper's app id")


def app_state(y, app_id):
    app = y.cluster.app(app_id)
    return app["state"] if app else None


def log_of(y, app_id, i):
    """worker:i's stdout so far ("" before its container's log is there)."""
    try:
        return y.task_log(app_id, "worker", i)
    except AssertionError:
        return ""


def world_lines(y, app_id, i):
    """(version, rank, size) of each world worker:i started in."""
    return re.findall(r"world (\d+) rank (\d+) of (\d+)", log_of(y, app_id, i))


def in_world(y, app_id, i, rank, size):
    """worker:i's latest start was as rank of a world of size."""
    lines = world_lines(y, app_id, i)
    return bool(lines) and lines[-1][1:] == (str(rank), str(size))


def world_sizes(y, app_id):
    """The world's size at each change, from the coordinator's log."""
    return [int(n) for n in re.findall(r"; world \d+ is (\d+) task\(s\)", y.am_log(app_id))]


def submit_elastic(y, tmp_path, name, workers, min_workers, steps, *extra, stop=None, queue="default"):
    src = tmp_path / f"src-{name}"
    src.mkdir()
    (src / "elastic_ddp.py").write_text(DDP_SCRIPT)
    shared = tmp_path / f"shared-{name}"
    shared.mkdir()
    env = ["--shell_env", f"ELASTIC_STOP={stop}"] if stop else []
    return y.tony.popen("submit", "--backend", "yarn", "--src_dir", str(src), "--python_binary_path", TORCH_PY,
                        "--executes", "elastic_ddp.py", "--task_params", str(steps), *env,
                        "--conf", "tony.application.framework=pytorch", "--conf", f"tony.application.name={name}",
                        "--conf", f"tony.worker.instances={workers}", "--conf", f"tony.worker.min-instances={min_workers}",
                        "--conf", f"tony.application.elastic-settle-ms={SETTLE_MS}",
                        "--conf", f"tony.worker.memory={MB}m", "--conf", f"tony.am.memory={MB}m",
                        "--conf", "tony.application.restart-mode=in-place",
                        "--conf", f"tony.application.shared-dir={shared}", "--conf", f"tony.yarn.queue={queue}",
                        *extra)


def test_ddp_starts_with_3_grows_to_4_and_goes_on_with_3_on_a_full_cluster(eyarn, tmp_path):
    y = eyarn
    sleeper = submit_sleeper(y)
    wait_for(lambda: app_state(y, sleeper) == "RUNNING", 120, what="the sleeper running")
    stop = tmp_path / "stop"
    before = set(y.app_ids())
    p = submit_elastic(y, tmp_path, "elastic", 4, 2, 100000, stop=stop)
    second = None
    try:
        app = wait_for(lambda: next(iter(set(y.app_ids()) - before), None), 90, what="the elastic job's app id")
        job = y.tony.home / "jobs" / app
        # room for 3 workers: after the settle time the world is 3, worker:3 still asked for
        for i in range(3):
            wait_for(lambda: in_world(y, app, i, i, 3), 240, what=f"worker:{i} as rank {i} of 3")
        # the sleeper ends: its room goes to worker:3, and the world grows to 4
        assert y.tony.run("kill", sleeper).rc == 0
        for i in range(4):
            wait_for(lambda: in_world(y, app, i, i, 4), 240, what=f"worker:{i} as rank {i} of 4")
        # the cluster is full; another application waits for room in the ml queue
        second = submit_sleeper(y)
        assert app_state(y, second) in ("ACCEPTED", "SUBMITTED", "NEW_SAVING", "NEW"), app_state(y, second)
        wait_for(lambda: re.search(r"step \d+ loss [\d.]+ world 4\n", log_of(y, app, 2)), 120,
                 what="a step in the world of 4")
        victim = process_of("worker:1", app, "executor")
        assert victim
        lost = container_id_of(victim)
        os.kill(victim, signal.SIGKILL)
        # its room goes to the waiting application; the job goes on with 3
        wait_for(lambda: app_state(y, second) == "RUNNING", 120, what="the second sleeper running")
        for i, rank in ((0, 0), (2, 1), (3, 2)):
            wait_for(lambda: in_world(y, app, i, rank, 3), 120, what=f"worker:{i} as rank {rank} of 3")
        wait_for(lambda: re.search(r"step \d+ loss [\d.]+ world 3\n",
                                   log_of(y, app, 3).rsplit("rank 2 of 3", 1)[-1]),
                 120, what="a step in the last world of 3")
        stop.write_text("")
        out, err = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
        for s in (sleeper, second):
            if s:
                y.tony.run("kill", s)
    assert p.returncode == 0, out + err
    st = json.loads((job / "status.json").read_text())
    assert st["final_status"] == "SUCCEEDED", st
    # the world: 3 (or fewer first, while containers came), 4, then 3
    sizes = world_sizes(y, app)
    assert sizes[-2:] == [4, 3] and 3 in sizes[:-2], sizes
    # nothing failed but worker:1, whose container was lost: each attempt ended RESIZED
    assert {a["end"] for a in st["attempts"] if a["attempt"] < st["attempt"]} == {"RESIZED"}, st["attempts"]
    assert st["tasks"][1]["out"] and lost, st["tasks"][1]
    # every rank's loss from each world it trained in
    for i, worlds in ((0, ("3", "4", "3")), (1, ("3", "4")), (2, ("3", "4", "3")), (3, ("4", "3"))):
        log = y.task_log(app, "worker", i)
        for size in set(worlds):
            assert re.search(rf"step \d+ loss [\d.]+ world {size}\n", log), (i, size, log[-2000:])
    for i in (0, 2, 3):
        assert re.search(r"done rank \d of 3 loss [\d.]+", y.task_log(app, "worker", i)), i



def submit_pair(y, tmp_path, tag, min_workers, *extra):
    """Two DDP jobs of 3 workers (each min_workers at least), one in each
    queue, so that the scheduler shares the room between them: together
    they need 8 containers where the cluster has 5. Their processes and
    app ids."""
    procs, apps = [], []
    for queue in ("default", "ml"):
        before = set(y.app_ids())
        p = submit_elastic(y, tmp_path, f"{tag}-{queue}", 3, min_workers, 40, *extra, queue=queue)
        procs.append(p)
        apps.append(wait_for(lambda: next(iter(set(y.app_ids()) - before), None), 90, what=f"{tag}-{queue}'s app id"))
    return procs, apps


def final_of(y, app_id):
    return json.loads((y.tony.home / "jobs" / app_id / "status.json").read_text())


def test_two_elastic_jobs_that_need_more_than_the_cluster_both_finish(eyarn, tmp_path):
    """min=1: each starts with what it got (no gang of 3 to wait for), and
    the one that finishes first leaves its room to the other."""
    y = eyarn
    procs, apps = submit_pair(y, tmp_path, "elastic", 1)
    for p in procs:
        out, err = p.communicate(timeout=400)
        assert p.returncode == 0, out + err
    for app in apps:
        st = final_of(y, app)
        assert st["final_status"] == "SUCCEEDED", st
        done = [i for i in range(3) if re.search(r"done rank \d of \d loss", log_of(y, app, i))]
        assert done, (app, [log_of(y, app, i)[-500:] for i in range(3)])


def test_two_rigid_jobs_that_need_more_than_the_cluster(eyarn, tmp_path):
    """The same two jobs without elasticity (min = max = 3): the scheduler
    shares the 3 workers' room between them, so neither gang is whole and
    both wait, as TonY's jobs do (without a timeout, forever).
    tony.container.allocation.timeout (here 45 s) ends that wait: a job
    still missing a worker then fails naming the timeout; the other fails
    the same way, or (when its own timeout comes later than the first's
    end frees its room) trains and succeeds; never do both succeed. In most
    runs made both failed; in one (CI) the second trained and succeeded.
    The script prints TONY_WORLD_VERSION, which tony sets for elastic jobs
    only: a rigid job that trains gets it from --shell_env (as the bench's
    rigid job does); without it that run's training failed with KeyError."""
    y = eyarn
    procs, apps = submit_pair(y, tmp_path, "rigid", 3, "--conf", "tony.container.allocation.timeout=45000",
                              "--shell_env", "TONY_WORLD_VERSION=0")
    outcomes = []
    for p, app in zip(procs, apps):
        out, err = p.communicate(timeout=400)
        st = final_of(y, app)
        outcomes.append((p.returncode, st["final_status"], st.get("diagnostics", "")))
    timed_out = [o for o in outcomes if o[1] == "FAILED" and "registration timeout" in o[2]
                 and "tony.container.allocation.timeout" in o[2]]
    assert timed_out, outcomes
    assert all(o in timed_out or (o[0] == 0 and o[1] == "SUCCEEDED") for o in outcomes), outcomes
