"""Issue 26: the job page of a job of hundreds of tasks shows each role's
counts and one page of its tasks (tests/browser/page_scale.mjs), not a table
of every task, whose layout froze the page for seconds at 2,000 tasks
(bench/REPORT.md, "The job page at scale"). The coordinator is the real one;
its 300 executors are simulated by bench/scale_harness.py. Pages of 100 rows
above 200 tasks (web/app.js: PAGE_ROWS, PAGE_THRESHOLD)."""
import json
import subprocess
import sys

from conftest import REPO, TONY
from test_web_ui import ARTIFACTS, BROWSER_DIR, CHROMIUM, browser_tools  # noqa: F401 (a fixture)

sys.path.insert(0, str(REPO / "bench"))
from scale_harness import ScaleJob  # noqa: E402

N = 300


def test_a_large_jobs_page_shows_role_summaries_and_one_page_of_tasks(tmp_path, browser_tools):
    j = ScaleJob(TONY, N, tmp_path)
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
