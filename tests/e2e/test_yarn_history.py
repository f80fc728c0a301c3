"""Job history on HDFS, on the real Hadoop test cluster: a YARN job's
coordinator writes TonY's tree to tony.history.location in HDFS (checked over
WebHDFS with urllib, and the .jhist read back with fastavro), `tony history`
and `tony portal` read it back through their local cache, a NameNode that
does not answer or a location that does not exist is a clear error, a
location HDFS refuses costs the job nothing but a warning, and a NameNode
that never answers stalls neither the coordinator's API nor the job."""
import io
import json
import re
import shutil
import socket
import threading
import time
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import fastavro
import pytest

from conftest import wait_for
from test_portal import Portal
from test_yarn_jobs import get_timed, role_cmd, yarn  # noqa: F401 (a fixture)

pytestmark = pytest.mark.hadoop


def unique_location():
    return f"/tmp/tony-history-{uuid.uuid4().hex[:12]}"


def hdfs_read(cluster, path):
    with urllib.request.urlopen(cluster.hdfs_url(path, "OPEN"), timeout=30) as r:
        return r.read()


def finished_dirs(cluster, finished):
    """<finished>/yyyy/mm/dd/<appId> paths found by listing (no guessing the day)."""
    out = []
    for y in cluster.hdfs_list(finished):
        for m in cluster.hdfs_list(f"{finished}/{y}"):
            for d in cluster.hdfs_list(f"{finished}/{y}/{m}"):
                for app in cluster.hdfs_list(f"{finished}/{y}/{m}/{d}"):
                    out.append(f"{finished}/{y}/{m}/{d}/{app}")
    return out


def am_stderr(cluster, app_id):
    for d in cluster.container_logs(app_id):
        if (d / "am.stderr").exists():
            return (d / "am.stderr").read_text(errors="replace")
    raise AssertionError(f"no am.stderr for {app_id}")


