"""Coordinator loss on the real Hadoop test cluster (issue 12, item 8): the
coordinator's process (`tony am --yarn`) is SIGKILLed in the middle of a
job; YARN starts the application's next attempt, which keeps the task
containers (keep-containers-across-application-attempts). The executors,
their heartbeats failing, keep their user processes running, read the new
coordinator's address from HDFS and come back to it; the job goes on in its
attempt 0, with the same processes, and ends as it would have; its web page says so.
Also: a coordinator lost while its tasks wait at the gang barrier, and a
real PyTorch DDP training that goes on through a coordinator loss."""
import json
import os
import re
import signal
import time

import pytest

from conftest import REPO, alive, read_token, wait_for
from test_yarn_inplace import process_of
from test_web_ui import browser_tools, run_browser  # noqa: F401 (the fixture)
from test_yarn_jobs import accuracy, container_pids, yarn  # noqa: F401 (the fixture)

pytestmark = pytest.mark.hadoop


def am_pids(app_id):
    prefix = f"CONTAINER_ID=container_{app_id.split('_', 1)[1]}_"
    return [pid for pid in container_pids(prefix=prefix)
            if b"am\0--yarn" in open(f"/proc/{pid}/cmdline", "rb").read()]


def am_attempt_log(cluster, app_id, attempt):
    """am.stderr of the coordinator of YARN attempt `attempt` (1, 2, ...)."""
    for d in cluster.container_logs(app_id):
        if d.name.endswith(f"_{attempt:02d}_000001") and (d / "am.stderr").exists():
            return (d / "am.stderr").read_text(errors="replace")
    return ""


@pytest.mark.hadoop33
def test_killed_coordinator_is_replaced_and_the_training_goes_on(yarn, tmp_path, browser_tools):
    """Two workers each wait for a flag file of their own while the
    coordinator is killed. worker:1's flag comes right after the kill: its
    process ends while no coordinator runs, and its executor reports that
    end to the next one. The next AM attempt adopts both (no container asked
    for, no gang, no restart); then worker:0's flag lets it finish: the job
    succeeds in attempt 0, each task's user process is the one that started
    before the kill, and its output shows a single start."""
    go = tmp_path / "go-"
    cmd = f'echo "started $$"; while [ ! -e {go}$TASK_INDEX ]; do sleep 0.2; done; echo "done $$"'
    p = yarn.popen_submit("--executes", cmd, "--conf", "tony.worker.instances=2",
                          "--conf", "tony.am.retry-count=0", "--conf", "tony.task.heartbeat-interval-ms=500")
    try:
        app_id = wait_for(lambda: next(iter(yarn.app_ids()), None), timeout=90, what="the application")
        users = wait_for(lambda: (lambda u: u if all(u.values()) else None)(
            {i: process_of(f"worker:{i}", app_id, script=str(go)) for i in (0, 1)}),
            timeout=120, what="both user processes")
        executors = {i: process_of(f"worker:{i}", app_id, "executor") for i in (0, 1)}
        # YARN keeps only the containers its RM has seen running (the
        # NodeManagers' heartbeats, a second apart, say so), not one it
        # only handed out: a few heartbeats' time
        time.sleep(3)
        first = am_pids(app_id)
        assert first, "no coordinator process found"
        killed_ms = time.time() * 1000
        for pid in first:
            os.kill(pid, signal.SIGKILL)
        (tmp_path / "go-1").touch()
        wait_for(lambda: not alive(users[1]), timeout=10, what="worker:1's process to end")
        # the next attempt's coordinator takes both tasks back
        log = wait_for(lambda: (lambda t: t if "task(s) adopted" in t else None)(
            am_attempt_log(yarn.cluster, app_id, 2)),
                       timeout=150, what="the second coordinator to adopt the tasks")
        assert "coordinator restarted, 2 of 2 task(s) adopted in attempt 0" in log, log[-3000:]
        assert "asking for" not in log, log[-3000:]  # no container asked for
        # worker:0 goes on: the same process, in the same container, never restarted
        assert alive(users[0]) and alive(executors[0]), (users, executors)
        assert process_of("worker:0", app_id, script=str(go)) == users[0]
        # the new coordinator's page says so, in a real browser
        # the link tony prints, with the job's read token
        link = f"{yarn.api_url(app_id)}/?token={read_token(yarn.tony.home / 'jobs' / app_id)}"
        page = run_browser(browser_tools, url=link, app_id=app_id, mode="adopted",
                           expect="Coordinator restarted: 2 of 2 tasks taken back without a restart",
                           running=["worker:0"])
        assert "2 of 2" in page["line"], page
        (tmp_path / "go-0").touch()
    finally:
        for i in (0, 1):
            (tmp_path / f"go-{i}").touch()
        out, err = p.communicate(timeout=240)
    assert p.returncode == 0, out + err
    assert "the coordinator was lost and restarted: 2 of 2 task(s) adopted without a restart" in out, out + err
    assert yarn.cluster.app(app_id)["finalStatus"] == "SUCCEEDED"
    attempts = yarn.cluster.rm_get(f"/ws/v1/cluster/apps/{app_id}/appattempts")["appAttempts"]["appAttempt"]
    assert isinstance(attempts, list) and len(attempts) == 2, attempts
    st = json.loads(next((yarn.tony.home / "jobs").glob("*/status.json")).read_text())
    assert st["final_status"] == "SUCCEEDED" and st["attempt"] == 0, st
    assert st["coordinator_restarted"] == {"waiting": False, "adopted": 2}, st
    # the job's clock runs from its submission, not from the new coordinator
    assert st["started_ms"] < killed_ms - 3000, (st["started_ms"], killed_ms)
    for i in (0, 1):
        t = next(t for t in st["tasks"] if t["role"] == "worker" and t["index"] == i)
        assert t["state"] == "SUCCEEDED" and t["container_attempt"] == 0, t
        out_i = yarn.task_log(app_id, "worker", i)
        assert out_i.count("started ") == 1, out_i
        assert f"started {users[i]}" in out_i and f"done {users[i]}" in out_i, (out_i, users[i])
    # worker:1's process ended with no coordinator running: its executor
    # held the end for the next one
    log1 = yarn.task_log(app_id, "worker", 1, stream="executor.log")
    assert "the task's end waits for it or its successor" in log1, log1[-3000:]
    assert "took this task back" in log1, log1[-3000:]
    # the application's containers: the two coordinators' and the two tasks'
    assert len(list(yarn.cluster.container_logs(app_id))) == 4


