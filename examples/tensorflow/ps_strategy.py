#!/usr/bin/env python3
"""Asynchronous TensorFlow 2 training with ParameterServerStrategy, on
scikit-learn's digits (8x8 "mini MNIST").

How tony runs it
----------------
Three roles, all running this same script::

    build/bin/tony submit --src_dir examples \
        --executes tensorflow/ps_strategy.py --task_params "--epochs 10" \
        --python_binary_path $PWD/build/pyenv/bin/python \
        --conf tony.application.framework=tensorflow \
        --conf tony.chief.instances=1 \
        --conf tony.ps.instances=1 \
        --conf tony.worker.instances=2 \
        --conf tony.application.untracked.jobtypes=ps

Each task reads ``TF_CONFIG`` = ``{"cluster": {"chief": [..], "ps": [..],
"worker": [..]}, "task": {"type": ..., "index": ...}}`` and uses the ports in
it as given (the orchestrator reserved them).

* ``chief`` is the coordinator: it builds the model's variables under
  ``ParameterServerStrategy`` (they live on the ps tasks), schedules training
  steps on the workers with ``ClusterCoordinator.schedule``, evaluates on a
  held-out 20 % split, prints ``epoch N loss X accuracy Y`` per epoch and
  ``final accuracy: X`` at the end, and exits 0.
* ``ps`` and ``worker`` tasks start an in-process ``tf.distribute.Server`` and
  serve until the chief is done.

Ending the job: TensorFlow's own examples have ps and worker tasks block in
``server.join()`` forever.  Under tony the ps is an *untracked* role (killed
once the tracked tasks end), but the workers are tracked, so they must end by
themselves.  Hence the chief, after training and evaluation, writes a marker
file and the ps/worker tasks poll for it and exit when it appears (0 when the
chief succeeded, 1 when it failed):

    ``$PS_DONE_FILE`` if set, else ``$TONY_JOB_DIR/ps_strategy_done``,
    else ``<tmpdir>/ps_strategy_done``.

The marker holds a token made of the cluster spec and ``SESSION_ID``; a task
only acts on a marker whose token matches its own, so a marker left by an
earlier attempt of the job is ignored (the chief also removes it at start).
``--max-wait S`` makes a waiting ps/worker give up (exit 2) after S seconds
(default 0: wait until the marker appears or the task is killed).

The data is the ``digits.csv.gz`` file that scikit-learn ships (what
``sklearn.datasets.load_digits`` reads), read directly; nothing is
downloaded.  The model is a small MLP made of plain ``tf.Variable``s with a
hand-written momentum SGD update (Keras 3's ``model.fit`` does not support
ParameterServerStrategy).
"""
import argparse
import hashlib
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


from digits_data import load_digits_xy, log, split  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--max-wait", type=float, default=0.0,
                   help="ps/worker: give up after this many seconds (0: never)")
    return p.parse_args()


def done_file():
    if os.environ.get("PS_DONE_FILE"):
        return os.environ["PS_DONE_FILE"]
    if os.environ.get("TONY_JOB_DIR"):
        return os.path.join(os.environ["TONY_JOB_DIR"], "ps_strategy_done")
    return os.path.join(tempfile.gettempdir(), "ps_strategy_done")


def run_token(cluster):
    session = os.environ.get("SESSION_ID", os.environ.get("NUM_AM_RETRIES", "0"))
    h = hashlib.sha256(json.dumps(cluster, sort_keys=True).encode()).hexdigest()
    return "%s-%s" % (h[:16], session)


def write_marker(path, token, status):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write("%s %s\n" % (token, status))
    os.replace(tmp, path)


def read_marker(path):
    try:
        with open(path) as f:
            parts = f.read().split()
        return (parts[0], parts[1]) if len(parts) >= 2 else (None, None)
    except OSError:
        return None, None


def serve(tf_config, args):
    """ps or worker: run a server in-process until the chief's marker."""
    task = tf_config["task"]
    cluster = tf_config["cluster"]
    os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")
    import tensorflow as tf
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    server = tf.distribute.Server(resolver.cluster_spec(),
                                  job_name=task["type"],
                                  task_index=int(task["index"]),
                                  protocol=resolver.rpc_layer or "grpc",
                                  start=True)
    token, marker = run_token(cluster), done_file()
    log("ps_strategy: %s %d serving at %s; waiting for %s" % (
        task["type"], int(task["index"]), server.target, marker))
    t0 = time.time()
    while True:
        tok, status = read_marker(marker)
        if tok == token:
            log("ps_strategy: chief finished (%s), %s %d exiting" % (
                status, task["type"], int(task["index"])))
            return 0 if status == "ok" else 1
        if args.max_wait > 0 and time.time() - t0 > args.max_wait:
            log("ps_strategy: no marker after %.0fs, giving up" % args.max_wait)
            return 2
        time.sleep(0.5)


