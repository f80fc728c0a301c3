"""`tony notebook` for real (issue 25, item 3), on the local backend: the
real Jupyter server of the job's Python (build/pyenv) started as a job of one
task, reached only through the coordinator's /notebook proxy with the job's
read token (or a browser's cookie under a secret folder, changes only from the
coordinator's origin): a kernel started over REST and a cell run over the kernel's
WebSocket channel, refusals without the token (and of the server itself to a
second local user who finds its port), idle shutdown, `tony kill` leaving no
process, and `--execute` keeping the executed notebook. YARN: test_yarn_notebook.py."""
import hashlib
import hmac
import json
import re
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pytest

from conftest import PYTHON, REPO, TONY, http_get, job_processes, second_user, wait_for

pytestmark = pytest.mark.ml

websockets = pytest.importorskip("websockets.sync.client", reason="scripts/install-deps python installs websockets")
pytest.importorskip("jupyter_server", reason="scripts/install-deps python installs jupyter-server")

BASE = ["--python_binary_path", str(PYTHON), "--conf", "tony.notebook.memory=1g", "--conf", "tony.local.vcores=16",
        "--conf", "tony.local.memory=16g"]


def start_notebook(tony, *extra):
    """Runs `tony notebook` in the background; returns (proc, notebook URL)."""
    proc = subprocess.Popen([TONY, "notebook", *BASE, *extra], env=tony.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    url = None
    lines = []
    end = time.time() + 30
    while url is None and time.time() < end:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "the notebook is at http" in line:
            url = line.split("the notebook is at ")[1].split()[0]
    if url is None:
        proc.kill()
        raise AssertionError("no notebook URL printed:\n" + "".join(lines) + proc.communicate()[1])
    return proc, url


def parts(url):
    u = urllib.parse.urlsplit(url)
    token = urllib.parse.parse_qs(u.query)["token"][0]
    return f"{u.scheme}://{u.netloc}", u.netloc, token


def api(base, token, path, method="GET", body=None, prefix="/notebook"):
    """(status, JSON or error text) of a call through the coordinator; token
    None: a stranger's, without the read token."""
    headers = {"X-Tony-Token": token} if token else {}
    req = urllib.request.Request(base + prefix + path, method=method, headers=headers,
                                 data=None if body is None else json.dumps(body).encode())
    # without a token: a stranger's request (conftest's opener adds the owner's)
    opener = urllib.request.build_opener()
    try:
        with opener.open(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def secret_folder(token):
    """The folder the notebook is served under (common/amapi.h)."""
    label = re.search(r'#define AM_API_NOTEBOOK_PATH_LABEL "([^"]*)"', (REPO / "src/common/amapi.h").read_text())[1]
    return hmac.new(token.encode(), label.encode(), hashlib.sha256).hexdigest()


def run_cell(netloc, token, kernel, code):
    """Runs code in the kernel over its channels WebSocket; its stdout."""
    ws_url = f"ws://{netloc}/notebook/api/kernels/{kernel}/channels"
    session = uuid.uuid4().hex
    msg_id = uuid.uuid4().hex
    msg = {"header": {"msg_id": msg_id, "username": "test", "session": session, "msg_type": "execute_request",
                      "version": "5.3", "date": "2026-01-01T00:00:00Z"},
           "parent_header": {}, "metadata": {}, "channel": "shell",
           "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                       "allow_stdin": False, "stop_on_error": True}}
    out = []
    with websockets.connect(ws_url, additional_headers={"X-Tony-Token": token}, open_timeout=10) as ws:
        ws.send(json.dumps(msg))
        # The reply (shell channel) and the output (iopub) are not ordered
        # between channels: the cell is done once both the reply and iopub's
        # "idle" for it have come.
        end = time.time() + 30
        replied = idle = False
        while time.time() < end and not (replied and idle):
            m = json.loads(ws.recv(timeout=30))
            if m.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "stream":
                out.append(m["content"]["text"])
            if m["msg_type"] == "status" and m["content"].get("execution_state") == "idle":
                idle = True
            if m["msg_type"] == "execute_reply":
                assert m["content"]["status"] == "ok", m
                replied = True
        if replied and idle:
            return "".join(out)
    raise AssertionError(f"no execute_reply and idle in 30 s; got {out}")


def jupyter_port(pids):
    """The port of the Jupyter server among pids (from its command line: the
    task's TB_PORT, which the coordinator's proxy connects to)."""
    for pid in pids:
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        for a in args:
            if a.startswith(b"--ServerApp.port="):
                return int(a.split(b"=", 1)[1])
    raise AssertionError(f"no Jupyter server among {pids}")


def test_notebook_kernel_through_the_proxy_and_kill(tony):
    proc, url = start_notebook(tony, "--conf", "tony.notebook.idle-timeout=5m")
    try:
        base, netloc, token = parts(url)
        wait_for(lambda: api(base, token, "/api/status")[0] == 200, timeout=40, what="Jupyter behind the proxy")
        # without the token (or with another): refused by the coordinator, for every method
        assert api(base, "0" * 64, "/api/status")[0] == 403
        for method, body in (("GET", None), ("POST", {"name": "python3"}), ("DELETE", None)):
            assert api(base, None, "/api/kernels", method, body)[0] == 403, method
        # a browser: the printed link sets a cookie (not the token) sent only under the notebook's
        # secret folder (docs/security.md), and sends it there without the token; the cookie alone
        # then reaches Jupyter there for reads, and for changes only from the coordinator's origin
        status, headers, _ = http_get(url, stranger=True, follow=False)
        assert status in (302, 303), status
        folder = f"/notebook/{secret_folder(token)}/"
        assert urllib.parse.urljoin(url, headers["Location"]) == base + folder, headers["Location"]
        cookie, *attrs = [a.strip() for a in headers["Set-Cookie"].split(";")]
        assert token not in cookie and f"Path={folder}" in attrs and "HttpOnly" in attrs, headers["Set-Cookie"]
        assert http_get(base + folder + "api/status", headers={"Cookie": cookie}, stranger=True)[0] == 200
        assert http_get(base + "/notebook/api/status", headers={"Cookie": cookie}, stranger=True)[0] == 403
        assert api(base, token, "/api/status", prefix=folder[:-1])[0] == 200  # the token opens both
        for origin in (None, "http://127.0.0.1:1", base.replace("127.0.0.1", "localhost")):
            hdrs = {"Cookie": cookie, **({"Origin": origin} if origin else {})}
            code, _, body = http_get(base + folder + "api/kernels", hdrs, method="POST", stranger=True)
            assert code == 403 and b"origin" in body.lower(), (origin, code, body[:200])
        code, kernel = api(base, token, "/api/kernels", "POST", {"name": "python3"})
        assert code == 201, kernel
        assert run_cell(netloc, token, kernel["id"], "print(6 * 7)").strip() == "42"
        # the WebSocket without the token: refused before any upgrade
        with pytest.raises(websockets.InvalidStatus) as e:
            websockets.connect(f"ws://{netloc}/notebook/api/kernels/{kernel['id']}/channels", open_timeout=10)
        assert e.value.response.status_code == 403
        # Jupyter itself, found on the loopback by a second local user, wants its token
        code, job = api(base, token, "/v1/job", prefix="")
        assert code == 200, job
        # a notebook job has no TensorBoard: Jupyter's port is no TensorBoard's
        assert "tensorboard_url" not in job, job
        assert http_get(base + "/tensorboard/", stranger=True, follow=False)[0] == 403
        port = jupyter_port(job_processes(tony.home))
        for pid in job_processes(tony.home):  # the secret folder is on no command line
            assert secret_folder(token).encode() not in open(f"/proc/{pid}/cmdline", "rb").read(), pid
        probe = subprocess.run(["runuser", "-u", second_user(), "--", "curl", "-s", "-o", "/dev/null", "-w",
                                "%{http_code}", f"http://127.0.0.1:{port}/notebook/{secret_folder(token)}/api/kernels"],
                               capture_output=True, text=True, timeout=20)
        assert probe.stdout == "403", probe
        kernels = [p for p in job_processes(tony.home)
                   if b"ipykernel" in open(f"/proc/{p}/cmdline", "rb").read()]
        assert kernels, "the kernel runs as a process of the job"
        app_id = job["app_id"]
        tony.run("kill", app_id, check_rc=0)
        proc.wait(timeout=30)
        wait_for(lambda: not job_processes(tony.home), timeout=15, what="the job's processes (kernel too) gone")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_notebook_idle_shutdown(tony):
    start = time.time()
    r = tony.run("notebook", *BASE, "--conf", "tony.notebook.idle-timeout=2s", timeout=60)
    assert r.rc == 0, r
    assert "the notebook is at http" in r.out
    assert time.time() - start < 40, "idle shutdown took too long"
    # Jupyter's own idle shutdown ended it (and with it the job), not a timeout of ours
    assert "No kernels for 2 seconds; shutting down" in r.log("notebook", 0, "stderr")


NOTEBOOK = {"cells": [{"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {}, "outputs": [],
                       "source": "import os\nprint('answer', 6 * 7)"}],
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
            "nbformat": 4, "nbformat_minor": 5}


def test_notebook_execute_keeps_the_output(tony, tmp_path):
    nb = tmp_path / "work" / "analysis.ipynb"
    nb.parent.mkdir()
    nb.write_text(json.dumps(NOTEBOOK))
    r = tony.run("notebook", *BASE, "--execute", str(nb), timeout=90)
    assert r.rc == 0, r
    kept = r.job_dir() / "shared" / "analysis.executed.ipynb"
    assert f"kept as {kept}" in r.out
    out = json.loads(kept.read_text())
    assert "".join(out["cells"][0]["outputs"][0]["text"]) == "answer 42\n"
    # a failing cell fails the job, and its copy shows where
    bad = json.loads(json.dumps(NOTEBOOK))
    bad["cells"].append(dict(bad["cells"][0], id="c2", source="raise ValueError('broken data')"))
    nb.write_text(json.dumps(bad))
    r = tony.run("notebook", *BASE, "--execute", str(nb), timeout=90)
    assert r.rc != 0, r
    out = json.loads((r.job_dir() / "shared" / "analysis.executed.ipynb").read_text())
    assert out["cells"][1]["outputs"][0]["ename"] == "ValueError"
