#!/usr/bin/env python3
"""What the live web page costs on a job with hundreds of tasks.

A local job of N tasks (default 300) that all wait on a file lock (no CPU of
their own) runs while we measure, over equal windows:

- the coordinator's CPU time with no page open (the baseline), and with the
  page open in Debian's Chromium (tests/browser/ui_load.mjs, mode "measure");
- what the open page itself costs: main-thread busy time, JS heap, DOM nodes,
  and the bytes of its job polls (with how many were answered 304).

Windows alternate (idle, page, idle, page, ...) so drift hits both alike.
Writes its section of bench/REPORT.md (or --out) and prints it.

usage: build/pyenv/bin/python bench/web_ui_scale.py [--tasks 300] [--seconds 30] [--rounds 2] [--tony build/bin/tony]
"""
import argparse
import fcntl
import hashlib
import hmac
import json
import os
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from report import replace_section

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BROWSER_DIR = REPO / "tests" / "browser"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def read_token(job):
    """The job's read token, as tony derives it from the job's secret."""
    secret = (job / "secret").read_text().strip()
    return hmac.new(secret.encode(), b"tony read token v1", hashlib.sha256).hexdigest()


def wait_running(url, token, n, timeout=300):
    end = time.time() + timeout
    while time.time() < end:
        try:
            req = urllib.request.Request(url + "/v1/job", headers={"X-Tony-Token": token})
            with urllib.request.urlopen(req, timeout=5) as r:
                tasks = json.load(r)["tasks"]
            if sum(t["state"] == "RUNNING" for t in tasks) == n:
                return
        except OSError:
            pass
        time.sleep(1)
    raise SystemExit(f"the {n} tasks did not all reach RUNNING within {timeout} s")


def page_window(url, token, app, n, seconds, am_pid, chromium):
    cfg = {"url": f"{url}/?token={token}", "app_id": app, "n": n, "mode": "measure", "seconds": seconds, "chromium": chromium}
    p = subprocess.Popen(["node", str(BROWSER_DIR / "ui_load.mjs"), json.dumps(cfg)], cwd=BROWSER_DIR,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    start = None
    result = None
    for line in p.stdout:
        msg = json.loads(line)
        if msg.get("window") == "start":
            start = cpu_s(am_pid)
        elif msg.get("ok"):
            result = msg
            result["am_cpu_s"] = cpu_s(am_pid) - start
    err = p.stderr.read()
    if p.wait() != 0 or not result or start is None:
        raise SystemExit(f"ui_load.mjs failed:\n{err}")
    return result


def idle_window(seconds, am_pid):
    start = cpu_s(am_pid)
    time.sleep(seconds)
    return cpu_s(am_pid) - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=300)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--tony", default=str(REPO / "build" / "bin" / "tony"))
    ap.add_argument("--chromium", default=os.environ.get("TONY_CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument("--out", default=str(HERE / "REPORT.md"))
    a = ap.parse_args()
    n = a.tasks
    with tempfile.TemporaryDirectory(prefix="tony-uibench-") as tmp:
        tmp = Path(tmp)
        gate = open(tmp / "gate", "w")
        fcntl.flock(gate, fcntl.LOCK_EX)
        (tmp / "src").mkdir()
        (tmp / "src" / "task.sh").write_text('flock -s "$GATE" true\n')
        env = dict(os.environ, TONY_HOME=str(tmp / "home"))
        env.pop("HADOOP_CONF_DIR", None)
        r = subprocess.run([a.tony, "submit", "--detach", "--src_dir", str(tmp / "src"), "--executes", "bash task.sh",
                            "--shell_env", f"GATE={tmp / 'gate'}", "--conf", f"tony.worker.instances={n}",
                            "--conf", "tony.worker.memory=64m", "--conf", f"tony.local.vcores={2 * n}",
                            "--conf", f"tony.local.memory={n * 64 + 1024}m"], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"submit failed:\n{r.stdout}\n{r.stderr}")
        job = next((tmp / "home" / "jobs").iterdir())
        am = json.loads((job / "am.json").read_text())
        url, am_pid = am["url"], am["pid"]
        try:
            token = read_token(job)
            wait_running(url, token, n)
            time.sleep(10)  # past the start-up burst: every task has sent its first samples
            idle, pages = [], []
            for _ in range(a.rounds):
                idle.append(idle_window(a.seconds, am_pid))
                pages.append(page_window(url, token, job.name, n, a.seconds, am_pid, a.chromium))
        finally:
            gate.close()  # releases the tasks
            subprocess.run([a.tony, "kill", job.name], env=env, capture_output=True)
    med = statistics.median
    am_idle = med(idle) / a.seconds * 100
    am_page = med([p["am_cpu_s"] for p in pages]) / a.seconds * 100
    busy = med([p["busy_s"] for p in pages]) / a.seconds * 100
    script = med([p["script_s"] for p in pages]) / a.seconds * 100
    layout = med([p["layout_s"] for p in pages]) / a.seconds * 100
    kb_s = med([p["bytes"] / 1024 / a.seconds for p in pages])
    polls = sum(p["polls"] for p in pages)
    share_304 = sum(p["polls_304"] for p in pages) / polls * 100 if polls else 0
    largest = max(p["largest_body"] for p in pages) / 1024
    heap = max(p["heap_mb"] for p in pages)
    nodes = max(p["dom_nodes"] for p in pages)
    ratio = am_page / am_idle if am_idle else float("inf")
    text = f"""# Web UI on a job with hundreds of tasks

A local job of {n} tasks, all RUNNING and waiting on a file lock, on this machine ({os.cpu_count()} CPUs); Debian's Chromium (headless, playwright-core) keeps the coordinator's page open. {a.rounds} alternating windows of {a.seconds} s each, without and with the page; medians. Produced by `bench/web_ui_scale.py`.

| | no page (baseline) | page open | ratio |
| --- | ---: | ---: | ---: |
| coordinator CPU | {am_idle:.1f} % | {am_page:.1f} % | {ratio:.2f}× |

What the open page costs:

| | |
| --- | ---: |
| browser main thread busy | {busy:.1f} % of one core (scripts {script:.1f} %, layout and style {layout:.1f} %) |
| job polls | {kb_s:.0f} KiB/s; {share_304:.0f} % answered 304 (unchanged); largest answer {largest:.0f} KiB |
| JS heap | {heap:.1f} MiB |
| DOM nodes | {nodes:.0f} |
"""
    replace_section(a.out, "Web UI on a job with hundreds of tasks", text)
    print(text)


if __name__ == "__main__":
    main()