def test_coordinator_lost_at_the_gang_barrier(yarn, tmp_path):
    """The coordinator is killed while the gang is incomplete: another
    application holds 2 of the 4 GPUs of the one labelled node, so worker:0
    gets its container and waits at the barrier while worker:1's is still
    asked for. The next AM attempt takes worker:0 back, waiting as it was
    (same executor, same port), sees that the one container handed back has
    its task again and, as no process had started, asks for worker:1 anew
    instead of failing the attempt. Once the other application ends,
    worker:1 starts and the gang goes: the job succeeds in its attempt 0."""
    gpu = ["--conf", "tony.worker.gpus=2", "--conf", "tony.worker.node-label=gpu"]
    blocker = yarn.popen_submit("--executes", "sleep 600", "--conf", "tony.worker.instances=1", *gpu,
                                "--conf", "tony.application.name=tony-test-blocker")
    p = None
    try:
        blocker_id = wait_for(lambda: next(iter(yarn.app_ids()), None), timeout=90, what="the blocking application")
        wait_for(lambda: process_of("worker:0", blocker_id, "executor"), timeout=120,
                 what="the blocking application's task")
        cmd = 'echo "started $$ at $TF_CONFIG"; sleep 2; echo "done $$"'
        p = yarn.popen_submit("--executes", cmd, "--conf", "tony.worker.instances=2", *gpu,
                              "--conf", "tony.am.retry-count=0", "--conf", "tony.task.heartbeat-interval-ms=500")
        app_id = wait_for(lambda: next(iter(set(yarn.app_ids()) - {blocker_id}), None), timeout=90,
                          what="the application")
        executor0 = wait_for(lambda: process_of("worker:0", app_id, "executor"), timeout=120,
                             what="worker:0's executor")
        # registered and held at the barrier; worker:1 has no container
        wait_for(lambda: "registered worker:0" in am_attempt_log(yarn.cluster, app_id, 1), timeout=60,
                 what="worker:0 to register")
        assert process_of("worker:1", app_id, "executor") is None
        time.sleep(3)  # YARN keeps the containers its RM has seen running
        first = am_pids(app_id)
        assert first, "no coordinator process found"
        for pid in first:
            os.kill(pid, signal.SIGKILL)
        log = wait_for(lambda: (lambda t: t if "task(s) adopted" in t else None)(
            am_attempt_log(yarn.cluster, app_id, 2)),
                       timeout=150, what="the second coordinator to take worker:0 back")
        assert "worker:0 came back" in log and "waiting at the gang barrier" in log, log[-3000:]
        assert "coordinator restarted, 1 of 2 task(s) adopted in attempt 0" in log, log[-3000:]
        assert alive(executor0)
        # the other application ends: worker:1 gets its GPUs
        k = yarn.tony.run("kill", blocker_id)
        assert k.rc == 0, k
        out, err = p.communicate(timeout=240)
    finally:
        if p and p.poll() is None:
            p.kill()
            p.communicate()
        if blocker.poll() is None:
            blocker.kill()
        blocker.communicate()
    assert p.returncode == 0, out + err
    assert yarn.cluster.app(app_id)["finalStatus"] == "SUCCEEDED"
    st = json.loads((yarn.tony.home / "jobs" / app_id / "status.json").read_text())
    assert st["final_status"] == "SUCCEEDED" and st["attempt"] == 0, st
    for i in (0, 1):
        t = next(t for t in st["tasks"] if t["role"] == "worker" and t["index"] == i)
        assert t["state"] == "SUCCEEDED", t
        out_i = yarn.task_log(app_id, "worker", i)
        assert out_i.count("started ") == 1, out_i
    # worker:0 waited in the same executor and kept its port: the cluster
    # spec both got names it
    log0 = yarn.task_log(app_id, "worker", 0, stream="executor.log")
    assert "registering there" in log0, log0[-3000:]
    port = re.search(r"reserved port (\d+)", log0).group(1)
    assert f":{port}" in yarn.task_log(app_id, "worker", 1), (port, yarn.task_log(app_id, "worker", 1))


