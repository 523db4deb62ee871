"""Uneven splits (MLIR's ``sharded_dims_offsets``) through the shard bridge, run on 2 and 4
Gloo ranks: fully annotated programs through ``hir.from_shard(propagate=False)`` (the
pinned sharding-propagation cannot carry offsets), a hand-partitioned program whose
argument states its boundaries (``hir.sharded_dims_offsets``) and gathers the uneven rows,
and (4 ranks) the same on a 2x2 grid. Every rank compares its local outputs, as converted
and after hir-lower, with its part of a torch reference (``_check`` of test_from_shard).

``python test_from_shard_uneven.py`` is the per-rank worker.
"""

import os
import sys

import pytest

from test_from_shard import _check


def bounds(n: int) -> list[int]:
    """Boundaries of 10 rows over n devices, parts of different extents (one empty on 4)."""
    return {2: [0, 3, 10], 4: [0, 4, 4, 9, 10]}[n]


def annotated(n: int) -> list:
    """(name, annotated program, reference): every value annotated, rows cut at bounds(n)."""
    import torch

    offsets = ", ".join(map(str, bounds(n)))
    head = f"shard.grid @g(shape = {n})\n"
    uneven = f"%s = shard.sharding @g split_axes = [[0]] sharded_dims_offsets = [{offsets}] : !shard.sharding"

    def placed(value: str, name: str, t: str) -> str:  # a result annotation, then one for its users
        return (
            f"  {name}0 = shard.shard {value} to %s : {t}\n  {name} "
            f"= shard.shard {name}0 to %s annotate_for_users : {t}\n"
        )

    chain = head + (
        "func.func @main(%x: tensor<10x4xf32>) -> tensor<10x4xf32> {\n"
        f"  {uneven}\n"
        + placed("%x", "%x1", "tensor<10x4xf32>")
        + "  %e = tensor.empty() : tensor<10x4xf32>\n"
        + placed("%e", "%e1", "tensor<10x4xf32>")
        + "  %y = linalg.exp ins(%x1 : tensor<10x4xf32>) outs(%e1 : tensor<10x4xf32>) -> tensor<10x4xf32>\n"
        + placed("%y", "%y1", "tensor<10x4xf32>")
        + "  return %y1 : tensor<10x4xf32>\n}\n"
    )
    matmul = head + (
        "func.func @main(%x: tensor<10x8xf32>, %w: tensor<8x6xf32>, %b: tensor<10x6xf32>) -> tensor<10x6xf32> {\n"
        f"  {uneven}\n  %r = shard.sharding @g split_axes = [[]] : !shard.sharding\n"
        "  %z = arith.constant 0.0 : f32\n"
        "  %x1 = shard.shard %x to %s annotate_for_users : tensor<10x8xf32>\n"
        "  %w1 = shard.shard %w to %r annotate_for_users : tensor<8x6xf32>\n"
        "  %b1 = shard.shard %b to %s annotate_for_users : tensor<10x6xf32>\n"
        "  %e = tensor.empty() : tensor<10x6xf32>\n"
        + placed("%e", "%e1", "tensor<10x6xf32>")
        + "  %f = linalg.fill ins(%z : f32) outs(%e1 : tensor<10x6xf32>) -> tensor<10x6xf32>\n"
        + placed("%f", "%f1", "tensor<10x6xf32>")
        + "  %h = linalg.matmul ins(%x1, %w1 : tensor<10x8xf32>, "
        "tensor<8x6xf32>) outs(%f1 : tensor<10x6xf32>) -> tensor<10x6xf32>\n"
        + placed("%h", "%h1", "tensor<10x6xf32>")
        + "  %e2 = tensor.empty() : tensor<10x6xf32>\n"
        + placed("%e2", "%e3", "tensor<10x6xf32>")
        + "  %y = linalg.add ins(%h1, %b1 : tensor<10x6xf32>, "
        "tensor<10x6xf32>) outs(%e3 : tensor<10x6xf32>) -> tensor<10x6xf32>\n"
        + placed("%y", "%y1", "tensor<10x6xf32>")
        + "  return %y1 : tensor<10x6xf32>\n}\n"
    )
    return [("uneven_chain", chain, torch.exp), ("uneven_matmul_bias", matmul, lambda x, w, b: x @ w + b)]


def handwritten(n: int) -> list:
    """(name, partitioned program, reference): the argument says where its rows live."""
    import torch

    offsets = ", ".join(map(str, bounds(n)))
    body = (
        "  %c0 = arith.constant 0 : index\n"
        "  %n = tensor.dim %x, %c0 : tensor<?x4xf32>\n"
        "  %e = tensor.empty(%n) : tensor<?x4xf32>\n"
        "  %y = linalg.exp ins(%x : tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>\n"
        "  %g = shard.all_gather %y on @g grid_axes = [0] gather_axis = 0 : tensor<?x4xf32> -> tensor<?x4xf32>\n"
        "  return %g : tensor<?x4xf32>\n}\n"
    )
    programs = [
        (
            "uneven_gather",
            f"shard.grid @g(shape = {n})\nfunc.func @main(%x: "
            f"tensor<?x4xf32> {{hir.split_axes = #shard<axisarray[[0]]>, "
            f"hir.sharded_dims_offsets = array<i64: {offsets}>}}) -> tensor<?x4xf32> {{\n" + body,
            torch.exp,
        )
    ]
    if n == 4:  # rows cut 3 + 7 over grid axis 0 of a 2x2 grid, replicated along axis 1
        programs.append(
            (
                "uneven_gather_2x2",
                "shard.grid @g(shape = 2x2)\nfunc.func @main(%x: "
                "tensor<?x4xf32> {hir.split_axes = #shard<axisarray[[0]]>, "
                "hir.sharded_dims_offsets = array<i64: 0, 3, 10>}) -> tensor<?x4xf32> {\n" + body,
                torch.exp,
            )
        )
    return programs


def worker() -> int:
    import hir

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    failures: list = []
    for name, text, reference in annotated(world):
        module = hir.parse(text, f"{name}.mlir")
        hir.from_shard(module, backend="gloo", propagate=False)
        assert "offsets = array<i64:" in str(module), module
        _check(name, module, reference, rank, failures, extent=10)
    for name, text, reference in handwritten(world):
        module = hir.parse(text, f"{name}.mlir")
        hir.lower(module, "hir-convert-shard-to-hir{backend=gloo}")
        _check(name, module, reference, rank, failures, extent=10)
    for failure in failures:
        print(failure, file=sys.stderr)
    from hir.interpreter.backends.process_groups import shutdown

    shutdown()
    return 1 if failures else 0


@pytest.mark.parametrize(
    "world", [pytest.param(2, marks=pytest.mark.slow), 4]
)  # 4 covers an empty part and the 2x2 grid
def test_uneven_programs_run_equal_on_gloo_ranks(world):
    from multirank_util import launch_ranks

    result = launch_ranks(world, __file__, timeout_s=300, env=dict(os.environ))
    report = "\n".join(f"--- rank {r.rank} (rc {r.returncode})\n{r.stdout}{r.stderr}" for r in result.ranks)
    assert result.returncode == 0, report
    checked = sum(r.stdout.count(" ok") for r in result.ranks)
    assert checked == world * 2 * (len(annotated(world)) + len(handwritten(world))), report


if __name__ == "__main__":
    sys.exit(worker())
