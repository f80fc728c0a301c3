"""Hang diagnosis on the real YARN test cluster: a silent task is found hung
by tony.task.progress-timeout, its executor in a YARN container dumps its
Python stacks with py-spy (found beside the task's python) and sends them to
the coordinator in the AM container, the job fails naming the hang, and
`tony logs --stacks` reads the stacks, after the coordinator is gone, from
the AM container's log dir on its NodeManager (where the coordinator left
them as it finished)."""
import json

import pytest

from conftest import PYTHON, wait_for
from test_yarn_jobs import yarn  # noqa: F401 - the fixture
from test_yarn_logs import ON_WEB_NODE, needs_web_node, new_app_id  # noqa: F401 - the fixtures

pytestmark = pytest.mark.hadoop

SILENT = '''
import time

def wait_forever():
    while True:
        time.sleep(1000)

print("up", flush=True)
wait_forever()
'''


def test_hung_task_stacks_from_the_am_container(yarn, scripts):
    (scripts / "silent.py").write_text(SILENT)
    before = yarn.app_ids()
    p = yarn.popen_submit("--src_dir", str(scripts), "--executes", "silent.py", "--python_binary_path", PYTHON,
                          "--conf", "tony.task.progress-timeout=3s", "--conf", "tony.am.retry-count=1", *ON_WEB_NODE)
    try:
        app_id = new_app_id(yarn, before)

        def second_attempt():
            r = yarn.tony.run("status", app_id, "--json")
            return r.rc == 0 and json.loads(r.out).get("attempt") == 1
        wait_for(second_attempt, timeout=120, interval=0.5, what="the restart after the hang")
        # while the job runs: attempt 0's stacks through the coordinator
        live = yarn.tony.run("logs", app_id, "--stacks", "--attempt", "0")
        assert live.rc == 0 and "wait_forever (silent.py" in live.out, live
        assert "/v1/tasks/worker/0/stacks?attempt=0" in live.out, live
        out, err = p.communicate(timeout=180)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 1, (out, err)
    assert "hung: no output or progress from worker:0" in out + err and "stacks of 1 of 1" in out + err, out + err
    yarn.cluster.wait_app(app_id)
    # afterwards: each attempt's from the AM container's log dir
    for attempt in ("0", "1"):
        s = yarn.tony.run("logs", app_id, "--stacks", "--attempt", attempt)
        assert s.rc == 0, s
        assert f"tony-stacks-{attempt}-worker-0.txt" in s.out and "wait_forever (silent.py" in s.out, s
        assert "up\n" not in s.out, s  # the stacks only
    r = yarn.tony.run("logs", app_id, "--stacks", "--attempt", "3")
    assert r.rc == 1 and "no stacks in attempt 3" in r.err, r
