"""Elastic jobs (issue 24, docs/elastic.md): tony.<role>.min-instances and
tony.application.elastic-settle-ms as a user meets them. Bad elastic plans
are refused at submit and --dry-run (exit 2, naming the key, nothing
started); a job that loses a worker whose replacement cannot come goes on
with the others in a renumbered world."""
import json
import os
import re
import signal
import subprocess

import pytest

from conftest import call, wait_for
from test_faults import executor_of
from test_ml import TORCH_PY
from test_web_ui import ARTIFACTS, BROWSER_DIR, CHROMIUM, browser_tools, page_link  # noqa: F401 (a fixture)

SMALL = ["--conf", "tony.worker.memory=256m"]


def nothing_started(tony):
    assert not (tony.home / "jobs").exists() or not any((tony.home / "jobs").iterdir())


REFUSED = [
    # (framework, extra conf, words the error must hold)
    ("pytorch", ["tony.worker.instances=3", "tony.worker.min-instances=4"],
     "tony.worker.min-instances (4) is above tony.worker.instances (3)"),
    ("pytorch", ["tony.worker.instances=3", "tony.worker.min-instances=0"],
     "tony.worker.min-instances is 0, but the pytorch framework cannot train without a worker task"),
    ("tensorflow", ["tony.worker.instances=2", "tony.ps.instances=2", "tony.ps.min-instances=0"],
     "tony.ps.min-instances is 0, but the tensorflow framework cannot train without a ps task"),
    ("tensorflow", ["tony.worker.instances=2", "tony.chief.instances=1", "tony.chief.min-instances=0"],
     "tony.chief.min-instances is 0, but the tensorflow framework cannot train without a chief task"),
    ("standalone", ["tony.worker.instances=1", "tony.worker.min-instances=0"],
     "tony.worker.min-instances (0) makes the job elastic, but the standalone framework cannot change its world "
     "size"),
    ("pytorch", ["tony.worker.instances=3", "tony.worker.min-instances=2",
                 "tony.application.distributed-mode=FCFS"],
     "tony.worker.min-instances (2) makes the job elastic, which needs tony.application.distributed-mode GANG"),
    ("pytorch", ["tony.worker.instances=3", "tony.worker.min-instances=-1"],
     "tony.worker.min-instances must be a non-negative integer"),
    ("pytorch", ["tony.worker.instances=3", "tony.worker.min-instances=2",
                 "tony.application.elastic-settle-ms=-5"],
     "tony.application.elastic-settle-ms"),
]


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize("framework,conf,words", REFUSED)
def test_bad_elastic_plans_are_refused_naming_the_key(tony, dry_run, framework, conf, words):
    extra = ["--dry-run"] if dry_run else []
    confs = [a for c in conf for a in ("--conf", c)]
    r = tony.submit(*extra, "--executes", "echo hi", "--conf", f"tony.application.framework={framework}", *confs,
                    *SMALL)
    assert r.rc == 2, r
    assert words in r.err, r
    nothing_started(tony)


def test_an_elastic_plan_within_its_bounds_passes_the_dry_run(tony):
    r = tony.submit("--dry-run", "--executes", "echo hi", "--conf", "tony.application.framework=pytorch",
                    "--conf", "tony.worker.instances=3", "--conf", "tony.worker.min-instances=2", *SMALL)
    assert r.rc == 0, r


# A real PyTorch DDP training (gloo, CPU) that checkpoints to the job's
# shared dir and reloads after a world change, printing the world it sees.
DDP_SCRIPT = r'''
import os, sys, time
import torch
import torch.distributed as dist

ckpt = os.path.join(os.environ["TONY_JOB_DIR"], "elastic.pt")
dist.init_process_group("gloo")
rank, size = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
step = 0
if os.path.exists(ckpt):
    state = torch.load(ckpt)
    model.load_state_dict(state["model"])
    step = state["step"]
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.02)
print(f"world {os.environ['TONY_WORLD_VERSION']} rank {rank} of {size} env {os.environ['RANK']}/"
      f"{os.environ['WORLD_SIZE']} task {os.environ['TONY_TASK_ID']} from step {step}", flush=True)
w = torch.arange(8.0)
steps = int(sys.argv[1])
# ELASTIC_STOP: a file whose appearance ends the training (every rank agrees
# on it through an all-reduce, so none waits on a peer that stopped)
stop = os.environ.get("ELASTIC_STOP")
def stopping():
    if not stop:
        return False
    flag = torch.tensor([1 if os.path.exists(stop) else 0])
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())
while step < steps and not stopping():
    g = torch.Generator().manual_seed(step * 100 + rank)
    x = torch.randn(32, 8, generator=g)
    loss = ((ddp(x).squeeze(1) - x @ w) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    step += 1
    if rank == 0 and step % 5 == 0:
        torch.save({"model": model.state_dict(), "step": step}, ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)
    print(f"step {step} loss {loss.item():.4f} world {size}", flush=True)
    time.sleep(0.05)
dist.destroy_process_group()
print(f"done rank {rank} of {size} loss {loss.item():.4f}", flush=True)
'''


