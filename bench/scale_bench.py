#!/usr/bin/env python3
"""Issue 26's figures: one coordinator with N tasks, beside the floor.

For each N: a real local job whose executors are simulated by
bench/scale_harness.py (it says what is real and what is not), then
- gang formation: the last registration sent -> every task holds its "go"
  (its env and cluster spec), as the simulated executors saw it;
- steady state (heartbeats at the job's interval, 1 s, the default; metrics
  every 5 s; every task's watch open): coordinator CPU (% of one core), its
  CPU per heartbeat, RSS;
- GET /v1/job (and ?metrics=0): size and latency;
- one task fails -> every task stopped (told by its watch) and restarted
  in place (holds the next attempt's "go");
- `tony kill` -> every task told; the coordinator gone;
- history: bytes on disk, `tony history <id>` wall time.
The floor: bench/scale/floor.c (evhttp, a fixed reply) under the same signed
heartbeat requests, one connection each, at the rate the coordinator got,
in the same run: its CPU per request.

usage: build/pyenv/bin/python bench/scale_bench.py [--tasks 100,1000,5000] [--tony build/bin/tony]
Writes its section of bench/REPORT.md (or --out) and prints it.
"""
import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import replace_section  # noqa: E402
from scale_harness import API, AUTH, CREDENTIALS_HAVE, REPO, ScaleJob, Signer, cpu_s, http_post, rss_bytes  # noqa: E402


def peak_rss_bytes(pid):
    """VmHWM: the most the process has held (the gang's answers are its peak)."""
    with open(f"/proc/{pid}/status") as f:
        return next((int(x.split()[1]) * 1024 for x in f if x.startswith("VmHWM:")), 0)

HERE = Path(__file__).resolve().parent
SECTION = "Scale: one coordinator, N tasks (issue 26)"


def build_floor(tmp):
    out = Path(tmp) / "floor"
    subprocess.run(["cc", "-O2", "-std=c17", "-Wall", "-Wextra", "-Werror", str(HERE / "scale" / "floor.c"), "-o",
                    str(out), "-levent"], check=True)
    return out


async def _load(port, rate, seconds, secret):
    """rate signed heartbeat POSTs a second, one connection each."""
    signer = Signer(secret)
    body = json.dumps({CREDENTIALS_HAVE: 0, API["IDLE_MS"]: 0, API["ATTEMPT"]: 0}, separators=(",", ":")).encode()
    target = f"{API['TASKS']}worker/0/{API['HEARTBEAT']}"
    done = 0
    pending = set()
    start = time.monotonic()
    k = 0

    async def one():
        nonlocal done
        auth, _ = signer.request("POST", f"127.0.0.1:{port}", target, body, int(time.time() * 1000))
        try:
            await http_post("127.0.0.1", port, target, body, {AUTH["HEADER"]: auth}, 5)
            done += 1
        except Exception:
            pass
    while time.monotonic() - start < seconds:
        due = int((time.monotonic() - start) * rate)
        while k < due:
            t = asyncio.ensure_future(one())
            pending.add(t)
            t.add_done_callback(pending.discard)
            k += 1
        await asyncio.sleep(0.01)
    if pending:
        await asyncio.wait(pending, timeout=10)
    return done


def floor_cost(floor_bin, rate, seconds, secret):
    """(CPU s per request, requests) of the bare server at rate."""
    p = subprocess.Popen([str(floor_bin)], stdout=subprocess.PIPE, text=True)
    try:
        port = int(p.stdout.readline())
        c0 = cpu_s(p.pid)
        done = asyncio.run(_load(port, rate, seconds, secret))
        return (cpu_s(p.pid) - c0) / max(done, 1), done
    finally:
        p.kill()
        p.wait()


