"""The real Hadoop test cluster for tests marked `hadoop`.

scripts/hadoop-test-cluster runs an unmodified Hadoop 3.4.1 (YARN + HDFS,
3 NodeManagers with yarn.io/gpu, queues default and ml, node label gpu) on
this machine. `make test-hadoop` starts one and passes its directory in
TONY_HTC_DIR; without it the session starts its own under build/ and stops
it at the end. Helpers here speak plain REST/WebHDFS with urllib so that
tests can check tony's work independently of tony's own client.

SecureCluster is the same for `start --secure` (tests marked `secure`, the
`secure_hadoop` fixture: TONY_HTC_SECURE_DIR or a cluster of the session's
own): Kerberos, SPNEGO through curl, HTTPS WebHDFS, delegation tokens."""
import getpass
import json
import os
import subprocess
import sys
import tempfile
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


# ---------------------------------------------------------------- secure cluster

sys.path.insert(0, str(REPO / "scripts" / "hadoop-test-cluster.d"))
import hadoop_token  # noqa: E402  (the token codec the cluster's selftest uses)


class SecureCluster(Cluster):
    """A running secure test cluster (`start --secure`): Kerberos with its own
    KDC, SPNEGO on the RM, NodeManager and NameNode web servers, WebHDFS over
    HTTPS only. Requests go through curl --negotiate (no Python GSS-API here)
    with a ticket cache of the caller's choosing: `ccache=None` is the
    cluster's DIR/krb5cc, anything else a FILE: path (one that does not
    exist = no ticket). The RM and WebHDFS helpers of Cluster work unchanged,
    with the default ticket cache (call kinit() first)."""

    def __init__(self, directory):
        super().__init__(directory)
        self.realm = self.vars["TONY_HTC_REALM"]
        self.principal = self.vars["TONY_HTC_PRINCIPAL"]
        self.user = self.principal.split("@")[0]
        self.keytab = self.vars["TONY_HTC_KEYTAB"]
        self.krb5_conf = self.vars["KRB5_CONFIG"]
        self.ccache = self.vars["KRB5CCNAME"]
        self.ca_cert = self.vars["TONY_HTC_CA_CERT"]
        self.rm_principal = self.vars["TONY_HTC_RM_PRINCIPAL"]
        self.kinit_script = self.vars["TONY_HTC_KINIT"]
        # a second user (no admin of anything), to try what others may do
        self.other_principal = self.vars.get("TONY_HTC_OTHER_PRINCIPAL")
        self.other_keytab = self.vars.get("TONY_HTC_OTHER_KEYTAB")

    def env(self, ccache=None):
        """os.environ for a Kerberos client of this cluster (kinit, curl, tony)."""
        return dict(os.environ, KRB5_CONFIG=self.krb5_conf, KRB5CCNAME=ccache or self.ccache,
                    HADOOP_CONF_DIR=self.conf_dir)

    def kinit(self, *options, ccache=None):
        """Logs the test user in from its keytab (DIR/kinit); options go to
        kinit, e.g. "-l", "5s"."""
        subprocess.run([self.kinit_script, *options], check=True, timeout=60, env=self.env(ccache),
                       capture_output=True)

    def kinit_other(self, ccache):
        """Logs the cluster's second user in from its keytab into ccache."""
        assert self.other_principal, "this cluster names no second user: restart it (scripts/hadoop-test-cluster)"
        subprocess.run(["kinit", "-kt", self.other_keytab, self.other_principal], check=True, timeout=60,
                       env=self.env(ccache), capture_output=True)

    def curl(self, method, url, body=None, ccache=None, headers=None, negotiate=True):
        """(status, headers dict with lower-case names, body bytes); status 0
        when curl got no answer (its error is in headers['curl-error'])."""
        with tempfile.TemporaryDirectory() as tmp:
            hdr, out = os.path.join(tmp, "h"), os.path.join(tmp, "b")
            cmd = ["curl", "--noproxy", "*", "-sS", "--max-time", "60", "-X", method, "-D", hdr, "-o", out,
                   "-w", "%{http_code}", "--cacert", self.ca_cert]
            if negotiate:
                cmd += ["--negotiate", "-u", ":"]
            for k, v in (headers or {}).items():
                cmd += ["-H", f"{k}: {v}"]
            if body is not None:
                cmd += ["--data-binary", "@-"]
            r = subprocess.run(cmd + [url], input=body or b"", capture_output=True, env=self.env(ccache),
                               timeout=90)
            got = {}
            if os.path.exists(hdr):
                for line in Path(hdr).read_bytes().decode("latin-1").splitlines():
                    k, sep, v = line.partition(":")
                    if sep:
                        got[k.strip().lower()] = v.strip()
            if r.returncode:
                got["curl-error"] = r.stderr.decode(errors="replace").strip()
            data = Path(out).read_bytes() if os.path.exists(out) else b""
            return int(r.stdout or b"0"), got, data

    def _json(self, method, url, body=None, ok=(200,)):
        code, _, data = self.curl(method, url, None if body is None else json.dumps(body).encode(),
                                  headers={"Accept": "application/json", "Content-Type": "application/json"})
        if code not in ok:
            raise AssertionError(f"{method} {url}: {code} {data[:300]!r}")
        return json.loads(data) if data else {}

    # --- ResourceManager REST (Cluster's app, apps, wait_app ... use rm_get)
    def rm_get(self, path):
        return self._json("GET", self.rm + path)

    def submit(self, command, tokens=None, queue="default", name="secure-test", memory=256, **extra):
        """Submits an application whose AM runs `command` over the RM REST API
        (SPNEGO as the test user); tokens: {alias: URL-form token} for its
        credentials. Returns the application id."""
        app_id = self._json("POST", self.rm + "/ws/v1/cluster/apps/new-application")["application-id"]
        spec = {"commands": {"command": command}}
        if tokens:
            spec["credentials"] = {"tokens": {"entry": [{"key": k, "value": v} for k, v in tokens.items()]}}
        sub = {"application-id": app_id, "application-name": name, "application-type": "TEST", "queue": queue,
               "max-app-attempts": 1, "resource": {"memory": memory, "vCores": 1}, "am-container-spec": spec}
        sub.update(extra)
        self._json("POST", self.rm + "/ws/v1/cluster/apps", sub, ok=(202,))
        return app_id

    # --- WebHDFS (HTTPS, SPNEGO)
    def hdfs_url(self, path, op, **params):
        q = "&".join([f"op={op}"] + [f"{k}={v}" for k, v in params.items()])
        return f"{self.nn_web}/webhdfs/v1{path}?{q}"

    def hdfs_status(self, path):
        code, _, data = self.curl("GET", self.hdfs_url(path, "GETFILESTATUS"))
        if code == 404:
            return None
        assert code == 200, (code, data[:300])
        return json.loads(data)["FileStatus"]

    def hdfs_list(self, path):
        code, _, data = self.curl("GET", self.hdfs_url(path, "LISTSTATUS"))
        if code == 404:
            return []
        assert code == 200, (code, data[:300])
        return [s["pathSuffix"] for s in json.loads(data)["FileStatuses"]["FileStatus"]]

    def hdfs_put(self, path, data, permission="644"):
        code, _, body = self.curl("PUT", self.hdfs_url(path, "CREATE", overwrite="true", permission=permission,
                                                       noredirect="true"))
        assert code == 200, (code, body[:300])
        code, _, body = self.curl("PUT", json.loads(body)["Location"], data,
                                  headers={"Content-Type": "application/octet-stream"})
        assert code == 201, (code, body[:300])
        return self.hdfs_status(path)

    def delegation_token(self, renewer=None):
        """An HDFS delegation token from WebHDFS GETDELEGATIONTOKEN, in URL
        form as it comes (kind SWEBHDFS delegation, service the NameNode's
        RPC address); renewer None = the RM's principal."""
        r = self.rm_principal if renewer is None else renewer
        url = self.hdfs_url("/", "GETDELEGATIONTOKEN", **({"renewer": r} if r else {}))
        return self._json("GET", url)["Token"]["urlString"]

    # --- Hadoop's own Java client
    def hadoop_java(self, main_class, *args, ccache=None, timeout=120):
        """Runs a Hadoop class (e.g. org.apache.hadoop.fs.FsShell) with the
        cluster's classpath and configuration, as the ticket cache's user."""
        cp = Path(os.environ.get("TONY_HADOOP_CACHE", Path.home() / ".cache" / "tony-hadoop"))
        jars = (cp / os.environ.get("TONY_HADOOP_VERSION", "3.4.1") / "classpath.txt").read_text().strip()
        cmd = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               f"-Djava.security.krb5.conf={self.krb5_conf}", "-cp", f"{self.conf_dir}:{jars}", main_class, *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=self.env(ccache))


def start_secure(directory, env=None):
    """Starts (or finds running) the secure cluster of directory; env adds
    settings (TONY_HTC_* of scripts/hadoop-test-cluster.md)."""
    subprocess.run([str(SCRIPT), "start", "--secure", str(directory)], check=True, timeout=600,
                   env=dict(os.environ, **(env or {})))
    return SecureCluster(directory)
