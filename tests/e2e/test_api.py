"""The coordinator's HTTP API against bad and hostile requests: every
state-changing call must be signed with the job's key, malformed bodies and paths get a
clear 4xx, and none of it disturbs the running job. Also Ctrl-C on the
client kills the job, as in TonY."""
import json
import signal
import socket
import time

import pytest

from conftest import REPO, call, http_get, raw_get, wait_for

SMALL = ["--conf", "tony.worker.memory=256m"]




def running_job(tony):
    r = tony.submit("--detach", "--executes", "sleep 300", "--conf", "tony.worker.instances=2", *SMALL)
    assert r.rc == 0, r
    job = r.job_dir()
    wait_for(lambda: (job / "status.json").exists() and
             json.loads((job / "status.json").read_text())["tasks"][1]["state"] == "RUNNING", 60,
             what="tasks running")
    url = json.loads((job / "am.json").read_text())["url"]
    secret = (job / "secret").read_text().strip()
    return job, url, secret


def test_api_rejects_bad_requests_and_keeps_running(tony):
    job, url, secret = running_job(tony)
    assert oct((job / "secret").stat().st_mode & 0o777) == "0o600"
    st, body = call(url + "/v1/job")
    assert st == 200 and body["state"] == "RUNNING"
    assert secret not in json.dumps(body)
    # state changes without or with a wrong secret
    assert call(url + "/v1/job/kill", "POST", "{}")[0] == 403
    assert call(url + "/v1/job/kill", "POST", "{}", secret="0" * len(secret))[0] == 403
    assert call(url + "/v1/tasks/worker/0/heartbeat", "POST", '{"attempt":0}', secret="nope")[0] == 403
    # malformed
    assert call(url + "/v1/tasks/worker/0/heartbeat", "POST", "{not json", secret=secret)[0] == 400
    assert call(url + "/v1/tasks/worker/0/heartbeat", "POST", "[1,2]", secret=secret)[0] == 400
    assert call(url + "/v1/tasks/worker/0/heartbeat", "POST", "{}", secret=secret)[0] == 400
    assert call(url + "/v1/tasks/worker/0/register", "POST", '{"attempt":0,"host":"h","port":70000}', secret=secret)[0] == 400
    assert call(url + "/v1/tasks/worker/9/heartbeat", "POST", '{"attempt":0}', secret=secret)[0] == 404
    assert call(url + "/v1/tasks/../../etc/passwd", "POST", "{}", secret=secret)[0] == 404
    assert call(url + "/v1/nope")[0] == 404
    assert call(url + "/v1/job", "POST", "{}")[0] == 405
    # a stale attempt is told so
    st, body = call(url + "/v1/tasks/worker/0/heartbeat", "POST", '{"attempt":5}', secret=secret)
    assert st == 409 and body["status"] == "stale"
    # the job is untouched
    st, body = call(url + "/v1/job")
    assert body["state"] == "RUNNING" and [t["state"] for t in body["tasks"]] == ["RUNNING", "RUNNING"]
    # the right secret kills
    assert call(url + "/v1/job/kill", "POST", "{}", secret=secret)[0] == 200
    wait_for(lambda: json.loads((job / "status.json").read_text())["final_status"] == "KILLED", 30, what="KILLED")


def test_only_its_own_host_names(tony):
    """DNS rebinding (issue 11): a page of another site whose name points at
    this machine reaches the coordinator with that name in Host. Its own
    names (the one in its URL, this host's, localhost) and any address, on
    its port, are answered; others get a 421 saying why, and no job data.
    The executors, which use its URL, never notice."""
    job, url, secret = running_job(tony)
    port = url.rsplit(":", 1)[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", "localhost",
                 f"{socket.gethostname()}:{port}", f"[::1]:{port}", f"192.0.2.7:{port}"):
        code, _, body = raw_get(url, "/v1/job", host)
        assert code == 200 and json.loads(body)["state"] == "RUNNING", (host, code, body[:200])
    for target in ("/v1/job", "/", "/ui/app.js", "/v1/tasks/worker/0/log?stream=stdout", "/tensorboard"):
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{int(port) + 1}",
                     f"localhost.evil.example:{port}", "", f"127.0.0.1:{port}:1"):
            code, _, body = raw_get(url, target, host)
            assert code == 421, (target, host, code, body[:200])
            assert b"worker" not in body and b"<html" not in body.lower()
            assert "DNS rebinding" in json.loads(body)["error"], body
    time.sleep(2)  # heartbeats go on
    st, body = call(url + "/v1/job")
    assert st == 200 and [t["state"] for t in body["tasks"]] == ["RUNNING", "RUNNING"]
    assert call(url + "/v1/job/kill", "POST", "{}", secret=secret)[0] == 200
    wait_for(lambda: json.loads((job / "status.json").read_text())["final_status"] == "KILLED", 30, what="KILLED")


