"""Tasks in their role's image on the local backend (issue 22): the real
podman (with runc) runs each task's executor in a container of the test
image scripts/test-image builds (Debian minbase, Debian's torch, a marker
file the host has not). Marked `images`: run once by `make test-images`,
which builds or reuses the image (/var/cache/tony); skipped without podman
or the image."""
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import call, wait_for

REPO = Path(__file__).resolve().parents[2]
IMAGE = os.environ.get("TONY_TEST_IMAGE", "localhost/tony-test:1")
# ps runs in this one: the test image again, with another marker.
OTHER = "localhost/tony-test-other:1"
MARKER = "/etc/tony-test-image"

pytestmark = pytest.mark.images


def podman(*args, check=True):
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=120, check=check)


@pytest.fixture(scope="module")
def images():
    """The test image (built or reused by scripts/test-image) and a second
    one whose marker differs, committed from it."""
    if not shutil.which("podman"):
        pytest.skip("podman is not installed (make test-images installs it)")
    subprocess.run([str(REPO / "scripts" / "test-image"), IMAGE], check=True, timeout=1800)
    if podman("image", "exists", OTHER, check=False).returncode != 0:
        name = "tony-test-other-build"
        podman("rm", "-f", name, check=False)
        podman("run", "--name", name, "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", IMAGE,
               "/bin/sh", "-c", f"echo tony-test-image-other > {MARKER}")
        podman("commit", "--quiet", name, OTHER)
        podman("rm", "-f", name)
    return IMAGE, OTHER


def containers(app_id):
    out = podman("ps", "--all", "--quiet", "--filter", f"label=tony.app={app_id}").stdout
    return out.split()


def no_container_within(app_id, seconds):
    end = time.time() + seconds
    left = containers(app_id)
    while left and time.time() < end:
        time.sleep(0.25)
        left = containers(app_id)
    return left


def docker_conf(image, *extra):
    out = ["--conf", "tony.docker.enabled=true", "--conf", f"tony.docker.containers.image={image}"]
    for kv in extra:
        out += ["--conf", kv]
    return out


# What each task prints about where it runs: the marker it sees, its parent
# (the executor) and pid 1 of its pid namespace (the runtime's init, whose
# command is the executor's), its memory cgroup, and whether the secret
# reached it.
WHERE = r'''
import json, os
def read(p):
    try:
        return open(p).read()
    except OSError:
        return None
cg = [l for l in (read("/proc/self/cgroup") or "").splitlines() if ":memory:" in l]
print("WHERE " + json.dumps({"marker": read("/etc/tony-test-image"),
                             "parent": read("/proc/%d/cmdline" % os.getppid()).replace("\0", " "),
                             "pid1": read("/proc/1/cmdline").replace("\0", " "),
                             "cgroup": cg[0] if cg else "", "secret": "TONY_SECRET" in os.environ,
                             "python": os.path.realpath("/usr/bin/python3")}), flush=True)
'''

DDP = WHERE + r'''
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 4), torch.randn(64, 1)
for _ in range(20):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
w = model.module.weight.detach().clone()
dist.all_reduce(w)
print("TRAINED rank %d world %d loss %.4f" % (dist.get_rank(), dist.get_world_size(), loss.item()), flush=True)
dist.destroy_process_group()
'''


def where(r, role, index):
    line = [l for l in r.log(role, index).splitlines() if l.startswith("WHERE ")]
    assert line, r.log(role, index)
    return json.loads(line[0][len("WHERE "):])


def test_ddp_job_trains_in_the_image(tony, images, tmp_path):
    assert not Path(MARKER).exists(), "the host must not have the image's marker"
    src = tmp_path / "src"
    src.mkdir()
    (src / "ddp.py").write_text(DDP)
    r = tony.submit("--src_dir", str(src), "--executes", "ddp.py", "--python_binary_path", "python3",
                    "--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.worker.memory=1g", *docker_conf(IMAGE), timeout=300)
    assert r.rc == 0, r
    app_id = r.job_dir().name
    for i in range(2):
        w = where(r, "worker", i)
        assert w["marker"] == "tony-test-image\n", w
        assert "libpod-" in w["cgroup"], w  # the container's memory cgroup
        # the self-contained tony made once per build under the jobs root
        assert w["parent"].startswith(str(tony.home / "cache") + "/tony-"), w
        assert w["parent"].rstrip().endswith("/bin/tony executor"), w
        assert "executor" in w["pid1"] and "init" in w["pid1"], w  # the runtime's init, then the executor
        assert w["secret"] is False, w
        assert f"TRAINED rank {i} world 2" in r.log("worker", i), r.log("worker", i)
    # `tony logs` shows a container's output as any task's
    logs = tony.run("logs", app_id, "--task", "worker:1")
    assert "TRAINED rank 1 world 2" in logs.out, logs
    assert containers(app_id) == []


