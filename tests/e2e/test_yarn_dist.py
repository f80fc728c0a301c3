"""The self-contained tony on YARN: every container runs the archive `tony
submit` keeps in HDFS once per build (tony.yarn.dist-cache), and a node that
has none of tony's libraries runs whole jobs. The test cluster's labelled
NodeManager is such a node: it runs in a mount namespace where the libraries
tony links are empty files (scripts/hadoop-test-cluster,
TONY_HTC_BARE_NODEMANAGERS)."""
import json
import subprocess
import uuid

import pytest

from conftest import TONY
from test_yarn_jobs import check_after, Yarn

pytestmark = pytest.mark.hadoop


@pytest.fixture
def yarn(tony, hadoop):
    y = Yarn(tony, hadoop)
    yield y
    check_after(y)


def libevent_path():
    out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.strip().startswith("libevent-2.1.so.7 "):
            return line.rsplit(" ", 1)[-1]
    raise AssertionError("libevent-2.1.so.7 is not installed")


@pytest.mark.hadoop33
def test_a_multi_role_job_on_a_node_without_tonys_libraries(yarn):
    lib = libevent_path()
    # Each task proves where it runs: tony's libevent is an empty file there,
    # and the plain build of tony (linked against it) cannot start.
    check = (f'[ -e {lib} ] && [ ! -s {lib} ] && ! {TONY} --version >/dev/null 2>&1 '
             f'&& echo "bare node: $JOB_NAME $TASK_INDEX"')
    # ps tracked, so that the job ends once it too has printed its line: an
    # untracked ps is stopped when the others end, maybe before (issue 40)
    r = yarn.submit("--executes", check,
                    "--conf", "tony.ps.instances=1", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.application.untracked.jobtypes=",
                    "--conf", "tony.chief.instances=1",
                    "--conf", "tony.application.node-label=gpu", "--conf", "tony.ps.node-label=gpu",
                    "--conf", "tony.worker.node-label=gpu", "--conf", "tony.chief.node-label=gpu")
    assert r.rc == 0, r
    app_id = yarn.app_id(r)
    assert r.status()["final_status"] == "SUCCEEDED"
    for role, index in (("ps", 0), ("chief", 0), ("worker", 0), ("worker", 1)):
        assert f"bare node: {role} {index}" in yarn.task_log(app_id, role, index)
    # the coordinator ran there too (every container's log dir is the labelled,
    # library-less NodeManager's, the last one: nm-2 of 3), as the self-contained tony
    dirs = yarn.cluster.container_logs(app_id)
    assert dirs and all("logDir-nm-2_" in str(d) for d in dirs), dirs
    assert any(d.name.endswith("_000001") for d in dirs)
    assert len(yarn.cluster.container_logs(app_id)) == 5


def cache_files(cluster, path):
    return sorted(cluster.hdfs_list(path))


def test_tony_goes_to_hdfs_once_per_build(yarn):
    cache = f"/tmp/tony-dist-cache-{uuid.uuid4().hex[:8]}"
    args = ("--executes", "echo ran", "--conf", "tony.worker.instances=1", "--conf", f"tony.yarn.dist-cache={cache}")
    first = yarn.submit(*args)
    assert first.rc == 0, first
    assert "uploading tony" in first.err and "once for this build" in first.err, first
    names = cache_files(yarn.cluster, cache)
    assert len(names) == 1 and names[0].startswith("tony-") and names[0].endswith(".tar.gz"), names
    st = yarn.cluster.hdfs_status(f"{cache}/{names[0]}")
    second = yarn.submit(*args)
    assert second.rc == 0, second
    assert "uploading tony" not in second.err, second
    assert cache_files(yarn.cluster, cache) == names  # no second copy, no leftover part
    assert yarn.cluster.hdfs_status(f"{cache}/{names[0]}")["modificationTime"] == st["modificationTime"]
    for r in (first, second):
        assert r.status()["final_status"] == "SUCCEEDED"


def test_an_empty_dist_cache_uploads_tony_with_the_job(yarn):
    r = yarn.submit("--executes", "echo ran", "--conf", "tony.worker.instances=1", "--conf", "tony.yarn.dist-cache=")
    assert r.rc == 0, r
    assert "uploading tony" in r.err and "once for this build" not in r.err, r
    rec = json.loads((r.job_dir() / "yarn.json").read_text())
    assert r.status()["final_status"] == "SUCCEEDED"
    # it went into the job's staging dir, which is gone with the job
    assert yarn.cluster.hdfs_status(rec["staging_path"]) is None


def test_a_relative_dist_cache_is_refused(yarn):
    r = yarn.submit("--executes", "true", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.yarn.dist-cache=relative/dir")
    assert r.rc == 2, r
    assert "tony.yarn.dist-cache" in r.err and "absolute" in r.err, r


def test_the_job_secret_is_in_no_file_yarn_serves(yarn):
    """YARN writes each container's env into launch_container.sh in its log
    dir, which the NodeManager serves and log aggregation keeps: the secret
    that authorizes heartbeats and kills must reach the executors through the
    containers' token files instead."""
    r = yarn.submit("--executes", "echo done", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.worker.node-label=gpu")
    assert r.rc == 0, r
    app_id = yarn.app_id(r)
    secret = (r.job_dir() / "secret").read_text().strip()
    assert len(secret) >= 16
    logs = yarn.cluster.container_logs(app_id)
    assert len(logs) == 3
    scripts = [p for d in logs for p in d.rglob("launch_container.sh")]
    assert scripts, f"no launch_container.sh kept in {logs}: the test would prove nothing"
    for d in logs:
        for f in d.rglob("*"):
            if f.is_file():
                assert secret not in f.read_text(errors="replace"), f"the job's secret is in {f}"
    # and the executors had it: they registered and heartbeated
    for i in (0, 1):
        assert "done" in yarn.task_log(app_id, "worker", i)
