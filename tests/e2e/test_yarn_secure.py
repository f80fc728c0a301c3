"""tony on the kerberized test cluster (scripts/hadoop-test-cluster start
--secure: a KDC, SPNEGO on the RM, NodeManager and NameNode web servers,
WebHDFS over HTTPS only, HDFS delegation tokens renewed by the RM). The
client logs in from `kinit`'s ticket cache or TonY's keytab keys, gets the
job an HDFS delegation token, and every container gets the job's tokens: the
coordinator copies history with them and the user's code reads and writes
HDFS with them alone, as a TensorFlow job would through libhdfs (here with
Hadoop's own FsShell). Bad logins fail before anything is staged."""
import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import REPO, TONY, OwnerReads, wait_for
from test_portal import Portal

pytestmark = [pytest.mark.hadoop, pytest.mark.secure]

SMALL = ["--conf", "tony.worker.memory=256m", "--conf", "tony.ps.memory=256m", "--conf", "tony.chief.memory=256m",
         "--conf", "tony.am.memory=256m"]

# worker:0 writes and reads an HDFS file with Hadoop's own client, holding no
# Kerberos ticket: only the tokens YARN put in its container's token file.
HDFS_RW = """#!/bin/sh
set -e
export KRB5CCNAME=FILE:/nonexistent/no-ticket
fs() {
  java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.security.krb5.conf="$HTC_KRB5" \\
    -cp "$HTC_CP" org.apache.hadoop.fs.FsShell "$@"
}
[ -n "$SLEEP_FIRST" ] && sleep "$SLEEP_FIRST"
if [ -n "$NOT_BEFORE" ]; then
  while [ "$(date +%s)" -lt "$NOT_BEFORE" ]; do sleep 1; done
fi
# The coordinator's keytab must never reach a task.
echo "keytab in the task's token file: $(grep -c -a tony.keytab "$HADOOP_TOKEN_FILE_LOCATION" || true)"
echo "written by $JOB_NAME:$TASK_INDEX with the job's tokens" | fs -put - "$HTC_OUT/$JOB_NAME-$TASK_INDEX.txt"
fs -cat "$HTC_OUT/$JOB_NAME-$TASK_INDEX.txt"
"""


class Secure:
    """The tony fixture pointed at the secure cluster, with its own ticket cache."""

    def __init__(self, tony, cluster, tmp_path):
        self.tony, self.cluster, self.tmp = tony, cluster, tmp_path
        self.ccache = f"FILE:{tmp_path / 'krb5cc'}"
        tony.env.update(HADOOP_CONF_DIR=cluster.conf_dir, KRB5_CONFIG=cluster.krb5_conf, KRB5CCNAME=self.ccache,
                        SSL_CERT_FILE=cluster.ca_cert)

    def kinit(self, *options):
        self.cluster.kinit(*options, ccache=self.ccache)

    def submit(self, *args, timeout=240):
        # The coordinator reaches WebHDFS over HTTPS too: the cluster's CA.
        return self.tony.run("submit", "--backend", "yarn", *SMALL,
                             "--conf", f"tony.containers.envs=SSL_CERT_FILE={self.cluster.ca_cert}", *args,
                             timeout=timeout)

    def apps(self):
        apps = (self.cluster.rm_get("/ws/v1/cluster/apps").get("apps") or {}).get("app") or []
        return {a["id"] for a in apps}

    def staged(self):
        return set(self.cluster.hdfs_list(f"/user/{self.cluster.user}/.tony"))


@pytest.fixture
def secure(tony, secure_hadoop, tmp_path):
    secure_hadoop.kinit()  # the helpers' own ticket (cluster DIR/krb5cc)
    s = Secure(tony, secure_hadoop, tmp_path)
    yield s
    # Under ASan/UBSan the coordinator's and executors' reports land in their
    # container logs: fail on any.
    jobs = tony.home / "jobs"
    for app_id in [d.name for d in jobs.iterdir()] if jobs.exists() else []:
        for d in secure_hadoop.container_logs(app_id):
            for log in list(d.glob("am.std*")) + list(d.glob("executor.*")):
                text = log.read_text(errors="replace")
                for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
                    assert marker not in text, f"{marker} in {log}:\n{text[-3000:]}"


