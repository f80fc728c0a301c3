"""The coordinator's web page in a real browser: Debian's Chromium driven by
playwright-core (tests/browser/job_page.mjs) against a live multi-role job on
the local backend, directly and through a YARN-style path prefix. Chromium,
node and playwright-core come from scripts/install-deps; when one is missing
the test fails and says how to get it. Screenshots: tests/e2e/artifacts/."""
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading

import pytest

from conftest import REPO, http_get, read_token, wait_for

BROWSER_DIR = REPO / "tests" / "browser"
ARTIFACTS = REPO / "tests" / "e2e" / "artifacts"
CHROMIUM = os.environ.get("TONY_CHROMIUM", "/usr/bin/chromium")
SMALL = ["--conf", "tony.worker.memory=256m", "--conf", "tony.ps.memory=256m", "--conf", "tony.chief.memory=256m"]

# Each task prints, then waits for the browser script to release it (a file
# in the job's shared dir), so every state is on screen long enough to be
# seen however slowly Chromium starts on a loaded machine. worker:1's last
# line matches the default exclude-node log policy: the page lists this
# machine as a bad node the job could not exclude (its only node).
TASK_SH = r"""
wait_for() { for i in $(seq 1 600); do [ -e "$TONY_JOB_DIR/$1" ] && return; sleep 0.2; done; echo "never released" >&2; exit 9; }
case "$JOB_NAME:$TASK_INDEX" in
  chief:0)
    echo "chief says hello"; echo "chief warns on stderr" >&2
    wait_for release-workers
    for i in $(seq 1 12); do echo "chief step $i"; buf="$buf$(head -c 2000000 /dev/zero | tr '\0' x)"; sleep 0.5; done
    wait_for release-chief; echo "chief done" ;;
  worker:0) echo "worker 0 says hello"; wait_for release-workers; sleep 1; echo "worker 0 done" ;;
  worker:1) echo "worker 1 says hello"; wait_for release-workers; echo "worker 1 fails: uncorrectable ECC error" >&2; exit 3 ;;
  ps:*) echo "ps up"; exec sleep 300 ;;
esac
"""


@pytest.fixture(scope="module")
def browser_tools():
    node = shutil.which("node")
    missing = []
    if not node:
        missing.append("node (apt-get install nodejs)")
    if not os.access(CHROMIUM, os.X_OK):
        missing.append(f"Chromium at {CHROMIUM} (apt-get install chromium, or set TONY_CHROMIUM)")
    if not (BROWSER_DIR / "node_modules" / "playwright-core").is_dir():
        missing.append(f"playwright-core in {BROWSER_DIR}/node_modules (npm ci there)")
    if missing:
        pytest.fail("the browser tests need " + "; ".join(missing) + " -- scripts/install-deps python installs them",
                    pytrace=False)
    return node


