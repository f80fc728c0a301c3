#!/usr/bin/env python3
"""Tasks in images against bare tasks, the same local job (2 workers that
note when they start, then sleep), alternating, on this machine:

- submit -> all tasks running: from `tony submit` to the last worker's
  user process writing its start time (host and containers share a clock);
- memory per task beside the user's process: the RSS of what tony and the
  runtime run for a task (bare: its executor; in an image: the runtime's
  `run`, conmon, the container's init and its executor), sampled while the
  workers sleep.

Needs podman and the test image (scripts/test-image). Replaces the "# Images"
section of bench/REPORT.md (or --out) and prints it.

usage: build/pyenv/bin/python bench/images.py [--tony build/bin/tony] [--runs 3] [--image NAME]
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from report import replace_section

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
IMAGE = "localhost/tony-test:1"

WORKER = """import os, time
open("started", "w").write(repr(time.time()))
time.sleep(6)
"""


def processes():
    """pid -> (ppid, cmdline, rss_kb) of every live process."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = open(f"/proc/{pid}/stat").read()
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
            rss = 0
            for line in open(f"/proc/{pid}/status"):
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        out[int(pid)] = (ppid, cmd, rss)
    return out


def task_overhead_kb(job_dir, image):
    """What runs for the job's tasks besides their user processes, in kB of
    RSS, and how many tasks: everything below the coordinator and, in
    images, each container's conmon and what runs under it."""
    procs = processes()
    am = [p for p, (_, cmd, _) in procs.items() if " am " in f" {cmd} " and str(job_dir) in cmd]
    roots = set(p for p, (pp, _, _) in procs.items() if pp in am)
    if image:
        roots |= set(p for p, (_, cmd, _) in procs.items() if cmd.startswith("/usr/bin/conmon") and job_dir.name in cmd)
    seen, todo = set(), list(roots)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        todo += [c for c, (pp, _, _) in procs.items() if pp == p]
    user = [p for p in seen if "sleep.py" in procs[p][1] and "executor" not in procs[p][1]]
    return sum(procs[p][2] for p in seen if p not in user), len(user)


def run_once(tony, home, src, image):
    conf = ["--conf", "tony.local.vcores=16", "--conf", "tony.local.memory=16g", "--conf", "tony.worker.instances=2",
            "--conf", "tony.worker.memory=1g"]
    if image:
        conf += ["--conf", "tony.docker.enabled=true", "--conf", f"tony.docker.containers.image={image}"]
    env = dict(os.environ, TONY_HOME=str(home))
    jobs = home / "jobs"
    before = set(jobs.iterdir()) if jobs.exists() else set()
    t0 = time.time()
    p = subprocess.Popen([tony, "submit", "--src_dir", str(src), "--executes", "sleep.py", "--python_binary_path",
                          "python3", *conf], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    job = None
    while job is None and time.time() - t0 < 60:
        time.sleep(0.05)
        if jobs.exists():
            job = max(set(jobs.iterdir()) - before, default=None)
    starts = []
    mem = []
    while time.time() - t0 < 60 and p.poll() is None:
        time.sleep(0.1)
        files = list(job.glob("attempts/0/worker-*/work/started"))
        if len(files) == 2 and not starts:
            try:
                starts = [float(f.read_text()) for f in files]
            except ValueError:
                continue
        if starts and len(mem) < 10:
            kb, n = task_overhead_kb(job, image)
            if n == 2:
                mem.append(kb / n)
    p.wait(timeout=120)
    assert p.returncode == 0, f"the {'image' if image else 'bare'} job failed: {job}"
    return max(starts) - t0, max(mem) if mem else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--image", default=IMAGE, help="built (or reused) by scripts/test-image")
    ap.add_argument("--tony", default=str(REPO / "build" / "bin" / "tony"))
    ap.add_argument("--out", default=str(HERE / "REPORT.md"))
    a = ap.parse_args()
    subprocess.run([str(REPO / "scripts" / "test-image"), a.image], check=True, stdout=subprocess.DEVNULL)
    rows = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        (src / "sleep.py").write_text(WORKER)
        # One TONY_HOME each, as a user has: the first job in images packs
        # this build's tony into its cache (reported apart), later ones reuse it.
        cold = run_once(a.tony, Path(tmp) / "home-image", src, a.image)
        for i in range(a.runs):
            for image in (False, True):
                home = Path(tmp) / f"home-{'image' if image else 'bare'}"
                rows[image].append(run_once(a.tony, home, src, a.image if image else None))
    med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for k, v in rows.items()}
    lines = [
        "# Images",
        "",
        "Same local job (2 workers, each notes its start and sleeps 6 s), bare and in the test image "
        f"(`{a.image}` from `scripts/test-image`, podman {podman_version()} with runc), alternating, median of "
        f"{a.runs}. "
        "Produced by `bench/images.py`.",
        "",
        "| measure | bare | in the image | image - bare |",
        "| --- | ---: | ---: | ---: |",
        f"| submit → both user processes started | {med[False][0]:.2f} s | {med[True][0]:.2f} s | "
        f"{med[True][0] - med[False][0]:+.2f} s |",
        f"| RSS beside each user process | {med[False][1] / 1024:.1f} MiB | {med[True][1] / 1024:.1f} MiB | "
        f"{(med[True][1] - med[False][1]) / 1024:+.1f} MiB |",
        "",
        f"The first job in images of a build (of a TONY_HOME) also packs the self-contained tony into the jobs "
        f"root's cache/: {cold[0]:.2f} s to both started.",
        "",
        "Bare, a task is its executor; in an image it is the runtime's `podman run` (kept in the foreground as the "
        "task's process), conmon, the container's init and the executor. The submit includes the image checks "
        "(`image inspect` and one `/bin/sh` run per distinct image).",
        "",
        "| run | bare start | image start | bare RSS | image RSS |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for i in range(a.runs):
        b, m = rows[False][i], rows[True][i]
        lines.append(f"| {i + 1} | {b[0]:.2f} s | {m[0]:.2f} s | {b[1] / 1024:.1f} MiB | {m[1] / 1024:.1f} MiB |")
    text = "\n".join(lines) + "\n"
    replace_section(a.out, "Images", text)
    print(text)


def podman_version():
    out = subprocess.run(["podman", "--version"], capture_output=True, text=True).stdout.split()
    return out[-1] if out else "?"


if __name__ == "__main__":
    main()
