"""Issue 39 on the real Hadoop test cluster, tried as another user of the
cluster would: everything the NodeManager serves for each of a job's
containers (its web services list every file of a container's log dir,
launch_container.sh with the container's env among them) and the RM's
application and attempt reports hold neither the job's secret nor its read
token, nor any other string that opens a read of the coordinator or signs
a call to it. The plain cluster runs without ACLs (anyone reads all of it
with ?user.name=); the kerberized one with ACLs, where another principal
can neither read the application's diagnostics nor kill it
(test_yarn_secure_trust.py). A notebook job (its read token is Jupyter's token,
a way to run code as the job's user) is probed the same way."""
import base64
import json
import re
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import PYTHON, http_get, read_token, signed_call, wait_for
from test_notebook import api as nb_api
from test_notebook import jupyter_port, secret_folder
from test_yarn_jobs import container_pids, yarn  # noqa: F401 - the fixture
from test_yarn_logs import new_app_id, web_nodes

pytestmark = pytest.mark.hadoop

# Another user of the cluster: simple authentication takes any name.
STRANGER = "someoneelse"
HEX64 = re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{64}(?![0-9a-fA-F])")
# Every container of the job on the NodeManager with web services (the
# labelled one), so that all of them can be read over HTTP.
ON_WEB_NODE = ["--conf", "tony.application.node-label=gpu", "--conf", "tony.worker.node-label=gpu",
               "--conf", "tony.ps.node-label=gpu"]
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def plain_get(url, accept="*/*"):
    """(status, body text) of url as STRANGER, without the owner's token."""
    url += ("&" if "?" in url else "?") + f"user.name={STRANGER}"
    try:
        with NO_PROXY.open(urllib.request.Request(url, headers={"Accept": accept}), timeout=30) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def listed(doc, *path):
    """A JSON list at path in doc (YARN gives one item unwrapped, none as null)."""
    for k in path:
        doc = (doc or {}).get(k) if isinstance(doc, dict) else None
    return doc if isinstance(doc, list) else [doc] if doc else []


def harvest(get, rm, nodes, app_id, containers=None):
    """({where: text}, [(node, container)], [file names read]) of everything
    the RM and the NodeManagers at nodes (host:port) serve about app_id's
    containers (those the NodeManagers list, or those given), fetched with
    get(url, accept) -> (status, text). launch_container.sh is asked for
    even where a container's listing is refused."""
    seen = {}

    def fetch(url, accept="application/json"):
        code, text = get(url, accept)
        seen[url] = f"HTTP {code}\n{text}"
        return json.loads(text) if code == 200 and accept == "application/json" else None

    fetch(f"{rm}/ws/v1/cluster/apps/{app_id}")
    for a in listed(fetch(f"{rm}/ws/v1/cluster/apps/{app_id}/appattempts"), "appAttempts", "appAttempt"):
        attempt = a.get("appAttemptId") or a.get("id")
        fetch(f"{rm}/ws/v1/cluster/apps/{app_id}/appattempts/{attempt}")
        fetch(f"{rm}/ws/v1/cluster/apps/{app_id}/appattempts/{attempt}/containers")
    prefix = "container_" + app_id.split("_", 1)[1] + "_"
    found = []
    for node in nodes:
        fetch(f"http://{node}/ws/v1/node/apps/{app_id}")
        for c in listed(fetch(f"http://{node}/ws/v1/node/containers"), "containers", "container"):
            if c.get("id", "").startswith(prefix):
                found.append((node, c["id"]))
    containers = found if containers is None else containers
    for node, cid in containers:
        fetch(f"http://{node}/ws/v1/node/containers/{cid}")
        files = {"launch_container.sh"}
        logs = fetch(f"http://{node}/ws/v1/node/containers/{cid}/logs")
        for group in logs if isinstance(logs, list) else listed(logs, "containerLogsInfo"):
            for f in listed(group, "containerLogInfo"):
                files.add(f["fileName"])
        for name in sorted(files):
            fetch(f"http://{node}/ws/v1/node/containerlogs/{cid}/{urllib.parse.quote(name)}", accept="*/*")
    return seen, sorted(containers), files_read(seen)


