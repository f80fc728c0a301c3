#!/usr/bin/env python3
"""The gang's release, two builds side by side (issue 26): for each N and
each build, in turns, a real local job of N tasks whose executors are
simulated by bench/scale_harness.py (it says what is real and what is
not); once every task holds its "go", the coordinator's RSS peak (VmHWM)
and the gang time (the last registration sent -> every task holds its spec,
as the executors saw it), and the coordinator's CPU over that time. The job is then killed.

usage: build/pyenv/bin/python bench/scale_gang.py --before OLD/tony --after build/bin/tony [--tasks 1000,2000] [--runs 1] [--heartbeat-ms 1000]
Prints a table (markdown) and one JSON line per job.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_harness import ScaleJob, cpu_s  # noqa: E402


def vm_hwm_kib(pid):
    """The process's RSS peak (kB, /proc/<pid>/status VmHWM)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmHWM for {pid}")


def one(tony, n, heartbeat_ms=1000, timeout=300):
    with tempfile.TemporaryDirectory(prefix="tony-gang-") as tmp:
        j = ScaleJob(tony, n, tmp, workers=2, heartbeat_ms=heartbeat_ms)
        try:
            j.submit()
            j.wait_all("reg", 0, timeout)
            cpu0 = cpu_s(j.am_pid)
            t_go = j.wait_all("go", 0, timeout)
            cpu = cpu_s(j.am_pid) - cpu0
            gang = t_go - j.wait_all("reg", 0, 1)
            hwm = vm_hwm_kib(j.am_pid)
            load = os.getloadavg()[0]
            return {"n": n, "gang_s": round(gang, 2), "hwm_mib": round(hwm / 1024, 1), "load": round(load, 1),
                    "go_kib": round(j.go_bytes() / n / 1024, 1), "cpu_s": round(cpu, 2)}
        finally:
            j.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--tasks", default="1000,2000")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--heartbeat-ms", type=int, default=1000, help="the job's heartbeat interval (the harness's CPU)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds for every task to register, then to hold its go")
    a = ap.parse_args()
    rows = {}
    for n in [int(x) for x in a.tasks.split(",")]:
        for _ in range(a.runs):
            for name, tony in (("before", a.before), ("after", a.after)):
                r = one(tony, n, a.heartbeat_ms, a.timeout)
                r["build"] = name
                print(json.dumps(r), flush=True)
                rows.setdefault((n, name), []).append(r)
    print("| tasks | RSS peak before (MiB) | after | before / after | gang before (s) | after "
          "| coordinator CPU in the gang before (s) | after | before / after | load (1 min) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for n in sorted({k[0] for k in rows}):
        b, f = rows[(n, "before")], rows[(n, "after")]
        hb = statistics.median(r["hwm_mib"] for r in b)
        ha = statistics.median(r["hwm_mib"] for r in f)
        gb = statistics.median(r["gang_s"] for r in b)
        ga = statistics.median(r["gang_s"] for r in f)
        cb = statistics.median(r["cpu_s"] for r in b)
        ca = statistics.median(r["cpu_s"] for r in f)
        loads = [r["load"] for r in b + f]
        print(f"| {n:,} | {hb:.0f} | {ha:.0f} | {hb / ha:.1f} | {gb:.2f} | {ga:.2f} | {cb:.2f} | {ca:.2f} "
              f"| {cb / max(ca, 0.01):.1f} | {min(loads)} to {max(loads)} |")


if __name__ == "__main__":
    main()
