"""hir-insert-reshardings on 2 and 4 Gloo ranks: programs written as nvFuser writes them
(sharded inputs, the output's placement, no explicit resharding) are built with the builder
and run before (reshardings inserted and converted, no stream lowering) and after hir-lower;
each rank checks its local output against a single-process torch reference. Also the
builder's default output placements.

The test launches this file as a script under ``hir.tools.launch`` (one process per
rank); ``python test_insert_reshardings.py`` is the per-rank worker.
"""

import os
import sys

import pytest

BEFORE = "hir-insert-reshardings,hir-convert-to-communication{backend=gloo}"
AFTER = (
    "hir-insert-reshardings,hir-convert-to-communication{backend=gloo},"
    "hir-stream-lowering,hir-fuse-loops,hir-insert-deallocations,canonicalize,cse"
)


def _local(full, sharding, rank):
    if sharding is None or sharding.axis is None:
        return full.clone()
    return full.chunk(len(sharding.mesh), sharding.axis)[sharding.mesh.index(rank)].contiguous()


def _cases(world: int):
    """(name, builder function returning (module, global inputs, shardings, reference))."""
    import torch

    from hir.builder import Builder, Shard

    mesh = list(range(world))
    gen = torch.Generator().manual_seed(world)

    def ag_matmul():
        # A [S, D*2, K] split along axis 1, B replicated, output replicated, streamed on S.
        b = Builder()
        a = b.input([3, 2 * world, 8], sharding=Shard(mesh, 1))
        w = b.input([8, 5], sharding=Shard(mesh))
        out = b.matmul(a, w, sharding=Shard(mesh), stream_axis=0)
        b.output(out)
        A, W = torch.randn(3, 2 * world, 8, generator=gen), torch.randn(8, 5, generator=gen)
        return b.finish(), [A, W], [a.sharding, w.sharding], [A @ W], [out.sharding]

    def binary_scatter():
        # x split on rows, y replicated: y is scattered to x's split before the add.
        b = Builder()
        x = b.input([2 * world, 4], sharding=Shard(mesh, 0))
        y = b.input([2 * world, 4], sharding=Shard(mesh))
        out = b.add(x, y, stream_axis=1)
        b.output(out)
        X, Y = torch.randn(2 * world, 4, generator=gen), torch.randn(2 * world, 4, generator=gen)
        return b.finish(), [X, Y], [x.sharding, y.sharding], [X + Y], [out.sharding]

    def linear_gather_weight():
        # weight split on N, output replicated: the weight is gathered first.
        b = Builder()
        x = b.input([6, 8], sharding=Shard(mesh))
        w = b.input([2 * world, 8], sharding=Shard(mesh, 0))
        out = b.linear(x, w, sharding=Shard(mesh), stream_axis=0)
        b.output(out)
        X, W = torch.randn(6, 8, generator=gen), torch.randn(2 * world, 8, generator=gen)
        return b.finish(), [X, W], [x.sharding, w.sharding], [X @ W.T], [out.sharding]

    return [
        ("ag_matmul", ag_matmul),
        ("binary_scatter", binary_scatter),
        ("linear_gather_weight", linear_gather_weight),
    ]


def worker() -> int:
    import torch

    import hir
    from hir.interpreter import run
    from hir.interpreter.backends.process_groups import shutdown

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    failures = []
    for name, make in _cases(world):
        module, inputs, shardings, want, out_shardings = make()
        text = str(module)
        args = [_local(t, s, rank) for t, s in zip(inputs, shardings)]
        for pipeline in (BEFORE, AFTER):
            lowered = hir.parse(text, f"{name}.mlir")
            hir.lower(lowered, pipeline)
            if pipeline == AFTER and name == "ag_matmul" and '"hir.allgather"' not in str(lowered):
                failures.append(f"rank {rank}: {name}: no allgather after hir-lower")
            got = run(lowered, args, device="cpu")
            for g, w, s in zip(got, want, out_shardings):
                if not torch.allclose(g, _local(w, s, rank), rtol=1e-4, atol=1e-4):
                    failures.append(f"rank {rank}: {name} after '{pipeline}' differs from torch")
        if not failures:
            print(f"rank {rank}: {name} ok", flush=True)
    for failure in failures:
        print(failure, file=sys.stderr)
    shutdown()
    return 1 if failures else 0


@pytest.mark.parametrize("world", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_insert_reshardings_runs_equal(world):
    pytest.importorskip("torch")
    from multirank_util import launch_ranks

    result = launch_ranks(world, __file__, timeout_s=240, env={**os.environ, "HIR_DEVICE": "cpu"})
    report = "\n".join(f"--- rank {r.rank} (rc {r.returncode})\n{r.stdout}{r.stderr}" for r in result.ranks)
    assert result.returncode == 0, report
    assert sum(r.stdout.count(" ok\n") for r in result.ranks) == 3 * world, report


def test_builder_output_placements():
    from hir.builder import Builder, Shard

    b = Builder()
    rep = b.input([4, 8], sharding=Shard([0, 1]))
    rows = b.input([4, 8], sharding=Shard([0, 1], 0))
    cols = b.input([8, 6], sharding=Shard([0, 1], 1))
    k_split = b.input([8, 6], sharding=Shard([0, 1], 0))
    plain = b.input([8, 6])
    assert b.matmul(rep, plain).sharding == Shard([0, 1])  # replicated on a's mesh
    assert b.matmul(rows, plain).sharding == Shard([0, 1], 0)
    assert b.matmul(rep, cols).sharding == Shard([0, 1], 1)  # b's N split
    assert b.matmul(rep, k_split).sharding == Shard([0, 1])
    assert b.matmul(b.input([4, 8]), plain).sharding is None
    weight_n = b.input([6, 8], sharding=Shard([0, 1], 0))
    assert b.linear(rep, weight_n).sharding == Shard([0, 1], 1)
    assert b.linear(rows, b.input([6, 8])).sharding == Shard([0, 1], 0)
    split_row = b.input([8], sharding=Shard([0, 1], 0))
    assert b.add(b.input([4, 8]), split_row).sharding == Shard([0, 1], 1)  # right-aligned
    assert b.add(b.input([4, 8]), rep).sharding == Shard([0, 1])  # rhs's mesh
    assert b.add(rows, rep).sharding == Shard([0, 1], 0)


def test_resharding_to_another_mesh_inserts_one_set_per_operand():
    import hir

    text = """func.func @main(%x: memref<6x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>,
    %y: memref<6x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) {
  %o = memref.alloc() : memref<6x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  "hir.binary"(%x, %y, %o) {kind = "add"}
      : (memref<6x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>,
      memref<6x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>,
      memref<6x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
  return
}"""
    module = hir.parse(text, "mesh.mlir")
    hir.lower(module, "hir-insert-reshardings")
    assert str(module).count('"hir.set"') == 2
    hir.lower(module, "hir-insert-reshardings")  # idempotent: the operands now match
    assert str(module).count('"hir.set"') == 2


if __name__ == "__main__":
    sys.exit(worker())