def test_secret_is_not_in_the_containers_command_line_or_inspect(tony, images, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "sleep.py").write_text("import time\ntime.sleep(60)\n")
    p = tony.popen("submit", "--conf", "tony.local.vcores=16", "--conf", "tony.local.memory=16g", "--src_dir",
                   str(src), "--executes", "sleep.py", "--python_binary_path", "python3",
                   "--conf", "tony.worker.instances=1", *docker_conf(IMAGE))
    try:
        jobs = tony.home / "jobs"
        end = time.time() + 60
        ids = []
        while time.time() < end and not ids:
            time.sleep(0.5)
            app = sorted(jobs.iterdir())[-1].name if jobs.exists() and any(jobs.iterdir()) else None
            ids = containers(app) if app else []
        assert ids, "no container started"
        secret = (jobs / app / "secret").read_text().strip()
        inspect = podman("inspect", ids[0]).stdout
        assert secret not in inspect
        assert "TONY_SECRET_JOB_DIR" in inspect
        for pid in os.listdir("/proc"):
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
            except OSError:
                continue
            assert secret not in cmd, cmd
        assert tony.run("kill", app).rc == 0
        p.wait(timeout=60)
        assert no_container_within(app, 10) == []
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_memory_over_the_role_limit_is_killed_and_named(tony, images, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "hog.py").write_text("b = bytearray(400 * 1024 * 1024)\nfor i in range(len(b) // 4096): b[i * 4096] = 1\n"
                                "import time\ntime.sleep(60)\n")
    r = tony.submit("--src_dir", str(src), "--executes", "hog.py", "--python_binary_path", "python3",
                    "--conf", "tony.worker.instances=1", "--conf", "tony.worker.memory=128m", *docker_conf(IMAGE))
    assert r.rc != 0, r
    assert "ran out of memory" in r.text and "tony.worker.memory" in r.text, r
    assert "Root cause" in r.text, r
    assert containers(r.job_dir().name) == []


def test_ps_in_one_image_workers_in_another(tony, images, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "where.py").write_text(WHERE)
    r = tony.submit("--src_dir", str(src), "--executes", "where.py", "--python_binary_path", "python3",
                    "--conf", "tony.ps.instances=1", "--conf", "tony.worker.instances=1",
                    # ps tracked: the job ends when both have printed where they ran; an
                    # untracked ps would be stopped when the worker ends, maybe before (issue 40)
                    "--conf", "tony.application.untracked.jobtypes=",
                    "--conf", f"tony.docker.ps.image={OTHER}", *docker_conf(IMAGE), timeout=180)
    assert r.rc == 0, r
    assert where(r, "ps", 0)["marker"] == "tony-test-image-other\n"
    assert where(r, "worker", 0)["marker"] == "tony-test-image\n"


def start_sleeping_job(tony, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "sleep.py").write_text("import time\ntime.sleep(120)\n")
    r = tony.run("submit", "--detach", "--conf", "tony.local.vcores=16", "--conf", "tony.local.memory=16g",
                 "--src_dir", str(src), "--executes", "sleep.py", "--python_binary_path", "python3",
                 "--conf", "tony.worker.instances=2", *docker_conf(IMAGE), timeout=120)
    assert r.rc == 0, r
    app = r.job_dir().name
    end = time.time() + 60
    while len(containers(app)) < 2 and time.time() < end:
        time.sleep(0.25)
    assert len(containers(app)) == 2, r
    return r, app


def test_tony_kill_leaves_no_container(tony, images, tmp_path):
    r, app = start_sleeping_job(tony, tmp_path)
    # one more with the job's label that no task owns: the coordinator's
    # sweep at its end removes it too
    podman("run", "-d", "--label", f"tony.app={app}", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
           IMAGE, "sleep", "300")
    assert len(containers(app)) == 3
    assert tony.run("kill", app).rc == 0
    assert no_container_within(app, 10) == []


SLOW_RM_S = 4


