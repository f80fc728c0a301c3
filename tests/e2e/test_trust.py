"""Trust between a job's executors and its coordinator (issue 20 #1): they
prove to each other that they hold the job's secret without sending it
(src/common/apiauth.h). A second local user who takes over the port of a
SIGKILLed coordinator learns nothing and commands nothing; a signed call
cannot be replayed; a caller whose clock is off is told the coordinator's
time in a signed answer."""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path

import pytest

from conftest import APIAUTH, ATTACKER, call, job_processes, reply_signed, second_user, sign_request, wait_for

SMALL = ["--conf", "tony.worker.memory=256m"]


@pytest.fixture(scope="session")
def attacker():
    """A second local user, as the attack of the issue was tried."""
    return second_user()


# The squatter: binds the dead coordinator's port (retrying until it can),
# records every request it gets, and answers as a coordinator would to make
# an executor run its command: heartbeats "stop" (409), watches "stop", the
# task's end "next" with a log dir of its choice, registration "go" with
# its command.
SQUATTER = r'''
import http.server, json, sys, time
port, out, marker, forged = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]

class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with open(out, "a") as f:
            f.write(json.dumps({"path": self.path, "headers": dict(self.headers.items()),
                                "body": body.decode("latin-1")}) + "\n")
        try:
            attempt = json.loads(body).get("attempt", 0)
        except Exception:
            attempt = 0
        verb = self.path.rsplit("/", 1)[-1]
        code, answer = 200, {"status": "ok"}
        if verb == "heartbeat":
            code, answer = 409, {"status": "stop", "error": "stop"}
        elif verb == "watch":
            answer = {"status": "stop"}
        elif verb == "finished":
            answer = {"status": "next", "attempt": attempt + 1, "log_dir": forged}
        elif verb == "register":
            answer = {"status": "go", "command": "touch " + marker, "env": {}, "cluster_spec": {},
                      "execution_timeout_ms": 0, "log_policies": ""}
        data = json.dumps(answer).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST

end = time.time() + 20
while True:
    try:
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
        break
    except OSError:
        if time.time() > end:
            raise
        time.sleep(0.01)
open(out + ".bound", "w").close()
srv.serve_forever()
'''


def running_job(tony, *conf, command="sleep 300"):
    r = tony.submit("--detach", "--executes", command, "--conf", "tony.worker.instances=2", *SMALL, *conf)
    assert r.rc == 0, r
    job = r.job_dir()
    wait_for(lambda: (job / "status.json").exists() and
             [t["state"] for t in json.loads((job / "status.json").read_text())["tasks"]] == ["RUNNING", "RUNNING"],
             60, what="tasks running")
    am = json.loads((job / "am.json").read_text())
    return job, am, (job / "secret").read_text().strip()


