#!/usr/bin/env python3
"""On YARN, a worker's container lost while the cluster is full: time to
training resumed, tony elastic (min 2, max 3) vs the in-place restart of a
rigid job of 3, which waits for a replacement container that cannot come.

A Hadoop test cluster of this bench's own (scripts/hadoop-test-cluster,
sized as tests/e2e/test_yarn_elastic.py's: one NodeManager with room for
five 512 MB containers), started here and stopped at the end. Each job is
test_yarn_elastic's PyTorch DDP training (gloo, CPU, checkpointing) with a
coordinator and 3 workers, beside a "sleeper" application holding the fifth
container: the cluster is full. A second sleeper then waits in the ml queue
(served first), worker 2's container is SIGKILLed (its whole process group)
and the room it frees goes to that sleeper. The figure: from the kill to the
first step the remaining workers log in a new start (their stdout, polled
every 0.1 s). The elastic job goes on with 2 after its settle time; the rigid
one is given CAP seconds, then the waiting sleeper is killed, its room goes to
the replacement container, and the time from that kill to training resumed
is measured too.

Both jobs run in one cluster, one after the other. Writes the section
"# YARN elastic: ..." of bench/REPORT.md (or --out), just after the local
"# Elastic: ..." section of bench/elastic_bench.py, and prints it.

usage: build/pyenv/bin/python bench/elastic_yarn_bench.py [--runs 1] [--cap 90] [--tony build/bin/tony]
"""
import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TITLE = "YARN elastic: a worker's container lost on a full cluster, elastic vs in-place restart"
POLL_S = 0.1
START = re.compile(r"world (\d+) rank (\d+) of (\d+) .* from step (\d+)")
STEP = re.compile(r"step (\d+) loss [\d.]+ world (\d+)\n")


def die(msg):
    print(f"elastic_yarn_bench: error: {msg}", file=sys.stderr)
    sys.exit(2)


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--cap", type=float, default=90, help="seconds the rigid job is given to resume (default 90)")
    ap.add_argument("--tony", default=str(REPO / "build" / "bin" / "tony"))
    ap.add_argument("--out", default=str(HERE / "REPORT.md"))
    ap.add_argument("--cluster-dir", default=str(REPO / "build" / "htc-elastic-bench"))
    return ap.parse_args()


A = parse_args()
if not os.access(A.tony, os.X_OK):
    die(f"{A.tony} is not an executable: build it with `make build` or pass --tony")
# The e2e helpers read the binary from TONY_BIN when they are imported.
os.environ["TONY_BIN"] = os.path.realpath(A.tony)
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(HERE))

import hadoop as htc  # noqa: E402
from conftest import Tony, wait_for  # noqa: E402
from elastic_bench import TITLE as LOCAL_TITLE, kill_group  # noqa: E402
from report import replace_section  # noqa: E402
from test_yarn_elastic import (CLUSTER_ENV, SETTLE_MS, app_state, final_of, log_of,  # noqa: E402
                               submit_elastic, submit_sleeper)
from test_yarn_inplace import process_of  # noqa: E402
from test_yarn_jobs import Yarn  # noqa: E402


def starts_and_step(y, app, i):
    """worker:i's number of starts so far, and the (rank, size, from step,
    first step) of its latest start once it logged a step there."""
    log = log_of(y, app, i)
    starts = list(START.finditer(log))
    if not starts:
        return 0, None
    m = STEP.search(log, starts[-1].end())
    last = starts[-1]
    return len(starts), (last.group(2), last.group(3), last.group(4), m.group(1)) if m else None


def resumed(y, app, workers, before):
    """(worker, (rank, size, from step, step)) of the first of workers that
    logged a step in a start later than its before[worker]-th, else None."""
    for i in workers:
        n, step = starts_and_step(y, app, i)
        if n > before[i] and step:
            return i, step
    return None


def running(p, name):
    """True while the client of job name runs; dies with its output once it ended."""
    if p.poll() is None:
        return True
    out, err = p.communicate()
    die(f"{name} ended (exit {p.returncode}) before its workers trained:\n{out[-2000:]}\n{err[-2000:]}")


def wait_until(pred, deadline):
    """pred()'s first true value polled every POLL_S until deadline, and the
    time it was seen; (None, None) past the deadline."""
    while time.time() < deadline:
        v = pred()
        if v:
            return v, time.time()
        time.sleep(POLL_S)
    return None, None


