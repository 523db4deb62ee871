"""The views group: hir.alias_select / alias_chunk / alias_broadcast / alias_reshape /
alias_stack_shards and the upstream
memref.subview (static, dynamic, strided, rank-reducing), collapse_shape and expand_shape,
in the interpreter and the builder. Each is zero-copy (writes land in the parent buffer), is
freed with its buffer, and reports bad run-time offsets at the op."""

import pytest
import torch

from hir.builder import Builder, Shard
from hir.core import HirError
from hir.dialect import Sharding
from hir.interpreter import run as run_module
from interp_util import mem, run

T864 = mem([8, 64])


ROW = mem([64], layout="strided<[1], offset: ?>")


def test_interp_alias_select_writes_land_in_parent():
    text = f"""func.func @main(%buf: {T864}, %i: index) -> {ROW} {{
  %row = "hir.alias_select"(%buf, %i) {{axis = 0 : i64}} : ({T864}, index) -> {ROW}
  "hir.binary"(%row, %row, %row) {{kind = "add"}} : ({ROW}, {ROW}, {ROW}) -> ()
  return %row : {ROW}
}}"""
    buf = torch.randn(8, 64)
    before = buf.clone()
    (row,) = run(text, [buf, 3])
    assert row.data_ptr() == buf[3].data_ptr()
    assert torch.equal(buf[3], before[3] * 2) and torch.equal(buf[4], before[4])


def test_interp_alias_chunk_is_a_view_of_equal_parts():
    """Chunk 2 of 4 along axis 0, then chunk 1 of 2 of it along axis 1: writes land in the parent."""
    quarter = mem([2, 64], layout="strided<[64, 1], offset: ?>")
    eighth = mem([2, 32], layout="strided<[64, 1], offset: ?>")
    text = f"""func.func @main(%buf: {T864}, %i: index, %j: index) -> {eighth} {{
  %rows = "hir.alias_chunk"(%buf, %i) {{axis = 0 : i64, chunks = 4 : i64}} : ({T864}, index) -> {quarter}
  %part = "hir.alias_chunk"(%rows, %j) {{axis = 1 : i64, chunks = 2 : i64}} : ({quarter}, index) -> {eighth}
  "hir.binary"(%part, %part, %part) {{kind = "add"}} : ({eighth}, {eighth}, {eighth}) -> ()
  return %part : {eighth}
}}"""
    buf = torch.randn(8, 64)
    expected = buf.clone()
    expected[4:6, 32:] *= 2
    (part,) = run(text, [buf, 2, 1])
    assert part.data_ptr() == buf[4:6, 32:].data_ptr() and part.shape == (2, 32)
    assert torch.equal(buf, expected)


ROWS = "memref<?x4xf32, strided<[4, 1], offset: ?>>"


def test_views_share_memory_with_their_buffer():
    text = f"""func.func @main(%a: memref<8x4xf32>, %o: index, %n: index) -> ({ROWS}, memref<32xf32>, memref<2x4x4xf32>,
    memref<3x8x4xf32, strided<[0, 4, 1], offset: ?>>) {{
  %rows = memref.subview %a[%o, 0] [%n, 4] [1, 1] : memref<8x4xf32> to {ROWS}
  %flat = memref.collapse_shape %a [[0, 1]] : memref<8x4xf32> into memref<32xf32>
  %grid = memref.expand_shape %a [[0, 1], [2]] output_shape [2, 4, 4] : memref<8x4xf32> into memref<2x4x4xf32>
  %wide = "hir.alias_broadcast"(%a) : (memref<8x4xf32>) -> memref<3x8x4xf32, strided<[0, 4, 1], offset: ?>>
  return %rows, %flat, %grid, %wide
      : {ROWS}, memref<32xf32>, memref<2x4x4xf32>, memref<3x8x4xf32, strided<[0, 4, 1], offset: ?>>
}}"""
    a = torch.randn(8, 4)
    rows, flat, grid, wide = run(text, [a, 2, 3])
    assert torch.equal(rows, a[2:5]) and torch.equal(flat, a.reshape(32)) and torch.equal(grid, a.reshape(2, 4, 4))
    assert torch.equal(wide, a.expand(3, 8, 4))
    for view in (rows, flat, grid, wide):
        assert view.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()


