#!/usr/bin/env python3
"""YARN launch overhead: tony vs Hadoop's DistributedShell, on the real test cluster.

Both run the same job on the shared cluster (scripts/hadoop-test-cluster, at
$TONY_HTC_DIR or /work/htc): an ApplicationMaster plus 3 task containers of
256 MB, each running `sleep 5`. DistributedShell is Hadoop's own example
application with a Java ApplicationMaster, the closest stand-in for TonY's
JVM AM. Per run we measure

- submit -> all 3 user commands started: each command writes `date +%s.%N`
  to a file in a shared temp dir as its first act; for tony also submit ->
  the client's "RUNNING: worker [0, 1, 2]" line,
- the client's wall time (start to exit),
- peak RSS (VmHWM, sampled every 100 ms) of the AM process (`tony am --yarn`
  vs the java ApplicationMaster), of one task-side launcher (`tony executor`;
  DistributedShell has none: the NodeManager's launch script runs the
  command's shell directly) and of the client (tony vs the DS Client JVM).

Runs alternate between the two so drift hits both alike; one unmeasured run
of each warms the page cache first. Replaces the "# YARN" section of
bench/REPORT.md (or --out) and prints it.

With --baseline OTHER_TONY it compares two tony binaries instead (e.g. before
and after a change to the coordinator), alternating the same way, and only
prints its table. --tasks and --memory size the job: 6 tasks of 1536 MB
cannot share fewer than the cluster's 3 NodeManagers of 4096 MB.

usage: build/pyenv/bin/python bench/yarn_launch.py [--runs 5] [--tony build/bin/tony]
         [--baseline path/to/other/tony [--cold-cache] [--title T --intro TEXT]] [--tasks 3] [--memory 256]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from report import replace_section

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
HADOOP_VERSION = "3.4.1"
# Maven Central has no distributedshell 3.4.1 (its versions jump from 3.3.5 to
# 3.4.2); 3.4.2's Client/ApplicationMaster run on the cluster's 3.4.1 jars
# given the commons-cli that 3.4.2 is built against (1.9.0; 3.4.1 ships 1.5.0).
DS_VERSION = "3.4.2"
CLI_VERSION = "1.9.0"
TASKS = 3
TIMEOUT_S = 240
DS_CLIENT = "org.apache.hadoop.yarn.applications.distributedshell.Client"
DS_AM = b"org.apache.hadoop.yarn.applications.distributedshell.ApplicationMaster"
# The cluster script's --add-opens list (scripts/hadoop-test-cluster jdk_opts).
OPENS = ["java.lang", "java.lang.reflect", "java.util", "java.util.concurrent", "java.net", "java.io",
         "java.nio", "sun.nio.ch", "java.text", "java.math", "java.util.zip", "sun.security.util",
         "sun.security.x509"]


def die(msg):
    print(f"yarn_launch: error: {msg}", file=sys.stderr)
    sys.exit(2)


def read_env(path):
    env = {}
    for line in path.read_text().splitlines():
        m = re.match(r"export (\w+)='(.*)'$", line)
        if m:
            env[m.group(1)] = m.group(2)
    return env


def check_cluster(htc):
    envf = htc / "cluster.env"
    if not envf.is_file():
        die(f"no test cluster at {htc} ({envf} missing): start one with "
            f"`scripts/hadoop-test-cluster start {htc}` or set TONY_HTC_DIR")
    env = read_env(envf)
    url = env.get("TONY_HTC_RM_WEBAPP", "") + "/ws/v1/cluster/info"
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            if b'"STARTED"' not in r.read():
                die(f"the ResourceManager at {url} is not in state STARTED")
    except OSError as e:
        die(f"the test cluster of {envf} does not answer at {url} ({e}): is it running? "
            f"(`scripts/hadoop-test-cluster status {htc}`)")
    return env


def find_jars(cache):
    m2 = cache / "m2"
    cpfile = cache / HADOOP_VERSION / "classpath.txt"
    ds = m2 / f"org/apache/hadoop/hadoop-yarn-applications-distributedshell/{DS_VERSION}" \
        / f"hadoop-yarn-applications-distributedshell-{DS_VERSION}.jar"
    cli = m2 / f"commons-cli/commons-cli/{CLI_VERSION}/commons-cli-{CLI_VERSION}.jar"
    if not cpfile.is_file():
        die(f"{cpfile} missing: the cluster's jars come from `scripts/hadoop-test-cluster start`")
    for jar, art in ((ds, f"org.apache.hadoop:hadoop-yarn-applications-distributedshell:{DS_VERSION}"),
                     (cli, f"commons-cli:commons-cli:{CLI_VERSION}")):
        if not jar.is_file():
            die(f"{jar} missing; fetch it once with\n  mvn -B -ntp -Dmaven.repo.local={m2} "
                f"dependency:get -Dartifact={art} -Dtransitive=false")
    return ds, cli, cpfile.read_text().strip()


def ds_conf(conf_src, dst, am_classpath):
    """A copy of the cluster's HADOOP_CONF_DIR whose yarn.application.classpath
    is the cluster's jars: DistributedShell's AM container gets only that (the
    test cluster's NodeManagers have no Hadoop install to point at)."""
    shutil.copytree(conf_src, dst)
    site = dst / "yarn-site.xml"
    prop = (f"  <property><name>yarn.application.classpath</name>"
            f"<value>{am_classpath}</value></property>\n</configuration>")
    site.write_text(site.read_text().replace("</configuration>", prop))


def proc_argv(pid):
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except OSError:
        return []


def proc_container(pid):
    try:
        env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    except OSError:
        return None
    for kv in env:
        if kv.startswith(b"CONTAINER_ID="):
            return kv[len(b"CONTAINER_ID="):].decode()
    return None


def hwm_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def role(kind, argv, tony_exe):
    """'am' or 'task' for an AM / task-side launcher process of `kind`, else None."""
    if kind != "ds":
        if len(argv) < 2 or os.path.basename(argv[0].decode(errors="replace")) != "tony":
            return None
        if argv[1] == b"am" and b"--yarn" in argv:
            return "am"
        if argv[1] == b"executor":
            return "task"
        return None
    if argv and argv[0].endswith(b"java") and DS_AM in argv:
        return "am"
    return None


def run_one(kind, argv, env, tony_exe, stamps):
    """Runs one client to its end; returns a dict of the figures."""
    peaks = {}  # pid -> (role, VmHWM kB)
    app = {"id": None}
    lines = []
    done = threading.Event()
    t0_wall = time.time()
    t0 = time.monotonic()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    running_at = {"t": None}

    def read():
        for line in p.stdout:
            lines.append(line)
            if app["id"] is None:
                m = re.search(r"application_\d+_\d+", line)
                if m:
                    app["id"] = m.group(0)
            m = re.search(r"RUNNING: worker \[([\d, ]+)\]", line)
            if m and running_at["t"] is None and len(m.group(1).split(",")) == TASKS:
                running_at["t"] = time.monotonic() - t0

    def sample():
        while not done.is_set():
            peaks[p.pid] = ("client", max(peaks.get(p.pid, ("", 0))[1], hwm_kb(p.pid)))
            if app["id"]:
                tag = app["id"].replace("application_", "container_", 1) + "_"
                for d in os.listdir("/proc"):
                    if not d.isdigit():
                        continue
                    r = role(kind, proc_argv(d), tony_exe)
                    if r is None:
                        continue
                    cid = proc_container(d)
                    if cid and cid.startswith(tag):
                        peaks[int(d)] = (r, max(peaks.get(int(d), ("", 0))[1], hwm_kb(d)))
            time.sleep(0.1)

    reader = threading.Thread(target=read)
    sampler = threading.Thread(target=sample)
    reader.start()
    sampler.start()
    try:
        # wait4 rather than wait: its rusage gives the client's own peak RSS
        # even when it grew after the last sample.
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                die(f"{kind} client ran past {TIMEOUT_S} s (killed; app {app['id']}); its output:\n"
                    + "".join(lines[-40:]))
            time.sleep(0.02)
    finally:
        wall = time.monotonic() - t0
        done.set()
        sampler.join()
        reader.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        die(f"{kind} client failed (exit {p.returncode}, app {app['id']}); last output:\n"
            + "".join(lines[-40:]))
    starts = sorted(float(f.read_text()) for f in stamps.iterdir())
    if len(starts) != TASKS:
        die(f"{kind}: {len(starts)} of {TASKS} task commands wrote their start time to {stamps}")
    if kind != "ds" and running_at["t"] is None:
        die("the tony client printed no 'RUNNING: worker [0, 1, 2]' line; its output:\n" + "".join(lines))
    client = max(peaks.get(p.pid, ("", 0))[1], ru.ru_maxrss)

    def top(r):
        return max((kb for rr, kb in peaks.values() if rr == r), default=0)

    if top("am") == 0:
        die(f"{kind}: no AM process of {app['id']} was seen (looked for its command line and "
            f"CONTAINER_ID in /proc)")
    return {"app": app["id"], "wall": wall, "running": running_at["t"],
            "started": starts[-1] - t0_wall, "first": starts[0] - t0_wall,
            "am": top("am"), "task": top("task"), "client": client}


def main():
    global TASKS
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tony", default=str(REPO / "build" / "bin" / "tony"))
    ap.add_argument("--htc", default=os.environ.get("TONY_HTC_DIR", "/work/htc"))
    ap.add_argument("--cache", default=os.environ.get("TONY_HADOOP_CACHE", str(
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tony-hadoop")))
    ap.add_argument("--out", default=str(HERE / "REPORT.md"))
    ap.add_argument("--baseline", help="another tony binary to compare with, instead of DistributedShell")
    ap.add_argument("--tasks", type=int, default=TASKS)
    ap.add_argument("--memory", type=int, default=256, help="MB per task container")
    ap.add_argument("--cold-cache", action="store_true",
                    help="tony's side uploads itself anew each run (a fresh tony.yarn.dist-cache): a new build's first job")
    ap.add_argument("--title", help="with --baseline: write the table as this section of --out")
    ap.add_argument("--intro", default="", help="with --title: the paragraph above the table")
    a = ap.parse_args()
    TASKS = a.tasks
    tony_exe = os.path.realpath(a.tony)
    if not os.access(tony_exe, os.X_OK):
        die(f"{tony_exe} is not an executable: build it with `make build` or pass --tony")
    htc = Path(a.htc)
    check_cluster(htc)
    conf = htc / "conf"
    work = Path(tempfile.mkdtemp(prefix="tony-yarn-bench-"))
    os.chmod(work, 0o755)
    if not a.baseline:  # DistributedShell is the baseline
        java = shutil.which("java")
        if not java:
            die("java not found on PATH: the DistributedShell client is a Java program")
        ds_jar, cli_jar, cluster_cp = find_jars(Path(a.cache))
        dsconf = work / "dsconf"
        ds_conf(conf, dsconf, f"{dsconf}:{cli_jar}:{cluster_cp}")
        java_argv = [java, "-XX:+UseSerialGC"] + [x for m in OPENS
                                                   for x in ("--add-opens", f"java.base/{m}=ALL-UNNAMED")]
    env = dict(os.environ, HADOOP_CONF_DIR=str(conf))
    results = {"tony": [], "ds": []}
    n = [0]

    def go(kind, keep):
        n[0] += 1
        stamps = work / f"stamps-{n[0]}"
        stamps.mkdir()
        stamps.chmod(0o777)
        cmd = f"date +%s.%N > {stamps}/$CONTAINER_ID; sleep 5"
        if kind != "ds":
            home = work / f"home-{n[0]}"
            home.mkdir()
            exe = tony_exe if kind == "tony" else os.path.realpath(a.baseline)
            argv = [exe, "submit", "--backend", "yarn", "--executes", cmd,
                    "--conf", f"tony.worker.instances={TASKS}", "--conf", f"tony.worker.memory={a.memory}m",
                    "--conf", "tony.am.memory=256m"]
            if kind == "tony" and a.cold_cache:
                argv += ["--conf", f"tony.yarn.dist-cache=/tmp/tony-bench-cache-{os.getpid()}-{n[0]}"]
            e = dict(env, TONY_HOME=str(home))
        else:
            argv = java_argv + ["-cp", f"{dsconf}:{cli_jar}:{cluster_cp}:{ds_jar}", DS_CLIENT,
                                "-jar", str(ds_jar), "-shell_command", cmd, "-num_containers", str(TASKS),
                                "-container_memory", str(a.memory), "-master_memory", "256",
                                "-timeout", str(TIMEOUT_S * 1000)]
            e = dict(env, HADOOP_CONF_DIR=str(dsconf))
        r = run_one(kind, argv, e, exe if kind != "ds" else tony_exe, stamps)
        print(f"  {kind:4} {r['app']}: wall {r['wall']:.2f} s, started {r['started']:.2f} s, "
              f"AM {r['am'] / 1024:.1f} MiB, client {r['client'] / 1024:.1f} MiB", file=sys.stderr)
        if keep:
            results[kind].append(r)

    other = "base" if a.baseline else "ds"
    results[other] = []
    go("tony", False)  # warm the page cache (jars, binary) for both
    go(other, False)
    for _ in range(a.runs):
        go("tony", True)
        go(other, True)
    shutil.rmtree(work, ignore_errors=True)
    if a.baseline:
        print_comparison(a, results)
        return

    def med(kind, key):
        return statistics.median(r[key] for r in results[kind])

    def mib(kb):
        return f"{kb / 1024:.1f} MiB"

    tr, ts, dsst = med("tony", "running"), med("tony", "started"), med("ds", "started")
    tw, dw = med("tony", "wall"), med("ds", "wall")
    ta, da = med("tony", "am"), med("ds", "am")
    tt = med("tony", "task")
    tc, dc = med("tony", "client"), med("ds", "client")
    lines = [
        "# YARN: tony vs DistributedShell",
        "",
        f"Same job on the shared Hadoop {HADOOP_VERSION} test cluster (`scripts/hadoop-test-cluster`: one JVM "
        f"with the ResourceManager, HDFS and 2 NodeManagers, the third NodeManager in a JVM of its own) on this machine ({os.cpu_count()} CPUs): "
        f"an AM plus {TASKS} task containers of 256 MB, each running `sleep 5`. The baseline is Hadoop's own "
        f"DistributedShell (Java ApplicationMaster, like TonY's), {DS_VERSION} jar on the cluster's "
        f"{HADOOP_VERSION} jars (Maven Central has no {HADOOP_VERSION} build of it). Median of {a.runs} "
        f"alternating runs after one unmeasured run of each. Produced by `bench/yarn_launch.py`.",
        "",
        "| measure | tony | DistributedShell | tony / DS |",
        "| --- | ---: | ---: | ---: |",
        f"| submit → client prints RUNNING for all {TASKS} workers | {tr:.2f} s | – | – |",
        f"| submit → all {TASKS} user commands started | {ts:.2f} s | {dsst:.2f} s | {ts / dsst:.2f} |",
        f"| client wall time, submit → exit | {tw:.2f} s | {dw:.2f} s | {tw / dw:.2f} |",
        f"| peak RSS of the AM process | {mib(ta)} | {mib(da)} | {ta / da:.3f} |",
        f"| peak RSS of one task-side launcher | {mib(tt)} | none | – |",
        f"| peak RSS of the client | {mib(tc)} | {mib(dc)} | {tc / dc:.3f} |",
        "",
        "Every run (start = submit → last of the user commands started):",
        "",
        "| run | tony RUNNING | tony start | tony wall | tony AM | tony executor | tony client "
        "| DS start | DS wall | DS AM | DS client |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for i, (t, d) in enumerate(zip(results["tony"], results["ds"])):
        lines.append(f"| {i + 1} | {t['running']:.2f} s | {t['started']:.2f} s | {t['wall']:.2f} s | "
                     f"{mib(t['am'])} | {mib(t['task'])} | {mib(t['client'])} | {d['started']:.2f} s | "
                     f"{d['wall']:.2f} s | {mib(d['am'])} | {mib(d['client'])} |")
    text = "\n".join(lines) + "\n"
    replace_section(a.out, "YARN: tony vs DistributedShell", text + NOTES)
    print(text + NOTES)


def print_comparison(a, results):
    """The --baseline table: medians and every run, on stdout; with
    --title also into that section of bench/REPORT.md (or --out)."""
    def med(kind, key):
        return statistics.median(r[key] for r in results[kind])

    def row(label, key, unit="s"):
        t, b = med("tony", key), med("base", key)
        if unit == "MiB":
            t, b = t / 1024, b / 1024
        ratio = f"{t / b:.2f}" if b else "–"
        return f"| {label} | {t:.2f} {unit} | {b:.2f} {unit} | {ratio} |"

    lines = [f"{TASKS} tasks x {a.memory} MB, median of {a.runs} alternating runs; "
             f"tony = `{a.tony}`, baseline = `{a.baseline}`.", "",
             "| measure | tony | baseline | ratio |", "| --- | ---: | ---: | ---: |",
             row(f"submit → client prints RUNNING for all {TASKS} workers", "running"),
             row("submit → first user command started", "first"),
             row(f"submit → all {TASKS} user commands started", "started"),
             row("client wall time", "wall"),
             row("peak RSS of the AM process", "am", "MiB"),
             row("peak RSS of one executor", "task", "MiB"),
             row("peak RSS of the client", "client", "MiB"),
             "", "| run | tony RUNNING | tony all started | baseline RUNNING | baseline all started |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for i, (t, b) in enumerate(zip(results["tony"], results["base"])):
        lines.append(f"| {i + 1} | {t['running']:.2f} s | {t['started']:.2f} s | {b['running']:.2f} s "
                     f"| {b['started']:.2f} s |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.title:
        replace_section(a.out, a.title, f"# {a.title}\n\n{a.intro}\n\n{text}")


NOTES = """
What the figures show: the end-to-end cost of starting the same small YARN job with each AM, on the same
cluster, alternating. What they do not show: the cluster is one JVM on a 2-core machine shared with other
work, so allocation and container launch are slowed alike for both, and absolute times are far from a real
cluster's; `sleep 5` does no work, so no framework setup (TF_CONFIG, rendezvous) is measured; DistributedShell
is not TonY (TonY's AM is heavier: it also runs an RPC server and a task-heartbeat protocol), so the JVM
figures are likely a lower bound on TonY's; RSS is the peak resident set (VmHWM) sampled every 100 ms, so a
short-lived peak between samples can be missed (the client's is exact: rusage at exit). tony's task-side
figure is its `tony executor` (one of 3, the largest); DistributedShell has no per-task launcher: the
NodeManager's launch script runs the shell command directly, so it has no figure to compare.
"""


if __name__ == "__main__":
    main()