def hadoop_classpath(cluster):
    cache = Path(os.environ.get("TONY_HADOOP_CACHE", Path.home() / ".cache" / "tony-hadoop"))
    jars = (cache / os.environ.get("TONY_HADOOP_VERSION", "3.4.1") / "classpath.txt").read_text().strip()
    return f"{cluster.conf_dir}:{jars}"


def hdfs_job_args(secure, tmp_path, sleep_first=0, not_before=0):
    src = tmp_path / "src"
    src.mkdir(parents=True, exist_ok=True)
    (src / "hdfs_rw.sh").write_text(HDFS_RW)
    (src / "hdfs_rw.sh").chmod(0o755)
    out = f"/user/{secure.cluster.user}/tony-secure-{uuid.uuid4().hex[:8]}"
    cmd = 'case "$JOB_NAME:$TASK_INDEX" in worker:0) sh hdfs_rw.sh ;; ps:*) sleep 300 ;; *) echo "$JOB_NAME ok" ;; esac'
    args = ["--src_dir", str(src), "--executes", cmd,
            "--shell_env", f"HTC_CP={hadoop_classpath(secure.cluster)}", "--shell_env", f"HTC_OUT={out}",
            "--shell_env", f"HTC_KRB5={secure.cluster.krb5_conf}", "--shell_env", f"SLEEP_FIRST={sleep_first}",
            "--shell_env", f"NOT_BEFORE={not_before}",
            "--conf", "tony.worker.memory=768m"]
    return args, out


def test_a_kinit_user_runs_a_multi_role_job_whose_task_uses_hdfs_with_the_jobs_tokens(secure, tmp_path):
    secure.kinit()
    args, out = hdfs_job_args(secure, tmp_path)
    history = f"/user/{secure.cluster.user}/tony-history-{uuid.uuid4().hex[:8]}"
    r = secure.submit(*args, "--conf", "tony.ps.instances=1", "--conf", "tony.chief.instances=1",
                      "--conf", "tony.worker.instances=2", "--conf", f"tony.history.location={history}")
    assert r.rc == 0, r
    app_id = r.job_dir().name
    stdout = secure.tony.run("logs", app_id, "--task", "worker:0")
    assert stdout.rc == 0, stdout
    assert "written by worker:0 with the job's tokens" in stdout.out
    st = secure.cluster.hdfs_status(f"{out}/worker-0.txt")
    assert st and st["owner"] == secure.cluster.user, st
    # verbs on the secure cluster: status, history from HDFS (SPNEGO, HTTPS)
    s = secure.tony.run("status", app_id, "--json")
    assert s.rc == 0, s
    assert json.loads(s.out)["final_status"] == "SUCCEEDED"
    h = secure.tony.run("history", "--location", f"hdfs://{history}")  # hdfs:///user/...: fs.defaultFS
    assert h.rc == 0, h
    assert app_id in h.out
    lst = secure.tony.run("list")
    assert lst.rc == 0 and app_id in lst.out and "SUCCEEDED" in lst.out, lst
    # the portal over that HDFS history, with the user's ticket (SPNEGO, HTTPS)
    portal = Portal(secure.tony, "--location", f"hdfs://{history}")
    try:
        code, d = portal.get("v1/jobs")
        assert code == 200 and d["problems"] == [], d
        (j,) = [j for j in d["jobs"] if j["app_id"] == app_id]
        assert j["status"] == "SUCCEEDED", j
        code, detail = portal.get(f"v1/jobs/{app_id}")
        assert code == 200 and sorted(t["task"] for t in detail["tasks"]) == ["chief:0", "ps:0", "worker:0",
                                                                              "worker:1"], detail
    finally:
        rc, err = portal.stop()
    assert rc == 0, err
    # the job's staging dir is gone with it
    assert app_id not in secure.staged()


def test_a_keytab_instead_of_a_ticket_cache(secure, tmp_path):
    # no kinit: the cache named by KRB5CCNAME is empty
    r = secure.submit("--executes", "echo from-a-keytab-job", "--conf", "tony.worker.instances=1",
                      "--conf", f"tony.keytab.user={secure.cluster.principal}",
                      "--conf", f"tony.keytab.location={secure.cluster.keytab}")
    assert r.rc == 0, r
    assert "SUCCEEDED" in r.out


