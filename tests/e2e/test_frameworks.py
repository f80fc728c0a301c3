"""Frameworks as their users write them (issue 23): each framework's own
launch code reads what tony sets, on the local backend with 2 processes,
checked on what the framework itself concluded: JAX's
jax.distributed.initialize() without arguments (tony's cluster) and its
explicit form; Lightning Fabric with num_nodes=2 (tests/e2e/examples/);
HuggingFace accelerate's own multi-process checks, the modules that ship in
its package (`accelerate test` runs test_script), unedited; and the
frameworks' official multi-node example scripts, vendored unedited in
tests/e2e/examples/ with their origin (pytorch/examples' DDP multinode.py,
Horovod's PyTorch synthetic benchmark, TensorFlow's MultiWorkerMirrored
Keras example), each through a small runner beside it that adapts only
what this CPU-only, offline machine lacks (see docs/frameworks.md). JAX,
Lightning Fabric and accelerate's test_ops also run on the Slurm and YARN
test clusters."""
import json
import re

import pytest

from conftest import PYTHON, REPO
from test_yarn_jobs import yarn  # noqa: F401 - the fixture

pytestmark = pytest.mark.ml
EXAMPLES = str(REPO / "tests" / "e2e" / "examples")

# Every JAX process gathers every process's index: the ranks agree when each
# sees [0, 1]. On CPU, JAX before 0.5 needs gloo asked for in code (the flag
# has no environment variable).
JAX_GATHER = """import os, sys
import jax, jax.numpy as jnp
from jax.experimental import multihost_utils
jax.config.update("jax_cpu_collectives_implementation", "gloo")  # JAX < 0.5 on CPU
if sys.argv[1:] == ["explicit"]:
    jax.distributed.initialize(os.environ["JAX_COORDINATOR_ADDRESS"], int(os.environ["JAX_NUM_PROCESSES"]),
                               int(os.environ["JAX_PROCESS_ID"]))
else:
    jax.distributed.initialize()
got = multihost_utils.process_allgather(jnp.array([jax.process_index()])).ravel().tolist()
print(f"process {jax.process_index()} of {jax.process_count()} gathered {got}", flush=True)
"""


def jax_job(tony, scripts, *params, shell_env=()):
    (scripts / "gather.py").write_text(JAX_GATHER)
    return tony.submit("--src_dir", str(scripts), "--python_binary_path", PYTHON, "--executes", "gather.py",
                       *(("--task_params", " ".join(params)) if params else ()),
                       *[a for e in shell_env for a in ("--shell_env", e)],
                       "--conf", "tony.application.framework=jax", "--conf", "tony.worker.instances=2",
                       "--conf", "tony.worker.memory=1g", timeout=300)


@pytest.mark.parametrize("form", ["no-arguments", "explicit"])
def test_jax_distributed_initialize(tony, scripts, tmp_path, form):
    """The no-argument form finds tony's cluster (without it JAX raises
    "Number of processes must be defined"); the user's own sitecustomize,
    which tony's hides on PYTHONPATH, still runs."""
    own = tmp_path / "own-site"
    own.mkdir()
    (own / "sitecustomize.py").write_text("print('own sitecustomize ran', flush=True)\n")
    r = jax_job(tony, scripts, *(["explicit"] if form == "explicit" else []), shell_env=[f"PYTHONPATH={own}"])
    assert r.rc == 0, r.log("worker", 0, "stderr")[-3000:]
    for i in range(2):
        out = r.log("worker", i)
        assert f"process {i} of 2 gathered [0, 1]" in out, r.log("worker", i, "stderr")[-3000:]
        assert out.count("own sitecustomize ran") == 1, out


