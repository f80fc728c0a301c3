"""The Slurm test cluster itself (scripts/slurm-test-cluster), through Slurm's
own tools: what the tony Slurm backend will rely on (several nodes, steps per
node, GPUs through GRES, partitions, a node feature, heterogeneous jobs,
scancel) works here, and start/stop leave nothing behind. No tony yet."""
import re
import time

import pytest

import slurm as stc

pytestmark = pytest.mark.slurm


def test_nodes_partitions_feature(slurm):
    out = slurm.run("sinfo", "-h", "-N", "-o", "%N %P %t %G %f").stdout.split("\n")
    rows = [line.split() for line in out if line.strip()]
    assert sorted({r[0] for r in rows}) == slurm.nodes and len(slurm.nodes) == 3
    assert all(r[2] == "idle" for r in rows), rows
    assert sorted(r[0] for r in rows if r[1] == "gpu") == slurm.gpu_nodes
    assert {r[0] for r in rows if r[1] == "cpu*"} == set(slurm.nodes)  # cpu is the default
    assert all(r[3] == f"gpu:{slurm.node_gpus}" for r in rows if r[0] in slurm.gpu_nodes)
    assert {r[0] for r in rows if r[4] == slurm.feature} == set(slurm.feature_nodes) == {"n1"}


def test_two_nodes_a_step_on_each(slurm, tmp_path):
    out = tmp_path / "two.out"
    job = slurm.sbatch("-N2", "--ntasks-per-node=1", "-o", str(out), "--wrap",
                       'srun -l bash -c "echo step on \\$SLURMD_NODENAME"')
    assert slurm.wait_job(job) == "COMPLETED"
    steps = re.findall(r"^([01]): step on (n\d+)$", out.read_text(), re.M)
    assert sorted(s[0] for s in steps) == ["0", "1"]
    assert len({s[1] for s in steps}) == 2, out.read_text()
    assert re.search(rf"JobId={job} .*JobState=COMPLETED .*NodeCnt=2", slurm.jobcomp.read_text())


def test_gpus_bound_per_job(slurm, tmp_path):
    """Two jobs on one node get disjoint GPUs in CUDA_VISIBLE_DEVICES, as Slurm
    binds them; no -p means partition cpu."""
    node = slurm.gpu_nodes[0]
    jobs = [slurm.sbatch("-p", "gpu", "-w", node, "--gres=gpu:2", "-o", str(tmp_path / f"g{i}.out"), "--wrap",
                         "echo $SLURM_JOB_PARTITION $CUDA_VISIBLE_DEVICES; sleep 1") for i in range(2)]
    plain = slurm.sbatch("-o", str(tmp_path / "plain.out"), "--wrap", "echo $SLURM_JOB_PARTITION")
    assert [slurm.wait_job(j) for j in jobs + [plain]] == ["COMPLETED"] * 3
    seen = []
    for i in range(2):
        part, devices = (tmp_path / f"g{i}.out").read_text().split()
        assert part == "gpu"
        seen += devices.split(",")
    assert sorted(seen) == ["0", "1", "2", "3"]
    assert (tmp_path / "plain.out").read_text().strip() == "cpu"


def test_constraint_lands_on_featured_node(slurm, tmp_path):
    out = tmp_path / "c.out"
    job = slurm.sbatch(f"--constraint={slurm.feature}", "-o", str(out), "--wrap", "echo $SLURMD_NODENAME")
    assert slurm.wait_job(job) == "COMPLETED"
    assert out.read_text().strip() == slurm.feature_nodes[0]


def test_het_job_one_component_per_role(slurm, tmp_path):
    """The shape tony's Slurm backend plans: one het job, a component per role,
    a step per task started with srun --het-group."""
    out = tmp_path / "het.out"
    job = slurm.sbatch(script=f"""#!/bin/bash
#SBATCH -J het -o {out}
#SBATCH -p cpu -n1 --constraint={slurm.feature}
#SBATCH hetjob
#SBATCH -p gpu -N2 --ntasks-per-node=1 --gres=gpu:1
echo size $SLURM_HET_SIZE
srun --het-group=0 bash -c 'echo ps on $SLURMD_NODENAME'
srun --het-group=1 -l bash -c 'echo worker on $SLURMD_NODENAME gpu $CUDA_VISIBLE_DEVICES'
""")
    assert slurm.wait_job(job) == "COMPLETED", out.read_text()
    text = out.read_text()
    assert "size 2" in text
    assert f"ps on {slurm.feature_nodes[0]}" in text
    workers = re.findall(r"^[01]: worker on (n\d+) gpu (\d+)$", text, re.M)
    assert sorted(w[0] for w in workers) == slurm.gpu_nodes, text


