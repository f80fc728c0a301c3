#!/usr/bin/env python3
"""The scale harness of issue 26: the REAL coordinator with N simulated executors.

What is real: `tony submit --detach` on the local backend starts `tony am` as for
any job, and the coordinator runs its production code: the local backend starts
one container (a process session) per task, the state machine, the API, history.
What is simulated, and only that: the executor. The containers' command is
`<tony> executor`, where <tony> is what the coordinator finds as its own launcher
(common/self.h): the harness builds a tree in which the real tony runs through a
copy of the system's loader, beside a bin/tony that runs every verb with the real
tony except `executor`, which announces the container (task, attempt, log dir,
pid) and sleeps. The harness then speaks the coordinator's API for each announced
container, from a few processes (asyncio), exactly as src/executor/executor.c
does: register (long poll, signed as common/apiauth.h says), started, heartbeats
at the job's interval, metrics samples, the watch long poll, finished, and the
in-place restart (register again for the attempt "next" names). A container
whose executor would exit (a finished answered otherwise) is ended, as its
executor's exit would end it. A sleeping process per task is what the local
backend costs; the executors' own CPU is the harness's, not the coordinator's.

Used by tests/e2e/test_scale.py and by bench/scale_bench.py (the figures).
"""
import asyncio
import hashlib
import hmac
import json
import multiprocessing as mp
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TICK = os.sysconf("SC_CLK_TCK")


def _defines(header, prefix):
    """{NAME: "value"} of a header's `#define <prefix>NAME "value"`: the
    contract's names come from the one header that owns them."""
    text = (REPO / "src" / "common" / header).read_text()
    return {m.group(1): m.group(2) for m in re.finditer(r'#define ' + prefix + r'(\w+) "([^"]*)"', text)}


API = _defines("amapi.h", "AM_API_")
AUTH = _defines("apiauth.h", "TONY_APIAUTH_")
TASKENV = _defines("taskenv.h", "TASKENV_")
JOBDIR = _defines("jobdir.h", "TONY_JOBDIR_")
CREDENTIALS_HAVE = re.search(r'#define TONY_HEARTBEAT_CREDENTIALS_HAVE "([^"]*)"',
                             (REPO / "src" / "backend" / "backend.h").read_text()).group(1)
READ_TOKEN_LABEL = re.search(r'"(tony read token v\d+)"', (REPO / "src" / "common" / "readtoken.c").read_text()).group(1)
STATUS_RE = re.compile(rb'"' + API["STATUS"].encode() + rb'": ?"(\w+)"')
# What the stand-in sends back as the exit code of a process stopped by SIGTERM (128 + 15).
STOPPED_CODE = 143


def cpu_s(pid):
    """utime + stime of pid, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def read_token(secret):
    return hmac.new(secret.encode(), READ_TOKEN_LABEL.encode(), hashlib.sha256).hexdigest()


# ---- The simulated executors (one asyncio loop per worker process).

class Signer:
    """common/apiauth.h's caller side: the control key, the request's MAC,
    the check of the answer's."""

    def __init__(self, secret):
        self.key = hmac.new(secret.encode(), AUTH["KEY_LABEL"].encode(), hashlib.sha256).digest()

    def request(self, method, host, target, body, ts):
        nonce = os.urandom(16).hex()
        msg = "\n".join([AUTH["REQUEST_LABEL"], method, host, target, str(ts), nonce, hashlib.sha256(body).hexdigest()])
        mac = hmac.new(self.key, msg.encode(), hashlib.sha256).hexdigest()
        return f"{AUTH['VERSION']} ts={ts} nonce={nonce} mac={mac}", nonce

    def reply_ok(self, nonce, status, body, header):
        msg = "\n".join([AUTH["REPLY_LABEL"], nonce, str(status), hashlib.sha256(body).hexdigest()])
        want = f"{AUTH['VERSION']} mac=" + hmac.new(self.key, msg.encode(), hashlib.sha256).hexdigest()
        return header is not None and hmac.compare_digest(header, want)


class CallFailed(Exception):
    pass