def squat(tony, attacker, place, am, calls, then=None):
    """SIGKILLs the job's coordinator and has the attacker squat its port
    (the SQUATTER, its marker and forged log dir in place) until the job's
    processes end by themselves, as when the coordinator is gone, after at
    least `calls` requests (then `then()`). The requests it got, as text
    and as dicts."""
    port = int(urllib.parse.urlsplit(am["url"]).port)
    script, out = place / "squatter.py", place / "requests.jsonl"
    script.write_text(SQUATTER)
    os.chmod(script, 0o644)
    os.kill(am["pid"], signal.SIGKILL)
    squatter = subprocess.Popen(["runuser", "-u", attacker, "--", "/usr/bin/python3", str(script), str(port),
                                 str(out), str(place / "pwned"), str(place / "forged-logs")],
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_for(lambda: Path(str(out) + ".bound").exists() or squatter.poll() is not None, 25,
                 what="the squatter bound the port")
        assert squatter.poll() is None, squatter.stderr.read()
        wait_for(lambda: out.exists() and out.read_text().count("\n") >= calls, 30, what="executors calling the squatter")
        if then:
            then()
        end = time.time() + 30
        while job_processes(tony.home) and time.time() < end:
            time.sleep(0.2)
    finally:
        # runuser's child (the squatter itself) too: its whole session
        os.killpg(squatter.pid, signal.SIGKILL)
        squatter.wait()
    received = out.read_text()
    return received, [json.loads(line) for line in received.splitlines()]


def test_squatter_on_a_dead_coordinators_port_gets_no_secret_and_runs_nothing(tony, attacker):
    # heartbeats every 300 ms, 20 missed stop the task: the squatter has 6 s to bind the port
    job, am, secret = running_job(tony, "--conf", "tony.task.heartbeat-interval-ms=300",
                                  "--conf", "tony.task.max-missed-heartbeats=20")
    place = Path(tempfile.mkdtemp(prefix="tony-squat-", dir="/tmp"))
    try:
        os.chmod(place, 0o777)
        marker, forged = place / "pwned", place / "forged-logs"
        # the executors call the squatter, and it answers
        received, requests = squat(tony, attacker, place, am, 4)
        assert any(r["path"].endswith("/heartbeat") for r in requests), received[:2000]
        # the secret is in nothing it received
        assert secret not in received
        assert not any(k.lower() == "x-tony-secret" for r in requests for k in r["headers"])
        # and it commanded nothing: no command run, no log dir made where it said
        assert not marker.exists()
        assert not forged.exists()
        logs = "".join(p.read_text(errors="replace") for p in job.glob("attempts/*/*/executor.log"))
        assert "ignoring an unsigned answer" in logs, logs[-3000:]
        assert "not signed by the job's coordinator" in logs
        # and the job's processes ended by themselves, as when the coordinator is gone
        assert not job_processes(tony.home)
    finally:
        shutil.rmtree(place, ignore_errors=True)


def test_squatter_receives_no_task_data(tony, attacker):
    """Issue 33 #5: after its coordinator stopped answering, an executor
    sends a squatter on its port nothing of the task: no heartbeat's
    contents (idleness, TensorBoard), no metrics, no pid, not the task's end
    with its stderr's last lines. It probes first (a heartbeat that says
    nothing of the task) and sends data only after a signed answer."""
    place = Path(tempfile.mkdtemp(prefix="tony-squat-", dir="/tmp"))
    try:
        os.chmod(place, 0o777)
        go, tail = place / "go", "stderr-line-only-the-owner-may-read"
        # the task runs until told, then fails with a line on stderr: its end
        # (and that line) come while the squatter holds the port
        command = f"while [ ! -e {go} ]; do sleep 0.1; done; echo {tail} >&2; exit 3"
        job, am, _ = running_job(tony, "--conf", "tony.task.heartbeat-interval-ms=300",
                                 "--conf", "tony.task.max-missed-heartbeats=30",
                                 "--conf", "tony.task.metrics-interval-ms=300", command=command)
        # a few beats and metrics' intervals with the squatter answering
        received, requests = squat(tony, attacker, place, am, 6, then=go.touch)
        verbs = {r["path"].rsplit("/", 1)[-1] for r in requests}
        assert "heartbeat" in verbs, received[:2000]
        assert not verbs & {"metrics", "stacks", "started", "finished"}, received[:3000]
        for q in requests:
            body = json.loads(q["body"] or "{}")
            assert set(body) <= {"attempt", "credentials_generation"}, q
        assert tail not in received
        logs = "".join(p.read_text(errors="replace") for p in job.glob("attempts/*/*/executor.log"))
        assert "ignoring an unsigned answer" in logs, logs[-3000:]
        assert not job_processes(tony.home)
    finally:
        shutil.rmtree(place, ignore_errors=True)


def raw(url, data):
    """Bytes sent as they are; (status, headers dict, body)."""
    u = urllib.parse.urlsplit(url)
    with socket.create_connection((u.hostname, u.port), timeout=5) as s:
        s.sendall(data)
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    head, _, body = got.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def signed_bytes(url, path, body, secret, ts=None):
    """A complete signed POST as an executor sends it, and its nonce."""
    netloc = urllib.parse.urlsplit(url).netloc
    auth, nonce = sign_request(secret, "POST", netloc, path, body.encode(), ts=ts)
    req = (f"POST {path} HTTP/1.1\r\nHost: {netloc}\r\n{APIAUTH['HEADER']}: {auth}\r\n"
           f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}")
    return req.encode(), nonce


def test_a_signed_call_replayed_is_refused(tony):
    job, am, secret = running_job(tony)
    url = am["url"]
    data, nonce = signed_bytes(url, "/v1/tasks/worker/0/heartbeat", '{"attempt":0}', secret)
    status, headers, body = raw(url, data)
    assert status == 200 and json.loads(body)["status"] == "ok", body
    assert reply_signed(secret, nonce, status, body, headers.get(APIAUTH["REPLY_HEADER"].lower()))
    # the very same bytes again
    status, headers, body = raw(url, data)
    assert status == 403 and json.loads(body)[APIAUTH["REFUSED"]] == APIAUTH["REPLAY"], body
    # the refusal is signed for the caller who holds the key (not a forgery to ignore)
    assert reply_signed(secret, nonce, status, body, headers.get(APIAUTH["REPLY_HEADER"].lower()))
    # the same call signed for another body, Host or path does not pass
    for other in (data.replace(b'{"attempt":0}', b'{"attempt":1}'),
                  data.replace(b"/worker/0/", b"/worker/1/")):
        status, headers, body = raw(url, other)
        assert status == 403 and json.loads(body)[APIAUTH["REFUSED"]] == APIAUTH["WRONG"], body
        assert APIAUTH["REPLY_HEADER"].lower() not in headers
    # a caller whose clock is 10 minutes off is told the coordinator's time, signed
    data, nonce = signed_bytes(url, "/v1/job/kill", "{}", secret, ts=int(time.time() * 1000) - 600000)
    status, headers, body = raw(url, data)
    answer = json.loads(body)
    assert status == 403 and answer[APIAUTH["REFUSED"]] == APIAUTH["CLOCK"], body
    assert abs(answer[APIAUTH["NOW_MS"]] - time.time() * 1000) < 10000
    assert reply_signed(secret, nonce, status, body, headers.get(APIAUTH["REPLY_HEADER"].lower()))
    # none of it touched the job
    time.sleep(1)
    st, body = call(url + "/v1/job")
    assert body["state"] == "RUNNING" and [t["state"] for t in body["tasks"]] == ["RUNNING", "RUNNING"]
    assert call(url + "/v1/job/kill", "POST", "{}", secret=secret)[0] == 200
    wait_for(lambda: json.loads((job / "status.json").read_text())["final_status"] == "KILLED", 30, what="KILLED")
