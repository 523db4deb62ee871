"""The data-parallel options' checks, in one process: a training import with no replicated
fallback names the op it cannot place, ``schedule=`` and ``reshard_after_forward=`` are checked,
and the placements refuse what the devices do not divide."""

import pytest


def test_no_fallback_names_the_op():
    """A training import refuses an op with no placement for its operands' splits instead
    of replicating it (every device would hold the whole tensor)."""
    import torch
    from torch.distributed.tensor import Shard

    import hir

    class Cumulative(torch.nn.Module):
        def forward(self, x):
            return torch.cumsum(x, 0) * 2

    x = torch.randn(4, 3)
    hir.from_torch(Cumulative(), (x,), mesh=[0, 1], placements={"input0": Shard(0)})  # the fallback: replicated copies
    with pytest.raises(
        hir.HirError, match=r"'torch\.aten\.cumsum' has no placement .*no placement strategy for torch\.aten\.cumsum"
    ):
        hir.from_torch(Cumulative(), (x,), mesh=[0, 1], placements={"input0": Shard(0)}, replicate_fallback=False)


def test_schedule_option_is_checked():
    import torch

    import hir

    model = torch.nn.Linear(4, 2)
    batch = (torch.randn(2, 4),)
    with pytest.raises(
        hir.HirError,
        match="schedule must be a dict of defer_waits, prefetch, bucket_bytes, comm_stream, optimizer_in_backward, "
        "got {.prefech.: True}",
    ):
        hir.train_step(
            model,
            torch.optim.SGD(model.parameters()),
            lambda m, x: m(x).sum(),
            batch,
            mesh=[0],
            data_parallel="replicate",
            schedule={"prefech": True},
        )
    with pytest.raises(hir.HirError, match="schedule's bucket_bytes must be an int >= 0, got -4"):
        hir.train_step(
            model,
            torch.optim.SGD(model.parameters()),
            lambda m, x: m(x).sum(),
            batch,
            mesh=[0],
            data_parallel="replicate",
            schedule={"bucket_bytes": -4},
        )
    with pytest.raises(hir.HirError, match="schedule= orders a data-parallel step's collectives"):
        hir.train_step(model, torch.optim.SGD(model.parameters()), lambda m, x: m(x).sum(), batch, schedule={})
    with pytest.raises(
        hir.HirError,
        match="reshard_after_forward= says when a fully sharded step gathers its parameters; "
        "it takes data_parallel='fully_shard'",
    ):
        hir.train_step(
            model,
            torch.optim.SGD(model.parameters()),
            lambda m, x: m(x).sum(),
            batch,
            mesh=[0],
            data_parallel="replicate",
            reshard_after_forward=False,
        )
    with pytest.raises(hir.HirError, match="reshard_after_forward must be True or False, got 0"):
        hir.train_step(
            model,
            torch.optim.SGD(model.parameters()),
            lambda m, x: m(x).sum(),
            batch,
            mesh=[0],
            data_parallel="fully_shard",
            reshard_after_forward=0,
        )


def test_placements_refuse_what_the_devices_do_not_divide():
    import torch

    import hir
    from hir.frontend import data_parallel

    with pytest.raises(hir.HirError, match="batch tensor 0"):
        data_parallel.placements("replicate", {}, [torch.zeros(3, 2)], 2)
    with pytest.raises(hir.HirError, match="'w' .*dim 0"):
        data_parallel.placements("fully_shard", {"w": torch.zeros(3, 2)}, [torch.zeros(4, 2)], 2, sharded=["w"])
    with pytest.raises(hir.HirError, match="data_parallel must be one of"):
        data_parallel.placements("zero3", {}, [], 2)
