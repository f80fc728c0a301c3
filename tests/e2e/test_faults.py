"""Faults injected for real into running jobs on the local backend (issue
11): the network between one executor and the coordinator cut (nftables
drops that executor's packets, matched by a cgroup the test moves it
into), and the file system under the job dirs full (a small tmpfs). The
job must see it, say what happened, restart where it may, and leave no
process behind. (The coordinator SIGKILLed: test_portal's LOST test; a
NodeManager JVM killed: test_yarn_faults.py.)"""
import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import alive, job_processes, wait_for

SMALL = ["--conf", "tony.worker.memory=256m"]


def process_env(pid):
    try:
        raw = open(f"/proc/{pid}/environ", "rb").read()
    except OSError:
        return {}
    return dict(kv.split("=", 1) for kv in raw.decode(errors="replace").split("\0") if "=" in kv)


def executor_of(home, task, attempt):
    """The pid of a task's executor (not its user process) in an attempt."""
    for pid in job_processes(home):
        env = process_env(pid)
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if env.get("TONY_TASK_ID") == task and env.get("TONY_ATTEMPT") == str(attempt) and b"executor" in argv[1:2]:
            return pid
    return None


def descendants(pid):
    """pid and every process under it, now."""
    children = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                ppid = int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(p))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def cgroup2_mount():
    for line in open("/proc/mounts"):
        dev, where, kind = line.split()[:3]
        if kind == "cgroup2":
            return Path(where)
    return None


@contextlib.contextmanager
def network_cut(port):
    """A cgroup (v2) whose processes' TCP packets to port are dropped by an
    nftables rule of a table of our own; yields the cgroup's dir (write a
    pid to its cgroup.procs to cut that process off). Needs root, nft and a
    cgroup2 mount; both are removed afterwards."""
    if os.geteuid() != 0 or not shutil.which("nft") or not cgroup2_mount():
        pytest.skip("needs root, nft (Debian: nftables) and a cgroup2 mount")
    name = f"tony-cut-{os.getpid()}-{port}"
    group = cgroup2_mount() / name
    group.mkdir()
    # nft names the cgroup by its path under /sys/fs/cgroup (the cgroup2
    # mount may be below it, as /sys/fs/cgroup/unified on hybrid systems)
    path = str(group.relative_to("/sys/fs/cgroup"))
    table = name.replace("-", "_")
    nft = ["nft", "-f", "-"]
    subprocess.run(nft, check=True, text=True, input=(
        f"table inet {table} {{\n chain out {{\n  type filter hook output priority 0; policy accept;\n"
        f'  socket cgroupv2 level 1 "{path}" tcp dport {port} drop\n }}\n}}\n'))
    try:
        yield group
    finally:
        subprocess.run(["nft", "delete", "table", "inet", table], check=False)
        end = time.time() + 10
        while time.time() < end:
            try:
                group.rmdir()
                break
            except OSError:  # processes still in it (dying)
                time.sleep(0.2)


def drop_connections(port, pid=None):
    """Tears down (ss -K) the established TCP connections to port on this
    machine, or only those pid holds; returns how many."""
    out = subprocess.run(["ss", "-Htnp", "state", "established", f"( dport = :{port} )"], check=True,
                         capture_output=True, text=True).stdout
    mine = [line.split()[2].rsplit(":", 1)[1] for line in out.splitlines()
            if line.strip() and (pid is None or f"pid={pid}," in line)]
    for local in mine:
        subprocess.run(["ss", "-K", "-Htn", "state", "established", f"( dport = :{port} and sport = :{local} )"],
                       check=True, capture_output=True)
    return len(mine)


def coordinator_port_once_running(job):
    """The port of a job's coordinator, once every task of the job runs."""
    wait_for(lambda: (job / "status.json").exists() and
             all(t["state"] == "RUNNING" for t in json.loads((job / "status.json").read_text())["tasks"]), 60,
             what="tasks running")
    return int(json.loads((job / "am.json").read_text())["url"].rsplit(":", 1)[1])


