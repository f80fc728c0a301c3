"""Runs TensorFlow's MultiWorkerMirroredStrategy Keras example
(keras_mnist.py beside this file, unedited) with no download and no
cluster volume: tf.keras.datasets.mnist.load_data, which would fetch MNIST,
returns generated 28x28 digits instead (each class a bright bar in its own
place, so the loss can fall in the example's few steps), and the example's
save places, a Kubernetes volume (/pvcmnt) and /tmp/workertemp_N, are
pointed into the task's own dir. The strategy, TF_CONFIG and the training
loop are the example's. The example uses Keras 2's
tf.keras.callbacks.experimental: run it with TF_USE_LEGACY_KERAS=1 (tf_keras).
Usage: mnist_stand_in.py (no arguments: the example takes none)."""
import os
import sys

import numpy as np
import tensorflow as tf


def stand_in_mnist(n=6000):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, n)
    x = rng.integers(0, 64, (n, 28, 28))
    for k in range(10):
        x[y == k, 2 + 2 * k:4 + 2 * k, :] = 255
    x = x.astype(np.uint8)
    return (x, y.astype(np.uint8)), (x[:1000], y[:1000].astype(np.uint8))


tf.keras.datasets.mnist.load_data = stand_in_mnist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras_mnist  # noqa: E402  (after the stand-in: the example reads it when it runs)


def own_dir(task_id):
    path = os.path.join(os.getcwd(), "workertemp_" + str(task_id))
    os.makedirs(path, exist_ok=True)
    return path


keras_mnist.MAIN_MODEL_PATH = os.path.join(os.getcwd(), "pvcmnt")
keras_mnist._get_temp_dir = own_dir
keras_mnist.main()