async def http_post(host, port, target, body, headers, timeout):
    """One POST on a connection of its own (as the executor's libcurl easy
    handle, one per call). (status, headers dict lower-cased, body)."""
    async def go():
        r, w = await asyncio.open_connection(host, port)
        try:
            head = [f"POST {target} HTTP/1.1", f"Host: {host}:{port}", "Connection: close",
                    "Content-Type: application/json", f"Content-Length: {len(body)}"]
            head += [f"{k}: {v}" for k, v in headers.items()]
            w.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            data = await r.read()
        finally:
            w.close()
        sep = data.find(b"\r\n\r\n")
        if sep < 0:
            raise CallFailed("no answer")
        lines = data[:sep].decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        payload = data[sep + 4:]
        if "content-length" in hdrs:
            payload = payload[:int(hdrs["content-length"])]
        return status, hdrs, payload
    try:
        return await asyncio.wait_for(go(), timeout)
    except (OSError, asyncio.TimeoutError, ValueError, IndexError) as e:
        raise CallFailed(f"{type(e).__name__}: {e}") from None


class SimExecutor:
    """One task's executor: the life of src/executor/executor.c, over the API."""

    def __init__(self, w, role, index, attempt, log_dir, pid):
        self.w, self.role, self.index = w, role, index
        self.attempt = self.container_attempt = attempt
        self.log_dir, self.pid = log_dir, pid
        self.last_ts = 0
        self.name = f"{role}:{index}"

    def ts(self):
        """Timestamps never go back for one sender (apiauth.h's floor)."""
        self.last_ts = max(int(time.time() * 1000), self.last_ts + 1)
        return self.last_ts

    async def call(self, verb, body, timeout=5.0, retry=True):
        body = dict(body)
        body[API["ATTEMPT"]] = self.attempt
        data = json.dumps(body, separators=(",", ":")).encode()
        target = f"{API['TASKS']}{self.role}/{self.index}/{verb}"
        w = self.w
        auth, nonce = w.signer.request("POST", f"{w.host}:{w.port}", target, data, self.ts())
        status, hdrs, out = await http_post(w.host, w.port, target, data, {AUTH["HEADER"]: auth}, timeout)
        if not w.signer.reply_ok(nonce, status, out, hdrs.get(AUTH["REPLY_HEADER"].lower())):
            raise CallFailed(f"an unsigned answer to {verb} (HTTP {status})")
        if status == 403 and retry and len(out) < 4096:
            # a call that waited in the coordinator's backlog while later ones of its task
            # were taken is refused as a replay (or out of the clock's window): the executor
            # (common/http.c) signs it again above the floor the refusal names, and so here
            why = json.loads(out)
            if why.get(AUTH["REFUSED"]) in (AUTH["REPLAY"], AUTH["CLOCK"]):
                self.last_ts = max(self.last_ts, int(why.get(AUTH["FLOOR_MS"], 0)))
                return await self.call(verb, body, timeout, retry=False)
        if len(out) > 4096:
            # a "go" (its env and cluster spec grow with n, ~100 KB at 2,000
            # tasks): the harness needs its status and size only, and a full
            # parse of n of them would make the harness, not the coordinator,
            # the bottleneck on a small machine
            m = STATUS_RE.search(out, 0, 200)
            if not m:
                raise CallFailed(f"HTTP {status} to {verb}: no status in its answer")
            return status, {API["STATUS"]: m.group(1).decode(), "bytes": len(out)}
        try:
            ans = json.loads(out)
            if isinstance(ans, dict):
                ans.setdefault("bytes", len(out))
            return status, ans
        except ValueError:
            raise CallFailed(f"HTTP {status} to {verb} without JSON") from None

    async def register(self):
        """Polls until "go" (True), or False when the job has no place for it."""
        body = {API["HOST"]: "127.0.0.1", API["PORT"]: 20000 + self.index % 40000, API["LOG_DIR"]: self.log_dir,
                API["CONTAINER_ATTEMPT"]: self.container_attempt}
        self.w.event("reg", self)
        failures = 0
        while True:
            try:
                status, ans = await self.call(API["REGISTER"], body, timeout=25.0)
                failures = 0
            except CallFailed as e:
                failures += 1
                self.w.event(f"register failed: {str(e)[:60]}", self)
                if failures > 25:
                    self.w.event("unreachable", self)
                    return False
                await asyncio.sleep(1)
                continue
            st = ans.get(API["STATUS"])
            if status == 200 and st == API["GO"]:
                self.go_bytes = ans.get("bytes", 0)
                self.w.go_bytes[0] += self.go_bytes
                self.w.event("go", self)
                return True
            if status == 200 and st == API["NEXT"]:
                self.attempt = ans[API["NEXT_ATTEMPT"]]
                self.w.event("reg", self)
                continue
            if status == 200 and st == API["WAIT"]:
                continue
            self.w.event(f"refused {status} {st} {ans.get(API['ERROR'])}", self)
            return False

    async def watch(self, stopped):
        while not stopped.is_set():
            try:
                status, ans = await self.call(API["WATCH"], {}, timeout=20.0)
            except CallFailed:
                return
            st = ans.get(API["STATUS"])
            if st in (API["STOP"], API["STALE"]):
                stopped.set()
                return
            if st != API["WAIT"]:
                return

    async def heartbeats(self, stopped):
        w = self.w
        await asyncio.sleep(w.rng_phase(self.index) * w.heartbeat_s)
        while not stopped.is_set():
            t0 = time.monotonic()
            try:
                status, ans = await self.call(API["HEARTBEAT"], {CREDENTIALS_HAVE: 0, API["IDLE_MS"]: 0})
                w.count_heartbeat()
                if ans.get(API["STATUS"]) in (API["STOP"], API["STALE"]):
                    stopped.set()
                    return
            except CallFailed:
                w.count_failure()
            await asyncio.sleep(max(0.0, w.heartbeat_s - (time.monotonic() - t0)))

    async def metrics(self, stopped):
        w = self.w
        await asyncio.sleep(w.rng_phase(self.index + 7) * w.metrics_s)
        while not stopped.is_set():
            sample = {"t_ms": int(time.time() * 1000), "rss_bytes": 50 << 20, "cpu_percent": 12.5, "gpus": 0,
                      "gpu_util_percent": None, "gpu_util_max_percent": None, "gpu_mem_bytes": None,
                      "gpu_fb_percent": None, "gpu_fb_max_percent": None}
            try:
                await self.call(API["METRICS"], sample)
            except CallFailed:
                pass
            await asyncio.sleep(w.metrics_s)

    async def run_attempt(self):
        """The user's process, simulated: it runs until the coordinator says
        stop, or the harness makes it fail. Returns its exit code."""
        stopped = asyncio.Event()
        try:  # as the executor: a lost "started" is not worth stopping for
            await self.call(API["STARTED"], {API["PID"]: self.pid})
        except CallFailed:
            self.w.count_failure()
        jobs = [asyncio.ensure_future(c) for c in (self.watch(stopped), self.heartbeats(stopped), self.metrics(stopped))]
        failing = asyncio.ensure_future(self.w.fail_wanted(self))
        done = asyncio.ensure_future(stopped.wait())
        await asyncio.wait([done, failing], return_when=asyncio.FIRST_COMPLETED)
        code = STOPPED_CODE
        if failing.done() and not stopped.is_set():
            code = 1
            self.w.event("fail", self)
        else:
            self.w.event("stop", self)
        stopped.set()
        for j in jobs + [failing, done]:
            j.cancel()
        return code

    async def life(self):
        try:
            while True:
                if not await self.register():
                    break
                code = await self.run_attempt()
                body = {API["EXIT_CODE"]: code, API["TIMED_OUT"]: False, API["LOG_MATCHES"]: [],
                        API["PEAK_MEMORY_BYTES"]: 50 << 20}
                if code:
                    body[API["STDERR_TAIL"]] = "simulated failure (bench/scale_harness.py)"
                try:
                    status, ans = await self.call(API["FINISHED"], body)
                except CallFailed:
                    break
                if status == 200 and ans.get(API["STATUS"]) == API["NEXT"]:
                    self.attempt = ans[API["NEXT_ATTEMPT"]]
                    continue
                break
        except CallFailed:
            pass
        except asyncio.CancelledError:
            return
        # the executor exits: so does its container
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        self.w.event("exit", self)


