#!/usr/bin/env python3
"""Checks a running hadoop-test-cluster the way a client sees it (RM REST,
WebHDFS) and runs one application through the RM REST API. Called by
`scripts/hadoop-test-cluster selftest DIR`; arguments come from the script.

usage: selftest.py RM_WEB NN_WEB USER NODEMANAGERS GPUS_PER_NM LABEL AM_COMMAND [NM_WEB,...]

With HTC_SECURE=1 and HTC_DIR (a secure cluster) every request goes through
curl with SPNEGO (--negotiate) and the cluster's CA, after DIR/kinit into a
ticket cache of the selftest's own; first it checks Kerberos itself: kinit,
401 without a ticket, a WebHDFS delegation token, and the application is
submitted with that token, which its AM uses to read HDFS.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import hadoop_token

RM, NN, USER, NMS, GPUS, LABEL, AM_CMD = sys.argv[1:8]
NM_WEB = [w for w in (sys.argv[8] if len(sys.argv) > 8 else "").split(",") if w]
NMS, GPUS = int(NMS), int(GPUS)
SECURE = os.environ.get("HTC_SECURE") == "1"
HTC_DIR = os.environ.get("HTC_DIR", "")
failures = []
# Everything is on localhost: never go through an http_proxy from the environment.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
# The selftest's own ticket caches: one it logs into, one that stays empty.
TMP = tempfile.mkdtemp(prefix="htc-selftest-")
CCACHE, NO_TICKET = "FILE:%s/krb5cc" % TMP, "FILE:%s/none" % TMP
# user.name= is how a simple cluster knows the caller; Kerberos ignores it.
AS_USER = "" if SECURE else "&user.name=" + USER


def curl(method, url, body=None, ctype=None, accept="application/json", ccache=None):
    """(status, headers, body) of one request with SPNEGO, through curl."""
    hdr, out = os.path.join(TMP, "headers"), os.path.join(TMP, "body")
    cmd = ["curl", "--noproxy", "*", "-sS", "--max-time", "30", "-X", method, "-D", hdr, "-o", out,
           "-w", "%{http_code}", "--negotiate", "-u", ":", "--cacert", os.path.join(HTC_DIR, "ssl/ca.pem"),
           "-H", "Accept: " + accept]
    if ctype:
        cmd += ["-H", "Content-Type: " + ctype]
    if body is not None:
        cmd += ["--data-binary", "@-"]
    env = dict(os.environ, KRB5_CONFIG=os.path.join(HTC_DIR, "krb5.conf"), KRB5CCNAME=ccache or CCACHE)
    r = subprocess.run(cmd + [url], input=body or b"", capture_output=True, env=env, timeout=60)
    headers = {}
    if os.path.exists(hdr):
        for line in open(hdr, "rb").read().decode("latin-1").splitlines():
            k, sep, v = line.partition(":")
            if sep:
                headers[k.strip()] = v.strip()
    data = open(out, "rb").read() if os.path.exists(out) else b""
    for f in (hdr, out):
        if os.path.exists(f):
            os.unlink(f)
    return int(r.stdout or b"0"), headers, data


def http(method, url, body=None, ctype=None, accept="application/json"):
    if SECURE:
        return curl(method, url, body, ctype, accept)
    req = urllib.request.Request(url, data=body, method=method)
    if ctype:
        req.add_header("Content-Type", ctype)
    req.add_header("Accept", accept)
    try:
        with OPENER.open(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def get(url):
    code, _, body = http("GET", url)
    if code != 200:
        raise RuntimeError("GET %s -> %d %s" % (url, code, body[:300]))
    return json.loads(body)


def aslist(x):
    # Jersey 1 renders a one-element list as a bare object.
    return x if isinstance(x, list) else [x]


def check(name, ok, detail=""):
    print("selftest: %-5s %s%s" % ("ok" if ok else "FAIL", name, (": " + detail) if detail else ""))
    if not ok:
        failures.append(name)


hdfs_token = None
if SECURE:
    realm = os.environ.get("HTC_REALM", "EXAMPLE.COM")
    env = dict(os.environ, KRB5CCNAME=CCACHE, KRB5_CONFIG=os.path.join(HTC_DIR, "krb5.conf"))
    r = subprocess.run([os.path.join(HTC_DIR, "kinit")], capture_output=True, text=True, env=env)
    k = subprocess.run(["klist"], capture_output=True, text=True, env=env)
    who = [line for line in k.stdout.splitlines() if line.startswith("Default principal:")]
    check("kinit", r.returncode == 0 and who == ["Default principal: %s@%s" % (USER, realm)],
          (r.stderr.strip() or (who or [k.stderr.strip()])[0])[:200])
    for name, url in (("RM REST", RM + "/ws/v1/cluster/info"), ("WebHDFS LISTSTATUS", NN + "/webhdfs/v1/?op=LISTSTATUS")):
        without = curl("GET", url, ccache=NO_TICKET)[0]
        code = curl("GET", url)[0]
        check("%s: 401 without a ticket, 200 with" % name, without == 401 and code == 200,
              "%d without, %d with" % (without, code))
    code, _, body = curl("GET", NN + "/webhdfs/v1/?op=GETDELEGATIONTOKEN&renewer=rm/localhost@" + realm)
    try:
        hdfs_token = json.loads(body)["Token"]["urlString"]
        t = hadoop_token.decode(hdfs_token)
        detail = "%s, renewer %s" % (t["kind"], hadoop_token.identifier(t)["renewer"])
    except (ValueError, KeyError) as e:
        detail = "%d %r (%s)" % (code, body[:200], e)
    check("WebHDFS GETDELEGATIONTOKEN", hdfs_token is not None, detail)

info = get(RM + "/ws/v1/cluster/info")["clusterInfo"]
check("RM /ws/v1/cluster/info", info["state"] == "STARTED",
      "%s, Hadoop %s" % (info["state"], info["hadoopVersion"]))

nodes = aslist(get(RM + "/ws/v1/cluster/nodes")["nodes"]["node"])
running = [n for n in nodes if n["state"] == "RUNNING"]


def node_gpus(n):
    """A node's yarn.io/gpu: its totalResource (Hadoop 3.3+), else what is
    used plus what is available (3.2 reports no total)."""
    def gpus(res):
        return sum(int(ri["value"]) for ri in aslist(res["resourceInformations"]["resourceInformation"])
                   if ri["name"] == "yarn.io/gpu")
    if "totalResource" in n:
        return gpus(n["totalResource"])
    return gpus(n["usedResource"]) + gpus(n["availableResource"])


gpu_ok = all(node_gpus(n) == GPUS for n in running)
check("RM nodes", len(running) == NMS and gpu_ok,
      "%d RUNNING, yarn.io/gpu=%d each: %s" % (len(running), GPUS, gpu_ok))

sched = get(RM + "/ws/v1/cluster/scheduler")["scheduler"]["schedulerInfo"]
queues = sorted(q["queueName"] for q in aslist(sched["queues"]["queue"]))
check("RM scheduler queues", queues == ["default", "ml"], "%s %s" % (sched["type"], queues))

if LABEL != "-":
    labels = get(RM + "/ws/v1/cluster/get-node-labels")
    names = [l["name"] for l in aslist(labels.get("nodeLabelInfo", []))]
    labelled = [n["id"] for n in nodes if LABEL in aslist(n.get("nodeLabels", []))]
    check("node label", LABEL in names and len(labelled) >= 1,
          "%s on %s" % (names, labelled))

# The NodeManagers with a web UI (their own JVMs): node REST answers, and the
# RM knows the address (containers get it as NM_HTTP_PORT).
for w in NM_WEB:
    try:
        ni = get("http://%s/ws/v1/node/info" % w)["nodeInfo"]
        ok, detail = ni.get("nodeHealthy") is True, "healthy=%s, %s" % (ni.get("nodeHealthy"), ni.get("nodeManagerVersion"))
    except Exception as e:  # noqa: BLE001 - any failure is the finding
        ok, detail = False, str(e)[:300]
    known = [n["id"] for n in nodes if n.get("nodeHTTPAddress") == w]
    check("NM web %s /ws/v1/node/info" % w, ok and len(known) == 1, "%s; RM node %s" % (detail, known))

# WebHDFS: mkdir, two-step create, read back.
path = "/tmp/htc-selftest-%d" % int(time.time() * 1000)
code, _, body = http("PUT", "%s/webhdfs/v1%s?op=MKDIRS%s" % (NN, path, AS_USER))
check("WebHDFS MKDIRS", code == 200 and b"true" in body, body.decode()[:100])
code, hdrs, body = http("PUT", "%s/webhdfs/v1%s/f?op=CREATE&overwrite=true&noredirect=true%s"
                        % (NN, path, AS_USER))
loc = json.loads(body).get("Location") if code == 200 else None
code2 = http("PUT", loc, b"hello\n", "application/octet-stream")[0] if loc else code
# OPEN redirects to the DataNode: read the Location it names.
code3, hdrs, body = http("GET", "%s/webhdfs/v1%s/f?op=OPEN&noredirect=true%s" % (NN, path, AS_USER))
loc = json.loads(body).get("Location") if code3 == 200 else None
data = http("GET", loc, accept="*/*")[2] if code2 == 201 and loc else b""
check("WebHDFS CREATE+OPEN", code2 == 201 and data == b"hello\n", "create %s, read %r" % (code2, data))
http("DELETE", "%s/webhdfs/v1%s?op=DELETE&recursive=true%s" % (NN, path, AS_USER))

# One application through the RM REST API; its AM asks for a yarn.io/gpu
# container on the labelled node and runs `sleep 1` there.
t0 = time.time()
code, _, body = http("POST", "%s/ws/v1/cluster/apps/new-application?%s" % (RM, AS_USER[1:]))
app = json.loads(body)["application-id"]
sub = {
    "application-id": app,
    "application-name": "hadoop-test-cluster-selftest",
    "application-type": "SELFTEST",
    "queue": "ml",
    "max-app-attempts": 1,
    "resource": {"memory": 512, "vCores": 1},
    "am-container-spec": {
        "commands": {"command": AM_CMD + " 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"},
        "environment": {"entry": [{"key": "HTC_SELFTEST", "value": "1"}]},
    },
}
if hdfs_token:
    # The RM renews what it is given at once and refuses the application if
    # it cannot: WebHDFS's token as it comes (kind SWEBHDFS, service the
    # NameNode's RPC address) it cannot, so it goes as an HDFS_DELEGATION_TOKEN.
    sub["am-container-spec"]["credentials"] = {"tokens": {"entry": [
        {"key": "hdfs", "value": hadoop_token.with_kind(hdfs_token, hadoop_token.HDFS_KIND)}]}}
code, hdrs, body = http("POST", "%s/ws/v1/cluster/apps?%s" % (RM, AS_USER[1:]),
                        json.dumps(sub).encode(), "application/json")
check("RM REST submit", code == 202, "%s %d" % (app, code))
state = final = diag = ""
deadline = time.time() + 180
while time.time() < deadline:
    a = get("%s/ws/v1/cluster/apps/%s" % (RM, app))["app"]
    state, final, diag = a["state"], a["finalStatus"], a.get("diagnostics", "")
    diag += "" if a.get("user") == USER else " (user %s, not %s)" % (a.get("user"), USER)
    if state in ("FINISHED", "FAILED", "KILLED"):
        break
    time.sleep(0.5)
check("application", state == "FINISHED" and final == "SUCCEEDED" and a.get("user") == USER,
      "%s %s/%s in %.1f s %s" % (app, state, final, time.time() - t0, diag[:300]))

# Its container ran on the labelled node, which is the one with a web UI when
# there is one: its stdout through the NodeManager's REST.
if NM_WEB and LABEL != "-":
    labelled = [n.get("nodeHTTPAddress") for n in nodes if LABEL in aslist(n.get("nodeLabels", []))]
    cid = "container_%s_01_000002" % app[len("application_"):]
    w = labelled[0] if labelled else NM_WEB[-1]
    # text/plain only: asked for JSON, the NodeManager answers 503.
    code, _, body = http("GET", "http://%s/ws/v1/node/containerlogs/%s/stdout" % (w, cid), accept="text/plain")
    check("NM web containerlogs", code == 200 and b"htc-selftest-output" in body,
          "%s on %s: %d %r" % (cid, w, code, body[:120]))

print("selftest: %d failed" % len(failures))
sys.exit(1 if failures else 0)
