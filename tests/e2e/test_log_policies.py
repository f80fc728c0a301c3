"""Log policies (tony.application.log-policies, issue 12 item 5) on the
local backend with real executors scanning their tasks' output: the
default `fail:CUDA out of memory` stops retries, an empty value turns the
defaults off, a bad regular expression is refused at submit, and an
`exclude-node` match on this machine's only node is shown as not
excluded."""
import json

WORKER = ["--conf", "tony.worker.instances=1", "--conf", "tony.worker.memory=256m"]
OOM = ('echo "loading the model"; '
       'python3 -c \'import sys; print("x" * 100000, end=""); '
       'print("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)", '
       'file=sys.stderr)\'; exit 1')


def events(r):
    path = next(r.home.glob("history/intermediate/*/events.jsonl"), None) or \
        next(r.home.glob("history/finished/*/*/*/*/events.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_cuda_oom_with_the_default_policies_is_not_retried(tony):
    r = tony.submit("--executes", OOM, *WORKER, "--conf", "tony.am.retry-count=2")
    assert r.rc == 1, r
    st = r.status()
    # exactly one attempt, with both restarts left
    assert st["attempt"] == 0 and st["retries_left"] == 2, st
    assert not (r.job_dir() / "attempts" / "1").exists()
    diag = st["diagnostics"]
    assert "log policy 'fail:CUDA out of memory' matched worker:0's stderr" in diag, diag
    assert "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB" in diag, diag
    assert "Not retried" in diag and "tony.application.log-policies" in diag, diag
    # the task says it too, and tony submit printed it
    assert "fail:CUDA out of memory" in r.task("worker", 0)["diagnostics"]
    assert "log policy 'fail:CUDA out of memory' matched" in r.text, r


def test_an_empty_value_turns_the_defaults_off(tony):
    r = tony.submit("--executes", OOM, *WORKER, "--conf", "tony.am.retry-count=1",
                    "--conf", "tony.application.log-policies=")
    assert r.rc == 1, r
    st = r.status()
    assert st["attempt"] == 1 and st["retries_left"] == 0, st
    assert "log policy" not in st["diagnostics"], st


def test_a_bad_regex_is_refused_at_submit(tony):
    r = tony.submit("--executes", "true", *WORKER, "--conf", "tony.application.log-policies=fail:ok, fail:(unclosed")
    assert r.rc == 2, r
    assert "tony.application.log-policies" in r.err and "fail:(unclosed" in r.err, r
    r = tony.submit("--executes", "true", *WORKER, "--conf", "tony.application.log-policies=retry:x")
    assert r.rc == 2 and "fail or exclude-node" in r.err, r


def test_exclude_node_on_the_only_node_is_shown_not_done(tony):
    policy = r"fail:never\, ever, exclude-node:(?i)uncorrectable ECC error"
    r = tony.submit("--executes", "echo 'CUDA error: an Uncorrectable ECC error was encountered' >&2; exit 3",
                    *WORKER, "--conf", f"tony.application.log-policies={policy}")
    assert r.rc == 1, r
    nodes = r.status()["excluded_nodes"]
    assert len(nodes) == 1 and not nodes[0]["excluded"], nodes
    assert nodes[0]["node"] == "localhost" and nodes[0]["task"] == "worker:0"
    assert r.task("worker", 0)["node"] == "localhost"
    assert "uncorrectable ECC error" in nodes[0]["reason"] and "only node" in nodes[0]["refused"], nodes
    st = tony.run("status", r.job_dir().name)
    assert "node localhost is bad but was not excluded" in st.out, st
    ev = [e for e in events(r) if e["type"] == "NODE_NOT_EXCLUDED"]
    assert len(ev) == 1 and ev[0]["task"] == "worker:0" and ev[0]["node"] == "localhost", ev
    # and the history says it
    h = tony.run("history", r.job_dir().name)
    assert h.rc == 0 and "NODE_NOT_EXCLUDED" in h.out and "only node" in h.out, h
