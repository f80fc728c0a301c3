"""Runs TensorFlow's ParameterServerStrategy example (resnet_cifar_ps_strategy.py
beside this file, unedited) in every task of a chief + ps + workers job, with
no download and no TF Model Garden. The example's TF_CONFIG handling, its
roles (ps and workers in server.join(), the chief as the coordinator), its
ClusterCoordinator training loop, inline evaluation and checkpoints are its
own. Stood in for here, and only here:
- the Model Garden modules it imports (tensorflow_models.official...):
  cifar_preprocessing.input_fn gives generated 32x32 colour images (each
  class a bright square in its own place, so accuracy can rise within a few
  steps) instead of reading CIFAR-10; resnet_cifar_model.resnet56 is a small
  conv net; common's learning rate and optimizer are the Garden's values
  (0.1 per 128 images; SGD with momentum 0.9);
- portpicker, which only its in-process test cluster (not run here) uses;
- its storage: the ps tasks write their checkpoint shards and the chief its
  logs to its flags' gs:// dirs, storage every task shares; unless given,
  they are dirs in the job's shared dir (TONY_JOB_DIR);
- its budget, module constants it reads when training: 182 epochs of 781
  steps (ResNet-56 on CIFAR-10) become --stand-in-epochs of 20 steps, each
  evaluated with 5 steps.
It is written for Keras 2 (tf.keras.metrics' reset_states, Keras 2's
ParameterServerStrategy support): run it with TF_USE_LEGACY_KERAS=1.
Usage: resnet_cifar_stand_in.py [--stand-in-epochs N] EXAMPLE_FLAGS...
(its own flags, e.g. --checkpoint_dir, --train_log_dir, absl's --logtostderr)."""
import os
import sys
import types

import tensorflow as tf

NUM_CLASSES = 10


def module(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, m)
    return m


def generated_cifar(is_training, data_dir, batch_size, parse_record_fn=None, dtype=tf.float32,
                    drop_remainder=False, **_):
    n = 2048 if is_training else 256
    labels = tf.random.stateless_uniform([n], seed=[1, int(is_training)], maxval=NUM_CLASSES, dtype=tf.int32)
    noise = tf.random.stateless_uniform([n, 32, 32, 3], seed=[2, int(is_training)], maxval=0.25)
    rows = tf.range(32)[None, :, None, None] // 3  # each class lights rows 3k..3k+2
    images = tf.where(rows == labels[:, None, None, None], 1.0, noise)
    ds = tf.data.Dataset.from_tensor_slices((tf.cast(images, dtype), labels))
    if is_training:
        ds = ds.shuffle(n, seed=3)
    return ds.repeat().batch(batch_size, drop_remainder=drop_remainder)


def small_net():
    return tf.keras.Sequential([
        tf.keras.layers.Conv2D(8, 3, strides=2, activation="relu", input_shape=(32, 32, 3)),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(NUM_CLASSES, activation="softmax"),
    ])


def momentum_sgd(learning_rate):
    return tf.keras.optimizers.SGD(learning_rate=learning_rate, momentum=0.9)


def not_here():
    raise RuntimeError("portpicker stand-in: the example's in-process cluster is not run under tony")


for name in ("tensorflow_models", "tensorflow_models.official", "tensorflow_models.official.benchmark",
             "tensorflow_models.official.vision", "tensorflow_models.official.vision.image_classification"):
    module(name)
module("tensorflow_models.official.benchmark.models")
module("tensorflow_models.official.benchmark.models.cifar_preprocessing", input_fn=generated_cifar,
       parse_record=lambda raw_record, is_training, dtype: raw_record)
module("tensorflow_models.official.benchmark.models.resnet_cifar_model", resnet56=small_net)
module("tensorflow_models.official.vision.image_classification.resnet")
module("tensorflow_models.official.vision.image_classification.resnet.common", BASE_LEARNING_RATE=0.1,
       get_optimizer=momentum_sgd)
module("portpicker", pick_unused_port=not_here)

args = sys.argv[1:]
epochs = 3
if args[:1] == ["--stand-in-epochs"]:
    epochs, args = int(args[1]), args[2:]

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resnet_cifar_ps_strategy as example  # noqa: E402  (after the stand-ins it imports)
from absl import app  # noqa: E402

shared = os.environ.get("TONY_JOB_DIR", os.getcwd())
for flag, where in (("--checkpoint_dir", "cifar10_ckpt/"), ("--train_log_dir", "cifar10_train_log/")):
    if not any(a.startswith(flag + "=") for a in args):
        args.append(f"{flag}={os.path.join(shared, where)}")
example.TRAIN_EPOCHS = epochs
example.STEPS_PER_EPOCH = 20
example.EVAL_STEPS_PER_EPOCH = 5
app.run(example.main, argv=[example.__file__] + args)
