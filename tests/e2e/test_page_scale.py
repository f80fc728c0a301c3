"""Issue 26: the job page of a job of hundreds of tasks shows each role's
counts and one page of its tasks (tests/browser/page_scale.mjs), not a table
of every task, whose layout froze the page for seconds at 2,000 tasks
(bench/REPORT.md, "The job page at scale"). The coordinator is the real one;
its 300 executors are simulated by bench/scale_harness.py. Pages of 100 rows
above 200 tasks (web/app.js: PAGE_ROWS, PAGE_THRESHOLD). A state filter pages
the tasks in one state (GET /v1/job?state=): a job's failed task among
hundreds is one click away."""
import json
import subprocess
import sys
import time
import urllib.error

from conftest import REPO, TONY
from test_web_ui import ARTIFACTS, BROWSER_DIR, CHROMIUM, browser_tools  # noqa: F401 (a fixture)

sys.path.insert(0, str(REPO / "bench"))
from scale_harness import ScaleJob  # noqa: E402

N = 300
# worker:0 fails twice: the first restart comes at once, the second waits
# this backoff, long enough that the page's filter is checked while the
# tasks are as the failed attempt left them
WAIT_TO_RESTART = ["tony.am.retry-count=2", "tony.application.restart-backoff-ms=600000",
                   "tony.application.restart-backoff-max-ms=600000"]


def job(j, query):
    return json.loads(j.get(f"/v1/job?{query}")[0])


def refused(j, query):
    """The 400's message for a query the coordinator refuses."""
    try:
        j.get(f"/v1/job?{query}")
    except urllib.error.HTTPError as e:
        assert e.code == 400, e.code
        return json.loads(e.read())["error"]
    raise AssertionError(f"?{query} was answered")


def check_state_filter_api(j):
    """worker:0 FAILED, the others FINISHED: the API's filter, its paging,
    its count and its 400s."""
    end = time.monotonic() + 60
    while job(j, "tasks=0")["task_counts"] != {"worker": {"FAILED": 1, "FINISHED": N - 1}}:
        assert time.monotonic() < end, job(j, "tasks=0")["task_counts"]
        time.sleep(0.2)
    failed = job(j, "state=FAILED&metrics=0")
    assert [(t["role"], t["index"], t["state"]) for t in failed["tasks"]] == [("worker", 0, "FAILED")]
    assert failed["tasks_matching"] == 1 and failed["tasks_total"] == N
    page = job(j, "state=finished,running&role=worker&offset=250&limit=100")
    assert [t["index"] for t in page["tasks"]] == list(range(251, N)) and page["tasks_matching"] == N - 1
    assert "NEW, READY, RUNNING, SUCCEEDED, FAILED, FINISHED" in refused(j, "state=DEAD")
    assert "its roles: worker" in refused(j, "role=ps")
    assert refused(j, "tasks=0&state=FAILED").startswith("tasks=0 lists no task to filter")


def test_a_large_jobs_page_shows_role_summaries_and_one_page_of_tasks(tmp_path, browser_tools):
    j = ScaleJob(TONY, N, tmp_path, extra_conf=WAIT_TO_RESTART)
    try:
        j.submit()
        j.wait_all("go", 0, 120)
        cfg = {"url": f"{j.url}/?token={j.token}", "app_id": j.app_id, "n": N, "rows": 100, "chromium": CHROMIUM,
               "artifacts": str(ARTIFACTS)}
        p = subprocess.Popen([browser_tools, str(BROWSER_DIR / "page_scale.mjs"), json.dumps(cfg)], cwd=BROWSER_DIR,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            ready = p.stdout.readline()
            if ready.strip():
                assert json.loads(ready) == {"ready": True}, ready
                # worker:0 fails: the job's tasks restart in place (attempt 1)
                j.fail_one()
                p.stdin.write("failed\n")
                p.stdin.flush()
                # restarted in place: worker:0 fails again, and the job waits
                if p.stdout.readline().strip():
                    j.fail_one()
                    check_state_filter_api(j)
                    p.stdin.write("failed again\n")
                    p.stdin.flush()
            out, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        assert p.returncode == 0, f"browser check failed (screenshots in {ARTIFACTS}):\n{err}\n{out}"
        result = json.loads(out.strip().splitlines()[-1])
        assert result["ok"] and result["attempt0"] == "0", result
    finally:
        j.close()