@pytest.mark.slurm
def test_jax_on_slurm_sees_no_step_layout(tony, slurm, scripts):
    """Each task is a one-task Slurm step: its SLURM_PROCID=0 and
    SLURM_NTASKS=1 would make JAX's SlurmCluster (and Lightning's
    SLURMEnvironment) believe every process is alone. The user's process
    sees none of them, keeps the job's own SLURM_JOB_ID, and the
    no-argument initialize() finds tony's cluster first."""
    tony.env.update(slurm.vars)
    show = "import json, os; print('slurm env', json.dumps({k: os.environ.get(k) for k in ('SLURM_PROCID', " \
           "'SLURM_NTASKS', 'SLURM_NNODES', 'SLURM_JOB_ID')}), flush=True)\n"
    (scripts / "gather.py").write_text(show + JAX_GATHER)
    r = tony.run("submit", "--backend", "slurm", "--src_dir", str(scripts), "--python_binary_path", PYTHON,
                 "--executes", "gather.py", "--conf", "tony.application.framework=jax",
                 "--conf", "tony.worker.instances=2", "--conf", "tony.worker.memory=1g", timeout=300)
    assert r.rc == 0, r.log("worker", 0, "stderr")[-3000:]
    for i in range(2):
        out = r.log("worker", i)
        assert f"process {i} of 2 gathered [0, 1]" in out, r.log("worker", i, "stderr")[-3000:]
        m = re.search(r"slurm env (\{.*\})", out)
        assert m, out
        seen = json.loads(m.group(1))
        assert seen["SLURM_PROCID"] is None and seen["SLURM_NTASKS"] is None and seen["SLURM_NNODES"] is None, seen
        assert seen["SLURM_JOB_ID"] and seen["SLURM_JOB_ID"].isdigit(), seen


def torch_job(tony, executes, params=""):
    return tony.submit("--src_dir", EXAMPLES, "--python_binary_path", PYTHON, "--executes", executes,
                       *(("--task_params", params) if params else ()),
                       "--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=2",
                       "--conf", "tony.worker.memory=2g", timeout=300)


def test_lightning_fabric_two_nodes(tony):
    """Two tasks on one host are two nodes of one device: Fabric detects
    torchelastic (TORCHELASTIC_RUN_ID), takes the node from GROUP_RANK and
    device 0 from LOCAL_RANK (with tony's old LOCAL_RANK=1 worker 1 died in
    root_device with an IndexError), and DDP keeps both ranks' weights equal
    while the loss falls."""
    r = torch_job(tony, "fabric_two_nodes.py")
    assert r.rc == 0, r.log("worker", 1, "stderr")[-3000:]
    for i in range(2):
        out = r.log("worker", i)
        m = re.search(r"fabric rank (\d) of (\d) node (\d) local (\d) env (\w+) loss ([\d.]+) -> ([\d.]+) "
                      r"weights agree (\w+)", out)
        assert m, out
        assert m.group(1, 2, 3, 4, 5) == (str(i), "2", str(i), "0", "TorchElasticEnvironment"), m.group(0)
        assert float(m.group(7)) < float(m.group(6)) / 10 and m.group(8) == "True", m.group(0)


ACCELERATE_OPS = "accelerate.test_utils.scripts.test_ops"


def assert_accelerate_placed(log):
    """accelerate's own report, printed by each process of its checks: the
    CPU group (gloo) of both tasks, each at its rank, one process a node."""
    for i in range(2):
        out = log(i)
        assert "Distributed environment: DistributedType.MULTI_CPU  Backend: gloo" in out, out[-2000:]
        assert "Num processes: 2" in out and f"Process index: {i}" in out and "Local process index: 0" in out, \
            out[-2000:]


@pytest.mark.parametrize("check", ["test_ops", "test_script"])
def test_accelerate_own_checks(tony, check):
    """accelerate's own checks, from its package: test_ops (gather, broadcast,
    reduce, pad across processes) and test_script (what `accelerate test`
    runs: process order, RNG sync, data loaders, training equal to one
    process's). test_script syncs through a file in the directory every
    process starts in, which under tony is the job's shared dir."""
    module = f"accelerate.test_utils.scripts.{check}"
    r = torch_job(tony, "run_shipped.py", ("--in-job-dir " if check == "test_script" else "") + module)
    assert r.rc == 0, r.log("worker", 1, "stderr")[-3000:]
    assert_accelerate_placed(lambda i: r.log("worker", i))
    if check == "test_script":
        assert "Training yielded the same results on one CPU or distributes setup with batch split." in \
            r.log("worker", 0)


# accelerate's test_ops, after printing the PMI_* a Slurm step with the pmi2
# plugin gives its one task (accelerate's fallbacks for RANK and WORLD_SIZE).
ACCELERATE_OPS_SHOWING_PMI = f"""import json, os, runpy
print("pmi env", json.dumps({{k: os.environ.get(k) for k in ("PMI_RANK", "PMI_SIZE")}}), flush=True)
runpy.run_module("{ACCELERATE_OPS}", run_name="__main__", alter_sys=True)
"""