def submit_elastic_ddp(tony, tmp_path, steps, settle_ms):
    """DDP_SCRIPT for steps steps on 3 workers of which 2 are the minimum,
    detached; its job dir."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "elastic_ddp.py").write_text(DDP_SCRIPT)
    r = tony.submit("--detach", "--src_dir", str(src), "--python_binary_path", TORCH_PY,
                    "--executes", "elastic_ddp.py", "--task_params", str(steps),
                    "--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=3",
                    "--conf", "tony.worker.min-instances=2", "--conf", f"tony.application.elastic-settle-ms={settle_ms}",
                    "--conf", "tony.worker.memory=512m")
    assert r.rc == 0, r
    return r.job_dir()


def events_of(home):
    path = next(home.glob("history/intermediate/*/events.jsonl"), None) or \
        next(home.glob("history/finished/*/*/*/*/events.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


def final_status(job):
    st = json.loads((job / "status.json").read_text()) if (job / "status.json").exists() else {}
    return st if st.get("final_status") not in (None, "UNDEFINED") else None


@pytest.mark.ml
def test_ddp_loses_a_worker_and_goes_on_with_the_others(tony, tmp_path):
    """min=2 max=3: worker:2's container dies (its executor SIGKILLed) and
    its replacement cannot start (its task dir is taken, as on a node that
    can start no container): the job goes on with workers 0 and 1, ranks 0
    and 1 of a world of 2, from the last checkpoint, and finishes; the
    world's change is an event of the job's history."""
    job = submit_elastic_ddp(tony, tmp_path, 60, 2000)
    first = job / "attempts/0/worker-0/stdout"
    wait_for(lambda: first.exists() and "step 15 " in first.read_text(), 120, what="step 15")
    # the replacement of worker:2 cannot start: its task dir is a file
    (job / "attempts/1").mkdir(parents=True, exist_ok=True)
    (job / "attempts/1/worker-2").write_text("taken\n")
    dead = executor_of(tony.home, "worker:2", 0)
    assert dead
    os.kill(dead, signal.SIGKILL)
    st = wait_for(lambda: final_status(job), 120, what="the job's end")
    assert st["final_status"] == "SUCCEEDED" and st["attempt"] == 1, st
    for i in range(3):
        assert f"world 0 rank {i} of 3 env {i}/3 task worker:{i} from step 0" in \
            (job / f"attempts/0/worker-{i}/stdout").read_text()
    for i in range(2):
        out = (job / f"attempts/1/worker-{i}/stdout").read_text()
        m = re.search(rf"world 1 rank {i} of 2 env {i}/2 task worker:{i} from step (\d+)", out)
        assert m and int(m.group(1)) >= 15, out
        assert f"done rank {i} of 2" in out and "step 60 " in out, out
    ev = [e for e in events_of(tony.home) if e["type"] == "WORLD_CHANGED"]
    assert len(ev) == 1, ev
    assert ev[0]["world_version"] == 1 and ev[0]["world_size"] == 2 and ev[0]["roles"] == {"worker": 2}, ev
    assert ev[0]["out"] == ["worker:2"] and "worker:2 left the world" in ev[0]["text"], ev


def test_a_job_starts_with_its_minimum_when_the_pool_holds_no_more(tony):
    """tony.local.vcores caps the pool at 2 tasks of 3 (min 2): the third waits
    in the pool's queue, and after the settle time the job starts with the
    two, ranks 0 and 1 of a world of 2, and finishes. Without min-instances
    the same job is refused at submit, as before."""
    cmd = 'echo "rank $RANK of $WORLD_SIZE world $TONY_WORLD_VERSION"'
    base = ["--conf", "tony.local.vcores=2", "--conf", "tony.application.framework=pytorch",
            "--conf", "tony.worker.instances=3", "--conf", "tony.application.elastic-settle-ms=1000", *SMALL]
    r = tony.run("submit", *base, "--conf", "tony.worker.min-instances=2", "--executes", cmd)
    assert r.rc == 0, r
    assert r.status()["final_status"] == "SUCCEEDED", r
    assert r.log("worker", 0) == "rank 0 of 2 world 1\n"
    assert r.log("worker", 1) == "rank 1 of 2 world 1\n"
    assert r.task("worker", 2)["state"] == "FINISHED"
    ev = [e for e in events_of(tony.home) if e["type"] == "WORLD_CHANGED"]
    assert [(e["world_size"], e["out"]) for e in ev] == [(2, ["worker:2"])], ev
    assert "elastic-settle-ms" in ev[0]["text"]
    rigid = tony.run("submit", *base, "--executes", cmd)
    assert rigid.rc == 2 and "the job needs 3 vcores at once but tony.local.vcores=2" in rigid.err, rigid


# ---- growing back and `tony scale` (issue 24 items 4 and 6) ----

WORLD_CMD = 'echo "world $TONY_WORLD_VERSION rank $RANK of $WORLD_SIZE"; exec sleep 120'
ELASTIC3 = ["--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=3",
            "--conf", "tony.worker.min-instances=2", "--conf", "tony.application.elastic-settle-ms=1000", *SMALL]


def says(job, attempt, i, words, timeout=60):
    out = job / f"attempts/{attempt}/worker-{i}/stdout"
    wait_for(lambda: out.exists() and words in out.read_text(), timeout, what=f"worker:{i} in attempt {attempt}: "
             f"{words}")


def world_events(home):
    return [(e["world_size"], e["out"]) for e in events_of(home) if e["type"] == "WORLD_CHANGED"]


def test_scale_shrinks_and_grows_a_running_job(tony):
    """`tony scale JOB worker=2` stops worker:2 and restarts the other two in
    place in a world of 2; `worker=3` asks for worker:2 again and, once it
    registered and the settle time passed, the world is 3 again. Refusals
    (out of bounds, unknown role, bad syntax) exit 2 naming what is wrong
    and change nothing."""
    r = tony.submit("--detach", "--executes", WORLD_CMD, *ELASTIC3)
    assert r.rc == 0, r
    job = r.job_dir()
    for i in range(3):
        says(job, 0, i, f"world 0 rank {i} of 3")
    for word, err in [("worker=4", "worker=4 is out of bounds: the job runs 2 to 3 worker task(s)"),
                      ("worker=1", "worker=1 is out of bounds"),
                      ("ps=2", "the job has no role 'ps' (its roles: worker)"),
                      ("worker", "'worker' is not ROLE=N"), ("worker=two", "'worker=two' is not ROLE=N")]:
        bad = tony.run("scale", str(job), word)
        assert bad.rc == 2 and err in bad.err, (word, bad)
    # unsigned, or signed with another key: refused, nothing changes
    url = json.loads((job / "am.json").read_text())["url"]
    body = json.dumps({"role": "worker", "instances": 2})
    secret = (job / "secret").read_text().strip()
    assert call(url + "/v1/job/scale", "POST", body)[0] == 403
    assert call(url + "/v1/job/scale", "POST", body, secret="0" * len(secret))[0] == 403
    assert call(url + "/v1/job/scale", "POST", '{"role": "worker"}', secret=secret)[0] == 400
    s = tony.run("scale", str(job), "worker=2")
    assert s.rc == 0 and "worker=2 asked for" in s.out, s
    says(job, 1, 0, "world 1 rank 0 of 2")
    says(job, 1, 1, "world 1 rank 1 of 2")
    assert not (job / "attempts/1/worker-2").exists()
    # the world on the job's JSON (status.json and GET /v1/job)
    def world():
        st = json.loads((job / "status.json").read_text())
        return st if st.get("world", {}).get("version") == 1 else None
    st = wait_for(world, 30, what="world 1 in status.json")
    assert st["world"] == {"version": 1, "size": 2, "roles": {"worker": {"in": 2, "min": 2, "max": 3,
                                                                        "target": 2}}}, st["world"]
    assert [(t["index"], t["out"]) for t in st["tasks"]] == [(0, False), (1, False), (2, True)]
    s = tony.run("scale", str(job), "worker=3")
    assert s.rc == 0, s
    for i in range(3):
        says(job, 2, i, f"world 2 rank {i} of 3")
    assert world_events(tony.home) == [(2, ["worker:2"]), (3, [])]
    # a change of the world is no failure: each attempt ended RESIZED, in
    # the job's JSON, the RESTART events (history) and `tony history`
    st = wait_for(lambda: (lambda s: s if len(s.get("attempts", [])) == 2 else None)(
        json.loads((job / "status.json").read_text())), 30, what="two ended attempts in status.json")
    assert st["attempts"] == [{"attempt": 0, "end": "RESIZED"}, {"attempt": 1, "end": "RESIZED"}], st["attempts"]
    assert not [r for t in st["tasks"] for r in t["runs"] if r["state"] == "FAILED"], st["tasks"]
    restarts = [e for e in events_of(tony.home) if e["type"] == "RESTART"]
    assert [e["end"] for e in restarts] == ["RESIZED", "RESIZED"], restarts
    assert not any("failed" in e["text"] for e in restarts), restarts
    h = tony.run("history", job.name)
    assert h.rc == 0 and "attempt 0 ended for a change of the world" in h.out and "attempt 0 failed" not in h.out, h
    assert tony.run("kill", str(job)).rc == 0


def test_the_page_plots_the_world_size_after_a_scale(tony, browser_tools):
    """The page's timeline plots the world's size over time as steps: 3
    (the plan) then 2 after `tony scale worker=2`; its summary counts one
    world change and no restart. In Chromium (tests/browser/world_plot.mjs)."""
    r = tony.submit("--detach", "--executes", WORLD_CMD, *ELASTIC3)
    assert r.rc == 0, r
    job = r.job_dir()
    for i in range(3):
        says(job, 0, i, f"world 0 rank {i} of 3")
    assert tony.run("scale", str(job), "worker=2").rc == 0
    says(job, 1, 0, "world 1 rank 0 of 2")
    url = json.loads((job / "am.json").read_text())["url"]
    cfg = {"url": page_link(url, job), "app_id": job.name, "steps": "3,2", "chromium": CHROMIUM,
           "artifacts": str(ARTIFACTS)}
    p = subprocess.run([browser_tools, str(BROWSER_DIR / "world_plot.mjs"), json.dumps(cfg)], cwd=BROWSER_DIR,
                       capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, f"browser check failed (screenshots in {ARTIFACTS}):\n{p.stderr}\n{p.stdout}"
    assert tony.run("kill", str(job)).rc == 0


def test_scale_refuses_a_job_that_is_not_elastic(tony):
    r = tony.submit("--detach", "--executes", WORLD_CMD, "--conf", "tony.application.framework=pytorch",
                    "--conf", "tony.worker.instances=1", *SMALL)
    assert r.rc == 0, r
    job = r.job_dir()
    says(job, 0, 0, "rank 0 of 1")
    bad = tony.run("scale", str(job), "worker=1")
    assert bad.rc == 2 and "the job is not elastic" in bad.err, bad
    assert tony.run("kill", str(job)).rc == 0
    gone = tony.run("scale", str(job), "worker=1")
    assert gone.rc == 3 and "not running" in gone.err, gone


def test_a_lost_worker_grows_back_when_its_container_can_start_again(tony):
    """worker:2's executor is killed and its replacement cannot start (its
    task dir is taken): the world goes on with 2. Once the dir is free, the
    task is asked for again after its backoff, registers, and the world
    grows back to 3 in the next attempt."""
    r = tony.submit("--detach", "--executes", WORLD_CMD, *ELASTIC3)
    assert r.rc == 0, r
    job = r.job_dir()
    for i in range(3):
        says(job, 0, i, f"world 0 rank {i} of 3")
    (job / "attempts/1").mkdir(parents=True, exist_ok=True)
    (job / "attempts/1/worker-2").write_text("taken\n")
    dead = executor_of(tony.home, "worker:2", 0)
    assert dead
    os.kill(dead, signal.SIGKILL)
    says(job, 1, 0, "world 1 rank 0 of 2")
    (job / "attempts/1/worker-2").unlink()
    for i in range(3):
        says(job, 2, i, f"world 2 rank {i} of 3")
    assert world_events(tony.home) == [(2, ["worker:2"]), (3, [])]
    # the lost task failed; the attempt it ended was resized, not failed
    st = json.loads((job / "status.json").read_text())
    assert st["attempts"][0] == {"attempt": 0, "end": "RESIZED"}, st["attempts"]
    assert st["tasks"][2]["runs"][0]["state"] == "FAILED", st["tasks"][2]
    assert tony.run("kill", str(job)).rc == 0


@pytest.mark.ml
def test_ddp_is_scaled_down_and_up_while_it_trains(tony, tmp_path):
    """A PyTorch DDP training (gloo) scaled to 2 workers and back to 3 while
    it trains: each world's ranks see its size in RANK/WORLD_SIZE and go on
    from the last checkpoint; the job finishes in the world of 3."""
    job = submit_elastic_ddp(tony, tmp_path, 200, 1000)
    says(job, 0, 0, "step 10 ", timeout=120)
    assert tony.run("scale", str(job), "worker=2").rc == 0
    for i in range(2):
        says(job, 1, i, f"world 1 rank {i} of 2 env {i}/2 task worker:{i} from step")
    says(job, 1, 0, "world 2\n")  # a step trained in the world of 2
    assert tony.run("scale", str(job), "worker=3").rc == 0
    st = wait_for(lambda: final_status(job), 120, what="the job's end")
    assert st["final_status"] == "SUCCEEDED" and st["attempt"] == 2, st
    for i in range(3):
        out = (job / f"attempts/2/worker-{i}/stdout").read_text()
        m = re.search(rf"world 2 rank {i} of 3 env {i}/3 task worker:{i} from step (\d+)", out)
        assert m and int(m.group(1)) >= 5, out
        assert f"done rank {i} of 3" in out and "step 200 " in out, out
    assert world_events(tony.home) == [(2, ["worker:2"]), (3, [])]