class Worker:
    """One process's share of the simulated executors: the tasks whose
    index % nworkers is its own, found in the announcements file."""

    def __init__(self, k, nworkers, announce, url, secret, heartbeat_ms, metrics_ms, events, counters, fail_task,
                 fail_now):
        self.k, self.nworkers, self.announce = k, nworkers, announce
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port
        self.signer = Signer(secret)
        self.heartbeat_s, self.metrics_s = heartbeat_ms / 1000, metrics_ms / 1000
        self.events, self.counters = events, counters
        self.fail_task, self.fail_now = fail_task, fail_now
        self.batch = []
        self.go_bytes = [0]  # bytes of the "go" answers it got (flush publishes them)

    @staticmethod
    def rng_phase(i):
        return (i * 0.6180339887) % 1.0

    def event(self, kind, x):
        self.batch.append((kind, x.name, x.attempt, time.monotonic()))

    def count_heartbeat(self):
        self.counters[2 * self.k] += 1

    def count_failure(self):
        self.counters[2 * self.k + 1] += 1

    async def fail_wanted(self, x):
        if x.name != self.fail_task:
            await asyncio.Event().wait()
        while not self.fail_now.is_set():
            await asyncio.sleep(0.05)
        self.fail_now.clear()

    async def flush(self):
        while True:
            await asyncio.sleep(0.2)
            self.counters[2 * self.nworkers + self.k] = self.go_bytes[0]
            if self.batch:
                self.events.put(self.batch)
                self.batch = []

    async def main(self):
        asyncio.ensure_future(self.flush())
        seen = 0
        lives = set()
        while True:
            with open(self.announce) as f:
                f.seek(seen)
                chunk = f.read()
            cut = chunk.rfind("\n") + 1
            seen += len(chunk[:cut].encode())
            for line in chunk[:cut].splitlines():
                task, attempt, log_dir, pid = line.split(" ")
                role, index = task.split(":")
                if int(index) % self.nworkers != self.k:
                    continue
                x = SimExecutor(self, role, int(index), int(attempt), log_dir, int(pid))
                t = asyncio.ensure_future(x.life())
                lives.add(t)
                t.add_done_callback(lives.discard)
            await asyncio.sleep(0.1)