def coordinate(tf_config, args):
    """chief: train with ParameterServerStrategy + ClusterCoordinator."""
    cluster = tf_config["cluster"]
    token, marker = run_token(cluster), done_file()
    try:
        os.remove(marker)  # left over from an earlier run
    except OSError:
        pass
    status = "failed"
    try:
        rc = _train(args)
        status = "ok" if rc == 0 else "failed"
        return rc
    finally:
        write_marker(marker, token, status)
        log("ps_strategy: wrote %s (%s)" % (marker, status))


def _train(args):
    t0 = time.time()
    import numpy as np
    import tensorflow as tf
    t_import = time.time() - t0
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    log("ps_strategy: chief coordinating %d worker(s), %d ps, session=%s, "
        "tf %s (import %.1fs)" % (
            len(resolver.cluster_spec().as_dict().get("worker", [])),
            len(resolver.cluster_spec().as_dict().get("ps", [])),
            os.environ.get("SESSION_ID", "0"), tf.__version__, t_import))

    x, y = load_digits_xy()
    xtr, ytr, xte, yte = split(x, y)
    steps_per_epoch = len(xtr) // args.batch_size  # batches over all workers

    sizes = [64, 128, 64, 10]
    rng = np.random.RandomState(0)
    with strategy.scope():
        params, moms = [], []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            lim = np.sqrt(6.0 / (a + b))
            params.append(tf.Variable(rng.uniform(-lim, lim, (a, b)).astype("float32"),
                                      name="w%d" % i))
            params.append(tf.Variable(np.zeros(b, "float32"), name="b%d" % i))
        for p in params:
            moms.append(tf.Variable(tf.zeros(p.shape), name=p.name.split(":")[0] + "_m"))

    def forward(xb):
        h = xb
        for i in range(0, len(params), 2):
            h = tf.matmul(h, params[i]) + params[i + 1]
            if i + 2 < len(params):
                h = tf.nn.relu(h)
        return h

    def dataset_fn(input_context):
        ds = tf.data.Dataset.from_tensor_slices((xtr, ytr))
        ds = ds.shard(input_context.num_input_pipelines,
                      input_context.input_pipeline_id)
        return ds.shuffle(len(xtr)).repeat().batch(args.batch_size).prefetch(2)

    @tf.function
    def per_worker_dataset_fn():
        return strategy.distribute_datasets_from_function(dataset_fn)

    per_worker_iter = iter(coordinator.create_per_worker_dataset(per_worker_dataset_fn))
    lr = args.lr

    @tf.function
    def train_step(iterator):
        def replica_fn(xb, yb):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=yb, logits=forward(xb)))
            grads = tape.gradient(loss, params)
            for p, m, g in zip(params, moms, grads):
                m.assign(0.9 * m + g)
                p.assign_sub(lr * m)
            return loss
        xb, yb = next(iterator)
        losses = strategy.run(replica_fn, args=(xb, yb))
        return strategy.reduce(tf.distribute.ReduceOp.MEAN, losses, axis=None)

    def accuracy(xs, ys):
        # inline evaluation on the coordinator: reads the variables from the ps
        return float((tf.argmax(forward(tf.constant(xs)), axis=1).numpy() == ys).mean())

    t_train = time.time()
    for epoch in range(args.epochs):
        results = [coordinator.schedule(train_step, args=(per_worker_iter,))
                   for _ in range(steps_per_epoch)]
        coordinator.join()
        loss = float(np.mean([r.fetch() for r in results]))
        log("epoch %d loss %.4f accuracy %.4f" % (epoch + 1, loss,
                                                  accuracy(xtr, ytr)))
    t_train = time.time() - t_train
    acc = accuracy(xte, yte)
    log("final accuracy: %.4f" % acc)
    log("done: train %.1fs, total %.1fs" % (t_train, time.time() - t0))
    return 0


def main():
    args = parse_args()
    tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    task_type = tf_config.get("task", {}).get("type")
    cluster = tf_config.get("cluster", {})
    if not task_type or not all(cluster.get(r) for r in ("chief", "ps", "worker")):
        log("ps_strategy: TF_CONFIG must name a task and have chief, ps and "
            "worker tasks; got %r" % os.environ.get("TF_CONFIG"))
        return 2
    if task_type in ("ps", "worker"):
        return serve(tf_config, args)
    if task_type == "chief":
        return coordinate(tf_config, args)
    log("ps_strategy: role %s has nothing to do here" % task_type)
    return 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave at once: TensorFlow's gRPC server threads can delay or hang the
    # normal interpreter shutdown of a ps/worker.
    os._exit(rc)
