"""bagua_torch's model averagers under mpirun (any rank count): replicas that start apart converge
toward each other and keep their mean; the asynchronous averager stops and resumes, and is left
running at exit, where bagua_torch must stop it cleanly (the run then exits with status 0).

Deterministic: no check depends on timing (the asynchronous part waits for rounds, bounded by
a generous deadline, and stops the averager before it compares). A failed check is recorded and
the ranks carry on in step; the exit status is 1 if any rank failed one."""
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.optim import PostLocalSGDOptimizer

import bagua_torch
from checks import check, finish, raises

RANK, SIZE = bagua_torch.init()


def replica(dtype=torch.float32):
    """A small model whose weights differ per rank, with gradients (torch's averagers skip
    parameters without one)."""
    torch.manual_seed(RANK)
    model = nn.Sequential(nn.Linear(30, 40), nn.Linear(40, 3)).to(dtype)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    return model


def flat(model):
    return torch.cat([p.detach().reshape(-1).double() for p in model.parameters()])


def gather(vector):
    gathered = [torch.empty_like(vector) for _ in range(SIZE)]
    dist.all_gather(gathered, vector)
    return torch.stack(gathered)


def spread(vector):
    """The largest difference between two ranks' copies of any element."""
    everyone = gather(vector)
    return (everyone.max(0).values - everyone.min(0).values).max().item()


def mean(vector):
    return gather(vector).mean(0)


def test_first_call():
    """bagua_decentralized_average as the process's first bagua call, before anything made
    bagua's MPI handles (BAGUA_AVG): must work like any other."""
    try:
        value = bagua_torch.decentralized_average_(torch.full((4,), float(RANK)), mode="all")
        check(torch.equal(value, torch.full((4,), (SIZE - 1) / 2)), "first call: wrong average")
    except bagua_torch.BaguaError as e:
        check(False, f"decentralized_average_ as the first bagua call: {e}")


def test_decentralized():
    for mode in ("all", "shift_one", "ring"):
        for dtype in (torch.float32, torch.bfloat16):
            model = replica(dtype)
            before, start_mean = spread(flat(model)), mean(flat(model))
            averager = bagua_torch.DecentralizedAverager(mode)
            for _ in range(2 * SIZE):
                averager.average_parameters(model.parameters())
            after = spread(flat(model))
            tolerance = 1e-6 if dtype == torch.float32 else 0.02
            check(after <= 0.05 * before + tolerance,
                  f"decentralized {mode} {dtype}: spread {before:.3g} -> {after:.3g}")
            check(torch.allclose(mean(flat(model)), start_mean, atol=tolerance),
                  f"decentralized {mode} {dtype}: the mean moved")
            if mode == "all" and dtype == torch.float32:
                check(after == 0, "decentralized all: not bit-identical")


def test_low_precision():
    model = replica()
    before, start_mean = spread(flat(model)), mean(flat(model))
    averager = bagua_torch.LowPrecisionDecentralizedAverager()
    for _ in range(30):
        averager.average_parameters(model.parameters())
    after = spread(flat(model))
    check(after <= 0.01 * before, f"low precision: spread {before:.3g} -> {after:.3g}")
    check(torch.allclose(mean(flat(model)), start_mean, atol=0.01), "low precision: mean moved")
    averager.close()


def test_post_local_sgd():
    """DecentralizedAverager inside torch's PostLocalSGDOptimizer: local SGD steps, averaging
    every 2 steps after 2 warm-up steps."""
    model = replica()
    averager = bagua_torch.DecentralizedAverager("all", period=2, warmup_steps=2)
    optimizer = PostLocalSGDOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), averager)
    for step in range(6):
        for p in model.parameters():
            p.grad = torch.full_like(p, float(RANK + step))
        optimizer.step()
        due = step >= 2 and step % 2 == 0
        check((spread(flat(model)) == 0) == due or SIZE == 1,
              f"post-local SGD step {step}: averaged {'not ' if due else ''}as scheduled")


def test_partial():
    model = replica()
    before = gather(flat(model))
    averager = bagua_torch.PartialAverager(group_size=max(2, SIZE // 2))
    groups = []
    for _ in range(40):
        averager.average_parameters(model.parameters())
        groups.append(averager.last_group)
    averager.leave()
    after = gather(flat(model))
    check(all(RANK in g["members"] and abs(sum(g["weights"]) - 1) < 1e-9 for g in groups),
          "partial: a group without this rank, or weights not summing to 1")
    low, high = before.min(0).values, before.max(0).values
    check(bool(((after >= low - 1e-5) & (after <= high + 1e-5)).all()),
          "partial: a value left the range of the replicas (not an average)")
    check(spread(flat(model)) < (high - low).max().item(),
          "partial: the replicas did not move toward each other")


def wait_for_rounds(averager, more, deadline_s=120):
    """Waits until `averager` applied `more` rounds beyond the most any rank has applied now:
    every rank waits for the same count (rounds are collective), so none waits for rounds the
    others, done waiting, stop (a deadline only against a hang)."""
    target = torch.tensor([averager.rounds + more])
    dist.all_reduce(target, op=dist.ReduceOp.MAX)
    start = time.monotonic()
    while averager.rounds < target.item() and time.monotonic() - start < deadline_s:
        time.sleep(0.01)
    return averager.rounds >= target.item()


def test_async():
    model = replica()
    start_mean = mean(flat(model))
    averager = bagua_torch.AsyncAverager(model, interval_ms=5)
    for step in range(5):  # writes under the lock, as an optimizer step would
        with averager.locked(), torch.no_grad():
            for p in model.parameters():
                p.add_(0.01 * (step + 1))
    dist.barrier()  # every rank's writes are in; rounds from the third on start after them
    check(wait_for_rounds(averager, 3), "async: too few rounds before the deadline")
    averager.stop()
    rounds = torch.tensor([averager.rounds])
    check(spread(rounds.double()) == 0, "async: ranks applied different numbers of rounds")
    shifted_mean = start_mean + 0.01 * 15
    check(spread(flat(model)) < 1e-5, f"async: replicas still {spread(flat(model)):.3g} apart")
    check(torch.allclose(mean(flat(model)), shifted_mean, atol=1e-5), "async: the mean moved")
    averager.resume()
    check(wait_for_rounds(averager, 1), "async: no round after resume")
    # Left running: bagua_torch.shutdown() at exit stops it before MPI_Finalize.


def test_bad_input():
    check(raises(ValueError, lambda: bagua_torch.DecentralizedAverager("star")),
          "decentralized: unknown mode accepted")
    check(raises(ValueError, lambda: bagua_torch.DecentralizedAverager(period=0)),
          "decentralized: period 0 accepted")


def main():
    for test in (test_first_call, test_decentralized, test_low_precision, test_post_local_sgd, test_partial,
                 test_bad_input, test_async):
        test()
    finish("test_averagers")


main()