def test_kill_on_the_secure_cluster(secure):
    secure.kinit()
    r = secure.submit("--detach", "--executes", "sleep 300", "--conf", "tony.worker.instances=1")
    assert r.rc == 0, r
    app_id = r.job_dir().name
    k = secure.tony.run("kill", app_id, timeout=120)
    assert k.rc == 0, k
    app = secure.cluster.wait_app(app_id, timeout=120)
    assert app["state"] in ("KILLED", "FINISHED") and app["finalStatus"] in ("KILLED", "FAILED"), app


def test_a_job_outlives_its_tokens_renew_interval(secure, tmp_path):
    """The cluster's tokens must be renewed every TONY_HTC_TOKEN_RENEW_INTERVAL_MS
    (20 s in make test-secure); the RM renews the job's. The task uses HDFS
    only after 30 s, and the coordinator copies history at the end."""
    interval = int(secure.cluster.vars.get("TONY_HTC_TOKEN_RENEW_INTERVAL_MS") or 0)
    if not interval or interval > 25000:
        pytest.skip("this cluster's tokens live long (start it with TONY_HTC_TOKEN_RENEW_INTERVAL_MS=20000)")
    secure.kinit()
    args, out = hdfs_job_args(secure, tmp_path, sleep_first=interval // 1000 + 10)
    r = secure.submit(*args, "--conf", "tony.worker.instances=1")
    assert r.rc == 0, r
    assert secure.cluster.hdfs_status(f"{out}/worker-0.txt") is not None


def test_a_keytab_job_uses_hdfs_past_its_tokens_max_lifetime_and_a_kinit_job_cannot(secure, tmp_path):
    """The cluster's tokens live at most TONY_HTC_TOKEN_MAX_LIFETIME_MS (90 s
    in make test-secure); the RM renews the job's only up to then. Two jobs
    whose task first touches HDFS 10 s past that: submitted with a keytab,
    the coordinator has fetched a fresh token meanwhile (from the keytab the
    client handed it) and the executor has rewritten the task's token file,
    so the task's new FsShell process reads and writes HDFS; submitted after
    kinit, there is no keytab and HDFS refuses the expired token, as
    docs/kerberos.md says."""
    lifetime = int(secure.cluster.vars.get("TONY_HTC_TOKEN_MAX_LIFETIME_MS") or 0)
    if not lifetime or lifetime > 120000:
        pytest.skip("this cluster's tokens live long (start it with TONY_HTC_TOKEN_MAX_LIFETIME_MS=90000)")
    secure.kinit()
    not_before = int(time.time() + lifetime / 1000 + 10)
    envs = f"tony.containers.envs=SSL_CERT_FILE={secure.cluster.ca_cert},KRB5_CONFIG={secure.cluster.krb5_conf}"
    keytab = ["--conf", f"tony.keytab.user={secure.cluster.principal}",
              "--conf", f"tony.keytab.location={secure.cluster.keytab}"]
    # the keytab job's history, written at its end with the refreshed token
    history = f"/user/{secure.cluster.user}/tony-history-{uuid.uuid4().hex[:8]}"
    keytab += ["--conf", f"tony.history.location={history}"]
    apps = {}
    for name, extra in (("keytab", keytab), ("kinit", [])):
        args, out = hdfs_job_args(secure, tmp_path / name, not_before=not_before)
        r = secure.submit("--detach", *args, "--conf", "tony.worker.instances=1", "--conf", envs, *extra,
                          "--conf", f"tony.application.name=lifetime-{name}")
        assert r.rc == 0, r
        apps[name] = (r.job_dir().name, out)
    for name, (app_id, out) in apps.items():
        app = secure.cluster.wait_app(app_id, timeout=lifetime / 1000 + 180)
        # every file of the job's container log dirs, by name (am.stderr is
        # the coordinator's log; executor.log, stdout, stderr the task's)
        texts = {}
        for d in secure.cluster.container_logs(app_id):
            for f in d.iterdir():
                if f.is_file():
                    texts[f.name] = texts.get(f.name, "") + f.read_text(errors="replace")
        if name == "keytab":
            assert app["finalStatus"] == "SUCCEEDED", (app, texts.get("am.stderr", "")[-3000:])
            assert "written by worker:0 with the job's tokens" in texts["stdout"], texts
            assert "keytab in the task's token file: 0" in texts["stdout"], texts
            assert secure.cluster.hdfs_status(f"{out}/worker-0.txt") is not None
            assert "a new HDFS delegation token" in texts["am.stderr"], texts["am.stderr"][-3000:]
            # the coordinator's IPC as the cluster's hadoop.rpc.protection asks (privacy in make test-secure)
            protection = secure.cluster.vars.get("TONY_HTC_RPC_PROTECTION") or "authentication"
            assert f"Hadoop IPC protection: {protection}" in texts["am.stderr"], texts["am.stderr"][-3000:]
            assert "installed the job's refreshed credentials" in texts["executor.log"], texts["executor.log"]
            assert "HDFS calls use the job's refreshed delegation token" in texts["am.stderr"]
            h = secure.tony.run("history", "--location", f"hdfs://{history}")
            assert h.rc == 0 and app_id in h.out and "SUCCEEDED" in h.out, h
        else:
            assert app["finalStatus"] == "FAILED", (app, texts)
            assert "expired" in texts.get("stderr", "") or "can't be found in cache" in texts.get("stderr", ""), texts
            assert secure.cluster.hdfs_status(f"{out}/worker-0.txt") is None


@pytest.mark.parametrize("case", ["no ticket", "expired ticket", "wrong keytab", "unreachable KDC",
                                  "unreachable other namenode"])
def test_bad_logins_fail_clearly_and_leave_nothing(secure, tmp_path, case):
    args = ["--executes", "true", "--conf", "tony.worker.instances=1"]
    if case == "expired ticket":
        secure.kinit("-l", "5s")
        time.sleep(7)
        want = ["expired", "kinit"]
    elif case == "wrong keytab":
        other = Path(secure.cluster.keytab).parent / "HTTP.keytab"  # another principal's keys
        args += ["--conf", f"tony.keytab.user={secure.cluster.principal}", "--conf", f"tony.keytab.location={other}"]
        want = ["keytab", "tony.keytab.location"]
    elif case == "unreachable KDC":
        conf = tmp_path / "krb5-dead-kdc.conf"
        text = Path(secure.cluster.krb5_conf).read_text()
        import re
        conf.write_text(re.sub(r"kdc = [^\n]+", "kdc = tcp/127.0.0.1:1", text))
        secure.tony.env["KRB5_CONFIG"] = str(conf)
        args += ["--conf", f"tony.keytab.user={secure.cluster.principal}",
                 "--conf", f"tony.keytab.location={secure.cluster.keytab}"]
        want = ["KDC"]
    elif case == "unreachable other namenode":
        secure.kinit()
        args += ["--conf", "tony.other.namenodes=hdfs://127.0.0.1:1"]  # TonY's key: tokens for it too
        want = ["tony.other.namenodes", "127.0.0.1"]
    else:
        want = ["no Kerberos ticket", "kinit"]
    apps, staged = secure.apps(), secure.staged()
    r = secure.submit(*args, timeout=120)
    assert r.rc != 0, r
    for w in want:
        assert w in r.err, (w, r)
    assert "Traceback" not in r.err and "Segmentation" not in r.err
    assert secure.apps() == apps, "an application reached the ResourceManager"
    assert secure.staged() == staged, "something was staged in HDFS"


def get(url, timeout=30):
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({}), OwnerReads()).open(url, timeout=timeout) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def test_the_job_pages_log_tail_reads_kerberized_nodemanagers_with_the_keytab(secure, tmp_path):
    """The coordinator reads a running task's output from its NodeManager's
    web page (the job page's log tail), which wants SPNEGO here. Submitted
    with a keytab, the coordinator logs in to the NodeManager and reads it;
    after kinit it has no login, and the answer says what to do."""
    if not [w for w in secure.cluster.vars.get("TONY_HTC_NODE_WEB", "").split(",") if w]:
        pytest.skip("this test cluster has no NodeManager with a web UI")
    flag = tmp_path / "go-on"
    cmd = f"echo tick-1; echo tick-2; while [ ! -e {flag} ]; do sleep 0.2; done"
    envs = f"tony.containers.envs=SSL_CERT_FILE={secure.cluster.ca_cert},KRB5_CONFIG={secure.cluster.krb5_conf}"
    on_web_node = ["--conf", "tony.worker.node-label=gpu", "--conf", "tony.application.node-label=gpu"]
    keytab = ["--conf", f"tony.keytab.user={secure.cluster.principal}",
              "--conf", f"tony.keytab.location={secure.cluster.keytab}"]
    secure.kinit()
    apps = {}
    try:
        for name, extra in (("keytab", keytab), ("kinit", [])):
            r = secure.submit("--detach", "--executes", cmd, "--conf", "tony.worker.instances=1", *on_web_node,
                              "--conf", envs, *extra)
            assert r.rc == 0, r
            apps[name] = r.job_dir().name

        def log_url(app_id):
            def ready():
                s = secure.tony.run("status", app_id, "--json")
                j = json.loads(s.out) if s.rc == 0 else {}
                t = [t for t in j.get("tasks", []) if t["role"] == "worker" and t.get("log_url")]
                return f"{j['url']}/v1/tasks/worker/0/log" if t and j.get("url") else None
            return wait_for(ready, timeout=180, interval=1, what=f"{app_id}'s worker:0 with a log link")

        url = log_url(apps["keytab"])
        # the first read finds the NodeManager wanting Kerberos and starts the login
        d = wait_for(lambda: (lambda c, b: json.loads(b) if c == 200 and "tick-2" in b else None)(*get(url)),
                     timeout=60, interval=1, what="tick-2 through the coordinator")
        assert d["data"] == "tick-1\ntick-2\n", d
        code, body = get(log_url(apps["kinit"]))
        assert code == 502 and "Kerberos" in body and "tony.keytab.user" in body and "tony logs" in body, body
    finally:
        flag.write_text("")
    for app_id in apps.values():
        assert secure.cluster.wait_app(app_id, timeout=120)["finalStatus"] == "SUCCEEDED"
    am = "".join(f.read_text(errors="replace") for d in secure.cluster.container_logs(apps["keytab"])
                 for f in d.glob("am.stderr"))
    assert "logged in to the NodeManager at" in am, am[-3000:]


