"""Issue 39 on the kerberized test cluster, which enforces YARN's ACLs
(yarn.acl.enable, the service user the only YARN and queue admin): tony
submits with application ACLs that name the owner alone (unless
tony.application.view-acls / modify-acls widen them), so the cluster's
second principal can neither kill the job through the RM's REST API nor
read its containers' files on the NodeManagers, and nothing any of them
serves to that principal opens the job. The RM shows an application's
diagnostics to that principal all the same (its REST report sets them
outside its access check): they never carry a task's last words."""
import json
import time

import pytest

from test_yarn_secure import secure  # noqa: F401 - the fixture
from test_yarn_trust import assert_nothing_opens_the_job, harvest

pytestmark = [pytest.mark.hadoop, pytest.mark.secure]

ON_WEB_NODE = ["--conf", "tony.application.node-label=gpu", "--conf", "tony.worker.node-label=gpu"]


def other_get(secure, ccache):
    """get(url, accept) -> (status, text) for harvest, as the second principal."""
    def get(url, accept):
        code, _, body = secure.cluster.curl("GET", url, ccache=ccache, headers={"Accept": accept})
        return code, body.decode(errors="replace")
    return get


def web_nodes(cluster):
    return [w for w in cluster.vars.get("TONY_HTC_NODE_WEB", "").split(",") if w]


def api_of(secure, app_id):
    app = secure.cluster.app(app_id)
    host, _, port = (app.get("amRPCAddress") or "").rpartition(":")
    if not host or port in ("", "-1", "0"):
        return None
    return f"http://{'127.0.0.1' if host == 'localhost' else host}:{port}"


def test_another_principal_neither_kills_nor_reads_the_job(secure, tmp_path):
    if not secure.cluster.other_principal:
        pytest.skip("this secure cluster names no second principal: restart it")
    secure.kinit()
    other = f"FILE:{tmp_path / 'other-cc'}"
    secure.cluster.kinit_other(other)
    flag = tmp_path / "go-on"
    before = secure.apps()
    p = secure.tony.popen("submit", "--backend", "yarn", "--conf", "tony.worker.memory=256m",
                          "--conf", "tony.am.memory=256m", "--conf", "tony.worker.instances=1", *ON_WEB_NODE,
                          "--conf", f"tony.containers.envs=SSL_CERT_FILE={secure.cluster.ca_cert}",
                          "--executes", f"while [ ! -e {flag} ]; do sleep 0.2; done; echo done")
    try:
        def new_app():
            ids = secure.apps() - before
            return next(iter(ids)) if ids else None
        app_id = None
        end = time.time() + 120
        while not app_id and time.time() < end:
            app_id = new_app()
            time.sleep(0.5)
        assert app_id, "no application"
        end = time.time() + 180
        while time.time() < end and secure.cluster.app(app_id)["state"] != "RUNNING":
            time.sleep(0.5)
        api = None
        while time.time() < end and not api:
            api = api_of(secure, app_id)
            time.sleep(0.5)
        assert api, secure.cluster.app(app_id)
        job_dir = secure.tony.home / "jobs" / app_id
        rm = secure.cluster.rm

        # the RM shows the stranger none of the report's details (YARN
        # zeroes them without VIEW_APP), and refuses its kill
        code, _, body = secure.cluster.curl("GET", f"{rm}/ws/v1/cluster/apps/{app_id}", ccache=other,
                                            headers={"Accept": "application/json"})
        assert code == 200, body
        assert json.loads(body)["app"]["startedTime"] == 0, body
        code, _, body = secure.cluster.curl("PUT", f"{rm}/ws/v1/cluster/apps/{app_id}/state",
                                            json.dumps({"state": "KILLED"}).encode(), ccache=other,
                                            headers={"Content-Type": "application/json",
                                                     "Accept": "application/json"})
        assert code == 403, (code, body)
        time.sleep(3)
        assert secure.cluster.app(app_id)["state"] == "RUNNING", secure.cluster.app(app_id)

        # The owner reads the containers' files (so the probe asks the right
        # places), and nothing there opens the job either.
        owner_seen, containers, owner_files = harvest(other_get(secure, None), rm, web_nodes(secure.cluster), app_id)
        assert len(containers) == 2 and "launch_container.sh" in owner_files, (containers, owner_files)
        assert_nothing_opens_the_job(owner_seen, job_dir, api)
        # The NodeManager refuses the stranger the same containers' files,
        # and nothing served to it opens the job.
        seen, _, files = harvest(other_get(secure, other), rm, web_nodes(secure.cluster), app_id, containers)
        logs = [u for u in seen if u.endswith("/logs") or u.endswith("/launch_container.sh")]
        assert len(logs) == 4 and all(not seen[u].startswith("HTTP 200") for u in logs), \
            {u: seen[u][:300] for u in logs}
        assert files == [], files
        assert_nothing_opens_the_job(seen, job_dir, api)
    finally:
        flag.write_text("")
        out, err = p.communicate(timeout=240)
    assert p.returncode == 0, (out, err)
    assert secure.cluster.app(app_id)["finalStatus"] == "SUCCEEDED"


