"""FSDP2 (fully_shard) over the c10d backend "bagua" under mpirun: exact against DDP on gloo,
and with bagua_torch.relax_reduce_scatter (q8, q4) converging and identical on every rank; the
plain reduce_scatter_ under it against closed forms.

Deterministic: every rank trains on its own fixed batches of a linear regression."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP

import bagua_torch
from checks import check, finish, raises

RANK, SIZE = bagua_torch.init()  # gloo is the default group: the reference
STEPS = 8
TARGET = torch.randn(4, 24, generator=torch.Generator().manual_seed(7))


def net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(24, 48), nn.Tanh(), nn.Linear(48, 4))


def train(model, steps=STEPS):
    """SGD on this rank's batches; returns the last step's loss (averaged over the ranks)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(100 + RANK)
    for _ in range(steps):
        x = torch.randn(16, 24, generator=generator)
        loss = (model(x) - x @ TARGET.t()).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    last = loss.detach().clone()
    dist.all_reduce(last)
    return last.item() / SIZE


def parameters(model):
    """The full parameters (gathered from FSDP2's shards) as one vector."""
    full = [p.full_tensor() if hasattr(p, "full_tensor") else p for p in model.parameters()]
    return torch.cat([p.detach().reshape(-1) for p in full])


def sharded(mesh):
    model = net()
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def same_on_every_rank(vector):
    highest, lowest = vector.clone(), vector.clone()
    dist.all_reduce(highest, op=dist.ReduceOp.MAX)
    dist.all_reduce(lowest, op=dist.ReduceOp.MIN)
    return torch.equal(highest, lowest)


def check_reduce_scatter():
    """reduce_scatter_ of rank r's (r + 1) * (i % 7): exact is the closed form, q8 within its
    one-encoding bound (the other ranks' block ranges / 510), q4 within / 30; bad shapes and
    dtypes raise."""
    shard = 50
    index = torch.arange(SIZE * shard)
    mine = (RANK + 1) * (index % 7).float()
    want = (index % 7).float().view(SIZE, shard)[RANK] * (SIZE * (SIZE + 1) / 2)
    others = sum(6.0 * (p + 1) for p in range(SIZE) if p != RANK)
    for algorithm, steps in (("exact", 0), ("q8", 255), ("q4", 15)):
        out = torch.empty(shard)
        bagua_torch.reduce_scatter_(out, mine.clone(), algorithm, average=False)
        error = (out - want).abs().max().item()
        bound = others / (2 * steps) + 1e-4 if steps else 0.0
        check(error <= bound, f"reduce_scatter_ {algorithm}: error {error:.3g} > {bound:.3g}")
        average = torch.empty(shard)
        bagua_torch.reduce_scatter_(average, mine.clone(), algorithm, average=True)
        check(torch.allclose(average, out / SIZE, atol=1e-6),
              f"reduce_scatter_ {algorithm}: the average is not the sum / {SIZE}")
    check(raises(ValueError, lambda: bagua_torch.reduce_scatter_(torch.empty(shard + 1), mine,
                                                                 "q8"), "shards"),
          "reduce_scatter_ of mismatched sizes: no clear error")
    check(raises(TypeError, lambda: bagua_torch.reduce_scatter_(
        torch.empty(shard, dtype=torch.float64), mine.double(), "q8"), "float64"),
          "reduce_scatter_ q8 of float64: no clear error")


def main():
    check_reduce_scatter()
    mesh = DeviceMesh.from_group(dist.new_group(backend="bagua"), "cpu")
    initial_loss = train(DDP(net()), steps=1)
    reference_model = DDP(net())
    reference_loss = train(reference_model)
    reference = parameters(reference_model)
    exact = sharded(mesh)
    exact_loss = train(exact)
    check(torch.allclose(parameters(exact), reference, rtol=0, atol=1e-5),
          f"FSDP2 on bagua: off DDP on gloo by {(parameters(exact) - reference).abs().max():.3g}")
    check(abs(exact_loss - reference_loss) < 1e-5, f"FSDP2 loss {exact_loss} != {reference_loss}")
    for algorithm, slack in (("q8", 0.05), ("q4", 0.25)):
        model = sharded(mesh)
        bagua_torch.relax_reduce_scatter(model, algorithm)
        loss = train(model)
        result = parameters(model)
        check(same_on_every_rank(result), f"FSDP2 {algorithm}: parameters differ across ranks")
        check(loss < initial_loss and loss < reference_loss * (1 + slack) + 1e-3,
              f"FSDP2 {algorithm}: loss {loss:.4g} (exact {reference_loss:.4g}, "
              f"first step {initial_loss:.4g})")
    check(raises(ValueError, lambda: bagua_torch.RelaxedReduceScatter("q3"), "q8"),
          "unknown reduce-scatter algorithm: no clear error")
    check(raises(TypeError, lambda: bagua_torch.relax_reduce_scatter(net(), "q8"), "fully_shard"),
          "relax_reduce_scatter on an unsharded model: no clear error")
    finish("test_fsdp")


main()
