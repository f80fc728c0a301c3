#!/usr/bin/env python3
"""TensorFlow 1 style (graph mode through ``tf.compat.v1``) between-graph
training with parameter servers, as TonY's own TensorFlow examples train: a
softmax regression on scikit-learn's digits.

How tony runs it
----------------
::

    build/bin/tony submit --src_dir examples \
        --executes tensorflow/tf1_ps_digits.py --task_params "--steps 300" \
        --python_binary_path $PWD/build/pyenv/bin/python \
        --conf tony.application.framework=tensorflow \
        --conf tony.ps.instances=1 --conf tony.worker.instances=2 \
        --conf tony.application.untracked.jobtypes=ps

Each task learns its place the TonY way: ``JOB_NAME`` (ps / worker),
``TASK_INDEX`` and ``CLUSTER_SPEC`` (``{"ps": ["host:port"], "worker":
[...]}``), and starts a ``tf.compat.v1.train.Server`` on its own port.

* ``ps`` serves the variables and never returns (``server.join()``); tony
  stops it once the workers, the tracked tasks, are done.
* every ``worker`` builds the same graph with ``replica_device_setter`` (the
  variables on the ps), trains in a ``MonitoredTrainingSession`` until the
  shared global step reaches ``--steps``, then exits 0. Worker 0 is the chief:
  it initializes the variables, writes the graph with
  ``tf.io.write_graph`` (as text, the call TonY's examples make; it goes
  through protobuf's text format) into ``--out`` (default ``$TONY_JOB_DIR``
  or the work dir), evaluates on the held-out 20 % and prints
  ``final accuracy: X``.
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from digits_data import load_digits_xy, log, split  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--out", default=os.environ.get("TONY_JOB_DIR") or os.getcwd())
    args = ap.parse_args()

    import numpy as np
    import tensorflow as tf
    v1 = tf.compat.v1
    v1.disable_eager_execution()

    job, index = os.environ["JOB_NAME"], int(os.environ["TASK_INDEX"])
    cluster = v1.train.ClusterSpec(json.loads(os.environ["CLUSTER_SPEC"]))
    server = v1.train.Server(cluster, job_name=job, task_index=index)
    log(f"{job}:{index} serving at {server.target}")
    if job == "ps":
        server.join()
        return 0

    x_train, y_train, x_test, y_test = split(*load_digits_xy())
    chief = index == 0
    with v1.device(v1.train.replica_device_setter(worker_device=f"/job:worker/task:{index}", cluster=cluster)):
        step = v1.train.get_or_create_global_step()
        x = v1.placeholder(tf.float32, [None, 64], name="x")
        y = v1.placeholder(tf.int64, [None], name="y")
        w = v1.get_variable("w", [64, 10], initializer=v1.zeros_initializer())
        b = v1.get_variable("b", [10], initializer=v1.zeros_initializer())
        logits = tf.matmul(x, w) + b
        loss = v1.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
        train = v1.train.GradientDescentOptimizer(args.lr).minimize(loss, global_step=step)
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))

    if chief:
        os.makedirs(args.out, exist_ok=True)
        path = v1.train.write_graph(v1.get_default_graph().as_graph_def(), args.out, "graph.pbtxt", as_text=True)
        log(f"graph written to {path}")

    hooks = [v1.train.StopAtStepHook(last_step=args.steps)]
    # Only the ps and this worker take part in this worker's session: another
    # worker that is already done must not be waited for.
    config = v1.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{index}"])
    if not chief:
        # A non-chief session polls for the chief's initialization only every
        # 30 s: wait for it here, more often.
        uninitialized = v1.report_uninitialized_variables()
        with v1.Session(server.target, config=config) as sess:
            while len(sess.run(uninitialized)):
                time.sleep(0.2)
    rng = np.random.RandomState(index)
    with v1.train.MonitoredTrainingSession(master=server.target, is_chief=chief, hooks=hooks,
                                           config=config) as sess:
        n = 0
        while not sess.should_stop():
            batch = rng.randint(0, len(x_train), args.batch)
            _, l, g = sess.run([train, loss, step], {x: x_train[batch], y: y_train[batch]})
            n += 1
            if n % 50 == 0:
                log(f"worker:{index} step {g} loss {l:.4f}")
    if chief:  # the trained variables still live on the ps
        with v1.Session(server.target, config=config) as sess:
            log(f"final accuracy: {sess.run(accuracy, {x: x_test, y: y_test}):.4f}")
    log(f"worker:{index} done after {n} local steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
