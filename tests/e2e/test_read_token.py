"""Reads behind a token (issue 20 #2): every GET of a running job's
coordinator (the job JSON, task logs, events, the web page) needs the job's
read token, which only its owner holds (derived from the secret in the 0700
job dir; the link `tony submit` prints carries it once, then the page keeps
it per origin, in no cookie). The attacker is a real second local user,
tony-attacker, reading over the loopback as anyone on the machine can."""
import http.client
import json
import os
import subprocess
import sys
import urllib.parse

import pytest

from conftest import ATTACKER, read_token, second_user, wait_for
from test_portal import Portal, hist  # noqa: F401 - the fixture
from test_web_ui import browser_tools, run_browser  # noqa: F401 - the fixture

SECRET_OUTPUT = "the-job-private-output-4711"

# Runs as the attacker: GETs each URL (argv[1]: JSON [url, headers]) and
# prints [status, body] for each, following no redirect.
ATTACKER_GET = r"""
import http.client, json, sys, urllib.parse
out = []
for url, headers in json.loads(sys.argv[1]):
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    c.request("GET", u.path + ("?" + u.query if u.query else ""), headers=headers)
    r = c.getresponse()
    out.append([r.status, r.read().decode(errors="replace")])
    c.close()
print(json.dumps(out))
"""


@pytest.fixture(scope="session")
def attacker():
    """The second local user (made when missing), as whom get() reads."""
    second_user()

    def get(*requests):
        p = subprocess.run(["runuser", "-u", ATTACKER, "--", "/usr/bin/python3", "-c", ATTACKER_GET,
                            json.dumps([[u, h] for u, h in requests])],
                           capture_output=True, text=True, timeout=60, cwd="/")
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)
    return get


def get(url, headers=None):
    """(status, headers, body) of one GET, following no redirect."""
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    c.request("GET", u.path + ("?" + u.query if u.query else ""), headers=headers or {})
    r = c.getresponse()
    out = r.status, r.headers, r.read().decode(errors="replace")
    c.close()
    return out


@pytest.fixture
def running(tony, scripts):
    """A job whose worker printed its private output and runs on: (result,
    job dir, coordinator URL)."""
    (scripts / "task.sh").write_text(f'echo {SECRET_OUTPUT}\nexec sleep 120\n')
    r = tony.submit("--detach", "--src_dir", str(scripts), "--executes", "bash task.sh",
                    "--conf", "tony.worker.instances=1", "--conf", "tony.worker.memory=256m")
    assert r.rc == 0, r
    job = r.job_dir()
    url = json.loads((job / "am.json").read_text())["url"]
    stdout = job / "attempts" / "0" / "worker-0" / "stdout"
    try:
        wait_for(lambda: stdout.exists() and SECRET_OUTPUT in stdout.read_text(), 60, what="the worker's output")
        yield r, job, url
    finally:
        tony.run("kill", job.name, timeout=60)


READS = ["/v1/job", "/v1/tasks/worker/0/log", "/v1/tasks/worker/0/log?stream=stdout&offset=0", "/v1/events",
         "/v1/tasks/worker/0/metrics"]
# The page's own files: compiled in, the same for every job, served to anyone.
PAGE = ["/", "/ui/style.css", "/ui/app.js", "/ui/token.js"]


def test_another_user_reads_nothing_without_the_token(tony, running, attacker):
    r, job, url = running
    assert os.stat(job).st_mode & 0o077 == 0, "the job dir is not the owner's alone"
    token = read_token(job)
    answers = attacker(*[(url + path, {}) for path in READS])
    for path, (status, body) in zip(READS, answers):
        assert status == 403, (path, status, body[:300])
        assert SECRET_OUTPUT not in body and job.name not in body, (path, body[:300])
        # what to do, in words
        assert "read token" in body and "tony submit" in body, body
    # the page's files hold nothing of the job
    for path, (status, body) in zip(PAGE, attacker(*[(url + path, {}) for path in PAGE])):
        assert status == 200 and SECRET_OUTPUT not in body and job.name not in body, (path, status)
    # a cookie opens nothing, even with the token in it: browsers send it to every port of the host
    port = urllib.parse.urlsplit(url).port
    for name in (f"tony_token_{port}", "tony_token", "tony_notebook"):
        assert attacker((url + "/v1/job", {"Cookie": f"{name}={token}"}))[0][0] == 403, name
    # a wrong token is no token
    for bad in ("0" * 64, token[:-1], token + "0", "", token.upper()):
        for status, body in attacker((url + "/v1/tasks/worker/0/log", {"X-Tony-Token": bad}),
                                     (url + "/v1/job", {"Authorization": f"Bearer {bad}"}),
                                     (url + "/v1/job", {"Cookie": f"tony_token_{urllib.parse.urlsplit(url).port}={bad}"}),
                                     (url + f"/v1/job?token={bad}", {})):
            assert status == 403 and SECRET_OUTPUT not in body, (bad, status, body[:300])
    # the control secret is not the read token
    secret = (job / "secret").read_text().strip()
    assert attacker((url + "/v1/job", {"X-Tony-Token": secret}))[0][0] == 403
    # the token is what opens it, whoever sends it: the header, or Bearer
    answers = attacker(*[(url + path, {"X-Tony-Token": token}) for path in READS])
    for path, (status, body) in zip(READS, answers):
        assert status == 200, (path, status, body[:300])
    status, body = attacker((url + "/v1/tasks/worker/0/log", {"Authorization": f"Bearer {token}"}))[0]
    assert status == 200 and SECRET_OUTPUT in json.loads(body)["data"], body[:300]


