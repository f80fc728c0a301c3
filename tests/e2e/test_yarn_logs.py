"""Task logs of YARN jobs read over the network, as on a real cluster: the
test cluster's labelled NodeManager runs in a JVM of its own with its web UI
and REST on (scripts/hadoop-test-cluster), so tasks placed there get a
NodeManager log link, the coordinator reads their output through that
NodeManager, and `tony logs` prints it during and after the job."""
import json
import re
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import TONY, OwnerReads, wait_for
from test_yarn_jobs import Yarn, yarn  # noqa: F401 - the fixture

pytestmark = pytest.mark.hadoop

# Everything (the AM too) on the node with a web UI: the label's node.
ON_WEB_NODE = ["--conf", "tony.worker.node-label=gpu", "--conf", "tony.application.node-label=gpu",
               "--conf", "tony.worker.instances=1"]
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), OwnerReads())


def get(url, timeout=30):
    try:
        with OPENER.open(url, timeout=timeout) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def web_nodes(cluster):
    return [w for w in cluster.vars.get("TONY_HTC_NODE_WEB", "").split(",") if w]


def wait_task_link(y, app_id):
    def link():
        # The job's record appears a moment after its dir: until then no state.
        r = y.tony.run("status", app_id, "--json")
        if r.rc != 0:
            return None
        j = json.loads(r.out)
        t = [t for t in j.get("tasks", []) if t["role"] == "worker" and t["index"] == 0]
        return (j, t[0]) if t and t[0].get("log_url") else None
    return wait_for(link, timeout=120, interval=0.5, what="worker:0 to register with a log link")


def new_app_id(y, before):
    def found():
        ids = [a for a in y.app_ids() if a not in before]
        return ids[0] if ids else None
    return wait_for(found, timeout=60, what="the application id")


def run_out(p, flag):
    """Lets the job that waits for flag end; its `tony submit` succeeds."""
    flag.write_text("")
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, (out, err)


def let_go(p, flag):
    """The end of a test whose job waits for flag: a failed check must not
    leave the job waiting, nor its `tony submit` running."""
    flag.write_text("")
    if p.poll() is None:
        p.kill()
        p.communicate()


@pytest.fixture(autouse=True)
def needs_web_node(hadoop):
    if not web_nodes(hadoop):
        pytest.skip("this test cluster has no NodeManager with a web UI (TONY_HTC_WEB_NODEMANAGERS=0)")


@pytest.mark.hadoop33
def test_logs_during_and_after_the_job(yarn, tmp_path):
    flag = tmp_path / "go-on"
    cmd = (f"for i in 1 2 3; do echo tick-$i; done; while [ ! -e {flag} ]; do sleep 0.2; done; "
           "echo after-flag; echo to-stderr >&2")
    before = yarn.app_ids()
    p = yarn.popen_submit("--executes", cmd, *ON_WEB_NODE)
    try:
        app_id = new_app_id(yarn, before)
        job, task = wait_task_link(yarn, app_id)
        link = task["log_url"]
        node = link.split("/")[2]
        assert node in web_nodes(yarn.cluster), (link, web_nodes(yarn.cluster))
        assert re.fullmatch(r"http://[^/]+/node/containerlogs/container_[0-9_]+/[^/]+", link), link
        assert task["container"] in link

        # The link opens the container's page on its NodeManager, whose
        # stdout link shows the task's output.
        code, page = get(link)
        assert code == 200 and "stdout" in page, page[:500]
        href = re.search(r'href="(/node/containerlogs/[^"]*/stdout/[^"]*)"', page)
        assert href, page[:2000]
        wait_for(lambda: "tick-3" in get(f"http://{node}{href.group(1)}")[1], timeout=30,
                 what="the task's output on the NodeManager's page")

        # The coordinator's log endpoint reads it from the NodeManager.
        url = job["url"]
        d = wait_for(lambda: (lambda c, b: json.loads(b) if c == 200 and "tick-3" in b else None)(
            *get(f"{url}/v1/tasks/worker/0/log")), timeout=30, what="tick-3 through the coordinator")
        assert d["data"] == "tick-1\ntick-2\ntick-3\n" and d["exists"] is True, d
        assert d["size"] == d["next"] == len(d["data"])
        code, body = get(f"{url}/v1/tasks/worker/0/log?offset=7")
        assert code == 200 and json.loads(body)["data"] == "tick-2\ntick-3\n", body
        code, body = get(f"{url}/v1/tasks/worker/0/log?offset=999999")
        assert code == 400 and "past the end" in body, body
        code, body = get(f"{url}/v1/tasks/worker/0/log?stream=stderr")
        assert code == 200 and json.loads(body)["data"] == "", body

        # tony logs while it runs, and -f until the end.
        r = yarn.tony.run("logs", app_id, "--task", "worker:0")
        assert r.rc == 0, r
        assert "tick-3" in r.out and "after-flag" not in r.out, r
        assert link in r.out, r
        follow = subprocess.Popen([TONY, "logs", app_id, "--task", "worker:0", "-f"], env=yarn.tony.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2)
        assert follow.poll() is None, "tony logs -f ended while the task runs"
        flag.write_text("")
        out, err = follow.communicate(timeout=120)
        assert follow.returncode == 0, (out, err)
        assert out == "tick-1\ntick-2\ntick-3\nafter-flag\n", (out, err)
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, (out, err)
    finally:
        let_go(p, flag)
    yarn.cluster.wait_app(app_id)

    # Afterwards: from the NodeManager, the coordinator being gone.
    r = yarn.tony.run("logs", app_id, "--task", "worker:0")
    assert r.rc == 0, r
    assert "tick-1\ntick-2\ntick-3\nafter-flag\n" in r.out and "to-stderr" in r.out, r
    r = yarn.tony.run("logs", app_id, "--task", "worker:0", "-f", timeout=60)
    assert r.rc == 0 and r.out == "tick-1\ntick-2\ntick-3\nafter-flag\n", r
    r = yarn.tony.run("logs", app_id)
    assert r.rc == 0 and "==> worker:0 stderr" in r.out, r
    r = yarn.tony.run("logs", app_id, "--am")
    assert r.rc == 0, r
    assert "==> coordinator am.stderr" in r.out and "registered worker:0" in r.out, r
    r = yarn.tony.run("status", app_id)
    assert r.rc == 0 and link in r.out, r

    # Bad task names: a clear error naming the tasks there are.
    r = yarn.tony.run("logs", app_id, "--task", "worker:7")
    assert r.rc == 2 and "no task worker:7" in r.err and "worker:0" in r.err, r
    r = yarn.tony.run("logs", app_id, "--task", "ps:0", "-f")
    assert r.rc == 2 and "no task ps:0" in r.err, r
    for bad in ("worker", "worker:x", "worker:-1", "worker:1:2", "Worker:0"):
        r = yarn.tony.run("logs", app_id, "--task", bad)
        assert r.rc == 2 and "expected ROLE:INDEX" in r.err, (bad, r)
    r = yarn.tony.run("logs", app_id, "-f")
    assert r.rc == 2 and "--follow needs --task" in r.err, r


