"""Elastic jobs on the Slurm test cluster (issue 24 item 8, docs/elastic.md
"On Slurm"): the allocation holds every task's `instances`, and the world
changes within it. A task's step cancelled with scancel is replaced by a new
step in the same allocation (the world unchanged); one whose replacement
cannot start leaves the world and the others go on renumbered; `tony scale`
stops a step and starts it again, checked through squeue's steps."""
import json
import re

import pytest

from conftest import wait_for
from test_slurm_jobs import stony, submit, slurm_id  # noqa: F401 (stony is a fixture)


def read_status(job):
    """The job's status.json, or None while it is being replaced."""
    try:
        return json.loads((job / "status.json").read_text())
    except (OSError, ValueError):
        return None

pytestmark = pytest.mark.slurm

WORLD_CMD = 'echo "world $TONY_WORLD_VERSION rank $RANK of $WORLD_SIZE"; exec sleep 120'
ELASTIC3 = ["--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=3",
            "--conf", "tony.worker.min-instances=2", "--conf", "tony.application.elastic-settle-ms=1000",
            "--conf", "tony.worker.memory=256m"]


def says(job, attempt, i, words, timeout=40):
    out = job / f"attempts/{attempt}/worker-{i}/stdout"
    wait_for(lambda: out.exists() and words in out.read_text(), timeout,
             what=f"worker:{i} in attempt {attempt}: {words}")


def steps(slurm, jid):
    """{step name: step id} of the Slurm job's running steps (squeue -s)."""
    out = slurm.run("squeue", "-h", "-s", "-j", jid, "-o", "%i %j", check=False).stdout
    return {name: sid for sid, name in (line.split(None, 1) for line in out.splitlines() if line.strip())}


def world_events(home):
    path = next(home.glob("history/intermediate/*/events.jsonl"), None) or \
        next(home.glob("history/finished/*/*/*/*/events.jsonl"))
    events = [json.loads(line) for line in path.read_text().splitlines()]
    return [(e["world_size"], e["out"]) for e in events if e["type"] == "WORLD_CHANGED"]


def test_steps_lost_and_scaled_within_the_allocation(stony, slurm):  # noqa: F811 (stony)
    r = submit(stony, "--detach", "--executes", WORLD_CMD, *ELASTIC3, timeout=60)
    assert r.rc == 0, r
    jid, job = slurm_id(r), r.job_dir()
    try:
        for i in range(3):
            says(job, 0, i, f"world 0 rank {i} of 3")
        # the allocation holds the maximum: 3 worker tasks (and the coordinator's)
        alloc = slurm.job(jid)
        assert int(alloc["NumTasks"]) >= 3, alloc
        # worker:2's step cancelled: its replacement is a new step of the same
        # allocation, in time: the world stays as it was
        first = steps(slurm, jid)
        slurm.run("scancel", f"{first['worker:2']}")
        says(job, 1, 2, "world 0 rank 2 of 3")
        wait_for(lambda: steps(slurm, jid).get("worker:2") not in (None, first["worker:2"]), 30,
                 what="worker:2 in a new step")
        # `tony scale` down stops worker:2's step; up starts a new one
        assert stony.run("scale", str(job), "worker=2").rc == 0
        says(job, 2, 1, "world 1 rank 1 of 2")
        wait_for(lambda: "worker:2" not in steps(slurm, jid), 30, what="worker:2's step ended")
        assert stony.run("scale", str(job), "worker=3").rc == 0
        for i in range(3):
            says(job, 3, i, f"world 2 rank {i} of 3")
        # worker:1's step cancelled and its replacement cannot start (its task
        # dir is taken, as on a node that can start nothing): the others go on
        # in a world of 2, worker:2 renumbered to rank 1
        (job / "attempts/4").mkdir(parents=True, exist_ok=True)
        (job / "attempts/4/worker-1").write_text("taken\n")
        slurm.run("scancel", steps(slurm, jid)["worker:1"])
        says(job, 4, 0, "world 3 rank 0 of 2")
        says(job, 4, 2, "world 3 rank 1 of 2")
        assert world_events(stony.home) == [(2, ["worker:2"]), (3, []), (2, ["worker:1"])]
        # status.json is rewritten on the coordinator's next tick: its 4th attempt end may lag the ranks' lines
        st = wait_for(lambda: (lambda s: s if s and len(s.get("attempts", [])) == 4 else None)(read_status(job)), 30,
                      what="status.json with the four attempts' ends")
        assert [a["end"] for a in st["attempts"]] == ["RESIZED"] * 4, st["attempts"]
        assert re.search(r"Slurm job \d+: RUNNING", stony.run("status", job.name).out)
    finally:
        killed = stony.run("kill", str(job), timeout=60)
    assert killed.rc == 0, killed
    slurm.wait_job(jid)
