#!/usr/bin/env python3
"""Data-parallel PyTorch training (DDP, gloo backend) on scikit-learn's digits.

How tony runs it
----------------
One task per rank, all of role ``worker``::

    build/bin/tony submit --src_dir examples \
        --executes pytorch/ddp_digits.py \
        --task_params "--epochs 20 --checkpoint-every 50" \
        --python_binary_path $PWD/build/pyenv/bin/python \
        --conf tony.application.framework=pytorch \
        --conf tony.worker.instances=3

The orchestrator gives every task ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``,
``MASTER_PORT`` and ``LOCAL_RANK``, so ``init_process_group("gloo",
init_method="env://")`` works.  When those are missing the script falls back
to TonY's older contract (``INIT_METHOD`` = ``tcp://host:port`` plus ``RANK``
or ``TASK_INDEX`` and ``WORLD`` or ``TASK_NUM``), and with none of it runs as a
single process (handy for a quick local check).

Checkpoints and restarts
------------------------
Rank 0 saves ``{model, optimizer, step, epoch}`` every ``--checkpoint-every``
steps and at the end, atomically (temporary file + ``os.replace``), to
``$TONY_JOB_DIR/checkpoints/ddp.pt`` (``./checkpoints/ddp.pt`` when
``TONY_JOB_DIR`` is unset, or ``--checkpoint-dir``).  At start every rank
loads that file when present, prints ``resumed from step N`` (else
``starting from step 0``) and continues where it stopped; the data order is
deterministic per epoch, so a resumed run sees the same batches the lost run
would have.  So when the orchestrator restarts the whole job after a task
died (``SESSION_ID`` / ``NUM_AM_RETRIES`` > 0), training picks up from the
last checkpoint.

When one rank dies, the others fail within about a second with a gloo error
("Connection reset by peer") and exit non-zero.  A rank that *hangs* makes
the others wait up to ``--timeout`` seconds (default 300) in a collective.

Output (the task's stdout, flushed line by line): ``step N loss X`` every
``--log-every`` steps (the loss averaged over all ranks), ``epoch N ...``
after each epoch and, on rank 0, ``final accuracy: X`` (held-out 20 % split).
Exit status 0 on success.

``--step-sleep S`` sleeps S seconds per step so fault tests can kill a task
mid-way.  Needs torch >= 1.13 (Debian's python3-torch) and scikit-learn's bundled
digits data (read directly; nothing is downloaded).  numpy is not needed.
"""
import argparse
import datetime
import os
import sys
import time

# Several ranks share few cores: one intra-op thread per rank avoids
# oversubscription (set before torch is imported).  OMP_NUM_THREADS wins.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402
from torch.utils.data.distributed import DistributedSampler  # noqa: E402


def log(*a):
    print(*a, flush=True)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--step-sleep", type=float, default=0.0,
                   help="seconds to sleep after every step (fault tests)")
    p.add_argument("--checkpoint-every", type=int, default=50,
                   help="save a checkpoint every N steps (0: only at the end, "
                        "-1: never)")
    p.add_argument("--checkpoint-dir", default=None,
                   help="default $TONY_JOB_DIR/checkpoints or ./checkpoints")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds a collective may wait for the other ranks")
    return p.parse_args()


def dist_setup(timeout):
    """Initialise the process group from the env tony gives; returns
    (rank, world_size, distributed?)."""
    env = os.environ
    to = datetime.timedelta(seconds=timeout)
    if env.get("MASTER_ADDR") and env.get("MASTER_PORT"):
        rank = int(env.get("RANK", env.get("TASK_INDEX", "0")))
        world = int(env.get("WORLD_SIZE", env.get("WORLD", env.get("TASK_NUM", "1"))))
        env.setdefault("RANK", str(rank))
        env.setdefault("WORLD_SIZE", str(world))
        dist.init_process_group("gloo", init_method="env://", timeout=to)
    elif env.get("INIT_METHOD"):
        rank = int(env.get("RANK", env.get("TASK_INDEX", "0")))
        world = int(env.get("WORLD", env.get("WORLD_SIZE", env.get("TASK_NUM", "1"))))
        dist.init_process_group("gloo", init_method=env["INIT_METHOD"],
                                rank=rank, world_size=world, timeout=to)
    else:
        return 0, 1, False
    return dist.get_rank(), dist.get_world_size(), True


def digits_file():
    """Path of the digits.csv.gz that scikit-learn ships (the file that
    sklearn.datasets.load_digits reads), found without importing sklearn."""
    import importlib.util
    spec = importlib.util.find_spec("sklearn")
    for d in (spec.submodule_search_locations or []) if spec else []:
        p = os.path.join(d, "datasets", "data", "digits.csv.gz")
        if os.path.exists(p):
            return p
    return None


