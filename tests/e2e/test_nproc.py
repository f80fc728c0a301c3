"""Several processes per task (tony.<role>.nproc-per-node, torchrun's
--nproc_per_node; issue 23 item 1), on the local backend with the real
executor: a PyTorch DDP job of 2 tasks x 2 processes whose 4 ranks agree
in an all-reduce; one process failing stops its sibling and gives the task
its exit code; `tony kill` leaves none of them; frameworks without the
notion refuse the key."""
import json
import time

import pytest

from conftest import PYTHON, wait_for

SMALL = ["--conf", "tony.worker.memory=512m"]

# Every process joins one gloo group through torchrun's env (env://) and
# all-reduces its rank + 1: with 4 ranks each must see 1+2+3+4 = 10.
DDP = """import os
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
e = os.environ
print(f"rank {dist.get_rank()} world {dist.get_world_size()} env-rank {e['RANK']} local {e['LOCAL_RANK']}"
      f"/{e['LOCAL_WORLD_SIZE']} group {e['GROUP_RANK']}/{e['GROUP_WORLD_SIZE']} node {e['NODE_RANK']}"
      f" role {e['ROLE_RANK']}/{e['ROLE_WORLD_SIZE']} sum {t.item():.0f}", flush=True)
dist.destroy_process_group()
"""


def nproc_conf(n, framework="pytorch", instances=1):
    return ["--conf", f"tony.application.framework={framework}", "--conf", f"tony.worker.instances={instances}",
            "--conf", f"tony.worker.nproc-per-node={n}"]


@pytest.mark.ml
def test_ddp_two_tasks_of_two_processes(tony, scripts):
    (scripts / "ddp.py").write_text(DDP)
    r = tony.submit("--src_dir", str(scripts), "--python_binary_path", PYTHON, "--executes", "ddp.py",
                    *nproc_conf(2, instances=2), *SMALL, timeout=180)
    assert r.rc == 0, r.log("worker", 0, "stderr")[-3000:]
    for task in range(2):
        out = r.log("worker", task)
        for local in range(2):
            rank = task * 2 + local
            want = (f"rank {rank} world 4 env-rank {rank} local {local}/2 group {task}/2 node {task}"
                    f" role {rank}/4 sum 10")
            assert want in out, out


def test_failing_process_stops_its_sibling(tony, scripts):
    """Local rank 1 exits 7 while rank 0 would sleep for minutes: rank 0 is
    stopped at once, the task fails with 7 (not rank 0's SIGTERM), and both
    processes wrote to the task's one stdout."""
    t0 = time.time()
    r = tony.submit("--executes", 'echo "local $LOCAL_RANK rank $RANK of $WORLD_SIZE"; '
                    'if [ "$LOCAL_RANK" = 1 ]; then sleep 1; echo "rank 1 fails" >&2; exit 7; fi; exec sleep 300',
                    *nproc_conf(2), *SMALL, timeout=60)
    assert r.rc != 0, r
    assert time.time() - t0 < 30, "the sibling was not stopped"
    cause = r.status()["root_cause"]
    assert cause["task"] == "worker:0" and cause["exit_status"] == 7, cause
    assert "rank 1 fails" in cause["stderr_tail"], cause
    out = r.log("worker", 0)
    assert "local 0 rank 0 of 2" in out and "local 1 rank 1 of 2" in out, out
    log = (r.job_dir() / "attempts" / "0" / "worker-0" / "executor.log").read_text()
    assert "a process of the task failed (exit code 7)" in log, log


def test_kill_leaves_no_process(tony, scripts):
    r = tony.submit("--detach", "--executes", 'echo "started $LOCAL_RANK"; exec sleep 300',
                    *nproc_conf(2), *SMALL)
    assert r.rc == 0, r
    job_id = r.job_dir().name
    wait_for(lambda: all(f"started {i}" in tony.run("logs", job_id, "--task", "worker:0").out for i in range(2)),
             60, what="both processes started")
    k = tony.run("kill", job_id)
    assert k.rc == 0 and "KILLED" in k.out, k
    st = json.loads(tony.run("status", job_id, "--json").out)
    assert st["final_status"] == "KILLED", st
    # the tony fixture fails the test on any process of the job left running


@pytest.mark.parametrize("framework", ["tensorflow", "standalone"])
def test_refused_where_it_means_nothing(tony, framework):
    r = tony.submit("--executes", "true", *nproc_conf(2, framework), *SMALL)
    assert r.rc != 0, r
    assert "tony.worker.nproc-per-node is 2" in r.err and f"the {framework} framework" in r.err, r


def test_in_place_restart_restarts_every_process(tony):
    """Attempt 0's local rank 1 fails: the kept container's executor starts
    both processes again for attempt 1, whose restart count they see."""
    r = tony.submit("--executes", 'echo "restart $TORCHELASTIC_RESTART_COUNT local $LOCAL_RANK rank $RANK"; '
                    'if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then '
                    '[ "$LOCAL_RANK" = 1 ] && exit 3; exec sleep 300; fi',
                    *nproc_conf(2), *SMALL, "--conf", "tony.am.retry-count=1", timeout=90)
    assert r.rc == 0, r
    st = r.status()
    assert st["attempt"] == 1, st
    t = st["tasks"][0]
    assert t["state"] == "SUCCEEDED" and t["container_attempt"] == 0, t  # the same container
    first, second = r.log("worker", 0, attempt=0), r.log("worker", 0, attempt=1)
    assert "restart 0 local 1 rank 1" in first, first
    for local in range(2):
        assert f"restart 1 local {local} rank {local}" in second, second