def test_the_rms_diagnostics_carry_no_last_words_even_with_acls(secure, tmp_path):
    """ACLs or not, the RM shows an application's diagnostics to any user
    (YARN 3.4.1), so they name the root cause without the task's stderr,
    which `tony status` shows its owner."""
    secure.kinit()
    other = f"FILE:{tmp_path / 'other-cc'}"
    secure.cluster.kinit_other(other)
    r = secure.submit("--executes", "echo private-detail-7 >&2; exit 3", "--conf", "tony.worker.instances=1")
    assert r.rc == 1, r
    app_id = r.job_dir().name
    secure.cluster.wait_app(app_id)
    code, _, body = secure.cluster.curl("GET", f"{secure.cluster.rm}/ws/v1/cluster/apps/{app_id}", ccache=other,
                                        headers={"Accept": "application/json"})
    diag = json.loads(body)["app"].get("diagnostics") or ""
    assert code == 200 and "Root cause: worker:0 failed first" in diag, body  # the stranger reads them
    assert "private-detail-7" not in diag and "Its last words are left out here" in diag, diag
    assert "private-detail-7" in secure.tony.run("status", app_id).out


def test_the_acl_keys_widen_view_and_modify(secure, tmp_path):
    """tony.application.view-acls and modify-acls name who else may view
    and kill the job: the second principal then sees the report's details
    and its kill is taken."""
    secure.kinit()
    other = f"FILE:{tmp_path / 'other-cc'}"
    secure.cluster.kinit_other(other)
    name = secure.cluster.other_principal.split("@")[0]
    r = secure.submit("--detach", "--executes", "sleep 300", "--conf", "tony.worker.instances=1",
                      "--conf", f"tony.application.view-acls={name}", "--conf", f"tony.application.modify-acls={name}")
    assert r.rc == 0, r
    app_id = r.job_dir().name
    rm = secure.cluster.rm
    end = time.time() + 120
    while time.time() < end and secure.cluster.app(app_id)["state"] != "RUNNING":
        time.sleep(0.5)
    code, _, body = secure.cluster.curl("GET", f"{rm}/ws/v1/cluster/apps/{app_id}", ccache=other,
                                        headers={"Accept": "application/json"})
    assert code == 200 and json.loads(body)["app"]["startedTime"] > 0, body
    code, _, body = secure.cluster.curl("PUT", f"{rm}/ws/v1/cluster/apps/{app_id}/state",
                                        json.dumps({"state": "KILLED"}).encode(), ccache=other,
                                        headers={"Content-Type": "application/json", "Accept": "application/json"})
    assert code in (200, 202), (code, body)
    assert secure.cluster.wait_app(app_id, timeout=120)["state"] == "KILLED"
