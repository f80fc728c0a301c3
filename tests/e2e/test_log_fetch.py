"""The coordinator's log endpoint and the log links executors report, on
the local backend. A task's log link (TONY_TASK_LOG_URL, which the yarn
backend builds from the grant) is kept only when the job's backend can read
the log from it (backend.h's check_log_url / read_log). The local backend
reads none: its tasks' logs are files the coordinator opens itself, so a
link leaking in from the user's environment is set aside with a warning and
the endpoint keeps serving the files. Reading through a NodeManager is the
yarn backend's: tests/unit/test_yarn_nmlog.c drives it against a stand-in
NodeManager, test_yarn_logs.py through a real one."""
import json

from conftest import call, wait_for

CID = "container_1700000000000_0001_01_000002"


def test_a_link_the_local_backend_cannot_read_is_set_aside(tony):
    # A well-formed NodeManager link whose node does not exist: were it
    # used, the reads would fail.
    link = f"http://127.0.0.1:9/node/containerlogs/{CID}/alice"
    tony.env.update(TONY_TASK_LOG_URL=link, CONTAINER_ID=CID)
    p = tony.popen("submit", "--conf", "tony.worker.instances=1", "--executes",
                   "printf 'out-%s\\n' 1 2 3; printf 'err-1\\n' >&2; sleep 60")

    def job():
        jobs = tony.home / "jobs"
        ids = [d.name for d in jobs.iterdir()] if jobs.exists() else []
        r = tony.run("status", ids[0], "--json") if ids else None
        if not r or r.rc != 0:
            return None
        j = json.loads(r.out)
        return j if j["tasks"] and j["tasks"][0]["state"] == "RUNNING" else None
    j = wait_for(job, timeout=60, what="worker:0 running")
    try:
        t = j["tasks"][0]
        assert "log_url" not in t, t
        assert t["container"] == CID
        url = f"{j['url']}/v1/tasks/worker/0/log"
        d = wait_for(lambda: (lambda c, d: d if c == 200 and "out-3" in d["data"] else None)(*call(url)),
                     timeout=30, what="the task's stdout through the coordinator")
        assert d["data"] == "out-1\nout-2\nout-3\n" and d["exists"] is True, d
        assert d["size"] == d["next"] == len(d["data"])
        code, d = call(f"{url}?offset=6")
        assert code == 200 and d["data"] == "out-2\nout-3\n", d
        code, d = call(f"{url}?stream=stderr")
        assert code == 200 and d["data"] == "err-1\n", d
        code, d = call(f"{url}?offset=999999")
        assert code == 400 and "past the end" in d["error"], d
    finally:
        tony.run("kill", j["app_id"])
        p.communicate(timeout=60)
    am_log = next((tony.home / "jobs").glob("*/am.log")).read_text()
    assert ("worker:0 reported a log link the coordinator cannot read from: the local backend reads no log links"
            in am_log), am_log[-3000:]
