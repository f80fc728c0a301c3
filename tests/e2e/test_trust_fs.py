"""What other users of the machine can leave on disk for a job's owner to
trip over (issue 33 items 2, 3, 5 and 6), tried as the suite's real second
local user: folders planted in a shared history location at the names the
owner's next jobs will take, a ./tony.xml in a shared working dir, a jobs/
dir made first and open to all (with a job folder swapped in that names an
unrelated process), and modes under umask 000."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import ATTACKER, TONY, Tony, alive, second_user, wait_for

SMALL = ["--conf", "tony.worker.memory=256m"]


@pytest.fixture
def attacker():
    if os.geteuid() != 0:
        pytest.skip("needs root to act as a second local user")
    return second_user()


@pytest.fixture
def shared(tmp_path):
    """A directory every local user may write, as /tmp is (1777, root's)."""
    d = Path(tempfile.mkdtemp(prefix="tony-shared-", dir="/tmp"))
    os.chmod(d, 0o1777)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def as_attacker(code, *args, cwd="/"):
    r = subprocess.run(["runuser", "-u", ATTACKER, "--", sys.executable, "-c", code, *map(str, args)], cwd=cwd,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


# The attacker's plant: the local backend's next app ids are
# application_<ms>_0001, so a folder for each millisecond of the next
# seconds (kept 4 s ahead of the clock, until the job is there), each with events.jsonl a link to
# a file of the owner's and an empty tony-final.xml anyone may write.
PLANT = r'''
import os, sys, time
inter, target, stop = sys.argv[1], sys.argv[2], sys.argv[3]
os.umask(0)
ms = int(time.time() * 1000)
ready = False
end = time.time() + 60
while time.time() < end and not os.path.exists(stop):
    while ms < time.time() * 1000 + 4000:
        d = f"{inter}/application_{ms}_0001"
        os.mkdir(d, 0o777)
        os.symlink(target, f"{d}/events.jsonl")
        open(f"{d}/tony-final.xml", "w").close()
        os.chmod(f"{d}/tony-final.xml", 0o666)
        ms += 1
    if not ready:
        print("ready", flush=True)
        ready = True
    time.sleep(0.05)
'''


def test_history_planted_in_a_shared_location_is_refused_and_kept_in_the_owners(tony, attacker, shared, tmp_path):
    history = shared / "history"
    for sub in ("", "intermediate", "finished"):  # as an admin sets a shared location up
        (history / sub).mkdir(exist_ok=True)
        os.chmod(history / sub, 0o1777)
    secret = tmp_path / "owners-file"
    secret.write_text("the owner's\n")
    os.chmod(secret, 0o600)
    os.chmod(tmp_path, 0o755)  # the link's target reachable: it is the owner who follows it
    stop = shared / "stop-planting"
    planter = subprocess.Popen(["runuser", "-u", ATTACKER, "--", sys.executable, "-c", PLANT,
                                str(history / "intermediate"), str(secret), str(stop)], cwd="/",
                               stdout=subprocess.PIPE, text=True)
    def stop_planting():  # once the job is there: it has its name
        wait_for(lambda: (tony.home / "jobs").is_dir() and any((tony.home / "jobs").iterdir()), 120,
                 interval=0.05, what="the job's dir")
        time.sleep(1)
        stop.touch()

    stopper = threading.Thread(target=stop_planting, daemon=True)
    try:
        assert planter.stdout.readline().strip() == "ready"
        stopper.start()
        r = tony.submit("--executes", "echo done", "--conf", f"tony.history.location=file://{history}",
                        "--conf", "tony.execution.envs=SECRET_VALUE=hunter2", *SMALL)
    finally:
        stop.touch()  # runuser does not pass a kill on: the planter stops itself
        planter.wait(timeout=60)
    assert r.rc == 0, r
    app = r.job_dir().name
    planted = history / "intermediate" / app
    # nothing of the owner's appended to or chmodded through the link
    assert secret.read_text() == "the owner's\n"
    assert (secret.stat().st_mode & 0o777) == 0o600, oct(secret.stat().st_mode)
    # nothing written into the other user's files
    assert (planted / "tony-final.xml").stat().st_size == 0
    assert not any(p.name.endswith((".jhist", ".inprogress")) for p in planted.iterdir()), list(planted.iterdir())
    # refused by name, with whose it is, and the history kept where its owner can find it
    am_log = (r.job_dir() / "am.log").read_text()
    assert str(planted) in am_log and ATTACKER in am_log and "refused" in am_log, am_log
    own = tony.home / "history"
    assert f"--location {own}" in am_log, am_log
    h = tony.run("history", app, "--location", str(own))
    assert h.rc == 0 and "SUCCEEDED" in h.out, h
    # asked where the job was meant to be, tony history says where it is
    # (the other planted folders, for other jobs, cleared first: thousands)
    for d in (history / "intermediate").iterdir():
        if d.name != app:
            shutil.rmtree(d)
    miss = tony.run("history", app, "--conf", f"tony.history.location=file://{history}")
    assert str(own) in miss.err, miss


def test_a_foreign_tony_xml_is_refused(tony, attacker, shared):
    work = shared / "work"
    as_attacker("import os, sys; os.mkdir(sys.argv[1], 0o777); os.chmod(sys.argv[1], 0o777)", work)
    marker = shared / "ran-as-owner"
    script = work / "evil.sh"
    as_attacker("import sys; open(sys.argv[1], 'w').write(f'touch {sys.argv[2]}\\n')", script, marker)
    xml = ("<configuration><property><name>tony.execution.envs</name>"
           f"<value>BASH_ENV={script}</value></property></configuration>")
    as_attacker("import sys; open(sys.argv[1] + '/tony.xml', 'w').write(sys.argv[2])", work, xml)
    run = [TONY, "submit", "--conf", "tony.local.vcores=16", "--conf", "tony.local.memory=16g",
           "--executes", "bash -c true", *SMALL]
    r = subprocess.run(run, cwd=work, env=tony.env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r
    assert "tony.xml" in r.stderr and ATTACKER in r.stderr and "TONY_TRUST_CONF" in r.stderr, r.stderr
    assert not marker.exists(), "the other user's BASH_ENV ran as the job's owner"
    # the same named as --conf_file, and accepted when its user says so
    r = subprocess.run([TONY, "submit", "--dry-run", "--conf_file", str(work / "tony.xml"), "--executes", "true"],
                       cwd="/", env=tony.env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and ATTACKER in r.stderr, r
    r = subprocess.run([TONY, "submit", "--dry-run", "--conf_file", str(work / "tony.xml"), "--executes", "true"],
                       cwd="/", env=dict(tony.env, TONY_TRUST_CONF=str(work / "tony.xml")), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r


def fake_job(pid):
    """A job folder's files whose am.json names pid as the job's coordinator,
    with the start time and boot id that name that process for good."""
    start = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19])
    boot = open("/proc/sys/kernel/random/boot_id").read().strip()
    return {"am.json": json.dumps({"url": "http://127.0.0.1:9", "pid": pid, "start": start, "boot_id": boot}),
            "status.json": json.dumps({"state": "RUNNING", "tasks": []}),
            "tony-final.xml": "<configuration></configuration>\n", "secret": "not the owner's\n"}


WRITE_JOB = r'''
import json, os, sys
d = sys.argv[1]
os.mkdir(d, 0o777)
os.chmod(d, 0o777)
for name, text in json.loads(sys.argv[2]).items():
    open(os.path.join(d, name), "w").write(text)
'''


def test_a_foreign_jobs_dir_is_refused_and_kill_signals_only_the_jobs_coordinator(attacker, shared):
    home = shared / "home"
    home.mkdir()
    os.chmod(home, 0o1777)  # a TONY_HOME in a shared place: whoever comes first makes jobs/
    as_attacker("import os, sys; os.mkdir(sys.argv[1], 0o777); os.chmod(sys.argv[1], 0o777)", home / "jobs")
    owner = Tony(home)
    unrelated = subprocess.Popen(["sleep", "300"], start_new_session=True)  # the owner's, no job's
    app = "application_1700000000000_0001"
    try:
        r = owner.submit("--executes", "true", *SMALL)
        assert r.rc != 0 and "jobs directory" in r.err and ATTACKER in r.err, r
        assert not list((home / "jobs").iterdir()), "a job was made in the other user's jobs/"
        lst = owner.run("list")
        assert lst.rc != 0 and ATTACKER in lst.err, lst
        # the other user puts in a job folder that names the owner's unrelated process
        as_attacker(WRITE_JOB, home / "jobs" / app, json.dumps(fake_job(unrelated.pid)))
        k = owner.run("kill", app, timeout=60)
        assert k.rc != 0 and ATTACKER in k.err, k
        assert alive(unrelated.pid), ("tony kill signalled a process that was not the job's", k)
        # even in a jobs/ of the owner's, an am.json naming a process that
        # works elsewhere than the job's dir is not the job's coordinator
        shutil.rmtree(home / "jobs")
        (home / "jobs" / app).mkdir(parents=True, mode=0o700)
        os.chmod(home / "jobs", 0o700)
        for name, text in fake_job(unrelated.pid).items():
            (home / "jobs" / app / name).write_text(text)
        k = owner.run("kill", app, timeout=60)
        assert alive(unrelated.pid), ("tony kill signalled a process that was not the job's", k)
    finally:
        unrelated.kill()
        unrelated.wait()


def test_umask_000_history_dirs_are_not_group_writable(tony, shared):
    history = shared / "history"
    old = os.umask(0)
    try:
        r = tony.submit("--executes", "echo hi", "--conf", f"tony.history.location=file://{history}", *SMALL)
    finally:
        os.umask(old)
    assert r.rc == 0, r
    dirs = [history, *history.rglob("*")]
    assert any(p.suffix == ".jhist" for p in dirs), dirs
    # a shared location's levels are sticky (01777, as /tmp), the job's own 0750, its files 0640
    loose = [f"{oct(p.stat().st_mode & 0o7777)} {p}" for p in dirs
             if p.stat().st_mode & 0o022 and not p.stat().st_mode & 0o1000]
    assert not loose, loose
    job = next(p for p in dirs if p.name == r.job_dir().name)
    assert (job.stat().st_mode & 0o777) == 0o750, oct(job.stat().st_mode)
    loose = [f"{oct(p.stat().st_mode & 0o777)} {p}" for p in tony.home.rglob("*")
             if not p.is_symlink() and p.stat().st_mode & 0o022]
    assert not loose, loose
