"""Tasks in their role's image on the Slurm test cluster (issue 22, item 4):
each task's step runs `podman run ... image tony executor` under srun, so
the step's task is the runtime's process, srun's stop and scancel reach it,
and the job's containers carry the label tony.app=<id>. Marked `slurm` only
(the cluster exists in `make test-slurm`, which builds or reuses the test
image first); skipped without podman or the image."""
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import after_output, wait_for
from test_slurm_jobs import sacct_states, slurm_id, stony, submit  # noqa: F401 (stony is a fixture)

pytestmark = pytest.mark.slurm
IMAGE = "localhost/tony-test:1"
MARKER = "/etc/tony-test-image"


@pytest.fixture(scope="module")
def image():
    if not shutil.which("podman"):
        pytest.skip("podman is not installed (make deps-containers installs it)")
    if subprocess.run(["podman", "image", "exists", IMAGE], timeout=60).returncode != 0:
        pytest.skip(f"the test image {IMAGE} is not in podman (scripts/test-image builds it; make test-slurm runs it)")
    return IMAGE


def containers(app_id):
    out = subprocess.run(["podman", "ps", "--all", "--quiet", "--filter", f"label=tony.app={app_id}"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return out.split()


def docker_conf(image, *extra):
    out = ["--conf", "tony.docker.enabled=true", "--conf", f"tony.docker.containers.image={image}"]
    for kv in extra:
        out += ["--conf", kv]
    return out


def test_het_job_tasks_run_in_the_image(stony, slurm, image):
    assert not os.path.exists(MARKER), "the host must not have the image's marker"
    # the workers end once the untracked ps has printed what is read below (issue 40)
    r = submit(stony, "--executes", f'echo "$JOB_NAME:$TASK_INDEX marker=$(cat {MARKER})"; cat /proc/1/cmdline; '
               f'[ "$JOB_NAME" = ps ] || {{ {after_output("ps-0", "executor")}; }}',
               "--conf", "tony.application.framework=tensorflow",
               "--conf", "tony.ps.instances=1", "--conf", "tony.ps.memory=512m",
               "--conf", "tony.worker.instances=2", "--conf", "tony.worker.memory=1g",
               *docker_conf(image), timeout=240)
    assert r.rc == 0, r
    assert "All 2 tracked tasks succeeded" in r.out
    for role, index in (("ps", 0), ("worker", 0), ("worker", 1)):
        log = r.log(role, index)
        # the image's marker, and pid 1 of the task's pid namespace is the runtime's init
        assert f"{role}:{index} marker=tony-test-image" in log, log
        assert "/bin/tony" in log and "executor" in log, log
    # Still Slurm's: one step per task, in a heterogeneous job (two shapes).
    rows = sacct_states(slurm, slurm_id(r), components=2, steps=4)
    assert {"ps:0", "worker:0", "worker:1"} <= {row[1] for row in rows if "." in row[0]}, rows
    assert all(row[2] == "COMPLETED" for row in rows if "." not in row[0]), rows
    assert not containers(r.job_dir().name)


def test_scancel_leaves_no_container(stony, slurm, image):
    p = stony.popen("submit", "--backend", "slurm", "--detach", "--executes", "sleep 300",
                    "--conf", "tony.worker.instances=2", "--conf", "tony.worker.memory=512m", *docker_conf(image))
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, (out, err)
    app = re.search(r"job (application_\S+) submitted", out).group(1)
    jid = re.search(r"Slurm job (\d+)", out).group(1)
    wait_for(lambda: len(containers(app)) == 2, timeout=90, what="both tasks' containers")
    slurm.run("scancel", jid)
    slurm.wait_job(jid, timeout=60)
    start = time.time()
    wait_for(lambda: not containers(app), timeout=20, what="no container of the job")
    assert time.time() - start < 20


def test_bad_image_refused_at_submit(stony, slurm, image):
    before = slurm.run("squeue", "-h", "-t", "all", "-o", "%i").stdout
    r = submit(stony, "--executes", "true", "--conf", "tony.worker.instances=1",
               *docker_conf("localhost/tony-no-such-image:1"))
    assert r.rc == 2 and "localhost/tony-no-such-image:1" in r.err and "tony.docker" in r.err, r
    r = submit(stony, "--executes", "true", "--conf", "tony.worker.instances=1", "--conf", "tony.worker.gpus=1",
               *docker_conf(image))
    assert r.rc == 2 and "tony.worker.gpus" in r.err and "not supported on Slurm" in r.err, r
    assert slurm.run("squeue", "-h", "-t", "all", "-o", "%i").stdout == before
    assert not list((stony.home / "jobs").glob("*/slurm.json"))
