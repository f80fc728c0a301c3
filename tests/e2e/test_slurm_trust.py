"""Trust on Slurm (issue 39), tried as an attacker would on the Slurm test
cluster (scripts/slurm-test-cluster): one tony job whose workers wait until
the tests have looked, watched three ways.

- On the wire: Slurm's RPCs (srun -> slurmd's task launch, sbatch ->
  slurmctld's submit, slurmctld -> slurmd's batch launch) go in clear unless
  the cluster encrypts them, and carry the step's and the batch job's whole
  environment. A capture of loopback (every node of the test cluster is this
  host) during the job must show the launch (the control: the task's
  TONY_TASK_ID) and nothing that signs a call or opens a read: neither the
  job's secret, nor the control key derived from it, nor the read token.
- Through Slurm's own tools, which any user of a cluster may run (the test
  runs them as root, who sees more): scontrol (job with -dd, steps, batch
  script), squeue (every field, steps), sacct (every field).
- As another local user of a node: the secret file in the job dir (on the
  shared file system, the executors' channel) is not theirs to read, nor is
  a job process's environment, nor does any file under the shared root
  they can read hold the secret."""
import hashlib
import hmac
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import READ_TOKEN_LABEL, Tony, api_key, second_user, wait_for

pytestmark = pytest.mark.slurm

ETH_P_ALL = 0x0003
PACKET_OUTGOING = getattr(socket, "PACKET_OUTGOING", 4)


class LoopbackCapture:
    """The TCP payloads to and from ports on lo, from a raw AF_PACKET socket
    (root only), kept per flow and ordered by sequence number so that a
    string split across segments is still found."""

    def __init__(self, ports):
        self.ports = set(ports)
        self.flows = {}  # (src, sport, dst, dport) -> {seq: payload}
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
        self.sock.bind(("lo", 0))
        self.sock.settimeout(0.2)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.done.is_set():
            try:
                frame, addr = self.sock.recvfrom(1 << 17)
            except socket.timeout:
                continue
            except OSError:
                return
            if addr[2] != PACKET_OUTGOING:  # lo shows each packet twice: leaving and arriving
                self._take(frame)

    def _take(self, frame):
        # lo's frames have an Ethernet header (14 bytes, zero addresses)
        kind = struct.unpack("!H", frame[12:14])[0]
        if kind == 0x0800:
            ip = frame[14:]
            end = struct.unpack("!H", ip[2:4])[0]
            proto, l4, src, dst = ip[9], (ip[0] & 0x0F) * 4, ip[12:16], ip[16:20]
        elif kind == 0x86DD:
            ip = frame[14:]
            end = 40 + struct.unpack("!H", ip[4:6])[0]
            proto, l4, src, dst = ip[6], 40, ip[8:24], ip[24:40]
        else:
            return
        if proto != 6 or len(ip) < l4 + 20:
            return
        sport, dport, seq = struct.unpack("!HHI", ip[l4:l4 + 8])
        if sport not in self.ports and dport not in self.ports:
            return
        payload = ip[l4 + (ip[l4 + 12] >> 4) * 4:end]
        if payload:
            self.flows.setdefault((src, sport, dst, dport), {})[seq] = payload

    def stop(self):
        self.done.set()
        self.thread.join(timeout=5)
        self.sock.close()

    def streams(self):
        """Each flow's bytes, in order."""
        return [b"".join(p for _, p in sorted(f.items())) for f in self.flows.values()]


def slurm_ports(conf):
    """slurmctld's port and every slurmd's, from slurm.conf."""
    text = Path(conf).read_text()
    ports = {int(p) for p in re.findall(r"^SlurmctldPort=(\d+)", text, re.M)}
    ports |= {int(p) for p in re.findall(r"^NodeName=\S+.*\bPort=(\d+)", text, re.M)}
    assert len(ports) >= 2, text
    return ports


def as_user(user, *cmd):
    return subprocess.run(["runuser", "-u", user, "--", *cmd], capture_output=True, text=True, timeout=60)


class Observed:
    """What the module's one job left to look at."""