def slow_podman(tmp_path):
    """A podman first on PATH whose `rm` takes SLOW_RM_S seconds more, and
    logs when it starts and when it ended; anything else is podman's own."""
    bindir = tmp_path / "slow-bin"
    bindir.mkdir()
    log = tmp_path / "rm.log"
    real = shutil.which("podman")
    wrapper = bindir / "podman"
    wrapper.write_text(f"""#!/bin/sh
if [ "$1" = rm ]; then
    echo "start $*" >> {log}
    sleep {SLOW_RM_S}
    {real} "$@"
    rc=$?
    echo "end $*" >> {log}
    exit $rc
fi
exec {real} "$@"
""")
    wrapper.chmod(0o755)
    return bindir, log


def runtime_pid(app, role, index):
    """The runtime's `run` of a task's container: its executor's session leader."""
    needle = f"--name=tony-{app}-{role}-{index}-".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if b"run" in args and any(a.startswith(needle) for a in args):
            return int(pid)
    raise AssertionError(f"no runtime process of {role}:{index} of {app}")


def test_removal_of_a_killed_container_leaves_the_coordinator_answering(tony, images, tmp_path):
    """A runtime killed by a signal leaves its container, which the
    coordinator removes (`podman rm`): that took the coordinator's loop for
    as long as the rm ran. Now the rm runs beside the loop, and the task's
    end is told only once its container is gone."""
    bindir, log = slow_podman(tmp_path)
    tony.env["PATH"] = f"{bindir}:{tony.env['PATH']}"
    r, app = start_sleeping_job(tony, tmp_path)
    url = json.loads((r.job_dir() / "am.json").read_text())["url"]
    os.kill(runtime_pid(app, "worker", 0), signal.SIGKILL)
    wait_for(lambda: log.exists() and f"tony-{app}-worker-0-" in log.read_text(), timeout=15, what="the rm")
    slowest, looks = 0.0, 0
    while "end" not in log.read_text():
        t0 = time.time()
        code, job = call(url + "/v1/job")
        slowest = max(slowest, time.time() - t0)
        assert code == 200, job
        if "end" not in log.read_text():
            # asked while the rm ran: worker:0's end not told yet
            (w0,) = [t for t in job["tasks"] if (t["role"], t["index"]) == ("worker", 0)]
            assert w0["state"] == "RUNNING", w0
            looks += 1
        time.sleep(0.2)
    assert looks >= 3 and slowest < 1.5, (looks, slowest)
    # then told: worker:0's runtime was killed (SIGKILL, 137)
    wait_for(lambda: r.task("worker", 0)["state"] != "RUNNING", timeout=15, what="worker:0's end")
    assert r.task("worker", 0).get("exit_status") == 137, r.task("worker", 0)
    tony.run("kill", app, timeout=60)
    assert no_container_within(app, 15) == []


def test_sigkilled_coordinator_leaves_no_container(tony, images, tmp_path):
    r, app = start_sleeping_job(tony, tmp_path)
    am = json.loads((r.job_dir() / "am.json").read_text())["pid"]
    os.kill(am, signal.SIGKILL)
    assert no_container_within(app, 15) == []


BAD = [
    (["tony.docker.runtime=nosuch"], "tony.docker.runtime=nosuch"),
    (["tony.docker.containers.image=localhost/tony-no-such-image:1"], "localhost/tony-no-such-image:1"),
    (["tony.docker.containers.mount=/nonexistent-tony-src:/data:ro"], "/nonexistent-tony-src"),
    (["tony.docker.containers.mount=relative:/data"], "tony.docker.containers.mount"),
]


@pytest.mark.parametrize("extra,named", BAD, ids=["runtime", "image", "mount-source", "mount-syntax"])
def test_bad_input_is_refused_before_anything_starts(tony, images, tmp_path, extra, named):
    src = tmp_path / "src"
    src.mkdir()
    (src / "t.py").write_text("print('ran')\n")
    r = tony.submit("--src_dir", str(src), "--executes", "t.py", "--python_binary_path", "python3",
                    "--conf", "tony.worker.instances=1", *docker_conf(IMAGE, *extra))
    assert r.rc == 2, r
    assert named in r.err, r
    assert IMAGE in r.err or "localhost/tony-no-such-image:1" in r.err, r
    assert not (tony.home / "jobs").exists() or not any((tony.home / "jobs").iterdir()), "a job was created"


