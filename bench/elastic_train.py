"""The training bench/elastic_bench.py runs under tony and under torchrun
alike: PyTorch DDP over gloo (CPU), one process per node, the world read
from the env (RANK, WORLD_SIZE, MASTER_*: both launchers set them). After
each step every process appends "<time.time()> <world size> <step>" to
STAMPS/<pid>, so the bench reads when training resumed in a smaller world
by the processes' own clocks. Ends after argv[1] seconds of training."""
import os
import sys
import time

import torch
import torch.distributed as dist

stamps = os.environ["ELASTIC_BENCH_STAMPS"]
dist.init_process_group("gloo")
size = dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
end = time.time() + float(sys.argv[1])
step = 0
with open(os.path.join(stamps, str(os.getpid())), "a", buffering=1) as out:
    while time.time() < end:
        x = torch.randn(32, 64)
        loss = (model(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        out.write(f"{time.time():.6f} {size} {step}\n")
        time.sleep(0.02)
dist.destroy_process_group()
