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

``hir.alias_broadcast`` is ``input.expand(shape)`` (NumPy broadcasting, right-aligned): new
leading axes and extent-1 axes get stride 0, the others keep the input's extent and stride:

    %b = "hir.alias_broadcast"(%row) : (memref<1x4xf32>) -> memref<3x8x4xf32, strided<[0, 0, 1], offset: ?>>

Why an hir op: upstream ``memref`` has no broadcast view, and ``memref.reinterpret_cast``
would hard-code the input's strides and offset (unknown for strided views) and cannot be
verified as a broadcast. Broadcast extents are static; the result is read-only in practice
(torch rejects writes where elements share memory).

Upstream views (``memref.subview``, ``memref.collapse_shape``, ``memref.expand_shape``,
``memref.cast``) are used as they are; :data:`~hir.dialect.base.UPSTREAM_VIEWS` names them for
:func:`~hir.dialect.base.is_view` (deallocation and fusion follow every view).

``hir.alias_reshape`` is a zero-copy reshape of a contiguous static buffer whose device
split follows it by the view's dim map (:mod:`hir.dialect.view_splits`: past
new or merged extent-1 axes, into the outermost axis of an expanded group). ``reassociation``
groups the axes of the higher-rank side, as in ``memref.expand_shape`` / ``collapse_shape``;
a split axis must be the outermost (non-unit) axis of its group on both sides, so that each
device's shard is a view of the other's:

    %rows = "hir.alias_reshape"(%y) {reassociation = [[0, 1], [2]]}
        : (memref<2x4x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>)
        -> memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>

Why an hir op: the upstream reshapes keep the memory space as it is, and
``#hir.shard`` names its split axis by number, so they cannot view ``[D, T/D, N]`` split on
axis 2 as ``[T, N]`` split on axis 1 (the stream-parallel form of a matmul and its plain
form: see the PyTorch frontend's sequence parallelism), nor ``[D, K, N]`` split on 0 as
nvFuser's ``[1, D, 1, K, N]`` split on 1 (its matmul_RS_through_bcast):

    %b = "hir.alias_reshape"(%w) {reassociation = [[0, 1, 2], [3], [4]]}
        : (memref<4x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>)
        -> memref<1x4x1x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>

``hir.alias_stack_shards`` views a buffer whose axis ``axis`` is split evenly over one mesh
axis of extent D as the devices' shards stacked on a new axis ``at`` (extent D, split over
that mesh axis), axis ``axis`` holding one shard's extent: globally
``result[.., d, .., j, ..] = input[.., d * E / D + j, ..]``, a reshape plus a transpose
(no reassociation expresses it), but each device's part is its shard unsqueezed at
``at``. It is how a contraction over a split axis gets its local operands into the
partial-sum layout ``[D, T, H / D]`` split on 0 (the PyTorch frontend's row-parallel
linear) without copying them:

    %x = "hir.alias_stack_shards"(%h) {axis = 1 : i64, at = 0 : i64}
        : (memref<64x64xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>)
        -> memref<4x64x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>

