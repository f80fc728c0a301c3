"""The coordinator's log endpoint for a task whose output a NodeManager
serves, on the local backend: the executor reports the log link its backend
gives it (TONY_TASK_LOG_URL, which the yarn backend builds from the grant),
here pointed at a small stand-in for the NodeManager's log
REST (it answers as Hadoop 3.4.1's does: header with LogLength, the head or
tail of `size` bytes, footer; the real one is exercised by
test_yarn_logs.py) or at a port where nothing listens."""
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from conftest import http_get, wait_for

CID = "container_1700000000000_0001_01_000002"


class FakeNM(BaseHTTPRequestHandler):
    files = {}      # name -> bytes
    sizes = []      # the size parameter of each read
    grow = 0        # bytes appended to stdout after each read

    def do_GET(self):
        u = urlparse(self.path)
        prefix = f"/ws/v1/node/containerlogs/{CID}/"
        name = u.path[len(prefix):] if u.path.startswith(prefix) else None
        if self.headers.get("Accept", "").startswith("application/json"):
            return self.answer(503, b'{"RemoteException":{}}')
        if name not in self.files:
            return self.answer(404, b"java.lang.Exception: Cannot find this log on the local disk.")
        data = self.files[name]
        size = int(parse_qs(u.query).get("size", [len(data)])[0])
        FakeNM.sizes.append(size)
        part = data[:size] if size >= 0 else data[max(0, len(data) + size):]
        body = (f"Container: {CID} on localhost:1\nLogAggregationType: LOCAL\n====\nLogType:{name}\n"
                f"LogLastModifiedTime:now\nLogLength:{len(data)}\nLogContents:\n").encode() + part + \
            f"End of LogType:{name}.\n****\n\n".encode()
        if name == "stdout" and FakeNM.grow:
            self.files[name] = data + b"g" * FakeNM.grow
        self.answer(200, body)

    def answer(self, code, body):
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def fake_nm():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), FakeNM)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    FakeNM.files, FakeNM.sizes, FakeNM.grow = {}, [], 0
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def start_job(tony, port):
    tony.env.update(TONY_TASK_LOG_URL=f"http://127.0.0.1:{port}/node/containerlogs/{CID}/alice", CONTAINER_ID=CID)
    p = tony.popen("submit", "--conf", "tony.worker.instances=1", "--executes", "sleep 60")

    def registered():
        jobs = tony.home / "jobs"
        ids = [d.name for d in jobs.iterdir()] if jobs.exists() else []
        r = tony.run("status", ids[0], "--json") if ids else None
        if not r or r.rc != 0:
            return None
        job = json.loads(r.out)
        return job if job["tasks"] and job["tasks"][0].get("log_url") else None
    job = wait_for(registered, timeout=60, what="the task's log link")
    return p, job


def log(job, q=""):
    code, _, body = http_get(f"{job['url']}/v1/tasks/worker/0/log{q}")
    return code, json.loads(body)


def stop(tony, p, job):
    tony.run("kill", job["app_id"])
    p.communicate(timeout=60)


def test_log_link_and_ranges_through_the_nodemanager(tony, fake_nm):
    text = b"".join(b"line %06d\n" % i for i in range(30000))  # 330000 bytes
    FakeNM.files = {"stdout": text}
    p, job = start_job(tony, fake_nm)
    try:
        t = job["tasks"][0]
        assert t["log_url"] == f"http://127.0.0.1:{fake_nm}/node/containerlogs/{CID}/alice"
        assert t["container"] == CID
        chunk = 64 * 1024
        for offset in (0, 100, 200000, len(text) - 5000, len(text) - chunk - 17, len(text)):
            FakeNM.sizes = []
            code, d = log(job, f"?offset={offset}")
            assert code == 200, d
            assert d["data"].encode() == text[offset:offset + chunk], offset
            assert d["size"] == len(text) and d["next"] == offset + len(d["data"]) and d["exists"] is True
            # a reader near the end costs one tail read; else a second read
            assert len(FakeNM.sizes) == (1 if offset == 0 or len(text) - offset <= 2 * chunk else 2), FakeNM.sizes
        code, d = log(job, f"?offset={len(text) + 1}")
        assert code == 400 and "past the end" in d["error"]
        # nothing written to stderr yet: as a file that does not exist
        code, d = log(job, "?stream=stderr")
        assert code == 200 and d == {**d, "data": "", "size": 0, "exists": False}
        code, d = log(job, "?stream=stderr&offset=3")
        assert code == 400
        # a log that grows faster than it can be read gives up with a clear error
        FakeNM.grow = 4 * chunk
        code, d = log(job, "?offset=1000")
        assert code == 200 or (code == 502 and "grows faster" in d["error"]), d
    finally:
        stop(tony, p, job)


def test_unreachable_nodemanager_is_a_clear_error(tony):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    p, job = start_job(tony, port)
    try:
        code, d = log(job)
        assert code == 502, d
        assert f"NodeManager at http://127.0.0.1:{port}" in d["error"] and "refused or unreachable" in d["error"], d
        assert "worker:0" in d["error"]
    finally:
        stop(tony, p, job)