@pytest.mark.ml
def test_ddp_training_goes_on_through_a_coordinator_loss(yarn):
    """A real PyTorch DDP job (examples/pytorch/ddp_digits.py, gloo) whose
    coordinator is SIGKILLed mid-training: both ranks train on in the same
    processes while YARN starts the next AM attempt and its coordinator
    takes them back, never resuming from a checkpoint, and the model reaches
    its accuracy."""
    p = yarn.popen_submit("--src_dir", str(REPO / "examples"), "--python_binary_path", "/usr/bin/python3",
                          "--executes", "pytorch/ddp_digits.py",
                          "--task_params", "--epochs 8 --step-sleep 0.05 --checkpoint-every 5",
                          "--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=2",
                          "--conf", "tony.worker.memory=1g", "--conf", "tony.am.retry-count=0",
                          "--conf", "tony.task.heartbeat-interval-ms=500",
                          "--conf", "tony.application.shared-dir=" + str(yarn.tony.home / "shared"))
    try:
        app_id = wait_for(lambda: next(iter(yarn.app_ids()), None), timeout=90, what="the application")
        wait_for(lambda: "step 20 " in yarn.task_log(app_id, "worker", 0, missing_ok=True) if process_of("worker:0", app_id, "executor")
                 else False, timeout=240, what="step 20")
        ranks = {i: process_of(f"worker:{i}", app_id, script="ddp_digits.py") for i in (0, 1)}
        time.sleep(2)  # YARN keeps the containers its RM has seen running
        for pid in am_pids(app_id):
            os.kill(pid, signal.SIGKILL)
        log = wait_for(lambda: (lambda t: t if "task(s) adopted" in t else None)(
            am_attempt_log(yarn.cluster, app_id, 2)), timeout=150, what="the second coordinator")
        assert "coordinator restarted, 2 of 2 task(s) adopted in attempt 0" in log, log[-3000:]
        assert all(process_of(f"worker:{i}", app_id, script="ddp_digits.py") == ranks[i] for i in (0, 1)), ranks
    finally:
        out, err = p.communicate(timeout=600)
    assert p.returncode == 0, out + err
    st = json.loads((yarn.tony.home / "jobs" / app_id / "status.json").read_text())
    assert st["final_status"] == "SUCCEEDED" and st["attempt"] == 0, st
    for i in (0, 1):
        text = yarn.task_log(app_id, "worker", i)
        assert text.count("starting from step 0") == 1 and "resumed from step" not in text, text[-3000:]
    assert accuracy(yarn.task_log(app_id, "worker", 0)) >= 0.85