The input is contiguous and static (the result is too), its other mesh axes' splits
renumbered past ``at``.
"""

from torch_mlir import ir
from torch_mlir.dialects import ext, memref

from hir.dialect.base import DYNAMIC, UPSTREAM_VIEWS, CheckedKeys, HirOp, i64_attr, refuse_uneven
from hir.dialect.checks import check_axis, fail, int_attr, memref_type
from hir.dialect.sharding import Sharding, sharding_of
from hir.dialect.view_splits import ViewSplitError, reshaped

UPSTREAM_VIEWS.update(
    cls.OPERATION_NAME for cls in (memref.SubViewOp, memref.CollapseShapeOp, memref.ExpandShapeOp, memref.CastOp)
)


def _view_type(source: ir.MemRefType, axis: int, verb: str, shape: list, strides: list, shard_axis) -> ir.MemRefType:
    """A strided view of ``source`` (offset dynamic) with the given shape and strides; the
    sharding follows the split axis (``shard_axis(split)``), which must not be ``axis``."""
    sharding = sharding_of(source, "input")
    space: ir.Attribute | None = None
    if sharding is not None:
        if axis in sharding.splits:
            fail(f"axis {axis} is split over the device mesh; {verb} a non-sharded axis")
        space = sharding.renumbered(shard_axis).attr()
    layout = ir.StridedLayoutAttr.get(DYNAMIC, strides)
    # MemRefType.get reports bad parameters at a location; none is current in a verifier.
    return ir.MemRefType.get(shape, source.element_type, layout=layout, memory_space=space, loc=ir.Location.unknown())


def select_type(source: ir.MemRefType, axis: int) -> ir.MemRefType:
    """The type of ``source`` with ``axis`` selected away (strides kept, offset dynamic)."""
    check_axis(axis, source.rank, "axis")
    strides, _ = source.get_strides_and_offset()
    shape = [d for i, d in enumerate(source.shape) if i != axis]
    kept = [s for i, s in enumerate(strides) if i != axis]
    return _view_type(source, axis, "select", shape, kept, lambda split: split if split < axis else split - 1)


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


_CHECKED = CheckedKeys()


def _check_view(op: HirOp, view_type, what: str, attribute_names: tuple = ()) -> None:
    """The input has rank >= 1 and the result is ``view_type(input type)`` (which reads the
    attributes ``attribute_names``)."""
    key = _CHECKED.key(op, 1, attribute_names)
    if _CHECKED.passed(op, key):
        return
    refuse_uneven(op.operation)
    source = memref_type(op.operation.operands[0].type, "input")
    if source.rank == 0:
        fail("input must have rank >= 1")
    expected = view_type(source)
    if op.operation.results[0].type != expected:
        fail(f"result type {op.operation.results[0].type} does not match the {what} view type {expected}")
    _CHECKED.record(key)


class ViewOp(HirOp):
    """``(input, ...) -> a view of input``: writes through the result land in ``input``."""

    IS_VIEW = True


class AliasSelectOp(ViewOp, name="alias_select"):
    """``result = input.select(axis, index)`` as a view: writes through it land in ``input``."""

    _UNEVEN_REFUSED_PER_KEY = True

    input: ext.Operand[ir.MemRefType]
    index: ext.Operand[ir.IndexType]
    axis: ir.IntegerAttr
    result: ext.Result[ir.MemRefType]

    def check(self) -> None:
        _check_view(self, lambda source: select_type(source, int_attr(self, "axis")), "selected", ("axis",))

    @classmethod
    def emit(cls, input: ir.Value, index: ir.Value, axis: int, *, name: str | None = None) -> ir.Value:
        return cls._create(
            [input, index], [select_type(memref_type(input, "input"), axis)], {"axis": i64_attr(axis)}, name=name
        ).result


class AliasChunkOp(ViewOp, name="alias_chunk"):
    """``result = input.chunk(chunks, axis)[index]`` as a view: writes through it land in ``input``."""

    _UNEVEN_REFUSED_PER_KEY = True

    input: ext.Operand[ir.MemRefType]
    index: ext.Operand[ir.IndexType]
    axis: ir.IntegerAttr
    chunks: ir.IntegerAttr
    result: ext.Result[ir.MemRefType]

    def check(self) -> None:
        _check_view(
            self,
            lambda source: chunk_type(source, int_attr(self, "axis"), int_attr(self, "chunks")),
            "chunk",
            ("axis", "chunks"),
        )

    @classmethod
    def emit(cls, input: ir.Value, index: ir.Value, axis: int, chunks: int, *, name: str | None = None) -> ir.Value:
        view_type = chunk_type(memref_type(input, "input"), axis, chunks)
        return cls._create(
            [input, index], [view_type], {"axis": i64_attr(axis), "chunks": i64_attr(chunks)}, name=name
        ).result


def broadcast_type(source: ir.MemRefType, shape: list) -> ir.MemRefType:
    """The type of ``source`` broadcast to ``shape`` (stride 0 on broadcast axes)."""
    lead = len(shape) - source.rank
    if lead < 0:
        fail(f"cannot broadcast rank {source.rank} to the lower rank {len(shape)}")
    strides_in, _ = source.get_strides_and_offset()
    strides = []
    for i, extent in enumerate(shape):
        j = i - lead
        if j >= 0 and source.shape[j] == extent:
            strides.append(strides_in[j])
            continue
        if j >= 0 and source.shape[j] != 1:
            fail(
                f"axis {j} of extent {_extent(source.shape[j])} cannot "
                f"broadcast to {_extent(extent)} (only extent-1 axes broadcast)"
            )
        if extent == DYNAMIC:
            fail(f"broadcast axis {i} must have a static extent")
        strides.append(0)
    sharding = sharding_of(source, "input")
    space = None if sharding is None else sharding.renumbered(lambda split: split + lead).attr()
    layout = ir.StridedLayoutAttr.get(DYNAMIC, strides)
    return ir.MemRefType.get(shape, source.element_type, layout=layout, memory_space=space, loc=ir.Location.unknown())


def _extent(d: int) -> str:
    return "?" if d == DYNAMIC else str(d)


class AliasBroadcastOp(ViewOp, name="alias_broadcast"):
    """``result = input.expand(shape)`` as a view (NumPy broadcasting, no copy)."""

    input: ext.Operand[ir.MemRefType]
    result: ext.Result[ir.MemRefType]

    def check(self) -> None:
        source = memref_type(self.input, "input")
        result = memref_type(self.result, "result")
        expected = broadcast_type(source, list(result.shape))
        if result != expected:
            fail(f"result type {result} does not match the broadcast view type {expected}")

    @classmethod
    def emit(cls, input: ir.Value, shape: list, *, name: str | None = None) -> ir.Value:
        return cls._create([input], [broadcast_type(memref_type(input, "input"), list(shape))], name=name).result


def _groups(attr: ir.Attribute) -> list[list[int]]:
    try:
        return [[ir.IntegerAttr(a).value for a in ir.ArrayAttr(g)] for g in ir.ArrayAttr(attr)]
    except ValueError:
        fail(f"reassociation must be a list of lists of axes, got {attr}")


def is_identity_layout(mt: ir.MemRefType) -> bool:
    """Whether ``mt`` has the row-major identity layout (a contiguous buffer of its own)."""
    layout = mt.layout
    return isinstance(layout, ir.AffineMapAttr) and layout.value == ir.AffineMap.get_identity(
        mt.rank, context=mt.context
    )


def _require_contiguous(source: ir.MemRefType) -> None:
    if not is_identity_layout(source):
        fail(f"input must be contiguous (identity layout), got {source}")


def reshape_type(source: ir.MemRefType, shape: list, groups: list[list[int]]) -> ir.MemRefType:
    """The type of ``source`` viewed as ``shape`` (contiguous; the sharding follows each
    split axis to its group's counterpart)."""
    _require_contiguous(source)
    if DYNAMIC in source.shape or DYNAMIC in shape:
        fail("input and result shapes must be static")
    high, low = (source.shape, shape) if source.rank > len(shape) else (shape, source.shape)
    if len(high) == len(low):
        fail(f"input and result have one rank ({len(high)}); a reshape expands or collapses axes")
    if (
        [a for g in groups for a in g] != list(range(len(high)))
        or len(groups) != len(low)
        or any(not g for g in groups)
    ):
        fail(
            f"reassociation {groups} must split axes 0..{len(high) - 1} of the "
            f"rank-{len(high)} side in order into {len(low)} non-empty groups"
        )
    for i, g in enumerate(groups):
        extent = 1
        for a in g:
            extent *= high[a]
        if extent != low[i]:
            fail(f"group {g} has {extent} elements, but axis {i} of the rank-{len(low)} side has extent {low[i]}")
    sharding = sharding_of(source, "input")
    space = None
    if sharding is not None:
        try:
            space = reshaped(sharding, list(source.shape), list(shape), groups).attr()
        except ViewSplitError as err:
            group = groups[err.axis] if len(shape) > source.rank else next(g for g in groups if err.axis in g)
            fail(
                f"split axis {err.axis} is not the outermost axis of its "
                f"group {group}; the device split must lead its group: {err}"
            )
    view = ir.MemRefType.get(list(shape), source.element_type, memory_space=space, loc=ir.Location.unknown())
    sharding_of(view, "result")  # the split must still divide evenly
    return view


def _reassociation(groups: list[list[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, a) for a in g]) for g in groups])


