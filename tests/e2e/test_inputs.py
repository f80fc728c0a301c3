"""Inputs that others control, against a second local user (issue 20, items
3-5): Horovod's rendezvous store, which takes no credentials, answers only
the job's own tasks; the history portal opens a job's files as it opens
logs (no symbolic link, regular files only, inside the history tree) and
reads none larger than its cap; a configuration file that is a FIFO,
/dev/zero, a directory or too large is refused at once, naming it; and
--dry-run's output grows linearly with the task count.

Each of these ran away or leaked before: a tony-final.xml linked to a
private file was served, one linked to /dev/zero took the portal's memory,
--conf_file /dev/zero grew to 23 GB, a FIFO as --conf_file hung, and a
dry run of 10^4 tasks printed 3.6 GB. Processes that could run away are
given a memory limit (RLIMIT_AS), so that a regression fails the test
instead of taking the machine's memory."""
import functools
import json
import os
import resource
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import ATTACKER, TONY, call, second_user, wait_for
from test_hardening import SANITIZED, final_status, rss_kib, start_job
from test_portal import Portal

MB = 1024 * 1024
SECRET_WORD = "PRIVATE-e7c1"


@pytest.fixture(scope="session")
def attacker():
    """A second local user, created if missing (the tests run as root)."""
    return second_user()