def run_browser(node, **cfg):
    cfg.setdefault("chromium", CHROMIUM)
    cfg.setdefault("artifacts", str(ARTIFACTS))
    p = subprocess.run([node, str(BROWSER_DIR / "job_page.mjs"), json.dumps(cfg)], cwd=BROWSER_DIR,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"browser check failed (screenshots in {ARTIFACTS}):\n{p.stderr}\n{p.stdout}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def start_job(tony, scripts, *extra):
    (scripts / "task.sh").write_text(TASK_SH)
    r = tony.submit("--detach", "--src_dir", str(scripts), "--executes", "bash task.sh", *extra, *SMALL)
    assert r.rc == 0, r
    job = r.job_dir()
    url = json.loads((job / "am.json").read_text())["url"]
    return r, job, url


def page_link(url, job):
    """The page's address as tony prints it: with the job's read token, once."""
    return f"{url}/?token={read_token(job)}"


def test_page_follows_a_multi_role_job(tony, scripts, browser_tools):
    r, job, url = start_job(tony, scripts, "--conf", "tony.chief.instances=1", "--conf", "tony.worker.instances=2",
                            "--conf", "tony.ps.instances=1", "--conf", "tony.application.fail-fast-lockstep=false",
                            "--conf", "tony.task.metrics-interval-ms=500")
    metrics = http_get(url + "/v1/tasks/chief/0/metrics")[0] == 200 or "metrics" in json.dumps(r.status())
    out = run_browser(browser_tools, mode="full", url=page_link(url, job), app_id=job.name, release_dir=str(job / "shared"),
                      expect_metrics=metrics)
    # what the page said at the end agrees with what the job decided
    st = json.loads((job / "status.json").read_text())
    assert st["state"] == "FINISHED"
    assert st["final_status"] in out["banner"] or st["final_status"] in out["final"], out
    assert {(t["role"], t["index"]): t["state"] for t in st["tasks"]}[("worker", 1)] == "FAILED"
    for name in ("full-running.png", "full-task-panel.png", "full-finished.png"):
        assert (ARTIFACTS / name).stat().st_size > 1000, name


# Attempt 0: worker:0 fails once released, which ends the attempt; attempt 1
# (tony.am.retry-count=1) runs to the end once released.
RESTART_SH = r"""
wait_for() { for i in $(seq 1 600); do [ -e "$TONY_JOB_DIR/$1" ] && return; sleep 0.2; done; echo "never released" >&2; exit 9; }
echo "attempt $SESSION_ID of $JOB_NAME:$TASK_INDEX (NUM_AM_RETRIES=${NUM_AM_RETRIES:-0})"
if [ "$SESSION_ID" = 0 ]; then
  [ "$TASK_INDEX" = 0 ] || exec sleep 300
  wait_for release-fail; echo "worker 0 fails in attempt 0" >&2; exit 7
fi
wait_for release-end; echo "attempt $SESSION_ID done"
"""


def test_page_shows_task_restarts_and_earlier_logs(tony, scripts, browser_tools):
    (scripts / "task.sh").write_text(RESTART_SH)
    r = tony.submit("--detach", "--src_dir", str(scripts), "--executes", "bash task.sh", "--conf",
                    "tony.worker.instances=2", "--conf", "tony.am.retry-count=1", *SMALL)
    assert r.rc == 0, r
    job = r.job_dir()
    url = json.loads((job / "am.json").read_text())["url"]
    try:
        run_browser(browser_tools, mode="restart", url=page_link(url, job), app_id=job.name,
                    release_dir=str(job / "shared"))
    finally:
        for name in ("release-fail", "release-end"):
            (job / "shared" / name).write_text("")
    wait_for(lambda: json.loads((job / "status.json").read_text())["state"] == "FINISHED", 30, what="the end")
    st = json.loads((job / "status.json").read_text())
    assert st["final_status"] == "SUCCEEDED" and st["attempt"] == 1, st
    w0 = next(t for t in st["tasks"] if (t["role"], t["index"]) == ("worker", 0))
    assert w0["starts"] == 2, w0
    assert [(x["attempt"], x["state"], x.get("exit_status")) for x in w0["runs"]] == [(0, "FAILED", 7),
                                                                                      (1, "SUCCEEDED", 0)], w0
    w1 = next(t for t in st["tasks"] if (t["role"], t["index"]) == ("worker", 1))
    assert [(x["attempt"], x["state"]) for x in w1["runs"]] == [(0, "FINISHED"), (1, "SUCCEEDED")], w1
    assert "NUM_AM_RETRIES=1" in r.log("worker", 0, attempt=1)
    assert (ARTIFACTS / "restart-earlier-attempt.png").stat().st_size > 1000


# Talks until released, then goes silent: tony.task.progress-timeout finds it hung.
HANG_PY = r"""
import os, time

def wait_silently():
    time.sleep(300)

while not os.path.exists(os.path.join(os.environ["TONY_JOB_DIR"], "release-hang")):
    print("waiting", flush=True)
    time.sleep(0.3)
wait_silently()
"""


def test_page_links_a_hung_tasks_stacks(tony, scripts, browser_tools):
    (scripts / "task.py").write_text(HANG_PY)
    r = tony.submit("--detach", "--src_dir", str(scripts), "--executes", "task.py", "--python_binary_path",
                    sys.executable, "--conf", "tony.worker.instances=1", "--conf", "tony.task.progress-timeout=2s",
                    *SMALL)
    assert r.rc == 0, r
    job = r.job_dir()
    url = json.loads((job / "am.json").read_text())["url"]
    try:
        out = run_browser(browser_tools, mode="hang", url=page_link(url, job), app_id=job.name,
                          release_dir=str(job / "shared"))
    finally:
        (job / "shared" / "release-hang").write_text("")
    # a tab of its own: the token rides in its query, to the coordinator only
    assert out["href"] == f"v1/tasks/worker/0/stacks?attempt=0&token={read_token(job)}", out
    wait_for(lambda: json.loads((job / "status.json").read_text())["state"] == "FINISHED", 30, what="the end")


class PrefixProxy(http.server.ThreadingHTTPServer):
    """Serves /proxy/<app>/<path> from the coordinator at <target>/<path>, as
    a reverse proxy does, passing the read token's header on (YARN's own
    proxy does not: docs/watching.md); anything else is a 404."""

    def __init__(self, prefix, target):
        self.prefix, self.target = prefix, target
        super().__init__(("127.0.0.1", 0), ProxyHandler)


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if not self.path.startswith(self.server.prefix):
            self.send_error(404, "not under the proxy prefix")
            return
        rest = self.path[len(self.server.prefix):]
        fwd = {k: v for k, v in self.headers.items()
               if k.lower() in ("if-none-match", "x-tony-ui", "accept", "cookie", "x-tony-token")}
        code, headers, body = http_get(self.server.target + "/" + rest, fwd, stranger=True, follow=False)
        self.send_response(code)
        for k, v in headers.items():
            if k.lower() in ("content-type", "etag", "cache-control", "set-cookie", "location"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_page_works_under_a_path_prefix(tony, scripts, browser_tools):
    r, job, url = start_job(tony, scripts, "--conf", "tony.worker.instances=1")
    # the page's address, as submit and status print it
    assert f"watch it at {url}/" in r.out, r
    assert f"web page: {url}/" in tony.run("status", job.name, check_rc=0).out
    prefix = f"/proxy/{job.name}/"
    proxy = PrefixProxy(prefix, url)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{proxy.server_address[1]}{prefix}"
        owner = {"X-Tony-Token": read_token(job)}
        assert http_get(base, owner)[0] == 200 and http_get(base + "ui/app.js", owner)[0] == 200
        run_browser(browser_tools, mode="proxy", url=base + "?token=" + read_token(job), app_id=job.name)
    finally:
        proxy.shutdown()
        proxy.server_close()
        tony.run("kill", job.name)
    wait_for(lambda: json.loads((job / "status.json").read_text())["state"] == "FINISHED", 30, what="job killed")


MANY = 200


def test_page_holds_a_job_with_hundreds_of_tasks(tony, scripts, browser_tools, tmp_path):
    """200 tasks on one page: every row appears, follows its task to RUNNING
    and then SUCCEEDED, and the counts add up. The tasks wait on a file lock
    held by a process of the test (no polling: 200 waiting tasks cost no
    CPU); the browser script kills that process to release them all. What
    the open page costs is measured by bench/web_ui_scale.py, not here."""
    gate = tmp_path / "gate"
    holder = subprocess.Popen([sys.executable, "-c", GATE_HOLDER, str(gate)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        (scripts / "task.sh").write_text('echo "task $TASK_INDEX up"; flock -s "$GATE" true; echo released\n')
        r = tony.submit("--detach", "--src_dir", str(scripts), "--executes", "bash task.sh", "--shell_env",
                        f"GATE={gate}", "--conf", f"tony.worker.instances={MANY}", "--conf", "tony.worker.memory=64m",
                        "--conf", f"tony.local.vcores={2 * MANY}", "--conf", "tony.local.memory=32g")
        assert r.rc == 0, r
        job = r.job_dir()
        url = json.loads((job / "am.json").read_text())["url"]
        p = subprocess.run([browser_tools, str(BROWSER_DIR / "ui_load.mjs"),
                            json.dumps({"url": page_link(url, job), "app_id": job.name, "n": MANY, "mode": "check",
                                        "chromium": CHROMIUM, "artifacts": str(ARTIFACTS), "gate_pid": holder.pid})],
                           cwd=BROWSER_DIR, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"browser check failed (screenshots in {ARTIFACTS}):\n{p.stderr}\n{p.stdout}"
        assert json.loads(p.stdout.strip().splitlines()[-1])["rows"] == MANY
    finally:
        holder.kill()
        holder.wait()
    wait_for(lambda: json.loads((job / "status.json").read_text())["state"] == "FINISHED", 60, what="the end")
    st = json.loads((job / "status.json").read_text())
    assert st["final_status"] == "SUCCEEDED" and len(st["tasks"]) == MANY, st["final_status"]
    assert r.log("worker", MANY - 1).split() == ["task", str(MANY - 1), "up", "released"]


# Holds an exclusive lock on argv[1] until killed.
GATE_HOLDER = """
import fcntl, sys, time
f = open(sys.argv[1], "w")
fcntl.flock(f, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(3600)
"""