def test_sacct_has_ended_jobs(slurm, tmp_path):
    """Accounting through slurmdbd: sacct lists a job by its name, its steps too."""
    if slurm.vars.get("TONY_STC_ACCOUNTING") != "1":
        pytest.skip("cluster started with TONY_STC_ACCOUNTING=0")
    job = slurm.sbatch("-J", "acct-check", "-N2", "-o", str(tmp_path / "a.out"), "--wrap", "srun true")
    assert slurm.wait_job(job) == "COMPLETED"
    # slurmctld reports to slurmdbd in its own time (a record may briefly show
    # another name or state): wait for the final one
    want = [[job, "acct-check", "COMPLETED", "2"], [f"{job}.batch", "batch", "COMPLETED", "1"],
            [f"{job}.0", "true", "COMPLETED", "2"]]
    end = time.time() + 15
    rows = []
    while time.time() < end and rows != want:
        out = slurm.run("sacct", "-n", "-P", "-j", job, "-o", "JobID,JobName,State,NNodes").stdout
        rows = [line.split("|") for line in out.splitlines() if line]
        time.sleep(0.2)
    assert rows == want


def test_too_many_gpus_refused_at_once(slurm):
    r = slurm.run("sbatch", "-p", "gpu", f"--gres=gpu:{slurm.node_gpus + 1}", "--wrap", "true", check=False)
    assert r.returncode != 0
    assert "Requested node configuration is not available" in r.stdout
    assert slurm.queue() == []


def test_scancel_leaves_nothing(slurm):
    job = slurm.sbatch("-o", "/dev/null", "--wrap", "sleep 300 & srun sleep 300")
    end = time.time() + 30
    while time.time() < end and len(slurm.job_processes(job)) < 3:  # batch shell, sleep, srun's sleep
        time.sleep(0.1)
    assert len(slurm.job_processes(job)) >= 3
    slurm.run("scancel", job)
    assert slurm.wait_job(job) == "CANCELLED"
    end = time.time() + 15
    while time.time() < end and (slurm.queue() or slurm.job_processes(job)):
        time.sleep(0.1)
    assert slurm.queue() == [] and slurm.job_processes(job) == []


def test_start_again_and_stop_leave_nothing(tmp_path):
    """A cluster of its own: start finds it running, stop ends every daemon and
    job process, status then says not running (exit 3)."""
    if stc.missing_tools():
        pytest.skip("Slurm not installed: scripts/install-deps slurm")
    d = tmp_path / "stc"
    try:
        cluster = stc.start(d, env={"TONY_STC_NODES": "2", "TONY_STC_GPU_NODES": "1"})
        assert cluster.nodes == ["n1", "n2"] and cluster.gpu_nodes == ["n2"]
        again = stc.script("start", d)
        assert "already running" in again.stdout
        job = cluster.sbatch("-o", "/dev/null", "--wrap", "sleep 300")
        end = time.time() + 30
        while time.time() < end and not cluster.job_processes(job):
            time.sleep(0.1)
        assert cluster.job_processes(job)
        roles = ("munged", "mariadb", "slurmdbd", "slurmctld", "n1", "n2")
        pids = [int((d / "run" / f"{r}.pid").read_text()) for r in roles]
    finally:
        stc.stop(d)
    assert cluster.job_processes() == []
    for pid in pids:
        try:
            state = open(f"/proc/{pid}/stat").read().split()[2]
        except OSError:
            continue
        assert state == "Z", f"pid {pid} still runs after stop"
    status = stc.script("status", d, check=False)
    assert status.returncode == 3, status.stdout
