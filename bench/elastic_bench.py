#!/usr/bin/env python3
"""Elastic shrink: a worker's loss -> training resumed with one fewer, tony
elastic (local backend) vs torchrun's elastic agent, on this machine, side
by side in one run.

Both run bench/elastic_train.py, PyTorch DDP over gloo with 3 nodes of one
process each, which may shrink to 2:
- tony: `tony.worker.instances=3`, `tony.worker.min-instances=2`,
  `tony.application.elastic-settle-ms=1000`; the lost worker's replacement
  cannot start (its task dir for the next attempt is taken, as on a node that
  can start no container), so the world goes on with 2;
- torchrun: three agents, `--nnodes=2:3 --nproc_per_node=1
  --rdzv_backend=c10d --max_restarts=3 --monitor_interval=0.1`, with
  `--rdzv_conf last_call_timeout=1` (the same 1 s of waiting for more nodes
  as tony's settle time; torchrun's own default is 30 s).
The loss: worker 2's node (tony: its executor's process group, the local
"container"; torchrun: the third agent's process group, not the one holding
the rendezvous store) is SIGKILLed once every process has trained 20 steps in
the world of 3. The figure: from the kill to the first step any process
finished in a world of 2, by the processes' own clocks (each appends
"time size step" after every step).

Runs alternate between the two so that drift hits both alike, after one
unmeasured run of each. Replaces the "# Elastic: ..." section of
bench/REPORT.md (or --out) and prints it.

usage: build/pyenv/bin/python bench/elastic_bench.py [--runs 5] [--tony build/bin/tony]
"""
import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from report import replace_section

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TITLE = "Elastic: a worker's loss to training resumed with one fewer, tony vs torchrun"
TRAIN_S = 60
TIMEOUT_S = 120


def die(msg):
    print(f"elastic_bench: error: {msg}", file=sys.stderr)
    sys.exit(2)


def wait(pred, what, timeout=TIMEOUT_S):
    """pred()'s first true value, polled; TimeoutError naming what after timeout s."""
    deadline = time.time() + timeout
    v = pred()
    while not v and time.time() < deadline:
        time.sleep(0.05)
        v = pred()
    if not v:
        raise TimeoutError(f"timed out waiting for {what}")
    return v


def steps(stamps):
    """(time, size, step) of every step every process finished."""
    out = []
    for f in stamps.iterdir():
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3:
                out.append((float(parts[0]), int(parts[1]), int(parts[2])))
    return out


def trained_in_3(stamps):
    """Three processes each finished 20 steps in the world of 3."""
    per = {}
    for f in stamps.iterdir():
        per[f.name] = sum(1 for line in f.read_text().splitlines() if line.split()[1:2] == ["3"])
    return len([n for n in per.values() if n >= 20]) >= 3


def resumed(stamps, since):
    later = [t for t, size, _ in steps(stamps) if size == 2 and t > since]
    return min(later) if later else None


def env_of(pid):
    try:
        raw = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    except OSError:
        return {}
    return dict(e.decode(errors="replace").split("=", 1) for e in raw if b"=" in e)


