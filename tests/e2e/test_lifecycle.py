"""Job lifecycle on the local backend: TonY's completion rules (tracked,
untracked and sidecar roles, chief, stop-on-failure, fail-on-worker-failure),
our lock-step rule, heartbeats, restarts and timeouts, with real processes."""
import json
import os
import signal
import time

import pytest

from conftest import after_states, call, job_processes, wait_for

# Small tasks: memory is measured and enforced, so ask for little.
SMALL = ["--conf", "tony.worker.memory=256m", "--conf", "tony.ps.memory=256m", "--conf", "tony.chief.memory=256m"]


def role_cmd(cmds, default="true"):
    """A shell command that does cmds[<role>:<index>] or cmds[<role>], else default."""
    cases = " ".join(f'"{k}") {v} ;;' for k, v in cmds.items())
    return f'case "$JOB_NAME:$TASK_INDEX" in {cases} *) case "$JOB_NAME" in {cases} *) {default} ;; esac ;; esac'


def test_single_node_pass(tony):
    r = tony.submit("--executes", "echo single-node-ran; exit 0")
    assert r.rc == 0, r
    assert "SUCCEEDED" in r.out
    assert "single-node-ran" in (r.job_dir() / "attempts/0/am/stdout").read_text()
    assert (r.job_dir() / "attempts/0/am/work/tony-final.xml").exists()


def test_single_node_fail(tony):
    r = tony.submit("--executes", "echo boom >&2; exit 3")
    assert r.rc != 0, r
    st = r.status()
    assert st["final_status"] == "FAILED"
    assert "exit code 3" in st["diagnostics"]
    assert "boom" in (r.job_dir() / "attempts/0/am/stderr").read_text()


def test_root_cause_shows_what_a_terminal_would(tony):
    """Issue 34 #5: a colored traceback and a progress bar on stderr reach
    the root cause (the CLI, status, the job JSON the page and the portal
    show) without their escape sequences and carriage returns."""
    command = (r"printf '\033[1;31mTraceback\033[0m (most recent call last)\n 10%%\r100%% done\r\n"
               r"\033[33mValueError: boom\033[m\n' >&2; exit 1")
    r = tony.submit("--executes", command, "--conf", "tony.worker.instances=1", *SMALL)
    assert r.rc == 1, r
    status = tony.run("status", r.job_dir().name)
    js = tony.run("status", r.job_dir().name, "--json")
    for text in (r.text, status.out, js.out):
        assert "\x1b" not in text and "\\u001b" not in text and "\r" not in text, text
    assert "Traceback (most recent call last)\n100% done\nValueError: boom" in json.dumps(json.loads(js.out)).replace(
        "\\n", "\n"), js.out
    assert "ValueError: boom" in r.text, r


def test_setup_failure_after_the_plan_still_writes_status_json(tony):
    """The coordinator's setup fails once the plan is made (the shared dir
    cannot be made), before anything is recorded: status.json still ends
    FINISHED, FAILED, with the reason (issue 27: its write is the
    recorder's, whose part does not exist yet then)."""
    r = tony.submit("--conf", "tony.application.shared-dir=/proc/nope/x", "--executes", "true")
    assert r.rc != 0, r
    st = json.loads((r.job_dir() / "status.json").read_text())
    assert st["state"] == "FINISHED" and st["final_status"] == "FAILED", st
    assert "/proc/nope/x" in st["diagnostics"], st


def test_ps_worker_pass(tony):
    r = tony.submit("--executes", role_cmd({"ps": "sleep 300"}, "echo $JOB_NAME $TASK_INDEX"),
                    "--conf", "tony.ps.instances=1", "--conf", "tony.worker.instances=2", *SMALL)
    assert r.rc == 0, r
    assert "SUCCEEDED: worker [0, 1]" in r.out
    # the untracked ps was stopped once the workers were done: TonY's FINISHED
    assert r.task("ps", 0)["state"] == "FINISHED"
    assert r.log("worker", 1).strip() == "worker 1"
    final = r.job_dir() / "attempts/0/worker-1/work/tony-final.xml"
    assert "tony.worker.instances" in final.read_text()


