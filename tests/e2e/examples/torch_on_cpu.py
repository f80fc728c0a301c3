"""Runs a vendored PyTorch example written for CUDA and NCCL, unedited, on
this CPU-only machine: before the script runs, NCCL is swapped for gloo,
a device given as a GPU index (model.to(LOCAL_RANK), cuda:N) is taken for
the CPU, torch.cuda.set_device does nothing and DDP drops device_ids (it
refuses them for a CPU module). Nothing about ranks or rendezvous is
touched: the script reads tony's torchrun variables itself.
Usage: torch_on_cpu.py SCRIPT [ARGS...] (SCRIPT relative to this dir)."""
import os
import runpy
import sys

import torch
import torch.distributed
import torch.nn.parallel


def cpu(device):
    """A GPU index or cuda device means the CPU here; anything else stays."""
    if isinstance(device, int) or (isinstance(device, (str, torch.device)) and str(device).startswith("cuda")):
        return torch.device("cpu")
    return device


def on_cpu(to):
    def wrapped(self, *args, **kwargs):
        if args:
            args = (cpu(args[0]),) + args[1:]
        if "device" in kwargs:
            kwargs["device"] = cpu(kwargs["device"])
        return to(self, *args, **kwargs)
    return wrapped


torch.Tensor.to = on_cpu(torch.Tensor.to)
torch.nn.Module.to = on_cpu(torch.nn.Module.to)
torch.cuda.set_device = lambda device: None

init_process_group = torch.distributed.init_process_group


def gloo_process_group(backend=None, *args, **kwargs):
    return init_process_group("gloo" if backend in (None, "nccl") else backend, *args, **kwargs)


torch.distributed.init_process_group = gloo_process_group

load = torch.load
torch.load = lambda f, map_location=None, **kw: load(f, map_location="cpu", **kw)


class CpuDDP(torch.nn.parallel.DistributedDataParallel):
    def __init__(self, module, device_ids=None, output_device=None, *args, **kwargs):
        super().__init__(module, None, None, *args, **kwargs)


torch.nn.parallel.DistributedDataParallel = CpuDDP

here = os.path.dirname(os.path.abspath(__file__))
script = os.path.join(here, sys.argv[1])
sys.path.insert(0, os.path.dirname(script))  # the example's own imports (datautils)
sys.argv = [script] + sys.argv[2:]
runpy.run_path(script, run_name="__main__")