def files_read(seen):
    """The names of the container files seen holds with HTTP 200."""
    return sorted({u.rsplit("/", 1)[1] for u, t in seen.items() if "/containerlogs/" in u and t.startswith("HTTP 200")})


def assert_nothing_opens_the_job(seen, job_dir, api):
    """Neither the job's secret (as it is or in base64) nor its read token
    is in any text of seen, and no 64-hex string there reads the
    coordinator at api or signs a call to it."""
    secret = (job_dir / "secret").read_text().strip()
    token = read_token(job_dir)
    b64 = base64.b64encode(secret.encode()).decode()
    for where, text in seen.items():
        assert secret not in text, f"the job's secret is served at {where}"
        assert b64.rstrip("=") not in text, f"the job's secret (base64) is served at {where}"
        assert token not in text, f"the job's read token is served at {where}"
    candidates = {m.group(0) for text in seen.values() for m in HEX64.finditer(text)}
    for c in sorted(candidates):
        code, _, _ = http_get(f"{api}/v1/job", headers={"X-Tony-Token": c}, stranger=True)
        assert code != 200, f"{c} found in what the cluster serves opens the coordinator's reads"
        # an attacker's kill, signed with it as the job's secret
        code, _, _, _ = signed_call(f"{api}/v1/job/kill", secret=c)
        assert code >= 400, f"{c} found in what the cluster serves signs a kill ({code})"
    return candidates


def probe_running_job(yarn, app_id, job_dir, api, roles):
    """The probe of a running job as STRANGER: every container of it is seen
    on the web node (the AM's and one per task), launch_container.sh among
    the files read, nothing opens the job."""
    nodes = web_nodes(yarn.cluster)
    seen, containers, files = harvest(plain_get, yarn.cluster.rm, nodes, app_id)
    assert len(containers) == 1 + roles, (containers, list(seen))
    assert "launch_container.sh" in files, files
    # a plain cluster without ACLs: the stranger did read them
    launch = [t for u, t in seen.items() if u.endswith("/launch_container.sh")]
    assert len(launch) == len(containers) and all(t.startswith("HTTP 200") for t in launch), launch
    assert any("export CONTAINER_ID=" in t for t in launch), launch[0][:2000]
    # the coordinator's own address is there (TONY_AM_URL): the probe must
    # have tried it
    assert any(urllib.parse.urlsplit(api).port and str(urllib.parse.urlsplit(api).port) in t for t in launch)
    # and on disk, every file of the job's container log dirs (what a
    # NodeManager may serve), as read by this machine's root
    for d in yarn.cluster.container_logs(app_id):
        for f in d.iterdir():
            if f.is_file():
                seen[str(f)] = f.read_text(errors="replace")
    return assert_nothing_opens_the_job(seen, job_dir, api)


@pytest.fixture(autouse=True)
def needs_web_node(hadoop):
    if not web_nodes(hadoop):
        pytest.skip("this test cluster has no NodeManager with a web UI (TONY_HTC_WEB_NODEMANAGERS=0)")


def test_nothing_the_cluster_serves_opens_a_running_job(yarn, tmp_path):
    flag = tmp_path / "go-on"
    wait = f"while [ ! -e {flag} ]; do sleep 0.2; done"
    before = yarn.app_ids()
    p = yarn.popen_submit("--executes", wait, "--conf", "tony.worker.instances=1", "--conf", "tony.ps.instances=1",
                          *ON_WEB_NODE)
    try:
        app_id = new_app_id(yarn, before)
        job_dir = yarn.tony.home / "jobs" / app_id
        api = wait_for(lambda: yarn.api_url(app_id), timeout=120, what="the coordinator's API")
        wait_for(lambda: (lambda s: s and all(t.get("state") == "RUNNING" for t in s.get("tasks", []))
                          and len(s.get("tasks", [])) == 2)(
            json.loads(http_get(f"{api}/v1/job")[2] or b"{}")), timeout=120, what="both tasks running")
        probe_running_job(yarn, app_id, job_dir, api, roles=2)
        # the owner's token still reads, so the probe asked the right place
        assert http_get(f"{api}/v1/job")[0] == 200
    finally:
        flag.write_text("")
        out, err = p.communicate(timeout=180)
    assert p.returncode == 0, (out, err)
    # after its end too: the RM's final report
    seen, _, _ = harvest(plain_get, yarn.cluster.rm, [], app_id)
    assert_nothing_opens_the_job(seen, job_dir, api)


