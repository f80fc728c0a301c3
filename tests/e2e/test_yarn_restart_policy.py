"""Restart policies and root cause on the real Hadoop test cluster: a task
whose Python script raises is not retried under `exit-code`, and the first
failed task, its exit meaning and its traceback reach YARN's application
diagnostics (read through the RM's REST API, as YARN's UI and `yarn
application -status` show them; its traceback only in `tony status` and the
submit's output, the plain test cluster enforcing no ACLs: anyone reads the
RM's diagnostics, docs/security.md) and `tony status`; a SIGKILLed task is
retried under `exit-code`; a CUDA out-of-memory line stops retries (the
default log policies)."""
import pytest

from conftest import PYTHON
from test_log_policies import OOM
from test_yarn_inplace import final_status
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
    assert "ValueError" not in diag and "Its last words are left out here" in diag, diag
    s = yarn.tony.run("status", app_id)
    assert "Root cause: worker:1 failed first" in s.out and "ValueError: no shard s-7" in s.out, s
    assert "\n    ValueError: no shard s-7" in s.out and 'File "<string>", line 2, in load' in s.out, s
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
    assert "NCCL" not in diag, diag  # the RM shows it to anyone here
    s = yarn.tony.run("status", app_id)
    assert "The end of its stderr:\n    rank 1: NCCL watchdog gave up" in s.out, s
    # it was read through the NodeManager, not reported by the (dead) executor
    assert "rank 1: NCCL watchdog gave up" in yarn.task_log(app_id, "worker", 1, "stderr")
    assert "user process exited" not in yarn.task_log(app_id, "worker", 1, "executor.log")


def test_exit_code_policy_retries_a_sigkill(yarn):
    """`exit-code` on YARN: a task killed by SIGKILL (exit 137) is retried,
    in place, and the job succeeds in its second attempt."""
    killed_once = ('if [ "$SESSION_ID" = 0 ]; then echo "rank 0 going down" >&2; kill -9 $$; fi; '
                   'echo "attempt $SESSION_ID ok"')
    r = yarn.submit("--executes", role_cmd({"worker:0": killed_once}, "echo ok"),
                    "--conf", "tony.worker.instances=2", "--conf", "tony.am.retry-count=1",
                    "--conf", "tony.application.restart-policy=exit-code")
    assert r.rc == 0, r
    st = final_status(yarn)
    assert st["attempt"] == 1 and st["final_status"] == "SUCCEEDED", st
    assert st["root_cause"]["task"] == "worker:0" and st["root_cause"]["exit_status"] == 137, st["root_cause"]
    assert "killed by signal 9 (SIGKILL)" in r.out and "rank 0 going down" in r.out, r
    assert yarn.task_log(yarn.app_id(r), "worker", 0).endswith("attempt 1 ok\n")


def test_cuda_oom_with_the_default_log_policies_is_not_retried(yarn):
    """The default `fail:CUDA out of memory` log policy on YARN: the
    executor in the container sees the line, the job fails in its first
    attempt with its restarts unspent, and YARN's diagnostics say why."""
    r = yarn.submit("--executes", OOM, "--conf", "tony.worker.instances=1", "--conf", "tony.am.retry-count=2")
    assert r.rc == 1, r
    st = final_status(yarn)
    assert st["attempt"] == 0 and st["retries_left"] == 2, st
    app = yarn.cluster.wait_app(yarn.app_id(r))
    assert app["finalStatus"] == "FAILED", app
    diag = app["diagnostics"]
    assert "log policy 'fail:CUDA out of memory' matched worker:0's stderr" in diag, diag
    assert "Not retried" in diag and "tony.application.log-policies" in diag, diag
