"""Nothing of a job outlives it (issue 20 #6) and its files are its owner's
(#7): processes a task detaches with setsid end with the task, also at an
in-place restart; task logs are capped (tony.task.log-max-size) keeping
their head and tail; a full disk's final state reaches status.json; a job
whose coordinator was SIGKILLed is LOST and `tony kill` stops what it left;
another user is told "permission denied"; a umask of 000 leaves nothing
world-writable."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import ATTACKER, TONY as TONY_BIN, alive, second_user, wait_for

SMALL = ["--conf", "tony.worker.memory=256m", "--conf", "tony.worker.instances=1"]

# A daemon the usual way: fork, setsid, fork again; the grandchild writes
# its pid to argv[1] and sleeps. The task waits for the pid, then exits
# with argv[2].
DAEMON = r'''
import os, sys, time
path, code = sys.argv[1], int(sys.argv[2])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(path + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(path + ".tmp", path)
        time.sleep(300)
    os._exit(0)
while not os.path.exists(path):
    time.sleep(0.05)
sys.exit(code)
'''


def daemon_pids(tmp_path, pattern="daemon*.pid"):
    return [int(p.read_text()) for p in sorted(tmp_path.glob(pattern))]


def gone(pid, within=10):
    end = time.time() + within
    while time.time() < end:
        if not alive(pid):
            return True
        time.sleep(0.1)
    return False


def test_setsid_grandchildren_end_with_the_task(tony, tmp_path):
    script = tmp_path / "daemon.py"
    script.write_text(DAEMON)
    r = tony.submit("--executes", f"{sys.executable} {script} {tmp_path}/daemon.pid 0", *SMALL)
    pids = daemon_pids(tmp_path)
    try:
        assert r.rc == 0, r
        assert len(pids) == 1, r
        assert gone(pids[0]), f"the task's setsid daemon {pids[0]} outlived the job"
        assert "ended 1 process(es) the task left behind" in r.log("worker", 0, "executor.log")
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_setsid_grandchildren_end_at_an_in_place_restart(tony, tmp_path):
    """Attempt 0 leaves a daemon and fails; attempt 1 runs in the same
    executor and finds that daemon gone."""
    script = tmp_path / "daemon.py"
    script.write_text(DAEMON)
    check = tmp_path / "check.py"
    check.write_text("import os, sys\npid = int(open(sys.argv[1]).read())\n"
                     "print('daemon alive' if os.path.exists(f'/proc/{pid}') else 'daemon gone')\n")
    cmd = (f'if [ "$TONY_ATTEMPT" = 0 ]; then {sys.executable} {script} {tmp_path}/daemon0.pid 3; '
           f'else {sys.executable} {check} {tmp_path}/daemon0.pid; fi')
    r = tony.submit("--executes", cmd, "--conf", "tony.am.retry-count=1", *SMALL)
    pids = daemon_pids(tmp_path)
    try:
        assert r.rc == 0, r
        st = r.status()
        assert st["attempt"] == 1 and st["tasks"][0]["container_attempt"] == 0, st  # the same executor
        assert r.log("worker", 0, attempt=1).strip() == "daemon gone", r.log("worker", 0, attempt=1)
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_task_log_is_capped_keeping_head_and_tail(tony, tmp_path):
    """50 MB of stderr under a 1m cap: the file stays near the cap, starts
    with the first lines, ends with the last ones, and says what was cut."""
    writer = tmp_path / "chatty.py"
    writer.write_text("import sys\nfor i in range(500000):\n"
                      "    sys.stderr.write(f'line {i:07d} ' + 'x' * 86 + '\\n')\n"
                      "    if i % 20000 == 0: sys.stderr.flush(); __import__('time').sleep(0.02)\n"
                      "sys.stderr.write('the very last line\\n')\n")
    r = tony.submit("--executes", f"{sys.executable} {writer}", "--conf", "tony.task.log-max-size=1m", *SMALL,
                    timeout=300)
    assert r.rc == 0, r
    path = r.job_dir() / "attempts/0/worker-0/stderr"
    size = path.stat().st_size
    assert size <= 1024 * 1024 + 64 * 1024, size
    text = path.read_text()
    assert text.startswith("line 0000000 "), text[:200]
    assert text.endswith("line 0499999 " + "x" * 86 + "\nthe very last line\n"), text[-300:]
    assert "==== tony: at least " in text and "bytes of this log were cut here (tony.task.log-max-size" in text
    cut = int(text.split(" bytes of this log were cut here")[0].rsplit(" ", 1)[1])
    # what was cut plus what is left is what was written (the marker aside),
    # but for what a cut may lose uncounted (logcap.h): what the task writes
    # between the cut's last look at the size and its truncate. Idle, that
    # is a line or two (< 0.1 %); on a loaded 2-core machine it was 1.3 %
    # once, so 5 % here (the known limit, not a goal)
    marker = [line for line in text.splitlines(True) if "were cut here" in line][0]
    written = 500000 * 100 + len("the very last line\n")
    assert written * 0.95 <= cut + len(text) - len(marker) - 1 <= written, cut
    assert "stderr passed tony.task.log-max-size" in r.log("worker", 0, "executor.log")


def test_log_cap_zero_keeps_everything(tony, tmp_path):
    r = tony.submit("--executes", "head -c 6000000 /dev/zero | tr '\\0' x", "--conf", "tony.task.log-max-size=0",
                    *SMALL)
    assert r.rc == 0, r
    assert (r.job_dir() / "attempts/0/worker-0/stdout").stat().st_size == 6000000


def test_log_cap_refuses_a_bad_value(tony):
    r = tony.submit("--executes", "true", "--conf", "tony.task.log-max-size=lots", *SMALL)
    assert r.rc == 2, r
    assert "tony.task.log-max-size" in r.err, r


def test_kill_after_a_sigkilled_coordinator_stops_what_it_left(tony, tmp_path):
    """The coordinator is SIGKILLed while its task runs: `tony list` and
    `tony status` say LOST (not RUNNING forever), and `tony kill` stops the
    executor and the task's processes, the detached daemon too, and exits 0
    only once nothing of the job runs."""
    from conftest import job_processes
    script = tmp_path / "daemon.py"
    script.write_text(DAEMON)
    r = tony.submit("--detach", "--executes", f"{sys.executable} {script} {tmp_path}/daemon.pid 0 && sleep 300",
                    *SMALL)
    assert r.rc == 0, r
    job = r.job_dir()
    pid = wait_for(lambda: (tmp_path / "daemon.pid").exists() and json.loads((job / "am.json").read_text())["pid"],
                   60, what="the task's daemon")
    daemon = int((tmp_path / "daemon.pid").read_text())
    try:
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not alive(pid), 10, what="the coordinator gone")
        row = [line for line in tony.run("list").out.splitlines() if job.name in line]
        assert row and row[0].split()[2] == "LOST", row
        st = tony.run("status", job.name)
        assert f"job {job.name}: LOST" in st.out and "coordinator not running" in st.out, st
        assert json.loads(tony.run("status", job.name, "--json").out)["state"] == "LOST"
        assert alive(daemon) and job_processes(tony.home), "nothing of the job ran on to be killed"
        k = tony.run("kill", job.name, timeout=60)
        assert k.rc == 0, k
        assert "is not running" in k.err and "stopped the" in k.err, k
        assert not alive(daemon), "the task's daemon outlived `tony kill`"
        assert not job_processes(tony.home), job_processes(tony.home)
        # killing it again: nothing runs, and it says so
        again = tony.run("kill", job.name, timeout=60)
        assert again.rc == 0 and "nothing of the job runs" in again.err, again
    finally:
        if alive(daemon):
            os.kill(daemon, signal.SIGKILL)


def test_kill_of_a_lost_job_fails_while_something_of_it_survives(open_home):
    """A process of the job that `tony kill` cannot stop makes it fail, not
    say all is well: here the job is an unprivileged user's, and something
    outside it (root's) keeps starting that user's processes with the job's
    environment faster than they are killed."""
    attacker_user()
    home = os.path.join(open_home, "home")
    os.mkdir(home, 0o700)
    shutil.chown(home, ATTACKER, ATTACKER)
    env = dict(os.environ, TONY_HOME=home, HOME=home)
    env.pop("HADOOP_CONF_DIR", None)
    as_user = ["runuser", "-u", ATTACKER, "--", TONY_BIN]
    r = subprocess.run([*as_user, "submit", "--detach", "--conf", "tony.local.vcores=16", "--conf",
                        "tony.local.memory=16g", "--executes", "sleep 300", *SMALL],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r
    job = next(iter(os.scandir(os.path.join(home, "jobs")))).path
    wait_for(lambda: os.path.exists(os.path.join(job, "am.json")) and
             json.load(open(os.path.join(job, "status.json")))["tasks"][0]["state"] == "RUNNING", 60,
             what="the task running")
    # a root loop (without the job's env: not the job's) starting that user's sleepers with it
    loop = (f"while :; do setpriv --reuid={ATTACKER} --regid={ATTACKER} --clear-groups "
            f"env TONY_LOG_DIR={job}/attempts/0/worker-0/ sleep 120 & sleep 0.05; done")
    spawner = subprocess.Popen(["bash", "-c", loop], env={"PATH": os.environ["PATH"]}, start_new_session=True)
    try:
        wait_for(lambda: any(b"TONY_LOG_DIR=" + str(job).encode() in _environ(p) and _owner(p) == ATTACKER
                             for p in os.listdir("/proc") if p.isdigit()), 10, what="the respawned sleepers")
        os.kill(json.load(open(os.path.join(job, "am.json")))["pid"], signal.SIGKILL)
        k = subprocess.run([*as_user, "kill", os.path.basename(job)], env=env, capture_output=True, text=True,
                           timeout=90)
        assert k.returncode == 3 and "of the job still run after SIGKILL" in k.stderr, k
    finally:
        os.killpg(spawner.pid, signal.SIGKILL)
        spawner.wait()
        # whatever of that user's job is left (by its home in their env: only this test's processes)
        from conftest import job_processes
        from pathlib import Path
        for pid in job_processes(Path(home)):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _owner(pid):
    import pwd
    try:
        return pwd.getpwuid(os.stat(f"/proc/{pid}").st_uid).pw_name
    except (OSError, KeyError):
        return None


def _environ(pid):
    try:
        return open(f"/proc/{pid}/environ", "rb").read()
    except OSError:
        return b""




def attacker_user():
    if os.geteuid() != 0:
        pytest.skip("needs root to act as a second local user")
    second_user()


@pytest.fixture
def open_home(tmp_path_factory):
    """A TONY_HOME another user can walk to (pytest's tmp dirs are 0700),
    as a home under /home would be."""
    import tempfile
    d = tempfile.mkdtemp(prefix="tony-victim-", dir="/tmp")
    os.chmod(d, 0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_another_user_is_told_permission_denied(open_home, tmp_path):
    from conftest import Tony
    attacker_user()
    from pathlib import Path
    victim = Tony(Path(open_home) / "home")
    r = victim.submit("--executes", "echo private", *SMALL)
    assert r.rc == 0, r
    job = r.job_dir()
    assert (job.parent.stat().st_mode & 0o777) == 0o700, oct(job.parent.stat().st_mode)
    for verb in (["status", job.name], ["logs", job.name], ["kill", job.name], ["status", str(job)]):
        p = subprocess.run(["runuser", "-u", ATTACKER, "--", TONY_BIN, *verb],
                           env=dict(victim.env, HOME="/nonexistent"), capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, (verb, p)
        assert f"permission denied: job {job.name} in " in p.stderr and "belongs to root" in p.stderr, (verb, p)
        assert "no job" not in p.stderr and "private" not in p.stdout, (verb, p)
    p = subprocess.run(["runuser", "-u", ATTACKER, "--", TONY_BIN, "list"],
                       env=dict(victim.env, HOME="/nonexistent"), capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "permission denied" in p.stderr, p


def test_umask_000_leaves_nothing_world_writable(tony):
    old = os.umask(0)
    try:
        r = tony.submit("--executes", "echo hi", *SMALL)
    finally:
        os.umask(old)
    assert r.rc == 0, r
    loose = [f"{oct(p.stat().st_mode & 0o777)} {p}" for p in tony.home.rglob("*")
             if not p.is_symlink() and p.stat().st_mode & 0o002]
    assert not loose, loose
    assert ((tony.home / "jobs").stat().st_mode & 0o777) == 0o700
    hist = [p for p in (tony.home / "history").rglob("*") if p.is_file()]
    assert any(p.suffix == ".jhist" for p in hist), hist
    assert all(p.stat().st_mode & 0o077 in (0, 0o040) for p in hist), [(oct(p.stat().st_mode), p) for p in hist]


@pytest.fixture
def small_disk(tmp_path):
    """A 48 MiB tmpfs as the jobs' root, unmounted after."""
    root = tmp_path / "small-disk"
    root.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m,mode=0700", "tmpfs", str(root)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip()}")
    try:
        yield root
    finally:
        subprocess.run(["umount", "-l", str(root)])


def test_full_disk_final_state_reaches_status_json(small_disk):
    """The task fills the disk and succeeds: status.json, which the
    coordinator can no longer rewrite the usual way, still ends FINISHED
    (not stale at RUNNING/REGISTERING) and says why it is short; the
    client says the state could not be saved and the history is short."""
    from conftest import Tony
    home = small_disk / "home"
    t = Tony(home)
    r = t.submit("--executes", "head -c 200000000 /dev/zero > fill; sleep 3; true", *SMALL, timeout=180)
    job = r.job_dir()
    try:
        st = json.loads((job / "status.json").read_text())
        assert st["state"] == "FINISHED" and st["final_status"] == "SUCCEEDED", st
        assert "No space left on device" in st["status_error"], st
        assert "No space left on device" in st.get("history_error", ""), st
        assert "could not save the job's state" in r.out and "history is incomplete" in r.out, r
        s = t.run("status", job.name)
        assert f"job {job.name}: FINISHED" in s.out and "LOST" not in s.out, s
    finally:
        for fill in job.glob("attempts/*/*/work/fill"):
            fill.unlink()


def test_logs_follow_goes_on_past_a_cut(tony, tmp_path):
    """`tony logs -f` of a capped log that is cut under it goes on from the
    new end (it used to wait past the file's end and miss the rest)."""
    writer = tmp_path / "slow.py"
    writer.write_text("import sys, time\nfor i in range(30):\n"
                      "    sys.stdout.write(''.join(f'chunk {i:03d} line {j:05d} ' + 'y' * 80 + '\\n' for j in range(1000)))\n"
                      "    sys.stdout.flush(); time.sleep(0.1)\n"
                      "print('the very last line', flush=True)\n")
    r = tony.submit("--detach", "--executes", f"{sys.executable} {writer}", "--conf", "tony.task.log-max-size=1m",
                    *SMALL)
    assert r.rc == 0, r
    f = tony.run("logs", r.job_dir().name, "--task", "worker:0", "-f", timeout=120)
    assert f.rc == 0, f
    assert f.out.rstrip().endswith("the very last line"), f.out[-300:]
    assert "the log was cut here" in f.out
    # nothing printed twice: it goes on where it was in the kept tail
    lines = [(int(line.split()[1]), int(line.split()[3])) for line in f.out.splitlines()
             if line.startswith("chunk ") and len(line) == 101]
    assert lines == sorted(set(lines)) and lines[0] == (0, 0) and lines[-1] == (29, 999), lines[:3]
