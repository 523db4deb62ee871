"""A loss that is the ``.mean()`` of a tensor split over the devices (the rows of a
sequence-parallel block's output, the columns of a column-parallel projection's): each
device sums its part and divides by the whole count, the devices' parts summed (an
allreduce) give the mean; its backward spreads the gradient over each device's part.
10 SGD steps on 2 Gloo ranks equal single-process eager training.

The test launches this file once per rank; ``python test_sharded_mean_loss.py CASE...`` is
the per-rank worker (cases: ``rows``, ``columns``).
"""

import os
import re
import sys

from multirank_util import launch_workers, run_gloo_cases
from training_util import sequence_parallel_mlp, steps_equal_eager

STEPS = 10


def _model(case: str):
    """rows: two residual MLP blocks; columns: one projection (its output split on its
    last dim when its weight is split on its rows)."""
    import torch

    if case == "rows":
        return sequence_parallel_mlp()
    torch.manual_seed(0)
    return torch.nn.Linear(8, 16)


def loss_fn(m, x):
    return m(x).square().mean()


def run_case(case: str, rank: int, world: int) -> str:
    import torch
    from torch.distributed.tensor import Shard

    import hir

    torch.manual_seed(1)
    batches = [
        (torch.randn(1, 4 * world, 8),) for _ in range(STEPS)
    ]  # one sequence: its split tokens stay blocks of the flattened rows
    if case == "rows":  # sequence parallel: the tokens split between the blocks, the output's rows split
        placements = {f"{i}.{n}.weight": Shard(0 if n == "up" else 1) for i in range(2) for n in ("up", "down")} | {
            "input0": Shard(1)
        }
    else:
        placements = {"weight": Shard(0), "bias": Shard(0)}
    model, reference = _model(case), _model(case)
    optimizer, eager = (torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (model, reference))
    step = hir.train_step(model, optimizer, loss_fn, batches[0], mesh=list(range(world)), placements=placements)
    lowered = str(next(iter(step.programs.values())).module)
    if not re.search(r"torch\.aten\.div\.Scalar", lowered) or '"hir.reduction"' not in lowered:
        return f"{case}: the mean is not each device's sum over the whole count, summed over the devices\n{lowered}"
    return steps_equal_eager(step, loss_fn, batches, model, optimizer, reference, eager, case)


def test_mean_of_split_rows_and_columns_trains_equal_to_eager():
    checked, report = launch_workers(2, __file__, "rows", "columns", timeout_s=1200, env=dict(os.environ))
    assert checked == 4, report


if __name__ == "__main__":
    sys.exit(run_gloo_cases(sys.argv[1:], run_case))
