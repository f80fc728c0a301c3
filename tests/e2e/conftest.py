"""Fixtures for end-to-end tests: they run the real `tony` binary (TONY_BIN,
default build/bin/tony) against real processes on the local backend, each
test in its own TONY_HOME so jobs never mix."""
import hashlib
import hmac
import json
import os
import pwd
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TONY = os.environ.get("TONY_BIN", str(REPO / "build" / "bin" / "tony"))
PYTHON = sys.executable  # the test venv's interpreter: sees torch, tensorflow


def pytest_configure(config):
    config.addinivalue_line("markers", "ml: runs a real TensorFlow or PyTorch training (slow)")
    config.addinivalue_line("markers", "scale: one coordinator with thousands of simulated tasks; make test runs it "
                                       "with the plain build (make test-e2e-plain), where its limits mean something")
    config.addinivalue_line("markers", "hadoop: runs against the real Hadoop test cluster (make test-hadoop)")
    config.addinivalue_line("markers", "secure: runs against the kerberized Hadoop test cluster (make test-secure)")
    config.addinivalue_line("markers", "hadoop33: also run against a Hadoop 3.3 cluster (make test-hadoop33): the "
                            "representative part of the `hadoop` tests (submission, IPC, multi-role, GPUs and "
                            "labels, kill, restarts, logs, history on HDFS)")
    config.addinivalue_line("markers", "slurm: runs against the real Slurm test cluster (scripts/slurm-test-cluster)")
    config.addinivalue_line("markers", "images: runs tasks in container images with podman (make test-images)")
    config.addinivalue_line("markers", "airflow: runs DAGs in a real Airflow, in its own venv (make test-airflow)")


@pytest.fixture(scope="session")
def hadoop():
    """The real YARN + HDFS test cluster: the one named by TONY_HTC_DIR (make
    test-hadoop starts it), else one this session starts and stops."""
    import hadoop as htc

    given = os.environ.get("TONY_HTC_DIR")
    if given:
        yield htc.Cluster(given)
        return
    directory = REPO / "build" / "hadoop-e2e"
    cluster = htc.start(directory)
    try:
        yield cluster
    finally:
        htc.stop(directory)


@pytest.fixture(scope="session")
def secure_hadoop(tmp_path_factory):
    """The kerberized YARN + HDFS test cluster (hadoop.SecureCluster): the one
    in TONY_HTC_SECURE_DIR (started there if it does not run; left running),
    else one this session starts in a temporary directory and stops. Tests
    that use it are marked `hadoop` and `secure`."""
    import hadoop as htc

    given = os.environ.get("TONY_HTC_SECURE_DIR")
    if given:
        yield htc.start_secure(given)
        return
    directory = tmp_path_factory.mktemp("secure-hadoop")
    try:
        # as make test-secure starts it: tokens renewed every 20 s, dead after
        # 90 s, IPC encrypted
        yield htc.start_secure(directory, env={"TONY_HTC_TOKEN_RENEW_INTERVAL_MS": "20000",
                                               "TONY_HTC_TOKEN_MAX_LIFETIME_MS": "90000",
                                               "TONY_HTC_RPC_PROTECTION": "privacy"})
    finally:
        htc.stop(directory)


@pytest.fixture(scope="session")
def slurm():
    """The real Slurm test cluster (slurm.Cluster): the one in TONY_STC_DIR
    (started there if it does not run; left running), else one this session
    starts under build/ and stops. Skips when Slurm is not installed."""
    import slurm as stc

    missing = stc.missing_tools()
    if missing:
        pytest.skip(f"Slurm not installed ({' '.join(missing)} missing): scripts/install-deps slurm")
    given = os.environ.get("TONY_STC_DIR")
    if given:
        yield stc.start(given)
        return
    directory = REPO / "build" / "slurm-e2e"
    try:
        yield stc.start(directory)
    finally:
        stc.stop(directory)


class Result:
    def __init__(self, proc, home):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr
        self.home = home

    @property
    def text(self):
        return self.out + self.err

    def job_dir(self):
        jobs = sorted((self.home / "jobs").iterdir())
        assert jobs, "no job was created"
        return jobs[-1]

    def status(self):
        return json.loads((self.job_dir() / "status.json").read_text())

    def task(self, role, index):
        for t in self.status()["tasks"]:
            if t["role"] == role and t["index"] == index:
                return t
        raise KeyError(f"{role}:{index}")

    def log(self, role, index, stream="stdout", attempt=None):
        st = self.status()
        attempt = st["attempt"] if attempt is None else attempt
        return (self.job_dir() / "attempts" / str(attempt) / f"{role}-{index}" / stream).read_text()

    def __repr__(self):
        return f"rc={self.rc}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


