"""Restart policies and root cause on the real Hadoop test cluster: a task
whose Python script raises is not retried under `exit-code`, and the first
failed task, its exit meaning and its traceback reach YARN's application
diagnostics (read through the RM's REST API, as YARN's UI and `yarn
application -status` show them) and `tony status`."""
import pytest

from conftest import PYTHON
from test_yarn_jobs import role_cmd, yarn  # noqa: F401 (yarn: the cluster fixture, with its checks after)

pytestmark = pytest.mark.hadoop


def test_root_cause_in_yarn_diagnostics_and_status(yarn):
    raises = f"{PYTHON} -c 'def load(p):\n    raise ValueError(\"no shard \" + p)\nload(\"s-7\")'"
    r = yarn.submit("--executes", role_cmd({"worker:1": raises}, "sleep 60"),
                    "--conf", "tony.worker.instances=2", "--conf", "tony.application.fail-on-worker-failure-enabled=true",
                    "--conf", "tony.am.retry-count=2", "--conf", "tony.application.restart-policy=exit-code")
    assert r.rc == 1, r
    app_id = yarn.app_id(r)
    app = yarn.cluster.wait_app(app_id)
    assert app["finalStatus"] == "FAILED", app
    diag = app["diagnostics"]
    assert "Not retried: exit code 1 is the script's own error" in diag, diag
    assert "Root cause: worker:1 failed first in attempt 0" in diag, diag
    assert "exit code 1 (the script's own error)" in diag, diag
    assert "\n    ValueError: no shard s-7" in diag and 'File "<string>", line 2, in load' in diag, diag
    s = yarn.tony.run("status", app_id)
    assert "Root cause: worker:1 failed first" in s.out and "ValueError: no shard s-7" in s.out, s
    assert "ValueError: no shard s-7" in r.out, r


def test_root_cause_of_a_container_that_died_unreported(yarn):
    """The whole container dies at once (the task kills its process group,
    its executor with it): no report comes, so the coordinator reads the
    task's stderr through its NodeManager before deciding."""
    dies = (f"{PYTHON} -c 'import os, sys\nprint(\"rank 1: NCCL watchdog gave up\", file=sys.stderr, flush=True)\n"
            "os.killpg(0, 9)'")
    r = yarn.submit("--executes", role_cmd({"worker:1": dies}, "sleep 60"),
                    "--conf", "tony.worker.instances=2", "--conf", "tony.application.fail-on-worker-failure-enabled=true")
    assert r.rc == 1, r
    app_id = yarn.app_id(r)
    diag = yarn.cluster.wait_app(app_id)["diagnostics"]
    assert "Root cause: worker:1 failed first in attempt 0" in diag, diag
    assert "The end of its stderr:\n    rank 1: NCCL watchdog gave up" in diag, diag
    # it was read through the NodeManager, not reported by the (dead) executor
    assert "rank 1: NCCL watchdog gave up" in yarn.task_log(app_id, "worker", 1, "stderr")
    assert "user process exited" not in yarn.task_log(app_id, "worker", 1, "executor.log")
