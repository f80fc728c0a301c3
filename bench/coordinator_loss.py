#!/usr/bin/env python3
"""Coordinator loss on the real YARN test cluster: how long the training
stops when the coordinator's process is SIGKILLed, adopting the running
tasks (tony.am.recovery-timeout-ms, the default) vs rerunning the job (=0,
what TonY and tony did before), side by side in one run.

The job: 3 workers (256 MB each). Each task's command is a stand-in for a
training loop: it appends `date +%s.%N` to a file of its own every 0.1 s
(one "step"). 3 s after every task stepped, the coordinator is SIGKILLed;
YARN starts the application's second attempt. The figure is the training's
longest pause: the largest gap between consecutive steps of any task from
the kill on, until every task has stepped for 3 s past its pause. With
adoption the steps go on while the new coordinator takes the tasks back;
rerunning, they stop with the containers and start again in the new
attempt's. Also reported: from the kill to the new coordinator having every
task back (its `tony.am` log), adopting.

Runs alternate between the two modes; one unmeasured run warms the caches.
Replaces the "# Coordinator loss" section of bench/REPORT.md (or --out) and
prints it.

usage: build/pyenv/bin/python bench/coordinator_loss.py [--runs 3] [--tony build/bin/tony] [--htc $TONY_HTC_DIR]
"""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from report import replace_section
from yarn_launch import check_cluster, read_env

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TASKS = 3
STEP_S = 0.1
SETTLE_S = 3
TIMEOUT_S = 240
MODES = ("adopt", "rerun")


def die(msg):
    print(f"coordinator_loss: error: {msg}", file=sys.stderr)
    sys.exit(2)


def command(stamps):
    """Steps every STEP_S until the stop file shows (in whichever attempt)."""
    return (f'while [ ! -e {stamps}/stop ]; do date +%s.%N >> {stamps}/steps-$TASK_INDEX; sleep {STEP_S}; done')


def steps(stamps, i):
    p = stamps / f"steps-{i}"
    if not p.exists():
        return []
    return [float(x) for x in p.read_text().split()]


def coordinator_pids(app_id):
    """The `tony am --yarn` processes of app_id's containers on this machine."""
    prefix = f"CONTAINER_ID=container_{app_id.split('_', 1)[1]}_".encode()
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
            argv = (d / "cmdline").read_bytes()
        except OSError:
            continue
        if any(e.startswith(prefix) for e in env) and b"am\0--yarn" in argv:
            pids.append(int(d.name))
    return pids