def raw_request(url, request):
    """A request sent byte for byte (no client adds a Host or fixes the
    target): (status, body)."""
    host, port = url.split("//")[1].rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(request.encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def test_no_host_absolute_uri_and_wrapping_indices_are_refused(tony):
    """Issue 20 #7: a request without Host (HTTP/1.1 or 1.0) or with an
    absolute URI passed the Host check by; an index past an int wrapped to
    another task (4294967296 was worker 0)."""
    job, url, secret = running_job(tony)
    hostport = url.split("//")[1]
    for req in ("GET /v1/job HTTP/1.1\r\nConnection: close\r\n\r\n",
                "GET /v1/job HTTP/1.0\r\n\r\n",
                "GET /v1/tasks/worker/0/log HTTP/1.1\r\nConnection: close\r\n\r\n"):
        code, body = raw_request(url, req)
        assert code == 400 and b"no Host header" in body, (req, code, body)
    for target in (f"http://{hostport}/v1/job", "http://evil.example/v1/job", f"//{hostport}/v1/job"):
        code, body = raw_request(url, f"GET {target} HTTP/1.1\r\nHost: {hostport}\r\nConnection: close\r\n\r\n")
        assert code == 400 and b"worker" not in body, (target, code, body)
    code, _, body = raw_get(url, "/v1/tasks/worker/0/log?stream=stdout")
    assert code == 200
    for index in ("4294967296", "2147483648", "99999999999999999999999", "-1", "+0", "%200", "0x0"):
        for verb in ("log", "metrics", "stacks"):
            code, _, body = raw_get(url, f"/v1/tasks/worker/{index}/{verb}")
            assert code == 404, (index, verb, code, body[:200])
            assert b"worker" not in body or b"no such task" in body or b"unknown path" in body, body[:200]
    assert call(url + "/v1/tasks/worker/4294967296/heartbeat", "POST", '{"attempt":0}', secret=secret)[0] == 404
    st, body = call(url + "/v1/job")
    assert [t["state"] for t in body["tasks"]] == ["RUNNING", "RUNNING"]
    assert call(url + "/v1/job/kill", "POST", "{}", secret=secret)[0] == 200
    wait_for(lambda: json.loads((job / "status.json").read_text())["final_status"] == "KILLED", 30, what="KILLED")


def test_job_without_metrics_stays_unchanged_between_samples(tony):
    """?metrics=0 leaves each task's metrics out, so its ETag holds while
    samples arrive (every 200 ms here) and only a state change alters it;
    the full answer changes with the samples."""
    r = tony.submit("--detach", "--executes", "sleep 300", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.task.metrics-interval-ms=200", *SMALL)
    assert r.rc == 0, r
    job = r.job_dir()
    url = json.loads((job / "am.json").read_text())["url"]
    secret = (job / "secret").read_text().strip()

    def running():
        st, body = call(url + "/v1/job")
        return st == 200 and all(t["state"] == "RUNNING" and "last_sample" in t for t in body["tasks"]) and body
    full = wait_for(running, 60, what="both tasks running with a sample")
    # as the web page does: the coordinator then lingers a few seconds after
    # the end, which comes within milliseconds of the kill below
    code, h1, b1 = http_get(url + "/v1/job?metrics=0", {"X-Tony-UI": "1"})
    assert code == 200
    light = json.loads(b1)
    assert all("metrics" not in t and "last_sample" not in t for t in light["tasks"]), light
    assert [t["state"] for t in light["tasks"]] == [t["state"] for t in full["tasks"]]
    _, hf1, _ = http_get(url + "/v1/job")
    time.sleep(1.5)  # several samples later
    code, _, _ = http_get(url + "/v1/job?metrics=0", {"If-None-Match": h1["ETag"]})
    assert code == 304
    code, _, _ = http_get(url + "/v1/job", {"If-None-Match": hf1["ETag"]})
    assert code == 200, "the full answer should change with the samples"
    code, _, body = http_get(url + "/v1/job?metrics=yes")
    assert code == 400 and b"metrics must be 0" in body
    # a state change does alter it
    assert call(url + "/v1/job/kill", "POST", "{}", secret=secret)[0] == 200
    wait_for(lambda: http_get(url + "/v1/job?metrics=0", {"If-None-Match": h1["ETag"]})[0] == 200, 30,
             what="the light answer to change")
    wait_for(lambda: json.loads((job / "status.json").read_text())["final_status"] == "KILLED", 30, what="KILLED")


def test_ctrl_c_kills_the_job(tony):
    p = tony.popen("submit", "--conf", "tony.local.vcores=8", "--executes", "sleep 300",
                   "--conf", "tony.worker.instances=2", *SMALL)
    jobs = tony.home / "jobs"
    wait_for(lambda: any((j / "status.json").exists() and '"RUNNING"' in (j / "status.json").read_text()
                         for j in jobs.glob("*")), 60, what="job running")
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode != 0
    assert "KILLED" in out, out + err


# worker:0 writes a known stdout: a line, 100000 'a's, bytes that are not
# UTF-8, an é (two bytes), then waits; stderr gets one line.
LOG_CMD = ("printf 'hello\\n'; head -c 100000 /dev/zero | tr '\\0' a; printf '\\377\\376 mid \\303\\251 end\\n'; "
           "echo oops >&2; echo tb=$TB_PORT; sleep 300")
LOG_TAIL = b"\xff\xfe mid \xc3\xa9 end\n"


@pytest.fixture
def log_job(tony):
    jobs = []
    yield lambda: start_log_job(tony, jobs)
    for job in jobs:
        tony.run("kill", job.name)


def start_log_job(tony, jobs):
    r = tony.submit("--detach", "--executes", LOG_CMD, "--conf", "tony.worker.instances=1", *SMALL)
    assert r.rc == 0, r
    job = r.job_dir()
    jobs.append(job)
    out = job / "attempts/0/worker-0/stdout"
    wait_for(lambda: out.exists() and out.read_bytes().count(b"\n") >= 3, 60, what="worker output")
    return job, json.loads((job / "am.json").read_text())["url"], out.read_bytes()


def test_log_endpoint_offsets_and_text(log_job):
    job, url, raw = log_job()
    base = url + "/v1/tasks/worker/0/log"
    # from 0: capped at 64 KiB, and the offset to ask next
    st, body = call(base + "?stream=stdout&offset=0&attempt=0")
    assert st == 200, body
    assert body["next"] == 65536 and body["size"] == len(raw) and body["exists"] is True
    assert body["data"] == "hello\n" + "a" * 65530
    # following next reaches the end: bytes that are not UTF-8 show as U+FFFD
    got, off = "", 0
    while off < len(raw):
        st, body = call(f"{base}?offset={off}")
        assert st == 200 and body["next"] > off, body
        got += body["data"]
        off = body["next"]
    assert off == len(raw)
    assert got == raw.decode("utf-8", errors="replace")
    assert "\ufffd\ufffd mid é end\n" in got
    # at the end: nothing more, the same offset again; past it: an error
    st, body = call(f"{base}?offset={len(raw)}")
    assert st == 200 and body["data"] == "" and body["next"] == len(raw)
    assert call(f"{base}?offset={len(raw) + 1}")[0] == 400
    # a chunk that ends inside é stops before it, for the next call to finish
    e_at = raw.index(b"\xc3\xa9")
    st, body = call(f"{base}?offset={e_at + 1 - 65536}")
    assert body["next"] == e_at and not body["data"].endswith("\ufffd"), body
    st, body = call(f"{base}?offset={e_at}")
    assert body["data"].startswith("é end")
    # stderr
    st, body = call(base + "?stream=stderr")
    assert st == 200 and body["data"] == "oops\n" and body["stream"] == "stderr"


def test_log_endpoint_rejects_bad_parameters(log_job):
    job, url, raw = log_job()
    base = url + "/v1/tasks/worker/0/log"
    for q in ["stream=stdin", "stream=../../secret", "stream=", "offset=-1", "offset=abc", "offset=1e3", "offset=0x10",
              "offset=", "offset=+5", "offset=99999999999999999999", "attempt=1", "attempt=-1", "attempt=x",
              "follow=1", "offset=0&nope=1", "stream=stdout%00"]:
        st, body = call(f"{base}?{q}")
        assert st == 400 and body["error"], (q, st, body)
    st, body = call(base + "?stream=stdin")
    assert "stdout or stderr" in body["error"]
    assert call(f"{base}?stream=stdout")[0] == 200
    # unknown tasks, and paths that try to leave the job dir
    for path in ["/v1/tasks/worker/1/log", "/v1/tasks/nope/0/log", "/v1/tasks/am/0/log", "/v1/tasks/worker/-1/log",
                 "/v1/tasks/worker/0/log/../../secret", "/v1/tasks/%2e%2e/0/log", "/v1/tasks/worker/0/logs",
                 "/v1/tasks/..%2f..%2fsecret/0/log"]:
        assert call(url + path)[0] == 404, path
    assert call(base, "POST", "{}")[0] == 405
    # the job is untouched, and the secret was never served
    st, body = call(url + "/v1/job")
    assert body["state"] == "RUNNING"


def test_single_node_log_and_tensorboard_url(tony, log_job):
    r = tony.submit("--detach", "--executes", "echo single says hi; sleep 300")
    job = r.job_dir()
    url = json.loads((job / "am.json").read_text())["url"]
    wait_for(lambda: call(url + "/v1/tasks/am/0/log")[1].get("data") == "single says hi\n", 30, what="am log")
    assert call(url + "/v1/tasks/worker/0/log")[0] == 404
    tony.run("kill", job.name)
    # a distributed job: the chief (worker:0) reserved TB_PORT, but nothing
    # serves there, so the job names no TensorBoard (test_tensorboard.py has
    # the chief that starts one)
    job, url, raw = log_job()
    assert int(raw.rsplit(b"tb=", 1)[1].split()[0]) > 0
    time.sleep(2)  # a few heartbeats, each of which checks the port
    st, body = call(url + "/v1/job")
    assert body["state"] == "RUNNING" and "tensorboard_url" not in body, body
    st, h, text = http_get(url + "/tensorboard")
    assert st == 404 and h["Content-Type"].startswith("text/plain") and b"nothing serves on its TB_PORT" in text


def test_web_ui_files_and_job_etag(tony):
    job, url, secret = running_job(tony)
    st, h, page = http_get(url + "/")
    assert st == 200 and h["Content-Type"].startswith("text/html") and b'src="ui/app.js"' in page
    assert b'href="/' not in page and b'src="/' not in page  # relative links only
    for name, ctype in [("app.js", "text/javascript"), ("style.css", "text/css"), ("index.html", "text/html")]:
        st, h, body = http_get(url + "/ui/" + name)
        assert st == 200 and h["Content-Type"].startswith(ctype) and body, name
        assert h["ETag"] and h["Cache-Control"] == "no-cache"
        assert http_get(url + "/ui/" + name, {"If-None-Match": h["ETag"]})[0] == 304
    assert (REPO / "web" / "app.js").read_bytes() == http_get(url + "/ui/app.js")[2]
    for path in ["/ui/", "/ui/nope.js", "/ui/../secret", "/ui/%2e%2e/secret", "/secret", "/index.html", "/ui"]:
        assert http_get(url + path)[0] == 404, path
    assert http_get(url + "/", method="POST")[0] == 405
    # /v1/job: an ETag over the body; unchanged job -> 304 without a body
    # (asked as the web page does: the coordinator lingers a few seconds
    # after the end, which comes within milliseconds of the kill below)
    st, h, body = http_get(url + "/v1/job", {"X-Tony-UI": "1"})
    etag = h["ETag"]
    st, h2, body2 = http_get(url + "/v1/job", {"If-None-Match": etag})
    assert st == 304 and body2 == b"" and h2["ETag"] == etag
    assert http_get(url + "/v1/job", {"If-None-Match": '"0000000000000000"'})[0] == 200
    # a change in the job changes the tag
    call(url + "/v1/job/kill", "POST", "{}", secret=secret)
    wait_for(lambda: http_get(url + "/v1/job", {"If-None-Match": etag})[0] != 304, 30, what="a new ETag")
