"""Lightning Fabric as its docs have a multi-node job written: two nodes of
one device each (Fabric(num_nodes=2, devices=1)), launched by whatever set
torchrun's variables, here tony. Trains a small regression with DDP and
prints what Fabric itself concluded: the cluster environment it detected,
its rank, node and local rank, the loss and whether both ranks ended with
the same weights. Lightning's Trainer (LightningModule) does not import on
Debian's torch 1.13 under Python 3.11 (torch.distributed._shard's
dataclasses), so Fabric stands for Lightning here."""
import torch
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cpu", devices=1, num_nodes=2, strategy="ddp")
fabric.launch()
torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model, opt = fabric.setup(model, opt)
# each rank its own data: DDP's all-reduce is what keeps the weights equal
g = torch.Generator().manual_seed(fabric.global_rank)
x = torch.randn(64, 8, generator=g)
y = x.sum(dim=1, keepdim=True)
losses = []
for _ in range(30):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    fabric.backward(loss)
    opt.step()
    losses.append(loss.item())
w = fabric.all_gather(torch.cat([p.detach().flatten() for p in model.parameters()]))
env = type(fabric._connector.cluster_environment).__name__
print(f"fabric rank {fabric.global_rank} of {fabric.world_size} node {fabric.node_rank} local {fabric.local_rank} "
      f"env {env} loss {losses[0]:.3f} -> {losses[-1]:.3f} weights agree {bool(torch.allclose(w[0], w[1]))}",
      flush=True)