@pytest.mark.hadoop33
def test_history_written_to_hdfs_and_read_back(yarn, tmp_path):
    cluster = yarn.cluster
    loc = unique_location()
    r = yarn.submit("--executes", role_cmd({"worker": "echo hello from $TASK_INDEX"}),
                    "--conf", "tony.worker.instances=2", "--conf", f"tony.history.location={loc}",
                    "--conf", "tony.application.name=hdfs-history")
    assert r.rc == 0, r
    app_id = yarn.app_id(r)

    # The finished tree, TonY's way; intermediate/ emptied.
    dirs = finished_dirs(cluster, f"{loc}/finished")
    assert [d.rsplit("/", 1)[1] for d in dirs] == [app_id], dirs
    job = dirs[0]
    names = sorted(cluster.hdfs_list(job))
    jhist = [n for n in names if n.endswith(".jhist")]
    assert len(jhist) == 1, names
    m = re.fullmatch(rf"{app_id}-(\d+)-(\d+)-([a-z0-9_.-]+)-SUCCEEDED\.jhist", jhist[0])
    assert m and int(m[1]) <= int(m[2]), jhist
    assert names == sorted([jhist[0], "tony-final.xml", "events.jsonl", "metrics.json"]), names
    assert cluster.hdfs_status(f"{loc}/intermediate")["type"] == "DIRECTORY"
    assert cluster.hdfs_list(f"{loc}/intermediate") == []

    # The .jhist, read by an independent Avro reader, is this job.
    events = list(fastavro.reader(io.BytesIO(hdfs_read(cluster, f"{job}/{jhist[0]}"))))
    types = [e["type"] for e in events]
    assert types[0] == "APPLICATION_INITED" and types[-1] == "APPLICATION_FINISHED", types
    assert events[0]["event"]["applicationId"] == app_id
    assert events[0]["event"]["numTasks"] == 2
    started = sorted(e["event"]["taskIndex"] for e in events if e["type"] == "TASK_STARTED")
    assert started == [0, 1]
    fin = [e["event"] for e in events if e["type"] == "TASK_FINISHED"]
    assert sorted((f["taskType"], f["taskIndex"], f["status"]) for f in fin) == \
        [("worker", 0, "SUCCEEDED"), ("worker", 1, "SUCCEEDED")]
    assert all(f["containerDiagnostic"] == "NA" for f in fin)
    end = events[-1]["event"]
    assert (end["applicationId"], end["finishedTasks"], end["failedTasks"]) == (app_id, 2, 0)
    log = [json.loads(line) for line in hdfs_read(cluster, f"{job}/events.jsonl").decode().splitlines()]
    assert log[-1]["type"] == "APPLICATION_FINISHED" and "SUCCEEDED" in log[-1]["text"]
    metrics = json.loads(hdfs_read(cluster, f"{job}/metrics.json"))
    assert metrics["app_id"] == app_id
    assert sorted(t["index"] for t in metrics["attempts"][-1]["tasks"]) == [0, 1]
    assert loc in hdfs_read(cluster, f"{job}/tony-final.xml").decode()
    am = am_stderr(cluster, app_id)
    assert re.search(r"history: copied to hdfs://\S+/intermediate/" + app_id + r" in \d+ ms", am), am
    assert re.search(r"history: moved to hdfs://\S+" + job + r" in \d+ ms", am), am

    # `tony history` lists it and shows its events, through the cache.
    uri = f"{cluster.default_fs}{loc}"
    h = yarn.tony.run("history", "--location", uri)
    assert h.rc == 0, h
    row = [line for line in h.out.splitlines() if line.startswith(app_id)]
    assert row and row[0].split()[-1] == "SUCCEEDED", h.out
    h = yarn.tony.run("history", "--location", uri, app_id)
    assert h.rc == 0, h
    assert f"history: {uri}/finished/" in h.out and "APPLICATION_FINISHED" in h.out and "worker:1" in h.out, h.out
    h = yarn.tony.run("history", "--location", uri, "--json")
    assert h.rc == 0, h
    listing = json.loads(h.out)
    assert listing["location"] == uri and [j["app_id"] for j in listing["jobs"]] == [app_id]
    assert listing["cache"]["downloaded"] == 0  # the first runs fetched it; nothing changed since
    assert listing["jobs"][0]["dir"].startswith(str(yarn.tony.home / "history-cache"))
    # hdfs:/// is the default file system too
    assert yarn.tony.run("history", "--location", f"hdfs://{loc}", app_id).rc == 0

    # A bare tony.history.location means HDFS when the backend is yarn.
    conf_dir = tmp_path / "tony-conf"
    conf_dir.mkdir()
    (conf_dir / "tony-site.xml").write_text(
        f"<configuration><property><name>tony.history.location</name><value>{loc}</value></property>"
        "</configuration>")
    yarn.tony.env["TONY_CONF_DIR"] = str(conf_dir)
    h = yarn.tony.run("history", app_id)
    assert h.rc == 0 and f"history: {uri}/finished/" in h.out, h
    del yarn.tony.env["TONY_CONF_DIR"]

    # `tony portal` serves it.
    portal = Portal(yarn.tony, "--location", uri)
    try:
        code, d = portal.get("v1/jobs")
        assert code == 200, d
        assert d["location"] == uri and d["problems"] == [], d
        assert "cache" in d
        (j,) = [j for j in d["jobs"] if j["app_id"] == app_id]
        assert (j["status"], j["name"]) == ("SUCCEEDED", "hdfs-history"), j
        code, detail = portal.get(f"v1/jobs/{app_id}")
        assert code == 200, detail
        assert [e["type"] for e in detail["events"]][-1] == "APPLICATION_FINISHED"
        assert sorted(t["task"] for t in detail["tasks"]) == ["worker:0", "worker:1"]
        assert any(c["key"] == "tony.history.location" and c["value"] == loc for c in detail["config"])
    finally:
        rc, err = portal.stop()
    assert rc == 0, err


