#!/usr/bin/env python3
"""The executor's own cost (issue 26 item 5), each figure beside its floor from the same run.

1. Memory of an idle `tony executor` (a real task of a local job, its user process `sleep`):
   RSS, PSS and USS (its private pages) from /proc/PID/smaps_rollup, and per shared library
   (/proc/PID/smaps), grouped by the dependency of tony that pulls it in. The floor: the task's
   own `sleep`, measured at the same moment. With a C compiler, a second floor: an idle program
   linked with only the libraries the executor's own work needs (libc, libcrypto, jansson,
   libevent), i.e. what a separate executor binary without curl, libxml2, libarchive, Kerberos and
   protobuf-c could weigh at best.
2. Startup: exec to registration (the coordinator's "started" and "registered" log lines of the
   task), and the loader alone: `tony executor` without its env (it exits at its first check)
   against /bin/true, 40 runs each in turn (medians). Both are one machine's wall time: noisy where
   other work shares its cores.
3. With --heartbeats N: the coordinator's CPU per heartbeat with N real executors at a short
   interval (/proc/PID/stat of `tony am` over a window), for each binary given (--tony, and
   --baseline-tony for a before/after in the same run, alternating), beside the floor: nothing
   but the N idle sleeps (the coordinator's CPU with heartbeats every 60 s is its idle cost), and the
   bare evhttp server of bench/scale/floor.c: its CPU per request on a new connection each, and on one
   kept connection.

usage: build/pyenv/bin/python bench/executor_cost.py [--tony build/bin/tony] [--baseline-tony OLD]
           [--heartbeats 100 --interval-ms 100 --window-s 10] [--out bench/REPORT.md]
"""
import argparse
import collections
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TICK = os.sysconf("SC_CLK_TCK")

# Which dependency of tony pulls a shared library in (the first that does;
# Debian bookworm's packages). Anything else: "other".
FAMILIES = [
    ("libc, libm, loader", ["libc.so", "libm.so", "ld-linux", "libpthread", "libdl"]),
    ("OpenSSL (libcrypto, libssl)", ["libcrypto", "libssl"]),
    ("libcurl and its protocols (nghttp2, ssh2, rtmp+GnuTLS, LDAP+SASL, idn2, psl, brotli)",
     ["libcurl", "libnghttp2", "libssh2", "librtmp", "libgnutls", "libhogweed", "libnettle", "libgmp",
      "libunistring", "libp11-kit", "libtasn1", "libffi", "libldap", "liblber", "libsasl2", "libidn2", "libpsl",
      "libbrotli"]),
    ("Kerberos (krb5, gssapi)", ["libkrb5", "libgssapi", "libk5crypto", "libcom_err", "libkeyutils", "libresolv"]),
    ("libxml2 with ICU (and libstdc++)", ["libxml2", "libicu", "libstdc++", "libgcc_s"]),
    ("libarchive and its codecs", ["libarchive", "libacl", "libzstd", "liblz4", "libbz2", "liblzma", "libz.so"]),
    ("avro-c (snappy)", ["libavro", "libsnappy"]),
    ("libevent", ["libevent"]),
    ("jansson", ["libjansson"]),
    ("protobuf-c", ["libprotobuf-c"]),
]


def family(path):
    name = os.path.basename(path)
    for fam, prefixes in FAMILIES:
        if any(name.startswith(p) for p in prefixes):
            return fam
    return "other"


def rollup(pid):
    """Rss, Pss, Uss (private clean + dirty) in KiB."""
    f = {}
    for line in open(f"/proc/{pid}/smaps_rollup"):
        parts = line.split()
        if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
            f[parts[0][:-1]] = int(parts[1])
    return {"rss": f["Rss"], "pss": f["Pss"], "uss": f.get("Private_Clean", 0) + f.get("Private_Dirty", 0)}