def test_subview_out_of_bounds_is_reported_at_the_op():
    text = f"""func.func @main(%a: memref<8x4xf32>, %o: index) -> {ROWS} {{
  %c2 = arith.constant 2 : index
  %rows = memref.subview %a[%o, 0] [%c2, 4] [1, 1] : memref<8x4xf32> to {ROWS}
  return %rows : {ROWS}
}}"""
    with pytest.raises(
        HirError,
        match=r"test.mlir:3:11: error: 'memref.subview' offset 7, size 2, stride "
        r"1 is out of bounds for axis 0 of %arg0 \(local shape \[8, 4\]\)",
    ):
        run(text, [torch.randn(8, 4), 7])


def test_deallocating_a_buffer_kills_its_views():
    text = """func.func @main(%x: memref<8xf32>) -> memref<8xf32> {
  %t = memref.alloc() : memref<2x4xf32>
  %flat = memref.collapse_shape %t [[0, 1]] : memref<2x4xf32> into memref<8xf32>
  %out = memref.alloc() : memref<8xf32>
  memref.dealloc %t : memref<2x4xf32>
  "hir.set"(%flat, %out) : (memref<8xf32>, memref<8xf32>) -> ()
  return %out : memref<8xf32>
}"""
    with pytest.raises(HirError, match=r"'hir.set' operand #0 \(%collapse_shape\) is used after memref.dealloc"):
        run(text, [torch.randn(8)])


def check_sharded_views_keep_the_split_axis(rank: int) -> None:
    """A subview of a buffer split over [0, 1] views this rank's shard; one that cuts the
    split axis is refused at the op."""
    shard = "#hir.shard<array<i64: 0, 1>, 0 : i64>"
    ok = f"""func.func @main(%a: memref<8x4xf32, {shard}>) -> memref<8x2xf32, strided<[4, 1], offset: 1>, {shard}> {{
  %v = memref.subview %a[0, 1] [8, 2] [1, 1]
      : memref<8x4xf32, {shard}> to memref<8x2xf32, strided<[4, 1], offset: 1>, {shard}>
  return %v : memref<8x2xf32, strided<[4, 1], offset: 1>, {shard}>
}}"""
    local = torch.randn(4, 4)  # this rank's shard
    (v,) = run(ok, [local])
    assert torch.equal(v, local[:, 1:3])
    bad = ok.replace("[0, 1] [8, 2]", "[2, 1] [4, 2]").replace(
        "8x2xf32, strided<[4, 1], offset: 1>", "4x2xf32, strided<[4, 1], offset: 9>"
    )
    with pytest.raises(HirError, match="views axis 0 of %arg0, which is split over the device mesh"):
        run(bad, [local])


def test_alias_reshape_moves_the_split_with_its_group():
    """emit computes the view type (split axis 2 of [2, 4, 6] -> axis 1 of [8, 6]); an inner
    split axis is rejected (the run on two ranks: check_alias_reshape_views_the_local_shard)."""
    from torch_mlir import ir

    import hir
    from hir.dialect import AliasReshapeOp

    grid = "memref<2x4x6xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>"
    module = hir.parse(
        f"""func.func @main(%a: {grid}) {{
  return
}}""",
        "reshape.mlir",
    )
    with module.context, ir.Location.unknown():
        block = module.body.operations[0].regions[0].blocks[0]
        with ir.InsertionPoint.at_block_begin(block):
            view = AliasReshapeOp.emit(block.arguments[0], [8, 6], [[0, 1], [2]])
    assert str(view.type) == "memref<8x6xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>"
    inner = "memref<2x4x6xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>"
    with pytest.raises(HirError, match="split axis 1 is not the outermost axis of its group"):
        hir.parse(
            f"""func.func @main(%a: {inner}) {{
  %v = "hir.alias_reshape"(%a) {{reassociation = [[0, 1], [2]]}} : ({inner}) -> memref<8x6xf32>
  return
}}""",
            "inner.mlir",
        )


RESHAPE_GRID = "memref<2x4x6xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>"
RESHAPE_FLAT = "memref<8x6xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>"


def check_alias_reshape_views_the_local_shard(rank: int) -> None:
    """hir.alias_reshape views this rank's local shard (half of axis 2) without a copy."""
    text = f"""func.func @main(%a: {RESHAPE_GRID}) -> {RESHAPE_FLAT} {{
  %v = "hir.alias_reshape"(%a) {{reassociation = [[0, 1], [2]]}} : ({RESHAPE_GRID}) -> {RESHAPE_FLAT}
  return %v : {RESHAPE_FLAT}
}}"""
    local = torch.randn(2, 4, 3)
    (v,) = run(text, [local])
    assert v.shape == (8, 3) and v.data_ptr() == local.data_ptr() and torch.equal(v, local.reshape(8, 3))


