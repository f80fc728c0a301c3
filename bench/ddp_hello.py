"""The smallest real DDP job: join a gloo process group (env://), all-reduce
one tensor, leave. Used to measure what launching costs, not training."""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group("gloo", init_method="env://")
t = torch.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(t)
n = dist.get_world_size()
assert t.item() == n * (n + 1) / 2, t
dist.barrier()
dist.destroy_process_group()
