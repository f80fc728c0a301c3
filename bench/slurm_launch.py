#!/usr/bin/env python3
"""Slurm launch overhead: `tony submit --backend slurm` vs `sbatch` of the same
job's bare commands, on the Slurm test cluster (scripts/slurm-test-cluster,
at $TONY_STC_DIR or build/stc-bench, started and stopped here when not running).

The job: 1 ps (512 MB) + 3 workers (1 GB), each running `sleep 5` after
writing `date +%s.%N` to a file in a temp dir as its first act. tony makes
it a heterogeneous job of two components (ps, workers), starts its
coordinator in the batch step and each task as an srun step through its
executor (register, gang barrier, cluster spec). The baseline is what a
user would write by hand: the same two-component sbatch script whose batch
step starts the 4 commands with srun, no coordinator, no executors. Per run
we measure submit -> all 4 commands started, and the submitting command's
wall time to the job's end (tony's follows the job; for sbatch, polling
squeue every 0.2 s until the job is gone). Runs alternate so drift hits
both alike; one unmeasured run of each warms the page cache (and tony's
self-contained copy in the shared root) first. Replaces the "# Slurm"
section of bench/REPORT.md (or --out) and prints it.

usage: build/pyenv/bin/python bench/slurm_launch.py [--runs 5] [--tony build/bin/tony]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from report import replace_section

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests" / "e2e"))
import slurm  # noqa: E402  (the e2e tests' driver of the test cluster: its env, start, stop)
TASKS = ["ps:0", "worker:0", "worker:1", "worker:2"]
TIMEOUT_S = 120


def first_starts(stamp_dir, n):
    files = list(Path(stamp_dir).glob("*.start"))
    if len(files) < n:
        return None
    return max(float(f.read_text().split()[0]) for f in files)


def stamp_cmd(stamp_dir, name):
    return f'date +%s.%N > {stamp_dir}/{name}.start; sleep 5'


def run_tony(tony, env, home):
    stamps = tempfile.mkdtemp(prefix="stamps-", dir=home)
    cmd = [tony, "submit", "--backend", "slurm", "--executes", stamp_cmd(stamps, "$JOB_NAME-$TASK_INDEX"),
           "--conf", "tony.ps.instances=1", "--conf", "tony.ps.memory=512m",
           "--conf", "tony.worker.instances=3", "--conf", "tony.worker.memory=1g",
           "--conf", "tony.application.framework=tensorflow"]
    t0 = time.time()
    p = subprocess.run(cmd, env=dict(env, TONY_HOME=str(home)), capture_output=True, text=True, timeout=TIMEOUT_S)
    wall = time.time() - t0
    if p.returncode != 0:
        sys.exit(f"tony failed:\n{p.stdout}\n{p.stderr}")
    started = first_starts(stamps, len(TASKS))
    if started is None:
        sys.exit(f"tony: not every task started\n{p.stdout}")
    return started - t0, wall


def run_sbatch(env, home):
    stamps = tempfile.mkdtemp(prefix="stamps-", dir=home)
    steps = []
    for i, task in enumerate(TASKS):
        group = 0 if task.startswith("ps") else 1
        mem = 512 if group == 0 else 1024
        steps.append(f"srun --het-group={group} --ntasks=1 --nodes=1 --exact --cpus-per-task=1 "
                     f"--mem-per-cpu={mem} --job-name={task} bash -c '{stamp_cmd(stamps, task.replace(':', '-'))}' &")
    script = "\n".join([
        "#!/bin/sh",
        f"#SBATCH --job-name=bare --output={stamps}/out --ntasks=1 --cpus-per-task=1 --mem-per-cpu=512",
        "#SBATCH hetjob",
        "#SBATCH --ntasks=3 --cpus-per-task=1 --mem-per-cpu=1024",
        *steps, "wait", ""])
    t0 = time.time()
    p = subprocess.run(["sbatch", "--parsable"], input=script, env=env, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit(f"sbatch failed: {p.stderr}")
    job = p.stdout.strip().split(";")[0]
    while True:
        q = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], env=env, capture_output=True, text=True)
        if not q.stdout.strip() or all(s in ("COMPLETED", "FAILED", "CANCELLED") for s in q.stdout.split()):
            break
        if time.time() - t0 > TIMEOUT_S:
            sys.exit("sbatch job did not end")
        time.sleep(0.2)
    wall = time.time() - t0
    started = first_starts(stamps, len(TASKS))
    if started is None:
        sys.exit(f"sbatch: not every command started: {(Path(stamps) / 'out').read_text()}")
    return started - t0, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tony", default=str(REPO / "build/bin/tony"))
    ap.add_argument("--out", default=str(HERE / "REPORT.md"))
    a = ap.parse_args()
    stc_dir = os.environ.get("TONY_STC_DIR") or str(REPO / "build/stc-bench")
    started_here = slurm.script("status", stc_dir, check=False).returncode != 0
    try:
        env = (slurm.start(stc_dir) if started_here else slurm.Cluster(stc_dir)).env()
        env.pop("HADOOP_CONF_DIR", None)
        home = Path(tempfile.mkdtemp(prefix="slurm-bench-"))
        run_tony(a.tony, env, home)  # warm-up (also makes the self-contained copy)
        run_sbatch(env, home)
        tony_runs, bare_runs = [], []
        for _ in range(a.runs):
            tony_runs.append(run_tony(a.tony, env, home))
            bare_runs.append(run_sbatch(env, home))
    finally:
        if started_here:
            slurm.stop(stc_dir)

    def med(runs, k):
        return statistics.median(r[k] for r in runs)

    rows = [("submit -> all 4 commands started", med(tony_runs, 0), med(bare_runs, 0)),
            ("submit -> the submitting command returns after the job ended", med(tony_runs, 1), med(bare_runs, 1))]
    lines = ["# Slurm", "",
             "Same job on the Slurm test cluster (`scripts/slurm-test-cluster`: Debian's Slurm 22.05, slurmctld and "
             "3 slurmd on this 2-CPU machine, backfill every second): 1 ps of 512 MB and 3 workers of 1 GB, each "
             "running `sleep 5`, as one heterogeneous job of two components. tony: `tony submit --backend slurm` "
             "(coordinator in the batch step, an executor per task started with srun, registration, gang barrier, "
             "cluster spec). Baseline: `sbatch` of a script with the same two components whose batch step starts "
             "the 4 bare commands with srun, followed by polling squeue. Median of "
             f"{a.runs} alternating runs after one unmeasured run of each. Produced by `bench/slurm_launch.py`.", "",
             "| | tony | sbatch + srun | ratio |", "|---|---|---|---|"]
    for name, t, b in rows:
        lines.append(f"| {name} | {t:.2f} s | {b:.2f} s | {t / b:.2f}x |")
    text = "\n".join(lines) + "\n"
    replace_section(a.out, "Slurm", text)
    print(text)


if __name__ == "__main__":
    main()