def as_attacker(code, timeout=30):
    """Runs a Python snippet as the other user; its stdout."""
    r = subprocess.run(["runuser", "-u", ATTACKER, "--", "/usr/bin/python3", "-c", code], cwd="/",
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return r.stdout


def limited_memory():
    # An ASan build reserves terabytes of address space: no limit there (its
    # RSS is checked instead where it matters).
    if not SANITIZED:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


# ---- the rendezvous ----------------------------------------------------------

# The task itself: PUT and GET a key, as Horovod's workers do.
TASK_RDV = r"""
import os, urllib.request
u = "http://%s:%s/global/" % (os.environ["HOROVOD_GLOO_RENDEZVOUS_ADDR"], os.environ["HOROVOD_GLOO_RENDEZVOUS_PORT"])
urllib.request.urlopen(urllib.request.Request(u + "rank_" + os.environ["HOROVOD_RANK"], data=b"addr-of-task",
                                              method="PUT"), timeout=10).read()
got = urllib.request.urlopen(u + "rank_" + os.environ["HOROVOD_RANK"], timeout=10).read()
print("port=%s own=%s" % (os.environ["HOROVOD_GLOO_RENDEZVOUS_PORT"], got.decode()), flush=True)
"""

STRANGER = r"""
import sys, urllib.request, urllib.error
base = sys.argv[1]
for method, body in (("PUT", b"forged"), ("GET", None), ("DELETE", None)):
    try:
        r = urllib.request.urlopen(urllib.request.Request(base + "/global/rank_0", data=body, method=method), timeout=10)
        print(method, r.status, r.read().decode(errors="replace"))
    except urllib.error.HTTPError as e:
        print(method, e.code, e.read().decode(errors="replace").strip())
"""


def test_rendezvous_refuses_a_stranger(tony, tmp_path, attacker):
    """A process of another user on this machine reaches the store's port:
    its PUT, GET and DELETE are refused (403, saying why) and logged; the
    job's own tasks PUT and GET, and what they stored is untouched."""
    script = tmp_path / "rdv.py"
    script.write_text(TASK_RDV)
    script.chmod(0o644)
    job, url, pid = start_job(tony, 300, "--conf", "tony.application.framework=horovod",
                              command=f"/usr/bin/python3 {script} && sleep 300")
    try:
        stranger_refused(job, url)
    finally:
        secret = (job / "secret").read_text().strip()
        assert call(url + "/v1/job/kill", "POST", "{}", secret=secret)[0] == 200
        wait_for(lambda: final_status(job) == "KILLED", 30, what="KILLED")


def stranger_refused(job, url):
    out = job / "attempts/0/worker-0/stdout"
    wait_for(lambda: out.exists() and "own=" in out.read_text(), 30, what="the task's own PUT and GET")
    assert "own=addr-of-task" in out.read_text()
    port = int(out.read_text().split("port=")[1].split()[0])
    base = f"http://127.0.0.1:{port}"
    code = STRANGER.replace("sys.argv[1]", repr(base))
    lines = as_attacker(code).splitlines()
    assert [line.split()[:2] for line in lines] == [["PUT", "403"], ["GET", "403"], ["DELETE", "403"]], lines
    assert all("only the job's own tasks" in line and "not of the job's owner" in line for line in lines), lines
    assert "addr-of-task" not in "".join(lines)
    # the job's owner (this test, the same user as its tasks) still reads what the task stored
    with urllib.request.urlopen(f"{base}/global/rank_0", timeout=10) as r:
        assert r.read() == b"addr-of-task"
    am_log = (job / "am.log").read_text()
    assert "the Horovod rendezvous refused a request from 127.0.0.1" in am_log, am_log[-2000:]
    st, body = call(url + "/v1/job")
    assert st == 200 and body["state"] == "RUNNING"


# ---- the history portal -----------------------------------------------------

JHIST = "{app}-1000-2000-mallory-SUCCEEDED.jhist"
CONF = ('<?xml version="1.0"?><configuration><property><name>tony.application.name</name>'
        '<value>{v}</value></property></configuration>')


def job_dir(hist, app):
    d = hist / "finished" / "2024" / "02" / "03" / app
    d.mkdir(parents=True)
    return d


def plant_history(base):
    """A history tree where another user's jobs planted links, FIFOs and
    oversized files, beside one ordinary job; and a private file of ours."""
    private = base / "private"
    private.mkdir(mode=0o700)
    secret_conf = private / "conf.xml"
    secret_conf.write_text(CONF.format(v=SECRET_WORD))
    secret_conf.chmod(0o600)
    (private / "tony-final.xml").write_text(CONF.format(v=SECRET_WORD))
    hist = base / "history"
    # an ordinary job, for comparison
    ok = job_dir(hist, "application_7_0001")
    (ok / "tony-final.xml").write_text(CONF.format(v="plain-job"))
    (ok / "events.jsonl").write_text('{"type":"TASK_REGISTERED","task":"worker:0","host":"h","port":1}\n')
    # tony-final.xml linked to a private file; the .jhist to /dev/zero
    linked = job_dir(hist, "application_7_0002")
    (linked / "tony-final.xml").symlink_to(secret_conf)
    (linked / JHIST.format(app="application_7_0002")).symlink_to("/dev/zero")
    # tony-final.xml linked to /dev/zero; events.jsonl a FIFO; metrics.json to /dev/zero
    zero = job_dir(hist, "application_7_0003")
    (zero / "tony-final.xml").symlink_to("/dev/zero")
    os.mkfifo(zero / "events.jsonl")
    (zero / "metrics.json").symlink_to("/dev/zero")
    # files over their caps (sparse: nothing is written)
    big = job_dir(hist, "application_7_0004")
    with open(big / "tony-final.xml", "wb") as f:
        f.truncate(17 * MB)
    with open(big / "metrics.json", "wb") as f:
        f.truncate(200 * MB)
    with open(big / JHIST.format(app="application_7_0004"), "wb") as f:
        f.truncate(300 * MB)
    # a whole job dir that is a link to a private one
    (hist / "finished" / "2024" / "02" / "03" / "application_7_0005").symlink_to(private)
    return hist


def get(url, timeout=20, token=None):
    """GET url (with the portal's token where given); (status, body)."""
    req = urllib.request.Request(url, headers={"X-Tony-Token": token} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_portal_serves_no_linked_or_oversized_history_file(tony, tmp_path):
    """The portal lists and shows the planted jobs without serving the
    private file's content, without reading /dev/zero or a FIFO, and
    without reading an oversized file: each is a problem that says why. It
    stays alive, answering at once, with its memory bounded."""
    hist = plant_history(tmp_path)
    p = Portal.__new__(Portal)
    p.err_path = tmp_path / "portal.err"
    p.err = open(p.err_path, "w")
    p.proc = subprocess.Popen([TONY, "portal", "--port", "0", "--location", str(hist)], env=tony.env,
                              stdout=subprocess.PIPE, stderr=p.err, text=True, preexec_fn=limited_memory)
    try:
        line = p.proc.stdout.readline()
        assert line.startswith("tony: portal at http://"), (line, p.err_path.read_text())
        # the printed link carries the portal's token (it takes one on every address)
        url, _, token = line.split()[3].partition("?token=")
        read = functools.partial(get, token=token)
        start = time.monotonic()
        code, body = read(url + "v1/jobs")
        assert code == 200, body[:500]
        assert SECRET_WORD.encode() not in body
        jobs = {j["app_id"]: j for j in json.loads(body)["jobs"]}
        assert jobs["application_7_0001"]["name"] == "plain-job"
        problems = " | ".join(jobs["application_7_0002"]["problems"])
        assert "is a symbolic link: not served" in problems, problems
        assert "is a symbolic link" in " ".join(jobs["application_7_0003"]["problems"])
        assert "refused, not read" in " ".join(jobs["application_7_0004"]["problems"])
        for app, words in (("application_7_0002", ["is a symbolic link: not served"]),
                           ("application_7_0003", ["is a symbolic link", "is not a regular file"]),
                           ("application_7_0004", ["refused, not read"])):
            code, body = read(url + f"v1/jobs/{app}")
            assert code == 200, (app, body[:500])
            assert SECRET_WORD.encode() not in body
            problems = " | ".join(json.loads(body)["problems"])
            for w in words:
                assert w in problems, (app, problems)
        # a job dir that leads out of the tree serves nothing of what it leads to
        code, body = read(url + "v1/jobs/application_7_0005")
        assert SECRET_WORD.encode() not in body, body[:500]
        if code == 200:
            assert "leads outside" in " ".join(json.loads(body)["problems"]), body[:500]
        assert time.monotonic() - start < 15, "the portal took long: did it read a FIFO or /dev/zero?"
        assert p.proc.poll() is None, p.err_path.read_text()
        assert rss_kib(p.proc.pid) < (600 if SANITIZED else 200) * 1024
        # `tony history` reads the same tree through the same code
        r = tony.run("history", "application_7_0002", "--location", str(hist), timeout=30)
        assert SECRET_WORD not in r.out + r.err
    finally:
        p.proc.terminate()
        p.proc.communicate(timeout=20)
        p.err.close()
    err = p.err_path.read_text()
    assert p.proc.returncode == 0, err
    for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
        assert marker not in err, err


# ---- configuration files ----------------------------------------------------

def run_tony(tony, *args, cwd=None, env=None):
    return subprocess.run([TONY, *args], env=env or tony.env, cwd=cwd, capture_output=True, text=True, timeout=20,
                          preexec_fn=limited_memory)


def test_conf_file_that_is_no_regular_file_is_refused_at_once(tony, tmp_path):
    fifo = tmp_path / "conf.fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big.xml"
    with open(big, "wb") as f:
        f.truncate(17 * MB)
    for path, words in (("/dev/zero", "is a character device, not a regular file"),
                        (str(fifo), "is a FIFO, not a regular file"),
                        (str(tmp_path), "is a directory, not a regular file"),
                        (str(big), "more than a configuration file may have")):
        start = time.monotonic()
        r = run_tony(tony, "submit", "--dry-run", "--executes", "true", "--conf_file", path)
        assert r.returncode != 0 and f"--conf_file {path}" in r.stderr and words in r.stderr, (path, r.stderr)
        assert time.monotonic() - start < 10
    # every verb loads it the same way
    r = run_tony(tony, "list", "--conf_file", str(fifo))
    assert r.returncode != 0 and "is a FIFO" in r.stderr, r.stderr
    # ./tony.xml, read when no --conf_file is given
    os.mkfifo(tmp_path / "tony.xml")
    r = run_tony(tony, "submit", "--dry-run", "--executes", "true", cwd=tmp_path)
    assert r.returncode != 0 and "tony.xml in the current directory" in r.stderr and "is a FIFO" in r.stderr, r.stderr
    # tony-site.xml in TONY_CONF_DIR
    site = tmp_path / "site"
    site.mkdir()
    (site / "tony-site.xml").symlink_to("/dev/zero")
    r = run_tony(tony, "submit", "--dry-run", "--executes", "true", env=dict(tony.env, TONY_CONF_DIR=str(site)))
    assert r.returncode != 0 and "tony-site.xml" in r.stderr and "character device" in r.stderr, r.stderr


# ---- --dry-run ----------------------------------------------------------------

def test_dry_run_of_seven_thousand_tasks_is_small_and_quick(tony):
    """7,000 workers (and 3 ps): the plan prints in under 5 MB and 20 s, each
    role's tasks and what they differ in still there to check. (10^4
    TensorFlow tasks are past the env limit and refused: test_scale_limits.)"""
    limit = 5 * MB
    start = time.monotonic()
    proc = subprocess.Popen([TONY, "submit", "--dry-run", "--executes", "python train.py", "--conf",
                             "tony.worker.instances=7000", "--conf", "tony.ps.instances=3", "--conf",
                             "tony.local.memory=100000g", "--conf", "tony.local.vcores=20000"],
                            env=tony.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=limited_memory)
    out = b""
    while chunk := proc.stdout.read(65536):
        out += chunk
        if len(out) > limit or time.monotonic() - start > 60:
            proc.kill()
            break
    proc.wait(timeout=30)
    took = time.monotonic() - start
    assert len(out) <= limit, f"--dry-run printed more than {limit} bytes"
    assert took < 20, f"--dry-run took {took:.1f} s"
    assert proc.returncode == 0, proc.stderr.read()
    text = out.decode()
    assert "role worker: 7000 instance(s)" in text and "role ps: 3 instance(s)" in text
    # the first tasks of each role in full, then a note, then the last
    assert "worker:0 env (chief):" in text and "worker:15 env:" in text and "worker:6999 env:" in text
    assert "(worker:16 to worker:6998, 6983 task(s), not shown" in text
    assert "ps:2 env:" in text and "not shown" not in text.split("role worker")[0]
    # the cluster spec whole once per role; a later task shows what differs
    first = text.split("worker:0 env (chief):")[1].split("worker:1 env:")[0]
    assert '"127.0.0.1:27002"' in first  # the spec's last worker's placeholder (ports from 20000)
    last = text.split("worker:6999 env:")[1]
    assert "TASK_INDEX=6999" in last and "CLUSTER_SPEC=(the same" in last
    assert "]6999[" in last  # TF_CONFIG: its own index, the rest as worker:0's