def test_history_errors_name_the_namenode_and_location(tony, hadoop, tmp_path):
    tony.env["HADOOP_CONF_DIR"] = hadoop.conf_dir
    # Nothing listens there.
    r = tony.run("history", "--location", "webhdfs://127.0.0.1:1/tmp/h")
    assert r.rc == 3, r
    assert "--location webhdfs://127.0.0.1:1/tmp/h" in r.err and "NameNode at http://127.0.0.1:1" in r.err, r.err
    r = tony.run("portal", "--port", "0", "--location", "webhdfs://127.0.0.1:1/tmp/h")
    assert r.rc == 3 and "NameNode at http://127.0.0.1:1" in r.err, r
    # A cluster config whose NameNode address is wrong: the key and file are named.
    conf = tmp_path / "conf"
    shutil.copytree(hadoop.conf_dir, conf)
    site = conf / "hdfs-site.xml"
    site.write_text(re.sub(r"(dfs.namenode.http-address</name><value>)[^<]*", r"\g<1>127.0.0.1:1", site.read_text()))
    tony.env["HADOOP_CONF_DIR"] = str(conf)
    r = tony.run("history", "--location", "hdfs:///tmp/h")
    assert r.rc == 3, r
    assert "http://127.0.0.1:1" in r.err and "dfs.namenode.http-address" in r.err and str(site) in r.err, r.err
    tony.env["HADOOP_CONF_DIR"] = hadoop.conf_dir
    # A location that is not there.
    missing = unique_location()
    r = tony.run("history", "--location", f"hdfs://{missing}")
    assert r.rc == 2 and "no history there" in r.err and missing in r.err, r
    r = tony.run("portal", "--port", "0", "--location", f"hdfs://{missing}")
    assert r.rc == 2 and "no history there" in r.err, r
    # Another cluster's hdfs:// and no Hadoop config at all.
    r = tony.run("history", "--location", "hdfs://elsewhere:8020/h")
    assert r.rc == 2 and "fs.defaultFS" in r.err and "webhdfs://" in r.err, r
    del tony.env["HADOOP_CONF_DIR"]
    r = tony.run("history", "--location", "hdfs:///h")
    assert r.rc == 2 and "HADOOP_CONF_DIR" in r.err, r
    r = tony.run("history", "--location", "s3a://bucket/h")
    assert r.rc == 2 and "--location s3a://bucket/h" in r.err, r


def test_unwritable_history_location_does_not_fail_the_job(yarn):
    cluster = yarn.cluster
    # A file where the history directory should be: HDFS refuses the mkdir.
    blocker = unique_location()
    cluster.hdfs_put(blocker, b"not a directory")
    r = yarn.submit("--executes", "true", "--conf", "tony.worker.instances=1",
                    "--conf", f"tony.history.location=hdfs://{blocker}")
    assert r.rc == 0, r
    app_id = yarn.app_id(r)
    assert cluster.wait_app(app_id)["finalStatus"] == "SUCCEEDED"
    am = am_stderr(cluster, app_id)
    warnings = [line for line in am.splitlines() if "not copied to HDFS" in line]
    assert len(warnings) == 1, am  # said once
    assert blocker in warnings[0] and "WARN" in warnings[0], warnings
    assert cluster.hdfs_status(blocker)["type"] == "FILE"


def test_restarted_job_copies_history_when_an_attempt_ends(yarn):
    cluster = yarn.cluster
    loc = unique_location()
    r = yarn.submit("--executes", 'if [ "$SESSION_ID" = 0 ]; then exit 3; fi; true',
                    "--conf", "tony.worker.instances=1", "--conf", "tony.am.retry-count=1",
                    "--conf", f"tony.history.location={loc}")
    assert r.rc == 0, r
    app_id = yarn.app_id(r)
    am = am_stderr(cluster, app_id)
    # at the start and when attempt 0 ended, then moved at the end
    assert len(re.findall(r"history: copied to hdfs://\S+ in \d+ ms", am)) == 2, am
    (job,) = finished_dirs(cluster, f"{loc}/finished")
    metrics = json.loads(hdfs_read(cluster, f"{job}/metrics.json"))
    assert [a["attempt"] for a in metrics["attempts"]] == [0, 1]
    assert [t["state"] for t in metrics["attempts"][0]["tasks"]] == ["FAILED"]
    log = hdfs_read(cluster, f"{job}/events.jsonl").decode()
    assert '"type":"RESTART"' in log.replace(" ", "")