def load_data(test_fraction=0.2, seed=0):
    """Train and test TensorDatasets of the digits (x scaled to [0, 1]).

    Read with plain Python and torch.tensor rather than through numpy: in a
    venv whose numpy is 2.x, Debian's torch 1.13 (built for numpy 1.x) cannot
    exchange arrays with numpy, and Debian's scikit-learn does not import."""
    path = digits_file()
    if path:
        import gzip
        with gzip.open(path, "rt") as f:
            rows = [[float(v) for v in line.split(",")] for line in f if line.strip()]
        x = torch.tensor([r[:-1] for r in rows], dtype=torch.float32)
        y = torch.tensor([int(r[-1]) for r in rows], dtype=torch.long)
    else:
        from sklearn.datasets import load_digits
        xs, ys = load_digits(return_X_y=True)
        x = torch.tensor(xs.tolist(), dtype=torch.float32)
        y = torch.tensor(ys.tolist(), dtype=torch.long)
    x = x / 16.0
    idx = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    n_test = int(len(x) * test_fraction)
    te, tr = idx[:n_test], idx[n_test:]
    return TensorDataset(x[tr], y[tr]), TensorDataset(x[te], y[te])


def make_model():
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(),
                         nn.Linear(128, 64), nn.ReLU(),
                         nn.Linear(64, 10))


def save_checkpoint(path, model, opt, step, epoch):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                    "step": step, "epoch": epoch}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    try:  # make the rename itself durable
        fd = os.open(os.path.dirname(path), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def main():
    args = parse_args()
    t0 = time.time()
    rank, world, distributed = dist_setup(args.timeout)
    log("ddp_digits: rank %d/%d job=%s task=%s session=%s master=%s:%s" % (
        rank, world, os.environ.get("JOB_NAME", "-"),
        os.environ.get("TASK_INDEX", "-"),
        os.environ.get("SESSION_ID", os.environ.get("NUM_AM_RETRIES", "0")),
        os.environ.get("MASTER_ADDR", "-"), os.environ.get("MASTER_PORT", "-")))

    torch.manual_seed(0)
    train_ds, test_ds = load_data()
    sampler = DistributedSampler(train_ds, num_replicas=world, rank=rank,
                                 shuffle=True, seed=0, drop_last=False)
    loader = DataLoader(train_ds, batch_size=args.batch_size, sampler=sampler)
    steps_per_epoch = len(loader)
    total_steps = steps_per_epoch * args.epochs

    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    ckdir = args.checkpoint_dir or os.path.join(
        os.environ.get("TONY_JOB_DIR") or ".", "checkpoints")
    ckpath = os.path.join(ckdir, "ddp.pt")
    step = 0
    if os.path.exists(ckpath):
        ck = torch.load(ckpath, map_location="cpu")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        step = int(ck["step"])
    if distributed:
        # Every rank must resume from the same step (e.g. a shared file system
        # that is not yet coherent would break this): rank 0's view wins.
        t = torch.tensor([step], dtype=torch.long)
        dist.broadcast(t, src=0)
        if int(t.item()) != step:
            log("rank %d: checkpoint step %d differs from rank 0's %d" %
                (rank, step, int(t.item())))
            return 3
    if step > 0:
        log("resumed from step %d (%s)" % (step, ckpath))
    else:
        log("starting from step 0")

    ddp = DDP(model) if distributed else model
    loss_fn = nn.CrossEntropyLoss()
    start_epoch, skip = divmod(step, steps_per_epoch)
    t_train = time.time()
    for epoch in range(start_epoch, args.epochs):
        sampler.set_epoch(epoch)
        ddp.train()
        ep_loss, ep_n = 0.0, 0
        for i, (xb, yb) in enumerate(loader):
            if epoch == start_epoch and i < skip:
                continue  # already trained before the restart
            opt.zero_grad()
            loss = loss_fn(ddp(xb), yb)
            loss.backward()
            opt.step()
            step += 1
            ep_loss += loss.item()
            ep_n += 1
            if args.log_every > 0 and step % args.log_every == 0:
                lv = torch.tensor([loss.item()])
                if distributed:
                    dist.all_reduce(lv)
                    lv /= world
                log("step %d loss %.4f" % (step, lv.item()))
            if (rank == 0 and args.checkpoint_every > 0
                    and step % args.checkpoint_every == 0):
                save_checkpoint(ckpath, model, opt, step, epoch)
            if args.step_sleep > 0:
                time.sleep(args.step_sleep)
        if ep_n:
            log("epoch %d loss %.4f (step %d/%d)" % (
                epoch + 1, ep_loss / ep_n, step, total_steps))

    if rank == 0 and args.checkpoint_every >= 0 and step > 0:
        save_checkpoint(ckpath, model, opt, step, args.epochs)

    model.eval()
    with torch.no_grad():
        xs, ys = test_ds.tensors
        acc = (model(xs).argmax(1) == ys).float().mean().item()
    if distributed:
        dist.barrier()  # nobody leaves before everyone is done
        dist.destroy_process_group()
    if rank == 0:
        log("final accuracy: %.4f" % acc)
    log("done: rank %d, %d steps, train %.1fs, total %.1fs" % (
        rank, step, time.time() - t_train, time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
