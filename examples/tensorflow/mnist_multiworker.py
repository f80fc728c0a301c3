#!/usr/bin/env python3
"""Synchronous data-parallel TensorFlow 2 training with
MultiWorkerMirroredStrategy, on scikit-learn's digits (8x8 "mini MNIST").

How tony runs it
----------------
N tasks of role ``worker``; worker 0 is the chief::

    build/bin/tony submit --src_dir examples \
        --executes tensorflow/mnist_multiworker.py --task_params "--epochs 12" \
        --python_binary_path $PWD/build/pyenv/bin/python \
        --conf tony.application.framework=tensorflow \
        --conf tony.worker.instances=2

Each task reads ``TF_CONFIG`` = ``{"cluster": {"worker": ["host:port", ...]},
"task": {"type": "worker", "index": i}}`` (built by the orchestrator from the
ports it reserved); MultiWorkerMirroredStrategy starts a gRPC server on this
task's port and all-reduces gradients between the workers.  Without
``TF_CONFIG`` it trains as a single worker.  If the cluster has a ``chief``
entry, that task is the chief instead of worker 0.

Every worker trains on its shard of the data and must reach the end together;
the chief prints ``epoch N loss X accuracy Y`` per epoch and ``final accuracy:
X`` (held-out 20 % split) at the end.  Every worker exits 0 on success.  If a
peer dies the others fail once TensorFlow's heartbeat check notices (about
10 s: "The following tasks are unhealthy") and exit non-zero.  Workers wait
for each other at start (one started 12 s late was fine).

Saving: all workers take part in ``model.save`` (MultiWorkerMirroredStrategy
requires it), but only the chief writes to a kept place,
``$TONY_JOB_DIR/models/mnist_multiworker.keras`` (``./models/...`` when
``TONY_JOB_DIR`` is unset, or ``--model-dir``); the others write into a
temporary directory that is removed afterwards.

The data is the ``digits.csv.gz`` file that scikit-learn ships (what
``sklearn.datasets.load_digits`` reads), read directly so that scikit-learn's
compiled modules need not load in a venv with a different numpy; nothing is
downloaded.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


from digits_data import load_digits_xy, log, split  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--batch-size", type=int, default=32, help="per worker")
    p.add_argument("--lr", type=float, default=0.002)
    p.add_argument("--model-dir", default=None,
                   help="default $TONY_JOB_DIR/models or ./models")
    return p.parse_args()


def main():
    args = parse_args()
    t0 = time.time()
    tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    cluster = tf_config.get("cluster", {})
    task = tf_config.get("task", {})
    task_type, task_index = task.get("type", "worker"), int(task.get("index", 0))
    is_chief = (task_type == "chief" or
                (task_type == "worker" and task_index == 0 and "chief" not in cluster))
    n_workers = max(1, len(cluster.get("worker", [])) + len(cluster.get("chief", [])))
    if task_type not in ("worker", "chief"):
        log("mnist_multiworker: role %s has nothing to do here" % task_type)
        return 0

    import tensorflow as tf
    t_import = time.time() - t0
    # One intra-op thread per worker: several workers share few cores.
    tf.config.threading.set_intra_op_parallelism_threads(
        int(os.environ.get("TF_INTRA_OP_THREADS", "1")))
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.RING))
    log("mnist_multiworker: %s %d of %d workers, chief=%s, replicas=%d, "
        "session=%s, tf %s (import %.1fs)" % (
            task_type, task_index, n_workers, is_chief,
            strategy.num_replicas_in_sync,
            os.environ.get("SESSION_ID", os.environ.get("NUM_AM_RETRIES", "0")),
            tf.__version__, t_import))

    x, y = load_digits_xy()
    xtr, ytr, xte, yte = split(x, y)
    global_batch = args.batch_size * strategy.num_replicas_in_sync
    steps_per_epoch = len(xtr) // global_batch
    opts = tf.data.Options()
    opts.experimental_distribute.auto_shard_policy = \
        tf.data.experimental.AutoShardPolicy.DATA
    train_ds = (tf.data.Dataset.from_tensor_slices((xtr, ytr))
                .shuffle(len(xtr), seed=0, reshuffle_each_iteration=True)
                .repeat().batch(global_batch, drop_remainder=True)
                .with_options(opts))

    tf.keras.utils.set_random_seed(0)
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.Input(shape=(64,)),
            tf.keras.layers.Dense(128, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(10),
        ])
        optimizer = tf.keras.optimizers.Adam(args.lr)
        optimizer.build(model.trainable_variables)

    # A custom loop rather than model.fit: Keras 3's fit() fails under
    # MultiWorkerMirroredStrategy ("Attempt to convert a value (PerReplica...)",
    # keras-team/keras#20585).  The Keras optimizer all-reduces the gradients.
    dist_it = iter(strategy.experimental_distribute_dataset(train_ds))

    def replica_step(xb, yb):
        with tf.GradientTape() as tape:
            logits = model(xb, training=True)
            per_ex = tf.keras.losses.sparse_categorical_crossentropy(
                yb, logits, from_logits=True)
            loss = tf.nn.compute_average_loss(per_ex, global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        correct = tf.reduce_sum(tf.cast(
            tf.equal(tf.argmax(logits, axis=1), yb), tf.float32))
        return loss, correct

    @tf.function
    def train_epoch(iterator):
        loss_sum = tf.constant(0.0)
        correct_sum = tf.constant(0.0)
        for _ in tf.range(steps_per_epoch):
            xb, yb = next(iterator)
            loss, correct = strategy.run(replica_step, args=(xb, yb))
            loss_sum += strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None)
            correct_sum += strategy.reduce(tf.distribute.ReduceOp.SUM, correct, axis=None)
        return loss_sum / steps_per_epoch, correct_sum / (steps_per_epoch * global_batch)

    t_train = time.time()
    for epoch in range(args.epochs):
        loss, acc = train_epoch(dist_it)
        log("epoch %d loss %.4f accuracy %.4f" % (epoch + 1, float(loss), float(acc)))
    t_train = time.time() - t_train

    # Held-out accuracy, computed locally from this worker's (identical) copy
    # of the weights: no collective needed.
    logits = model(xte, training=False)
    acc = float((tf.argmax(logits, axis=1).numpy() == yte).mean())

    # Every worker saves (MWMS needs all to take part); only the chief keeps it.
    base = args.model_dir or os.path.join(os.environ.get("TONY_JOB_DIR") or ".",
                                          "models")
    if is_chief:
        os.makedirs(base, exist_ok=True)
        out_dir = base
    else:
        out_dir = tempfile.mkdtemp(prefix="mnist_multiworker_%d_" % task_index)
    path = os.path.join(out_dir, "mnist_multiworker.keras")
    model.save(path)
    if not is_chief:
        shutil.rmtree(out_dir, ignore_errors=True)

    if is_chief:
        log("saved model to %s" % path)
        log("final accuracy: %.4f" % acc)
    else:
        log("worker %d accuracy %.4f" % (task_index, acc))
    log("done: train %.1fs, total %.1fs" % (t_train, time.time() - t0))
    return 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.exit(rc)