def test_running_job_then_finished_through_the_cache(yarn):
    cluster = yarn.cluster
    loc = unique_location()
    uri = f"hdfs://{loc}"
    proc = yarn.popen_submit("--executes", "sleep 6", "--conf", "tony.worker.instances=1",
                             "--conf", f"tony.history.location={loc}")
    try:
        wait_for(lambda: any(n.endswith(".jhist.inprogress") for app in cluster.hdfs_list(f"{loc}/intermediate")
                             for n in cluster.hdfs_list(f"{loc}/intermediate/{app}")),
                 timeout=90, what="the coordinator's first copy in HDFS")
        h = yarn.tony.run("history", "--location", uri, "--json")
        assert h.rc == 0, h
        (job,) = json.loads(h.out)["jobs"]
        assert (job["status"], job["in_progress"]) == ("RUNNING", True), job
        assert "/intermediate/" in job["dir"]
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, (out, err)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    h = yarn.tony.run("history", "--location", uri, "--json")
    listing = json.loads(h.out)
    (done,) = listing["jobs"]
    assert (done["app_id"], done["status"]) == (job["app_id"], "SUCCEEDED"), listing
    # the running copy left the cache with the job's move in HDFS
    assert listing["cache"]["removed"] >= 1, listing
    assert not list((yarn.tony.home / "history-cache").glob("**/intermediate/application_*"))


class SilentNameNode:
    """A TCP server on this machine that accepts connections and never says a
    word: a NameNode that hangs. (The real one cannot be made to hang alone:
    freezing it would stall every other test on the shared cluster.)"""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.stopping.is_set():
            try:
                self.conns.append(self.sock.accept()[0])
            except socket.timeout:
                pass

    def close(self):
        self.stopping.set()
        self.thread.join()
        for c in self.conns:
            c.close()
        self.sock.close()


def test_namenode_that_never_answers_stalls_nothing(yarn):
    # The coordinator gets the silent server as its WebHDFS address (TonY's
    # container env reaches the AM container and wins over tony's own).
    # Its history copies wait there, 5 s per call, on a thread of their own:
    # the API answers in milliseconds all along, the job succeeds, and
    # am.stderr says once why the history is not in HDFS.
    cluster = yarn.cluster
    nn = SilentNameNode()
    loc = unique_location()
    t0 = time.monotonic()
    p = yarn.popen_submit("--executes", "sleep 10", "--conf", "tony.worker.instances=1",
                          "--conf", f"tony.history.location={loc}",
                          "--container_env", f"TONY_YARN_WEBHDFS=http://127.0.0.1:{nn.port}")
    lat = []
    try:
        app_id = wait_for(lambda: next(iter(yarn.app_ids()), None), timeout=90, what="the application")
        url = wait_for(lambda: yarn.api_url(app_id), timeout=90, interval=0.05,
                       what="the coordinator's address") + "/v1/job"
        done = threading.Event()

        def poll():
            # Two of these: a loop held for seconds shows in both, a hiccup
            # of the machine in one.
            while not done.is_set():
                s, job = get_timed(url, timeout=10)
                lat.append(s)
                if job is None or job["state"] == "FINISHED":
                    done.set()
                time.sleep(0.02)
        pollers = [threading.Thread(target=poll) for _ in range(2)]
        for t in pollers:
            t.start()
        for t in pollers:
            t.join(timeout=120)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
        nn.close()
    took = time.monotonic() - t0
    assert p.returncode == 0, out + err
    assert nn.conns, "the coordinator never called the silent NameNode"
    lat.sort()
    print(f"{len(lat)} API answers while the NameNode was silent; slowest {lat[-3:]}; job {took:.1f} s")
    assert len(lat) > 50, lat
    # the slowest but one (a hiccup of a busy test machine is not the
    # coordinator's doing); a copy on the loop held both pollers 5 s
    assert lat[-2] < 0.5, f"{len(lat)} answers, slowest {lat[-5:]}"
    am = am_stderr(cluster, app_id)
    warnings = [line for line in am.splitlines() if "not copied to HDFS" in line]
    assert len(warnings) == 1, am
    assert "WARN" in warnings[0] and f"127.0.0.1:{nn.port}" in warnings[0], warnings
    assert "history: copied to" not in am and "history: moved to" not in am, am
    assert cluster.wait_app(app_id)["finalStatus"] == "SUCCEEDED"


