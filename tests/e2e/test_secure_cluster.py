"""The kerberized test cluster itself (scripts/hadoop-test-cluster start
--secure): what tony's secure client relies on, checked with curl
--negotiate, Hadoop's own Java client and the RM REST API, independently of
tony. The facts these pin down are listed in scripts/hadoop-test-cluster.md
("The secure cluster: verified facts")."""
import json
import time

import pytest

import hadoop as htc

pytestmark = [pytest.mark.hadoop, pytest.mark.secure]


@pytest.fixture(scope="module")
def cluster(secure_hadoop):
    secure_hadoop.kinit()
    return secure_hadoop


def no_ticket(tmp_path):
    return f"FILE:{tmp_path}/no-ticket"


def test_rm_rest_needs_a_ticket(cluster, tmp_path):
    url = cluster.rm + "/ws/v1/cluster/info"
    code, headers, _ = cluster.curl("GET", url, ccache=no_ticket(tmp_path))
    assert code == 401 and headers.get("www-authenticate") == "Negotiate"
    code, headers, body = cluster.curl("GET", url)
    assert code == 200, body[:300]
    assert json.loads(body)["clusterInfo"]["state"] == "STARTED"
    # SPNEGO's answer comes with the signed cookie a client may reuse.
    assert f"u={cluster.user}&p={cluster.principal}&t=kerberos" in headers.get("set-cookie", "")


def test_webhdfs_needs_a_ticket(cluster, tmp_path):
    assert cluster.nn_web.startswith("https://")
    url = cluster.hdfs_url("/", "LISTSTATUS")
    assert cluster.curl("GET", url, ccache=no_ticket(tmp_path))[0] == 401
    # user.name= is no way in under Kerberos.
    assert cluster.curl("GET", url + "&user.name=" + cluster.user, ccache=no_ticket(tmp_path))[0] == 401
    code, _, body = cluster.curl("GET", url)
    assert code == 200, body[:300]
    assert {"tmp", "user"} <= {s["pathSuffix"] for s in json.loads(body)["FileStatuses"]["FileStatus"]}
    assert cluster.hdfs_status(f"/user/{cluster.user}")["owner"] == cluster.user


def test_expired_ticket_is_401(cluster, tmp_path):
    ccache = f"FILE:{tmp_path}/short"
    # kinit refuses lifetimes under about 4 s ("Requested effective lifetime
    # is negative or too short").
    cluster.kinit("-l", "5s", ccache=ccache)
    url = cluster.rm + "/ws/v1/cluster/info"
    assert cluster.curl("GET", url, ccache=ccache)[0] == 200
    time.sleep(6)
    assert cluster.curl("GET", url, ccache=ccache)[0] == 401


def test_delegation_token_works_without_a_ticket(cluster, tmp_path):
    token = cluster.delegation_token()
    t = htc.hadoop_token.decode(token)
    ident = htc.hadoop_token.identifier(t)
    assert t["kind"] == htc.hadoop_token.SWEBHDFS_KIND
    # The service is the NameNode's RPC address, not the HTTPS one it came from.
    assert t["service"] == "127.0.0.1:" + cluster.default_fs.rsplit(":", 1)[1]
    # The RM's principal, mapped by auth_to_local.
    assert (ident["owner"], ident["renewer"]) == (cluster.user, "yarn")

    nobody = no_ticket(tmp_path)
    path = f"/user/{cluster.user}/dt-{int(time.time() * 1000)}"
    code, _, body = cluster.curl("PUT", cluster.hdfs_url(path, "CREATE", delegation=token, noredirect="true"),
                                 ccache=nobody)
    assert code == 200, body[:300]
    location = json.loads(body)["Location"]
    assert "delegation=" in location and location.startswith("https://127.0.0.1:")
    code, _, body = cluster.curl("PUT", location, b"token\n", ccache=nobody,
                                 headers={"Content-Type": "application/octet-stream"})
    assert code == 201, body[:300]
    code, _, body = cluster.curl("GET", cluster.hdfs_url(path, "OPEN", delegation=token, noredirect="true"),
                                 ccache=nobody)
    assert code == 200, body[:300]
    assert cluster.curl("GET", json.loads(body)["Location"], ccache=nobody)[2] == b"token\n"
    code, _, body = cluster.curl("GET", cluster.hdfs_url(path, "GETFILESTATUS", delegation=token), ccache=nobody)
    assert code == 200 and json.loads(body)["FileStatus"]["owner"] == cluster.user

    # A token whose password is wrong, or one cancelled: 403.
    bad = dict(t, password=bytes(len(t["password"])))
    code, _, body = cluster.curl("GET", cluster.hdfs_url("/", "LISTSTATUS", delegation=htc.hadoop_token.encode(bad)),
                                 ccache=nobody)
    assert code == 403 and b"InvalidToken" in body
    mine = cluster.delegation_token(renewer="")
    assert htc.hadoop_token.identifier(htc.hadoop_token.decode(mine))["renewer"] == cluster.user
    assert cluster.curl("PUT", cluster.hdfs_url("/", "CANCELDELEGATIONTOKEN", token=mine))[0] == 200
    code, _, body = cluster.curl("GET", cluster.hdfs_url("/", "LISTSTATUS", delegation=mine), ccache=nobody)
    assert code == 403 and b"can't be found in cache" in body