@pytest.mark.parametrize("runtime", [None, "podman"], ids=["default", "podman"])
def test_a_missing_runtime_is_refused(tony, images, tmp_path, runtime):
    """No podman or docker on PATH (here: an empty PATH)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "t.py").write_text("print('ran')\n")
    empty = tmp_path / "bin"
    empty.mkdir()
    extra = [f"tony.docker.runtime={runtime}"] if runtime else []
    tony.env["PATH"] = str(empty)
    r = tony.submit("--src_dir", str(src), "--executes", "t.py", "--python_binary_path", "python3",
                    "--conf", "tony.worker.instances=1", *docker_conf(IMAGE, *extra))
    assert r.rc == 2, r
    assert IMAGE in r.err, r
    if runtime:
        assert "tony.docker.runtime=podman but there is no podman on PATH" in r.err, r
    else:
        assert "neither podman nor docker works" in r.err, r
    assert not (tony.home / "jobs").exists() or not any((tony.home / "jobs").iterdir()), "a job was created"


def test_a_runtime_that_does_not_answer_is_refused(tony, images, tmp_path):
    """A docker CLI without its daemon (as here) is no runtime: named, refused."""
    docker = shutil.which("docker")
    if not docker or subprocess.run([docker, "version"], capture_output=True, timeout=30).returncode == 0:
        pytest.skip("needs a docker CLI whose daemon does not answer")
    src = tmp_path / "src"
    src.mkdir()
    (src / "t.py").write_text("print('ran')\n")
    r = tony.submit("--src_dir", str(src), "--executes", "t.py", "--python_binary_path", "python3",
                    "--conf", "tony.worker.instances=1", *docker_conf(IMAGE, "tony.docker.runtime=docker"))
    assert r.rc == 2, r
    assert "tony.docker.runtime=docker" in r.err and "version` fails" in r.err and IMAGE in r.err, r
    assert not (tony.home / "jobs").exists() or not any((tony.home / "jobs").iterdir()), "a job was created"


def test_image_without_a_shell_is_refused(tony, images, tmp_path):
    name = "localhost/tony-test-noshell:1"
    if podman("image", "exists", name, check=False).returncode != 0:
        root = tmp_path / "rootfs"
        (root / "etc").mkdir(parents=True)
        (root / "etc" / "tony-test-image").write_text("no shell\n")
        tar = tmp_path / "noshell.tar"
        subprocess.run(["tar", "-C", str(root), "-cf", str(tar), "."], check=True)
        podman("import", "--quiet", str(tar), name)
    src = tmp_path / "src"
    src.mkdir()
    (src / "t.py").write_text("print('ran')\n")
    r = tony.submit("--src_dir", str(src), "--executes", "t.py", "--python_binary_path", "python3",
                    "--conf", "tony.worker.instances=1", *docker_conf(name))
    assert r.rc == 2, r
    assert "/bin/sh" in r.err and name in r.err and "tony.docker.worker.image" in r.err, r


def test_sigkilled_client_job_ends_and_leaves_no_container(tony, images, tmp_path):
    """The job outlives its client as a bare one does; its containers end with it."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "sleep.py").write_text("import time\ntime.sleep(4)\n")
    p = tony.popen("submit", "--conf", "tony.local.vcores=16", "--conf", "tony.local.memory=16g", "--src_dir",
                   str(src), "--executes", "sleep.py", "--python_binary_path", "python3",
                   "--conf", "tony.worker.instances=2", *docker_conf(IMAGE))
    jobs = tony.home / "jobs"
    end = time.time() + 60
    app = None
    while time.time() < end and not (app and len(containers(app)) == 2):
        time.sleep(0.25)
        app = sorted(jobs.iterdir())[-1].name if jobs.exists() and any(jobs.iterdir()) else None
    assert app and len(containers(app)) == 2
    p.kill()
    p.wait()
    status = jobs / app / "status.json"
    end = time.time() + 30
    while time.time() < end and json.loads(status.read_text()).get("state") != "FINISHED":
        time.sleep(0.25)
    assert json.loads(status.read_text())["final_status"] == "SUCCEEDED"
    assert no_container_within(app, 10) == []


# A single-node job's command runs in the coordinator's image
# (tony.docker.am.image, else tony.docker.containers.image); the
# coordinator itself stays bare.
AM_WHERE = ('cat /etc/tony-test-image; grep -q libpod- /proc/self/cgroup && echo IN-CONTAINER; '
            'echo "secret:${TONY_SECRET:-none}"')


def test_single_node_command_runs_in_the_am_image(tony, images, tmp_path):
    r = tony.submit("--executes", AM_WHERE, *docker_conf(IMAGE, f"tony.docker.am.image={OTHER}"), timeout=120)
    assert r.rc == 0, r
    app = r.job_dir().name
    out = (r.job_dir() / "attempts/0/am/stdout").read_text()
    assert "tony-test-image-other" in out and "IN-CONTAINER" in out, out
    assert "secret:none" in out, out
    # its output reaches `tony logs` as a bare one's
    logs = tony.run("logs", app, "--task", "am:0")
    assert "tony-test-image-other" in logs.out, logs
    assert containers(app) == []


