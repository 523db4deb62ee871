"""``shard.shift`` of a partitioned function (``hir-convert-shard-to-hir``).

A rotating shift along grid axis k moves each device's local tensor to the device ``offset``
after it on its line of the grid along k (``shard.shift``: within each group of
``grid_axes``, along ``shift_axis``). It becomes ``hir.shift``, which receives from the team
position ``offset`` before: the mesh's one team on a 1-D grid, else one team per line of
the mesh along k (a 2x4 grid, k = 1)::

    %r = shard.shift %x on @g grid_axes = [1] shift_axis = 1 offset = 1 rotate : tensor<2x4xf32> -> tensor<2x4xf32>

becomes::

    %c3 = arith.constant 3 : index                       // receive from position p - 1 = p + 3 (mod 4)
    %r = memref.alloc() : memref<...>                    // placed as %x
    %w = "hir.shift"(%x, %r, %c3) {backend = "nccl", team = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>}
    "hir.wait"(%w) : (!hir.work) -> ()

The result is placed as the operand: each device holds a block of the same layout.
"""

from torch_mlir import ir
from torch_mlir.dialects import shard

from hir.dialect import ShiftOp
from hir.passes.base import fail
from hir.passes.shard.collectives import communicate, grid_axes
from hir.passes.shard.placement import placement_text
from hir.passes.shard.registry import converts
from hir.passes.shard.state import ConversionState


@converts(shard.ShiftOp)
def shift(s: ConversionState, op: ir.Operation) -> None:
    """`hir.shift` + `hir.wait` of a rotating shift along any grid axis (one team per line of the mesh along it), the
    result placed as the operand."""
    grid_axes(s, op)
    if "rotate" not in op.attributes:
        raise fail(op, "without 'rotate' leaves the edge devices' results undefined; hir converts rotating shifts only")
    k = ir.IntegerAttr(op.attributes["shift_axis"]).value
    if not 0 <= k < s.grid.rank:
        raise fail(
            op, f"shifts along grid axis {k}; the {s.grid.rank}-D grid @{s.grid.name} has axes 0 .. {s.grid.rank - 1}"
        )
    source = op.operands[0]
    have = s.data_placement(source)
    if have.partial:
        raise fail(
            op,
            f"shifts {source.get_name()}, which is a partial sum "
            f"({placement_text(have)}); hir shifts blocks of placed data",
        )
    # shard.shift sends device i's tensor to device i + offset; hir.shift receives from me + offset.
    offset = (-ir.IntegerAttr(op.attributes["offset"]).value) % s.grid.shape[k]
    inp = s.buffer(source, op)
    output = s.alloc(op.results[0], have, lambda d: (inp, d))  # dynamic extents: the operand's
    communicate(s, ShiftOp.OPERATION_NAME, [k], [inp, output, s.index_constant(offset)], {})
