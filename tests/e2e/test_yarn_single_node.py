"""Single-node jobs on the real Hadoop test cluster: with no instances the
user's command runs inside the coordinator's own AM container, as TonY's AM
runs it. It finds its --src_dir unpacked where it runs and TonY's env, the
job ends as its exit code says, and its stdout and stderr are in the AM
container's log dir (which the NodeManager keeps after the application,
unlike the work dir), read by `tony logs --am` and, while it runs, by the
coordinator's API and page."""
import json
import re

import pytest

from conftest import make_venv_zip, read_token, wait_for
from test_yarn_jobs import Yarn, yarn  # noqa: F401 - the fixture
from test_yarn_logs import get, let_go, new_app_id, run_out, web_nodes

pytestmark = pytest.mark.hadoop

# The coordinator on the labelled node, the one whose NodeManager serves
# logs over HTTP, as on a real cluster; elsewhere tony reads them from this
# machine's disk.
ON_WEB_NODE = ["--conf", "tony.application.node-label=gpu"]

# Checks what a single-node command gets (tony-contract.md 3.6: TonY's AM
# runs it with PREPROCESSING_JOB=true, HOME = its cwd, the execution env),
# prints a marker, and exits as EXIT_WITH says.
CHECK_ENV = r'''
import os, sys
problems = []
def expect(name, ok):
    if not ok:
        problems.append(name)
env = os.environ
cwd = os.getcwd()
expect("data.txt from --src_dir in the cwd", open("data.txt").read() == "shipped")
expect("PREPROCESSING_JOB", env.get("PREPROCESSING_JOB") == "true")
expect("HOME is the cwd", env.get("HOME") == cwd)
expect("JOB_ID and appid", env.get("JOB_ID", "").startswith("application_") and env.get("appid") == env["JOB_ID"])
expect("SESSION_ID", env.get("SESSION_ID") == "0")
expect("--shell_env", env.get("FROM_SHELL_ENV") == "shell-value")
expect("--container_env", env.get("FROM_CONTAINER_ENV") == "container-value")
# inside the coordinator's own container: YARN's AM container is number 1
expect("the AM container", env.get("CONTAINER_ID", "").endswith("_000001"))
expect("runs in the container's work dir", cwd.endswith(env.get("CONTAINER_ID", "?")))
expect("no job secret", "TONY_SECRET" not in env)
print("single-node-marker", env.get("JOB_ID"))
print("to-stderr", file=sys.stderr)
if problems:
    print("wrong env: " + ", ".join(problems), file=sys.stderr)
    sys.exit(9)
sys.exit(int(env.get("EXIT_WITH", "0")))
'''


def single_node_args(scripts, exit_with):
    (scripts / "check_env.py").write_text(CHECK_ENV)
    (scripts / "data.txt").write_text("shipped")
    return ["--src_dir", str(scripts), "--python_binary_path", "python3", "--executes", "check_env.py",
            "--shell_env", "FROM_SHELL_ENV=shell-value", "--container_env", "FROM_CONTAINER_ENV=container-value",
            "--shell_env", f"EXIT_WITH={exit_with}", *ON_WEB_NODE]


def am_container_dir(y, app_id):
    dirs = y.cluster.container_logs(app_id)
    # the job's one container: the coordinator's, with the command beside it
    assert [d.name[-7:] for d in dirs] == ["_000001"], dirs
    return dirs[0]


def check_logs_after_the_end(y, app_id, *expect):
    """`tony logs --am` once the coordinator is gone: its own log, then the
    command's output from the AM container (NodeManager or this disk)."""
    r = y.tony.run("logs", app_id, "--am")
    if web_nodes(y.cluster):
        assert r.rc == 0, r
        assert "==> coordinator am.stderr" in r.out and "single-node mode: running" in r.out, r
    assert "==> am:0 stdout" in r.out and "==> am:0 stderr" in r.out, r
    for text in expect:
        assert text in r.out, r
    r = y.tony.run("logs", app_id, "--task", "am:0")
    assert r.rc == 0, r
    for text in expect:
        assert text in r.out, r


def submit_single_node(y, scripts, exit_with, rc, final_status):
    """Submits CHECK_ENV to exit with exit_with; checks tony's exit code and
    the final status as YARN and tony record it."""
    r = y.submit(*single_node_args(scripts, exit_with))
    assert r.rc == rc, r
    app_id = y.app_id(r)
    app = y.cluster.wait_app(app_id)
    assert (app["state"], app["finalStatus"]) == ("FINISHED", final_status), app
    assert r.status()["final_status"] == final_status
    return r, app, app_id


