"""The GPU proof's training job (bench/gpu_proof.sh): a plain single-device
PyTorch training loop, the same file run bare and under tony. It trains an
MLP on a learnable synthetic task (labels from a fixed random projection, so
the loss must fall; nothing is downloaded) for a fixed time after a warm-up,
and prints one JSON line: throughput, the loss, and what the task was given
(CUDA_VISIBLE_DEVICES, the devices torch sees, the torchrun variables)."""
import json
import os
import sys
import time

import torch

seconds = float(os.environ.get("GPU_PROOF_SECONDS", "12"))
width, depth, batch = 4096, 4, 2048
device = "cuda" if torch.cuda.is_available() else "cpu"
if device == "cpu":  # a rehearsal on a machine without a GPU: keep it small
    width, batch = 256, 256
if os.environ.get("GPU_PROOF_REQUIRE_CUDA") == "1" and device != "cuda":
    sys.exit(f"gpu_train: no CUDA device visible (CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r})")

torch.manual_seed(0)
layers = []
for _ in range(depth):
    layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers, torch.nn.Linear(width, 10)).to(device)
teacher = torch.randn(width, 10, device=device)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = torch.nn.CrossEntropyLoss()


def step():
    x = torch.randn(batch, width, device=device)
    y = (x @ teacher).argmax(dim=1)
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss


def sync():
    if device == "cuda":
        torch.cuda.synchronize()


first = step().item()
for _ in range(20):
    step()
sync()
steps, start = 0, time.perf_counter()
while time.perf_counter() - start < seconds:
    for _ in range(10):
        loss = step()
    steps += 10
    sync()
elapsed = time.perf_counter() - start
print(json.dumps({
    "samples_per_s": steps * batch / elapsed,
    "steps": steps,
    "seconds": elapsed,
    "loss_first": first,
    "loss_last": loss.item(),
    "device": device,
    "device_name": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
    "device_count": torch.cuda.device_count(),
    "torch": torch.__version__,
    "env": {k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "RANK", "WORLD_SIZE", "LOCAL_RANK",
                                           "MASTER_ADDR", "MASTER_PORT")},
}), flush=True)