class Tony:
    def __init__(self, home):
        self.home = home
        OWNER_HOMES.append(home)
        self.env = dict(os.environ, TONY_HOME=str(home))
        self.env.pop("HADOOP_CONF_DIR", None)

    def run(self, *args, timeout=120, check_rc=None):
        proc = subprocess.run([TONY, *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        r = Result(proc, self.home)
        if check_rc is not None:
            assert r.rc == check_rc, r
        return r

    def submit(self, *args, timeout=120, **kw):
        base = ["submit", "--conf", "tony.local.vcores=16", "--conf", "tony.local.memory=16g"]
        return self.run(*base, *args, timeout=timeout, **kw)

    def popen(self, *args):
        return subprocess.Popen([TONY, *args], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def tony(tmp_path):
    home = tmp_path / "tony-home"
    t = Tony(home)
    yield t
    OWNER_HOMES.remove(home)
    # Whatever happened, nothing of this test's jobs may keep running. The
    # coordinator exits just after its client says goodbye: give it a moment.
    end = time.time() + 5
    left = job_processes(home)
    while left and time.time() < end:
        time.sleep(0.1)
        left = job_processes(home)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not left, f"processes of the test's jobs still running: {left}"
    # Under ASan/UBSan the coordinator's and executors' reports land in their
    # logs (their exit codes are not the test's): fail on any.
    for log in list(home.glob("jobs/*/am.log")) + list(home.glob("jobs/*/attempts/*/*/executor.log")):
        text = log.read_text(errors="replace")
        for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
            assert marker not in text, f"{marker} in {log}:\n{text[-3000:]}"


def job_processes(home):
    """Pids of live processes that belong to jobs under home: their env names
    a job dir under it (the coordinator's cwd, TONY_JOB_DIR in tasks)."""
    needle = str(home).encode()
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().split(b")")[-1].split()[0] == b"Z":
                    continue
            environ = open(f"/proc/{pid}/environ", "rb").read()
            cwd = os.readlink(f"/proc/{pid}/cwd").encode()
        except (OSError, IndexError):
            continue
        if needle in environ or cwd.startswith(needle):
            found.append(int(pid))
    return found


# Issue 20's attacks are tried as a real second local user of this machine.
ATTACKER = "tony-attacker"


def second_user():
    """That user, created when missing (the tests run as root), by name."""
    try:
        pwd.getpwnam(ATTACKER)
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", ATTACKER], check=True)
    return ATTACKER


def alive(pid):
    """Whether pid runs (a zombie has ended: only its parent's wait is left)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _apiauth_contract():
    """The names and labels of src/common/apiauth.h, the one place that owns
    them (TONY_APIAUTH_X -> "value")."""
    text = (REPO / "src" / "common" / "apiauth.h").read_text()
    return {m.group(1): m.group(2) for m in re.finditer(r'#define TONY_APIAUTH_(\w+) "([^"]*)"', text)}


APIAUTH = _apiauth_contract()


def api_key(secret):
    """The job's control key, as common/apiauth.c derives it."""
    return hmac.new(secret.encode(), APIAUTH["KEY_LABEL"].encode(), hashlib.sha256).digest()


def sign_request(secret, method, host, target, body=b"", ts=None, nonce=None):
    """(X-Tony-Auth value, nonce) of a request, as tony_apiauth_sign_request
    makes it."""
    ts = int(time.time() * 1000) if ts is None else ts
    nonce = nonce or os.urandom(16).hex()
    msg = "\n".join([APIAUTH["REQUEST_LABEL"], method, host, target, str(ts), nonce,
                     hashlib.sha256(body).hexdigest()])
    mac = hmac.new(api_key(secret), msg.encode(), hashlib.sha256).hexdigest()
    return f"{APIAUTH['VERSION']} ts={ts} nonce={nonce} mac={mac}", nonce


def reply_signed(secret, nonce, status, body, header):
    """Whether an answer's X-Tony-Auth-Reply proves the job's coordinator
    sent it for the request of nonce."""
    msg = "\n".join([APIAUTH["REPLY_LABEL"], nonce, str(status), hashlib.sha256(body).hexdigest()])
    want = f"{APIAUTH['VERSION']} mac=" + hmac.new(api_key(secret), msg.encode(), hashlib.sha256).hexdigest()
    return header is not None and hmac.compare_digest(header, want)


def signed_call(url, method="POST", body=None, secret=None):
    """A call signed with the job's secret (the secret never travels):
    (status, headers, body bytes, whether the answer is signed for it)."""
    u = urllib.parse.urlsplit(url)
    target = u.path + (f"?{u.query}" if u.query else "")
    data = b"" if body is None else body.encode()
    auth, nonce = sign_request(secret, method, u.netloc, target, data)
    req = urllib.request.Request(url, method=method, data=data if method == "POST" else None)
    req.add_header("Host", u.netloc)
    req.add_header(APIAUTH["HEADER"], auth)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            status, headers, out = r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        status, headers, out = e.code, e.headers, e.read()
    return status, headers, out, reply_signed(secret, nonce, status, out, headers.get(APIAUTH["REPLY_HEADER"]))


# Reads of a coordinator (every GET) carry the job's read token. The tests
# read as the job's owner does, as tony's own clients do: the token comes
# from the job's secret in its 0700 job dir (common/readtoken.h). urllib's
# default opener adds it to any request for a coordinator of a job under a
# TONY_HOME of a live test (OWNER_HOMES, by am.json's url) or one named with
# remember_job (YARN: no am.json on the client's side), unless the request
# carries a credential of its own. http_get(stranger=True) reads without:
# as another user, or YARN's web proxy, does.
READ_TOKEN_LABEL = b"tony read token v1"
READ_TOKEN_HEADER = "X-Tony-Token"
OWNER_HOMES = []
REMEMBERED_JOBS = {}  # "host:port" -> job dir
OWN_TOKENS = {}  # "host:port" -> the token of a server the test started (a portal)


def read_token(job_dir):
    """The job's read token, as tony derives it from the job's secret."""
    secret = (Path(job_dir) / "secret").read_text().strip()
    return hmac.new(secret.encode(), READ_TOKEN_LABEL, hashlib.sha256).hexdigest()


def remember_job(url, job_dir):
    """Reads of the coordinator at url are the owner's of the job in job_dir."""
    REMEMBERED_JOBS[urllib.parse.urlsplit(url).netloc] = Path(job_dir)


def owners_job_dir(url):
    """The job dir of the coordinator at url, of a job of this test, or None."""
    netloc = urllib.parse.urlsplit(url).netloc
    if netloc in REMEMBERED_JOBS:
        return REMEMBERED_JOBS[netloc]
    found = []
    for home in OWNER_HOMES:
        # am.json: the local and Slurm backends; status.json: the job JSON a
        # YARN client keeps
        for info in [*Path(home).glob("jobs/*/am.json"), *Path(home).glob("jobs/*/status.json")]:
            try:
                if urllib.parse.urlsplit(json.loads(info.read_text())["url"]).netloc == netloc:
                    found.append((info.stat().st_mtime, info.parent))
            except (OSError, ValueError, KeyError):
                pass
    return max(found)[1] if found else None  # a port taken again: the newest job


def owner_headers(url):
    """{X-Tony-Token: the token} for a coordinator of this test's job (or a
    portal of the test's) at url."""
    own = OWN_TOKENS.get(urllib.parse.urlsplit(url).netloc)
    if own:
        return {READ_TOKEN_HEADER: own}
    job = owners_job_dir(url)
    return {READ_TOKEN_HEADER: read_token(job)} if job and (job / "secret").exists() else {}


class OwnerReads(urllib.request.BaseHandler):
    handler_order = 100

    def http_request(self, req):
        if not any(req.has_header(h) for h in ("X-tony-token", "Authorization", "Cookie")):
            for k, v in owner_headers(req.full_url).items():
                req.add_unredirected_header(k, v)
        return req


urllib.request.install_opener(urllib.request.build_opener(OwnerReads()))


def call(url, method="GET", body=None, secret=None):
    """One coordinator API call: (HTTP status, the JSON answer). With the
    job's secret it is signed as executors sign (common/apiauth.h), and an
    answer of 2xx must be signed back."""
    if secret:
        status, _, out, ok = signed_call(url, method, body, secret)
        assert ok or status >= 400, f"the answer ({status}) to {method} {url} is not signed"
        return status, json.loads(out or b"{}")
    req = urllib.request.Request(url, method=method, data=None if body is None else body.encode())
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kw):
        return None


def http_get(url, headers=None, method="GET", stranger=False, follow=True):
    """(status, headers, body bytes) of a request, whatever the status;
    stranger: without the owner's read token (OwnerReads); follow: redirects."""
    req = urllib.request.Request(url, headers=headers or {}, method=method)
    opener = urllib.request.build_opener(*([] if stranger else [OwnerReads()]), *([] if follow else [NoRedirect()]))
    try:
        with opener.open(req, timeout=5) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def raw_get(url, target, host_header=None, headers=None):
    """A request line sent as is: no client normalizes the path. A
    coordinator's is read as the owner (OwnerReads), with headers too."""
    host, port = url.split("//")[1].rstrip("/").split(":")
    host_header = f"{host}:{port}" if host_header is None else host_header
    owner = "".join(f"{k}: {v}\r\n" for k, v in {**owner_headers(url), **(headers or {})}.items())
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: {host_header}\r\n{owner}Connection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), head + b"\r\n", body


def wait_for(pred, timeout=60, interval=0.2, what="condition"):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


# A job ends when its tracked tasks do and stops its untracked and sidecar
# tasks then, whatever they had run (TonY's rule). A test that reads such a
# task's output or state has a tracked task wait for it first (issue 40):
# these are shell commands for the tracked task's command line, which give
# up after timeout_s (the test's assertion then says what was missing).
def after_output(task, text, timeout_s=120):
    """Waits until task (its log dir's name: "ps-0") has text in its stdout,
    a sibling of this task's log dir (TONY_LOG_DIR) on the local and Slurm
    backends, in an image too (the job dir is mounted at its own path). The
    user's process writes its stdout to that file itself: what it printed
    is there."""
    assert "'" not in text
    log = f'"$TONY_LOG_DIR/../{task}/stdout"'
    return f"for _ in $(seq {timeout_s * 10}); do grep -qF -- '{text}' {log} 2>/dev/null && break; sleep 0.1; done"


def after_states(states, timeout_s=120):
    """Waits until the coordinator's job JSON (read with the read token the
    user's process gets) says each task ("role:index") is in its state,
    states being {task: state}; any backend (python3 on the task's PATH)."""
    want = ",".join(f'"{t}":"{s}"' for t, s in states.items())
    code = ("import json, os, time, urllib.request as u\n"
            f"want = {{{want}}}\n"
            f"for _ in range({timeout_s * 5}):\n"
            "    try:\n"
            "        r = u.Request(os.environ[\"TONY_AM_URL\"] + \"/v1/job\", "
            "headers={\"X-Tony-Token\": os.environ[\"TONY_READ_TOKEN\"]})\n"
            "        tasks = json.load(u.urlopen(r, timeout=5))[\"tasks\"]\n"
            "        have = {\"%s:%s\" % (t[\"role\"], t[\"index\"]): t[\"state\"] for t in tasks}\n"
            "        if all(have.get(t) == s for t, s in want.items()):\n"
            "            break\n"
            "    except OSError:\n"
            "        pass\n"
            "    time.sleep(0.2)\n")
    return f"python3 -c '{code}'"


@pytest.fixture
def scripts(tmp_path):
    """A src dir with small task scripts."""
    d = tmp_path / "src"
    d.mkdir()
    return d


# What check.py of shipment() prints when everything arrived.
SHIPMENT_SEEN = ["True", "payload payload", "inner from-archive"]


def make_venv_zip(tmp_path):
    """A real virtualenv (copies, no pip) zipped as --python_venv takes it:
    tmp_path/venv.zip."""
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--copies", "--without-pip", str(venv)], check=True)
    venv_zip = tmp_path / "venv.zip"
    with zipfile.ZipFile(venv_zip, "w") as z:
        for p in venv.rglob("*"):
            if p.is_file():
                z.write(p, p.relative_to(venv))
    return venv_zip


def shipment(tmp_path, scripts):
    """Submit arguments shipping a real virtualenv zip (copies, no pip), a
    file, the same file renamed, a directory and an archive unpacked under
    a name, with a check.py that reads them all."""
    venv_zip = make_venv_zip(tmp_path)
    (tmp_path / "data.txt").write_text("payload\n")
    resdir = tmp_path / "resdir"
    resdir.mkdir()
    (resdir / "inner.txt").write_text("inner\n")
    arch = tmp_path / "arch.zip"
    with zipfile.ZipFile(arch, "w") as z:
        z.writestr("a/b.txt", "from-archive\n")
    (scripts / "check.py").write_text(
        "import sys, os\n"
        "print(sys.prefix.endswith('/venv'))\n"
        "print(open('data.txt').read().strip(), open('renamed.txt').read().strip())\n"
        "print(open('resdir/inner.txt').read().strip(), open('unpacked/a/b.txt').read().strip())\n")
    return ["--src_dir", str(scripts), "--python_venv", str(venv_zip), "--python_binary_path", "bin/python3",
            "--executes", "check.py",
            "--conf", f"tony.containers.resources={tmp_path/'data.txt'},{tmp_path/'data.txt'}::renamed.txt,,{resdir}",
            "--conf", f"tony.worker.resources={arch}::unpacked#archive"]
