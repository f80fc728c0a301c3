"""The real Hadoop test cluster for tests marked `hadoop`.

scripts/hadoop-test-cluster runs an unmodified Hadoop 3.4.1 (YARN + HDFS,
3 NodeManagers with yarn.io/gpu, queues default and ml, node label gpu) on
this machine. `make test-hadoop` starts one and passes its directory in
TONY_HTC_DIR; without it the session starts its own under build/ and stops
it at the end. Helpers here speak plain REST/WebHDFS with urllib so that
tests can check tony's work independently of tony's own client."""
import getpass
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "hadoop-test-cluster"


def user():
    return os.environ.get("USER") or getpass.getuser()


class Cluster:
    """One running test cluster, read from DIR/cluster.env."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.vars = {}
        for line in (self.dir / "cluster.env").read_text().splitlines():
            if line.startswith("export "):
                k, _, v = line[len("export "):].partition("=")
                self.vars[k] = v.strip("'")
        self.conf_dir = self.vars["HADOOP_CONF_DIR"]
        self.rm = self.vars["TONY_HTC_RM_WEBAPP"]
        self.nn_web = self.vars["TONY_HTC_NN_WEB"]
        self.default_fs = self.vars["TONY_HTC_DEFAULT_FS"]
        self.scheduler = self.vars["TONY_HTC_RM_SCHEDULER_ADDRESS"]
        self.yarn_dir = Path(self.vars["TONY_HTC_YARN_DIR"])
        self.pid = int(self.vars["TONY_HTC_PID"])
        self.log = Path(self.vars["TONY_HTC_LOG"])
        self.user = user()

    # --- ResourceManager REST
    def rm_get(self, path):
        with urllib.request.urlopen(self.rm + path, timeout=30) as r:
            return json.load(r)

    def app(self, app_id):
        return self.rm_get(f"/ws/v1/cluster/apps/{app_id}")["app"]

    def apps(self, states=None):
        q = f"?states={','.join(states)}" if states else ""
        apps = (self.rm_get("/ws/v1/cluster/apps" + q).get("apps") or {}).get("app") or []
        return apps if isinstance(apps, list) else [apps]

    def wait_app(self, app_id, states=("FINISHED", "FAILED", "KILLED"), timeout=120):
        end = time.time() + timeout
        while time.time() < end:
            a = self.app(app_id)
            if a["state"] in states:
                return a
            time.sleep(0.5)
        raise AssertionError(f"{app_id} not in {states} after {timeout}s: {self.app(app_id)}")

    def running_containers(self):
        """Containers the NodeManagers still run, over all nodes."""
        nodes = self.rm_get("/ws/v1/cluster/nodes")["nodes"]["node"]
        nodes = nodes if isinstance(nodes, list) else [nodes]
        return sum(n.get("numContainers", 0) for n in nodes)

    def container_logs(self, app_id):
        """Container log dirs of an application, on disk (only the labelled
        NodeManager has a web UI in the test cluster)."""
        return sorted(self.yarn_dir.glob(f"*logDir-nm-*/{app_id}/container_*"))

    # --- WebHDFS
    def hdfs_url(self, path, op, **params):
        q = "&".join([f"op={op}", f"user.name={self.user}"] + [f"{k}={v}" for k, v in params.items()])
        return f"{self.nn_web}/webhdfs/v1{path}?{q}"

    def hdfs_status(self, path):
        """FileStatus of path, or None when it does not exist."""
        try:
            with urllib.request.urlopen(self.hdfs_url(path, "GETFILESTATUS"), timeout=30) as r:
                return json.load(r)["FileStatus"]
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def hdfs_list(self, path):
        try:
            with urllib.request.urlopen(self.hdfs_url(path, "LISTSTATUS"), timeout=30) as r:
                return [s["pathSuffix"] for s in json.load(r)["FileStatuses"]["FileStatus"]]
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return []
            raise

    def hdfs_put(self, path, data, permission="644"):
        """Uploads bytes (two-step CREATE) and returns the file's FileStatus."""
        req = urllib.request.Request(self.hdfs_url(path, "CREATE", overwrite="true", permission=permission,
                                                   noredirect="true"), method="PUT")
        with urllib.request.urlopen(req, timeout=30) as r:
            location = json.load(r)["Location"]
        req = urllib.request.Request(location, data=data, method="PUT",
                                     headers={"Content-Type": "application/octet-stream"})
        urllib.request.urlopen(req, timeout=60).close()
        return self.hdfs_status(path)


def start(directory, env=None):
    """Starts (or finds running) the cluster of directory; env adds settings
    (TONY_HTC_* of scripts/hadoop-test-cluster.md)."""
    subprocess.run([str(SCRIPT), "start", str(directory)], check=True, timeout=600,
                   env=dict(os.environ, **(env or {})))
    return Cluster(directory)


def stop(directory):
    subprocess.run([str(SCRIPT), "stop", str(directory)], check=False, timeout=120)
