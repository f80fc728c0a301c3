"""Each framework's env as the user's script sees it, checked by that script
itself inside the task (it exits non-zero on a mismatch) and by the test."""
import json

import pytest

SMALL = ["--conf", "tony.worker.memory=256m", "--conf", "tony.ps.memory=256m"]

# Every task prints its env. A task given DUMP_AFTER=<task's log dir name>
# (--shell_env: all tasks) ends only once that task, an untracked ps, has
# printed its own: the job ends with its tracked tasks and stops the ps then,
# whatever it had run (issue 40).
DUMP = """import json, os, time
print(json.dumps(dict(os.environ)), flush=True)
after = os.environ.get("DUMP_AFTER")
for _ in range(1200 if after else 0):
    log = os.path.join(os.environ["TONY_LOG_DIR"], "..", after, "stdout")
    if os.path.exists(log) and open(log).read().endswith("}\\n"):
        break
    time.sleep(0.1)
"""


def envs(r):
    out = {}
    for t in r.status()["tasks"]:
        out[f"{t['role']}:{t['index']}"] = json.loads(r.log(t["role"], t["index"]).strip().splitlines()[-1])
    return out


def submit(tony, scripts, framework, *confs, after=None):
    (scripts / "dump.py").write_text(DUMP)
    wait = ["--shell_env", f"DUMP_AFTER={after}"] if after else []
    return tony.submit("--src_dir", str(scripts), "--python_binary_path", "/usr/bin/python3",
                       "--executes", "dump.py", "--conf", f"tony.application.framework={framework}",
                       *[a for c in confs for a in ("--conf", c)], *wait, *SMALL)


def test_tensorflow_env(tony, scripts):
    (scripts / "dump.py").write_text(DUMP)
    r = tony.submit("--src_dir", str(scripts), "--python_binary_path", "/usr/bin/python3", "--executes", "dump.py",
                    "--conf", "tony.worker.instances=2", "--conf", "tony.ps.instances=1",
                    "--conf", "tony.evaluator.instances=1", "--conf", "tony.evaluator.memory=256m",
                    "--conf", "tony.ps.command=/usr/bin/python3 dump.py; sleep 300", "--shell_env", "DUMP_AFTER=ps-0",
                    *SMALL)
    assert r.rc == 0, r
    e = envs(r)
    spec = json.loads(e["worker:0"]["CLUSTER_SPEC"])
    assert set(spec) == {"worker", "ps", "evaluator"} and len(spec["worker"]) == 2
    tf = json.loads(e["worker:1"]["TF_CONFIG"])
    assert tf["task"] == {"type": "worker", "index": 1}
    assert "evaluator" not in tf["cluster"] and tf["cluster"]["ps"] == spec["ps"]
    ev = json.loads(e["evaluator:0"]["TF_CONFIG"])
    assert ev["cluster"]["evaluator"] == spec["evaluator"]
    assert e["worker:0"]["IS_CHIEF"] == "true" and "IS_CHIEF" not in e["worker:1"]
    assert e["worker:1"]["JOB_NAME"] == "worker" and e["worker:1"]["TASK_INDEX"] == "1"
    assert e["worker:1"]["TASK_NUM"] == "3"  # tracked tasks: 2 workers + evaluator
    assert e["worker:1"]["DISTRIBUTED_MODE"] == "GANG"
    assert "TONY_SECRET" not in e["worker:1"]
    assert e["worker:0"]["TB_PORT"].isdigit() and "TB_PORT" not in e["worker:1"]
    host, port = spec["worker"][1].split(":")
    assert host == "127.0.0.1" and 0 < int(port) < 65536
    # byte for byte: the "go" answer carries the spec once and the executor
    # splices it back into CLUSTER_SPEC and the evaluator's TF_CONFIG (issue 26)
    compact = lambda o: json.dumps(o, separators=(",", ":"))  # noqa: E731
    assert all(e[t]["CLUSTER_SPEC"] == compact(spec) for t in e), e
    assert ev == {"cluster": spec, "task": {"type": "evaluator", "index": 0}}
    assert e["evaluator:0"]["TF_CONFIG"] == compact(ev)


