"""Zero-copy views. Writes through a view land in the buffer it views.

``hir.alias_select`` (nvFuser HirAliasSelect) takes one index along one axis. The result
drops ``axis`` and has a strided layout over the same memory:

    %row = "hir.alias_select"(%buf, %i) {axis = 0 : i64}
        : (memref<8x64xf32>, index) -> memref<64xf32, strided<[1], offset: ?>>

``hir.alias_chunk`` takes chunk ``index`` of ``chunks`` equal parts along ``axis``
(``torch.chunk(input, chunks, axis)[index]``, nvFuser's ShardByStream). The result keeps
``axis``, with extent ``extent / chunks``:

    %rows = "hir.alias_chunk"(%buf, %c) {axis = 0 : i64, chunks = 4 : i64}
        : (memref<8x64xf32>, index) -> memref<2x64xf32, strided<[64, 1], offset: ?>>

A static extent must divide into ``chunks``; a dynamic one is checked when the view is
taken. Neither op can view a split axis of a sharded buffer.
"""


from typing import Optional

from torch_mlir import ir
from torch_mlir.dialects import ext

from hir.dialect.base import DYNAMIC, HirOp, Sharding, check_axis, fail, i64_attr, int_attr, memref_type, sharding_of


def _view_type(source: ir.MemRefType, axis: int, verb: str, shape: list, strides: list, shard_axis) -> ir.MemRefType:
    """A strided view of ``source`` (offset dynamic) with the given shape and strides; the
    sharding follows the split axis (``shard_axis(split)``), which must not be ``axis``."""
    sharding = sharding_of(source, "input")
    space: Optional[ir.Attribute] = None
    if sharding is not None:
        if sharding.axis == axis:
            fail(f"axis {axis} is split over the device mesh; {verb} a non-sharded axis")
        space = Sharding(sharding.mesh, shard_axis(sharding.axis)).attr()
    layout = ir.StridedLayoutAttr.get(DYNAMIC, strides)
    # MemRefType.get reports bad parameters at a location; none is current in a verifier.
    return ir.MemRefType.get(shape, source.element_type, layout=layout, memory_space=space, loc=ir.Location.unknown())


def select_type(source: ir.MemRefType, axis: int) -> ir.MemRefType:
    """The type of ``source`` with ``axis`` selected away (strides kept, offset dynamic)."""
    check_axis(axis, source.rank, "axis")
    strides, _ = source.get_strides_and_offset()
    shape = [d for i, d in enumerate(source.shape) if i != axis]
    kept = [s for i, s in enumerate(strides) if i != axis]
    return _view_type(source, axis, "select", shape, kept, lambda split: split if split is None or split < axis else split - 1)


def chunk_type(source: ir.MemRefType, axis: int, chunks: int) -> ir.MemRefType:
    """The type of one of ``chunks`` equal parts of ``source`` along ``axis``."""
    check_axis(axis, source.rank, "axis")
    if chunks < 1:
        fail(f"chunks must be at least 1, got {chunks}")
    extent = source.shape[axis]
    if extent != DYNAMIC and extent % chunks:
        fail(f"axis {axis} of extent {extent} does not divide into {chunks} chunks")
    strides, _ = source.get_strides_and_offset()
    shape = [(d if d == DYNAMIC else d // chunks) if i == axis else d for i, d in enumerate(source.shape)]
    return _view_type(source, axis, "chunk", shape, list(strides), lambda split: split)


def _check_view(op: HirOp, view_type, what: str) -> None:
    """The input has rank >= 1 and the result is ``view_type(input type)``."""
    source = memref_type(op.input, "input")
    if source.rank == 0:
        fail("input must have rank >= 1")
    expected = view_type(source)
    if op.result.type != expected:
        fail(f"result type {op.result.type} does not match the {what} view type {expected}")


class ViewOp(HirOp):
    """``(input, index) -> a view of input``: writes through the result land in ``input``."""

    IS_VIEW = True


class AliasSelectOp(ViewOp, name="alias_select"):
    """``result = input.select(axis, index)`` as a view: writes through it land in ``input``."""

    input: ext.Operand[ir.MemRefType]
    index: ext.Operand[ir.IndexType]
    axis: ir.IntegerAttr
    result: ext.Result[ir.MemRefType]

    def check(self) -> None:
        _check_view(self, lambda source: select_type(source, int_attr(self, "axis")), "selected")

    @classmethod
    def emit(cls, input: ir.Value, index: ir.Value, axis: int, *, name: Optional[str] = None) -> ir.Value:
        return cls._create([input, index], [select_type(memref_type(input, "input"), axis)], {"axis": i64_attr(axis)}, name=name).result


class AliasChunkOp(ViewOp, name="alias_chunk"):
    """``result = input.chunk(chunks, axis)[index]`` as a view: writes through it land in ``input``."""

    input: ext.Operand[ir.MemRefType]
    index: ext.Operand[ir.IndexType]
    axis: ir.IntegerAttr
    chunks: ir.IntegerAttr
    result: ext.Result[ir.MemRefType]

    def check(self) -> None:
        _check_view(self, lambda source: chunk_type(source, int_attr(self, "axis"), int_attr(self, "chunks")), "chunk")

    @classmethod
    def emit(cls, input: ir.Value, index: ir.Value, axis: int, chunks: int, *, name: Optional[str] = None) -> ir.Value:
        view_type = chunk_type(memref_type(input, "input"), axis, chunks)
        return cls._create([input, index], [view_type], {"axis": i64_attr(axis), "chunks": i64_attr(chunks)}, name=name).result