def per_mapping(pid, exe):
    """{group: [rss, pss, uss]} in KiB: the binary itself, heap/stack/anon, and each library family."""
    groups = collections.defaultdict(lambda: [0, 0, 0])
    cur = None
    for line in open(f"/proc/{pid}/smaps"):
        parts = line.split()
        if parts and "-" in parts[0] and not parts[0].endswith(":"):
            path = parts[5] if len(parts) > 5 else "[anon]"
            if path == exe:
                cur = "the tony binary"
            elif path.startswith("["):
                cur = "heap, stacks, anonymous"
            elif ".so" in path:
                cur = family(path)
            else:
                cur = "other"
        elif parts and parts[0] == "Rss:":
            groups[cur][0] += int(parts[1])
        elif parts and parts[0] == "Pss:":
            groups[cur][1] += int(parts[1])
        elif parts and parts[0] in ("Private_Clean:", "Private_Dirty:"):
            groups[cur][2] += int(parts[1])
    return groups


def libraries(pid):
    seen = set()
    for line in open(f"/proc/{pid}/maps"):
        parts = line.split()
        if len(parts) > 5 and ".so" in parts[5]:
            seen.add(parts[5])
    return len(seen)


def argv_of(pid):
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except OSError:
        return []


def env_of(pid):
    try:
        return open(f"/proc/{pid}/environ", "rb").read()
    except OSError:
        return b""


def procs_of(home, verb):
    """Pids of `tony <verb>` processes whose env names home."""
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            a = argv_of(p)
            if len(a) > 1 and a[1] == verb.encode() and str(home).encode() in env_of(p):
                out.append(int(p))
    return out


def children(pid):
    try:
        return [int(c) for t in os.listdir(f"/proc/{pid}/task")
                for c in open(f"/proc/{pid}/task/{t}/children").read().split()]
    except OSError:
        return []


def cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK


