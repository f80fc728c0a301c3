"""`tony portal`, the history portal, over real jobs' history: three jobs run
on the local backend (one succeeds, one fails with exit code 3, one holds
200 MiB), then damaged and half-written entries and a .jhist written by
another Avro implementation (fastavro, as Java TonY's would be) are placed
beside them. The portal's JSON is checked against what the jobs did, bad
requests and flags get clear errors, and a real Chromium
(tests/browser/portal.mjs) searches, sorts and opens jobs. Screenshots:
tests/e2e/artifacts/portal-*.png."""
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse

import fastavro
import pytest

from conftest import OWN_TOKENS, TONY, Tony, call, http_get, job_processes, raw_get, wait_for
from test_hardening import flood_headers, rss_kib
from test_web_ui import ARTIFACTS, BROWSER_DIR, CHROMIUM, browser_tools  # noqa: F401 (a fixture)

MB = 1024 * 1024

TASK_SH = r"""
echo "$JOB_NAME $TASK_INDEX says hello"
case "$MODE:$JOB_NAME:$TASK_INDEX" in
  fail:worker:1) sleep 0.3; echo "worker 1 fails on purpose" >&2; exit 3 ;;
  retry:worker:*) sleep 0.6; if [ "$SESSION_ID" = 0 ]; then echo "attempt 0 fails" >&2; exit 5; fi ;;
  mem:*) exec /usr/bin/python3 -c 'import time
b = bytearray(200 * 1024 * 1024)
for i in range(0, len(b), 4096): b[i] = 1
time.sleep(1.5)
print("held 200 MiB")' ;;
  *) sleep 1 ;;
esac
"""


