#!/usr/bin/env python3
"""Restart time: a task's crash -> every task of the next attempt running,
in-place (tony.application.restart-mode=in-place) vs reallocate, on the
local backend and on the real YARN test cluster, side by side in one run.

The job: 3 workers (256 MB each), tony.am.retry-count=1. In attempt 0
worker:1 crashes (exit 1) 2 s after it started while the others sleep; in
attempt 1 every task's command writes `date +%s.%N` as its first act and
exits 0. The figure is the last of attempt 1's three start times minus the
crash time worker:1 wrote just before it exited, both read from files the
commands wrote on this machine (the test cluster's NodeManagers run here
too), so it covers the coordinator's decision, stopping the survivors,
re-forming the gang (and, reallocating, asking YARN for new containers and
starting their executors) and starting the user processes.

Runs alternate between the two modes so drift hits both alike; one
unmeasured run of each backend warms the page cache first. Replaces the
"# Restart" section of bench/REPORT.md (or --out) and prints it.

With --baseline BIN (another build of tony, e.g. one from before a change
to the restart) it measures instead the local backend's in-place restart
with both binaries, alternating, each with its default restart keys, and
replaces the "# First restart" section: the first restart comes at once
since issue 24's item 7, where it used to wait out
tony.application.restart-backoff-ms (1 s) first.

usage: build/pyenv/bin/python bench/restart.py [--runs 5] [--tony build/bin/tony]
         [--htc $TONY_HTC_DIR] [--no-yarn] [--baseline OLD_TONY]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from report import replace_section
from yarn_launch import check_cluster

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TASKS = 3
TIMEOUT_S = 240
MODES = ("in-place", "reallocate")


def die(msg):
    print(f"restart: error: {msg}", file=sys.stderr)
    sys.exit(2)


def cluster_conf(htc):
    """The test cluster's HADOOP_CONF_DIR, once its ResourceManager answers
    (or exit naming how to start it)."""
    check_cluster(htc)
    return htc / "conf"


def command(stamps):
    """Attempt 0: worker:1 crashes after 2 s, the others wait; attempt 1:
    each writes its start time first and ends."""
    return (f'if [ "$SESSION_ID" != 0 ]; then date +%s.%N > {stamps}/start-$TASK_INDEX; exit 0; fi; '
            f'if [ "$TASK_INDEX" = 1 ]; then sleep 2; date +%s.%N > {stamps}/crash; exit 1; fi; exec sleep 300')


def run_one(tony, backend, mode, work, n, conf):
    stamps = work / f"stamps-{n}"
    stamps.mkdir()
    stamps.chmod(0o777)
    home = work / f"home-{n}"
    argv = [tony, "submit", "--backend", backend, "--executes", command(stamps),
            "--conf", f"tony.worker.instances={TASKS}", "--conf", "tony.worker.memory=256m",
            "--conf", "tony.am.memory=256m", "--conf", "tony.am.retry-count=1",
            "--conf", f"tony.application.restart-mode={mode}", "--conf", "tony.local.vcores=16"]
    env = dict(os.environ, TONY_HOME=str(home))
    if conf:
        env["HADOOP_CONF_DIR"] = str(conf)
    else:
        env.pop("HADOOP_CONF_DIR", None)
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    if r.returncode != 0:
        die(f"{backend}/{mode}: tony submit failed (exit {r.returncode}); last output:\n{r.stdout[-3000:]}"
            f"\n{r.stderr[-3000:]}")
    starts = [float((stamps / f"start-{i}").read_text()) for i in range(TASKS)
              if (stamps / f"start-{i}").exists()]
    if len(starts) != TASKS or not (stamps / "crash").exists():
        die(f"{backend}/{mode}: {len(starts)} of {TASKS} tasks of attempt 1 wrote their start time to {stamps}")
    took = max(starts) - float((stamps / "crash").read_text())
    print(f"  {backend:5} {mode:10}: crash -> all {TASKS} running in {took:.3f} s", file=sys.stderr)
    return took


def compare(a, tony):
    """--baseline: the first restart, local and in place, by two builds."""
    base = os.path.realpath(a.baseline)
    if not os.access(base, os.X_OK):
        die(f"--baseline {base} is not an executable")
    work = Path(tempfile.mkdtemp(prefix="tony-restart-bench-"))
    os.chmod(work, 0o755)
    bins = {"baseline": base, "this build": tony}
    results = {k: [] for k in bins}
    n = 0
    for b in bins.values():  # warm the page cache
        n += 1
        run_one(b, "local", "in-place", work, n, None)
    for _ in range(a.runs):
        for k, b in bins.items():
            n += 1
            results[k].append(run_one(b, "local", "in-place", work, n, None))
    shutil.rmtree(work, ignore_errors=True)
    old, new = statistics.median(results["baseline"]), statistics.median(results["this build"])
    lines = [
        "# First restart: at once vs after the backoff",
        "",
        f"The job of "Restart" above on the local backend, in place, with each build's default restart keys: "
        f"the time from worker:1's crash to the last of the next attempt's {TASKS} user commands running. "
        f"The baseline waits `tony.application.restart-backoff-ms` (1 s) before every restart; this build "
        "restarts at once after a first failure and backs off only from the second quick failure in a row "
        "(`tony.application.restart-healthy-ms`). Median of "
        f"{a.runs} alternating runs per build; {os.cpu_count()} CPUs. Produced by "
        f"`bench/restart.py --no-yarn --baseline OLD_TONY` (baseline: {a.baseline_name}).",
        "",
        "| | baseline | this build | this build / baseline |",
        "| --- | ---: | ---: | ---: |",
        f"| crash -> all {TASKS} running again | {old:.3f} s | {new:.3f} s | {new / old:.2f} |",
        "",
        "Every run:",
        "",
        "| run | baseline | this build |",
        "| --- | ---: | ---: |",
    ]
    for i in range(a.runs):
        lines.append(f"| {i + 1} | {results['baseline'][i]:.3f} s | {results['this build'][i]:.3f} s |")
    text = "\n".join(lines) + "\n"
    replace_section(a.out, "First restart: at once vs after the backoff", text)
    print(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tony", default=str(REPO / "build" / "bin" / "tony"))
    ap.add_argument("--htc", default=os.environ.get("TONY_HTC_DIR", "/work/htc"))
    ap.add_argument("--no-yarn", action="store_true", help="the local backend only")
    ap.add_argument("--out", default=str(HERE / "REPORT.md"))
    ap.add_argument("--baseline", help="another tony binary: compare the first restart's time with it (local)")
    ap.add_argument("--baseline-name", default="the given binary", help="what the baseline is, for the report")
    a = ap.parse_args()
    tony = os.path.realpath(a.tony)
    if not os.access(tony, os.X_OK):
        die(f"{tony} is not an executable: build it with `make build` or pass --tony")
    if a.baseline:
        compare(a, tony)
        return
    backends = {"local": None}
    if not a.no_yarn:
        backends["yarn"] = cluster_conf(Path(a.htc))
    work = Path(tempfile.mkdtemp(prefix="tony-restart-bench-"))
    os.chmod(work, 0o755)
    results = {(b, m): [] for b in backends for m in MODES}
    n = 0
    for b, conf in backends.items():  # warm the page cache
        n += 1
        run_one(tony, b, MODES[0], work, n, conf)
    for _ in range(a.runs):
        for b, conf in backends.items():
            for m in MODES:
                n += 1
                results[(b, m)].append(run_one(tony, b, m, work, n, conf))
    shutil.rmtree(work, ignore_errors=True)

    lines = [
        "# Restart: crash to every task running again, in place vs reallocated",
        "",
        f"A {TASKS}-worker job whose worker:1 crashes once (`tony.am.retry-count=1`); the time from the "
        f"crash to the last of the next attempt's {TASKS} user commands running, by the commands' own "
        f"clocks. Median of {a.runs} alternating runs per mode; {os.cpu_count()} CPUs. Produced by "
        "`bench/restart.py`.",
        "",
        "| backend | in-place | reallocate | in-place / reallocate |",
        "| --- | ---: | ---: | ---: |",
    ]
    for b in backends:
        ip, ra = statistics.median(results[(b, "in-place")]), statistics.median(results[(b, "reallocate")])
        name = "YARN test cluster" if b == "yarn" else "local"
        lines.append(f"| {name} | {ip:.3f} s | {ra:.3f} s | {ip / ra:.2f} |")
    lines += ["", "In place the executors stop their processes when the coordinator answers their watch and start the next attempt's in the same containers; reallocating, every container is stopped and asked for again (on YARN: the ResourceManager's allocation, the NodeManager's launch and localization, the executor's start). On the local backend a container is a process, as cheap to start again as to keep."]
    lines += ["", "Every run:", "",
              "| run | " + " | ".join(f"{b} {m}" for b in backends for m in MODES) + " |",
              "| --- |" + " ---: |" * (len(backends) * len(MODES))]
    for i in range(a.runs):
        lines.append(f"| {i + 1} | " + " | ".join(f"{results[(b, m)][i]:.3f} s" for b in backends for m in MODES)
                     + " |")
    text = "\n".join(lines) + "\n"
    replace_section(a.out, "Restart: crash to every task running again, in place vs reallocated", text)
    print(text)


if __name__ == "__main__":
    main()