def _worker_main(*args):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    w = Worker(*args)
    try:
        asyncio.run(w.main())
    except KeyboardInterrupt:
        pass


# ---- The tree whose bin/tony stands in for the executor.

LOADER_CANDIDATES = ["/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
                     "/lib/ld-linux-aarch64.so.1"]


def build_tree(tony_bin, root):
    """root/bin/tony: the real tony (root/lib/tony/tony, run by the loader
    beside it, so that tony_self_find names bin/tony as its launcher) for
    every verb but `executor`, which announces its container and sleeps.
    Returns (launcher, announcements file)."""
    root = Path(root)
    lib = root / "lib" / "tony"
    lib.mkdir(parents=True, exist_ok=True)
    loader = next(p for p in LOADER_CANDIDATES if os.path.exists(p))
    shutil.copy(os.path.realpath(loader), lib / Path(loader).name)
    os.symlink(os.path.realpath(tony_bin), lib / "tony")
    announce = root / "announce"
    announce.touch()
    launcher = root / "bin" / "tony"
    launcher.parent.mkdir(exist_ok=True)
    launcher.write_text(f"""#!/bin/sh
# bench/scale_harness.py: the executor is simulated (announced here, spoken for by the harness)
if [ "$1" = executor ]; then
    echo "${TASKENV['TASK_ID']} ${TASKENV['ATTEMPT']} ${TASKENV['LOG_DIR']} $$" >> {announce}
    exec sleep 100000
fi
exec {lib / Path(loader).name} {lib / 'tony'} "$@"
""")
    launcher.chmod(0o755)
    return launcher, announce


