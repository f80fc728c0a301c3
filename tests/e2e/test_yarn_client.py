"""The YARN client against the real Hadoop test cluster: what `tony submit`
creates in the RM and in HDFS, the local record and the day-to-day verbs,
kill (the verb and Ctrl-C), and bad inputs refused before anything is staged.

Until the YARN coordinator (`tony am --yarn`) exists, the AM container exits
at once; so apps that must stay alive are kept waiting in ACCEPTED: a
"blocker" app (a plain `sleep` AM submitted over REST by the test) holds half
of the `gpu`-labelled node, and tony's AM asks that label for more than the
rest. Everything checked is the client's own work."""
import io
import json
import os
import re
import shutil
import signal
import subprocess
import tarfile
import time
import urllib.request
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import TONY, Tony, wait_for

pytestmark = pytest.mark.hadoop

APP_RE = re.compile(r"job (application_\d+_\d+) submitted to YARN")


def yarn_tony(home, hadoop, conf_dir=None):
    t = Tony(home)
    t.env["HADOOP_CONF_DIR"] = str(conf_dir or hadoop.conf_dir)
    return t


def app_id_of(text):
    m = APP_RE.search(text)
    assert m, text
    return m.group(1)


def unique(prefix):
    return f"{prefix}-{os.getpid()}-{time.time_ns() % 10**9}"


def hdfs_read(hadoop, path):
    with urllib.request.urlopen(hadoop.hdfs_url(path, "OPEN"), timeout=60) as r:
        return r.read()


def staging_path(hadoop, app_id):
    return f"/user/{hadoop.user}/.tony/{app_id}"