def submit(tony, scripts, mode, name, *extra):
    r = tony.submit("--src_dir", str(scripts), "--executes", "bash task.sh", "--shell_env", f"MODE={mode}",
                    "--conf", f"tony.application.name={name}", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.worker.memory=1g", "--conf", "tony.task.metrics-interval-ms=200", *extra)
    return r, r.status()["app_id"]


def jhist_schema(path):
    with open(path, "rb") as f:
        return fastavro.reader(f).writer_schema


def place_broken_entries(hist, schema):
    fin = hist / "finished" / "2024" / "01" / "01"
    # a .jhist that is Avro's magic and then garbage, beside a broken config
    bad = fin / "application_1_0001"
    bad.mkdir(parents=True)
    (bad / "application_1_0001-1000-2000-mallory-SUCCEEDED.jhist").write_bytes(b"Obj\x01" + os.urandom(300))
    (bad / "tony-final.xml").write_text("<configuration><property><name>x")
    # a coordinator that died after copying its config: no .jhist yet
    half = hist / "intermediate" / "application_1_0002"
    half.mkdir(parents=True)
    (half / "tony-final.xml").write_text('<?xml version="1.0"?><configuration><property><name>tony.application.name'
                                         '</name><value>half-written</value></property></configuration>')
    # Java TonY's file, as another Avro writer makes it: fastavro, TonY's schema
    other = fin / "application_1_0003"
    other.mkdir(parents=True)
    events = [
        {"type": "APPLICATION_INITED", "timestamp": 3000,
         "event": {"applicationId": "application_1_0003", "numTasks": 1, "host": "nm-7", "containerID": None}},
        {"type": "TASK_STARTED", "timestamp": 3100,
         "event": {"taskType": "worker", "taskIndex": 0, "host": "nm-7", "containerID": "container_e01_0003_01_000002"}},
        {"type": "TASK_FINISHED", "timestamp": 3900,
         "event": {"taskType": "worker", "taskIndex": 0, "status": "FAILED",
                   "metrics": [{"name": "MAX_MEMORY_BYTES", "value": 5e8}],
                   "containerDiagnostic": "Container killed on request. Exit code is 143"}},
        {"type": "APPLICATION_FINISHED", "timestamp": 4000,
         "event": {"applicationId": "application_1_0003", "finishedTasks": 1, "failedTasks": 1, "metrics": []}},
    ]
    with open(other / "application_1_0003-3000-4000-javauser-FAILED.jhist", "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), events)


class Portal:
    """A running `tony portal --port 0`; its stderr goes to a file (a pipe
    nobody reads could fill up and stall it)."""

    def __init__(self, tony, *args):
        self.err_path = tony.home.parent / f"portal-{time.monotonic_ns()}.err"
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen([TONY, "portal", "--port", "0", *args], env=tony.env, stdout=subprocess.PIPE,
                                     stderr=self.err, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("tony: portal at http://"), (line, self.err_path.read_text())
        # the printed link carries the portal's token; the test's own reads
        # of url send it as the owner's browser does (conftest.OwnerReads)
        self.link = line.split()[3]
        self.url, _, self.token = self.link.partition("?token=")
        assert len(self.token) == 32, line
        OWN_TOKENS[urllib.parse.urlsplit(self.url).netloc] = self.token

    def get(self, path):
        return call(self.url + path)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.communicate(timeout=20)
        self.err.close()
        return self.proc.returncode, self.err_path.read_text()


@pytest.fixture(scope="module")
def hist(tmp_path_factory):
    base = tmp_path_factory.mktemp("portal")
    home = base / "tony-home"
    tony = Tony(home)
    scripts = base / "src"
    scripts.mkdir()
    (scripts / "task.sh").write_text(TASK_SH)
    ok, ok_id = submit(tony, scripts, "ok", "portal-ok")
    assert ok.rc == 0, ok
    fail, fail_id = submit(tony, scripts, "fail", "portal-fail")
    assert fail.rc == 1, fail
    mem, mem_id = submit(tony, scripts, "mem", "portal-mem", "--conf", "tony.application.framework=pytorch",
                         "--conf", "tony.application.sizing-min-run-ms=0")
    assert mem.rc == 0, mem
    retry, retry_id = submit(tony, scripts, "retry", "portal-retry", "--conf", "tony.am.retry-count=1")
    assert retry.rc == 0, retry
    h = home / "history"
    place_broken_entries(h, jhist_schema(next(h.glob(f"finished/*/*/*/{ok_id}/*.jhist"))))
    portal = Portal(tony)
    yield {"tony": tony, "home": home, "history": h, "portal": portal, "url": portal.url,
           "ok": ok_id, "fail": fail_id, "mem": mem_id, "retry": retry_id}
    rc, err = portal.stop()
    # it stops on SIGTERM, cleanly (under ASan: nothing leaked, nothing bad)
    assert rc == 0, err
    for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
        assert marker not in err, err
    left = job_processes(home)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left


def by_id(jobs):
    return {j["app_id"]: j for j in jobs}


def task(job, tid):
    return next(t for t in job["tasks"] if t["task"] == tid)


def test_job_list(hist):
    code, d = hist["portal"].get("v1/jobs")
    assert code == 200, d
    assert d["location"] == str(hist["history"]) and d["problems"] == []
    jobs = by_id(d["jobs"])
    ok, fail, mem = jobs[hist["ok"]], jobs[hist["fail"]], jobs[hist["mem"]]
    assert (ok["status"], fail["status"], mem["status"]) == ("SUCCEEDED", "FAILED", "SUCCEEDED")
    assert (ok["name"], fail["name"], mem["name"]) == ("portal-ok", "portal-fail", "portal-mem")
    assert ok["framework"] == "tensorflow" and mem["framework"] == "pytorch"
    for j in (ok, fail, mem):
        assert j["roles"] == {"worker": 2} and j["task_count"] == 2 and j["problems"] == []
        assert j["user"] and j["in_progress"] is False
        assert 0 < j["duration_ms"] == j["finished_ms"] - j["started_ms"]
    # newest first
    assert [j["app_id"] for j in d["jobs"]][:4] == [hist["retry"], hist["mem"], hist["fail"], hist["ok"]]
    bad = jobs["application_1_0001"]
    assert bad["status"] == "SUCCEEDED" and any("tony-final.xml" in p for p in bad["problems"]), bad
    half = jobs["application_1_0002"]
    assert half["status"] == "UNKNOWN" and half["name"] == "half-written"
    assert any("no .jhist" in p for p in half["problems"])
    assert jobs["application_1_0003"]["user"] == "javauser"
    # a job that appears later shows without a restart
    new = hist["history"] / "intermediate" / "application_1_0009"
    new.mkdir()
    (new / "application_1_0009-99999999999999-eve.jhist.inprogress").write_bytes(b"")
    try:
        jobs = by_id(hist["portal"].get("v1/jobs")[1]["jobs"])
        assert jobs["application_1_0009"]["status"] == "RUNNING" and jobs["application_1_0009"]["in_progress"]
    finally:
        shutil.rmtree(new)
    assert "application_1_0009" not in by_id(hist["portal"].get("v1/jobs")[1]["jobs"])


def test_failed_job_detail_and_logs(hist):
    p, app = hist["portal"], hist["fail"]
    code, job = p.get(f"v1/jobs/{app}")
    assert code == 200, job
    assert job["problems"] == [], job["problems"]
    w1, w0 = task(job, "worker:1"), task(job, "worker:0")
    assert w1["status"] == "FAILED" and w1["exit_status"] == 3 and w1["exit_meaning"] == "exit code 3"
    assert w1["host"] == "127.0.0.1" and w1["requested"]["memory_bytes"] == 1024 * MB
    # its peer was stopped when it failed (lock-step training), or had succeeded
    assert w0["status"] in ("SUCCEEDED", "FINISHED", "KILLED") and w0["exit_meaning"], w0
    assert {e["type"] for e in job["events"]} >= {"APPLICATION_INITED", "TASK_FINISHED", "APPLICATION_FINISHED"}
    assert job["log"][0]["type"] == "APPLICATION_INITED" and job["log"][-1]["type"] == "APPLICATION_FINISHED"
    conf = {c["key"]: c["value"] for c in job["config"]}
    assert conf["tony.application.name"] == "portal-fail" and conf["tony.worker.instances"] == "2"
    # logs, served from the local backend's job dir
    links = {(l["stream"], l["attempt"]): l for l in w1["logs"]}
    code, _, body = http_get(p.url + links[("stdout", 0)]["url"])
    assert code == 200 and b"worker 1 says hello" in body
    code, headers, body = http_get(p.url + links[("stderr", 0)]["url"])
    assert code == 200 and b"worker 1 fails on purpose" in body
    assert headers["Content-Type"].startswith("text/plain") and headers["X-Content-Type-Options"] == "nosniff"
    code, _, body = http_get(p.url + links[("stderr", 0)]["url"] + "&offset=7")
    assert code == 200 and body == b"1 fails on purpose\n"
    code, _, body = http_get(p.url + job["am_log"])
    assert code == 200 and app.encode() in body
    # TonY's portal links lead to the job's page
    code, head, _ = raw_get(p.url, f"/jobs/{app}")
    assert code == 302 and f"Location: ../#/jobs/{app}\r\n".encode() in head, head


def test_memory_series_and_advice(hist):
    p, app = hist["portal"], hist["mem"]
    files = list(hist["history"].glob(f"finished/*/*/*/{app}/metrics.json"))
    assert len(files) == 1
    saved = json.loads(files[0].read_text())
    assert [a["attempt"] for a in saved["attempts"]] == [0]
    code, job = p.get(f"v1/jobs/{app}")
    assert code == 200 and job["has_metrics"] and job["framework"] == "pytorch"
    for tid in ("worker:0", "worker:1"):
        t = task(job, tid)
        assert t["series_attempts"] == [0] and t["metrics"]["MAX_MEMORY_BYTES"] >= 200 * MB
        code, s = p.get(f"v1/jobs/{app}/tasks/worker/{t['index']}/metrics")
        assert code == 200, s
        assert len(s["t_ms"]) >= 3 and len(s["rss_bytes"]) == len(s["t_ms"]) == len(s["cpu_percent"])
        assert max(s["rss_bytes"]) >= 200 * MB and s["t_ms"] == sorted(s["t_ms"])
        assert job["started_ms"] <= s["t_ms"][0] and s["t_ms"][-1] <= job["finished_ms"]
        assert s["attempt"] == 0 and s["role"] == "worker"
    assert any(a["kind"] == "memory" and a["key"] == "tony.worker.memory" for a in job["advice"]), job["advice"]


def test_restarted_job_keeps_each_attempt(hist):
    p, app = hist["portal"], hist["retry"]
    code, job = p.get(f"v1/jobs/{app}")
    assert code == 200 and job["status"] == "SUCCEEDED", job
    files = list(hist["history"].glob(f"finished/*/*/*/{app}/metrics.json"))
    assert [a["attempt"] for a in json.loads(files[0].read_text())["attempts"]] == [0, 1]
    w = task(job, "worker:1")
    assert w["status"] == "SUCCEEDED" and w["attempt"] == 1 and w["exit_status"] == 0, w
    assert w["series_attempts"] == [0, 1]
    assert {(l["stream"], l["attempt"]) for l in w["logs"]} == {(s, a) for s in ("stdout", "stderr") for a in (0, 1)}
    err0 = next(l for l in w["logs"] if (l["stream"], l["attempt"]) == ("stderr", 0))
    assert b"attempt 0 fails" in http_get(p.url + err0["url"])[2]
    for attempt in (0, 1):
        code, s = p.get(f"v1/jobs/{app}/tasks/worker/1/metrics?attempt={attempt}")
        assert code == 200 and s["attempt"] == attempt and s["t_ms"], s
    a0, a1 = (p.get(f"v1/jobs/{app}/tasks/worker/1/metrics?attempt={a}")[1]["t_ms"] for a in (0, 1))
    assert a0[-1] < a1[0]  # two runs, one after the other
    assert [e["type"] for e in job["log"]].count("RESTART") == 1


def test_damaged_and_foreign_history(hist):
    p = hist["portal"]
    code, job = p.get("v1/jobs/application_1_0001")
    assert code == 200
    assert any("is damaged" in x for x in job["problems"]) and any("tony-final.xml" in x for x in job["problems"])
    assert job["events"] == [] and job["config"] == []
    code, job = p.get("v1/jobs/application_1_0002")
    assert code == 200 and any("no .jhist file" in x for x in job["problems"])
    code, job = p.get("v1/jobs/application_1_0003")
    assert code == 200 and [e["type"] for e in job["events"]][0] == "APPLICATION_INITED"
    w = task(job, "worker:0")
    assert w["status"] == "FAILED" and w["container"] == "container_e01_0003_01_000002" and w["host"] == "nm-7"
    assert w["diagnostics"].startswith("Container killed") and w["metrics"]["MAX_MEMORY_BYTES"] == 5e8
    assert w["logs"] == []  # not on this machine
    # tony history reads the same tree without failing
    r = hist["tony"].run("history", "--location", str(hist["history"]), check_rc=0)
    assert "application_1_0001" in r.out and "UNKNOWN" in r.out
    r = hist["tony"].run("history", "application_1_0001", "--location", str(hist["history"]))
    assert r.rc == 3 and "is damaged" in r.err


def test_bad_requests(hist):
    p, app = hist["portal"], hist["fail"]
    code, d = p.get("v1/jobs/application_404_0001")
    assert code == 404 and "no job application_404_0001" in d["error"]
    for target, want in [("/v1/jobs/../../../etc/passwd", (400, 404)),
                         ("/v1/jobs/..%2F..%2F..%2Fetc%2Fpasswd", (400,)),
                         ("/v1/jobs/%2e%2e", (400,)),
                         (f"/v1/jobs/{app}/tasks/..%2F..%2F/0/log", (400,)),
                         (f"/v1/jobs/{app}/tasks/worker/0/log?stream=../../../../etc/passwd", (400,)),
                         (f"/v1/jobs/{app}/tasks/worker/x/log", (400,)),
                         (f"/v1/jobs/{app}/tasks/worker/0/log?attempt=-1", (400,)),
                         (f"/v1/jobs/{app}/tasks/worker/0/log?offset=abc", (400,)),
                         (f"/v1/jobs/{app}/tasks/worker/7/log", (404,)),
                         (f"/v1/jobs/{app}/tasks/worker/0/metrics?attempt=5", (404,)),
                         (f"/v1/jobs/{app}/tasks/worker/0/bogus", (404,)),
                         ("/ui/../../../../etc/passwd", (404,)),
                         ("/ui/nope.js", (404,)),
                         ("/nope", (404,))]:
        code, _, body = raw_get(p.url, target)
        assert code in want, (target, code, body)
        assert b"root:" not in body
        if code != 404 or target.startswith("/v1"):
            assert json.loads(body)["error"], (target, body)
    code, d = call(p.url + "v1/jobs", method="POST", body="{}")
    assert code == 405 and "GET" in d["error"]
    # the page and its files are there
    for path in ("", "ui/portal.js", "ui/plots.js", "ui/portal.css", "ui/style.css"):
        assert http_get(p.url + path)[0] == 200, path


def test_only_its_own_host_names(hist):
    """DNS rebinding: a page of another site, its name pointed at 127.0.0.1,
    reaches the portal with that name in Host. Only the portal's own names
    and address, with its port, are answered; others get a 421 that says
    why, and no job's data."""
    p = hist["portal"]
    port = p.url.rstrip("/").rsplit(":", 1)[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LocalHost:{port}", "localhost", f"[::1]:{port}"):
        code, _, body = raw_get(p.url, "/v1/jobs", host)
        assert code == 200 and json.loads(body)["jobs"], (host, code, body[:200])
    for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{int(port) + 1}", f"localhost.evil.example:{port}",
                 f"127.0.0.1:{port}:1", f"[::1]x:{port}", "", f"10.1.2.3:{port}"):
        code, _, body = raw_get(p.url, "/v1/jobs", host)
        assert code == 421, (host, code, body[:200])
        assert b"application_" not in body
        assert "DNS rebinding" in json.loads(body)["error"] and "--host" in json.loads(body)["error"]
    code, _, body = raw_get(p.url, "/", f"evil.example:{port}")
    assert code == 421 and b"<html" not in body.lower()


def test_host_names_with_every_interface(hist):
    """--host 0.0.0.0: any address of this machine and its host name are
    answered, other names still not (with the token such a portal takes:
    test_read_token.py)."""
    p = Portal(hist["tony"], "--host", "0.0.0.0")
    try:
        port = urllib.parse.urlsplit(p.url).port
        token = {"X-Tony-Token": p.token}
        url = f"http://127.0.0.1:{port}/"
        for host in (f"{socket.gethostname()}:{port}", f"192.0.2.7:{port}", f"127.0.0.1:{port}"):
            assert raw_get(url, "/v1/jobs", host, token)[0] == 200, host
        assert raw_get(url, "/v1/jobs", f"evil.example:{port}", token)[0] == 421
    finally:
        assert p.stop()[0] == 0


def test_access_token(hist):
    """Every portal takes a token (--token or not): a request without it is
    a 401 that says where it is, for the API; the page's own files (the same
    for every portal) are served. The printed link sends the browser on to
    the page with the token in the URL's fragment, setting no cookie; the
    header or Authorization then opens the API. A wrong token opens
    nothing, and a cookie opens nothing either."""
    for args in ((), ("--token",)):
        p = Portal(hist["tony"], *args)
        try:
            base, token = p.url, p.token
            assert base.endswith("/"), p.link
            for path in ("v1/jobs", f"v1/jobs/{hist['ok']}", f"v1/jobs/{hist['ok']}/am.log"):
                code, _, body = http_get(base + path, stranger=True)
                assert code == 401 and b"tony portal" in body and b"application_" not in body, (path, code, body[:200])
            for path in ("", "ui/portal.js"):
                code, _, body = http_get(base + path, stranger=True)
                assert code == 200 and b"application_" not in body, (path, code)
            for bad in ("0" * 32, token[:-1], token + "0", ""):
                assert http_get(base + "v1/jobs", {"Authorization": f"Bearer {bad}"}, stranger=True)[0] == 401, bad
                assert http_get(base + "v1/jobs", {"X-Tony-Token": bad}, stranger=True)[0] == 401, bad
                assert http_get(f"{base}v1/jobs?token={bad}", stranger=True)[0] == 401, bad
            assert http_get(base + "v1/jobs", {"Cookie": f"tony_portal_token={token}"}, stranger=True)[0] == 401
            # the printed link: on to the page, the token in the fragment, no cookie
            code, headers, _ = http_get(p.link, stranger=True, follow=False)
            assert code == 302 and headers["Location"] == f"./#token={token}", headers
            assert "Set-Cookie" not in headers, headers
            code, _, body = http_get(base + "v1/jobs", {"Authorization": f"Bearer {token}"}, stranger=True)
            assert code == 200 and hist["ok"] in body.decode()
            code, _, body = http_get(base + "v1/jobs", {"X-Tony-Token": token}, stranger=True)
            assert code == 200 and hist["ok"] in body.decode()
            assert http_get(f"{base}v1/jobs/{hist['ok']}/am.log?token={token}", stranger=True)[0] == 200
        finally:
            assert p.stop()[0] == 0


def test_huge_headers_are_cut_off(hist):
    """The portal stops reading a request's headers at 64 KiB, as the
    coordinator does, and keeps serving."""
    p = hist["portal"]
    before = rss_kib(p.proc.pid)
    sent, answer = flood_headers(p.url, 128 * 1024 * 1024)
    assert sent < 16 * 1024 * 1024, f"the portal took {sent >> 20} MiB of headers"
    assert answer == b"" or answer.split(b" ")[1] == b"400", answer[:200]
    assert rss_kib(p.proc.pid) - before < 32 * 1024
    assert p.get("v1/jobs")[0] == 200


def test_bad_flags(hist, tmp_path):
    tony = hist["tony"]
    r = tony.run("portal", "--port", "abc")
    assert r.rc == 2 and "--port abc" in r.err, r
    r = tony.run("portal", "--port", "70000")
    assert r.rc == 2 and "0-65535" in r.err, r
    r = tony.run("portal", "--location", str(tmp_path / "nope"))
    assert r.rc == 2 and "no such directory" in r.err, r
    r = tony.run("portal", "--bogus")
    assert r.rc == 2 and "bogus" in r.err, r
    r = tony.run("portal", "extra")
    assert r.rc == 2 and "unexpected 'extra'" in r.err, r
    r = tony.run("portal", "--host", "")
    assert r.rc == 2 and "--host" in r.err, r
    r = tony.run("portal", "--host", "no-such-host.invalid", "--port", "0")
    assert r.rc == 2 and "no-such-host.invalid" in r.err, r
    r = tony.run("portal", "--host", "192.0.2.1", "--port", "0")
    assert r.rc == 2 and "not an address of this machine" in r.err, r
    with socket.socket() as s:  # a port someone else holds
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = tony.run("portal", "--port", str(port), timeout=10)
        assert r.rc == 2 and "in use" in r.err and "--port 0" in r.err, r
    r = tony.run("portal", "--help", check_rc=0)
    assert "--location" in r.out and "--port" in r.out
    empty = tmp_path / "empty-history"
    empty.mkdir()
    p = Portal(tony, "--location", str(empty))
    try:
        code, d = p.get("v1/jobs")
        assert code == 200 and d["jobs"] == [] and "no job has written history here yet" in d["problems"][0]
    finally:
        assert p.stop()[0] == 0


def test_portal_in_a_browser(hist, browser_tools):
    """The whole page in Chromium, opened from the link the portal prints:
    the token it keeps (sessionStorage) carries the page's own requests."""
    portal = Portal(hist["tony"])
    try:
        cfg = {"url": portal.link, "ok": hist["ok"], "fail": hist["fail"], "mem": hist["mem"],
               "damaged": "application_1_0001", "artifacts": str(ARTIFACTS), "chromium": CHROMIUM}
        p = subprocess.run([browser_tools, str(BROWSER_DIR / "portal.mjs"), json.dumps(cfg)], cwd=BROWSER_DIR,
                           capture_output=True, text=True, timeout=300)
    finally:
        assert portal.stop()[0] == 0
    assert p.returncode == 0, f"browser check failed (screenshots in {ARTIFACTS}):\n{p.stderr}\n{p.stdout}"
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["ok"] and out["rows"] >= 6
    for name in ("list", "search", "failed-job", "memory-plots", "damaged"):
        assert (ARTIFACTS / f"portal-{name}.png").stat().st_size > 1000, name


def test_job_whose_coordinator_died_shows_lost(tony):
    """A coordinator killed with SIGKILL (fault injection, issue 11) never
    finishes its history: the .jhist stays in progress. `tony history` and
    the portal must not call such a job RUNNING forever: they find its
    coordinator gone (through the local job dir) and say LOST, with why.
    Its tasks, left without a coordinator, stop by themselves once their
    heartbeats fail (5 here): every process of the job is gone within 15 s."""
    r = tony.submit("--detach", "--executes", "sleep 300", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.worker.memory=256m", "--conf", "tony.task.max-missed-heartbeats=5")
    assert r.rc == 0, r
    job = r.job_dir()
    app = job.name
    wait_for(lambda: (job / "status.json").exists() and
             all(t["state"] == "RUNNING" for t in json.loads((job / "status.json").read_text())["tasks"]), 60,
             what="running")
    running = json.loads(tony.run("history", "--json", check_rc=0).out)
    assert by_id(running["jobs"])[app]["status"] != "LOST"
    pid = json.loads((job / "am.json").read_text())["pid"]
    orphans = [p for p in job_processes(tony.home) if p != pid]
    assert len(orphans) >= 4, orphans  # two executors and their sleeps
    os.kill(pid, signal.SIGKILL)
    killed_at = time.time()
    try:
        wait_for(lambda: not os.path.exists(f"/proc/{pid}") or
                 open(f"/proc/{pid}/stat").read().split(")")[-1].split()[0] == "Z", 10, what="the coordinator gone")
        out = tony.run("history", check_rc=0).out
        line = next(x for x in out.splitlines() if x.startswith(app))
        assert line.split()[-1] == "LOST", out
        assert f"its coordinator (pid {pid} on this machine) is no longer running" in out, out
        j = by_id(json.loads(tony.run("history", "--json", check_rc=0).out)["jobs"])[app]
        assert j["status"] == "LOST" and j["in_progress"] and f"pid {pid}" in j["lost"], j
        detail = tony.run("history", app, "--json")
        assert detail.rc == 0, detail
        assert any("the job is not running" in p for p in json.loads(detail.out)["problems"]), detail.out
        portal = Portal(tony)
        try:
            st, body = portal.get("v1/jobs")
            assert st == 200 and by_id(body["jobs"])[app]["status"] == "LOST", body
            st, body = portal.get(f"v1/jobs/{app}")
            assert st == 200 and body["status"] == "LOST" and f"pid {pid}" in body["lost"], body
        finally:
            rc, err = portal.stop()
        assert rc == 0, err
        wait_for(lambda: not job_processes(tony.home), max(1, killed_at + 15 - time.time()), interval=0.2,
                 what="every task of the job stopped within 15 s of its coordinator's death")
        for i in (0, 1):
            log = (job / "attempts" / "0" / f"worker-{i}" / "executor.log").read_text()
            assert "heartbeats in a row failed" in log and "stopping the task" in log, log
    finally:
        for p in job_processes(tony.home):
            os.kill(p, signal.SIGKILL)


def test_links_in_log_dirs_are_not_followed(tony, tmp_path):
    """Whoever can write to a shared history tree (or to the tony root) can
    plant a `stdout` that is a symbolic link to a file only the portal's user
    may read (here a temp file standing for /etc/shadow), or point a task's
    recorded log dir at such a place: the portal refuses to serve it, with
    why, and never shows its bytes. A FIFO there does not hang it."""
    r = tony.submit("--executes", "echo hello; echo oops >&2", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.worker.memory=256m")
    assert r.rc == 0, r
    job = r.job_dir()
    app = job.name
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$very-secret-hash:19000:0:99999:7:::\n")
    task_dir = job / "attempts/0/worker-0"
    (task_dir / "stdout").unlink()
    (task_dir / "stdout").symlink_to(secret)
    portal = Portal(tony)
    try:
        base = f"v1/jobs/{app}/tasks/worker/0/log"

        def log(stream):
            code, _, body = http_get(portal.url + f"{base}?stream={stream}")
            assert b"very-secret-hash" not in body, body
            return code, body

        code, body = log("stdout")
        assert code == 403 and "symbolic link" in json.loads(body)["error"], body
        assert log("stderr") == (200, b"oops\n")
        st, detail = portal.get(f"v1/jobs/{app}")
        streams = [x["stream"] for x in next(t for t in detail["tasks"] if t["task"] == "worker:0")["logs"]]
        assert streams == ["stderr"], detail
        # the am.log, the same way
        (job / "am.log").rename(job / "am.log.real")
        (job / "am.log").symlink_to(secret)
        code, _, body = http_get(portal.url + f"v1/jobs/{app}/am.log")
        assert code == 403 and b"very-secret-hash" not in body, body
        assert "am_log" not in portal.get(f"v1/jobs/{app}")[1]
        # a directory of the local layout that is a link out of the job dir
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "stdout").write_text("root:$6$very-secret-hash\n")
        task_dir.rename(job / "attempts/0/worker-0.real")
        task_dir.symlink_to(elsewhere)
        code, body = log("stdout")
        assert code == 403 and "outside" in json.loads(body)["error"], body
        task_dir.unlink()
        # a recorded log dir (history's metrics.json) with a planted link,
        # one behind a linked directory, one with a FIFO
        metrics = next((tony.home / "history").glob(f"finished/*/*/*/{app}/metrics.json"))
        m = json.loads(metrics.read_text())
        planted = tmp_path / "planted" / app
        planted.mkdir(parents=True)
        (planted / "stdout").symlink_to(secret)
        os.mkfifo(planted / "stderr")
        (tmp_path / "linked").mkdir()
        (tmp_path / "linked" / app).symlink_to(elsewhere)
        for log_dir, stream, why in ((planted, "stdout", "symbolic link"), (planted, "stderr", "not a regular file"),
                                     (tmp_path / "linked" / app, "stdout", "outside")):
            for a in m["attempts"]:
                for t in a["tasks"]:
                    t["log_dir"] = str(log_dir)
            metrics.write_text(json.dumps(m))
            code, body = log(stream)
            assert code == 403 and why in json.loads(body)["error"], (log_dir, stream, body)
        assert portal.proc.poll() is None
    finally:
        rc, err = portal.stop()
    assert rc == 0, err
