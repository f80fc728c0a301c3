#!/usr/bin/env python3
"""Launch overhead: tony vs torchrun, side by side in the same run.

Both start the same 3-rank PyTorch DDP job (bench/ddp_hello.py: join a gloo
group, all-reduce, leave) on this machine. For each launcher we measure

- wall time from the command's start to its exit (the job's own work, mostly
  `import torch`, is the same for both), and
- the peak resident memory of the launcher's own processes, sampled every
  20 ms: for tony the client, coordinator and executors (every process whose
  executable is the tony binary); for torchrun its elastic agent (the
  `torch.distributed.run` process).

Runs alternate between the launchers so drift hits both alike. Writes
bench/REPORT.md (or --out) and prints it.

usage: build/pyenv/bin/python bench/launch_overhead.py [--runs 5] [--tony build/bin/tony]
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from report import replace_section

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PY = "/usr/bin/python3"  # Debian's torch imports under the system interpreter


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def launcher_pids(kind, tony_exe):
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            if kind == "tony":
                if os.readlink(f"/proc/{p}/exe") == tony_exe:
                    pids.append(int(p))
            else:
                cmd = open(f"/proc/{p}/cmdline", "rb").read()
                if b"torch.distributed.run" in cmd:
                    pids.append(int(p))
        except OSError:
            continue
    return pids


def measure(kind, argv, env, tony_exe):
    peak = 0
    done = threading.Event()

    def sample():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, sum(rss_kb(p) for p in launcher_pids(kind, tony_exe)))
            time.sleep(0.02)

    t = threading.Thread(target=sample)
    t.start()
    t0 = time.perf_counter()
    r = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    done.set()
    t.join()
    if r.returncode != 0:
        raise SystemExit(f"{kind} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return wall, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ranks", type=int, default=3)
    ap.add_argument("--tony", default=str(REPO / "build" / "bin" / "tony"))
    ap.add_argument("--out", default=str(HERE / "REPORT.md"))
    a = ap.parse_args()
    tony_exe = os.path.realpath(a.tony)
    home = tempfile.mkdtemp(prefix="tony-bench-")
    env = dict(os.environ, TONY_HOME=home)
    env.pop("HADOOP_CONF_DIR", None)
    tony_argv = [tony_exe, "submit", "--src_dir", str(HERE), "--python_binary_path", PY,
                 "--executes", "ddp_hello.py", "--conf", "tony.application.framework=pytorch",
                 "--conf", f"tony.worker.instances={a.ranks}", "--conf", "tony.worker.memory=1g",
                 "--conf", "tony.local.vcores=16", "--conf", "tony.am.wait-client-signal-stop-timeout-sec=0"]
    # Debian's torchrun needs --redirects/--tee on Python 3.11 (see shared docs).
    torchrun_argv = [PY, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={a.ranks}",
                     "--redirects", "1", "--tee", "1", str(HERE / "ddp_hello.py")]
    results = {"tony": [], "torchrun": []}
    measure("torchrun", torchrun_argv, env, tony_exe)  # warm the page cache for both
    for _ in range(a.runs):
        results["tony"].append(measure("tony", tony_argv, env, tony_exe))
        results["torchrun"].append(measure("torchrun", torchrun_argv, env, tony_exe))

    def med(kind, i):
        return statistics.median(r[i] for r in results[kind])

    tw, tr = med("tony", 0), med("torchrun", 0)
    mw, mr = med("tony", 1), med("torchrun", 1)
    cpu = os.cpu_count()
    lines = [
        "# Launch overhead: tony vs torchrun",
        "",
        f"Same {a.ranks}-rank PyTorch DDP job (`bench/ddp_hello.py`), local machine ({cpu} CPUs), "
        f"median of {a.runs} alternating runs. Produced by `bench/launch_overhead.py`.",
        "",
        "| measure | tony | torchrun | tony / torchrun |",
        "| --- | ---: | ---: | ---: |",
        f"| wall time, start to exit | {tw:.2f} s | {tr:.2f} s | {tw / tr:.2f} |",
        f"| peak RSS of the launcher's own processes | {mw / 1024:.1f} MiB | {mr / 1024:.1f} MiB | {mw / mr:.3f} |",
        "",
        "tony's figure covers its client, coordinator and one executor per rank together; "
        "torchrun's covers its elastic agent (one Python process). Neither counts the ranks themselves.",
        "",
        "Every run:",
        "",
        "| run | tony wall | tony RSS | torchrun wall | torchrun RSS |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for i, (t, r) in enumerate(zip(results["tony"], results["torchrun"])):
        lines.append(f"| {i + 1} | {t[0]:.2f} s | {t[1] / 1024:.1f} MiB | {r[0]:.2f} s | {r[1] / 1024:.1f} MiB |")
    text = "\n".join(lines) + "\n"
    replace_section(a.out, "Launch overhead: tony vs torchrun", text)
    print(text)
    subprocess.run(["rm", "-rf", home])


if __name__ == "__main__":
    main()
