"""`tony notebook --backend yarn` on the real Hadoop test cluster (issue 25,
item 3): the Jupyter server of the job's Python runs in a NodeManager's
container and listens on that node's address (NM_HOST), the coordinator in
its own AM container proxies to the task's registered host:port. A kernel
is started and a cell run through the proxy (REST + WebSocket), both are
refused without the job's read token, Jupyter itself refuses a second user
who finds its port, and `tony kill` ends the application with its kernel.
The test cluster's NodeManagers all call themselves "localhost", so the
proxy's path across nodes is the same code but here on one machine."""
import subprocess
import urllib.parse

import pytest

from conftest import PYTHON, read_token, second_user, wait_for
from test_notebook import api, jupyter_port, parts, run_cell, secret_folder, websockets
from test_yarn_jobs import container_pids, yarn  # noqa: F401 - the fixture

pytestmark = pytest.mark.hadoop


def test_yarn_notebook_kernel_through_the_proxy_and_kill(yarn):
    r = yarn.tony.run("notebook", "--backend", "yarn", "--detach", "--python_binary_path", str(PYTHON),
                      "--conf", "tony.notebook.memory=1g", "--conf", "tony.am.memory=256m",
                      "--conf", "tony.notebook.idle-timeout=5m", timeout=180)
    assert r.rc == 0, r
    app_id = yarn.app_id(r)
    try:
        # the whole URL, once the coordinator runs, as on the local backend
        # (it printed the path alone before)
        printed = [l for l in r.out.splitlines() if "the notebook is at http" in l]
        assert printed, r
        url = printed[0].split("the notebook is at ")[1].split()[0]
        base, netloc, token = parts(url)
        assert token == read_token(r.job_dir()), url
        assert urllib.parse.urlsplit(base).port == urllib.parse.urlsplit(yarn.api_url(app_id)).port, url
        wait_for(lambda: api(base, token, "/api/status")[0] == 200, timeout=90, what="Jupyter behind the proxy")
        # without the token: the coordinator refuses, for every method
        assert api(base, "0" * 64, "/api/status")[0] == 403
        for method, body in (("GET", None), ("POST", {"name": "python3"}), ("DELETE", None)):
            assert api(base, None, "/api/kernels", method, body)[0] == 403, method
        code, kernel = api(base, token, "/api/kernels", "POST", {"name": "python3"})
        assert code == 201, kernel
        assert run_cell(netloc, token, kernel["id"], "import os; print(os.environ['CONTAINER_ID'])").strip() \
            .startswith("container_" + app_id.split("_", 1)[1]), "the kernel runs in the job's container"
        with pytest.raises(websockets.InvalidStatus) as e:
            websockets.connect(f"ws://{netloc}/notebook/api/kernels/{kernel['id']}/channels", open_timeout=10)
        assert e.value.response.status_code == 403
        # Jupyter listens where the task registered (the node's name), and
        # there it wants its token from anyone who finds the port
        code, job = api(base, token, "/v1/job", prefix="")
        assert code == 200, job
        assert "tensorboard_url" not in job, job  # Jupyter's port is no TensorBoard's
        # Jupyter listens where the task registered (the node's name), and
        # there it wants its token from anyone who finds the port
        task = next(t for t in job["tasks"] if t["role"] == "notebook")
        pids = container_pids("TONY_TASK_ID=notebook:0", prefix=f"CONTAINER_ID=container_{app_id.split('_', 1)[1]}_")
        assert pids
        probe = subprocess.run(["runuser", "-u", second_user(), "--", "curl", "-s", "-o", "/dev/null", "-w",
                                "%{http_code}", f"http://{task['host']}:{jupyter_port(pids)}/notebook/{secret_folder(token)}/api/kernels"],
                               capture_output=True, text=True, timeout=20)
        assert probe.stdout == "403", probe
    finally:
        yarn.tony.run("kill", app_id, timeout=60)
    assert yarn.cluster.wait_app(app_id)["state"] == "KILLED"
    # the fixture then waits for no container process (the kernel too) to be left
