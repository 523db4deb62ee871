"""``shard.shift`` and ``shard.broadcast`` of a partitioned function, converted by
``hir-convert-shard-to-hir`` (a mixin of :class:`~hir.passes._shard_function.FunctionConversion`).

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
``broadcast`` becomes ``hir.broadcast`` from the root device, on a multi-D grid one team per
line along ``grid_axes`` with the root at the same position of each (``grid_axes = [0]
root = [1]`` on a 2x2 grid: ``team = dense<[[0, 2], [1, 3]]>``, ``root = array<i64: 2, 3>``).
"""

from torch_mlir import ir

from hir.dialect import BroadcastOp, ShiftOp
from hir.passes._shard_collectives import fail
from hir.passes._shard_placement import REPLICATED


class Shifts:
    """The ``shard.shift`` / ``shard.broadcast`` handlers of :class:`FunctionConversion`."""

    def shift(self, op: ir.Operation) -> None:
        if "rotate" not in op.attributes:
            raise fail(op, "without 'rotate' leaves the edge devices' results undefined; hir converts rotating shifts only")
        k = ir.IntegerAttr(op.attributes["shift_axis"]).value
        if not 0 <= k < self.grid.rank:
            raise fail(op, f"shifts along grid axis {k}; the {self.grid.rank}-D grid @{self.grid.name} has axes 0 .. {self.grid.rank - 1}")
        source = op.operands[0]
        have = self.placement(source)
        if have == self.free_placement:
            have = self.replicated
        if have.kind == "partial":
            raise fail(op, f"shifts {source.get_name()}, which is a partial sum ({have}); hir shifts blocks of placed data")
        # shard.shift sends device i's tensor to device i + offset; hir.shift receives from me + offset.
        offset = (-ir.IntegerAttr(op.attributes["offset"]).value) % self.grid.shape[k]
        inp = self.buffer(source, op)
        output = self.alloc(op.results[0], have, lambda d: (inp, d))  # dynamic extents: the operand's
        self.communicate(ShiftOp.OPERATION_NAME, [k], [inp, output, self.index_constant(offset)], {})

    def broadcast(self, op: ir.Operation) -> None:
        """Every device of a group gets its root's tensor: ``hir.broadcast``. ``root`` is the
        root's multi-index within the group (over ``grid_axes``, row-major): on a 1-D grid its
        device; on a multi-D grid the device at that position of each line (plane), one root
        per team (``root = array<i64: ...>``)."""
        if len(op.operands) > 1:
            raise fail(op, "has a dynamic root; hir converts a static root")
        position = 0
        for k, r in zip(ir.DenseI16ArrayAttr(op.attributes["grid_axes"]), ir.DenseI64ArrayAttr(op.attributes["root"])):
            position = position * self.grid.shape[k] + r
        roots = [line[position] for line in self.grid.lines(self.grid_axes(op))]
        i64 = ir.IntegerType.get_signless(64)
        root = ir.IntegerAttr.get(i64, roots[0]) if self.grid.rank == 1 else ir.DenseI64ArrayAttr.get(roots)
        self.collective(op, REPLICATED, REPLICATED, BroadcastOp.OPERATION_NAME, {"root": root})
