"""Restart policies and root cause on the local backend, with real Python
(and PyTorch) processes: `exit-code` does not retry a script's own error
(sys.exit(1), an uncaught exception) but retries a SIGKILLed task; the
first task to fail, its exit meaning and its traceback reach `tony submit`'s
output, `tony status` and the job's JSON; torch's @record error file is
read in preference to stderr; a bad policy value is refused at submit.
Backoff is for crash loops: a task failing once restarts at once, the
second quick failure in a row waits tony.application.restart-backoff-ms
(timed from the job's events)."""
import json
import time

import pytest

from conftest import REPO, wait_for

SMALL = ["--conf", "tony.worker.memory=512m", "--conf", "tony.worker.instances=2",
         "--conf", "tony.application.fail-on-worker-failure-enabled=true"]


def script(tmp_path, name, text):
    d = tmp_path / "src"
    d.mkdir(exist_ok=True)
    (d / name).write_text(text)
    return ["--src_dir", str(d), "--python_binary_path", str(PYTHON), "--executes", name]


PYTHON = REPO / "build/pyenv/bin/python"

RAISES = """
import os, sys, time
if os.environ["TASK_INDEX"] == "1":
    print("rank 1 about to fail", file=sys.stderr)
    def load(path):
        raise ValueError("no such shard: " + path)
    load("/data/shard-7")
time.sleep(30)  # rank 0 is stopped when rank 1 fails
"""


def test_exit_code_policy_does_not_retry_script_error(tony, tmp_path):
    t0 = time.time()
    r = tony.submit(*script(tmp_path, "raises.py", RAISES), *SMALL, "--conf", "tony.am.retry-count=3",
                    "--conf", "tony.application.restart-policy=exit-code")
    assert r.rc != 0, r
    assert time.time() - t0 < 25  # no restart, no backoff
    st = r.status()
    assert st["attempt"] == 0 and st["retries_left"] == 3, st
    cause = st["root_cause"]
    assert cause["task"] == "worker:1" and cause["exit_status"] == 1, cause
    assert cause["exit_meaning"] == "exit code 1 (the script's own error)"
    assert "ValueError: no such shard: /data/shard-7" in cause["stderr_tail"]
    assert 'raise ValueError("no such shard: " + path)' in cause["stderr_tail"]
    diag = st["diagnostics"]
    assert "Not retried: exit code 1 is the script's own error" in diag, diag
    assert "tony.application.restart-policy is exit-code" in diag
    # tony submit's output: the reason, then the failing rank's traceback
    assert "Root cause: worker:1 failed first in attempt 0" in r.out, r
    assert "    ValueError: no such shard: /data/shard-7" in r.out, r
    # tony status, after the end
    s = tony.run("status", st["app_id"], check_rc=None)
    assert "Root cause: worker:1 failed first" in s.out, s
    assert "ValueError: no such shard" in s.out, s
    # the history (its events) keeps it
    h = tony.run("history", st["app_id"], check_rc=None)
    assert "Root cause: worker:1 failed first" in h.out and "ValueError: no such shard" in h.out, h


KILLED_ONCE = """
import os, signal, sys
marker = os.path.join(os.environ["TONY_JOB_DIR"], "killed-once")
if os.environ["TASK_INDEX"] == "0" and not os.path.exists(marker):
    open(marker, "w").close()
    print("rank 0 going down", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
print("attempt", os.environ["SESSION_ID"], "ok")
"""