def run_job(y, work, name, elastic, cap):
    """One job: its figures (seconds, None where it did not happen)."""
    fig = {}
    sleepers = []
    stop = work / f"stop-{name}"
    try:
        sleepers.append(submit_sleeper(y))
        wait_for(lambda: app_state(y, sleepers[0]) == "RUNNING", 180, what="the first sleeper running")
        before_apps = set(y.app_ids())
        # tony sets TONY_WORLD_VERSION for elastic jobs only; the script prints it
        extra = [] if elastic else ["--conf", "tony.am.retry-count=3", "--shell_env", "TONY_WORLD_VERSION=0"]
        p = submit_elastic(y, work, name, 3, 2 if elastic else 3, 1000000, *extra, stop=stop)
        app = wait_for(lambda: next(iter(set(y.app_ids()) - before_apps), None), 90, what=f"{name}'s app id")
        for i in range(3):
            wait_for(lambda: running(p, name) and (starts_and_step(y, app, i)[1] or ())[:2] == (str(i), "3"), 300,
                     what=f"{name}'s worker:{i} training as rank {i} of 3")
        sleepers.append(submit_sleeper(y))
        state = app_state(y, sleepers[1])
        if state == "RUNNING":
            die(f"the second sleeper {sleepers[1]} runs beside {name}: the cluster is not full")
        before = {i: starts_and_step(y, app, i)[0] for i in range(3)}
        victim = process_of("worker:2", app, "executor")
        if not victim:
            die(f"no executor process of {name}'s worker:2")
        fig["load"] = os.getloadavg()[0]
        lost = kill_group(victim)
        # the freed room goes to the waiting sleeper (watched beside the training)
        room = {}

        def back_or_end():
            """Training resumed, or ("ended", None) once the job ended instead."""
            return resumed(y, app, (0, 1), before) or (("ended", None) if p.poll() is not None else None)

        def watch():
            if "t" not in room and app_state(y, sleepers[1]) == "RUNNING":
                room["t"] = time.time()
            return back_or_end()
        back, at = wait_until(watch, lost + cap)
        if back and back[0] == "ended":
            return ended(fig, y, app, p)
        if "t" not in room:
            wait_until(lambda: app_state(y, sleepers[1]) == "RUNNING", lost + cap)
            room["t"] = time.time() if app_state(y, sleepers[1]) == "RUNNING" else None
        fig["room"] = room["t"] - lost if room["t"] else None
        fig["resumed"] = at - lost if back else None
        fig["world"] = back[1][1] if back else None
        fig["from_step"] = back[1][2] if back else None
        if not back:
            # room frees: the replacement container can come
            freed = time.time()
            if y.tony.run("kill", sleepers[1]).rc != 0:
                die(f"tony kill {sleepers[1]} failed")
            back, at = wait_until(back_or_end, freed + 600)
            if back and back[0] == "ended":
                return ended(fig, y, app, p)
            fig["after_free"] = at - freed if back else None
            fig["world"] = back[1][1] if back else None
            fig["from_step"] = back[1][2] if back else None
        stop.write_text("")
        out, err = p.communicate(timeout=300)
        fig["final"] = "SUCCEEDED" if p.returncode == 0 else f"exit {p.returncode}"
        fig["app"] = app
    finally:
        if "p" in locals() and p.poll() is None:
            p.kill()
            p.communicate()
        for s in sleepers:
            y.tony.run("kill", s)
        y.wait_no_containers(timeout=120)
        print(f"  {name}: {fig}", file=sys.stderr)
    return fig


def ended(fig, y, app, p):
    """fig of a job that ended before training resumed: its end and the first
    line of its diagnostics."""
    p.communicate()
    fig["final"] = final_of(y, app).get("final_status", f"exit {p.returncode}")
    fig["why"] = final_of(y, app).get("diagnostics", "").split("\n", 1)[0].strip()
    return fig


def secs(v):
    return f"{v:.1f} s" if v is not None else "–"


def place(out, text):
    """The section in out, replaced in place, or inserted just after the local
    "Elastic: ..." section where it is not there yet."""
    path = Path(out)
    old = path.read_text() if path.exists() else ""
    if f"\n# {TITLE}\n" in "\n" + old or f"# {LOCAL_TITLE}\n" not in old:
        replace_section(out, TITLE, text)
        return
    head, _, rest = old.partition(f"# {LOCAL_TITLE}\n")
    nxt = rest.find("\n# ")
    cut = len(rest) if nxt < 0 else nxt + 1
    path.write_text(head + f"# {LOCAL_TITLE}\n" + rest[:cut].rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n\n"
                    + rest[cut:])


def world(figs):
    return next((f["world"] for f in figs if f.get("world")), "–")


def median(figs, key):
    v = [f[key] for f in figs if f.get(key) is not None]
    return statistics.median(v) if v else None


