"""Shifts and halos from MLIR's shard dialect (issue 24), run on 2 and 4 Gloo ranks against
torch: ``shard.shift`` along one axis of a 2x2 grid (one ``hir.shift`` team per line),
``update_halo`` on a 2x2 grid, and halos on function arguments and results (upstream's
``ew_chain_with_halo``, ``test_shard_update_halo`` and ``test_shard_update_halo2d`` of
mlir/test/Dialect/Shard/partition.mlir, smaller). An argument or result with halos is the
devices' padded blocks side by side, so each rank checks its block with its halos against
torch on that block; the halo rows an end device keeps (never written: ``tensor.empty``)
are not compared.

The test launches this file under ``hir.tools.launch``; ``python test_from_shard_halo.py``
is the per-rank worker.
"""

import os
import sys

import pytest


def _hand(grid: str, sig: str, body: str) -> str:
    return f"shard.grid @g(shape = {grid})\nfunc.func @main({sig} {{\n{body}\n}}\n"


# upstream's ew_chain_with_halo on a 1-D grid of n: every value split by rows with halos [2, 1]
EW_CHAIN = """shard.grid @g(shape = {n})
func.func @main(%arg0: tensor<{rows}x16xf32>, %arg1: tensor<1xf32>, %arg2: tensor<1xf32>) -> tensor<{rows}x16xf32> {{
  %s = shard.sharding @g split_axes = [[0]] halo_sizes = [2, 1] : !shard.sharding
  %r = shard.sharding @g split_axes = [[]] : !shard.sharding
  %0 = shard.shard %arg0 to %s annotate_for_users : tensor<{rows}x16xf32>
  %1 = tosa.tanh %0 : (tensor<{rows}x16xf32>) -> tensor<{rows}x16xf32>
  %2 = shard.shard %1 to %s : tensor<{rows}x16xf32>
  %3 = shard.shard %2 to %s annotate_for_users : tensor<{rows}x16xf32>
  %4 = tosa.abs %3 : (tensor<{rows}x16xf32>) -> tensor<{rows}x16xf32>
  %5 = shard.shard %4 to %s : tensor<{rows}x16xf32>
  %6 = shard.shard %5 to %s annotate_for_users : tensor<{rows}x16xf32>
  %z1 = shard.shard %arg1 to %r annotate_for_users : tensor<1xf32>
  %z2 = shard.shard %arg2 to %r annotate_for_users : tensor<1xf32>
  %7 = tosa.negate %6, %z1, %z2 : (tensor<{rows}x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<{rows}x16xf32>
  %8 = shard.shard %7 to %s : tensor<{rows}x16xf32>
  %9 = shard.shard %8 to %s annotate_for_users : tensor<{rows}x16xf32>
  return %9 : tensor<{rows}x16xf32>
}}
"""

# upstream's test_shard_update_halo(2d): a block without halos in, with halos out
UPDATE_HALO_RESULT = """shard.grid @g(shape = {grid})
func.func @main(%arg0: tensor<16x16xi64>) -> tensor<16x16xi64> {{
  %s = shard.sharding @g split_axes = {axes} : !shard.sharding
  %0 = shard.shard %arg0 to %s : tensor<16x16xi64>
  %h = shard.sharding @g split_axes = {axes} halo_sizes = {halos} : !shard.sharding
  %1 = shard.shard %0 to %h : tensor<16x16xi64>
  %2 = shard.shard %1 to %h annotate_for_users : tensor<16x16xi64>
  return %2 : tensor<16x16xi64>
}}
"""


def padded_blocks(x, rank: int, grid: list, dims: list, halos: list):
    """(rank's block of ``x`` with its halos, mask of the elements defined there): dim
    dims[i] split over grid axis i of ``grid`` with halos halos[i] = (lo, hi); a halo past
    either end of the tensor is undefined."""
    import torch

    coords, index = [], rank
    for n in reversed(grid):
        coords.append(index % n)
        index //= n
    coords.reverse()
    block, mask = x, torch.ones_like(x, dtype=torch.bool)
    for (n, c), dim, (lo, hi) in zip(zip(grid, coords), dims, halos):
        core = x.shape[dim] // n
        rows = torch.arange(c * core - lo, (c + 1) * core + hi)
        valid = (rows >= 0) & (rows < x.shape[dim])
        block = block.index_select(dim, rows.clamp(0, x.shape[dim] - 1))
        shape = [1] * x.dim()
        shape[dim] = len(rows)
        mask = mask.index_select(dim, rows.clamp(0, x.shape[dim] - 1)) & valid.view(shape)
    return block, mask


