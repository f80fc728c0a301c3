"""tony jobs on the Slurm test cluster (scripts/slurm-test-cluster), with the
real binary: `tony submit --backend slurm` makes one Slurm job (a
heterogeneous one when roles ask for different resources), the coordinator
runs in its batch step and every task is a job step started with srun.
Checked through Slurm's own tools (squeue, sacct) as well as tony's verbs:
TonY's completion rules, untracked and sidecar roles, heartbeats, venv and
resources, GPUs from GRES, partition and constraint, kill, restarts, real
PyTorch DDP and TensorFlow training, and bad input refused before anything
is queued."""
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO, Tony, after_output, job_processes, make_venv_zip, shipment, wait_for

pytestmark = pytest.mark.slurm
EXAMPLES = str(REPO / "examples")
TORCH_PY = "/usr/bin/python3"  # Debian's torch imports under the system interpreter


@pytest.fixture
def stony(tony, slurm):
    """The tony fixture pointed at the Slurm test cluster (its env), with
    --backend slurm in every submit."""
    tony.env.update(slurm.vars)
    tony.slurm = slurm
    yield tony
    # Nothing of the test's jobs may stay queued or running in Slurm.
    left = [line for line in slurm.run("squeue", "-h", "-o", "%i %j %T").stdout.splitlines() if line.strip()]
    assert not left, f"jobs left in squeue: {left}"


def submit(t, *args, timeout=180, **kw):
    return t.run("submit", "--backend", "slurm", *args, timeout=timeout, **kw)


def slurm_id(r):
    m = re.search(r"submitted as Slurm job (\d+)", r.out)
    assert m, r
    return m.group(1)


def sacct_states(slurm, job_id, components, steps):
    """(JobID, JobName, State) of the job's components and steps, from accounting."""
    def read():
        out = slurm.run("sacct", "-n", "-P", "-j", job_id, "-o", "JobID,JobName,State", check=False).stdout
        rows = [tuple(line.split("|")) for line in out.splitlines() if line.strip()]
        comps = [r for r in rows if "." not in r[0]]
        # The accounting daemon gets the final records a moment after the job
        # ends (before that: one provisional row named "allocation").
        done = len(comps) == components and len(rows) - components >= steps and \
            all(r[2] not in ("RUNNING", "PENDING") for r in rows)
        return rows if done else None
    return wait_for(read, timeout=30, what="sacct's records")


def sacct_job_state(slurm, job_id):
    """The job's own State in accounting, its one component's ("CANCELLED by 0" reads CANCELLED)."""
    rows = sacct_states(slurm, job_id, components=1, steps=0)
    return [r[2].split()[0] for r in rows if "." not in r[0]][0]


def test_ps_and_workers_one_het_job(stony, slurm):
    # the workers end once the untracked ps has printed what is read below
    r = submit(stony, "--executes",
               'echo "$JOB_NAME:$TASK_INDEX on $SLURMD_NODENAME step $SLURM_STEP_ID"; echo "$TF_CONFIG"; '
               f'[ "$JOB_NAME" = ps ] || {{ {after_output("ps-0", "index")}; }}',
               "--conf", "tony.application.framework=tensorflow", "--conf", "tony.application.name=tony-e2e-psw",
               "--conf", "tony.ps.instances=1", "--conf", "tony.ps.memory=512m",
               "--conf", "tony.worker.instances=2", "--conf", "tony.worker.memory=1g")
    assert r.rc == 0, r
    assert "All 2 tracked tasks succeeded" in r.out
    # the coordinator log the submit names is there (on Slurm: the batch script's output)
    named = re.search(r"coordinator log: (\S+)\)", r.out)
    assert named and Path(named.group(1)).is_file(), r.out
    jid = slurm_id(r)
    for role, index in (("ps", 0), ("worker", 0), ("worker", 1)):
        log = r.log(role, index)
        assert re.search(rf"^{role}:{index} on n\d step \d+$", log, re.M), log
        spec = json.loads(log.splitlines()[1])
        assert len(spec["cluster"]["worker"]) == 2 and len(spec["cluster"]["ps"]) == 1
    # Two shapes: a heterogeneous job of two components, under TonY's application name.
    rows = sacct_states(slurm, jid, components=2, steps=4)
    comps = [row for row in rows if "." not in row[0]]
    assert sorted(c[0] for c in comps) == [f"{jid}+0", f"{jid}+1"], rows
    assert all(c[1] == "tony-e2e-psw" and c[2] == "COMPLETED" for c in comps), rows
    steps = {row[1] for row in rows if "." in row[0]}
    assert {"ps:0", "worker:0", "worker:1"} <= steps, rows
    # The verbs read the job: status names the Slurm job, list the backend, logs the tasks.
    st = stony.run("status", r.job_dir().name, check_rc=0)
    assert f"Slurm job {jid}: COMPLETED" in st.out, st
    assert re.search(rf"{r.job_dir().name}\s+slurm\s+FINISHED\s+SUCCEEDED", stony.run("list").out)
    lg = stony.run("logs", r.job_dir().name, "--task", "worker:1", check_rc=0)
    assert "worker:1 on n" in lg.out