def main():
    work = Path(tempfile.mkdtemp(prefix="tony-elastic-yarn-bench-"))
    os.chmod(work, 0o755)
    cdir = Path(A.cluster_dir)
    t0 = time.time()
    cluster = htc.start(cdir, env=CLUSTER_ENV)
    elastic, rigid = [], []
    try:
        for n in range(A.runs):
            for name, elastic_job, figs in (("elastic", True, elastic), ("rigid", False, rigid)):
                d = work / f"{name}-{n}"
                d.mkdir()
                y = Yarn(Tony(d / "tony-home"), cluster)
                figs.append(run_job(y, d, name, elastic_job, A.cap))
    finally:
        htc.stop(cdir)
    shutil.rmtree(work, ignore_errors=True)
    never = f"not within {A.cap:.0f} s"
    e_res, r_res = median(elastic, "resumed"), median(rigid, "resumed")
    rows = [
        ("kill -> the waiting application runs in the freed room", secs(median(elastic, "room")),
         secs(median(rigid, "room"))),
        ("kill -> training resumed (the remaining workers' next step)",
         f"{secs(e_res)} (world of {world(elastic)})" if e_res is not None else never,
         f"{secs(r_res)}" if r_res is not None else never),
        ("the waiting application killed -> training resumed", "–",
         f"{secs(median(rigid, 'after_free'))} (world of {world(rigid)})"
         if median(rigid, "after_free") is not None else "–"),
        ("the job's end (the stop file written once it trained again)",
         ", ".join(f.get("final", "–") for f in elastic),
         ", ".join(f.get("final", "–") for f in rigid)),
    ]
    loads = {name: ", ".join(f"{f['load']:.1f}" for f in figs if "load" in f)
             for name, figs in (("elastic", elastic), ("rigid", rigid))}
    lines = [
        f"# {TITLE}",
        "",
        "A worker's YARN container lost while the cluster is full, so its replacement cannot be had: "
        "tests/e2e/test_yarn_elastic.py's cluster (one NodeManager, room for five 512 MB containers, a "
        "cluster of this bench's own) and its PyTorch DDP training (gloo, CPU, checkpoints every 5 steps), "
        "a coordinator and 3 workers beside a one-container sleeper application. (a) elastic: "
        f"`tony.worker.instances=3`, `tony.worker.min-instances=2`, `tony.application.elastic-settle-ms={SETTLE_MS}`; "
        "(b) rigid: 3 workers, `tony.application.restart-mode=in-place` (the default), "
        "`tony.am.retry-count=3` (and `--shell_env TONY_WORLD_VERSION=0`: the script prints it, and tony sets it "
        "for elastic jobs only). Once every worker trains, a second sleeper waits in the ml queue (served "
        "first), worker 2's container is SIGKILLed and its room goes to that sleeper. The figure: from the kill "
        f"to the first step a remaining worker logs in a new start (their stdout polled every {POLL_S} s). "
        f"The rigid job is given {A.cap:.0f} s; then the waiting sleeper is killed and the time from that "
        f"kill to training resumed is measured. {'Median of ' + str(A.runs) + ' runs' if A.runs > 1 else 'One run'}; "
        f"{os.cpu_count()} CPUs shared with other work (load average (1 min) at the kills: elastic "
        f"{loads['elastic']}, rigid {loads['rigid']}); {time.time() - t0:.0f} s in all, the cluster's start and stop "
        "included. Produced by `bench/elastic_yarn_bench.py`.",
        "",
        "| | elastic (min 2, max 3) | rigid (3, in-place restart) |",
        "| --- | ---: | ---: |",
        *(f"| {a} | {b} | {c} |" for a, b, c in rows),
        "",
        "The elastic job waits its settle time for the replacement it keeps asking for, then restarts the two "
        "remaining workers in place as ranks 0 and 1 of 2, from the last checkpoint; the rest of its figure is "
        "starting Python, importing torch and forming the gloo group again. The rigid job's in-place restart "
        "keeps the two healthy containers and waits for the third: with nothing freeing room, until "
        "`tony.container.allocation.timeout` (by default, forever). Once room frees, the replacement container "
        "comes and the job trains again as 3.",
    ]
    early = [f"In run {i + 1} the {name} job ended before it trained again: {f['final']}, \"{f['why']}\"."
             for name, figs in (("elastic", elastic), ("rigid", rigid)) for i, f in enumerate(figs) if "why" in f]
    if any("why" in f for f in elastic):
        early.append("A remaining worker's exit (its collective broken by the lost peer) seen before or with the "
                     "lost container counts as the script's own failure, and the restart policy decides: "
                     "docs/elastic.md, \"Not yet\".")
    lines += ["", " ".join(early)] if early else []
    if A.runs > 1:
        lines += ["", "Every run (kill -> resumed; rigid: the waiting application killed -> resumed):", "",
                  "| run | elastic | rigid | rigid, room freed |", "| --- | ---: | ---: | ---: |",
                  *(f"| {i + 1} | {secs(e.get('resumed'))} | {secs(r.get('resumed')) if r.get('resumed') else never} "
                    f"| {secs(r.get('after_free'))} |" for i, (e, r) in enumerate(zip(elastic, rigid)))]
    text = "\n".join(lines) + "\n"
    place(A.out, text)
    print(text)


if __name__ == "__main__":
    main()
