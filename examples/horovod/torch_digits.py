#!/usr/bin/env python3
"""Horovod (PyTorch, gloo controller) on scikit-learn's digits.

How tony runs it (`scripts/install-deps python` builds Horovod into
build/pyenv)::

    build/bin/tony submit --src_dir examples \
        --python_binary_path build/pyenv/bin/python \
        --executes horovod/torch_digits.py \
        --conf tony.application.framework=horovod \
        --conf tony.worker.instances=2

Each worker gets Horovod's env from tony (HOROVOD_RANK, HOROVOD_SIZE, local
and cross ranks, HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT pointing at the
coordinator's rendezvous store), so hvd.init() needs no horovodrun. Rank 0
prints "final accuracy: X".
"""
import gzip
import os
import random

os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import horovod.torch as hvd  # noqa: E402


def load_digits():
    """scikit-learn's bundled digits, read from its data file (no numpy)."""
    import importlib.util
    spec = importlib.util.find_spec("sklearn")
    for d in spec.submodule_search_locations:
        p = os.path.join(d, "datasets", "data", "digits.csv.gz")
        if os.path.exists(p):
            with gzip.open(p, "rt") as f:
                rows = [list(map(float, line.split(","))) for line in f if line.strip()]
            x = torch.tensor([r[:-1] for r in rows]) / 16.0
            y = torch.tensor([int(r[-1]) for r in rows])
            return x, y
    raise SystemExit("scikit-learn's digits data not found")


def main():
    hvd.init()
    torch.manual_seed(0)
    x, y = load_digits()
    idx = list(range(len(x)))
    random.Random(0).shuffle(idx)
    n_test = len(idx) // 5
    test, train = idx[:n_test], idx[n_test:]
    train = train[hvd.rank()::hvd.size()]  # each worker its shard
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * hvd.size(), momentum=0.9)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(15):
        random.Random(epoch).shuffle(train)
        for i in range(0, len(train) - 31, 32):
            b = train[i:i + 32]
            opt.zero_grad()
            loss = loss_fn(model(x[b]), y[b])
            loss.backward()
            opt.step()
        avg = hvd.allreduce(loss.detach(), name="loss")
        if hvd.rank() == 0:
            print(f"epoch {epoch + 1} loss {avg.item():.4f} (size {hvd.size()})", flush=True)
    with torch.no_grad():
        acc = (model(x[test]).argmax(1) == y[test]).float().mean()
    acc = hvd.allreduce(acc, name="acc")
    if hvd.rank() == 0:
        print(f"final accuracy: {acc.item():.4f}", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