def test_an_earlier_attempts_log_comes_from_its_own_container(yarn, tmp_path):
    """After a job restart that reallocates (tony.application.restart-mode)
    the task runs in a new container with a new log link; the coordinator
    still reads attempt 0's output from attempt 0's container (each run
    keeps its link), and the new one from the new."""
    flag = tmp_path / "go-on"
    cmd = (f'echo "attempt-$SESSION_ID says hi"; [ "$SESSION_ID" = 0 ] && exit 7; '
           f"while [ ! -e {flag} ]; do sleep 0.2; done")
    before = yarn.app_ids()
    p = yarn.popen_submit("--executes", cmd, "--conf", "tony.am.retry-count=1",
                          "--conf", "tony.application.restart-mode=reallocate", *ON_WEB_NODE)
    try:
        app_id = new_app_id(yarn, before)

        def restarted():
            r = yarn.tony.run("status", app_id, "--json")
            j = json.loads(r.out) if r.rc == 0 else {}
            t = [t for t in j.get("tasks", []) if t["role"] == "worker"]
            return (j, t[0]) if j.get("attempt") == 1 and t and t[0].get("log_url") else None
        job, task = wait_for(restarted, timeout=180, interval=0.5, what="attempt 1 with a log link")
        runs = task["runs"]
        assert [r["attempt"] for r in runs] == [0, 1], runs
        assert runs[0].get("log_url") and runs[0]["log_url"] != task["log_url"], runs
        url = job["url"]
        d = wait_for(lambda: (lambda c, b: json.loads(b) if c == 200 and "says hi" in b else None)(
            *get(f"{url}/v1/tasks/worker/0/log?attempt=0")), timeout=30, what="attempt 0's output")
        assert d["data"] == "attempt-0 says hi\n" and d["attempt"] == 0, d
        d = wait_for(lambda: (lambda c, b: json.loads(b) if c == 200 and "says hi" in b else None)(
            *get(f"{url}/v1/tasks/worker/0/log")), timeout=30, what="attempt 1's output")
        assert d["data"] == "attempt-1 says hi\n" and d["attempt"] == 1, d
        run_out(p, flag)
    finally:
        let_go(p, flag)
    yarn.cluster.wait_app(app_id)


def test_failed_submit_points_at_the_logs(yarn):
    r = yarn.submit("--executes", "echo broken-input >&2; exit 3", *ON_WEB_NODE)
    assert r.rc == 1, r
    app_id = yarn.app_id(r)
    assert "logs of the failed tasks" in r.out, r
    m = re.search(r"worker:0\s+(http://\S+/node/containerlogs/\S+)\s+\(exit 3\)", r.out)
    assert m, r.out
    code, page = get(m.group(1))
    assert code == 200 and "stderr" in page
    r = yarn.tony.run("logs", app_id, "--task", "worker:0")
    assert r.rc == 0 and "broken-input" in r.out, r


def test_logs_of_a_detached_job_that_ended_unseen(yarn):
    """`tony submit --detach`, and nothing asks about the job until it has
    ended: its client never saw the coordinator, whose work dir went with its
    container. `tony logs` finds the tasks in the status the coordinator left
    in its container's log dir, and reads their output."""
    r = yarn.submit("--detach", "--executes", "echo seen-after-the-end; echo on-stderr >&2", *ON_WEB_NODE)
    assert r.rc == 0, r
    app_id = yarn.app_id(r)
    app = yarn.cluster.wait_app(app_id, timeout=180)
    assert app["finalStatus"] == "SUCCEEDED", app
    job_dir = yarn.tony.home / "jobs" / app_id
    assert not (job_dir / "status.json").exists()
    out = yarn.tony.run("logs", app_id, "--task", "worker:0")
    assert out.rc == 0, out
    assert "seen-after-the-end" in out.out and "on-stderr" in out.out, out
    assert (job_dir / "status.json").exists()  # kept: the next call asks nobody
    every = yarn.tony.run("logs", app_id)
    assert every.rc == 0 and "seen-after-the-end" in every.out, every
