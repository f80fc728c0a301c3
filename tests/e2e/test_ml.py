"""Real training through tony on the local backend: TensorFlow
(MultiWorkerMirroredStrategy; ParameterServerStrategy with chief + ps +
workers; TF1-style graph mode with parameter servers, as TonY's examples)
and PyTorch DDP, each to a checked accuracy, and fault tolerance:
a worker SIGKILLed mid-training, the whole job restarted from its
checkpoint. Data is scikit-learn's bundled digits; nothing is downloaded."""
import os
import re
import signal
import time

import pytest

from conftest import PYTHON, REPO, job_processes, wait_for

pytestmark = pytest.mark.ml
EXAMPLES = str(REPO / "examples")
TORCH_PY = "/usr/bin/python3"  # Debian's torch imports under the system interpreter


def accuracy(text):
    m = re.search(r"final accuracy: ([0-9.]+)", text)
    assert m, text[-2000:]
    return float(m.group(1))


def test_tensorflow_multiworker_mirrored(tony):
    r = tony.submit("--src_dir", EXAMPLES, "--python_binary_path", PYTHON,
                    "--executes", "tensorflow/mnist_multiworker.py",
                    "--conf", "tony.worker.instances=2", "--conf", "tony.worker.memory=3g", timeout=600)
    assert r.rc == 0, r
    assert accuracy(r.log("worker", 0)) >= 0.85


def test_tensorflow_parameter_server_strategy(tony):
    r = tony.submit("--src_dir", EXAMPLES, "--python_binary_path", PYTHON,
                    "--executes", "tensorflow/ps_strategy.py",
                    "--conf", "tony.chief.instances=1", "--conf", "tony.ps.instances=1",
                    "--conf", "tony.worker.instances=2",
                    "--conf", "tony.chief.memory=3g", "--conf", "tony.ps.memory=2g", "--conf", "tony.worker.memory=2g",
                    timeout=600)
    assert r.rc == 0, r
    assert accuracy(r.log("chief", 0)) >= 0.85
    assert r.task("worker", 1)["state"] == "SUCCEEDED"


def test_tensorflow1_parameter_servers_write_graph(tony):
    """TonY's own examples are TF1 style (graph mode, tf.compat.v1, JOB_NAME /
    TASK_INDEX / CLUSTER_SPEC, ps joined forever) and write their graph as
    text: it fails in write_graph with TF 2.20 on protobuf 7 (issue 11 #14),
    which scripts/install-deps pins below 7."""
    r = tony.submit("--src_dir", EXAMPLES, "--python_binary_path", PYTHON,
                    "--executes", "tensorflow/tf1_ps_digits.py", "--task_params", "--steps 200",
                    "--conf", "tony.application.framework=tensorflow",
                    "--conf", "tony.ps.instances=1", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.application.untracked.jobtypes=ps",
                    "--conf", "tony.ps.memory=2g", "--conf", "tony.worker.memory=2g", timeout=600)
    assert r.rc == 0, r.log("worker", 0, "stderr")[-3000:]
    assert accuracy(r.log("worker", 0)) >= 0.85
    graph = (r.job_dir() / "shared" / "graph.pbtxt").read_text()
    assert 'name: "global_step"' in graph and "GradientDescent" in graph
    assert "done after" in r.log("worker", 1)


def test_pytorch_ddp_three_workers(tony):
    r = tony.submit("--src_dir", EXAMPLES, "--python_binary_path", TORCH_PY,
                    "--executes", "pytorch/ddp_digits.py", "--task_params", "--epochs 20",
                    "--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=3",
                    "--conf", "tony.worker.memory=1g", timeout=600)
    assert r.rc == 0, r
    assert accuracy(r.log("worker", 0)) >= 0.85
    for i in range(3):
        assert "starting from step 0" in r.log("worker", i)


def user_process_of(home, task):
    """The user's training process of a task (not its executor or shell)."""
    for pid in job_processes(home):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
            env = open(f"/proc/{pid}/environ", "rb").read()
        except OSError:
            continue
        if b"ddp_digits.py" in cmd and b"python" in cmd.split(b"\0")[0] and f"TONY_TASK_ID={task}\0".encode() in env:
            return pid
    return None


def run_ddp_and_kill_worker(tony, retries):
    p = tony.popen("submit", "--conf", "tony.local.vcores=8", "--src_dir", EXAMPLES,
                   "--python_binary_path", TORCH_PY, "--executes", "pytorch/ddp_digits.py",
                   "--task_params", "--epochs 8 --step-sleep 0.05 --checkpoint-every 5",
                   "--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=3",
                   "--conf", "tony.worker.memory=1g", "--conf", f"tony.am.retry-count={retries}")
    jobs = tony.home / "jobs"
    ckpt = wait_for(lambda: next(iter(jobs.glob("*/shared/checkpoints/ddp.pt")), None), 120,
                    what="a first checkpoint")
    job_dir = ckpt.parents[2]
    wait_for(lambda: "step 20 " in (job_dir / "attempts/0/worker-0/stdout").read_text(), 120, what="step 20")
    pid = wait_for(lambda: user_process_of(tony.home, "worker:1"), 30, what="worker:1's training process")
    os.kill(pid, signal.SIGKILL)
    out, err = p.communicate(timeout=600)
    return p.returncode, out + err, job_dir


def test_fault_tolerance_restart_resumes_from_checkpoint(tony):
    rc, text, job_dir = run_ddp_and_kill_worker(tony, retries=1)
    assert rc == 0, text
    second = (job_dir / "attempts/1/worker-0/stdout").read_text()
    m = re.search(r"resumed from step (\d+)", second)
    assert m and int(m.group(1)) > 0, second
    assert accuracy(second) >= 0.85
    first = (job_dir / "attempts/0").iterdir()
    assert len(list(first)) == 3


def test_fault_tolerance_without_retries_fails(tony):
    t0 = time.time()
    rc, text, job_dir = run_ddp_and_kill_worker(tony, retries=0)
    assert rc != 0, text
    assert "worker:1" in text and "lock-step" in text
    assert not (job_dir / "attempts/1").exists()


def test_horovod_two_workers_through_our_rendezvous(tony):
    # Real Horovod (built from PyPI's sdist against Debian's torch by
    # scripts/install-deps); no horovodrun and no driver container: hvd.init()
    # finds its peers through the coordinator's rendezvous store.
    r = tony.submit("--src_dir", EXAMPLES, "--python_binary_path", PYTHON,
                    "--executes", "horovod/torch_digits.py",
                    "--conf", "tony.application.framework=horovod", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.worker.memory=1g", timeout=600)
    assert r.rc == 0, r
    out = r.log("worker", 0)
    assert "(size 2)" in out
    assert accuracy(out) >= 0.85