@pytest.mark.slurm
def test_lightning_fabric_and_accelerate_on_slurm(tony, slurm, scripts):
    """On Slurm too, torchrun's variables place each task: Fabric asks for
    torchelastic (TORCHELASTIC_RUN_ID) before Slurm, and the one-task step's
    SLURM_NTASKS=1, which its SLURMEnvironment would read, is gone anyway.
    accelerate reads no SLURM_*, but falls back to PMI_RANK/PMI_SIZE, which
    Slurm's pmi2 plugin (MpiDefault=pmi2 on many clusters; SLURM_MPI_TYPE
    here) sets to 0 and 1 in every one-task step: its test_ops (gather,
    broadcast, reduce across the two processes), run as the second job in
    such steps, shows each process at the rank and world torchrun's
    variables gave it."""
    tony.env.update(slurm.vars)

    def submit(src_dir, executes):
        return tony.run("submit", "--backend", "slurm", "--src_dir", src_dir, "--python_binary_path", PYTHON,
                        "--executes", executes, "--conf", "tony.application.framework=pytorch",
                        "--conf", "tony.worker.instances=2", "--conf", "tony.worker.memory=2g", timeout=300)

    r = submit(EXAMPLES, "fabric_two_nodes.py")
    assert r.rc == 0, r.log("worker", 1, "stderr")[-3000:]
    for i in range(2):
        out = r.log("worker", i)
        assert f"fabric rank {i} of 2 node {i} local 0 env TorchElasticEnvironment" in out, out
        assert "weights agree True" in out, out
    (scripts / "ops.py").write_text(ACCELERATE_OPS_SHOWING_PMI)
    tony.env["SLURM_MPI_TYPE"] = "pmi2"  # srun's own variable: what MpiDefault=pmi2 gives every step
    r = submit(str(scripts), "ops.py")
    assert r.rc == 0, r.log("worker", 1, "stderr")[-3000:]
    for i in range(2):
        assert 'pmi env {"PMI_RANK": "0", "PMI_SIZE": "1"}' in r.log("worker", i), r.log("worker", i)[-2000:]
    assert_accelerate_placed(lambda i: r.log("worker", i))


def test_pytorch_ddp_tutorial_multinode(tony):
    """pytorch/examples' multinode.py (the DDP tutorial series' torchrun
    script), unedited, two tasks as two nodes: it reads LOCAL_RANK and RANK
    itself and init_process_group() takes the rest (env://). It is written
    for CUDA and NCCL; torch_on_cpu.py swaps in the CPU and gloo and touches
    nothing else. Its own output proves the group: DistributedSampler gives
    each of the 2 ranks half of the 2,048 samples (32 steps of 32, not 64),
    every rank trains every epoch, and only global rank 0 saves snapshots."""
    r = torch_job(tony, "torch_on_cpu.py", "pytorch_ddp/multinode.py 3 1")
    assert r.rc == 0, r.log("worker", 1, "stderr")[-3000:]
    for i in range(2):
        out = r.log("worker", i)
        for epoch in range(3):
            assert f"[GPU{i}] Epoch {epoch} | Batchsize: 32 | Steps: 32" in out, out[-2000:]
        assert ("Training snapshot saved" in out) == (i == 0), out[-2000:]