def start_sleeping_single_node_job(tony):
    r = tony.run("submit", "--detach", "--executes", "sleep 120", *docker_conf(IMAGE), timeout=120)
    assert r.rc == 0, r
    app = r.job_dir().name
    end = time.time() + 60
    while not containers(app) and time.time() < end:
        time.sleep(0.25)
    assert len(containers(app)) == 1, r
    return r, app


def test_killed_single_node_job_leaves_no_container(tony, images, tmp_path):
    r, app = start_sleeping_single_node_job(tony)
    assert tony.run("kill", app).rc == 0
    assert no_container_within(app, 10) == []


def test_sigkilled_coordinator_of_a_single_node_job_leaves_no_container(tony, images, tmp_path):
    r, app = start_sleeping_single_node_job(tony)
    am = json.loads((r.job_dir() / "am.json").read_text())["pid"]
    os.kill(am, signal.SIGKILL)
    assert no_container_within(app, 15) == []


def test_am_image_of_a_multi_role_job_is_noted(tony, images, tmp_path):
    r = tony.submit("--executes", "cat /etc/tony-test-image", "--conf", "tony.worker.instances=1",
                    *docker_conf(IMAGE, f"tony.docker.am.image={OTHER}"), timeout=120)
    assert r.rc == 0, r
    assert f"tony.docker.am.image={OTHER} is not used here" in r.err and "coordinator runs bare" in r.err, r
    assert r.log("worker", 0) == "tony-test-image\n"


def test_a_missing_am_image_is_refused(tony, images, tmp_path):
    missing = "localhost/tony-no-such-image:1"
    r = tony.submit("--executes", "true", *docker_conf(IMAGE, f"tony.docker.am.image={missing}"))
    assert r.rc == 2, r
    assert "tony.docker.am.image" in r.err and missing in r.err, r
    assert not (tony.home / "jobs").exists() or not any((tony.home / "jobs").iterdir()), "a job was created"


def busybox_image(tmp_path):
    """An image of a static busybox and nothing else: /bin/sh, no bash."""
    name = "localhost/tony-test-busybox:1"
    if podman("image", "exists", name, check=False).returncode != 0:
        busybox = shutil.which("busybox")
        assert busybox, "busybox-static is missing (scripts/install-deps installs it)"
        root = tmp_path / "bbroot"
        (root / "bin").mkdir(parents=True)
        (root / "tmp").mkdir()
        shutil.copy(busybox, root / "bin" / "busybox")
        for applet in ("sh", "echo", "cat", "env", "sleep"):
            (root / "bin" / applet).symlink_to("busybox")
        tar = tmp_path / "busybox.tar"
        subprocess.run(["tar", "-C", str(root), "-cf", str(tar), "."], check=True)
        podman("import", "--quiet", str(tar), name)
    return name


def test_image_with_only_busybox_runs_the_command_with_sh(tony, images, tmp_path):
    """docs/images.md: an image needs only /bin/sh. The command runs under bash where
    the image has it, else under its /bin/sh (issue 34 #2)."""
    name = busybox_image(tmp_path)
    r = tony.submit("--executes", "echo ran-in-busybox-$TASK_INDEX", "--conf", "tony.worker.instances=1",
                    *docker_conf(name))
    assert r.rc == 0, r
    assert "ran-in-busybox-0" in r.log("worker", 0), r
    log = (r.job_dir() / "attempts" / "0" / "worker-0" / "executor.log").read_text()
    assert "the command runs with /bin/sh" in log, log


def test_runtime_without_its_init_helper_is_named_not_the_script(tony, images, tmp_path):
    """podman's exit 125 is its own: the container never started, and the
    root cause says so with podman's words (issue 34 #1)."""
    conf = tmp_path / "containers.conf"
    conf.write_text('[containers]\ninit_path = "/nonexistent/catatonit"\n')
    tony.env["CONTAINERS_CONF"] = str(conf)
    r = tony.submit("--executes", "echo never", "--conf", "tony.worker.instances=1", *docker_conf(IMAGE))
    assert r.rc != 0, r
    cause = next((line for line in r.text.splitlines() if line.startswith("Root cause:")), "")
    assert cause.startswith("Root cause: worker:0 could not start its command in attempt 0"), r
    assert "container-init binary not found" in cause and "/nonexistent/catatonit" in cause, r
    assert f"The container runtime could not start its container of image {IMAGE} (exit code 125)" in cause, r
    assert "the script's own error" not in r.text, r