def one_n(tony, n, floor_bin, window, workers, heartbeat_ms=1000, settle=8):
    r = {"n": n, "hb_ms": heartbeat_ms}
    with tempfile.TemporaryDirectory(prefix="tony-scale-") as tmp:
        j = ScaleJob(tony, n, tmp, workers=workers, heartbeat_ms=heartbeat_ms)
        try:
            j.submit()
            j.wait_all("reg", 0, 600)
            c_reg = cpu_s(j.am_pid)
            t_go = j.wait_all("go", 0, 600)
            r["gang_cpu_s"] = cpu_s(j.am_pid) - c_reg
            r["start_cpu_s"] = cpu_s(j.am_pid)
            r["gang_s"] = t_go - j.wait_all("reg", 0, 1)
            r["submit_to_gang_s"] = t_go - j.t_submit
            r["started_s"] = j.wait_all("reg", 0, 1) - j.t_submit
            time.sleep(0.5)
            r["go_kb"] = j.go_bytes() / n / 1024
            time.sleep(settle)  # past the first samples and the started calls
            c0, h0, t0 = cpu_s(j.am_pid), j.heartbeats(), time.monotonic()
            time.sleep(window)
            dt = time.monotonic() - t0
            r["cpu_pct"] = (cpu_s(j.am_pid) - c0) / dt * 100
            r["hb_per_s"] = (j.heartbeats() - h0) / dt
            r["load"] = os.getloadavg()[0]
            r["cpu_per_hb_us"] = (cpu_s(j.am_pid) - c0) / max(j.heartbeats() - h0, 1) * 1e6
            r["rss_mb"] = rss_bytes(j.am_pid) / 2**20
            r["hwm_mb"] = peak_rss_bytes(j.am_pid) / 2**20
            gets = [j.get("/v1/job") for _ in range(3)]
            r["job_kb"] = len(gets[0][0]) / 1024
            r["job_ms"] = statistics.median(g[1] for g in gets) * 1000
            gets = [j.get("/v1/job?metrics=0") for _ in range(3)]
            r["job0_kb"] = len(gets[0][0]) / 1024
            r["job0_ms"] = statistics.median(g[1] for g in gets) * 1000
            # the rest, as far as the job gets (a harness starved on a loaded machine gives up
            # on tasks that cannot register, which fails the attempt): what was measured stays
            try:
                t0 = time.monotonic()
                j.fail_one()
                r["restart_s"] = j.wait_all("go", 1, 600) - t0
                r["stopped_s"] = j.wait_all("stop", 0, 1, n=n - 1) - t0
                time.sleep(3)
                t0 = time.monotonic()
                kill = j.kill()
                r["kill_cmd_s"] = time.monotonic() - t0
                r["kill_rc"] = kill.returncode
                try:
                    r["told_s"] = j.wait_all("stop", 1, 300) - t0
                except RuntimeError:  # the coordinator ended first: the rest were told by their container's stop
                    told = [t for (k, _, a), t in j.log.items() if k == "stop" and a == 1]
                    r["told_s"] = max(told) - t0 if told else float("nan")
                r["told_api"] = len(j.tasks_with("stop", 1))
                j.wait_am_gone(300)
                r["am_gone_s"] = time.monotonic() - t0
                hist = j.home / "history"
                r["history_kb"] = sum(f.stat().st_size for f in hist.rglob("*") if f.is_file()) / 1024
                t0 = time.monotonic()
                h = j.tony("history", j.app_id)
                r["history_cmd_s"] = time.monotonic() - t0
                r["history_rc"] = h.returncode
            except (RuntimeError, TimeoutError) as e:
                r["failed"] = str(e).split(";")[0][:200]
                print(f"n={n}: {r['failed']}", file=sys.stderr)
            r["floor_us"], r["floor_n"] = (x * 1e6 if i == 0 else x for i, x in
                                           enumerate(floor_cost(floor_bin, max(r["hb_per_s"], 10), window, j.secret)))
        finally:
            j.close()
    r["ratio"] = r["cpu_per_hb_us"] / r["floor_us"] if r.get("floor_us") else float("nan")
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", default="100,1000,5000")
    ap.add_argument("--tony", default=str(REPO / "build" / "bin" / "tony"))
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--workers", type=int, default=0, help="harness processes (0: one per 1,000 tasks, 1 to 4)")
    ap.add_argument("--settle", type=int, default=8,
                    help="seconds from every task holding its go to the steady state's window (the harness catching up)")
    ap.add_argument("--heartbeat-ms", type=int, default=1000,
                    help="tony.task.heartbeat-interval-ms of the job (the harness's own CPU bounds its rate)")
    ap.add_argument("--out", default=str(HERE / "REPORT.md"))
    ap.add_argument("--json", default=None, help="also write the raw figures here")
    ap.add_argument("--from-json", default=None, help="write the section from figures --json saved, running nothing")
    a = ap.parse_args()
    rows = json.loads(Path(a.from_json).read_text()) if a.from_json else []
    with tempfile.TemporaryDirectory() as tmp:
        floor_bin = None if a.from_json else build_floor(tmp)
        for n in [] if a.from_json else (int(x) for x in a.tasks.split(",")):
            workers = a.workers or max(1, min(4, n // 1000))
            r = one_n(a.tony, n, floor_bin, a.window, workers, a.heartbeat_ms, a.settle)
            r["workers"] = workers
            print(json.dumps(r), flush=True)
            rows.append(r)
    if a.from_json:
        a.tasks = ",".join(str(r["n"]) for r in rows)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    text = f"""# {SECTION}

The real coordinator (`tony submit --detach`, local backend: one container process per task) with N simulated
executors: `bench/scale_harness.py` speaks the signed API for each container as `src/executor/executor.c` does
(register long poll, started, heartbeats at the job's interval (1 s, the default, unless the table says otherwise), a metrics sample every 5 s, the watch
long poll, finished, in-place restart), from {workers_text(rows)} asyncio processes; each container is a
sleeping stand-in. This machine: {os.cpu_count()} CPUs shared with other work, so the harness and the coordinator
compete; the coordinator's CPU is its own (/proc), per heartbeat it answered. The floor: `bench/scale/floor.c`, a
bare libevent evhttp server answering a fixed reply, under the same signed heartbeat requests (a connection each,
as the executor's libcurl makes them) at the rate the coordinator got, in the same run. CPU times are counted in
clock ticks (10 ms): small windows are coarse. Produced by `bench/scale_bench.py --tasks {a.tasks}`.

{render(rows)}
"""
    replace_section(a.out, SECTION, text)
    print(text)


def workers_text(rows):
    w = sorted({r.get("workers", 1) for r in rows})
    return f"{w[0]}" if len(w) == 1 else f"{w[0]} to {w[-1]} (one per 1,000 tasks)"


def render(rows):
    def line(name, key, fmt, scale=1):
        def cell(r):
            v = r.get(key)
            return "–" if v is None or v != v else fmt.format(v * scale)  # v != v: NaN, not measured
        return f"| {name} | " + " | ".join(cell(r) for r in rows) + " |"
    head = "| N tasks | " + " | ".join(f"{r['n']:,}" for r in rows) + " |\n| --- |" + " ---: |" * len(rows)
    return "\n".join([head,
                      line("gang: last registration -> all hold their spec (s)", "gang_s", "{:.2f}"),
                      line("submit -> every container started (s)", "started_s", "{:.1f}"),
                      line("submit -> all hold their spec (s)", "submit_to_gang_s", "{:.1f}"),
                      line("coordinator CPU, submit -> all hold their spec (s)", "start_cpu_s", "{:.2f}"),
                      line("coordinator CPU, last container started -> all hold their spec (s)", "gang_cpu_s",
                           "{:.2f}"),
                      line("one task's \"go\" answer (KiB)", "go_kb", "{:.1f}"),
                      line("heartbeat interval (s)", "hb_ms", "{:g}", scale=1e-3),
                      line("heartbeats answered / s (harness rate)", "hb_per_s", "{:.0f}"),
                      line("machine load average (1 min, steady state)", "load", "{:.1f}"),
                      line("coordinator CPU, steady (% of a core)", "cpu_pct", "{:.1f}"),
                      line("coordinator CPU per heartbeat (µs)", "cpu_per_hb_us", "{:.0f}"),
                      line("floor: bare evhttp CPU per request (µs)", "floor_us", "{:.0f}"),
                      line("per heartbeat / floor", "ratio", "{:.1f}×"),
                      line("coordinator RSS (MiB)", "rss_mb", "{:.0f}"),
                      line("coordinator RSS peak, VmHWM (MiB)", "hwm_mb", "{:.0f}"),
                      line("GET /v1/job (KiB)", "job_kb", "{:.0f}"),
                      line("GET /v1/job (ms)", "job_ms", "{:.0f}"),
                      line("GET /v1/job?metrics=0 (KiB)", "job0_kb", "{:.0f}"),
                      line("GET /v1/job?metrics=0 (ms)", "job0_ms", "{:.0f}"),
                      line("one failure -> all others told to stop (s)", "stopped_s", "{:.2f}"),
                      line("one failure -> all restarted in place (s)", "restart_s", "{:.2f}"),
                      line("`tony kill` -> every task told (s)", "told_s", "{:.2f}"),
                      line("`tony kill` -> coordinator gone (s)", "am_gone_s", "{:.2f}"),
                      line("history on disk (KiB)", "history_kb", "{:.0f}"),
                      line("`tony history <id>` (s)", "history_cmd_s", "{:.2f}")])


if __name__ == "__main__":
    main()
