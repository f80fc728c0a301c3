"""In-place restarts (tony.application.restart-mode) on the local backend:
a real PyTorch DDP training (gloo, CPU) with checkpoints whose rank 1
fails once resumes from its checkpoint in the SAME containers (the same
executors start the next attempt's processes, no container is asked for);
a container that dies (its executor SIGKILLed) is asked for anew while the
healthy ones are kept; reallocate mode asks for every container anew."""
import json
import os
import re
import signal

import pytest

from conftest import wait_for
from test_faults import executor_of
from test_ml import EXAMPLES, TORCH_PY, accuracy, user_process_of

SMALL = ["--conf", "tony.worker.memory=256m"]


def task_of(status, role, index):
    return next(t for t in status["tasks"] if t["role"] == role and t["index"] == index)


@pytest.mark.ml
def test_ddp_fails_once_and_resumes_in_the_same_containers(tony):
    p = tony.popen("submit", "--conf", "tony.local.vcores=8", "--src_dir", EXAMPLES,
                   "--python_binary_path", TORCH_PY, "--executes", "pytorch/ddp_digits.py",
                   "--task_params", "--epochs 8 --step-sleep 0.05 --checkpoint-every 5",
                   "--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=2",
                   "--conf", "tony.worker.memory=1g", "--conf", "tony.am.retry-count=1")
    jobs = tony.home / "jobs"
    ckpt = wait_for(lambda: next(iter(jobs.glob("*/shared/checkpoints/ddp.pt")), None), 120,
                    what="a first checkpoint")
    job_dir = ckpt.parents[2]
    wait_for(lambda: "step 20 " in (job_dir / "attempts/0/worker-0/stdout").read_text(), 120, what="step 20")
    executors = {i: executor_of(tony.home, f"worker:{i}", 0) for i in (0, 1)}
    assert all(executors.values()), executors
    # rank 1's training process fails; its executor and container are fine
    os.kill(wait_for(lambda: user_process_of(tony.home, "worker:1"), 30, what="rank 1's process"), signal.SIGKILL)
    # the next attempt runs in the same executors (whose env says attempt 0)
    wait_for(lambda: "resumed from step" in ((job_dir / "attempts/1/worker-0/stdout").read_text()
                                            if (job_dir / "attempts/1/worker-0/stdout").exists() else ""),
             120, what="attempt 1 resumed")
    assert {i: executor_of(tony.home, f"worker:{i}", 0) for i in (0, 1)} == executors
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, out + err
    st = json.loads((job_dir / "status.json").read_text())
    assert st["attempt"] == 1
    for i in (0, 1):
        t = task_of(st, "worker", i)
        assert t["state"] == "SUCCEEDED" and t["container_attempt"] == 0, t
        assert [r["attempt"] for r in t["runs"]] == [0, 1], t
    second = (job_dir / "attempts/1/worker-0/stdout").read_text()
    m = re.search(r"resumed from step (\d+)", second)
    assert m and int(m.group(1)) > 0, second
    assert accuracy(second) >= 0.85
    am_log = (job_dir / "am.log").read_text()
    assert "attempt 1: keeping 2 container(s) in place, asking for 0" in am_log, am_log[-3000:]
    assert "(attempt 1) as pid" not in am_log  # no container was started for attempt 1
    # one executor, two user processes, each attempt's output in its own dir
    ex1 = (job_dir / "attempts/0/worker-1/executor.log").read_text()
    assert "registering for attempt 1" in ex1 and ex1.count("started `") == 2, ex1
    assert "resumed from step" not in (job_dir / "attempts/0/worker-1/stdout").read_text()
    assert (job_dir / "attempts/1/worker-1/stdout").exists()
    assert "attempt 0 failed" in am_log and "restarting the job" in am_log


# Attempt 0's tasks wait (their executor is the one killed); attempt 1's succeed.
WAIT_THEN_PASS = 'echo "attempt $SESSION_ID"; if [ "$SESSION_ID" = 0 ]; then exec sleep 60; fi'


def test_dead_container_is_requested_anew_the_others_kept(tony):
    r = tony.submit("--detach", "--executes", WAIT_THEN_PASS, "--conf", "tony.worker.instances=3",
                    "--conf", "tony.am.retry-count=1", *SMALL)
    assert r.rc == 0, r
    job = r.job_dir()
    wait_for(lambda: (job / "status.json").exists() and
             all(t["state"] == "RUNNING" for t in json.loads((job / "status.json").read_text())["tasks"]), 60,
             what="tasks running")
    dead = executor_of(tony.home, "worker:2", 0)
    assert dead
    os.kill(dead, signal.SIGKILL)
    st = wait_for(lambda: (lambda s: s if s.get("final_status") not in (None, "UNDEFINED") else None)(
        json.loads((job / "status.json").read_text())), 60, what="the job's end")
    assert st["final_status"] == "SUCCEEDED" and st["attempt"] == 1, st
    assert [task_of(st, "worker", i)["container_attempt"] for i in range(3)] == [0, 0, 1]
    am_log = (job / "am.log").read_text()
    assert "attempt 1: keeping 2 container(s) in place, asking for 1" in am_log, am_log[-3000:]
    assert "started worker:2 (attempt 1)" in am_log
    assert "started worker:0 (attempt 1)" not in am_log
    for i in range(3):
        assert (job / f"attempts/1/worker-{i}/stdout").read_text() == "attempt 1\n"


def test_reallocate_asks_for_every_container_anew(tony):
    r = tony.submit("--executes", 'if [ "$SESSION_ID" = 0 ] && [ "$TASK_INDEX" = 1 ]; then exit 3; fi; '
                    '[ "$SESSION_ID" = 0 ] && exec sleep 60; echo "attempt $SESSION_ID"',
                    "--conf", "tony.worker.instances=2", "--conf", "tony.am.retry-count=1",
                    "--conf", "tony.application.restart-mode=reallocate", *SMALL)
    assert r.rc == 0, r
    st = r.status()
    assert st["attempt"] == 1
    assert [task_of(st, "worker", i)["container_attempt"] for i in range(2)] == [1, 1]
    am_log = (r.job_dir() / "am.log").read_text()
    assert "started worker:0 (attempt 1)" in am_log and "started worker:1 (attempt 1)" in am_log
    assert r.log("worker", 1) == "attempt 1\n"


def test_restart_mode_refuses_a_bad_value(tony):
    r = tony.submit("--executes", "true", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.application.restart-mode=sometimes")
    assert r.rc == 2, r
    assert "tony.application.restart-mode must be in-place or reallocate" in r.text


def test_watch_stops_the_survivors_at_once(tony, tmp_path):
    """The survivors of a crash hear of it through their watch, not their
    next heartbeat: with heartbeats 10 s apart the next attempt still runs
    within a moment of the crash (bench/restart.py measures it)."""
    stamps = tmp_path / "stamps"
    stamps.mkdir()
    cmd = (f'if [ "$SESSION_ID" != 0 ]; then date +%s.%N > {stamps}/start-$TASK_INDEX; exit 0; fi; '
           f'if [ "$TASK_INDEX" = 1 ]; then sleep 1; date +%s.%N > {stamps}/crash; exit 1; fi; exec sleep 60')
    r = tony.submit("--executes", cmd, "--conf", "tony.worker.instances=3", "--conf", "tony.am.retry-count=1",
                    "--conf", "tony.task.heartbeat-interval-ms=10000", *SMALL)
    assert r.rc == 0, r
    took = max(float((stamps / f"start-{i}").read_text()) for i in range(3)) - float((stamps / "crash").read_text())
    assert took < 3, f"crash -> every task of attempt 1 running took {took:.2f} s"