@pytest.fixture(scope="module")
def observed(slurm, tmp_path_factory):
    """Runs the job and gathers what each test judges: the capture, the
    tools' output, the other user's tries."""
    # A root every user may enter, as a shared file system's /home is; the
    # job dir below it must keep them out.
    shared = Path(tempfile.mkdtemp(prefix="tony-slurm-shared-", dir="/tmp"))
    shared.chmod(0o755)
    release = shared / "release"
    home = tmp_path_factory.mktemp("trust-home")
    t = Tony(home)
    t.env.update(slurm.vars)
    o = Observed()
    capture = LoopbackCapture(slurm_ports(slurm.conf))
    p = t.popen("submit", "--backend", "slurm", "--executes",
                f'echo started; while [ ! -e {release} ]; do sleep 0.2; done',
                "--conf", "tony.worker.instances=2", "--conf", "tony.worker.memory=512m",
                "--conf", f"tony.slurm.staging-dir={shared}")
    slurm_id = None
    try:
        def running():
            logs = list(shared.glob("jobs/*/attempts/0/worker-*/stdout"))
            return len(logs) == 2 and all("started" in f.read_text() for f in logs)
        wait_for(running, timeout=120, what="both workers running")
        capture.stop()
        o.streams = capture.streams()
        o.job_dir = next(shared.glob("jobs/*"))
        o.secret = (o.job_dir / "secret").read_text().strip()
        slurm_id = re.search(r'"job_id"\s*:\s*"(\d+)"', (o.job_dir / "slurm.json").read_text()).group(1)
        o.slurm_id = slurm_id
        o.tools = {}
        for name, cmd in {"scontrol show job -dd": ["scontrol", "-dd", "show", "job", slurm_id],
                          "scontrol show step": ["scontrol", "-dd", "show", "step"],
                          "scontrol write batch_script": ["scontrol", "write", "batch_script", slurm_id, "-"],
                          "squeue": ["squeue", "-j", slurm_id, "-o", "%all"],
                          "squeue --steps": ["squeue", "-s", "-j", slurm_id]}.items():
            o.tools[name] = slurm.run(*cmd).stdout
        # the other user, while the job runs
        attacker = second_user()
        o.attacker = attacker
        o.read_secret = as_user(attacker, "cat", str(o.job_dir / "secret"))
        o.list_job_dir = as_user(attacker, "ls", str(o.job_dir))
        o.grep_shared = as_user(attacker, "grep", "-r", "-l", "-F", o.secret, str(shared))
        procs = slurm.job_processes(slurm_id)
        assert procs, "no process of the job found"
        o.environ_reads = {pid: as_user(attacker, "cat", f"/proc/{pid}/environ") for pid in procs}
        release.touch()
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, out + err

        def accounted():
            r = slurm.run("sacct", "-j", slurm_id, "--format=ALL", "-P", check=False)
            rows = [line for line in r.stdout.splitlines()[1:] if line.strip()]
            return r.stdout if len(rows) >= 4 and "RUNNING" not in r.stdout else None  # job, batch, 2 steps
        o.tools["sacct --format=ALL"] = wait_for(accounted, timeout=60, what="sacct's records")
        yield o
    finally:
        capture.stop() if not capture.done.is_set() else None
        release.touch()
        if p.poll() is None:
            p.kill()
            p.wait()
        if slurm_id:
            slurm.run("scancel", slurm_id, check=False)
        shutil.rmtree(shared, ignore_errors=True)


def needles(secret):
    """What must not be seen: the secret, the key that signs calls (raw and
    hex), the read token."""
    key = api_key(secret)
    token = hmac.new(secret.encode(), READ_TOKEN_LABEL, hashlib.sha256).hexdigest()
    return {"the secret": secret.encode(), "the control key": key, "the control key (hex)": key.hex().encode(),
            "the read token": token.encode(), "a TONY_SECRET entry": b"TONY_SECRET="}


def test_launch_rpc_carries_no_secret(observed):
    streams = observed.streams
    # the control: the capture holds the task launch and its env, in clear
    assert any(b"TONY_TASK_ID=worker:0" in s for s in streams), "the capture has no launch RPC of worker:0"
    assert any(b"TONY_TASK_ID=worker:1" in s for s in streams), "the capture has no launch RPC of worker:1"
    for what, needle in needles(observed.secret).items():
        found = [i for i, s in enumerate(streams) if needle in s]
        assert not found, f"{what} crosses loopback in Slurm's RPCs ({len(found)} flows)"


def test_slurm_tools_show_no_secret(observed):
    for tool, text in observed.tools.items():
        # the control: it describes the job (the batch script: its command)
        assert (" am --slurm " if "batch_script" in tool else observed.slurm_id) in text, (tool, text)
        for what, needle in needles(observed.secret).items():
            if what.startswith("the control key") and what.endswith("key"):
                continue  # raw bytes: not in a tool's text
            assert needle.decode() not in text, f"{tool} shows {what}"


def test_another_user_cannot_read_the_secret(observed):
    assert observed.read_secret.returncode != 0 and observed.secret not in observed.read_secret.stdout, \
        observed.read_secret
    assert "Permission denied" in observed.read_secret.stderr, observed.read_secret
    assert observed.list_job_dir.returncode != 0 and "Permission denied" in observed.list_job_dir.stderr
    # nothing another user can read under the shared root holds it
    assert observed.grep_shared.stdout == "", observed.grep_shared
    # nor the environment of any of the job's processes (executors, coordinator, srun)
    for pid, r in observed.environ_reads.items():
        assert r.returncode != 0 and observed.secret not in r.stdout, (pid, r)
