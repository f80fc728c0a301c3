"""The coordinator's HTTP API against bad and hostile requests: every
state-changing call needs the job's secret, malformed bodies and paths get a
clear 4xx, and none of it disturbs the running job. Also Ctrl-C on the
client kills the job, as in TonY."""
import json
import signal
import urllib.error
import urllib.request

from conftest import wait_for

SMALL = ["--conf", "tony.worker.memory=256m"]


def call(url, method="GET", body=None, secret=None):
    req = urllib.request.Request(url, method=method, data=None if body is None else body.encode())
    if secret:
        req.add_header("X-Tony-Secret", secret)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


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