def wait_started(cluster, app_id, timeout=60):
    """The application once the RM has launched its AM or given it up."""
    end = time.time() + timeout
    while time.time() < end:
        a = cluster.app(app_id)
        if a["state"] in ("RUNNING", "FINISHED", "FAILED", "KILLED") or "exited with" in a.get("diagnostics", ""):
            return a
        time.sleep(0.3)
    raise AssertionError(f"{app_id} not launched after {timeout}s: {cluster.app(app_id)}")


def test_rm_renews_the_token_it_is_given_only_as_hdfs_kind(cluster):
    """The RM renews every token of a submission at once and fails the
    application when it cannot: WebHDFS's token as it comes it cannot (it
    would renew a SWEBHDFS token over HTTPS at the NameNode's RPC port)."""
    as_is = cluster.submit("sleep 1", tokens={"hdfs": cluster.delegation_token()})
    a = cluster.wait_app(as_is, timeout=60)
    assert a["state"] == "FAILED" and "Failed to renew token: Kind: SWEBHDFS delegation" in a["diagnostics"]

    hdfs_kind = htc.hadoop_token.with_kind(cluster.delegation_token())
    app_id = cluster.submit("sleep 1", tokens={"hdfs": hdfs_kind})
    a = wait_started(cluster, app_id)
    assert "renew" not in a["diagnostics"], a
    assert a["user"] == cluster.user

    # A renewer that is not the RM's user: refused the same way.
    wrong = htc.hadoop_token.with_kind(cluster.delegation_token(renewer="rm"))
    a = cluster.wait_app(cluster.submit("sleep 1", tokens={"hdfs": wrong}), timeout=60)
    assert a["state"] == "FAILED" and "Failed to renew token" in a["diagnostics"]


def test_rm_rest_identity_is_the_ticket(cluster):
    """Under Kerberos the RM takes the user from SPNEGO: ?user.name= is ignored."""
    app_id = cluster._json("POST", cluster.rm + "/ws/v1/cluster/apps/new-application?user.name=hdfs")["application-id"]
    sub = {"application-id": app_id, "application-name": "user.name", "application-type": "TEST",
           "queue": "default", "max-app-attempts": 1, "resource": {"memory": 256, "vCores": 1},
           "am-container-spec": {"commands": {"command": "sleep 1"}}}
    cluster._json("POST", cluster.rm + "/ws/v1/cluster/apps?user.name=hdfs", sub, ok=(202,))
    assert cluster.app(app_id)["user"] == cluster.user
    cluster.wait_app(app_id, timeout=60)


def test_hadoop_java_client_uses_the_ticket(cluster, tmp_path):
    ok = cluster.hadoop_java("org.apache.hadoop.fs.FsShell", "-ls", "/")
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert " /tmp" in ok.stdout and " /user" in ok.stdout
    denied = cluster.hadoop_java("org.apache.hadoop.fs.FsShell", "-ls", "/", ccache=no_ticket(tmp_path))
    assert denied.returncode != 0
    assert "Client cannot authenticate via:[TOKEN, KERBEROS]" in denied.stderr, denied.stderr[-2000:]
