"""In-place restarts on the real Hadoop test cluster: a PyTorch DDP job
(gloo, CPU) whose rank 1 fails once resumes from its checkpoint in the same
YARN containers (no container is asked for again: the application has the
AM's and the two tasks' containers only, and each task ends in the
container it started in); a container that dies (its executor SIGKILLed)
is asked for anew while the healthy one is kept."""
import json
import os
import re
import signal

import pytest

from conftest import REPO, wait_for
from test_yarn_jobs import accuracy, container_pids, yarn  # noqa: F401 (the fixture)

pytestmark = pytest.mark.hadoop


def process_of(task, app_id, argv1=None, script=None):
    """The pid of a task's executor (argv1="executor") or of its training
    process (script in its command line), in app_id's containers."""
    prefix = f"CONTAINER_ID=container_{app_id.split('_', 1)[1]}_"
    for pid in container_pids(f"TONY_TASK_ID={task}", prefix=prefix):
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if (argv1 and argv[1:2] == [argv1.encode()]) or (script and any(script.encode() in a for a in argv)):
            return pid
    return None


def container_id_of(pid):
    env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    return next(e.split(b"=", 1)[1].decode() for e in env if e.startswith(b"CONTAINER_ID="))


def final_status(yarn):
    return json.loads(next((yarn.tony.home / "jobs").glob("*/status.json")).read_text())


def task_of(status, role, index):
    return next(t for t in status["tasks"] if t["role"] == role and t["index"] == index)


@pytest.mark.ml
def test_ddp_fails_once_and_resumes_in_the_same_yarn_containers(yarn):
    p = yarn.popen_submit("--src_dir", str(REPO / "examples"), "--python_binary_path", "/usr/bin/python3",
                          "--executes", "pytorch/ddp_digits.py",
                          "--task_params", "--epochs 8 --step-sleep 0.05 --checkpoint-every 5",
                          "--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=2",
                          "--conf", "tony.worker.memory=1g", "--conf", "tony.am.retry-count=1",
                          "--conf", "tony.application.shared-dir=" + str(yarn.tony.home / "shared"))
    try:
        app_id = wait_for(lambda: next(iter(yarn.app_ids()), None), timeout=90, what="the application")
        wait_for(lambda: "step 20 " in yarn.task_log(app_id, "worker", 0, missing_ok=True) if process_of("worker:0", app_id, "executor")
                 else False, timeout=240, what="step 20 of attempt 0")
        containers = {i: container_id_of(process_of(f"worker:{i}", app_id, "executor")) for i in (0, 1)}
        os.kill(process_of("worker:1", app_id, script="ddp_digits.py"), signal.SIGKILL)
    finally:
        out, err = p.communicate(timeout=600)
    assert p.returncode == 0, out + err
    st = final_status(yarn)
    assert st["attempt"] == 1, st
    for i in (0, 1):
        t = task_of(st, "worker", i)
        assert t["state"] == "SUCCEEDED" and t["container_attempt"] == 0, t
        assert t["container"] == containers[i], (t, containers)
    # the AM's container and the two tasks': none asked for again
    assert len(list(yarn.cluster.container_logs(app_id))) == 3
    log = yarn.task_log(app_id, "worker", 0)
    first, _, second = log.partition("==== tony: attempt 1 starts in this container ====")
    assert second, log[-3000:]
    m = re.search(r"resumed from step (\d+)", second)
    assert m and int(m.group(1)) > 0, second
    assert accuracy(second) >= 0.85
    am_log = yarn.am_log(app_id)
    assert "attempt 1: keeping 2 container(s) in place, asking for 0" in am_log, am_log[-3000:]


def test_dead_yarn_container_is_requested_anew_the_other_kept(yarn):
    p = yarn.popen_submit("--executes", 'echo "attempt $SESSION_ID"; if [ "$SESSION_ID" = 0 ]; then exec sleep 300; fi',
                          "--conf", "tony.worker.instances=2", "--conf", "tony.am.retry-count=1")
    try:
        app_id = wait_for(lambda: next(iter(yarn.app_ids()), None), timeout=90, what="the application")
        wait_for(lambda: all(process_of(f"worker:{i}", app_id, script="sleep") for i in (0, 1)), timeout=120,
                 what="both tasks running")
        kept = container_id_of(process_of("worker:0", app_id, "executor"))
        os.kill(process_of("worker:1", app_id, "executor"), signal.SIGKILL)
    finally:
        out, err = p.communicate(timeout=240)
    assert p.returncode == 0, out + err
    st = final_status(yarn)
    assert st["attempt"] == 1, st
    w0, w1 = task_of(st, "worker", 0), task_of(st, "worker", 1)
    assert w0["container_attempt"] == 0 and w0["container"] == kept, w0
    assert w1["container_attempt"] == 1 and w1["container"] != kept, w1
    assert len(list(yarn.cluster.container_logs(app_id))) == 4  # the AM, two of attempt 0, one new
    am_log = yarn.am_log(app_id)
    assert "attempt 1: keeping 1 container(s) in place, asking for 1" in am_log, am_log[-3000:]
    assert yarn.task_log(app_id, "worker", 0).endswith("attempt 1 starts in this container ====\nattempt 1\n")
