"""The first hour of a TonY user (issue 21): the job's name in every verb's
output and on the live page, a default name that fits the framework, the
framework shown as the user set it, `tony list --json`, and a failed job
that explains itself -- the root cause first in `tony status`, on the live
page and the portal's page (in Chromium, tests/browser/first_hour.mjs), the
task another's failure stopped saying so, no empty `Error msg:`."""
import json
import re
import subprocess

from conftest import http_get, read_token, wait_for
from test_portal import Portal
from test_web_ui import ARTIFACTS, BROWSER_DIR, CHROMIUM, browser_tools  # noqa: F401 (a fixture)

NAME = "first-hour-job"
# worker:0 (the chief) fails once released; worker:1 waits to be stopped
FAIL_SH = r"""
if [ "$TASK_INDEX" = 0 ]; then
  for i in $(seq 1 600); do [ -e "$TONY_JOB_DIR/release" ] && break; sleep 0.2; done
  echo "ValueError: batch size 0" >&2; exit 3
fi
exec sleep 300
"""


def job_id_of(r):
    return r.job_dir().name


def test_name_in_every_verb(tony):
    r = tony.submit("--conf", f"tony.application.name={NAME}", "--executes", "true", check_rc=0)
    app = job_id_of(r)
    row = [line for line in tony.run("list", check_rc=0).out.splitlines() if app in line]
    assert len(row) == 1 and row[0].split()[-1] == NAME and "tensorflow (default)" in row[0], row
    listed = json.loads(tony.run("list", "--json", check_rc=0).out)
    job = [j for j in listed["jobs"] if j["app_id"] == app][0]
    assert job["name"] == NAME and job["framework"] == "tensorflow" and job["framework_default"] is True, job
    assert job["final_status"] == "SUCCEEDED", job
    out = tony.run("status", app, check_rc=0).out
    assert f"name: {NAME}, framework: tensorflow (default)" in out, out
    st = json.loads(tony.run("status", app, "--json", check_rc=0).out)
    assert st["name"] == NAME and st["framework"] == "tensorflow" and st["framework_default"] is True, st
    hist = tony.run("history", check_rc=0).out
    assert re.search(rf"{app}\s.*\s{NAME}\s+SUCCEEDED$", hist, re.M), hist
    hj = json.loads(tony.run("history", "--json", check_rc=0).out)
    assert [j["name"] for j in hj["jobs"] if j["app_id"] == app] == [NAME], hj
    one = tony.run("history", app, check_rc=0).out
    assert f"name: {NAME}, framework: tensorflow (default)" in one, one
    assert json.loads(tony.run("history", app, "--json", check_rc=0).out)["name"] == NAME


def test_default_name_fits_the_framework(tony):
    r = tony.submit("--conf", "tony.application.framework=pytorch", "--executes", "true", check_rc=0)
    st = json.loads(tony.run("status", job_id_of(r), "--json", check_rc=0).out)
    assert st["name"] == "PyTorchApplication" and st["framework"] == "pytorch", st
    assert st["framework_default"] is False
    assert "framework: pytorch\n" in tony.run("status", job_id_of(r), check_rc=0).out
    # TonY's own default stays for a tensorflow job, which tooling may match
    r = tony.submit("--executes", "true", check_rc=0)
    st = json.loads(tony.run("status", job_id_of(r), "--json", check_rc=0).out)
    assert st["name"] == "TensorFlowApplication" and st["framework_default"] is True, st
    # a name the user set is theirs, whatever the framework
    r = tony.submit("--conf", "tony.application.framework=pytorch", "--conf", "tony.application.name=mine",
                    "--executes", "true", check_rc=0)
    assert json.loads(tony.run("status", job_id_of(r), "--json", check_rc=0).out)["name"] == "mine"


def run_browser(node, **cfg):
    cfg.setdefault("chromium", CHROMIUM)
    cfg.setdefault("artifacts", str(ARTIFACTS))
    p = subprocess.run([node, str(BROWSER_DIR / "first_hour.mjs"), json.dumps(cfg)], cwd=BROWSER_DIR,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"browser check failed (screenshots in {ARTIFACTS}):\n{p.stderr}\n{p.stdout}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_failed_job_explains_itself(tony, scripts, browser_tools):  # noqa: F811
    (scripts / "fail.sh").write_text(FAIL_SH)
    r = tony.submit("--detach", "--src_dir", str(scripts), "--executes", "bash fail.sh", "--conf",
                    "tony.worker.instances=2", "--conf", f"tony.application.name={NAME}", check_rc=0)
    job = r.job_dir()
    release = job / "shared" / "release"
    cause = "worker:0 failed first"
    try:
        url = json.loads((job / "am.json").read_text())["url"].rstrip("/")
        code, _, body = http_get(url + "/v1/job")
        assert code == 200 and json.loads(body)["name"] == NAME, body
        run_browser(browser_tools, mode="live", url=f"{url}/?token={read_token(job)}", name=NAME, cause=cause,
                    stopped="stopped: worker:0 failed first", release=str(release))
    finally:
        release.touch()  # whatever failed above, the job ends
    wait_for(lambda: json.loads((job / "status.json").read_text())["state"] == "FINISHED", 60, what="the end")

    out = tony.run("status", job.name).out
    lines = out.splitlines()
    at = [i for i, line in enumerate(lines) if line.startswith("Root cause: worker:0 failed first")]
    groups = [i for i, line in enumerate(lines) if line.startswith("FAILED: worker")]
    assert at and groups and at[0] < groups[0], out  # first, before the tasks
    assert "ValueError: batch size 0" in out
    assert re.search(r"worker:1 FINISHED\s+stopped: worker:0 failed first", out), out
    assert "Error msg:" not in out, out  # the chief said nothing beyond its exit: no empty field

    portal = Portal(tony)
    try:
        code, d = portal.get(f"v1/jobs/{job.name}")
        assert code == 200 and cause in d["root_cause"]["text"], d
        run_browser(browser_tools, mode="portal", url=f"{portal.url}#token={portal.token}&/jobs/{job.name}", name=NAME, cause=cause,
                    stopped="stopped: worker:0 failed first")
    finally:
        assert portal.stop()[0] == 0


def test_stopped_only_by_a_failure_that_ended_the_attempt(tony, scripts):
    """A worker's failure the job tolerates (not lock-step, not the chief)
    stops nothing: the ps stopped at the end of the successful attempt does
    not blame it."""
    (scripts / "tolerate.sh").write_text('case "$JOB_NAME:$TASK_INDEX" in\n'
                                         '  worker:1) exit 4 ;;\n  ps:*) exec sleep 300 ;;\n  *) sleep 2 ;;\nesac\n')
    r = tony.submit("--src_dir", str(scripts), "--executes", "bash tolerate.sh", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.ps.instances=1", "--conf", "tony.application.fail-fast-lockstep=false")
    st = json.loads(tony.run("status", r.job_dir().name, "--json", check_rc=0).out)
    tasks = {f'{t["role"]}:{t["index"]}': t for t in st["tasks"]}
    assert tasks["worker:1"]["state"] == "FAILED" and tasks["ps:0"]["state"] == "FINISHED", st
    assert st["final_status"] == "SUCCEEDED", st
    assert not any("stopped_by" in t for t in st["tasks"]), st