def tony_executor(home, task):
    """The pid of task's executor in attempt 0 of the job under home."""
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        env = env_of(p)
        if env.get("TONY_TASK_ID") != task or env.get("TONY_ATTEMPT") != "0" or str(home) not in env.get("TONY_HOME", ""):
            continue
        try:
            argv = open(f"/proc/{p}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if argv[1:2] == [b"executor"]:
            return int(p)
    return None


def kill_group(pid):
    """SIGKILLs pid's process group (the node: its launcher and its
    training process), or pid alone when it shares ours."""
    pgid = os.getpgid(pid)
    t = time.time()
    if pgid != os.getpgid(0):
        os.killpg(pgid, signal.SIGKILL)
    else:
        os.kill(pid, signal.SIGKILL)
    return t


def coordinator_part(am_log):
    """From the coordinator's log: the time from worker:2's end seen to the
    smaller world's gang going (the coordinator's own share of the figure)."""
    def at(line):
        return time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S")) + float(line[19:23])
    lines = am_log.read_text(errors="replace").splitlines()
    ended = next((at(ln) for ln in lines if "worker:2 ended" in ln), None)
    gang = next((at(ln) for ln in lines if "gang complete: 2 task(s)" in ln), None)
    return gang - ended if ended and gang else float("nan")


def run_tony(tony, work, n):
    stamps, home, src = work / f"stamps-{n}", work / f"home-{n}", work / f"src-{n}"
    for d in (stamps, src):
        d.mkdir()
    shutil.copy(HERE / "elastic_train.py", src)
    env = dict(os.environ, TONY_HOME=str(home))
    r = subprocess.run([tony, "submit", "--detach", "--src_dir", str(src), "--python_binary_path", sys.executable,
                        "--executes", "elastic_train.py", "--task_params", str(TRAIN_S),
                        "--shell_env", f"ELASTIC_BENCH_STAMPS={stamps}",
                        "--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=3",
                        "--conf", "tony.worker.min-instances=2", "--conf", "tony.application.elastic-settle-ms=1000",
                        "--conf", "tony.worker.memory=512m", "--conf", "tony.local.vcores=16"],
                       env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    if r.returncode != 0:
        die(f"tony submit failed (exit {r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    job = next((home / "jobs").iterdir())
    try:
        wait(lambda: trained_in_3(stamps), "tony's 3 workers training")
        (job / "attempts/1").mkdir(parents=True, exist_ok=True)
        (job / "attempts/1/worker-2").write_text("taken\n")
        pid = wait(lambda: tony_executor(home, "worker:2"), "worker:2's executor")
        lost = kill_group(pid)
        back = wait(lambda: resumed(stamps, lost), "tony's training in a world of 2")
    finally:
        subprocess.run([tony, "kill", str(job)], env=env, capture_output=True, timeout=60)
    return back - lost, coordinator_part(job / "am.log")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torchrun(work, n):
    stamps = work / f"stamps-{n}"
    stamps.mkdir()
    port = free_port()
    agents = []
    env = dict(os.environ, ELASTIC_BENCH_STAMPS=str(stamps))
    try:
        for i in range(3):
            agents.append(subprocess.Popen(
                [sys.executable, "-m", "torch.distributed.run", "--nnodes=2:3", "--nproc_per_node=1",
                 "--rdzv_backend=c10d", f"--rdzv_endpoint=127.0.0.1:{port}", f"--rdzv_id=bench{n}",
                 "--rdzv_conf", "last_call_timeout=1", "--max_restarts=3", "--monitor_interval=0.1",
                 # Debian's torchrun needs --redirects/--tee on Python 3.11 (bench/launch_overhead.py)
                 "--redirects", "1", "--tee", "1",
                 str(HERE / "elastic_train.py"), str(TRAIN_S)],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
            if i == 0:
                time.sleep(1)  # the first agent holds the rendezvous store
        wait(lambda: trained_in_3(stamps), "torchrun's 3 workers training")
        lost = kill_group(agents[2].pid)
        back = wait(lambda: resumed(stamps, lost), "torchrun's training in a world of 2")
    finally:
        for a in agents:
            try:
                os.killpg(a.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            a.wait()
    return back - lost


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tony", default=str(REPO / "build" / "bin" / "tony"))
    ap.add_argument("--out", default=str(HERE / "REPORT.md"))
    a = ap.parse_args()
    tony = os.path.realpath(a.tony)
    if not os.access(tony, os.X_OK):
        die(f"{tony} is not an executable: build it with `make build` or pass --tony")
    work = Path(tempfile.mkdtemp(prefix="tony-elastic-bench-"))
    os.chmod(work, 0o755)
    n = 0
    results = {"tony": [], "torchrun": [], "coordinator": []}
    for measured in [False] + [True] * a.runs:
        n += 2
        try:
            (t, c), r = run_tony(tony, work, n - 1), run_torchrun(work, n)
        except TimeoutError as e:
            die(f"{e} (run {n // 2}; its files are in {work})")
        print(f"  tony {t:.3f} s (coordinator {c:.3f} s)   torchrun {r:.3f} s{'' if measured else '  (warm-up)'}",
              file=sys.stderr)
        if measured:
            results["tony"].append(t)
            results["coordinator"].append(c)
            results["torchrun"].append(r)
    shutil.rmtree(work, ignore_errors=True)
    tm, rm = statistics.median(results["tony"]), statistics.median(results["torchrun"])
    lines = [
        f"# {TITLE}",
        "",
        "A PyTorch DDP training (gloo, CPU, `bench/elastic_train.py`) on 3 nodes of one process each that "
        "may shrink to 2: tony elastic on the local backend (`tony.worker.min-instances=2`, "
        "`tony.application.elastic-settle-ms=1000`; the lost worker's replacement cannot start) vs torchrun's "
        "elastic agent (`--nnodes=2:3 --rdzv_backend=c10d --max_restarts=3 --monitor_interval=0.1 "
        "--rdzv_conf last_call_timeout=1`: the same 1 s wait for more nodes; its default is 30 s). Worker 2's "
        "node (its launcher and its training process) is SIGKILLed after 20 steps in the world of 3; the "
        "figure is the time from the kill to the first step finished in the world of 2, by the processes' own "
        f"clocks. Median of {a.runs} alternating runs; {os.cpu_count()} CPUs, a machine shared with other "
        "work. Produced by `bench/elastic_bench.py`.",
        "",
        "| | tony elastic | torchrun elastic | tony / torchrun |",
        "| --- | ---: | ---: | ---: |",
        f"| loss -> training resumed with 2 | {tm:.3f} s | {rm:.3f} s | {tm / rm:.2f} |",
        "",
        f"Of tony's figure the coordinator's own part, from its log (worker 2's end seen to the gang of 2 "
        f"going), is {statistics.median(results['coordinator']):.3f} s (median); the rest is starting "
        "Python, importing torch and forming the gloo group again, which both launchers pay, and which on "
        "this shared 2-CPU machine varies from run to run with the other work's load.",
        "",
        "tony's coordinator sees the executor's end (its container), restarts the two others in place at once "
        "(on the world's account: no retry spent, no backoff), and the replacement that cannot start leaves "
        "the world as soon as its start fails; torchrun's surviving agents see their workers fail on the "
        "broken gloo ring, stop them and re-run the c10d rendezvous, which closes `last_call_timeout` after "
        "the minimum of nodes joined. Both then start new processes that re-initialise the process group.",
        "",
        "Every run:",
        "",
        "| run | tony | torchrun |",
        "| --- | ---: | ---: |",
        *(f"| {i + 1} | {t:.3f} s | {r:.3f} s |" for i, (t, r) in enumerate(zip(results["tony"], results["torchrun"]))),
        "",
        "The same loss on YARN, elastic vs an in-place restart that waits for a replacement container the "
        "cluster has no room for, is not measured here: tests/e2e/test_yarn_elastic.py shows the elastic job "
        "going on with one fewer after the settle time, where a rigid job waits for the replacement until "
        "tony.container.allocation.timeout (by default, forever).",
    ]
    text = "\n".join(lines) + "\n"
    replace_section(a.out, TITLE, text)
    print(text)


if __name__ == "__main__":
    main()