@pytest.mark.hadoop33
def test_single_node_succeeds_with_src_dir_and_env(yarn, scripts):
    r, app, app_id = submit_single_node(yarn, scripts, 0, 0, "SUCCEEDED")
    # stdout and stderr, named as a task's, in the AM container's log dir
    d = am_container_dir(yarn, app_id)
    assert (d / "stdout").read_text() == f"single-node-marker {app_id}\n"
    assert (d / "stderr").read_text() == "to-stderr\n"
    assert (d / "am.stderr").exists()
    check_logs_after_the_end(yarn, app_id, f"single-node-marker {app_id}", "to-stderr")


def test_single_node_exit_code_fails_the_job(yarn, scripts):
    r, app, app_id = submit_single_node(yarn, scripts, 3, 1, "FAILED")
    assert "Single node training failed: exit code 3" in app["diagnostics"], app
    am = r.task("am", 0)
    assert am["exit_status"] == 3, am
    if web_nodes(yarn.cluster):
        # the failed submit points at the command's output, as at a task's
        assert re.search(r"am:0\s+http://\S+/node/containerlogs/container_\S+_000001/\S+\s+\(exit 3\)", r.out), r
    d = am_container_dir(yarn, app_id)
    assert "single-node-marker" in (d / "stdout").read_text()
    check_logs_after_the_end(yarn, app_id, f"single-node-marker {app_id}", "to-stderr")


def test_single_node_runs_in_the_shipped_venv(yarn, tmp_path, scripts):
    """--python_venv is unpacked into ./venv of the command's cwd, as in a
    task's, and a relative --python_binary_path runs from it."""
    venv_zip = make_venv_zip(tmp_path)
    (scripts / "prefix.py").write_text("import os, sys\nprint(os.path.relpath(sys.prefix))\n")
    r = yarn.submit("--src_dir", str(scripts), "--python_venv", str(venv_zip), "--python_binary_path", "bin/python3",
                    "--executes", "prefix.py")
    assert r.rc == 0, r
    assert (am_container_dir(yarn, yarn.app_id(r)) / "stdout").read_text() == "venv\n"


def test_single_node_output_while_it_runs(yarn, tmp_path):
    """The coordinator serves the command's output as a task's log: through
    its API, through YARN's proxy (the page's way) and to `tony logs`."""
    flag = tmp_path / "go-on"
    cmd = f"echo live-1; echo live-2 >&2; while [ ! -e {flag} ]; do sleep 0.2; done; echo after-flag"
    before = yarn.app_ids()
    p = yarn.popen_submit("--executes", cmd, *ON_WEB_NODE)
    try:
        app_id = new_app_id(yarn, before)
        url = wait_for(lambda: yarn.api_url(app_id), timeout=120, what="the coordinator's API")
        d = wait_for(lambda: (lambda c, b: json.loads(b) if c == 200 and "live-1" in b else None)(
            *get(f"{url}/v1/tasks/am/0/log")), timeout=60, what="the command's stdout through the API")
        assert d["data"] == "live-1\n" and d["role"] == "am" and d["exists"] is True, d
        code, body = get(f"{url}/v1/tasks/am/0/log?stream=stderr")
        assert code == 200 and json.loads(body)["data"] == "live-2\n", body
        # YARN's proxy passes only the query on: the read token goes there
        token = read_token(yarn.tony.home / "jobs" / app_id)
        code, body = get(f"{yarn.cluster.rm}/proxy/{app_id}/v1/tasks/am/0/log?token={token}")
        assert code == 200 and json.loads(body)["data"] == "live-1\n", body
        # the job lists the command as its task am:0, with its log link
        code, body = get(f"{url}/v1/job")
        task = [t for t in json.loads(body)["tasks"] if t["role"] == "am"]
        assert len(task) == 1 and task[0]["log_dir"].endswith(task[0]["container"]), task
        if web_nodes(yarn.cluster):
            assert task[0]["log_url"].endswith(f"/node/containerlogs/{task[0]['container']}/{yarn.cluster.user}")
        r = yarn.tony.run("logs", app_id, "--task", "am:0")
        assert r.rc == 0 and "live-1" in r.out and "live-2" in r.out and "after-flag" not in r.out, r
        run_out(p, flag)
    finally:
        let_go(p, flag)
    yarn.cluster.wait_app(app_id)
    check_logs_after_the_end(yarn, app_id, "live-1\nafter-flag", "live-2")