def test_pytorch_env(tony, scripts):
    r = submit(tony, scripts, "pytorch", "tony.worker.instances=3")
    assert r.rc == 0, r
    e = envs(r)
    for i in range(3):
        w = e[f"worker:{i}"]
        assert w["RANK"] == str(i) and w["WORLD"] == "3" and w["WORLD_SIZE"] == "3"
        # torchrun's contract, a node of one process per task (issue 23)
        assert w["LOCAL_RANK"] == "0" and w["LOCAL_WORLD_SIZE"] == "1"
        assert w["GROUP_RANK"] == w["NODE_RANK"] == w["ROLE_RANK"] == str(i) and w["GROUP_WORLD_SIZE"] == "3"
        assert w["ROLE_NAME"] == "worker" and w["ROLE_WORLD_SIZE"] == "3"
        assert w["TORCHELASTIC_RESTART_COUNT"] == "0" and w["TORCHELASTIC_MAX_RESTARTS"] == "0"
        assert w["TORCHELASTIC_RUN_ID"] == w["JOB_ID"]
        assert w["MASTER_ADDR"] == "127.0.0.1"
        assert w["INIT_METHOD"] == f"tcp://127.0.0.1:{w['MASTER_PORT']}"
    assert len({e[f"worker:{i}"]["MASTER_PORT"] for i in range(3)}) == 1


def test_mxnet_env(tony, scripts):
    r = submit(tony, scripts, "mxnet", "tony.scheduler.instances=1", "tony.server.instances=1",
               "tony.worker.instances=2", "tony.scheduler.memory=256m", "tony.server.memory=256m")
    assert r.rc == 0, r
    e = envs(r)
    assert e["server:0"]["DMLC_ROLE"] == "server" and e["worker:1"]["DMLC_ROLE"] == "worker"
    assert e["worker:1"]["DMLC_PS_ROOT_URI"] == "127.0.0.1"
    assert e["worker:1"]["DMLC_NUM_WORKER"] == "2" and e["worker:1"]["DMLC_NUM_SERVER"] == "1"
    assert e["worker:0"]["DMLC_PS_ROOT_PORT"] == json.loads(e["worker:0"]["CLUSTER_SPEC"])["scheduler"][0].split(":")[1]


def test_jax_env(tony, scripts):
    r = submit(tony, scripts, "jax", "tony.worker.instances=2")
    assert r.rc == 0, r
    e = envs(r)
    assert e["worker:1"]["JAX_NUM_PROCESSES"] == "2"
    assert {e["worker:0"]["JAX_PROCESS_ID"], e["worker:1"]["JAX_PROCESS_ID"]} == {"0", "1"}
    assert e["worker:0"]["JAX_COORDINATOR_ADDRESS"] == json.loads(e["worker:0"]["CLUSTER_SPEC"])["worker"][0]


def test_xgboost_env(tony, scripts):
    r = submit(tony, scripts, "xgboost", "tony.worker.instances=2")
    assert r.rc == 0, r
    e = envs(r)
    assert e["worker:0"]["TONY_XGBOOST_TRACKER"] == "1" and "TONY_XGBOOST_TRACKER" not in e["worker:1"]
    assert e["worker:1"]["DMLC_NUM_WORKER"] == "2" and e["worker:1"]["DMLC_TASK_ID"] == "1"
    assert e["worker:1"]["DMLC_TRACKER_URI"] == "127.0.0.1"


def test_standalone_env(tony, scripts):
    r = submit(tony, scripts, "standalone", "tony.worker.instances=1")
    assert r.rc == 0, r
    e = envs(r)["worker:0"]
    assert "TF_CONFIG" not in e and "RANK" not in e