def test_executor_cut_off_from_the_coordinator(tony):
    """worker:1's executor can no longer reach the coordinator: its
    heartbeats stop arriving, the coordinator declares it lost after 5
    missed ones, stops it and restarts the job (tony.am.retry-count=1),
    whose second attempt succeeds; nothing of the cut task is left."""
    r = tony.submit("--detach", "--executes", "sleep 12", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.task.max-missed-heartbeats=5", "--conf", "tony.am.retry-count=1", *SMALL)
    assert r.rc == 0, r
    job = r.job_dir()
    port = coordinator_port_once_running(job)
    executor = executor_of(tony.home, "worker:1", 0)
    assert executor, "worker:1's executor"
    tree = descendants(executor)
    assert len(tree) >= 2, tree  # the executor and the user's sleep
    with network_cut(port) as group:
        (group / "cgroup.procs").write_text(str(executor))
        # A socket stays in the cgroup its process was in when it was made:
        # the executor's kept connections are cut as a partition would cut them.
        drop_connections(port, executor)
        cut_at = time.time()
        # lost after 5 missed heartbeats (1 s apart), then stopped
        wait_for(lambda: not any(alive(p) for p in tree), 30, what="the cut task's processes gone")
        gone_after = time.time() - cut_at
        wait_for(lambda: json.loads((job / "status.json").read_text()).get("final_status") not in (None, "UNDEFINED"),
                 90, what="the job's end")
    st = json.loads((job / "status.json").read_text())
    assert st["final_status"] == "SUCCEEDED" and st["attempt"] == 1, st
    assert 4 <= gone_after <= 25, gone_after
    am_log = (job / "am.log").read_text()
    assert "Task with id [worker:1] has missed [5] heartbeats" in am_log, am_log[-3000:]
    assert (job / "attempts" / "1" / "worker-1").is_dir()


@contextlib.contextmanager
def small_tmpfs(where, size="16m"):
    """A tmpfs of `size` mounted on where (created), unmounted afterwards
    with what was in it copied back onto the disk below (the tony fixture
    reads the logs after the test)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)], check=True)
    saved = where.parent / (where.name + ".saved")
    try:
        yield where
    finally:
        shutil.copytree(where, saved, symlinks=True, ignore=shutil.ignore_patterns("filler"))
        subprocess.run(["umount", "-l", str(where)], check=True)
        shutil.copytree(saved, where, symlinks=True, dirs_exist_ok=True)


def fill(directory):
    """Writes a file until the file system says it is full."""
    with open(directory / "filler", "wb") as f:
        chunk = b"\0" * (1 << 20)
        try:
            while True:
                f.write(chunk)
                f.flush()
        except OSError as e:
            assert e.errno == 28, e  # ENOSPC


def test_job_dir_file_system_full(tony):
    """The file system of the job dirs and the history (TONY_HOME) fills up
    while a job runs (its three workers fail and it restarts three times,
    so the coordinator has plenty to write afterwards). The coordinator
    keeps going and ends the job; the client says the state could not be
    saved and why; the history stays whole: the .jhist ends at its last
    complete event (readable to the end by another Avro reader), the event
    log at its last complete line, and `tony history` lists the job as
    FAILED, not LOST or damaged."""
    import fastavro

    with small_tmpfs(tony.home) as home:
        p = tony.popen("submit", "--conf", "tony.local.vcores=16", "--executes", "sleep 2; exit 1",
                       "--conf", "tony.worker.instances=3", "--conf", "tony.am.retry-count=3", *SMALL)
        jobs = home / "jobs"
        job = wait_for(lambda: next(iter(jobs.glob("*/status.json")), None), 60, what="the job's status").parent
        wait_for(lambda: json.loads((job / "status.json").read_text())["state"] == "RUNNING", 60, what="running")
        fill(home)
        out, err = p.communicate(timeout=120)
        text = out + err
        assert p.returncode == 1, text
        assert "FAILED" in out and "the coordinator exited before the job ended" not in text, text
        assert "could not save the job's state" in text and "No space left on device" in text, text
        wait_for(lambda: not job_processes(tony.home), 20, what="every process of the job gone")

        listing = tony.run("history", check_rc=0).out
        line = next(x for x in listing.splitlines() if x.startswith(job.name))
        assert line.split()[-1] == "FAILED", listing
        assert tony.run("history", job.name).rc == 0
        jhist = next(home.glob(f"history/finished/*/*/*/{job.name}/*.jhist"))
        with open(jhist, "rb") as f:
            records = list(fastavro.reader(f))  # raises on a cut block
        assert records and records[0]["type"] == "APPLICATION_INITED", records[:1]
        events = (jhist.parent / "events.jsonl").read_text()
        assert events.endswith("\n")
        assert all(json.loads(x)["type"] for x in events.splitlines())


def client_ports(port):
    """The local ports of every TCP connection made to port on this machine
    that the kernel still knows, closed ones too (the side that closes first
    keeps it in TIME-WAIT for a minute): how many connections were opened."""
    out = subprocess.run(["ss", "-Htan", f"( dport = :{port} )"], check=True, capture_output=True, text=True).stdout
    return {line.split()[3].rsplit(":", 1)[1] for line in out.splitlines() if line.strip()}


def test_executor_keeps_its_connection_and_reconnects(tony):
    """An executor's calls share one kept connection per thread (its
    heartbeats, its watch long poll), not a new one per heartbeat; when its
    connections are torn down (ss -K, as a coordinator dropping them would)
    its next heartbeat opens a new one unasked: no heartbeat goes missing,
    and the job runs to its end."""
    if os.geteuid() != 0 or not shutil.which("ss"):
        pytest.skip("ss -K (iproute2) as root tears the connections down")
    r = tony.submit("--detach", "--executes", "sleep 9", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.task.heartbeat-interval-ms=200", "--conf", "tony.task.max-missed-heartbeats=5",
                    *SMALL)
    assert r.rc == 0, r
    job = r.job_dir()
    port = coordinator_port_once_running(job)
    before = client_ports(port)
    time.sleep(2)  # 10 heartbeats of each task: 20 connections when each made its own
    opened = client_ports(port) - before
    assert len(opened) <= 2, f"{len(opened)} connections opened for 20 heartbeats"
    before = client_ports(port)  # first: a heartbeat may reconnect at once
    assert drop_connections(port) >= 2, "no connection of the executors to tear down"
    time.sleep(2)
    reopened = client_ports(port) - before
    # each executor's heartbeats reconnected (once), and keep that connection
    assert 2 <= len(reopened) <= 4, reopened
    wait_for(lambda: json.loads((job / "status.json").read_text()).get("final_status") not in (None, "UNDEFINED"),
             60, what="the job's end")
    st = json.loads((job / "status.json").read_text())
    assert st["final_status"] == "SUCCEEDED" and st["attempt"] == 0, st
    assert "missed" not in (job / "am.log").read_text()