def test_ps_worker_fail_all_workers(tony):
    r = tony.submit("--executes", role_cmd({"ps": "sleep 300", "worker": "exit 2"}),
                    "--conf", "tony.ps.instances=1", "--conf", "tony.worker.instances=2", *SMALL)
    assert r.rc != 0, r
    assert r.status()["final_status"] == "FAILED"


def test_chief_failure_fails_fast(tony):
    t0 = time.time()
    r = tony.submit("--executes", role_cmd({"chief": "sleep 1; exit 7"}, "sleep 120"),
                    "--conf", "tony.chief.instances=1", "--conf", "tony.worker.instances=2", *SMALL)
    assert r.rc != 0, r
    assert time.time() - t0 < 60
    st = r.status()
    assert "Chief task [chief:0] failed" in st["diagnostics"]
    assert r.task("chief", 0)["exit_status"] == 7
    assert r.task("worker", 0)["state"] == "FINISHED"


def test_worker0_is_chief_without_chief_role(tony):
    r = tony.submit("--executes", role_cmd({"worker:0": "exit 1", "ps": "sleep 300"}, "sleep 120"),
                    "--conf", "tony.ps.instances=1", "--conf", "tony.worker.instances=2", *SMALL)
    assert r.rc != 0, r
    assert "Chief task [worker:0] failed" in r.status()["diagnostics"]


def test_non_chief_worker_failure_tolerated_with_ps(tony):
    # Parameter-server training survives a lost worker: TonY's lenient rule.
    r = tony.submit("--executes", role_cmd({"worker:1": "exit 1", "ps": "sleep 300", "worker:0": "sleep 2"}),
                    "--conf", "tony.ps.instances=1", "--conf", "tony.worker.instances=2", *SMALL)
    assert r.rc == 0, r
    st = r.status()
    assert st["final_status"] == "SUCCEEDED"
    assert "some worker jobs failure, failedCnt=1" in st["diagnostics"]
    assert r.task("worker", 1)["state"] == "FAILED"