def jupyter_call(base, token, method):
    """Status of a call to Jupyter's kernels API at its own port, with token
    as Jupyter takes it. base: Jupyter's, with the notebook's secret folder
    (test_notebook.secret_folder): a call that misses the folder would be
    refused whatever the token."""
    req = urllib.request.Request(f"{base}/api/kernels", method=method,
                                 headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
                                 data=b'{"name": "python3"}' if method == "POST" else None)
    try:
        with NO_PROXY.open(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def api_base(url):
    u = urllib.parse.urlsplit(url)
    return f"{u.scheme}://{u.netloc}"


def test_nothing_the_cluster_serves_drives_a_notebook(yarn):
    """A notebook's read token is its Jupyter token: whoever has it runs
    code as the job's user. Nothing served about the job gives it."""
    r = yarn.tony.run("notebook", "--backend", "yarn", "--detach", "--python_binary_path", str(PYTHON),
                      "--conf", "tony.notebook.memory=1g", "--conf", "tony.am.memory=256m",
                      "--conf", "tony.notebook.idle-timeout=5m", "--conf", "tony.application.node-label=gpu",
                      "--conf", "tony.notebook.node-label=gpu", timeout=180)
    assert r.rc == 0, r
    app_id = yarn.app_id(r)
    try:
        api = wait_for(lambda: yarn.api_url(app_id), timeout=120, what="the coordinator's API")
        wait_for(lambda: http_get(f"{api}/notebook/api/status")[0] == 200, timeout=120,
                 what="Jupyter behind the proxy")
        candidates = probe_running_job(yarn, app_id, r.job_dir(), api, roles=1)
        # nothing found starts a kernel, through the coordinator's proxy or
        # at Jupyter's own port
        job = json.loads(http_get(f"{api}/v1/job")[2])
        host = next(t for t in job["tasks"] if t["role"] == "notebook")["host"]
        pids = container_pids("TONY_TASK_ID=notebook:0", prefix=f"CONTAINER_ID=container_{app_id.split('_', 1)[1]}_")
        jupyter = f"http://{host}:{jupyter_port(pids)}/notebook/{secret_folder(read_token(r.job_dir()))}"
        assert jupyter_call(jupyter, read_token(r.job_dir()), "GET")[0] == 200  # the token it wants
        for c in sorted(candidates):
            assert nb_api(api_base(api), c, "/api/kernels", "POST", {"name": "python3"})[0] == 403, c
            assert jupyter_call(jupyter, c, "POST")[0] == 403, c
    finally:
        yarn.tony.run("kill", app_id, timeout=60)
    assert yarn.cluster.wait_app(app_id)["state"] == "KILLED"


def test_a_tasks_last_words_stay_out_of_the_rms_diagnostics(yarn):
    """Anyone reads the RM's diagnostics (here without ACLs; with them too:
    test_yarn_secure_trust.py), so they name the root cause without the
    task's stderr, which `tony status` (the owner's) shows."""
    r = yarn.submit("--executes", "echo private-detail-7 >&2; exit 3", "--conf", "tony.worker.instances=1")
    assert r.rc == 1, r
    app_id = yarn.app_id(r)
    code, text = plain_get(f"{yarn.cluster.rm}/ws/v1/cluster/apps/{app_id}", accept="application/json")
    assert code == 200, text
    diag = json.loads(text)["app"]["diagnostics"]
    assert "Root cause: worker:0 failed first in attempt 0" in diag and "exit code 3" in diag, diag
    assert "private-detail-7" not in diag, diag
    assert "Its last words are left out here" in diag, diag
    s = yarn.tony.run("status", app_id)
    assert "private-detail-7" in s.out, s