class ScaleJob:
    """A real local job of n tasks (role `worker`), its executors simulated
    by `workers` processes. Times are time.monotonic()."""

    def __init__(self, tony_bin, n, tmp, heartbeat_ms=1000, metrics_ms=5000, workers=1, fail_task="worker:0",
                 extra_conf=()):
        self.n, self.tmp = n, Path(tmp)
        self.heartbeat_ms, self.metrics_ms = heartbeat_ms, metrics_ms
        self.launcher, self.announce = build_tree(tony_bin, self.tmp / "tree")
        self.home = self.tmp / "home"
        self.env = dict(os.environ, TONY_HOME=str(self.home))
        self.env.pop("HADOOP_CONF_DIR", None)
        self.nworkers = workers
        self.fail_task = fail_task
        self.extra_conf = list(extra_conf)
        self.events = mp.Queue()
        self.counters = mp.RawArray("q", 3 * workers)  # per worker: heartbeats, failed calls; then "go" bytes
        self.fail_now = mp.Event()
        self.procs = []
        self.log = {}  # (kind, task, attempt) -> first time; ("reg"/"go"/"stop"...)
        self.last = {}  # kind -> [(t, task, attempt)]

    def tony(self, *args, timeout=300):
        return subprocess.run([str(self.launcher), *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def submit(self):
        src = self.tmp / "src"
        src.mkdir(exist_ok=True)
        conf = {"tony.worker.instances": self.n, "tony.worker.memory": "16m", "tony.worker.vcores": 1,
                "tony.local.vcores": self.n + 8, "tony.local.memory": f"{self.n * 16 + 4096}m",
                "tony.am.retry-count": 1, "tony.task.heartbeat-interval-ms": self.heartbeat_ms,
                "tony.task.metrics-interval-ms": self.metrics_ms}
        args = ["submit", "--detach", "--src_dir", str(src), "--executes", "true"]  # never run: the executor is simulated
        for k, v in conf.items():
            args += ["--conf", f"{k}={v}"]
        for kv in self.extra_conf:
            args += ["--conf", kv]
        self.t_submit = time.monotonic()
        r = self.tony(*args)
        if r.returncode != 0:
            raise RuntimeError(f"submit failed:\n{r.stdout}\n{r.stderr}")
        self.job = next((self.home / "jobs").iterdir())
        self.app_id = self.job.name
        am = json.loads((self.job / JOBDIR["AM_INFO"]).read_text())
        self.url, self.am_pid = am["url"], am["pid"]
        self.secret = (self.job / JOBDIR["SECRET"]).read_text().strip()
        self.token = read_token(self.secret)
        for k in range(self.nworkers):
            p = mp.Process(target=_worker_main, daemon=True,
                           args=(k, self.nworkers, str(self.announce), self.url, self.secret, self.heartbeat_ms,
                                 self.metrics_ms, self.events, self.counters, self.fail_task, self.fail_now))
            p.start()
            self.procs.append(p)

    # events

    def drain(self, wait=0.0):
        end = time.monotonic() + wait
        while True:
            try:
                batch = self.events.get(timeout=max(0.0, end - time.monotonic()))
            except Exception:
                return
            for kind, task, attempt, t in batch:
                self.log.setdefault((kind, task, attempt), t)
                self.last.setdefault(kind, []).append((t, task, attempt))
            if time.monotonic() >= end:
                wait = 0

    def tasks_with(self, kind, attempt):
        return {task for (k, task, a) in self.log if k == kind and a == attempt}

    def wait_all(self, kind, attempt, timeout, n=None):
        """Waits until n (all) tasks logged kind for attempt; the time of the
        last one."""
        n = self.n if n is None else n
        end = time.monotonic() + timeout
        while len(self.tasks_with(kind, attempt)) < n:
            if time.monotonic() > end:
                raise TimeoutError(f"only {len(self.tasks_with(kind, attempt))} of {n} tasks logged {kind!r} for "
                                   f"attempt {attempt} within {timeout} s")
            if self.am_pid and not os.path.exists(f"/proc/{self.am_pid}"):
                self.drain(2)  # what the executors heard before it went
                if len(self.tasks_with(kind, attempt)) >= n:
                    break
                raise RuntimeError(f"the coordinator exited with {len(self.tasks_with(kind, attempt))} of {n} tasks "
                                   f"having logged {kind!r} for attempt {attempt}; its log: {self.am_log()[-3000:]}")
            self.drain(0.2)
        return max(t for (k, task, a), t in self.log.items() if k == kind and a == attempt)

    def heartbeats(self):
        return sum(self.counters[2 * k] for k in range(self.nworkers))

    def go_bytes(self):
        """Bytes of every "go" answer received: each holds the whole spec."""
        return sum(self.counters[2 * self.nworkers + k] for k in range(self.nworkers))

    def failures(self):
        return sum(self.counters[2 * k + 1] for k in range(self.nworkers))

    # the coordinator

    def get(self, path, timeout=30):
        req = urllib.request.Request(self.url + path, headers={"X-Tony-Token": self.token})
        t0 = time.monotonic()
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
        return body, time.monotonic() - t0

    def am_log(self):
        if not hasattr(self, "job"):
            return ""
        p = self.job / "am.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def fail_one(self):
        """The chosen task's process fails (exit code 1)."""
        self.fail_now.set()

    def kill(self):
        return self.tony("kill", self.app_id)

    def wait_am_gone(self, timeout):
        end = time.monotonic() + timeout
        while os.path.exists(f"/proc/{self.am_pid}"):
            try:
                with open(f"/proc/{self.am_pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        return
            except OSError:
                return
            if time.monotonic() > end:
                raise TimeoutError(f"the coordinator still runs {timeout} s after the kill")
            time.sleep(0.1)

    def close(self):
        keep = os.environ.get("TONY_SCALE_KEEP_LOG")  # a path: the coordinator's am.log is copied there
        if keep and getattr(self, "job", None) and (self.job / "am.log").exists():
            shutil.copy(self.job / "am.log", keep)
        for p in self.procs:
            if p.is_alive():
                p.kill()
        for p in self.procs:
            p.join(5)
        if getattr(self, "am_pid", None) and os.path.exists(f"/proc/{self.am_pid}"):
            self.kill()
        # stand-ins the coordinator did not end (it was killed itself)
        try:
            for line in self.announce.read_text().splitlines():
                try:
                    os.kill(int(line.split(" ")[3]), signal.SIGKILL)
                except (ProcessLookupError, ValueError, IndexError):
                    pass
        except OSError:
            pass