STACK_COLS = "memref<4x6xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>"
STACK_ROWS = "memref<4x2x3xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>"


def check_alias_stack_shards_views_the_local_shard(rank: int) -> None:
    """hir.alias_stack_shards is this rank's [4, 3] shard unsqueezed at ``at``: the same
    memory, so a write through the view lands in the shard."""
    text = f"""func.func @main(%a: {STACK_COLS}) -> {STACK_ROWS} {{
  %v = "hir.alias_stack_shards"(%a) {{axis = 1 : i64, at = 1 : i64}} : ({STACK_COLS}) -> {STACK_ROWS}
  "hir.binary"(%v, %v, %v) {{kind = "add"}} : ({STACK_ROWS}, {STACK_ROWS}, {STACK_ROWS}) -> ()
  return %v : {STACK_ROWS}
}}"""
    local = torch.randn(4, 3)
    before = local.clone()
    (v,) = run(text, [local])
    assert v.shape == (4, 1, 3) and v.data_ptr() == local.data_ptr()
    assert torch.equal(local, 2 * before) and torch.equal(v, local.unsqueeze(1))


RANK_CASES = {
    f.__name__: f
    for f in (
        check_sharded_views_keep_the_split_axis,
        check_alias_reshape_views_the_local_shard,
        check_alias_stack_shards_views_the_local_shard,
    )
}


def test_sharded_views_on_two_gloo_ranks():
    """Programs placed on devices [0, 1] run on two ranks (one rank is refused: the placement
    check); each rank views its own shard."""
    import os
    from pathlib import Path

    from multirank_util import launch_workers

    # the worker imports interp_util from test/python, as pytest's conftest lets this file do
    path = os.pathsep.join(filter(None, [str(Path(__file__).parent.parent), os.environ.get("PYTHONPATH")]))
    oks, report = launch_workers(2, __file__, timeout_s=300, env={**os.environ, "PYTHONPATH": path})
    assert oks == 2 * len(RANK_CASES), report


def test_alias_stack_shards_type_and_builder():
    """emit computes the stacked type (the mesh axis moves to ``at``, another mesh axis's
    split is renumbered past it); the builder's alias_stack_shards names a refused input."""
    b = Builder()
    h = b.input([8, 6], sharding=Shard([0, 1], 1))
    stacked = b.alias_stack_shards(h, axis=1, at=0)
    assert stacked.sizes == [2, 8, 3] and stacked.sharding == Shard([0, 1], 0)
    last = b.alias_stack_shards(h, axis=1, at=2)
    assert last.sizes == [8, 3, 2] and last.sharding == Shard([0, 1], 2)
    grid = b.input([4, 8, 6], sharding=Sharding([0, 1, 2, 3], mesh_shape=(2, 2), splits=(0, 2)))
    moved = b.alias_stack_shards(grid, axis=2, at=1)
    assert moved.sizes == [4, 2, 8, 3] and moved.sharding == Sharding([0, 1, 2, 3], mesh_shape=(2, 2), splits=(0, 1))
    with pytest.raises(HirError, match="error: alias_stack_shards: axis 0 is not split over the device mesh"):
        b.alias_stack_shards(h, axis=0, at=0)
    with pytest.raises(HirError, match=r"error: alias_stack_shards: at 3 is out of range for rank 2"):
        b.alias_stack_shards(h, axis=1, at=3)
    row = b.subview(h, [0, 0], [4, 6], [2, 1])
    with pytest.raises(HirError, match=r"error: alias_stack_shards: input must be contiguous \(identity layout\)"):
        b.alias_stack_shards(row, axis=1, at=0)


