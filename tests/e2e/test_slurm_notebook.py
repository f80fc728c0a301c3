"""`tony notebook --backend slurm` on the Slurm test cluster (issue 25, item
3): the Jupyter server of the job's Python runs as a job step (srun) and
listens on the host its executor registered (the node's name: Slurm sets no
NM_HOST), the coordinator in the job's batch step proxies to it there. A
kernel is started over REST and a cell run over the kernel's WebSocket
through the proxy, both refused without the job's read token, and `tony kill`
leaves no Jupyter, no kernel (which Jupyter starts in a session of its own,
outside the step's process group) and no Slurm job or step. The test
cluster's nodes are all this machine, so the path across nodes is the same
code, here on one host. Local: test_notebook.py; YARN: test_yarn_notebook.py."""
import json
import socket
import subprocess

import pytest

from conftest import job_processes, second_user, wait_for
from slurm import ACTIVE
from test_notebook import api, jupyter_port, parts, run_cell, secret_folder, start_notebook, websockets
from test_slurm_jobs import stony  # noqa: F401 - the fixture

pytestmark = pytest.mark.slurm


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""  # ended meanwhile


def test_slurm_notebook_kernel_through_the_proxy_and_kill(stony, slurm):
    proc, url = start_notebook(stony, "--backend", "slurm", "--conf", "tony.notebook.idle-timeout=5m")
    jid = None
    try:
        base, netloc, token = parts(url)
        wait_for(lambda: api(base, token, "/api/status")[0] == 200, timeout=60, what="Jupyter behind the proxy")
        # without the token (or with another): the coordinator refuses, for every method
        assert api(base, "0" * 64, "/api/status")[0] == 403
        for method, body in (("GET", None), ("POST", {"name": "python3"}), ("DELETE", None)):
            assert api(base, None, "/api/kernels", method, body)[0] == 403, method
        code, job = api(base, token, "/v1/job", prefix="")
        assert code == 200, job
        # the Slurm job tony submitted (the job dir's record of it)
        jid = json.loads((stony.home / "jobs" / job["app_id"] / "slurm.json").read_text())["job_id"]
        assert slurm.job(jid).get("JobState") == "RUNNING", slurm.job(jid)
        code, kernel = api(base, token, "/api/kernels", "POST", {"name": "python3"})
        assert code == 201, kernel
        # the kernel runs in the job's notebook step, on a node of the cluster
        where = run_cell(netloc, token, kernel["id"],
                         "import os; print(os.environ['SLURM_JOB_ID'], os.environ['SLURM_STEP_ID'], "
                         "os.environ['SLURMD_NODENAME'])").split()
        assert where[0] == jid and where[1].isdigit() and where[2] in slurm.nodes, where
        with pytest.raises(websockets.InvalidStatus) as e:
            websockets.connect(f"ws://{netloc}/notebook/api/kernels/{kernel['id']}/channels", open_timeout=10)
        assert e.value.response.status_code == 403
        # Jupyter listens where its task registered: the node's host name
        # (no NM_HOST on Slurm), which is where the proxy connects; there
        # it wants its token from anyone who finds the port
        task = next(t for t in job["tasks"] if t["role"] == "notebook")
        assert task["host"] == socket.gethostname(), task
        assert "tensorboard_url" not in job, job  # Jupyter's port is no TensorBoard's
        port = jupyter_port(slurm.job_processes(jid))
        probe = subprocess.run(["runuser", "-u", second_user(), "--", "curl", "-s", "-o", "/dev/null", "-w",
                                "%{http_code}", f"http://{task['host']}:{port}/notebook/{secret_folder(token)}/api/kernels"],
                               capture_output=True, text=True, timeout=20)
        assert probe.stdout == "403", probe
        kernels = [p for p in slurm.job_processes(jid) if b"ipykernel" in cmdline(p)]
        assert kernels, "the kernel runs as a process of the Slurm job"
        stony.run("kill", job["app_id"], check_rc=0)
        proc.wait(timeout=30)
        # nothing left: no Slurm job or step, no process of the job (Jupyter,
        # its kernel in a session of its own)
        assert "KILLED" in stony.run("status", job["app_id"]).out
        # a killed job reads CANCELLED in Slurm's records (the coordinator
        # cancels its own job at its end)
        assert slurm.wait_job(jid, timeout=30) == "CANCELLED"
        assert not slurm.queue(), "a job left in squeue"
        assert not slurm.run("squeue", "-h", "-s", "-o", "%i").stdout.split(), "a step left in squeue"
        wait_for(lambda: not job_processes(stony.home) and not slurm.job_processes(jid), timeout=15,
                 what="the job's processes (kernel too) gone")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        # a failed check leaves no job behind for the suite's next tests
        if jid and slurm.job(jid).get("JobState") in ACTIVE:
            slurm.run("scancel", jid, check=False)
            slurm.wait_job(jid)
