"""Bad-node exclusion on a real YARN cluster (issue 12 item 4): one
NodeManager of the test's own cluster is made bad for real, by a cause of
Hadoop's own: its local dirs are mounted noexec in its mount namespace
(scripts/hadoop-test-cluster's TONY_HTC_NOEXEC_NODEMANAGER), so every
container launched there fails before tony's executor starts (bash cannot
execute the localized tony: exit 126), while the NodeManager stays healthy
and the RM keeps offering it. The job must exclude that node (the allocate
call's blacklist) and succeed on the others, and `tony status`, the job's
JSON and its coordinator's log must say so.

Placement is made deterministic with sizes: three 1 GB nodes; nm-2 (the
bad one) carries the non-exclusive label `gpu`, so containers that ask for
no label go there only when the other nodes cannot hold them. A blocker
job (a single-node tony job whose coordinator holds 768 MB) fills one
default node, the job's coordinator (512 MB) the other, so its 768 MB
worker can only spill onto the bad node; once the node is excluded, the
next attempt's worker must wait (not spill there again) until the test
kills the blocker, and then lands where the blocker was."""
import json
import time
import urllib.request

import pytest

from conftest import wait_for
from test_yarn_jobs import Yarn, check_after

pytestmark = pytest.mark.hadoop

BAD = 2  # nm-2: its own JVM (the only web NodeManager) and the labelled one
SPILL_WAIT_S = 10


@pytest.fixture(scope="module")
def bad_node_cluster(tmp_path_factory):
    import hadoop as htc
    d = tmp_path_factory.mktemp("htc-bad-node")
    cluster = htc.start(d, env={"TONY_HTC_NODEMANAGERS": "3", "TONY_HTC_WEB_NODEMANAGERS": "1",
                                "TONY_HTC_NM_MEMORY_MB": "1024", "TONY_HTC_NOEXEC_NODEMANAGER": str(BAD)})
    try:
        yield cluster
    finally:
        htc.stop(d)


@pytest.fixture
def bad_yarn(tony, bad_node_cluster):
    y = Yarn(tony, bad_node_cluster)
    yield y
    check_after(y)


def job(url):
    with urllib.request.urlopen(url + "/v1/job", timeout=5) as r:
        return json.load(r)


def test_a_node_whose_launches_fail_is_excluded_and_the_job_succeeds_elsewhere(bad_yarn):
    y = bad_yarn
    before = set(y.app_ids())
    blocker = y.popen_submit("--executes", "sleep 600", "--conf", "tony.am.memory=768m",
                             "--conf", "tony.yarn.queue=ml", "--conf", "tony.application.name=blocker")
    p = blocker_id = None
    try:
        blocker_id = wait_for(lambda: next(iter(set(y.app_ids()) - before), None), timeout=90, what="the blocker")
        wait_for(lambda: (y.app(blocker_id) or {}).get("state") == "RUNNING", timeout=90,
                 what="the blocker's coordinator RUNNING")
        before = set(y.app_ids())
        p = y.popen_submit("--executes", "echo trained", "--conf", "tony.worker.instances=1",
                           "--conf", "tony.worker.memory=768m", "--conf", "tony.am.memory=512m",
                           "--conf", "tony.am.retry-count=1")
        app_id = wait_for(lambda: next(iter(set(y.app_ids()) - before), None), timeout=90, what="the job")
        url = wait_for(lambda: y.api_url(app_id), timeout=90, what="the job's coordinator")
        excluded = wait_for(lambda: job(url).get("excluded_nodes") or None, timeout=120,
                            what="the bad node excluded")
        # The blacklist at work: attempt 1's worker could spill onto the bad
        # node again (attempt 0's did within 3 s) and fail the job (no
        # retries left); excluded, it waits for room elsewhere instead.
        time.sleep(SPILL_WAIT_S)
        j = job(url)
        assert j["state"] != "FINISHED" and j["attempt"] == 1, j
        on_bad = [d for d in y.cluster.container_logs(app_id) if f"logDir-nm-{BAD}_" in str(d)]
        assert len(on_bad) == 1, on_bad
        with urllib.request.urlopen(url + "/v1/events", timeout=5) as r:
            ev = [e for e in json.load(r)["events"] if e["type"] == "NODE_EXCLUDED"]
        assert len(ev) == 1 and ev[0]["node"] == excluded[0]["node"], ev
        y.tony.run("kill", blocker_id, timeout=60)
        out, err = p.communicate(timeout=180)
    finally:
        # a failure above must not leave the blocker holding the cluster
        if blocker_id and (y.app(blocker_id) or {}).get("state") not in ("FINISHED", "FAILED", "KILLED"):
            y.tony.run("kill", blocker_id, timeout=60)
        for q in (blocker, p):
            if q and q.poll() is None:
                q.kill()
                q.communicate()
    assert p.returncode == 0, out + err
    app = y.cluster.wait_app(app_id)
    assert (app["state"], app["finalStatus"]) == ("FINISHED", "SUCCEEDED"), app
    # exactly the bad node, for the launch failure
    assert len(excluded) == 1 and excluded[0]["excluded"], excluded
    e = excluded[0]
    assert e["task"] == "worker:0" and e["attempt"] == 0, e
    assert "before tony's executor started" in e["reason"] and "exit code 126" in e["reason"], e
    # the node named is the bad NodeManager (host:port of its IPC address)
    nodes = y.cluster.rm_get("/ws/v1/cluster/nodes")["nodes"]["node"]
    assert e["node"] in [n["id"] for n in nodes], (e, nodes)
    # attempt 1 ran elsewhere: its container's log dir is not the bad NM's
    dirs = [d for d in y.cluster.container_logs(app_id) if not (d / "am.stderr").exists()]
    assert any(f"logDir-nm-{BAD}_" in str(d) for d in dirs), dirs  # attempt 0 was there
    assert any(f"logDir-nm-{BAD}_" not in str(d) for d in dirs), dirs
    # tony status says so
    st = y.tony.run("status", app_id, timeout=60)
    assert "excluded" in st.out and e["node"] in st.out, st.out
    # the coordinator's log (its container need not be _000001: YARN may
    # have reserved one for it first)
    log = "".join((d / "am.stderr").read_text(errors="replace") for d in y.cluster.container_logs(app_id)
                  if (d / "am.stderr").exists())
    assert f"excluding node {e['node']} from the job's later containers: worker:0" in log, log[-3000:]
