"""TensorBoard through tony, for real: the sidecar (--sidecar_tensorboard_log_dir)
runs the real TensorBoard of the job's Python (build/pyenv) on the port its
executor reserved, while a worker writes summaries; the link appears once it
serves (submit's line, status, /v1/job, the coordinator's /tensorboard
redirect) and everything is stopped at the end. The chief-with-TB_PORT
variant starts TensorBoard from the job's own code, as TonY users do."""
import http.client
import json
import subprocess
import threading
import urllib.parse
from pathlib import Path

import pytest

from conftest import PYTHON, TONY, http_get, job_processes, owner_headers, read_token, wait_for
from test_yarn_jobs import SMALL as YARN_SMALL, yarn  # noqa: F401 (the fixture)

SMALL = ["--conf", "tony.worker.memory=1g", "--conf", "tony.tensorboard.memory=1g", "--conf", "tony.ps.instances=0"]

# Writes a scalar every half second into $TB_LOG_DIR/train until the test
# drops the release file ($RELEASE, else in the job's shared dir; at most ~90 s).
TRAIN_PY = r"""
import os, sys, time
logdir = os.path.join(os.environ["TB_LOG_DIR"], "train")
release = os.environ.get("RELEASE") or os.path.join(os.environ["TONY_JOB_DIR"], "release")
WRITER = sys.argv[1]
if WRITER == "tf":
    import tensorflow as tf
    w = tf.summary.create_file_writer(logdir)
    def scalar(tag, v, step):
        with w.as_default():
            tf.summary.scalar(tag, v, step=step)
        w.flush()
else:  # TensorBoard's own event writer: the same files, without TensorFlow
    sys.modules["tensorflow"] = None  # else TensorBoard's file I/O would load it when installed
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    w = EventFileWriter(logdir)
    def scalar(tag, v, step):
        w.add_event(Event(wall_time=time.time(), step=step,
                          summary=Summary(value=[Summary.Value(tag=tag, simple_value=v)])))
        w.flush()
print("training, summaries in", logdir, flush=True)
for step in range(180):
    scalar("loss", 1.0 / (step + 1), step)
    if os.path.exists(release):
        break
    time.sleep(0.5)
print("done after", step + 1, "steps", flush=True)
"""


