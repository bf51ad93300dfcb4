"""Data-parallel training of a Fashion-MNIST MLP with torch's DistributedDataParallel, where bagua
does the communication (doc/pytorch.md).

    mpirun -np 4 python3 lib/torch/examples/train_fashion_mnist.py --algorithm q8

--algorithm: gloo (plain DDP, the reference), any of bagua_torch.ALGORITHMS (DDP with that
bagua hook: exact or a wire), backend (DDP without hook on the c10d backend "bagua", exact); FSDP2
(fully_shard per layer) on gloo (fsdp-gloo), on the "bagua" backend (fsdp-exact), or on it with
bagua_torch.relax_reduce_scatter of a wire of bagua_torch.REDUCE_SCATTER_ALGORITHMS (fsdp-q8,
...); local (no communication at all: each rank
trains its own copy, the compute time of a step for benchmarks). The sign hook
carries the momentum itself (1-bit SGD: it sign-averages m = 0.9 m + g and returns the
average), so for sign the optimizer is SGD without momentum; every other run uses SGD with
momentum 0.9. Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist). Each
rank trains on its shard of every epoch's shuffle; all ranks end each epoch with the same
weights, and rank 0 prints the test accuracy and the epoch's training time, then one "RESULT"
line for scripts (with the training time until the test accuracy first reached --target at the
end of an epoch)."""
import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import fully_shard

import bagua_torch

DATA_DIR = "/usr/share/datasets/fashion-mnist"
FSDP_CHOICES = ("fsdp-gloo",) + tuple(f"fsdp-{a}" for a in bagua_torch.REDUCE_SCATTER_ALGORITHMS)
CHOICES = ("gloo", "backend", "local") + bagua_torch.ALGORITHMS + FSDP_CHOICES
MOMENTUM = 0.9


def load_idx(name):
    """An idx file of Fashion-MNIST as a numpy array (images: n x 784 uint8)."""
    with gzip.open(os.path.join(DATA_DIR, name)) as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    array = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims)
    return array.reshape(shape[0], -1) if dims > 1 else array


def load(split):
    images = load_idx(f"{split}-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    labels = load_idx(f"{split}-labels-idx1-ubyte.gz").astype(np.int64)
    return torch.from_numpy((images - 0.2860) / 0.3530), torch.from_numpy(labels)


def mlp(hidden):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(784, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, 10))


def wrapped(algorithm, hidden):
    """The MLP wrapped for `algorithm`: (model, the DDP hook or None, whether evaluating it is
    collective: FSDP2 gathers its parameters)."""
    if algorithm in FSDP_CHOICES:
        wire = algorithm.split("-")[1]
        group = dist.group.WORLD if wire == "gloo" else dist.new_group(backend="bagua")
        mesh = DeviceMesh.from_group(group, "cpu")
        model = mlp(hidden)
        for layer in model:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        if wire not in ("gloo", "exact"):
            bagua_torch.relax_reduce_scatter(model, wire)
        return model, None, True
    if algorithm == "local":
        return mlp(hidden), None, False
    group = dist.new_group(backend="bagua") if algorithm == "backend" else None
    model = nn.parallel.DistributedDataParallel(mlp(hidden), process_group=group)
    hook = None
    if algorithm not in ("gloo", "backend"):
        hook = bagua_torch.register(model, algorithm, momentum=MOMENTUM)
    return model, hook, False


def accuracy(model, images, labels):
    with torch.no_grad():
        return (model(images).argmax(1) == labels).float().mean().item() * 100


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algorithm", choices=CHOICES, default="exact")
    parser.add_argument("--list-choices", action="store_true",
                        help="print the --algorithm choices and exit (no launch needed)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--hidden", type=int, default=512, help="width of the two hidden layers")
    parser.add_argument("--batch", type=int, default=64, help="per rank")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--target", type=float, default=85.0,
                        help="test accuracy (%%) whose training time is reported")
    parser.add_argument("--max-steps", type=int, default=0,
                        help="cut each epoch after this many steps (0: whole epochs), for timing")
    args = parser.parse_args()
    if args.list_choices:
        print(" ".join(CHOICES))
        return

    rank, size = bagua_torch.init(backend="gloo")
    model, hook, collective_eval = wrapped(args.algorithm, args.hidden)
    # The sign hook is the momentum (bagua_torch.HookState): the optimizer must not add its own.
    momentum = 0.0 if hook is not None and hook.algorithm == "sign" else MOMENTUM
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=momentum)
    train_images, train_labels = load("train")
    test_images, test_labels = load("t10k")
    parameters = sum(p.numel() for p in mlp(args.hidden).parameters())
    if rank == 0:
        print(f"{args.algorithm}: {size} ranks, MLP 784-{args.hidden}-{args.hidden}-10 "
              f"({parameters} parameters), batch {args.batch} per rank", flush=True)

    epoch_times, steps, last_epoch_steps, time_to_target = [], 0, 0, None
    for epoch in range(args.epochs):
        order = torch.randperm(len(train_labels), generator=torch.Generator().manual_seed(epoch))
        shard = order[rank::size]
        shard = shard[:len(shard) // args.batch * args.batch]  # equal step counts on all ranks
        if args.max_steps:
            shard = shard[:args.max_steps * args.batch]
        dist.barrier()
        start = time.perf_counter()
        last_epoch_steps = len(shard) // args.batch
        for batch in shard.split(args.batch):
            optimizer.zero_grad()
            F.cross_entropy(model(train_images[batch]), train_labels[batch]).backward()
            optimizer.step()
            steps += 1
        dist.barrier()
        epoch_times.append(time.perf_counter() - start)
        if collective_eval or rank == 0:  # with DDP every rank holds the same weights
            test_accuracy = accuracy(getattr(model, "module", model), test_images, test_labels)
        if rank == 0:
            if time_to_target is None and test_accuracy >= args.target:
                time_to_target = f"{sum(epoch_times):.1f}"
            print(f"epoch {epoch + 1}: test accuracy {test_accuracy:.2f}%, {epoch_times[-1]:.1f} s",
                  flush=True)
    if rank == 0:
        print(f"RESULT algorithm={args.algorithm} accuracy={test_accuracy:.2f} "
              f"epoch_s={sum(epoch_times) / len(epoch_times):.1f} "
              f"step_ms={1000 * sum(epoch_times) / steps:.1f} "
              f"last_epoch_step_ms={1000 * epoch_times[-1] / last_epoch_steps:.1f} "
              f"time_to_{args.target:g}={time_to_target or 'never'} "
              f"mb_per_step={f'{hook.bytes_sent / steps / 1e6:.3f}' if hook else 'n/a'} "
              f"parameters={parameters}", flush=True)


main()