def test_worker_failure_fails_job_and_restart_succeeds(stony, tmp_path):
    marker = tmp_path / "failed-once"
    r = submit(stony, "--executes",
               f'if [ "$TASK_INDEX" = 1 ] && [ ! -e {marker} ]; then touch {marker}; echo boom >&2; exit 3; fi; '
               'echo "attempt ok"',
               "--conf", "tony.worker.instances=2", "--conf", "tony.worker.memory=512m",
               "--conf", "tony.am.retry-count=1")
    assert r.rc == 0, r
    st = r.status()
    assert st["attempt"] == 1 and st["final_status"] == "SUCCEEDED", st
    assert "boom" in (r.job_dir() / "attempts/0/worker-1/stderr").read_text()

    r = submit(stony, "--executes", 'if [ "$TASK_INDEX" = 1 ]; then exit 5; fi; sleep 1',
               "--conf", "tony.worker.instances=2", "--conf", "tony.worker.memory=512m")
    assert r.rc == 1, r
    assert r.status()["final_status"] == "FAILED"
    assert re.search(r"worker:1 FAILED .*exit code 5", r.out), r
    # Slurm's accounting says the same: the coordinator's non-zero exit.
    assert sacct_job_state(stony.slurm, slurm_id(r)) == "FAILED"


def test_chief_rules_untracked_and_sidecar(stony):
    """ps is untracked (stopped when the tracked tasks end), a sidecar's
    failure is ignored; then a failing chief fails the job at once."""
    small = ["--conf", "tony.chief.memory=512m", "--conf", "tony.worker.memory=512m",
             "--conf", "tony.ps.memory=512m", "--conf", "tony.sidecar.memory=512m"]
    r = submit(stony, "--executes",
               'case $JOB_NAME in chief) sleep 1;; worker) sleep 2;; ps) sleep 300;; sidecar) exit 7;; esac',
               "--conf", "tony.chief.instances=1", "--conf", "tony.worker.instances=1", "--conf", "tony.ps.instances=1",
               "--conf", "tony.sidecar.instances=1", "--conf", "tony.application.sidecar.jobtypes=sidecar",
               "--conf", "tony.application.untracked.jobtypes=ps", *small)
    assert r.rc == 0, r
    assert r.status()["final_status"] == "SUCCEEDED"
    assert r.task("chief", 0)["state"] == "SUCCEEDED" and r.task("sidecar", 0)["exit_status"] == 7

    t0 = time.time()
    r = submit(stony, "--executes", 'case $JOB_NAME in chief) sleep 1; exit 7;; *) sleep 120;; esac',
               "--conf", "tony.chief.instances=1", "--conf", "tony.worker.instances=2", *small)
    assert r.rc == 1, r
    assert "Chief task [chief:0] failed" in r.status()["diagnostics"]
    assert time.time() - t0 < 90


def executor_of(home, task):
    """The pid of task's executor (a job step's process on its node, here)."""
    for pid in job_processes(home):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            env = open(f"/proc/{pid}/environ", "rb").read()
        except OSError:
            continue
        if len(cmd) > 1 and cmd[1] == b"executor" and f"TONY_TASK_ID={task}\0".encode() in env:
            return pid
    return None


