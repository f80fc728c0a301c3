"""Runs Horovod's synthetic benchmark (vendored beside this file, unedited)
where torchvision is not installed: the benchmark takes only a model class
by name from torchvision.models (`--model`), so this puts a stand-in
torchvision in sys.modules whose every model is a small conv net with
ImageNet's 1000 classes, small enough for a CPU test. Horovod, its
DistributedOptimizer and broadcasts run as the benchmark has them; the ranks
come from tony's HOROVOD_* variables and rendezvous.
Usage: stand_in_torchvision.py [benchmark args...]"""
import os
import runpy
import sys
import types

import torch


def small_net():
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 16, stride=16), torch.nn.ReLU(),
                               torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 1000))


models = types.ModuleType("torchvision.models")
models.__getattr__ = lambda name: small_net
torchvision = types.ModuleType("torchvision")
torchvision.models = models
sys.modules.update({"torchvision": torchvision, "torchvision.models": models})

script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch_synthetic_benchmark.py")
sys.argv = [script] + sys.argv[1:]
runpy.run_path(script, run_name="__main__")