def wait_for(pred, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")


class Job:
    """A detached local job of n tasks running `sleep`, in a TONY_HOME of its own."""

    def __init__(self, tony, n, interval_ms, seconds):
        self.tony = tony
        self.home = Path(tempfile.mkdtemp(prefix="tony-execcost-"))
        self.env = dict(os.environ, TONY_HOME=str(self.home))
        self.env.pop("HADOOP_CONF_DIR", None)
        r = subprocess.run([tony, "submit", "--detach", "--executes", f"sleep {seconds}",
                            "--conf", f"tony.worker.instances={n}", "--conf", "tony.worker.memory=64m",
                            "--conf", f"tony.local.vcores={n + 2}", "--conf", f"tony.local.memory={n * 64 + 1024}m",
                            "--conf", f"tony.task.heartbeat-interval-ms={interval_ms}",
                            "--conf", "tony.task.max-missed-heartbeats=100"],
                           env=self.env, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise SystemExit(f"submit failed: {r.stdout}{r.stderr}")
        self.dir = next((self.home / "jobs").iterdir())

    def running(self):
        st = self.dir / "status.json"
        try:
            tasks = json.loads(st.read_text())["tasks"]
        except (OSError, ValueError, KeyError):
            return False
        return tasks and all(t["state"] == "RUNNING" for t in tasks)

    def am_pid(self):
        pids = procs_of(self.home, "am")
        return pids[0] if pids else None

    def end(self):
        subprocess.run([self.tony, "kill", self.dir.name], env=self.env, capture_output=True, timeout=60)
        end = time.time() + 20
        while time.time() < end and (procs_of(self.home, "am") or procs_of(self.home, "executor")):
            time.sleep(0.2)
        for verb in ("am", "executor"):
            for p in procs_of(self.home, verb):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        shutil.rmtree(self.home, ignore_errors=True)


def log_ms(line):
    """The time of a log line (YYYY-MM-DD HH:MM:SS.mmm ...) in ms of the day."""
    t = line.split()[1]
    h, m, s = t.split(":")
    return (int(h) * 3600 + int(m) * 60 + float(s)) * 1000


def startup_ms(job):
    """exec of worker:0's executor to its registration, from the coordinator's log."""
    started = registered = None
    for line in (job.dir / "am.log").read_text().splitlines():
        if "started worker:0 " in line and started is None:
            started = log_ms(line)
        if "registered worker:0 " in line and registered is None:
            registered = log_ms(line)
    return registered - started if started is not None and registered is not None else None


def loader_ms(argvs, runs=40):
    """(wall, CPU) ms from exec to exit of each argv, medians, run in turn
    (so that the machine's load hits all alike); the CPU (user + system,
    from wait4) is what other work on the cores does not inflate."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    wall, cpu = [[] for _ in argvs], [[] for _ in argvs]
    for _ in range(runs):
        for i, argv in enumerate(argvs):
            t0 = time.perf_counter()
            p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, _, ru = os.wait4(p.pid, 0)
            p.returncode = 0
            wall[i].append((time.perf_counter() - t0) * 1000)
            cpu[i].append((ru.ru_utime + ru.ru_stime) * 1000)
    med = lambda t: sorted(t)[len(t) // 2]  # noqa: E731
    return [(med(w), med(c)) for w, c in zip(wall, cpu)]


# An idle program that needs the libraries the executor's own work uses: the
# best case of a separate executor binary.
MINIMAL_C = r"""
#include <event2/event.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
    struct event_base *b = event_base_new();
    json_t *j = json_object();
    unsigned char md[64]; unsigned int n = 0;
    EVP_Digest("x", 1, md, &n, EVP_sha256(), NULL);
    printf("ready %u\n", n); fflush(stdout);
    pause();
    json_decref(j); event_base_free(b);
    return 0;
}
"""


def minimal_program(workdir):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    src, exe = workdir / "minimal.c", workdir / "minimal"
    src.write_text(MINIMAL_C)
    r = subprocess.run([cc, "-O2", str(src), "-o", str(exe), "-levent", "-ljansson", "-lcrypto"], capture_output=True)
    return exe if r.returncode == 0 else None


# What each dependency adds to a process's start: an empty program linked
# with it (and so with everything it needs), against one linked with none.
START_LIBS = [("nothing (libc)", []), ("libcrypto", ["-lcrypto"]), ("jansson + libevent", ["-ljansson", "-levent"]),
              ("libcurl", ["-lcurl"]), ("libxml2", ["-lxml2"]), ("libarchive", ["-larchive"]),
              ("Kerberos (krb5, gssapi)", ["-lkrb5", "-lgssapi_krb5"]), ("avro-c", ["-lavro"]),
              ("protobuf-c", ["-lprotobuf-c"])]


def start_cpu_by_library(runs=30):
    """[(label, CPU ms)] to start and exit an empty program linked with each
    of START_LIBS; [] without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return []
    work = Path(tempfile.mkdtemp(prefix="tony-execcost-start-"))
    try:
        (work / "empty.c").write_text("int main(void) { return 0; }\n")
        built = []
        for i, (label, libs) in enumerate(START_LIBS):
            exe = work / f"empty{i}"
            if subprocess.run([cc, str(work / "empty.c"), "-o", str(exe), "-Wl,--no-as-needed", *libs],
                              capture_output=True).returncode == 0:
                built.append((label, [str(exe)]))
        got = loader_ms([argv for _, argv in built], runs)
        return [(label, cpu) for (label, _), (_, cpu) in zip(built, got)]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure_memory(tony):
    job = Job(tony, 1, 1000, 120)
    try:
        wait_for(job.running, 60, "the task running")
        time.sleep(1.0)  # a few heartbeats: the executor at its steady state
        ex = procs_of(job.home, "executor")[0]
        sleeps = [c for c in children(ex) if argv_of(c)[:1] == [b"sleep"]]
        res = {"executor": rollup(ex), "groups": per_mapping(ex, os.path.realpath(tony)), "libs": libraries(ex),
               "sleep": rollup(sleeps[0]) if sleeps else None, "startup_ms": startup_ms(job)}
    finally:
        job.end()
    return res


def client_ports(port):
    """Local ports of the connections made to port that the kernel still
    knows (closed ones stay a minute in TIME-WAIT); empty without ss."""
    if not shutil.which("ss"):
        return set()
    out = subprocess.run(["ss", "-Htan", f"( dport = :{port} )"], capture_output=True, text=True).stdout
    return {line.split()[3] for line in out.splitlines() if line.strip()}


def heartbeat_cpu(tony, n, interval_ms, window_s):
    """(the coordinator's CPU in ms per second, connections opened to it per
    second) over window_s with n tasks at interval_ms."""
    job = Job(tony, n, interval_ms, 3600)
    try:
        wait_for(job.running, 180, f"{n} tasks running")
        am = job.am_pid()
        port = int(json.loads((job.dir / "am.json").read_text())["url"].rsplit(":", 1)[1])
        time.sleep(2)
        p0, c0, t0 = client_ports(port), cpu_s(am), time.monotonic()
        time.sleep(window_s)
        c1, t1 = cpu_s(am), time.monotonic()
        return (c1 - c0) / (t1 - t0) * 1000, len(client_ports(port) - p0) / (t1 - t0)
    finally:
        job.end()


def floor_us(rate, seconds, keep):
    """The floor: bench/scale/floor.c (bare evhttp, a fixed reply), its CPU
    per request at rate POSTs a second, on one kept connection or a new
    connection each; None without a C compiler."""
    import http.client
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    work = Path(tempfile.mkdtemp(prefix="tony-execcost-floor-"))
    exe = work / "floor"
    if subprocess.run([cc, "-O2", str(HERE / "scale" / "floor.c"), "-o", str(exe), "-levent"]).returncode:
        return None
    p = subprocess.Popen([str(exe)], stdout=subprocess.PIPE, text=True)
    try:
        port = int(p.stdout.readline())
        body = b'{"attempt":0,"idle_ms":0}'
        conn, done = None, 0
        c0, start = cpu_s(p.pid), time.monotonic()
        while time.monotonic() - start < seconds:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("POST", "/v1/tasks/worker/0/heartbeat", body, {"Content-Type": "application/json"})
            conn.getresponse().read()
            done += 1
            if not keep:
                conn.close()
                conn = None
            lag = start + done / rate - time.monotonic()
            if lag > 0:
                time.sleep(lag)
        return (cpu_s(p.pid) - c0) * 1e6 / max(done, 1)
    finally:
        p.kill()
        p.wait()
        shutil.rmtree(work, ignore_errors=True)


def kib(v):
    return f"{v / 1024:.1f} MiB"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tony", default=str(REPO / "build" / "bin" / "tony"))
    ap.add_argument("--baseline-tony", help="another build to measure in the same run (before)")
    ap.add_argument("--heartbeats", type=int, default=0, help="tasks for the per-heartbeat CPU (0: skip)")
    ap.add_argument("--interval-ms", type=int, default=100)
    ap.add_argument("--window-s", type=float, default=10)
    ap.add_argument("--runs", type=int, default=2, help="runs of the heartbeat figure per binary")
    ap.add_argument("--out", help="write the section into this report (e.g. bench/REPORT.md)")
    a = ap.parse_args()
    builds = [("before", a.baseline_tony)] if a.baseline_tony else []
    builds.append(("after" if a.baseline_tony else "tony", a.tony))
    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    work = Path(tempfile.mkdtemp(prefix="tony-execcost-min-"))
    floor_min = None
    exe = minimal_program(work)
    if exe:
        p = subprocess.Popen([str(exe)], stdout=subprocess.PIPE)
        p.stdout.readline()
        floor_min = (rollup(p.pid), libraries(p.pid))
        p.kill()
        p.wait()
    shutil.rmtree(work, ignore_errors=True)

    say("| | " + " | ".join(name for name, _ in builds) + " | floor: the task's `sleep` |"
        + (" floor: libc + libcrypto + jansson + libevent only |" if floor_min else ""))
    say("| --- | " + " | ".join("---:" for _ in builds) + " | ---: |" + (" ---: |" if floor_min else ""))
    mem = {name: measure_memory(path) for name, path in builds}
    sl = mem[builds[-1][0]]["sleep"]
    for key, label in (("rss", "RSS"), ("pss", "PSS"), ("uss", "USS (private)")):
        say(f"| {label} | " + " | ".join(kib(mem[n]["executor"][key]) for n, _ in builds)
            + f" | {kib(sl[key]) if sl else '?'} |" + (f" {kib(floor_min[0][key])} |" if floor_min else ""))
    say("| shared libraries mapped | " + " | ".join(str(mem[n]["libs"]) for n, _ in builds) + " | "
        + "see `ldd $(which sleep)` |" + (f" {floor_min[1]} |" if floor_min else ""))
    *got, true_ms = loader_ms([[path, "executor"] for _, path in builds] + [["/bin/true"]])
    loaders = {name: ms for (name, _), ms in zip(builds, got)}
    say("| exec to registered (coordinator's log, one task) | " + " | ".join(
        f"{mem[n]['startup_ms']:.0f} ms" if mem[n]["startup_ms"] is not None else "?" for n, _ in builds) + " | | "
        + ("|" if floor_min else ""))
    say("| exec to exit, without its env (the loader): wall, CPU | "
        + " | ".join(f"{loaders[n][0]:.1f} ms, {loaders[n][1]:.1f} ms" for n, _ in builds)
        + f" | {true_ms[0]:.1f} ms, {true_ms[1]:.1f} ms (`/bin/true`) |" + (" |" if floor_min else ""))
    say()
    last = builds[-1][0]
    say(f"Per library family ({last}; KiB: RSS / PSS / USS):")
    say()
    say("| mapped from | RSS | PSS | USS |")
    say("| --- | ---: | ---: | ---: |")
    for g, (rss, pss, uss) in sorted(mem[last]["groups"].items(), key=lambda kv: -kv[1][1]):
        say(f"| {g} | {rss} | {pss} | {uss} |")

    starts = start_cpu_by_library()
    if starts:
        say()
        say("CPU to start (exec to exit) an empty program linked with one dependency of tony, and what it needs "
            "(medians of 30):")
        say()
        say("| linked with | CPU |")
        say("| --- | ---: |")
        for label, cpu in starts:
            say(f"| {label} | {cpu:.1f} ms |")

    if a.heartbeats:
        say()
        n, iv = a.heartbeats, a.interval_ms
        rate = n * 1000 / iv
        say(f"Coordinator CPU with {n} real executors heartbeating every {iv} ms ({rate:.0f} heartbeats/s), "
            f"{a.window_s:.0f} s windows, runs alternating:")
        say()
        say("| build | coordinator CPU (% of a core), median (each run) | per heartbeat | "
            "idle coordinator, same tasks (60 s interval) | connections opened to it per second |")
        say("| --- | ---: | ---: | ---: | ---: |")
        got = collections.defaultdict(list)
        idle = collections.defaultdict(list)
        conns = collections.defaultdict(list)
        for _ in range(a.runs):
            for name, path in builds:
                cpu, opened = heartbeat_cpu(path, n, iv, a.window_s)
                got[name].append(cpu)
                conns[name].append(opened)
                idle[name].append(heartbeat_cpu(path, n, 60000, a.window_s)[0])
        # Without heartbeats both builds run the same code: the idle cost is
        # the least seen in any idle run (a busy machine only adds to it).
        rest = min(v for name, _ in builds for v in idle[name])
        for name, _ in builds:
            busy = sorted(got[name])[len(got[name]) // 2]
            each = ", ".join(f"{v / 10:.1f}" for v in got[name])
            opened = sorted(conns[name])[len(conns[name]) // 2]
            say(f"| {name} | {busy / 10:.1f} % ({each}) | {(busy - rest) * 1000 / rate:.0f} µs | {rest / 10:.1f} % "
                f"| {opened:.0f} |")
        new, kept = floor_us(min(rate, 500), a.window_s, False), floor_us(min(rate, 500), a.window_s, True)
        if new is not None:
            say(f"| floor: bare evhttp (bench/scale/floor.c), a new connection per request | | {new:.0f} µs | | |")
            say(f"| floor: bare evhttp, one kept connection | | {kept:.0f} µs | | |")
        say()
        say(f"(load average of the machine at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    if a.out:
        import sys
        sys.path.insert(0, str(HERE))
        from report import replace_section
        text = "# The executor's own cost (issue 26 item 5)\n\n" + "\n".join(lines) + "\n"
        replace_section(a.out, "The executor's own cost (issue 26 item 5)", text)


if __name__ == "__main__":
    main()