def test_horovod_synthetic_benchmark(tony):
    """Horovod's examples/pytorch/pytorch_synthetic_benchmark.py, unedited,
    on two tasks: hvd.init() finds its peers from tony's HOROVOD_* variables
    and rendezvous, DistributedOptimizer all-reduces every step, and rank 0
    (only it prints) reports the world it trained in. torchvision is not
    installed here: stand_in_torchvision.py gives the benchmark a small model
    under the name it asks for."""
    r = tony.submit("--src_dir", EXAMPLES, "--python_binary_path", PYTHON,
                    "--executes", "horovod/stand_in_torchvision.py",
                    "--task_params", "--no-cuda --batch-size 4 --num-warmup-batches 2 --num-batches-per-iter 2 "
                                     "--num-iters 3",
                    "--conf", "tony.application.framework=horovod", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.worker.memory=2g", timeout=300)
    assert r.rc == 0, r.log("worker", 0, "stderr")[-3000:]
    out = r.log("worker", 0)
    assert "Model: resnet50" in out and "Number of CPUs: 2" in out, out[-2000:]
    assert len(re.findall(r"Iter #\d: [\d.]+ img/sec per CPU", out)) == 3, out[-2000:]
    assert re.search(r"Total img/sec on 2 CPU\(s\): [\d.]+", out), out[-2000:]
    assert "Number of CPUs" not in r.log("worker", 1)


def epoch_losses(out):
    """Keras 2's progress bar: the loss at each epoch's end (`70/70 [===] - 3s 40ms/step - loss: L`)."""
    return [float(x) for x in re.findall(r"\] - \d+s [\d.]+[mu]?s/step - loss: ([\d.]+)", out)]


def test_tensorflow_multi_worker_mirrored_keras(tony):
    """TensorFlow's MultiWorkerMirroredStrategy Keras example (the TensorFlow
    team's tensorflow/ecosystem keras_mnist.py), unedited, on two workers: it
    reads TF_CONFIG itself, model.fit all-reduces every step, and both
    workers print the same loss at the end of each of the example's 10
    epochs (Keras reduces it across the workers), falling. Adapted by
    mnist_stand_in.py (generated digits instead of MNIST's download; its
    /pvcmnt and /tmp save dirs in the task's dir) and TF_USE_LEGACY_KERAS=1
    (it is written for Keras 2: tf_keras); one intra-op thread a worker, as
    the two share this machine's two cores."""
    r = tony.submit("--src_dir", EXAMPLES, "--python_binary_path", PYTHON,
                    "--executes", "tensorflow/mnist_stand_in.py", "--shell_env", "TF_USE_LEGACY_KERAS=1",
                    "--shell_env", "TF_NUM_INTRAOP_THREADS=1", "--shell_env", "TF_NUM_INTEROP_THREADS=2",
                    "--conf", "tony.application.framework=tensorflow", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.worker.memory=3g", timeout=400)
    assert r.rc == 0, r.log("worker", 0, "stderr")[-3000:]
    losses = [epoch_losses(r.log("worker", i)) for i in range(2)]
    assert len(losses[0]) == 10 and losses[0] == losses[1], losses
    assert losses[0][-1] < losses[0][0] / 5, losses


@pytest.mark.hadoop
def test_jax_lightning_fabric_and_accelerate_on_yarn(yarn, scripts):
    """On YARN (the test cluster: each task in a NodeManager's container,
    the coordinator in its own): JAX's no-argument initialize() finds tony's
    cluster, Lightning Fabric's two nodes place themselves from torchrun's
    variables, as on the local backend, and so does accelerate in its own
    test_ops. One test: the cluster's containers are the slow part, the
    three jobs run one after the other."""
    (scripts / "gather.py").write_text(JAX_GATHER)
    r = yarn.submit("--src_dir", str(scripts), "--python_binary_path", PYTHON, "--executes", "gather.py",
                    "--conf", "tony.application.framework=jax", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.worker.memory=1g", timeout=300)
    app_id = yarn.app_id(r)
    assert r.rc == 0, yarn.task_log(app_id, "worker", 0, "stderr")[-3000:]
    for i in range(2):
        out = yarn.task_log(app_id, "worker", i)
        assert f"process {i} of 2 gathered [0, 1]" in out, yarn.task_log(app_id, "worker", i, "stderr")[-3000:]

    def torch_on_yarn(executes, *params):
        r = yarn.submit("--src_dir", EXAMPLES, "--python_binary_path", PYTHON, "--executes", executes, *params,
                        "--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=2",
                        "--conf", "tony.worker.memory=2g", timeout=300)
        app_id = yarn.app_id(r)
        assert r.rc == 0, yarn.task_log(app_id, "worker", 1, "stderr")[-3000:]
        return lambda i: yarn.task_log(app_id, "worker", i)

    log = torch_on_yarn("fabric_two_nodes.py")
    for i in range(2):
        out = log(i)
        assert f"fabric rank {i} of 2 node {i} local 0 env TorchElasticEnvironment" in out, out
        assert "weights agree True" in out, out
    assert_accelerate_placed(torch_on_yarn("run_shipped.py", "--task_params", ACCELERATE_OPS))
