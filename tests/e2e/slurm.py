"""The real Slurm test cluster for tests marked `slurm`.

scripts/slurm-test-cluster runs Debian's slurmctld, several slurmd (nodes
n1..n3: partitions cpu, the default, and gpu on n2 n3 with 4 fake GPUs each;
feature `fast` on n1) and a private munged on this machine, all state in one
directory. The `slurm` fixture (conftest.py) uses the cluster in TONY_STC_DIR
when set, else starts one under build/ for the session and stops it at the
end. Helpers here drive Slurm's own client tools, so that tests can check
tony's work independently of tony."""
import os
import shutil
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "slurm-test-cluster"
TOOLS = ("slurmctld", "slurmd", "munged", "sbatch", "srun", "squeue", "scontrol", "scancel", "sinfo")
# States a job is not done in (scontrol's JobState).
ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING"}


def missing_tools():
    """The Slurm and munge programs this machine lacks (scripts/install-deps slurm)."""
    return [t for t in TOOLS if shutil.which(t) is None]


def read_env(path):
    out = {}
    for line in Path(path).read_text().splitlines():
        if line.startswith("export "):
            k, _, v = line[len("export "):].partition("=")
            out[k] = v.strip("'")
    return out


class Cluster:
    """One running test cluster, read from DIR/env."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.vars = read_env(self.dir / "env")
        self.conf = self.vars["SLURM_CONF"]
        self.nodes = self.vars["TONY_STC_NODE_NAMES"].split()
        self.gpu_nodes = self.vars["TONY_STC_GPU_NODE_NAMES"].split()
        self.node_gpus = int(self.vars["TONY_STC_NODE_GPUS"])
        self.feature = self.vars["TONY_STC_FEATURE"]
        self.feature_nodes = self.vars["TONY_STC_FEATURE_NODE_NAMES"].split()
        self.logs = Path(self.vars["TONY_STC_LOGS"])
        self.jobcomp = Path(self.vars["TONY_STC_JOBCOMP"])

    def env(self, **extra):
        """This process's environment pointed at the cluster (what sourcing DIR/env does)."""
        return dict(os.environ, **self.vars, **extra)

    def run(self, *cmd, check=True, timeout=60, **kw):
        """Runs a Slurm client command against the cluster; stdout+stderr as text."""
        return subprocess.run(list(cmd), env=self.env(), check=check, timeout=timeout,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)

    def sbatch(self, *args, script=None):
        """Submits a batch job (`--wrap CMD` in args, or script text); returns its id.
        A het job's id is its first component's."""
        cmd = ["sbatch", "--parsable", *args]
        r = self.run(*cmd, input=script) if script is not None else self.run(*cmd)
        return r.stdout.strip().split(";")[0]

    def job(self, job_id):
        """scontrol's record of a job as a dict (a het job: its first component)."""
        r = self.run("scontrol", "show", "job", "-o", str(job_id), check=False)
        line = r.stdout.splitlines()[0] if r.returncode == 0 and r.stdout.strip() else ""
        fields = {}
        for word in line.split():
            k, sep, v = word.partition("=")
            if sep:
                fields[k] = v
        return fields

    def wait_job(self, job_id, timeout=60):
        """Waits until the job has ended; returns its final JobState."""
        end = time.time() + timeout
        while time.time() < end:
            state = self.job(job_id).get("JobState")
            if state and state not in ACTIVE:
                return state
            time.sleep(0.1)
        raise AssertionError(f"job {job_id} still {self.job(job_id).get('JobState')} after {timeout}s")

    def queue(self):
        """Ids of the jobs squeue lists (pending, running, completing)."""
        return self.run("squeue", "-h", "-o", "%i").stdout.split()

    def job_processes(self, job_id=None):
        """Pids of processes of this cluster's jobs (all, or one job's): their
        environment has the cluster's SLURM_CONF and a SLURM_JOB_ID."""
        pids = []
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                env = (p / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"SLURM_CONF={self.conf}".encode() not in env:
                continue
            ids = [e for e in env if e.startswith(b"SLURM_JOB_ID=")]
            if ids and (job_id is None or ids[0] == f"SLURM_JOB_ID={job_id}".encode()):
                pids.append(int(p.name))
        return pids


def script(*args, check=True, env=None, timeout=120):
    """Runs scripts/slurm-test-cluster ARGS...; returns the CompletedProcess."""
    return subprocess.run([str(SCRIPT), *map(str, args)], check=check, timeout=timeout,
                          env=dict(os.environ, **(env or {})),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def start(directory, env=None):
    """Starts (or finds running) the cluster of directory; env adds settings
    (TONY_STC_* of scripts/slurm-test-cluster.md)."""
    script("start", directory, env=env)
    return Cluster(directory)


def stop(directory):
    script("stop", directory)