def cases(n: int) -> list:
    """(name, program, pipeline, inputs(gen) -> global inputs, expected(globals, rank) ->
    (this rank's output, mask of the compared elements))."""
    import torch

    def randn(*shape):
        return lambda gen: [torch.randn(*shape, generator=gen)]

    def everywhere(fn):  # a split result compared whole
        return lambda xs, rank: (fn(*xs), None)

    rows = 8 if n == 4 else 4  # 2 core rows per device: halos [2, 1] fit
    out = [
        # arguments and results with halos: the blocks side by side, n x (2 + 2 + 1) rows
        (
            "ew_chain_with_halo",
            EW_CHAIN.format(n=n, rows=rows),
            "hir-from-shard-no-propagation",
            lambda gen: [torch.randn(n * 5, 16, generator=gen), torch.zeros(1), torch.zeros(1)],
            everywhere(lambda x, z1, z2: -torch.tanh(x).abs()),
        ),
        (
            "update_halo_result",
            UPDATE_HALO_RESULT.format(grid=n, axes="[[0]]", halos="[2, 2]"),
            "hir-from-shard",
            lambda gen: [torch.randint(-99, 99, (16, 16), generator=gen)],
            lambda xs, rank: padded_blocks(xs[0], rank, [n], [0], [(2, 2)]),
        ),
    ]
    if n == 4:
        out += [
            (
                "update_halo_result_2x2",
                UPDATE_HALO_RESULT.format(grid="2x2", axes="[[0], [1]]", halos="[1, 3, 2, 2]"),
                "hir-from-shard",
                lambda gen: [torch.randint(-99, 99, (16, 16), generator=gen)],
                lambda xs, rank: padded_blocks(xs[0], rank, [2, 2], [0, 1], [(1, 3), (2, 2)]),
            ),
            # a rotating shift along one grid axis: one hir.shift team per line of the grid
            (
                "shift_2x2_axis1",
                _hand(
                    "2x2",
                    "%x: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[0], [1]]>}) -> tensor<2x4xf32>",
                    "  %r = shard.shift %x on @g grid_axes = [1] shift_axis = 1 offset = 1 "
                    "rotate : tensor<2x4xf32> -> tensor<2x4xf32>\n  return %r : tensor<2x4xf32>",
                ),
                "hir-convert-shard-to-hir",
                randn(4, 8),
                everywhere(lambda x: torch.roll(x, 4, 1)),
            ),
            (
                "shift_2x2_axis0",
                _hand(
                    "2x2",
                    "%x: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[0], [1]]>}) -> tensor<2x4xf32>",
                    "  %r = shard.shift %x on @g grid_axes = [0] shift_axis = 0 offset = -1 "
                    "rotate : tensor<2x4xf32> -> tensor<2x4xf32>\n  return %r : tensor<2x4xf32>",
                ),
                "hir-convert-shard-to-hir",
                randn(4, 8),
                everywhere(lambda x: torch.roll(x, -2, 0)),
            ),
        ]
    return out  # fmt: skip


def worker() -> int:
    import torch
    from torch_mlir import ir

    import hir
    from hir.dialect import sharding_of
    from hir.interpreter.inputs import shard
    from hir.passes import PIPELINES

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    failures = []
    for name, text, pipeline, make_inputs, expected in cases(world):
        module = hir.parse(text, f"{name}.mlir")
        hir.lower(
            module,
            PIPELINES.get(pipeline, pipeline).replace(
                "hir-convert-shard-to-hir", "hir-convert-shard-to-hir{backend=gloo}"
            ),
        )
        fn = next(
            op
            for op in module.body.operations
            if op.operation.name == "func.func" and "hir.kernel" not in op.operation.attributes
        )
        types = [a.type for a in fn.regions[0].blocks[0].arguments]
        out_type = ir.FunctionType(ir.TypeAttr(fn.operation.attributes["function_type"]).value).results[0]
        globals_ = make_inputs(torch.Generator().manual_seed(len(name)))
        inputs = [shard(g, sharding_of(t), rank).clone() for g, t in zip(globals_, types)]
        want, mask = expected(globals_, rank)
        if mask is None:  # a global result: this rank's part of it
            want = shard(want, sharding_of(out_type), rank)
            mask = torch.ones_like(want, dtype=torch.bool)
        lowered = hir.parse(str(module), f"{name}.mlir")
        hir.lower(lowered, "hir-lower")
        for stage, program in (("converted", module), ("lowered", lowered)):
            (got,) = hir.run(program, inputs, device="cpu")
            if got.shape != want.shape or not torch.allclose(got[mask].double(), want[mask].double(), atol=1e-5):
                failures.append(f"rank {rank}: {name} ({stage}): got {got}, want {want} where {mask}")
            else:
                print(f"rank {rank}: {name} {stage} ok")
    for failure in failures:
        print(failure, file=sys.stderr)
    from hir.interpreter.backends.process_groups import shutdown

    shutdown()
    return 1 if failures else 0


@pytest.mark.parametrize("world", [pytest.param(2, marks=pytest.mark.slow), 4])  # 4 runs every case, the 2x2 ones too
def test_shifts_and_halos_run_equal_on_gloo_ranks(world):
    from multirank_util import launch_ranks

    result = launch_ranks(world, __file__, timeout_s=300, env=dict(os.environ))
    report = "\n".join(f"--- rank {r.rank} (rc {r.returncode})\n{r.stdout}{r.stderr}" for r in result.ranks)
    assert result.returncode == 0, report
    assert sum(r.stdout.count(" ok") for r in result.ranks) == world * 2 * len(cases(world)), report


def test_unpadded_global_input_is_refused_at_the_boundary(tmp_path):
    """An argument with halos is the devices' padded blocks side by side (4 blocks of 5
    rows for an 8-row tensor with halos [2, 1]): a global input of the unpadded shape is
    refused, as any input of the wrong shape, naming both shapes."""
    import torch

    import hir
    from hir.interpreter.inputs import InputError, make_input

    module = hir.parse(EW_CHAIN.format(n=4, rows=8), "ew.mlir")
    hir.lower(module, "hir-from-shard-no-propagation")
    fn = next(
        op
        for op in module.body.operations
        if op.operation.name == "func.func" and "hir.kernel" not in op.operation.attributes
    )
    arg = fn.regions[0].blocks[0].arguments[0]
    assert str(arg.type).startswith("memref<20x16xf32"), arg.type
    torch.save(torch.randn(8, 16), tmp_path / "x.pt")
    with pytest.raises(InputError, match=r"holds shape \[8, 16\], expected the global shape \[20, 16\]"):
        make_input(0, arg.type, str(tmp_path / "x.pt"), rank=0, seed=0, device=torch.device("cpu"))


if __name__ == "__main__":
    sys.exit(worker())