def wait(pred, what, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    die(f"timed out waiting for {what}")


def adopted_at(htc, app_id):
    """When the second coordinator logged that its tasks were back (epoch s), or None."""
    yarn_dir = Path(read_env(htc / "cluster.env")["TONY_HTC_YARN_DIR"])
    for am in yarn_dir.glob(f"*logDir-nm-*/{app_id}/*_02_000001/am.stderr"):
        for line in am.read_text(errors="replace").splitlines():
            if "task(s) adopted" in line:
                return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S.%f").timestamp()
    return None


def run_one(tony, mode, work, n, conf, htc):
    stamps = work / f"stamps-{n}"
    stamps.mkdir()
    stamps.chmod(0o777)
    home = work / f"home-{n}"
    argv = [tony, "submit", "--backend", "yarn", "--executes", command(stamps),
            "--conf", f"tony.worker.instances={TASKS}", "--conf", "tony.worker.memory=256m",
            "--conf", "tony.am.memory=256m", "--conf", "tony.am.retry-count=0",
            "--conf", f"tony.am.recovery-timeout-ms={300000 if mode == 'adopt' else 0}"]
    env = dict(os.environ, TONY_HOME=str(home), HADOOP_CONF_DIR=str(conf))
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        jobs = home / "jobs"
        app_id = wait(lambda: next((d.name for d in jobs.iterdir()), None) if jobs.exists() else None,
                      "the application")
        wait(lambda: all(steps(stamps, i) for i in range(TASKS)), "every task's first step")
        time.sleep(SETTLE_S)  # YARN keeps only the containers its RM has seen running
        pids = wait(lambda: coordinator_pids(app_id), "the coordinator's process")
        killed = time.time()
        for pid in pids:
            os.kill(pid, signal.SIGKILL)

        def resumed():
            # every task stepped SETTLE_S past its longest pause since the kill
            pauses = []
            for i in range(TASKS):
                s = [killed] + [t for t in steps(stamps, i) if t > killed]
                gaps = [b - a for a, b in zip(s, s[1:])]
                if not gaps or s[-1] - s[1 + gaps.index(max(gaps))] < SETTLE_S:
                    return None
                pauses.append(max(gaps))
            return max(pauses)
        pause = wait(resumed, "every task to step again", timeout=TIMEOUT_S)
        back = adopted_at(htc, app_id) if mode == "adopt" else None
        (stamps / "stop").touch()
        out, err = p.communicate(timeout=TIMEOUT_S)
    finally:
        (stamps / "stop").touch()
        if p.poll() is None:
            p.kill()
            p.communicate()
    if p.returncode != 0:
        die(f"{mode}: tony submit failed (exit {p.returncode}); last output:\n{out[-3000:]}\n{err[-3000:]}")
    if mode == "adopt" and back is None:
        die(f"adopt: the second coordinator of {app_id} never logged its tasks back")
    took = back - killed if back else None
    print(f"  {mode:6}: training paused {pause:.3f} s" + (f"; every task back in {took:.3f} s" if took else ""),
          file=sys.stderr)
    return pause, took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tony", default=str(REPO / "build" / "bin" / "tony"))
    ap.add_argument("--htc", default=os.environ.get("TONY_HTC_DIR", "/work/htc"))
    ap.add_argument("--out", default=str(HERE / "REPORT.md"))
    a = ap.parse_args()
    tony = os.path.realpath(a.tony)
    if not os.access(tony, os.X_OK):
        die(f"{tony} is not an executable: build it with `make build` or pass --tony")
    htc = Path(a.htc)
    check_cluster(htc)
    conf = htc / "conf"
    work = Path(tempfile.mkdtemp(prefix="tony-coordloss-bench-"))
    os.chmod(work, 0o755)
    results = {m: [] for m in MODES}
    n = 1
    run_one(tony, MODES[0], work, n, conf, htc)  # warm the caches
    for _ in range(a.runs):
        for m in MODES:
            n += 1
            results[m].append(run_one(tony, m, work, n, conf, htc))
    shutil.rmtree(work, ignore_errors=True)

    ad = statistics.median(r[0] for r in results["adopt"])
    rr = statistics.median(r[0] for r in results["rerun"])
    back = statistics.median(r[1] for r in results["adopt"])
    lines = [
        "# Coordinator loss: the training's pause, adopted vs rerun",
        "",
        f"A {TASKS}-worker job on the YARN test cluster whose tasks step every {STEP_S} s; the coordinator's "
        "process is SIGKILLed and YARN starts the application's second attempt. The figure is the longest "
        "pause between two steps of any task from the kill on. Median of "
        f"{a.runs} alternating runs per mode; {os.cpu_count()} CPUs. Produced by `bench/coordinator_loss.py`.",
        "",
        "| | adopt (default) | rerun (`tony.am.recovery-timeout-ms=0`) | adopt / rerun |",
        "| --- | ---: | ---: | ---: |",
        f"| training paused | {ad:.3f} s | {rr:.3f} s | {ad / rr:.3f} |",
        "",
        f"Adopting, the new coordinator had every task back {back:.3f} s after the kill (median); the tasks "
        "step on meanwhile (the pause is one step's length). Rerunning, the containers go with the coordinator "
        "and the job starts over in new ones: the training resumes only from its last checkpoint, after its "
        "framework and data loading start again (a plain shell loop here: seconds to minutes for a real model, "
        "which the pause above does not include).",
        "",
        "Every run (pause; adopting, every task back):",
        "",
        "| run | adopt | rerun |",
        "| --- | ---: | ---: |",
    ]
    for i in range(a.runs):
        (p_a, b_a), (p_r, _) = results["adopt"][i], results["rerun"][i]
        lines.append(f"| {i + 1} | {p_a:.3f} s; {b_a:.3f} s | {p_r:.3f} s |")
    text = "\n".join(lines) + "\n"
    replace_section(a.out, "Coordinator loss: the training's pause, adopted vs rerun", text)
    print(text)


if __name__ == "__main__":
    main()