class AliasReshapeOp(ViewOp, name="alias_reshape"):
    """``result = input.view(shape)`` of a contiguous buffer, its device split following
    the reshape (``reassociation``: groups of the higher-rank side's axes)."""

    input: ext.Operand[ir.MemRefType]
    reassociation: ir.ArrayAttr
    result: ext.Result[ir.MemRefType]

    def check(self) -> None:
        source = memref_type(self.input, "input")
        result = memref_type(self.result, "result")
        expected = reshape_type(source, list(result.shape), _groups(self.operation.attributes["reassociation"]))
        if result != expected:
            fail(f"result type {result} does not match the reshaped view type {expected}")

    @classmethod
    def emit(cls, input: ir.Value, shape: list, groups: list[list[int]], *, name: str | None = None) -> ir.Value:
        view_type = reshape_type(memref_type(input, "input"), list(shape), groups)
        return cls._create([input], [view_type], {"reassociation": _reassociation(groups)}, name=name).result


def stack_shards_type(source: ir.MemRefType, axis: int, at: int) -> ir.MemRefType:
    """The type of ``source`` (contiguous, static, ``axis`` split evenly over one mesh axis
    of extent D) viewed with the devices' shards stacked on a new axis ``at``: the shape
    with ``shape[axis] // D`` and D inserted at ``at``, that mesh axis splitting ``at``
    (the other splits renumbered past it); each device's part is its shard unsqueezed at
    ``at``."""
    _require_contiguous(source)
    if DYNAMIC in source.shape:
        fail(f"input shape must be static, got {source}")
    check_axis(axis, source.rank, "axis")
    if not 0 <= at <= source.rank:
        fail(f"at {at} is out of range for rank {source.rank} (the new axis goes at 0..{source.rank})")
    sharding = sharding_of(source, "input")
    mesh_axes = [] if sharding is None else [k for k, s in enumerate(sharding.splits) if s == axis]
    if sharding is None or not mesh_axes:
        fail(f"axis {axis} is not split over the device mesh; alias_stack_shards stacks the shards of a split axis")
    if len(mesh_axes) > 1:
        fail(f"axis {axis} is split over mesh axes {mesh_axes}; alias_stack_shards stacks the shards of one mesh axis")
    if sharding.uneven or sharding.pieces(axis) != 1:
        fail(
            f"axis {axis} is split unevenly or packed ({sharding.describe()}); "
            "alias_stack_shards needs equal shards of one block each"
        )
    (k,) = mesh_axes
    d = sharding.mesh_shape[k]
    shape = list(source.shape)
    shape[axis] //= d
    shape.insert(at, d)

    def past(a: int) -> int:  # an axis of the input, as numbered in the result
        return a if a < at else a + 1

    splits = [at if j == k else (None if s is None else past(s)) for j, s in enumerate(sharding.splits)]
    space = Sharding.of(
        sharding.mesh, sharding.mesh_shape, splits, packed={past(a): n for a, n in sharding.packed}
    ).attr()
    return ir.MemRefType.get(shape, source.element_type, memory_space=space, loc=ir.Location.unknown())


class AliasStackShardsOp(ViewOp, name="alias_stack_shards"):
    """The devices' shards of ``input`` (split on ``axis`` over one mesh axis) stacked on a
    new axis ``at`` split over that mesh axis: ``result[.., d, .., j, ..] = input[.., d * E / D
    + j, ..]``; each device's part is its shard unsqueezed at ``at`` (no copy)."""

    _UNEVEN_REFUSED_PER_KEY = True

    input: ext.Operand[ir.MemRefType]
    axis: ir.IntegerAttr
    at: ir.IntegerAttr
    result: ext.Result[ir.MemRefType]

    def check(self) -> None:
        _check_view(
            self,
            lambda source: stack_shards_type(source, int_attr(self, "axis"), int_attr(self, "at")),
            "stacked shards",
            ("axis", "at"),
        )

    @classmethod
    def emit(cls, input: ir.Value, axis: int, at: int, *, name: str | None = None) -> ir.Value:
        view_type = stack_shards_type(memref_type(input, "input"), axis, at)
        return cls._create([input], [view_type], {"axis": i64_attr(axis), "at": i64_attr(at)}, name=name).result
