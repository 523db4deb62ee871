"""Views keep their split, run on 2 and 4 Gloo ranks, each rank's output equal to its part of
the unsharded program's:

* nvFuser's matmul_RS_through_bcast host program (seed 003), built with the Python builder
  as nvFuser writes it: B ``[DIDx(D), K, N]`` broadcast with flags ``{t, f, t, f, f}`` to
  ``[1, DIDx(D), 1, K, N]`` (the builder's reshape to the unit axes, an
  ``hir.alias_reshape`` whose split moves to axis 1, then ``hir.alias_broadcast``), a
  stream-parallel matmul with A ``[S, DIDx(D), M, 2, K]`` into ``[S, D, M, 2, N]`` and its
  sum over D reduce-scattered onto M, lowered by hir-lower;
* the worked example of docs/architecture.md: ``index_select`` on a table split on its
  columns, imported by hir.from_torch, each rank looking up its columns.

The test launches this file as a script under ``hir.tools.launch`` (one process per
rank); ``python test_split_views_multirank.py`` is the per-rank worker.
"""

import os
import sys

import pytest

from multirank_util import launch_workers, run_gloo_cases

PIPELINE = (
    "hir-convert-to-communication{backend=gloo},hir-stream-lowering,"
    "hir-fuse-loops,hir-insert-deallocations,canonicalize,cse"
)
CASES = ("matmul_rs_through_bcast", "index_select_split_table")
S, M, K, N = 3, 4, 8, 5


def through_bcast(world: int, sharded: bool):
    """The host program; ``sharded=False``: the same program with no mesh (one device)."""
    from hir.builder import Builder, Shard

    mesh = list(range(world))

    def on(axis: int):
        return Shard(mesh, axis) if sharded else None

    b = Builder("matmul_rs_through_bcast")
    a = b.input([S, world, M, 2, K], sharding=on(1))
    w = b.input([world, K, N], sharding=on(0))
    w_bcast = b.alias_broadcast(b.reshape(w, [1, world, 1, K, N]), [S, world, M, K, N])
    partial = b.matmul(a, w_bcast, stream_axis=0)
    b.output(b.sum(partial, [1], sharding=on(1), stream_axis=0))
    return b.finish()


def run_through_bcast(rank: int, world: int) -> str:
    import torch

    import hir

    gen = torch.Generator().manual_seed(7)
    a, w = torch.randn(S, world, M, 2, K, generator=gen), torch.randn(world, K, N, generator=gen)
    (whole,) = hir.run(through_bcast(world, sharded=False), [a, w], device="cpu")
    module = through_bcast(world, sharded=True)
    text = str(module)
    if (
        '"hir.alias_reshape"' not in text
        or "memref<1x" + str(world) + "x1x" + str(K) + "x" + str(N) + "xf32, #hir.shard<" not in text
    ):
        return f"the broadcast B is not a split view on axis 1:\n{text}"
    hir.lower(module, PIPELINE)
    if '"hir.reduce_scatter"' not in str(module):
        return f"no reduce_scatter in the lowered program:\n{module}"
    local = [a.chunk(world, 1)[rank].contiguous(), w.chunk(world, 0)[rank].contiguous()]
    (got,) = hir.run(module, local, device="cpu")
    want = whole.chunk(world, 1)[rank]
    if not torch.allclose(got, want, rtol=1e-5, atol=1e-5):
        return f"got {got}, want {want}"
    return ""


def run_index_select(rank: int, world: int) -> str:
    import torch
    from torch.distributed.tensor import Shard

    import hir
    from hir.frontend import from_torch

    class Lookup(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.table = torch.nn.Parameter(torch.randn(10, 4 * world), requires_grad=False)

        def forward(self, ids):
            return torch.index_select(self.table, 0, ids) * 2.0

    module, ids = Lookup(), torch.tensor([3, 1, 4, 1, 5, 9])
    program = from_torch(module, (ids,), mesh=list(range(world)), placements={"table": Shard(1), "output0": Shard(1)})
    if '"hir.set"' in str(program.module):
        return f"the lookup is not local:\n{program.module}"
    hir.lower(program.module, PIPELINE)
    (got,) = hir.run(program.module, program.arguments(module.state_dict(), ids), device="cpu")
    want = module(ids).detach().chunk(world, 1)[rank]
    if not torch.equal(got, want):
        return f"got {got}, want {want}"
    return ""


def run_case(name: str, rank: int, world: int) -> str:
    failure = run_through_bcast(rank, world) if name == "matmul_rs_through_bcast" else run_index_select(rank, world)
    return f"{name}: rank {rank}: {failure}" if failure else ""


def worker() -> int:
    return run_gloo_cases(CASES, run_case)


# 4 ranks (slow) run the same cases with D=4: the same code path as 2, at twice the processes
@pytest.mark.parametrize("world", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_split_views(world):
    checked, report = launch_workers(world, __file__, timeout_s=400, env=dict(os.environ))
    assert checked == len(CASES) * world, report


if __name__ == "__main__":
    sys.exit(worker())