def test_builder_views():
    b = Builder()
    x = b.input([8, 4])
    bias = b.input([4])
    rows = b.subview(x, [b.index(2), 0], [2, 4])
    row = b.subview(x, [1, 0], [1, 4], drop=[0])
    odd = b.subview(x, [1, 1], [3, 2], [2, 2])
    outs = [
        rows,
        row,
        odd,
        b.reshape(x, [32]),
        b.reshape(x, [2, 4, 4]),
        b.reshape(x, [4, 8]),
        b.alias_broadcast(bias, [8, 4]),
        b.add(rows, b.alias_broadcast(bias, [2, 4])),
    ]
    for v in outs:
        b.output(v)
    X, B = torch.arange(32.0).reshape(8, 4), torch.arange(4.0)
    got = run_module(b.finish(), [X, B], device="cpu")
    want = [
        X[2:4],
        X[1],
        X[1::2, 1::2][:3],
        X.reshape(32),
        X.reshape(2, 4, 4),
        X.reshape(4, 8),
        B.expand(8, 4),
        X[2:4] + B,
    ]
    for g, w in zip(got, want):
        assert torch.equal(g, w)


def test_builder_view_errors():
    b = Builder()
    x = b.input([8, 4], sharding=Shard([0, 1], 0))
    with pytest.raises(HirError, match="axis 1 of extent 4 cannot broadcast to 5"):
        b.alias_broadcast(x, [8, 5])
    with pytest.raises(HirError, match="can only drop axes of static extent 1"):
        b.subview(x, [0, 0], [2, 4], drop=[0])
    with pytest.raises(HirError, match=r"reshape needs a static buffer of the same size"):
        b.reshape(x, [3, 3])


def _run_rank_case(name: str, rank: int, world: int) -> str:
    try:
        RANK_CASES[name](rank)
    except Exception as err:  # reported by the launching test
        return f"rank {rank}: {name} failed: {type(err).__name__}: {err}"
    return ""


if __name__ == "__main__":
    import sys

    from multirank_util import run_gloo_cases

    sys.exit(run_gloo_cases(list(RANK_CASES), _run_rank_case))


def test_builder_views_of_split_buffers_keep_the_split():
    """The builder's reshapes of a split buffer move the split by the view's dim map
    (hir.alias_reshape where the axis number changes; the upstream view where it does not), a
    rank-reducing subview before the split takes the dropped axes by hir.alias_select, and a
    split merged with an outer axis is refused."""
    b = Builder()
    w = b.input([4, 16, 32], sharding=Shard([0, 1], 0))
    x = b.input([2, 3, 8, 4], sharding=Shard([0, 1], 2))
    unsqueezed = b.reshape(w, [1, 4, 1, 16, 32])
    flat = b.reshape(x, [6, 8, 4])
    same = b.reshape(w, [4, 512])
    row = b.subview(x, [1, 0, 0, 0], [1, 3, 8, 4], drop=[0])
    assert unsqueezed.sharding == Shard([0, 1], 1) and flat.sharding == Shard([0, 1], 1)
    assert same.sharding == Shard([0, 1], 0) and row.sharding == Shard([0, 1], 1)
    for v in (unsqueezed, flat, same, row):
        b.output(v)
    text = str(b.finish())
    assert text.count('"hir.alias_reshape"') == 2 and "memref.collapse_shape" in text and '"hir.alias_select"' in text
    b = Builder()
    x = b.input([2, 3, 8, 4], sharding=Shard([0, 1], 2))
    with pytest.raises(
        HirError,
        match=r"reshape: split axis 2 \(extent 8\) of \[2, 3, 8, 4\] is merged with an outer axis in \[2, 24, 4\]",
    ):
        b.reshape(x, [2, 24, 4])


def test_upstream_reshape_that_would_move_a_split_is_refused_at_the_op():
    """memref.collapse_shape keeps #hir.shard's axis numbers: [1, 8, 4] split on 1 collapsed
    to [8, 4] would have to be split on 0; the interpreter says so at the op."""
    src, dst = (
        "memref<1x8x4xf32, #hir.shard<array<i64: 0>, 1 : i64>>",
        "memref<8x4xf32, #hir.shard<array<i64: 0>, 1 : i64>>",
    )
    text = f"""func.func @main(%a: {src}) -> {dst} {{
  %v = memref.collapse_shape %a [[0, 1], [2]] : {src} into {dst}
  return %v : {dst}
}}"""
    with pytest.raises(
        HirError,
        match=r"test.mlir:2:8: error: 'memref.collapse_shape' views \[1, 8, 4\] placed as \[0\] with "
        r"splits \[1\] as \[8, 4\], whose placement is then \[0\] with splits \[0\]; an upstream "
        r"reshape keeps the split axis numbers \(\[0\] with splits \[1\]\): use hir.alias_reshape",
    ):
        run(text, [torch.randn(1, 8, 4)])