def rm_request(hadoop, method, path, body=None):
    sep = "&" if "?" in path else "?"
    req = urllib.request.Request(f"{hadoop.rm}{path}{sep}user.name={hadoop.user}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read()
        return json.loads(text) if text else None


def rm_kill(hadoop, app_id):
    try:
        rm_request(hadoop, "PUT", f"/ws/v1/cluster/apps/{app_id}/state", {"state": "KILLED"})
    except Exception:
        pass


def apps_named(hadoop, name):
    return [a for a in hadoop.apps() if a["name"] == name]


@contextmanager
def blocker(hadoop, memory=2048):
    """An app whose AM (`sleep`) holds `memory` MB of the gpu-labelled node
    (4096 MB), so that an AM asking that label for more waits in ACCEPTED."""
    new = rm_request(hadoop, "POST", "/ws/v1/cluster/apps/new-application")
    app = new["application-id"]
    rm_request(hadoop, "POST", "/ws/v1/cluster/apps", {
        "application-id": app, "application-name": unique("tony-test-blocker"), "application-type": "TEST",
        # the label on the AM's ask too: Hadoop 3.3 keeps a REST AM ask's ""
        # and would place the blocker off the gpu node (3.4 takes "" as none)
        "queue": "default", "app-node-label-expression": "gpu", "am-container-node-label-expression": "gpu",
        "max-app-attempts": 1,
        "resource": {"memory": memory, "vCores": 1},
        "am-container-spec": {"commands": {"command": "sleep 120"}},
    })
    try:
        wait_for(lambda: hadoop.app(app)["runningContainers"] >= 1, timeout=90, what=f"blocker {app} running")
        yield app
    finally:
        rm_kill(hadoop, app)


def conf_copy(hadoop, tmp_path, replace):
    """A copy of the cluster's HADOOP_CONF_DIR with some values replaced
    ({file: {key: value}})."""
    d = tmp_path / "hadoop-conf"
    shutil.copytree(hadoop.conf_dir, d)
    for name, kv in replace.items():
        tree = ET.parse(d / name)
        for prop in tree.getroot().iter("property"):
            k = prop.find("name").text
            if k in kv:
                prop.find("value").text = kv[k]
        tree.write(d / name)
    return d


# ---------------------------------------------------------------- one pending app, checked from every side

@pytest.fixture(scope="module")
def pending(hadoop, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("yarn-pending")
    src = tmp / "src"
    src.mkdir()
    (src / "train.py").write_text("print('hello')\n")
    (tmp / "data.txt").write_text("some data\n")
    rdir = tmp / "lookup"
    rdir.mkdir()
    (rdir / "table.csv").write_text("a,b\n1,2\n")
    venv = tmp / "venv.zip"
    shutil.make_archive(str(tmp / "venv"), "zip", root_dir=str(src))
    remote = f"/tmp/{unique('tony-test-remote')}.txt"
    remote_st = hadoop.hdfs_put(remote, b"already in hdfs\n")
    name = unique("tony-test-fields")
    t = yarn_tony(tmp / "home", hadoop)
    with blocker(hadoop):
        r = t.run("submit", "--detach", "--src_dir", str(src), "--python_venv", str(venv),
                  "--executes", "python train.py",
                  "--conf", "tony.worker.instances=2", "--conf", "tony.worker.memory=512m",
                  "--conf", f"tony.application.name={name}", "--conf", "tony.yarn.queue=ml",
                  "--conf", "tony.application.tags=team:ml,nightly",
                  "--conf", "tony.application.node-label=gpu",
                  "--conf", "tony.am.memory=3g", "--conf", "tony.am.vcores=2",
                  "--conf", f"tony.containers.resources={tmp / 'data.txt'}",
                  "--conf", f"tony.worker.resources={rdir},{hadoop.default_fs}{remote}::remote.txt",
                  timeout=120)
        assert r.rc == 0, r
        app = app_id_of(r.out)
        try:
            yield {"app": app, "tony": t, "result": r, "name": name, "src": src, "venv": venv, "tmp": tmp,
                   "remote": remote, "remote_st": remote_st}
        finally:
            rm_kill(hadoop, app)


@pytest.mark.hadoop33
def test_submit_creates_the_app_with_tonys_fields(hadoop, pending):
    a = hadoop.app(pending["app"])
    assert a["name"] == pending["name"]
    assert a["applicationType"] == "TONY"
    assert a["queue"] in ("root.ml", "ml")  # 3.4 reports the full path, 3.3 the short name
    # submit says which Hadoop the ResourceManager runs
    assert f"submitted to YARN (Hadoop {hadoop.rm_get('/ws/v1/cluster/info')['clusterInfo']['hadoopVersion']}," \
        in pending["result"].out, pending["result"].out
    assert a["user"] == hadoop.user
    assert sorted(a["applicationTags"].split(",")) == ["nightly", "team:ml"]  # YARN lower-cases tags
    assert a["appNodeLabelExpression"] == "gpu"
    assert a["state"] == "ACCEPTED" and a["runningContainers"] == 0, a
    # The AM's ask, while it waits for room on the gpu node.
    reqs = a.get("resourceRequests") or []
    assert reqs, a
    cap = reqs[0]["capability"]
    assert cap["memory"] == 3072 and cap["vCores"] == 2, reqs
    assert reqs[0]["nodeLabelExpression"] == "gpu", reqs


@pytest.mark.hadoop33
def test_staged_files_in_hdfs(hadoop, pending):
    app = pending["app"]
    base = staging_path(hadoop, app)
    names = set(hadoop.hdfs_list(base))
    assert {"tony-final.xml", "tony-manifest.json", f"tony_src_{app}.zip", "venv.zip"} <= names, names
    assert "tony" not in names  # tony itself is in the cache, not staged with every job
    assert hdfs_read(hadoop, f"{base}/venv.zip") == pending["venv"].read_bytes()

    conf = {p.find("name").text: p.find("value").text
            for p in ET.fromstring(hdfs_read(hadoop, f"{base}/tony-final.xml")).iter("property")}
    uri = f"{hadoop.default_fs}{base}"
    assert conf["tony.application.id"] == app
    assert conf["tony.containers.resources"] == f"{uri}/res0/data.txt::data.txt"
    assert conf["tony.worker.resources"] == (f"{uri}/res1/lookup.zip::lookup#archive,"
                                             f"{hadoop.default_fs}{pending['remote']}::remote.txt")
    assert hdfs_read(hadoop, f"{base}/res0/data.txt") == b"some data\n"

    manifest = json.loads(hdfs_read(hadoop, f"{base}/tony-manifest.json"))
    assert manifest["app_id"] == app and manifest["user"] == hadoop.user
    assert manifest["staging_uri"] == uri
    files = {f["uri"]: f for f in manifest["files"]}
    jobs = {f["name"] for f in manifest["files"] if f["job_file"]}
    assert jobs == {"tony-dist", "tony-final.xml", f"tony_src_{app}.zip", "venv.zip"}
    # The self-contained tony, cached once per build under the user's .tony/
    # and kept by the NodeManagers across jobs (PRIVATE); inside it, the very
    # program that submitted the job: nodes need nothing installed.
    dist = next(f for f in manifest["files"] if f["name"] == "tony-dist")
    cache = f"{hadoop.default_fs}/user/{hadoop.user}/.tony/cache/"
    assert dist["uri"].startswith(cache) and dist["uri"].endswith(".tar.gz"), dist
    assert (dist["type"], dist["visibility"]) == ("ARCHIVE", "PRIVATE"), dist
    with tarfile.open(fileobj=io.BytesIO(hdfs_read(hadoop, dist["uri"][len(hadoop.default_fs):]))) as tar:
        names = set(tar.getnames())
        assert {"bin/tony", "lib/tony/tony", "lib/tony/ld-linux-x86-64.so.2", "lib/tony/libc.so.6"} <= names, names
        assert tar.extractfile("lib/tony/tony").read() == Path(TONY).read_bytes()
    assert files[f"{uri}/res1/lookup.zip"]["type"] == "ARCHIVE"
    assert files[f"{uri}/res0/data.txt"]["type"] == "FILE" and not files[f"{uri}/res0/data.txt"]["job_file"]
    for f in manifest["files"]:
        path = f["uri"][len(hadoop.default_fs):]
        st = hadoop.hdfs_status(path)
        assert st is not None, f
        assert (f["size"], f["timestamp"]) == (st["length"], st["modificationTime"]), (f, st)
    # What was staged is the user's alone, as a local job dir (0700/0600):
    # the staging dir, the dirs uploads made in it, every file, the cache.
    assert hadoop.hdfs_status(base)["permission"] == "700"
    assert hadoop.hdfs_status(f"{base}/res1")["permission"] == "700"
    for f in manifest["files"] + [{"uri": f"{uri}/tony-manifest.json"}]:
        if f["uri"] != f"{hadoop.default_fs}{pending['remote']}":
            assert hadoop.hdfs_status(f["uri"][len(hadoop.default_fs):])["permission"] == "600", f
    assert hadoop.hdfs_status(f"/user/{hadoop.user}/.tony/cache")["permission"] == "700"
    # A resource already in HDFS is used in place.
    remote = files[f"{hadoop.default_fs}{pending['remote']}"]
    assert remote["size"] == pending["remote_st"]["length"]
    assert remote["timestamp"] == pending["remote_st"]["modificationTime"]


def test_local_record_and_verbs(hadoop, pending):
    app, t = pending["app"], pending["tony"]
    job_dir = t.home / "jobs" / app
    rec = json.loads((job_dir / "yarn.json").read_text())
    assert rec["rm"] == hadoop.rm and rec["app_id"] == app
    assert rec["staging_uri"] == f"{hadoop.default_fs}{staging_path(hadoop, app)}"
    assert app in rec["tracking_url"]
    assert (job_dir / "tony-final.xml").exists() and (job_dir / "secret").exists()

    r = t.run("status", app, check_rc=0)
    assert f"job {app} (yarn): ACCEPTED" in r.out, r
    r = t.run("status", app, "--json", check_rc=0)
    j = json.loads(r.out)
    assert j["backend"] == "yarn" and j["yarn"]["state"] == "ACCEPTED" and j["yarn"]["id"] == app
    r = t.run("list", check_rc=0)
    assert re.search(rf"{app}\s+yarn\s+ACCEPTED", r.out), r
    r = t.run("logs", app, check_rc=0)
    assert "runs on YARN" in r.out and app in r.out, r


def test_kill(hadoop, pending):
    app, t = pending["app"], pending["tony"]
    start = time.time()
    r = t.run("kill", app, check_rc=0)
    assert f"job {app} killed: KILLED" in r.out, r
    assert time.time() - start < 30
    a = hadoop.app(app)
    assert a["state"] == "KILLED" and a["runningContainers"] <= 0, a  # -1 once final
    assert hadoop.hdfs_status(staging_path(hadoop, app)) is None
    st = json.loads((t.home / "jobs" / app / "status.json").read_text())
    assert st["state"] == "FINISHED" and st["final_status"] == "KILLED", st
    r = t.run("kill", app, check_rc=0)
    assert "already ended: KILLED" in r.out, r
    r = t.run("status", app, check_rc=0)
    assert "KILLED" in r.out


# ---------------------------------------------------------------- following

def test_ctrl_c_kills_the_app_through_the_rm(hadoop, pending, tmp_path):
    # pending's blocker still holds the gpu node: this app's AM waits too.
    t = yarn_tony(tmp_path / "home", hadoop)
    p = subprocess.Popen([TONY, "submit", "--executes", "true", "--conf", "tony.worker.instances=1",
                          "--conf", "tony.application.node-label=gpu", "--conf", "tony.am.memory=3g"],
                         env=t.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    jobs = t.home / "jobs"
    wait_for(lambda: jobs.exists() and any((d / "yarn.json").exists() for d in jobs.iterdir()), timeout=60,
             what="the job's record")
    app = next(jobs.iterdir()).name
    wait_for(lambda: hadoop.app(app)["state"] == "ACCEPTED", timeout=30, what="ACCEPTED")
    time.sleep(1)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 1, (out, err)
    assert "killing" in err and "through the ResourceManager" in err, err
    assert f"YARN application {app} ended: KILLED" in out, out
    assert hadoop.app(app)["state"] == "KILLED"
    assert hadoop.hdfs_status(staging_path(hadoop, app)) is None


def test_follow_until_the_rm_says_final(hadoop, tmp_path):
    # `false` fails with or without the coordinator: exit 1 either way.
    t = yarn_tony(tmp_path / "home", hadoop)
    r = t.run("submit", "--executes", "false", "--conf", "tony.worker.instances=1", timeout=180)
    assert r.rc == 1, r
    app = app_id_of(r.out)
    # (the states in between are printed as the follower sees them: a loaded
    # machine's first RM poll may come after ACCEPTED, as it once did in a run)
    assert "final status FAILED" in r.out, r
    assert hadoop.app(app)["finalStatus"] == "FAILED"
    assert hadoop.hdfs_status(staging_path(hadoop, app)) is None
    rec = json.loads((t.home / "jobs" / app / "yarn.json").read_text())
    assert rec["final_status"] == "FAILED" and rec["staging_deleted"] is True
    st = json.loads((t.home / "jobs" / app / "status.json").read_text())
    assert st["state"] == "FINISHED" and st["final_status"] == "FAILED", st


def test_full_job_succeeds(hadoop, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "hello.sh").write_text("echo hello from $JOB_NAME $TASK_INDEX\n")
    t = yarn_tony(tmp_path / "home", hadoop)
    r = t.run("submit", "--src_dir", str(src), "--executes", "bash hello.sh", "--conf", "tony.worker.instances=2",
              "--conf", "tony.worker.memory=512m", "--conf", "tony.am.memory=512m", timeout=300)
    assert r.rc == 0, r
    app = app_id_of(r.out)
    assert "SUCCEEDED" in r.out
    a = hadoop.app(app)
    assert a["state"] == "FINISHED" and a["finalStatus"] == "SUCCEEDED", a
    st = json.loads((t.home / "jobs" / app / "status.json").read_text())
    assert st["state"] == "FINISHED" and st["final_status"] == "SUCCEEDED"
    assert {(x["role"], x["index"]) for x in st["tasks"]} >= {("worker", 0), ("worker", 1)}
    assert hadoop.hdfs_status(staging_path(hadoop, app)) is None


# ---------------------------------------------------------------- bad input, refused before staging

def assert_nothing_submitted(hadoop, t, name):
    assert not (t.home / "jobs").exists() or not list((t.home / "jobs").iterdir())
    assert apps_named(hadoop, name) == []


def test_rm_unreachable(hadoop, tmp_path):
    conf = conf_copy(hadoop, tmp_path, {"yarn-site.xml": {"yarn.resourcemanager.webapp.address": "localhost:1"}})
    t = yarn_tony(tmp_path / "home", hadoop, conf)
    name = unique("tony-test-norm")
    start = time.time()
    r = t.run("submit", "--executes", "true", "--conf", "tony.worker.instances=1", "--conf",
              f"tony.application.name={name}")
    assert r.rc == 3, r
    assert time.time() - start < 10
    assert "cannot reach the ResourceManager at http://localhost:1" in r.err, r
    assert f"yarn.resourcemanager.webapp.address in {conf}/yarn-site.xml" in r.err, r
    assert_nothing_submitted(hadoop, t, name)


def ha_conf(hadoop, tmp_path, first_webapp):
    """The cluster's conf rewritten as an HA pair: rm1 at first_webapp, rm2
    the real RM."""
    d = conf_copy(hadoop, tmp_path, {})
    tree = ET.parse(d / "yarn-site.xml")
    root = tree.getroot()
    real = {p.find("name").text: p.find("value").text for p in root.iter("property")}
    extra = {"yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": "rm1,rm2",
             "yarn.resourcemanager.webapp.address.rm1": first_webapp,
             "yarn.resourcemanager.scheduler.address.rm1": "localhost:2",
             "yarn.resourcemanager.webapp.address.rm2": real["yarn.resourcemanager.webapp.address"],
             "yarn.resourcemanager.scheduler.address.rm2": real["yarn.resourcemanager.scheduler.address"]}
    for k, v in extra.items():
        p = ET.SubElement(root, "property")
        ET.SubElement(p, "name").text = k
        ET.SubElement(p, "value").text = v
    tree.write(d / "yarn-site.xml")
    return d


def test_ha_tries_each_resourcemanager(hadoop, tmp_path):
    # rm1 is down: tony goes on to rm2, which answers (and refuses the queue).
    conf = ha_conf(hadoop, tmp_path / "a", "localhost:1")
    t = yarn_tony(tmp_path / "home", hadoop, conf)
    r = t.run("submit", "--executes", "true", "--conf", "tony.worker.instances=1", "--conf", "tony.yarn.queue=nope")
    assert r.rc == 2, r
    assert "tony.yarn.queue is 'nope'" in r.err, r
    # Both down: each is named with its key.
    conf = ha_conf(hadoop, tmp_path / "b", "localhost:1")
    text = (conf / "yarn-site.xml").read_text().replace(hadoop.rm.split("//")[1], "localhost:3")
    (conf / "yarn-site.xml").write_text(text)
    t = yarn_tony(tmp_path / "home2", hadoop, conf)
    r = t.run("submit", "--executes", "true", "--conf", "tony.worker.instances=1")
    assert r.rc == 3, r
    assert "yarn.resourcemanager.webapp.address.rm1 in" in r.err and "yarn.resourcemanager.webapp.address.rm2 in" in r.err
    assert "http://localhost:1" in r.err and "http://localhost:3" in r.err, r


def test_wrong_hdfs_address(hadoop, tmp_path):
    conf = conf_copy(hadoop, tmp_path, {"hdfs-site.xml": {"dfs.namenode.http-address": "localhost:1"}})
    t = yarn_tony(tmp_path / "home", hadoop, conf)
    name = unique("tony-test-nohdfs")
    r = t.run("submit", "--executes", "true", "--conf", "tony.worker.instances=1", "--conf",
              f"tony.application.name={name}")
    assert r.rc == 3, r
    assert "cannot reach HDFS's NameNode at http://localhost:1" in r.err, r
    assert f"dfs.namenode.http-address in {conf}/hdfs-site.xml" in r.err and "fs.defaultFS" in r.err, r
    assert_nothing_submitted(hadoop, t, name)

    conf2 = conf_copy(hadoop, tmp_path / "x", {"core-site.xml": {"fs.defaultFS": "file:///"}})
    t = yarn_tony(tmp_path / "home2", hadoop, conf2)
    r = t.run("submit", "--executes", "true", "--conf", "tony.worker.instances=1")
    assert r.rc == 2, r
    assert f"fs.defaultFS in {conf2}/core-site.xml is 'file:///'" in r.err, r


@pytest.mark.parametrize("conf,words", [
    (["tony.yarn.queue=nope"], ["tony.yarn.queue is 'nope'", "leaf queues: default, ml"]),
    (["tony.worker.gpus=5"], ["tony.worker.gpus: role worker asks 5 GPUs", "(4)"]),
    (["tony.worker.memory=8g"], ["tony.worker.memory: role worker asks 8192 MB", "(4096 MB)"]),
    (["tony.worker.node-label=tpu"], ["tony.worker.node-label", "'tpu'", "its labels: gpu"]),
])
def test_plans_the_cluster_cannot_run(hadoop, tmp_path, conf, words):
    t = yarn_tony(tmp_path / "home", hadoop)
    name = unique("tony-test-refused")
    args = ["submit", "--executes", "true", "--conf", "tony.worker.instances=1", "--conf",
            f"tony.application.name={name}"]
    for c in conf:
        args += ["--conf", c]
    r = t.run(*args)
    assert r.rc == 2, r
    for w in words:
        assert w in r.err, r
    assert_nothing_submitted(hadoop, t, name)


def test_yarn_backend_without_hadoop_conf_dir(tmp_path):
    t = Tony(tmp_path / "home")
    r = t.run("submit", "--backend", "yarn", "--executes", "true", "--conf", "tony.worker.instances=1")
    assert r.rc == 2, r
    assert "HADOOP_CONF_DIR" in r.err
