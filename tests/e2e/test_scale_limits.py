"""Job sizes past Linux's 128 KiB limit on one environment string
(MAX_ARG_STRLEN): TF_CONFIG and CLUSTER_SPEC list every task's host:port and
pass it past ~7,200 tasks (loopback addresses; fewer with a cluster's host
names), and a user's own variable may. No exec could pass such a string, so
the executor writes it to a file in the task's work dir and names it in
TONY_ENV_FILES; tony's sitecustomize sets it in a Python process's
os.environ, other programs read the file. `tony submit` says which variables
go that way; only a tony.containers.envs value over the limit (the container
itself is exec'd with it) is refused."""
import json
import os
import time

import pytest

PAGE = os.sysconf("SC_PAGE_SIZE")
LIMIT = 32 * PAGE  # MAX_ARG_STRLEN
NOTE = "will reach each task by file"


def workers(n):
    # a machine pool big enough that only the env limit could refuse the job
    return ["--executes", "python train.py", "--conf", f"tony.worker.instances={n}",
            "--conf", "tony.worker.memory=1m", "--conf", f"tony.local.vcores={n + 16}",
            "--conf", f"tony.local.memory={n + 16}m"]


def nothing_staged(tony):
    jobs = tony.home / "jobs"
    return not jobs.exists() or not any(jobs.iterdir())


# Only --dry-run with 10,000 workers: starting them is test_scale's harness's
# business. Before TONY_ENV_FILES this plan was refused (exit 2).
@pytest.mark.skipif(PAGE != 4096, reason="the counts below assume 4 KiB pages (a 128 KiB limit)")
def test_10000_workers_are_planned_with_their_spec_by_file(tony):
    start = time.monotonic()
    r = tony.run("submit", "--dry-run", *workers(10000))
    took = time.monotonic() - start
    assert r.rc == 0, r
    assert r.err.count(NOTE) == 1, r
    assert f"tony: note: CLUSTER_SPEC, TF_CONFIG {NOTE}" in r.err, r
    assert "MAX_ARG_STRLEN" in r.err and "TONY_ENV_FILES" in r.err and "os.environ" in r.err, r
    assert nothing_staged(tony)
    # building 10,000 tasks' plan and each role's last env is cheap
    assert took < 5, f"{took:.1f} s"
    assert "role worker: 10000 instance(s)" in r.out, r
    assert "TF_CONFIG=[the first 1800" in r.out, r


@pytest.mark.skipif(PAGE != 4096, reason="the counts below assume 4 KiB pages (a 128 KiB limit)")
def test_a_plan_just_under_the_limit_says_nothing(tony):
    r = tony.run("submit", "--dry-run", *workers(7200))
    assert r.rc == 0, r
    assert NOTE not in r.text and "MAX_ARG_STRLEN" not in r.text, r
    assert "role worker: 7200 instance(s)" in r.out, r
    # TF_CONFIG of the last worker, just under 128 KiB
    assert "TF_CONFIG=[the first 129" in r.out, r
    assert nothing_staged(tony)


def big_value():
    # 200 KB, no ',' (tony.execution.envs is a comma list) and not one byte repeated
    return "".join(f"{i:07d}-" for i in range(25000))


def conf_file(tmp_path, key, value):
    """A conf file setting key: such a value is too long for tony's own
    command line."""
    conf = tmp_path / "tony.xml"
    conf.write_text(f"<configuration><property><name>{key}</name><value>{value}</value></property></configuration>")
    return str(conf)