class Submit:
    """`tony submit` in the foreground, its stdout read line by line as it comes."""

    def __init__(self, tony, args, cwd, base=("--conf", "tony.local.vcores=16", "--conf", "tony.local.memory=16g")):
        self.proc = subprocess.Popen([TONY, "submit", *base, *args], env=tony.env, cwd=cwd,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def line_with(self, text):
        return next((l for l in self.lines if text in l), None)

    def finish(self, timeout=90):
        rc = self.proc.wait(timeout=timeout)
        self.reader.join(10)
        return rc, "\n".join(self.lines), self.proc.stderr.read()


def no_redirect_get(url):
    """(status, Location, body text) without following a redirect."""
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
    c.request("GET", u.path + ("?" + u.query if u.query else ""), headers=owner_headers(url))
    r = c.getresponse()
    out = r.status, r.getheader("Location"), r.read().decode()
    c.close()
    return out


def job_dir_of(home):
    jobs = wait_for(lambda: sorted((home / "jobs").glob("*/am.json")), 30, what="the job's am.json")
    return jobs[-1].parent


def am_url(job):
    return json.loads((job / "am.json").read_text())["url"]


def live_job(url):
    """The job from its coordinator; None once that has exited."""
    try:
        code, _, body = http_get(url + "/v1/job")
    except OSError:
        return None
    return json.loads(body) if code == 200 else None


def tensorboard_serves(tb_url, run="train"):
    """TensorBoard's page, and its data API knows the run and its scalar."""
    code, _, html = http_get(tb_url)
    if code != 200 or b"<title>TensorBoard</title>" not in html:
        return None
    code, _, runs = http_get(tb_url + "data/runs")
    if code != 200 or run not in json.loads(runs):
        return None
    code, _, tags = http_get(tb_url + "data/plugin/scalars/tags")
    if code != 200 or "loss" not in json.loads(tags).get(run, {}):
        return None
    code, _, logdir = http_get(tb_url + "data/logdir")
    return json.loads(logdir)["logdir"] if code == 200 else None


def port_open(url):
    u = urllib.parse.urlsplit(url)
    try:
        http.client.HTTPConnection(u.hostname, u.port, timeout=2).connect()
        return True
    except OSError:
        return False


@pytest.mark.parametrize("writer", ["tensorboard", pytest.param("tf", marks=pytest.mark.ml)])
def test_sidecar_serves_real_tensorboard(tony, scripts, tmp_path, writer):
    (scripts / "train.py").write_text(TRAIN_PY)
    # A relative log dir means the submitter's directory, not a task's.
    s = Submit(tony, ["--src_dir", str(scripts), "--executes", f"train.py {writer}", "--python_binary_path", PYTHON,
                      "--sidecar_tensorboard_log_dir", "tb-logs", "--conf", "tony.worker.instances=1", *SMALL],
               cwd=tmp_path)
    try:
        job = job_dir_of(tony.home)
        url = am_url(job)
        line = wait_for(lambda: s.line_with("tony: TensorBoard at "), 120, interval=0.5, what="submit's TensorBoard line")
        tb_url = line.split("tony: TensorBoard at ")[1].split()[0]
        assert line.endswith("(tensorboard:0)"), line
        j = live_job(url)
        assert j["tensorboard_url"] == tb_url and j["tensorboard_task"] == "tensorboard:0", j
        # the real TensorBoard, reading what the worker writes
        logdir = wait_for(lambda: tensorboard_serves(tb_url), 90, interval=1, what="TensorBoard showing the run")
        assert Path(logdir) == tmp_path / "tb-logs"
        # from the tracking URL (the coordinator's root) to TensorBoard
        code, location, text = no_redirect_get(url + "/tensorboard")
        assert code == 302 and location == tb_url, (code, location, text)
        code, location, _ = no_redirect_get(url + "/tensorboard/data/runs?x=1")
        assert code == 302 and location == tb_url + "data/runs?x=1"
        st = tony.run("status", job.name, check_rc=0).out
        assert f"TensorBoard: {tb_url}" in st, st
        assert (job / "shared").is_dir()
        (job / "shared" / "release").write_text("")
        rc, out, err = s.finish()
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
    assert rc == 0, out + err
    assert "SUCCEEDED: worker [0]" in out and "FINISHED: tensorboard [0]" in out, out
    assert out.count("tony: TensorBoard at ") == 1, out
    st = json.loads((job / "status.json").read_text())
    assert st["final_status"] == "SUCCEEDED"
    assert {t["role"]: t["state"] for t in st["tasks"]} == {"worker": "SUCCEEDED", "tensorboard": "FINISHED"}, st
    assert "tensorboard_url" not in st
    assert not port_open(tb_url), "TensorBoard still serves after the job ended"
    # Stopped, not orphaned: nothing of the job lives on. (Whether TensorBoard
    # got to print "caught SIGTERM" within the 2 s grace before SIGKILL
    # depends on the machine's load, so it is not asserted.)
    wait_for(lambda: not job_processes(tony.home), 15, what="the job's processes to end")


@pytest.mark.hadoop
def test_yarn_tracking_url_serves_tensorboard(yarn, scripts, tmp_path):  # noqa: F811
    """On YARN the page is the tracking URL, behind the ResourceManager's
    proxy; <tracking URL>/tensorboard/ is TensorBoard itself through it (the
    proxy follows the coordinator's redirect), assets and data API included."""
    (scripts / "train.py").write_text(TRAIN_PY)
    release = tmp_path / "release"
    s = Submit(yarn.tony, ["--src_dir", str(scripts), "--executes", "train.py tensorboard", "--python_binary_path",
                           PYTHON, "--sidecar_tensorboard_log_dir", str(tmp_path / "tb"), "--shell_env",
                           f"RELEASE={release}", "--conf", "tony.worker.instances=1", *SMALL],
               cwd=tmp_path, base=("--backend", "yarn", *YARN_SMALL))
    try:
        line = wait_for(lambda: s.line_with("tony: TensorBoard at "), 180, interval=0.5, what="the TensorBoard line")
        tb_url = line.split("tony: TensorBoard at ")[1].split()[0]
        app = s.line_with("tony: job application_").split()[2]
        proxied = f"{yarn.cluster.rm}/proxy/{app}/tensorboard/"
        # the link a user outside the cluster can follow, printed beside the node's own
        assert line.endswith(f"(tensorboard:0); through YARN's proxy: {proxied}"), line
        logdir = wait_for(lambda: tensorboard_serves(proxied), 90, interval=1, what="TensorBoard through the RM proxy")
        assert Path(logdir) == tmp_path / "tb"
        code, _, html = http_get(proxied)
        script = html.decode().split('<script src="')[1].split('"')[0]  # its app, relative to the page
        assert http_get(proxied + script)[0] == 200, script
        # the coordinator's own answer, straight to the task's port
        url = live_job_url(yarn, app)
        code, location, _ = no_redirect_get(url + "/tensorboard")
        assert code == 302 and location == tb_url
        st = yarn.tony.run("status", app, check_rc=0).out
        assert f"TensorBoard: {tb_url}; through YARN's proxy: {proxied}" in st, st
        release.write_text("")
        rc, out, err = s.finish(180)
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
    assert rc == 0, out + err
    assert "FINISHED: tensorboard [0]" in out, out


def live_job_url(yarn, app):
    """The coordinator's own address, from the job JSON the RM proxy serves."""
    # YARN's proxy passes only the query on: the read token goes there
    token = read_token(yarn.tony.home / "jobs" / app)
    code, _, body = http_get(f"{yarn.cluster.rm}/proxy/{app}/v1/job?token={token}")
    assert code == 200, body
    return json.loads(body)["url"]


# The chief (worker:0) holds TB_PORT; the job's own code starts TensorBoard
# there once the test says so, and stops it before the end.
CHIEF_SH = r"""
wait_for() { for i in $(seq 1 600); do [ -e "$TONY_JOB_DIR/$1" ] && return; sleep 0.2; done; exit 9; }
[ "$TASK_INDEX" = 0 ] || { wait_for end; exit 0; }
echo "TB_PORT=$TB_PORT"
wait_for serve
"$PY" -m tensorboard.main --logdir "$LOGDIR" --port "$TB_PORT" --bind_all > tb.log 2>&1 &
wait_for end
kill %1; wait
"""


def test_chief_serves_tensorboard_on_tb_port(tony, scripts, tmp_path):
    (scripts / "task.sh").write_text(CHIEF_SH)
    logdir = tmp_path / "chief-logs"
    logdir.mkdir()
    r = tony.submit("--detach", "--src_dir", str(scripts), "--executes", "bash task.sh",
                    "--shell_env", f"PY={PYTHON}", "--shell_env", f"LOGDIR={logdir}",
                    "--conf", "tony.worker.instances=2", *SMALL)
    assert r.rc == 0, r
    job = r.job_dir()
    url = am_url(job)
    try:
        wait_for(lambda: (j := live_job(url)) and all(t["state"] == "RUNNING" for t in j["tasks"]), 60,
                 what="both workers running")
        j = live_job(url)
        assert "tensorboard_url" not in j, "a link before anything serves on TB_PORT"
        code, location, text = no_redirect_get(url + "/tensorboard")
        assert code == 404 and location is None
        assert "worker:0 runs, but nothing serves on its TB_PORT" in text, text
        assert "--sidecar_tensorboard_log_dir" in text, text
        assert http_get(url + "/tensorboard", method="POST")[0] == 405
        (job / "shared" / "serve").write_text("")
        j = wait_for(lambda: (j := live_job(url)) and "tensorboard_url" in j and j, 90, interval=0.5,
                     what="the chief's TensorBoard link")
        assert j["tensorboard_task"] == "worker:0", j
        port = (job / "attempts" / "0" / "worker-0" / "stdout").read_text().split("TB_PORT=")[1].split()[0]
        assert j["tensorboard_url"] == f"http://127.0.0.1:{port}/", j
        code, location, _ = no_redirect_get(url + "/tensorboard")
        assert code == 302 and location == j["tensorboard_url"]
        code, _, html = http_get(j["tensorboard_url"])
        assert code == 200 and b"<title>TensorBoard</title>" in html
        # the chief stops its TensorBoard: the link goes with it
        (job / "shared" / "end").write_text("")
        wait_for(lambda: (j := live_job(url)) is None or "tensorboard_url" not in j, 30, what="the link to go")
        wait_for(lambda: json.loads((job / "status.json").read_text())["state"] == "FINISHED", 60, what="the end")
        st = json.loads((job / "status.json").read_text())
        assert st["final_status"] == "SUCCEEDED", st
    finally:
        (job / "shared" / "end").write_text("")
        tony.run("kill", job.name)


def test_tensorboard_endpoint_without_any(tony):
    """Single-node mode: no task, so no TB_PORT anywhere; the endpoint says so."""
    r = tony.submit("--detach", "--executes", "sleep 30", "--conf", "tony.worker.instances=0",
                    "--conf", "tony.ps.instances=0")
    assert r.rc == 0, r
    job = r.job_dir()
    url = am_url(job)
    try:
        code, location, text = no_redirect_get(url + "/tensorboard")
        assert code == 404 and "runs no TensorBoard" in text and "--sidecar_tensorboard_log_dir" in text, text
    finally:
        tony.run("kill", job.name)


@pytest.mark.parametrize("value", ["", "   "])
def test_blank_sidecar_log_dir_is_refused(tony, value):
    r = tony.submit("--executes", "true", "--conf", "tony.worker.instances=1", "--sidecar_tensorboard_log_dir", value)
    assert r.rc == 2, r
    assert "--sidecar_tensorboard_log_dir is empty" in r.err, r
    assert not (tony.home / "jobs").exists() or not list((tony.home / "jobs").iterdir())


def test_blank_tensorboard_log_dir_key_means_no_sidecar(tony):
    r = tony.submit("--dry-run", "--executes", "true", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.application.tensorboard-log-dir=")
    assert r.rc == 0, r
    assert "role tensorboard" not in r.out, r.out
    r = tony.submit("--dry-run", "--executes", "true", "--conf", "tony.worker.instances=1",
                    "--sidecar_tensorboard_log_dir", "/tmp/tb", "--python_binary_path", "bin/python3",
                    "--python_venv", "venv.zip")
    assert r.rc == 0, r
    assert "role tensorboard: 1 instance(s)" in r.out and "sidecar" in r.out, r.out
    # the job's interpreter, inside the shipped venv
    assert "venv/bin/python3 -m tensorboard.main --logdir \"$TB_LOG_DIR\" --port \"$TB_PORT\"" in r.out, r.out