def test_fail_on_worker_failure(tony):
    r = tony.submit("--executes", role_cmd({"worker:1": "exit 1", "ps": "sleep 300"}, "sleep 60"),
                    "--conf", "tony.ps.instances=1", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.application.fail-on-worker-failure-enabled=true", *SMALL)
    assert r.rc != 0, r
    assert "fail-on-worker-failure-enabled" in r.status()["diagnostics"]


def test_lockstep_worker_failure_ends_attempt_at_once(tony):
    # No ps: TF collective all-reduce. Survivors would hang in their
    # collective, so one failed worker ends the attempt now.
    t0 = time.time()
    r = tony.submit("--executes", role_cmd({"worker:2": "sleep 1; exit 1"}, "sleep 120"),
                    "--conf", "tony.worker.instances=3", *SMALL)
    assert r.rc != 0, r
    assert time.time() - t0 < 60
    assert "lock-step" in r.status()["diagnostics"]


def test_lockstep_can_be_turned_off(tony):
    r = tony.submit("--executes", role_cmd({"worker:1": "exit 1"}, "sleep 2"),
                    "--conf", "tony.worker.instances=2",
                    "--conf", "tony.application.fail-fast-lockstep=false", *SMALL)
    assert r.rc == 0, r


def test_untracked_failure_fails_fast(tony):
    t0 = time.time()
    r = tony.submit("--executes", role_cmd({"ps": "sleep 1; exit 5"}, "sleep 120"),
                    "--conf", "tony.ps.instances=1", "--conf", "tony.worker.instances=1", *SMALL)
    assert r.rc != 0, r
    assert time.time() - t0 < 60
    assert "Untracked task [ps:0]" in r.status()["diagnostics"]


def test_sidecar_failure_ignored(tony):
    # the worker ends once the coordinator saw the sidecar fail: the job would
    # stop a sidecar still starting (FINISHED) when it ends (issue 40)
    r = tony.submit("--executes", role_cmd({"tensorboard": "exit 9"}, after_states({"tensorboard:0": "FAILED"})),
                    "--conf", "tony.tensorboard.instances=1", "--conf", "tony.tensorboard.memory=128m",
                    "--conf", "tony.worker.instances=1", *SMALL)
    assert r.rc == 0, r
    assert r.task("tensorboard", 0)["state"] == "FAILED"


def test_stop_on_failure_jobtypes(tony):
    t0 = time.time()
    r = tony.submit("--executes", role_cmd({"evaluator": "exit 4", "ps": "sleep 300"}, "sleep 120"),
                    "--conf", "tony.ps.instances=1", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.evaluator.instances=1", "--conf", "tony.evaluator.memory=128m",
                    "--conf", "tony.application.stop-on-failure-jobtypes=evaluator", *SMALL)
    assert r.rc != 0, r
    assert time.time() - t0 < 60
    assert "stop-on-failure-jobtypes" in r.status()["diagnostics"]


def test_frozen_executor_detected_by_missed_heartbeats(tony):
    p = tony.popen("submit", "--conf", "tony.local.vcores=8", "--executes", "sleep 300",
                   "--conf", "tony.worker.instances=2", "--conf", "tony.task.heartbeat-interval-ms=200",
                   "--conf", "tony.task.max-missed-heartbeats=5", *SMALL)
    jobs = tony.home / "jobs"

    def running_executor():
        for job in jobs.glob("*"):
            for pid in job_processes(tony.home):
                try:
                    cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
                    env = open(f"/proc/{pid}/environ", "rb").read()
                except OSError:
                    continue
                if len(cmd) > 1 and cmd[1] == b"executor" and b"TONY_TASK_ID=worker:1" in env:
                    st = (job / "status.json").read_text() if (job / "status.json").exists() else ""
                    if '"RUNNING"' in st:
                        return pid
        return None

    pid = wait_for(running_executor, 60, what="worker:1's executor running")
    t0 = time.time()
    os.kill(pid, signal.SIGSTOP)
    out, err = p.communicate(timeout=60)
    assert p.returncode != 0, out + err
    assert time.time() - t0 < 20
    assert "missed [5] heartbeats" in out


def test_whole_job_restart_exports_attempt(tony):
    # Attempt 0 fails; attempt 1 sees SESSION_ID=1 / NUM_AM_RETRIES=1 and a
    # job dir that kept what attempt 0 wrote.
    cmd = ('echo "attempt $SESSION_ID retries ${NUM_AM_RETRIES:-unset}" >> "$TONY_JOB_DIR/seen-$TASK_INDEX"; '
           'if [ "$SESSION_ID" = 0 ]; then exit 1; fi; cat "$TONY_JOB_DIR/seen-$TASK_INDEX"')
    r = tony.submit("--executes", cmd, "--conf", "tony.worker.instances=2",
                    "--conf", "tony.am.retry-count=1", *SMALL)
    assert r.rc == 0, r
    assert r.status()["attempt"] == 1
    # worker 0: its failure ends attempt 0, so it wrote its line for sure
    # (worker 1 may be stopped before its shell ran).
    assert r.log("worker", 0, attempt=1).split("\n")[:2] == ["attempt 0 retries unset", "attempt 1 retries 1"]


def test_restart_exhausted_fails(tony):
    r = tony.submit("--executes", "exit 1", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.am.retry-count=2", *SMALL)
    assert r.rc != 0, r
    assert r.status()["attempt"] == 2


def test_application_timeout(tony):
    t0 = time.time()
    r = tony.submit("--executes", "sleep 300", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.application.timeout=2000", "--conf", "tony.am.retry-count=3", *SMALL)
    assert r.rc != 0, r
    assert time.time() - t0 < 30
    assert "timed out" in r.status()["diagnostics"]


def test_execution_timeout(tony):
    r = tony.submit("--executes", "sleep 300", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.task.executor.execution-timeout-ms=1500", *SMALL)
    assert r.rc != 0, r
    assert r.task("worker", 0)["exit_status"] == 124


def test_prepare_stage_runs_before_training(tony):
    cmd = role_cmd({"prep": 'sleep 1; echo prepared > "$TONY_JOB_DIR/prep"',
                    "worker": 'cat "$TONY_JOB_DIR/prep"'})
    r = tony.submit("--executes", cmd, "--conf", "tony.prep.instances=1", "--conf", "tony.prep.memory=128m",
                    "--conf", "tony.worker.instances=2", "--conf", "tony.application.prepare-stage=prep",
                    "--conf", "tony.application.training-stage=worker", *SMALL)
    assert r.rc == 0, r
    assert r.log("worker", 1).strip() == "prepared"


def test_fcfs_tasks_start_without_gang(tony):
    r = tony.submit("--executes", 'echo "tfconfig=${TF_CONFIG:-none}"', "--conf", "tony.worker.instances=2",
                    "--conf", "tony.application.distributed-mode=FCFS", *SMALL)
    assert r.rc == 0, r
    assert r.log("worker", 0).strip() == "tfconfig=none"


def test_memory_limit_kills_task_with_diagnostic(tony, scripts):
    (scripts / "hog.py").write_text("b = bytearray(400 * 1024 * 1024)\nimport time\nfor i in range(len(b)//4096): b[i*4096]=1\ntime.sleep(60)\n")
    r = tony.submit("--src_dir", str(scripts), "--python_binary_path", "/usr/bin/python3", "--executes", "hog.py",
                    "--conf", "tony.worker.instances=1", "--conf", "tony.worker.memory=128m")
    assert r.rc != 0, r
    t = r.task("worker", 0)
    assert t["exit_status"] == -104
    assert "running beyond physical memory limits" in t["diagnostics"]
    assert "tony.worker.memory" in t["diagnostics"]


def test_sidecar_that_never_starts_does_not_hold_the_gang(tony, tmp_path):
    # The sidecar's container fails while localizing (not an archive), so it
    # never registers; the gang must not wait for it.
    bogus = tmp_path / "notarchive.txt"
    bogus.write_text("plain text\n")
    r = tony.submit("--executes", "true", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.tensorboard.instances=1", "--conf", "tony.tensorboard.memory=128m",
                    "--conf", f"tony.tensorboard.resources={bogus}#archive", *SMALL, timeout=60)
    assert r.rc == 0, r
    assert r.task("tensorboard", 0)["state"] == "FAILED"


def test_single_node_execution_timeout(tony):
    t0 = time.time()
    r = tony.submit("--executes", "sleep 300", "--conf", "tony.worker.timeout=1000")
    assert r.rc != 0, r
    assert time.time() - t0 < 30
    assert "Timed out" in r.status()["diagnostics"]


def test_finishing_coordinator_tells_heartbeats_to_stop(tony):
    """Issue 11 #1: while the coordinator finishes (the workers are done, the
    ps is being stopped), an executor's heartbeat is answered "stop", so an
    executor stops its task itself even where the backend's stop cannot
    reach it. The ps ignores SIGTERM here, which holds the job in FINISHING
    for the executor's grace period (2 s) before SIGKILL."""
    r = tony.submit("--detach", "--executes", role_cmd({"ps": "trap '' TERM; sleep 300"}, "sleep 2"),
                    "--conf", "tony.ps.instances=1", "--conf", "tony.worker.instances=1", *SMALL)
    assert r.rc == 0, r
    job = r.job_dir()
    wait_for(lambda: (job / "am.json").exists(), 30, what="the coordinator")
    url = json.loads((job / "am.json").read_text())["url"]
    secret = (job / "secret").read_text().strip()

    def finishing():
        st, body = call(url + "/v1/job")
        return st == 200 and body["state"] == "FINISHING" and body
    wait_for(finishing, 60, interval=0.05, what="the coordinator in FINISHING")
    st, body = call(url + "/v1/tasks/ps/0/heartbeat", "POST", '{"attempt":0}', secret=secret)
    assert st == 409 and body["status"] == "stop", (st, body)
    wait_for(lambda: json.loads((job / "status.json").read_text())["final_status"] == "SUCCEEDED", 30,
             what="SUCCEEDED")
    ps = [t for t in json.loads((job / "status.json").read_text())["tasks"] if t["role"] == "ps"][0]
    # stopped by the coordinator (whoever sent the signal): TonY's FINISHED, not a failure
    assert ps["state"] == "FINISHED", ps