def test_standalone_two_instances_refused(tony, scripts):
    r = submit(tony, scripts, "standalone", "tony.worker.instances=2")
    assert r.rc == 2, r
    assert "exactly one" in r.err


def test_fcfs_tensorflow_has_no_tf_config(tony, scripts):
    r = submit(tony, scripts, "tensorflow", "tony.worker.instances=2", "tony.application.distributed-mode=FCFS")
    assert r.rc == 0, r
    e = envs(r)
    assert "TF_CONFIG" not in e["worker:1"] and e["worker:1"]["DISTRIBUTED_MODE"] == "FCFS"


def test_gpu_pool_sets_cuda_visible_devices(tony, scripts):
    # No GPU on this machine: the pool is declared (tony.local.gpus) so that
    # assignment from it is checked; real GPUs are exercised on the device
    # machine (see bench/ and docs/backends.md).
    r = submit(tony, scripts, "tensorflow", "tony.worker.instances=2", "tony.worker.gpus=1",
               "tony.ps.instances=1", "tony.ps.command=/usr/bin/python3 dump.py", "tony.local.gpus=2", after="ps-0")
    assert r.rc == 0, r
    e = envs(r)
    assert {e["worker:0"]["CUDA_VISIBLE_DEVICES"], e["worker:1"]["CUDA_VISIBLE_DEVICES"]} == {"0", "1"}
    assert e["ps:0"]["CUDA_VISIBLE_DEVICES"] == ""


def test_horovod_env(tony, scripts):
    r = submit(tony, scripts, "horovod", "tony.worker.instances=2")
    assert r.rc == 0, r
    e = envs(r)
    for i in range(2):
        w = e[f"worker:{i}"]
        assert w["HOROVOD_RANK"] == str(i) and w["HOROVOD_SIZE"] == "2"
        assert w["HOROVOD_LOCAL_RANK"] == str(i) and w["HOROVOD_LOCAL_SIZE"] == "2"
        assert w["HOROVOD_CROSS_RANK"] == "0" and w["HOROVOD_CROSS_SIZE"] == "1"
        assert w["HOROVOD_CONTROLLER"] == "gloo" and w["HOROVOD_GLOO_RENDEZVOUS_ADDR"] == "127.0.0.1"
    assert e["worker:0"]["HOROVOD_GLOO_RENDEZVOUS_PORT"] == e["worker:1"]["HOROVOD_GLOO_RENDEZVOUS_PORT"]


def test_horovod_refuses_fcfs(tony, scripts):
    r = submit(tony, scripts, "horovod", "tony.worker.instances=2", "tony.application.distributed-mode=FCFS")
    assert r.rc == 2, r
    assert "GANG" in r.err


def test_pytorch_restart_count_is_the_attempt(tony, scripts):
    """torch's restart count is tony's attempt: a script that resumes by
    TORCHELASTIC_RESTART_COUNT sees 0, then 1 after its failure, with
    max_restarts tony.am.retry-count and the same run id."""
    (scripts / "restarts.py").write_text(
        "import os, sys\n"
        "e = os.environ\n"
        "print('restart', e['TORCHELASTIC_RESTART_COUNT'], 'of', e['TORCHELASTIC_MAX_RESTARTS'],\n"
        "      'run', e['TORCHELASTIC_RUN_ID'], flush=True)\n"
        "sys.exit(3 if e['TORCHELASTIC_RESTART_COUNT'] == '0' else 0)\n")
    r = tony.submit("--src_dir", str(scripts), "--python_binary_path", "/usr/bin/python3", "--executes", "restarts.py",
                    "--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.am.retry-count=1", "--conf", "tony.application.restart-backoff-ms=100", *SMALL)
    assert r.rc == 0, r
    job = r.job_dir().name
    assert f"restart 0 of 1 run {job}" in r.log("worker", 0, attempt=0)
    assert f"restart 1 of 1 run {job}" in r.log("worker", 0, attempt=1)
