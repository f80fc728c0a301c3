"""TonY's contract with YARN's Docker runtime, on the launch contexts that
reach the NodeManagers: with tony.docker.enabled the coordinator's container
and every task's carry YARN_CONTAINER_RUNTIME_TYPE=docker, the role's image
(the coordinator's: tony.docker.am.image, else tony.docker.containers.image),
the mounts of tony.docker.containers.mount in YARN's SRC:DST:MODE form and
the network (host unless tony.docker.network), and run the localized
self-contained tony; without docker, none of these variables.

The test cluster cannot run Docker: YARN's Docker runtime needs the
LinuxContainerExecutor and Hadoop's setuid container-executor, which no
package here has. Its NodeManagers use the DefaultContainerExecutor, which
ignores the runtime's variables (tried: the job runs as plain processes and
succeeds) but still writes them, as every container's env, into the
launch_container.sh it keeps in the container's log dir. That script is
what a Docker-enabled NodeManager would act on, so the tests read it there."""
import re

import pytest

from test_yarn_jobs import check_after, role_cmd, Yarn

pytestmark = pytest.mark.hadoop

RUNTIME_VARS = ("YARN_CONTAINER_RUNTIME_TYPE", "YARN_CONTAINER_RUNTIME_DOCKER_IMAGE",
                "YARN_CONTAINER_RUNTIME_DOCKER_MOUNTS", "YARN_CONTAINER_RUNTIME_DOCKER_CONTAINER_NETWORK")


@pytest.fixture
def yarn(tony, hadoop):
    y = Yarn(tony, hadoop)
    yield y
    check_after(y)


def launch_scripts(yarn, app_id):
    """{"am" or "role:index": (its env as launch_container.sh exports it,
    the script's text)} for every container of app_id."""
    out = {}
    for d in yarn.cluster.container_logs(app_id):
        script = d / "launch_container.sh"
        if not script.exists():
            continue
        text = script.read_text(errors="replace")
        env = dict(re.findall(r'^export ([A-Za-z_][A-Za-z0-9_]*)="(.*)"$', text, re.M))
        if d.name.endswith("_000001") and (d / "am.stderr").exists():
            out["am"] = (env, text)
            continue
        log = (d / "executor.log").read_text(errors="replace")[:4000] if (d / "executor.log").exists() else ""
        m = re.search(r"\[executor (\w+:\d+)\]", log)
        assert m, f"no task id in {d}/executor.log"
        out[m.group(1)] = (env, text)
    return out


def test_docker_jobs_launch_contexts_carry_tonys_docker_variables(yarn):
    r = yarn.submit("--executes", role_cmd({"ps": "echo ps-ran", "worker": "echo worker-ran"}),
                    "--conf", "tony.worker.instances=2", "--conf", "tony.ps.instances=1",
                    "--conf", "tony.application.untracked.jobtypes=",
                    "--conf", "tony.docker.enabled=true",
                    "--conf", "tony.docker.containers.image=tony-test/base:1",
                    "--conf", "tony.docker.ps.image=tony-test/ps:2",
                    "--conf", "tony.docker.am.image=tony-test/am:3",
                    "--conf", "tony.docker.containers.mount=/data:/data:ro, /scratch:/tmp/scratch")
    assert r.rc == 0, r
    app_id = yarn.app_id(r)
    scripts = launch_scripts(yarn, app_id)
    assert set(scripts) == {"am", "ps:0", "worker:0", "worker:1"}, scripts.keys()
    images = {"am": "tony-test/am:3", "ps:0": "tony-test/ps:2", "worker:0": "tony-test/base:1",
              "worker:1": "tony-test/base:1"}
    for who, (env, text) in scripts.items():
        assert env.get("YARN_CONTAINER_RUNTIME_TYPE") == "docker", (who, env)
        assert env.get("YARN_CONTAINER_RUNTIME_DOCKER_IMAGE") == images[who], (who, env)
        # TonY's syntax in, YARN's out: every mount with its mode
        assert env.get("YARN_CONTAINER_RUNTIME_DOCKER_MOUNTS") == "/data:/data:ro,/scratch:/tmp/scratch:rw", (who, env)
        assert env.get("YARN_CONTAINER_RUNTIME_DOCKER_CONTAINER_NETWORK") == "host", (who, env)
        # the command is the localized self-contained tony: no JVM, no tony in the image
        cmd = re.search(r"^exec /bin/bash -c \"(.*)\"$", text, re.M)
        assert cmd and re.search(r"(^| )(exec )?\./tony-dist/bin/tony (am|executor)( |$)", cmd.group(1)), (who, text)
        assert "java" not in cmd.group(1), (who, cmd.group(1))
    # the DefaultContainerExecutor ignored the runtime: the tasks ran here
    assert "ps-ran" in yarn.task_log(app_id, "ps", 0)
    assert "worker-ran" in yarn.task_log(app_id, "worker", 1)


def test_without_docker_no_runtime_variables(yarn):
    # the docker keys are there, docker is not on: TonY then sends none
    r = yarn.submit("--executes", "echo plain", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.docker.containers.image=tony-test/base:1",
                    "--conf", "tony.docker.containers.mount=/data:/data:ro")
    assert r.rc == 0, r
    scripts = launch_scripts(yarn, yarn.app_id(r))
    assert set(scripts) == {"am", "worker:0"}, scripts.keys()
    for who, (env, text) in scripts.items():
        assert not [v for v in RUNTIME_VARS if v in text], (who, text)


def test_a_bad_mount_is_refused_at_submit(yarn):
    before = {a["id"] for a in yarn.cluster.apps()}
    r = yarn.submit("--executes", "true", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.docker.enabled=true", "--conf", "tony.docker.containers.image=tony-test/base:1",
                    "--conf", "tony.docker.containers.mount=/data:/data:ro,data:/in")
    assert r.rc == 2, r
    assert "tony.docker.containers.mount" in r.err and "'data:/in'" in r.err, r
    # refused before the cluster was asked for an application
    assert {a["id"] for a in yarn.cluster.apps()} == before
    assert not yarn.app_ids()