# The task's own check: os.environ has the exact value (and the C
# environment does not, so that a program started with this process's env
# still starts: a Python one finds BIG again through TONY_ENV_FILES); then a
# shell reads the file TONY_ENV_FILES names.
CHECK_PY = """import os, subprocess, sys
want = open("big.txt").read()
assert os.environ["BIG"] == want, "os.environ['BIG'] differs"
files = dict(e.split("=", 1) for e in os.environ["TONY_ENV_FILES"].split(":"))
assert set(files) == {"BIG"}, files
child = subprocess.run([sys.executable, "-c", "import os; print(len(os.environ['BIG']))"],
                       capture_output=True, text=True, check=True)
assert int(child.stdout) == len(want), child
print("python sees BIG:", len(want))
"""
CHECK_SH = """set -e
test -z "${BIG+set}" || { echo "BIG is in the shell's environment"; exit 1; }
f=$(printf '%s' "$TONY_ENV_FILES" | tr ':' '\n' | sed -n 's/^BIG=//p')
cmp "$f" big.txt
echo "shell reads BIG from $(basename "$f"), mode $(stat -c %a "$f")"
"""


def submit_with_big(tony, scripts, tmp_path, files, command, framework, workers):
    """Submits command with a 200 KB BIG in tony.execution.envs (its value
    also shipped as big.txt, beside files: name -> text); returns (value, result)."""
    value = big_value()
    (scripts / "big.txt").write_text(value)
    for name, text in files.items():
        (scripts / name).write_text(text)
    r = tony.submit("--conf_file", conf_file(tmp_path, "tony.execution.envs", f"BIG={value}"),
                    "--src_dir", str(scripts), "--executes", command,
                    "--conf", f"tony.application.framework={framework}", "--conf", f"tony.worker.instances={workers}",
                    "--conf", "tony.worker.memory=256m")
    return value, r


def test_a_user_variable_over_the_limit_reaches_the_task_by_file(tony, scripts, tmp_path):
    """A real job: tony.execution.envs's BIG (200 KB) reaches the task, a
    Python process through os.environ and a shell through its file. Before
    TONY_ENV_FILES the submit was refused (exit 2)."""
    value, r = submit_with_big(tony, scripts, tmp_path, {"check.py": CHECK_PY, "check.sh": CHECK_SH},
                               "/usr/bin/python3 check.py && bash check.sh", "generic", 1)
    assert r.rc == 0, r
    assert f"tony: note: BIG {NOTE}" in r.err, r
    out = r.log("worker", 0)
    assert f"python sees BIG: {len(value)}" in out, out
    assert "shell reads BIG from BIG, mode 600" in out, out


TF_PY = """import json, os
tf = json.loads(os.environ["TF_CONFIG"])
print(json.dumps({"task": tf["task"], "workers": len(tf["cluster"]["worker"]),
                  "big": os.environ["BIG"] == open("big.txt").read(), "files": os.environ["TONY_ENV_FILES"]}))
"""


def test_tensorflow_keeps_its_tf_config_beside_a_variable_by_file(tony, scripts, tmp_path):
    """Two TensorFlow workers with an over-limit user variable: BIG comes by
    file, TF_CONFIG (short here) stays in the environment, each worker's own."""
    _, r = submit_with_big(tony, scripts, tmp_path, {"tf.py": TF_PY}, "/usr/bin/python3 tf.py", "tensorflow", 2)
    assert r.rc == 0, r
    for i in range(2):
        got = json.loads(r.log("worker", i).strip().splitlines()[-1])
        assert got["task"] == {"type": "worker", "index": i} and got["workers"] == 2, got
        assert got["big"] is True, got
        assert got["files"].startswith("BIG=") and ":" not in got["files"], got


def test_a_container_variable_over_the_limit_is_refused_at_submit(tony, tmp_path):
    """tony.containers.envs is the env the container itself is exec'd with,
    before an executor could move anything: refused before anything is
    staged, naming the key and the way that works."""
    r = tony.submit("--conf_file", conf_file(tmp_path, "tony.containers.envs", f"BIG={'x' * LIMIT}"),
                    "--executes", "true", "--conf", "tony.worker.instances=1", "--conf", "tony.worker.memory=256m")
    assert r.rc == 2, r
    assert f"BIG (tony.containers.envs) would be {LIMIT + 5} bytes in the env of worker:0's container" in r.err, r
    assert "MAX_ARG_STRLEN" in r.err and "Set it in tony.execution.envs instead" in r.err, r
    assert nothing_staged(tony)
