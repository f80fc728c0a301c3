"""Hang diagnosis (tony.task.progress-timeout) on the local backend, with
real executors, real py-spy and real processes: a PyTorch DDP rank (gloo,
CPU) that stops itself with SIGSTOP mid-training leaves the other rank
waiting in its all-reduce; the timeout catches it, the stacks of both ranks
land in the job dir (the stopped one read without pausing it, the waiting
one showing the backward pass it waits in), `tony logs` shows them and the
job fails naming the hang. A quiet task that touches TONY_PROGRESS_FILE is
not hung; a silent one is, in every attempt the restart budget allows, and
the coordinator serves each attempt's stacks. py-spy comes from
build/pyenv (scripts/install-deps) and is found beside the task's python."""
import json
import os
import time

import pytest

from conftest import PYTHON, call, http_get, wait_for

DDP_STOP = '''
import datetime, os, signal, sys
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

def train(ddp, opt, rank):
    x, y = torch.randn(16, 8), torch.randn(16, 1)
    for step in range(1, 1000000):
        if rank == 1 and step == 5:
            print("rank 1: stopping myself", flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)
        opt.zero_grad()
        nn.functional.mse_loss(ddp(x), y).backward()  # the gradients' all-reduce
        opt.step()
        print(f"rank {rank} step {step}", flush=True)

torch.set_num_threads(1)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=600))
model = nn.Linear(8, 1)
train(DDP(model), torch.optim.SGD(model.parameters(), lr=0.01), dist.get_rank())
'''

# worker:0 says one line, then nothing; worker:1 says nothing at all (it
# would be the first found idle) but touches its progress file, which counts
# as progress.
QUIET = '''
import os, pathlib, sys, time

def wait_forever():
    while True:
        time.sleep(1000)

def touch_progress():
    progress = pathlib.Path(os.environ["TONY_PROGRESS_FILE"])
    while True:
        progress.touch()
        time.sleep(0.5)

if os.environ["TASK_INDEX"] == "0":
    print("starting", flush=True)
    wait_forever()
touch_progress()
'''


@pytest.mark.ml
def test_ddp_rank_stopped_in_a_collective(tony, scripts):
    (scripts / "ddp_stop.py").write_text(DDP_STOP)
    t0 = time.time()
    r = tony.submit("--src_dir", str(scripts), "--executes", "ddp_stop.py", "--python_binary_path", PYTHON,
                    "--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.task.progress-timeout=5s", "--conf", "tony.am.retry-count=0", timeout=120)
    assert r.rc == 1, r
    assert "hung: no output or progress from worker:" in r.text, r
    assert "stacks of 2 of 2 running task(s) collected" in r.text, r
    assert time.time() - t0 < 60, "the hang took too long to catch"
    stacks = r.job_dir() / "attempts" / "0" / "stacks"
    rank0 = (stacks / "worker-0.txt").read_text()
    rank1 = (stacks / "worker-1.txt").read_text()
    # the stopped rank: the kernel's word for it, and its Python frames read without pausing it
    assert "stopped (SIGSTOP" in rank1, rank1
    assert "train (ddp_stop.py" in rank1, rank1
    # the waiting rank: inside the backward pass whose all-reduce never completes
    assert "train (ddp_stop.py" in rank0 and "backward" in rank0, rank0
    assert "stopped" not in rank0.split("\n")[1], rank0
    assert oct((stacks / "worker-0.txt").stat().st_mode & 0o777) == "0o600"

    job = r.job_dir().name
    shown = tony.run("logs", job, "--stacks", check_rc=0)
    assert "==> worker:0 stacks" in shown.out and "==> worker:1 stacks" in shown.out, shown
    assert "rank 1: stopping myself" not in shown.out  # stacks only
    one = tony.run("logs", job, "--task", "worker:1", check_rc=0)
    assert "rank 1: stopping myself" in one.out and "==> worker:1 stacks" in one.out, one
    status = r.status()
    assert status["final_status"] == "FAILED"
    assert all(t.get("stacks", "").endswith("/stacks?attempt=0") for t in status["tasks"]), status["tasks"]


def test_progress_file_and_restarts(tony, scripts):
    (scripts / "quiet.py").write_text(QUIET)
    p = tony.popen("submit", "--conf", "tony.local.vcores=8", "--src_dir", str(scripts), "--executes", "quiet.py",
                   "--python_binary_path", PYTHON, "--conf", "tony.worker.instances=2",
                   "--conf", "tony.task.progress-timeout=3000", "--conf", "tony.am.retry-count=1")
    jobs = tony.home / "jobs"
    first = wait_for(lambda: next(iter(jobs.glob("*/attempts/0/stacks/worker-0.txt")), None), 60,
                     what="attempt 0's stacks")
    job_dir = first.parents[3]
    wait_for(lambda: (job_dir / "attempts/1").is_dir(), 60, what="the restart")
    # the coordinator serves the stacks of an earlier attempt while the next one runs
    url = json.loads((job_dir / "am.json").read_text())["url"]
    code, headers, body = http_get(f"{url}/v1/tasks/worker/0/stacks?attempt=0")
    assert code == 200 and "text/plain" in headers["Content-Type"], (code, body)
    assert b"wait_forever (quiet.py" in body, body
    code, answer = call(f"{url}/v1/tasks/worker/0/stacks?attempt=x")
    assert code == 400 and "attempt must be" in answer["error"], answer
    code, answer = call(f"{url}/v1/tasks/worker/3/stacks")
    assert code == 404, answer
    out, err = p.communicate(timeout=90)
    assert p.returncode == 1, out + err
    # worker:1 touched its progress file: only worker:0 was ever hung
    assert "hung: no output or progress from worker:0" in out + err, out + err
    assert "touch_progress (quiet.py" in (job_dir / "attempts/1/stacks/worker-1.txt").read_text()
    events = (job_dir / "am.log").read_text()
    assert events.count("worker:0 is hung") == 2, events


def test_progress_timeout_must_be_a_duration(tony):
    r = tony.submit("--executes", "true", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.task.progress-timeout=soon")
    assert r.rc == 2, r
    assert "tony.task.progress-timeout must be a duration" in r.err and "'soon'" in r.err, r
