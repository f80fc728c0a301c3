"""Live proof of tony's YARN wire library (src/backend/yarn): the C probe
tests/yarn/am_probe.c runs AS the ApplicationMaster of a real application on
the Hadoop test cluster and talks Hadoop IPC + SASL DIGEST-MD5 to the RM's
scheduler port and to the NodeManagers (no JVM on our side). The probe checks
everything it sees and unregisters FAILED with the reasons on any mismatch;
this test submits it over RM REST and reads its verdict and logs.

The probe links the same libraries as tony, which the test cluster hides on
its labelled NodeManager (scripts/hadoop-test-cluster, TONY_HTC_BARE_NODEMANAGERS),
so it runs as tony does there: through the loader and libraries of the
self-contained tony (`tony pack`), localized beside it."""
import base64
import json
import os
import subprocess
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import TONY, wait_for

REPO = Path(__file__).resolve().parents[2]
PROBE = Path(os.environ.get("TONY_BUILD_DIR", REPO / "build")) / "tests" / "yarn_am_probe"


def post(url, body=None):
    data = json.dumps(body).encode() if body is not None else b""
    req = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read()
        return r.status, json.loads(text) if text else None


def entries(d):
    return {"entry": [{"key": k, "value": v} for k, v in d.items()]}


def logs_of(cluster, app_id):
    out = []
    for d in cluster.container_logs(app_id):
        for f in ("stdout", "stderr"):
            p = d / f
            if p.exists():
                out.append(f"--- {d.name}/{f}\n{p.read_text(errors='replace')}")
    return "\n".join(out)


@pytest.mark.hadoop
@pytest.mark.hadoop33
def test_probe_am_speaks_yarn_wire(hadoop, tmp_path):
    assert PROBE.exists(), f"{PROBE} is missing: build it with `make build`"
    cluster = hadoop
    hdfs_dir = f"/tmp/tony-yarn-wire-{uuid.uuid4().hex[:8]}"
    st = cluster.hdfs_put(f"{hdfs_dir}/yarn_am_probe", PROBE.read_bytes(), permission="755")
    uri = cluster.default_fs + f"{hdfs_dir}/yarn_am_probe"
    dist = tmp_path / "tony.tar.gz"
    subprocess.run([TONY, "pack", str(dist)], check=True)
    dist_st = cluster.hdfs_put(f"{hdfs_dir}/tony.tar.gz", dist.read_bytes())
    secret = "probe-secret-" + uuid.uuid4().hex

    user = cluster.user
    _, new = post(f"{cluster.rm}/ws/v1/cluster/apps/new-application?user.name={user}")
    app_id = new["application-id"]
    env = {
        "TONY_YARN_SCHEDULER_ADDRESS": cluster.scheduler,
        "TONY_PROBE_RESOURCE_URI": uri,
        "TONY_PROBE_RESOURCE_SIZE": str(st["length"]),
        "TONY_PROBE_RESOURCE_TIMESTAMP": str(st["modificationTime"]),
        "TONY_PROBE_SECRET": secret,
    }
    sub = {
        "application-id": app_id,
        "application-name": "tony-yarn-wire-probe",
        "application-type": "TONY-PROBE",
        "queue": "default",
        "max-app-attempts": 1,
        "resource": {"memory": 256, "vCores": 1},
        "am-container-spec": {
            "local-resources": entries({
                "yarn_am_probe": {
                    "resource": uri, "type": "FILE", "visibility": "APPLICATION",
                    "size": st["length"], "timestamp": st["modificationTime"]},
                "tony-dist": {
                    "resource": cluster.default_fs + f"{hdfs_dir}/tony.tar.gz", "type": "ARCHIVE",
                    "visibility": "APPLICATION", "size": dist_st["length"],
                    "timestamp": dist_st["modificationTime"]}}),
            "environment": entries(env),
            "commands": {"command": "./tony-dist/lib/tony/ld-linux-x86-64.so.2 --library-path ./tony-dist/lib/tony "
                                    "./yarn_am_probe 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"},
            # URL-safe base64 without padding, as the RM decodes secrets
            "credentials": {"secrets": entries({
                "tony.job.secret": base64.urlsafe_b64encode(secret.encode()).decode().rstrip("=")})},
        },
    }
    code, _ = post(f"{cluster.rm}/ws/v1/cluster/apps?user.name={user}", sub)
    assert code == 202
    app = cluster.wait_app(app_id, timeout=240)
    logs = logs_of(cluster, app_id)
    assert (app["state"], app["finalStatus"]) == ("FINISHED", "SUCCEEDED"), \
        f"{app_id}: {app['state']}/{app['finalStatus']}: {app.get('diagnostics')}\n{logs}"
    assert "all probe checks passed" in app.get("diagnostics", ""), app.get("diagnostics")
    am_out = next(d for d in cluster.container_logs(app_id) if d.name.endswith("_000001")) / "stdout"
    # The RM says FINISHED once the probe unregistered; its last lines reach
    # the file when the process exits, a moment later.
    wait_for(lambda: "PROBE " in am_out.read_text(), timeout=60, what="the probe's last lines")
    text = am_out.read_text()
    assert "PROBE PASSED" in text and "CHECK FAIL" not in text, text
    # the plain task container ran our command with our env and localized file
    assert "probe-var=hello from the probe" in logs, logs
    assert "probe_copy" in logs, logs
    print(text)