def events(r):
    path = next(r.home.glob("history/intermediate/*/events.jsonl"), None) or \
        next(r.home.glob("history/finished/*/*/*/*/events.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


def restart_gaps(r, task="worker:0"):
    """Per restart, ms from the task's failed end in an attempt to its
    process starting in the next one (the events' own clock)."""
    ev = events(r)
    ends = {e["attempt"]: e["t_ms"] for e in ev if e["type"] == "TASK_FINISHED" and e.get("task") == task}
    starts = {e["attempt"]: e["t_ms"] for e in ev if e["type"] == "TASK_STARTED" and e.get("task") == task}
    return [starts[a + 1] - ends[a] for a in sorted(ends) if a + 1 in starts]


def test_exit_code_policy_retries_sigkill_at_once(tony, tmp_path):
    """A task that fails once restarts at once: well under the backoff,
    which only a crash loop waits (docs/failures.md: restart backoff)."""
    r = tony.submit(*script(tmp_path, "killed.py", KILLED_ONCE), *SMALL, "--conf", "tony.am.retry-count=2",
                    "--conf", "tony.application.restart-policy=exit-code",
                    "--conf", "tony.application.restart-backoff-ms=5000")
    assert r.rc == 0, r
    st = r.status()
    assert st["attempt"] == 1 and st["final_status"] == "SUCCEEDED", st
    gaps = restart_gaps(r)
    assert len(gaps) == 1 and gaps[0] < 2500, gaps  # not the 5 s backoff
    # the root cause of the failed attempt stays in the job's record
    assert st["root_cause"]["task"] == "worker:0" and st["root_cause"]["exit_status"] == 137, st["root_cause"]
    assert "rank 0 going down" in st["root_cause"]["stderr_tail"]
    # the client said why attempt 0 failed when it restarted
    assert "tony: Root cause: worker:0 failed first in attempt 0" in r.out, r
    assert "killed by signal 9 (SIGKILL)" in r.out and "    rank 0 going down" in r.out, r
    w0 = [t for t in st["tasks"] if t["role"] == "worker" and t["index"] == 0][0]
    assert w0["state"] == "SUCCEEDED" and [run["state"] for run in w0["runs"]] == ["FAILED", "SUCCEEDED"], w0


# rank 0 is killed in each of the first `times` attempts (a crash loop)
KILLED_TIMES = """
import os, signal, sys
n = len([f for f in os.listdir(os.environ["TONY_JOB_DIR"]) if f.startswith("killed-")])
if os.environ["TASK_INDEX"] == "0" and n < {times}:
    open(os.path.join(os.environ["TONY_JOB_DIR"], "killed-%d" % n), "w").close()
    print("rank 0 going down", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
print("attempt", os.environ["SESSION_ID"], "ok")
"""


def test_crash_loop_backs_off_from_the_second_failure(tony, tmp_path):
    """Three quick failures in a row: the first restart at once, then the
    backoff, then twice the backoff."""
    r = tony.submit(*script(tmp_path, "loop.py", KILLED_TIMES.format(times=3)), *SMALL,
                    "--conf", "tony.am.retry-count=3", "--conf", "tony.application.restart-backoff-ms=2000")
    assert r.rc == 0, r
    assert r.status()["attempt"] == 3, r.status()
    gaps = restart_gaps(r)
    assert len(gaps) == 3, gaps
    assert gaps[0] < 1500, gaps
    assert 2000 <= gaps[1] < 2000 + 1500, gaps
    assert 4000 <= gaps[2] < 4000 + 1500, gaps


def test_healthy_attempt_restarts_at_once(tony, tmp_path):
    """An attempt that ran the healthy stretch before failing is no crash
    loop: the second failure, after it, restarts at once too."""
    r = tony.submit(*script(tmp_path, "loop.py", "import time; time.sleep(1.5)\n" + KILLED_TIMES.format(times=2)),
                    *SMALL, "--conf", "tony.am.retry-count=2", "--conf", "tony.application.restart-backoff-ms=5000",
                    "--conf", "tony.application.restart-healthy-ms=1000")
    assert r.rc == 0, r
    gaps = restart_gaps(r)
    assert len(gaps) == 2 and all(g < 2500 for g in gaps), gaps


def test_status_during_backoff_shows_root_cause(tony, tmp_path):
    """While the coordinator waits out the backoff (a crash loop's second
    failure) the job is in BACKOFF and `tony status` says why the last
    attempt failed."""
    r = tony.submit("--detach", *script(tmp_path, "killed.py", KILLED_TIMES.format(times=2)), *SMALL,
                    "--conf", "tony.am.retry-count=2", "--conf", "tony.application.restart-backoff-ms=20000")
    assert r.rc == 0, r
    app_id = r.job_dir().name

    def backoff():
        s = tony.run("status", app_id, "--json")
        return s.rc == 0 and json.loads(s.out).get("state") == "BACKOFF"
    wait_for(backoff, 30, what="the job in BACKOFF")
    t0 = time.time()
    job = json.loads(tony.run("status", app_id, "--json").out)
    assert job["restart_at_ms"] > time.time() * 1000 + 5000, job  # about 20 s after the failure
    s = tony.run("status", app_id)
    assert "last failed attempt: Root cause: worker:0 failed first in attempt 1" in s.out, s
    assert "killed by signal 9 (SIGKILL)" in s.out and "rank 0 going down" in s.out, s
    # a kill during the wait ends the job there, KILLED
    tony.run("kill", app_id, check_rc=0)
    wait_for(lambda: r.status()["state"] == "FINISHED", 30, what="the end")
    st = r.status()
    assert st["final_status"] == "KILLED" and st["attempt"] == 1, st
    assert "Killed by the user while waiting to restart" in st["diagnostics"], st
    assert time.time() - t0 < 15


RECORD = """
import os, time
from torch.distributed.elastic.multiprocessing.errors import record

@record
def main():
    if os.environ["TASK_INDEX"] == "1":
        raise RuntimeError("rank 1 lost its optimizer state")
    time.sleep(60)

if __name__ == "__main__":
    main()
"""


@pytest.mark.ml
def test_torch_record_error_file_is_the_root_cause(tony, tmp_path):
    pytest.importorskip("torch")
    r = tony.submit(*script(tmp_path, "record.py", RECORD), *SMALL, "--conf", "tony.application.framework=pytorch")
    assert r.rc != 0, r
    st = r.status()
    cause = st["root_cause"]
    assert cause["task"] == "worker:1", cause
    assert "RuntimeError: rank 1 lost its optimizer state" in cause["error"], cause
    assert "Traceback (most recent call last)" in cause["error"]
    assert "Its error file (torch's @record) says:" in r.out, r
    # the file is where TORCHELASTIC_ERROR_FILE pointed: the task's log dir
    f = r.job_dir() / "attempts/0/worker-1/torchelastic_error.json"
    assert json.loads(f.read_text())["message"]["message"].startswith("RuntimeError")


def test_bad_policy_is_refused_at_submit(tony):
    r = tony.submit("--executes", "true", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.worker.restart-policy=always")
    assert r.rc != 0, r
    assert "tony.worker.restart-policy must be on-failure, never or exit-code, got 'always'" in r.text, r


def test_single_node_failure_has_root_cause(tony, tmp_path):
    """A single-node command (no instances: it runs in the coordinator's
    place) that fails has the root cause a failed task has: in the job's
    JSON (`tony status --json`) and in its diagnostics."""
    r = tony.submit(*script(tmp_path, "raises.py", "raise ValueError('no such shard: /data/shard-3')\n"))
    assert r.rc != 0, r
    st = json.loads(tony.run("status", r.job_dir().name, "--json", check_rc=0).out)
    cause = st["root_cause"]
    assert cause["task"] == "am:0" and cause["attempt"] == 0 and cause["exit_status"] == 1, cause
    assert "ValueError: no such shard: /data/shard-3" in cause["stderr_tail"], cause
    assert cause["text"].startswith("Root cause: am:0 failed first"), cause
    assert "no such shard" in st["diagnostics"], st["diagnostics"]
