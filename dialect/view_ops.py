"""``hir.alias_select``: a zero-copy view of one index along one axis (nvFuser
HirAliasSelect). The result drops ``axis`` and has a strided layout over the same memory:

    %row = "hir.alias_select"(%buf, %i) {axis = 0 : i64}
        : (memref<8x64xf32>, index) -> memref<64xf32, strided<[1], offset: ?>>
"""


from typing import Optional

from torch_mlir import ir
from torch_mlir.dialects import ext

from hir.dialect.base import DYNAMIC, HirOp, Sharding, check_axis, fail, int_attr, memref_type, sharding_of


def select_type(source: ir.MemRefType, axis: int) -> ir.MemRefType:
    """The type of ``source`` with ``axis`` selected away (strides kept, offset dynamic)."""
    check_axis(axis, source.rank, "axis")
    strides, _ = source.get_strides_and_offset()
    shape = [d for i, d in enumerate(source.shape) if i != axis]
    layout = ir.StridedLayoutAttr.get(DYNAMIC, [s for i, s in enumerate(strides) if i != axis])
    sharding = sharding_of(source, "input")
    space: Optional[ir.Attribute] = None
    if sharding is not None:
        if sharding.axis == axis:
            fail(f"axis {axis} is split over the device mesh; select a non-sharded axis")
        shard_axis = sharding.axis if sharding.axis is None or sharding.axis < axis else sharding.axis - 1
        space = Sharding(sharding.mesh, shard_axis).attr()
    # MemRefType.get reports bad parameters at a location; none is current in a verifier.
    return ir.MemRefType.get(shape, source.element_type, layout=layout, memory_space=space, loc=ir.Location.unknown())


class AliasSelectOp(HirOp, name="alias_select"):
    """``result = input.select(axis, index)`` as a view: writes through it land in ``input``."""

    input: ext.Operand[ir.MemRefType]
    index: ext.Operand[ir.IndexType]
    axis: ir.IntegerAttr
    result: ext.Result[ir.MemRefType]

    def check(self) -> None:
        source = memref_type(self.input, "input")
        if source.rank == 0:
            fail("input must have rank >= 1")
        axis = int_attr(self, "axis")
        expected = select_type(source, axis)
        if self.result.type != expected:
            fail(f"result type {self.result.type} does not match the selected view type {expected}")

    @classmethod
    def build(cls, input: ir.Value, index: ir.Value, axis: int, *, loc=None, ip=None) -> "AliasSelectOp":
        result = select_type(memref_type(input, "input"), axis)
        i64 = ir.IntegerType.get_signless(64)
        return cls(input, index, ir.IntegerAttr.get(i64, axis), result, loc=loc, ip=ip)