def test_heartbeats_lost_executor_fails_the_job(stony):
    """An executor that stops sending heartbeats (SIGSTOPped in its step) is
    declared lost after tony.task.max-missed-heartbeats."""
    p = stony.popen("submit", "--backend", "slurm", "--executes", "sleep 120", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.worker.memory=512m", "--conf", "tony.task.heartbeat-interval-ms=500",
                    "--conf", "tony.task.max-missed-heartbeats=4")
    def started():
        jobs = list((stony.home / "jobs").glob("*/status.json"))
        return jobs and '"RUNNING"' in jobs[0].read_text() and executor_of(stony.home, "worker:1")
    pid = wait_for(started, timeout=90, what="worker:1 running")
    t0 = time.time()
    os.kill(pid, signal.SIGSTOP)
    try:
        out, err = p.communicate(timeout=90)
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass  # Slurm ended its step: the executor and its user process are gone
    assert p.returncode == 1, out + err
    assert time.time() - t0 < 30
    assert "missed [4] heartbeats" in out, out


def test_venv_and_resources(stony, tmp_path, scripts):
    r = submit(stony, *shipment(tmp_path, scripts), "--conf", "tony.worker.instances=1",
               "--conf", "tony.worker.memory=512m")
    assert r.rc == 0, r
    assert r.log("worker", 0).split() == ["True", "payload", "payload", "inner", "from-archive"]


def test_gpus_from_gres_and_too_many_refused(stony, slurm):
    # the workers end once the untracked ps has printed its line (issue 40)
    r = submit(stony, "--executes", 'echo "CVD=$CUDA_VISIBLE_DEVICES node=$SLURMD_NODENAME"; '
               f'[ "$JOB_NAME" = ps ] || {{ {after_output("ps-0", "node=")}; }}',
               "--conf", "tony.worker.instances=2", "--conf", "tony.worker.gpus=2",
               "--conf", "tony.worker.memory=512m", "--conf", "tony.ps.instances=1", "--conf", "tony.ps.memory=512m",
               "--conf", "tony.slurm.worker.partition=gpu")
    assert r.rc == 0, r
    for i in range(2):
        m = re.search(r"CVD=(\d+),(\d+) node=(n\d)", r.log("worker", i))
        assert m and m.group(3) in slurm.gpu_nodes, r.log("worker", i)
    assert re.search(r"CVD= node=n\d", r.log("ps", 0)), r.log("ps", 0)

    before = slurm.run("squeue", "-h", "-t", "all", "-o", "%i").stdout
    r = submit(stony, "--executes", "true", "--conf", "tony.worker.instances=1",
               "--conf", f"tony.worker.gpus={slurm.node_gpus + 1}", "--conf", "tony.slurm.partition=gpu")
    assert r.rc == 2, r
    assert f"{slurm.node_gpus + 1} GPUs (tony.worker.gpus); the most a node has is {slurm.node_gpus}" in r.err, r
    assert slurm.run("squeue", "-h", "-t", "all", "-o", "%i").stdout == before


def test_partition_and_constraint(stony, slurm):
    r = submit(stony, "--executes", 'echo "part=$SLURM_JOB_PARTITION node=$SLURMD_NODENAME"',
               "--conf", "tony.worker.instances=1", "--conf", "tony.worker.memory=512m",
               "--conf", f"tony.worker.node-label={slurm.feature}")
    assert r.rc == 0, r
    assert f"node={slurm.feature_nodes[0]}" in r.log("worker", 0)
    r = submit(stony, "--executes", 'echo "part=$SLURM_JOB_PARTITION node=$SLURMD_NODENAME"',
               "--conf", "tony.worker.instances=1", "--conf", "tony.worker.memory=512m",
               "--conf", "tony.slurm.partition=gpu")
    assert r.rc == 0, r
    assert re.search(r"part=gpu node=(n\d)", r.log("worker", 0)).group(1) in slurm.gpu_nodes