class SlowAtTheEnd:
    """The real NameNode's WebHDFS behind a proxy on this machine that, from
    the first request for the finished tree on, answers each call after
    `delay` s: within the coordinator's 5 s per call, but the end's batch
    of calls (mkdirs, 4 uploads, list, delete) takes longer than the 30 s
    the coordinator waits for it. (The DataNodes are reached directly.)"""

    def __init__(self, nn_web, delay):
        self.slow = threading.Event()
        self.calls = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _forward(self):
                if "/finished/" in self.path:
                    proxy.slow.set()
                proxy.calls.append((time.monotonic(), self.command, self.path))
                if proxy.slow.is_set():
                    time.sleep(delay)
                n = int(self.headers.get("Content-Length") or 0)
                req = urllib.request.Request(nn_web + self.path, data=self.rfile.read(n) if n else None,
                                             method=self.command)
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        code, body = r.status, r.read()
                except urllib.error.HTTPError as e:
                    code, body = e.code, e.read()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_PUT = do_POST = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_last_copy_waited_for_30_s_at_most(yarn):
    # The end's copy (into the finished tree) is slow: 8 calls of 4.5 s (an
    # earlier coordinator's .jhist adds a rename). The coordinator keeps
    # answering its API while it waits, stops waiting 30 s after the job's
    # end (the call under way then ends, the rest is not sent), says so
    # once, and the job still succeeds.
    cluster = yarn.cluster
    nn = SlowAtTheEnd(cluster.nn_web, delay=4.5)
    loc = unique_location()
    p = yarn.popen_submit("--executes", "sleep 5", "--conf", "tony.worker.instances=1",
                          "--conf", f"tony.history.location={loc}", "--container_env", f"TONY_YARN_WEBHDFS={nn.url}")
    lat = []
    try:
        app_id = wait_for(lambda: next(iter(yarn.app_ids()), None), timeout=90, what="the application")
        earlier = f"{app_id}-1000-2000-someone-FAILED.jhist"
        cluster.hdfs_put(f"{loc}/intermediate/{app_id}/{earlier}", b"an earlier coordinator's")
        url = wait_for(lambda: yarn.api_url(app_id), timeout=90, what="the coordinator's address") + "/v1/job"
        wait_for(lambda: get_timed(url, timeout=10)[1]["state"] == "FINISHED", timeout=90, interval=0.1,
                 what="the job to finish")
        finished = time.monotonic()
        while True:
            try:
                s, job = get_timed(url, timeout=20)
            except (urllib.error.URLError, ConnectionError):
                break  # the coordinator is gone
            if job is None:
                break
            lat.append(s)
            time.sleep(0.1)
        gone = time.monotonic()
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
        nn.close()
    assert p.returncode == 0, out + err
    waited = gone - finished
    lat.sort()
    print(f"the coordinator stopped answering {waited:.1f} s after the job; {len(lat)} API answers meanwhile, "
          f"slowest {lat[-3:]}")
    assert 28 < waited < 45, waited
    assert len(lat) > 100 and lat[-2] < 0.5, lat[-5:]
    am = am_stderr(cluster, app_id)
    warnings = [line for line in am.splitlines() if "WARN" in line]
    assert len(warnings) == 1, am
    assert "not copied to HDFS any more: the copy to hdfs://" in warnings[0], warnings
    assert "/finished/" in warnings[0] and "had not finished when the coordinator stopped waiting for it" in warnings[0]
    assert len(re.findall(r"history: copied to hdfs://\S+ in \d+ ms", am)) == 1, am
    assert "history: moved to" not in am
    # the end's batch ran until it was stopped: its uploads and the rename
    # are done, the intermediate copy was not removed
    (job,) = finished_dirs(cluster, f"{loc}/finished")
    names = cluster.hdfs_list(job)
    assert "tony-final.xml" in names and "metrics.json" in names, names
    assert any(n.endswith("-SUCCEEDED.jhist") for n in names), names
    left = cluster.hdfs_list(f"{loc}/intermediate/{app_id}")
    assert any(n.endswith(".jhist.inprogress") for n in left), left
    assert cluster.wait_app(app_id)["finalStatus"] == "SUCCEEDED"
    # unregistered only after the copy was stopped
    assert am.index("had not finished") < am.index("unregistered from the ResourceManager"), am