def test_the_printed_link_moves_the_token_to_the_fragment(tony, running):
    """The link tony prints sends the browser on to the page with the token
    in the URL's fragment (which no browser sends to any server): no cookie
    is set, and none is taken."""
    r, job, url = running
    token = read_token(job)
    port = urllib.parse.urlsplit(url).port
    # submit and status print the page's link with the token, once
    assert f"watch it at {url}/?token={token} " in r.out, r
    st = tony.run("status", job.name, check_rc=0)
    assert f"web page: {url}/?token={token}\n" in st.out and "RUNNING" in st.out, st
    status, headers, _ = get(f"{url}/?token={token}")
    assert status == 302 and headers["Location"] == f"./#token={token}", (status, headers)
    assert "Set-Cookie" not in headers and headers["Referrer-Policy"] == "no-referrer", headers
    # other parameters stay
    status, headers, _ = get(f"{url}/ui/app.js?v=2&token={token}")
    assert status == 302 and headers["Location"] == f"./app.js?v=2#token={token}", headers
    # a wrong token on the page's link is refused, not passed on
    assert get(f"{url}/?token={'0' * 64}")[0] == 403
    # no cookie opens the API, not even one holding the token
    for jar in ({"Cookie": f"other=1; tony_token_{port}={token}"}, {"Cookie": f"tony_token={token}"}):
        assert get(url + "/v1/job", jar)[0] == 403, jar
    # the header does, as the page's script sends it
    for path in READS:
        assert get(url + path, {"X-Tony-Token": token})[0] == 200, path
    # an API read may carry the token in its query as is (what YARN's proxy passes on)
    status, _, body = get(f"{url}/v1/job?metrics=0&token={token}")
    assert status == 200 and json.loads(body)["app_id"] == job.name
    status, _, body = get(f"{url}/v1/tasks/worker/0/log?stream=stdout&token={token}")
    assert status == 200 and SECRET_OUTPUT in json.loads(body)["data"], body[:300]
    assert get(f"{url}/v1/tasks/worker/0/stacks?attempt=0&token={token}")[0] == 404  # none dumped: not a 400


def test_owner_commands_read_with_the_token(tony, running):
    """tony's own reads of the coordinator carry the token: status shows the
    live job (not the status.json it falls back on when the coordinator does
    not answer); logs keeps showing the output."""
    r, job, url = running
    st = tony.run("status", job.name, check_rc=0)
    assert "coordinator not running" not in st.out and "web page:" in st.out, st
    logs = tony.run("logs", job.name, check_rc=0)
    assert SECRET_OUTPUT in logs.out, logs


def test_the_page_opens_from_the_printed_link(tony, running, browser_tools):  # noqa: F811
    """Chromium opens the link `tony submit` printed: the page renders the
    job from the token it keeps for its origin (no cookie; the address
    without it); a browser tab without it is refused."""
    r, job, url = running
    link = next(w for w in r.out.split() if w.startswith(url + "/?token="))
    out = run_browser(browser_tools, mode="token", url=link, app_id=job.name, expect=SECRET_OUTPUT)
    assert out["address"] == url + "/" and "read token" in out["refused"], out


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_portal_takes_a_token_on_every_address(hist, attacker, host):  # noqa: F811
    """Any portal serves every local user (loopback included): it makes up a
    token and prints it in its link; another user without it reads
    nothing (issue 33, item 4)."""
    p = Portal(hist["tony"], "--host", host)
    try:
        base, token = p.url, p.token
        local = base.replace(urllib.parse.urlsplit(base).hostname, "127.0.0.1")
        hdr = {"Host": urllib.parse.urlsplit(base).netloc}
        for status, body in attacker((local + "v1/jobs", hdr), (local + f"v1/jobs/{hist['ok']}", hdr),
                                     (local + f"v1/jobs/{hist['ok']}/am.log", hdr)):
            assert status == 401 and hist["ok"] not in body and "token" in body, (status, body[:300])
        status, body = attacker((local + "v1/jobs", {**hdr, "X-Tony-Token": token}))[0]
        assert status == 200 and hist["ok"] in body
    finally:
        assert p.stop()[0] == 0


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