def test_kill_leaves_nothing(stony, slurm):
    p = stony.popen("submit", "--backend", "slurm", "--detach", "--executes", "sleep 300",
                    "--conf", "tony.worker.instances=2", "--conf", "tony.worker.memory=512m")
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, (out, err)
    app = re.search(r"job (application_\S+) submitted", out).group(1)
    jid = re.search(r"Slurm job (\d+)", out).group(1)
    wait_for(lambda: re.search(r"RUNNING", stony.run("status", app).out) and
             (stony.home / "jobs" / app / "attempts/0/worker-1/stdout").exists(), timeout=60, what="running")
    k = stony.run("kill", app, timeout=120)
    assert k.rc == 0, k
    assert stony.run("status", app).out.count("KILLED") >= 1
    # A killed job reads as scancel's would in Slurm's records, not FAILED:
    # the controller's (scontrol) and accounting's (sacct) alike.
    assert slurm.wait_job(jid, timeout=30) == "CANCELLED"
    assert sacct_job_state(slurm, jid) == "CANCELLED"
    wait_for(lambda: not job_processes(stony.home), timeout=30, what="no process left")
    # ...the coordinator's own cancel, its last act: the history was written
    # before it, and the cancel's SIGTERM did not cut the log short.
    assert list(stony.home.glob(f"history/finished/*/*/*/{app}/*KILLED.jhist")), \
        sorted(str(p) for p in stony.home.rglob("history/**/*"))
    assert f"cancelled its Slurm job {jid}" in (stony.home / "jobs" / app / "slurm-job.out").read_text()


def test_kill_a_queued_job(stony, slurm):
    """A job that cannot start yet (the nodes are taken) is cancelled in the queue."""
    hog = slurm.sbatch("-N3", "--exclusive", "-o", "/dev/null", "--wrap", "sleep 120")
    try:
        r = submit(stony, "--detach", "--executes", "true", "--conf", "tony.worker.instances=1",
                   "--conf", "tony.worker.memory=512m", timeout=60)
        assert r.rc == 0, r
        app = r.job_dir().name
        st = stony.run("status", app)
        assert re.search(r"Slurm job \d+: PENDING", st.out), st
        k = stony.run("kill", app, timeout=90)
        assert k.rc == 0, k
        assert "cancelled" in k.err, k
        assert slurm.wait_job(slurm_id(r), timeout=30) == "CANCELLED"
    finally:
        slurm.run("scancel", hog)
        slurm.wait_job(hog)


def test_bad_input_refused_before_anything_is_queued(stony, slurm, tmp_path):
    before = slurm.run("squeue", "-h", "-t", "all", "-o", "%i").stdout
    r = submit(stony, "--executes", "true", "--conf", "tony.worker.instances=1", "--conf", "tony.slurm.partition=nosuch")
    assert r.rc == 2 and "no partition 'nosuch'" in r.err and "tony.slurm.partition" in r.err, r
    r = submit(stony, "--executes", "true", "--conf", "tony.worker.instances=1", "--conf", "tony.worker.memory=64g")
    assert r.rc == 2 and "tony.worker.memory" in r.err and "the most a node has is 4096 MB" in r.err, r
    assert slurm.run("squeue", "-h", "-t", "all", "-o", "%i").stdout == before
    # No controller: a slurm.conf whose controller port nobody listens on.
    conf = tmp_path / "slurm.conf"
    text = open(slurm.conf).read()
    conf.write_text(re.sub(r"^SlurmctldPort=\d+", "SlurmctldPort=9", text, flags=re.M))
    t = Tony(stony.home)
    t.env.update(slurm.vars, SLURM_CONF=str(conf))
    start = time.time()
    r = submit(t, "--executes", "true", "--conf", "tony.worker.instances=1", timeout=90)
    assert r.rc != 0 and "sinfo" in r.err and "Slurm" in r.err, r
    assert time.time() - start < 60
    assert not list((stony.home / "jobs").glob("*/slurm.json"))


def test_pytorch_ddp(stony):
    r = submit(stony, "--src_dir", EXAMPLES, "--python_binary_path", TORCH_PY,
               "--executes", "pytorch/ddp_digits.py", "--task_params", "--epochs 10",
               "--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=2",
               "--conf", "tony.worker.memory=1g", timeout=600)
    assert r.rc == 0, r
    m = re.search(r"final accuracy: ([0-9.]+)", r.log("worker", 0))
    assert m and float(m.group(1)) >= 0.8, r.log("worker", 0)[-2000:]


def test_tensorflow_multiworker(stony):
    from conftest import PYTHON
    r = submit(stony, "--src_dir", EXAMPLES, "--python_binary_path", PYTHON,
               "--executes", "tensorflow/mnist_multiworker.py",
               "--conf", "tony.application.framework=tensorflow", "--conf", "tony.worker.instances=2",
               "--conf", "tony.worker.memory=3g", timeout=600)
    assert r.rc == 0, r
    assert re.search(r"final accuracy: ([0-9.]+)", r.log("worker", 0)), r.log("worker", 0)[-2000:]