def test_a_lost_coordinator_is_replaced_on_the_secure_cluster(secure, tmp_path):
    """Coordinator loss (test_yarn_adopt.py) where WebHDFS speaks HTTPS only
    and takes no user.name: each coordinator writes its address to HDFS with
    the job's delegation token, and the executors, holding no Kerberos
    ticket, read it with the token from their container's token file. Both
    tasks come back to the next AM attempt with their processes running."""
    from test_yarn_adopt import am_attempt_log, am_pids
    from test_yarn_inplace import process_of
    secure.kinit()
    go = tmp_path / "go"
    cmd = f'echo "started $$"; while [ ! -e {go} ]; do sleep 0.2; done; echo "done $$"'
    r = secure.submit("--detach", "--executes", cmd, "--conf", "tony.worker.instances=2",
                      "--conf", "tony.am.retry-count=0", "--conf", "tony.task.heartbeat-interval-ms=500")
    assert r.rc == 0, r
    app_id = r.job_dir().name
    cluster = secure.cluster
    try:
        users = wait_for(lambda: (lambda u: u if all(u.values()) else None)(
            {i: process_of(f"worker:{i}", app_id, script=str(go)) for i in (0, 1)}),
            timeout=180, what="both user processes")
        wait_for(lambda: "published this coordinator's address" in am_attempt_log(cluster, app_id, 1), timeout=60,
                 what="the first coordinator's address on HDFS")
        time.sleep(3)  # YARN keeps the containers its RM has seen running
        for pid in am_pids(app_id):
            os.kill(pid, 9)
        # The executors can read the address from HDFS, and come back, before
        # the coordinator's loop logs that its write is done (yarn.c's
        # coordfile_done): both lines are waited for, in either order.
        log = wait_for(lambda: (lambda t: t if "task(s) adopted" in t and "published this coordinator's address" in t
                                else None)(am_attempt_log(cluster, app_id, 2)),
                       timeout=180, what="the second coordinator to publish its address and take the tasks back")
        assert "coordinator restarted, 2 of 2 task(s) adopted in attempt 0" in log, log[-3000:]
        assert all(process_of(f"worker:{i}", app_id, script=str(go)) == users[i] for i in (0, 1)), users
    finally:
        go.touch()
    app = cluster.wait_app(app_id, timeout=180)
    assert app["finalStatus"] == "SUCCEEDED", app
