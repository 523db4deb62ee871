"""How the partitioner builds the contraction forms the placer chose
(:class:`~hir.frontend.placer.Gathered`, :class:`~hir.frontend.placer.PartialSum`): functions
of the :class:`~hir.frontend.partition.Partitioner` and one
:class:`~hir.frontend.placer.ComputeStep`, returning the buffer of the op's result.

Partial sums (nvFuser's reduction over a device-split axis): the contraction runs on the
local shards into a buffer with a leading mesh axis, ``[D, ..., N]`` split on axis 0, and
a ``hir.reduction`` sum over axis 0 into the result makes it whole: replicated (allreduce),
or split on axis 0 (reduce-scatter) when the consumer wants that (an output placement
``Shard(0)``, or a binary op with an operand split on axis 0, as in sequence parallelism).
The operands reach that layout as views where no transpose is needed (``[T, H]`` split on
1 as ``[D, T, H/D]`` split on 0 is ``hir.alias_stack_shards``: each device's part is its
shard, unsqueezed; no copy), else through a small local kernel segment (a ``transpose``
of the weight, then ``unsqueeze``). hir-convert-to-communication then turns every resharding
``hir.set`` / ``hir.reduction`` into collectives.

Sequence parallelism (1-D meshes) comes out in nvFuser's stream-parallel form, which
hir-p2p-pipeline pipelines (plain hir-lower runs its collectives whole):

* a linear / matmul whose row-split input must be gathered views it as ``[D, T/D, ...]``
  (``hir.alias_reshape``), gathers it with a ``hir.set {stream_axis = 0}`` and runs with
  ``stream_axis = 0`` into ``[D, T/D, ..., N]``, viewed back as ``[T, ..., N]``; the ops
  gathering the same value (q, k and v of a normed activation) share one gather;
* a partial sum scattered onto the rows computes its products as ``[S, D, T/S, ..., N]``
  (stream axis 0, mesh axis 1) and sums axis 1 into ``[S, T/S, ..., N]`` split on axis 0,
  both with ``stream_axis = 0``, viewed back as ``[T, ..., N]``; with a 2-D weight the
  rows' axes fold into one (``[S, D, T/S * B, N]``: one GEMM per step).
"""

from collections.abc import Sequence

from torch_mlir import ir
from torch_mlir.dialects import torch as torch_dialect

from hir.dialect import AliasReshapeOp, AliasStackShardsOp, BinaryOp, MatmulOp, ReductionOp, SetOp, Sharding
from hir.dialect.base import DYNAMIC, VerifyError, i64_attr
from hir.dialect.compute import STREAM_AXIS_ATTR
from hir.dialect.context import HirError
from hir.dialect.sharding import sharding_of
from hir.dialect.views import reshape_type, stack_shards_type
from hir.frontend.torch_ir import (
    LIST_CONSTRUCT,
    buffer_type,
    rank_of,
    ranked_info,
    shape_of,
    torch_int,
    torch_op,
    vtensor,
)

_UNSQUEEZE = torch_dialect.AtenUnsqueezeOp.OPERATION_NAME
_TRANSPOSE = torch_dialect.AtenTransposeIntOp.OPERATION_NAME
_VIEW = torch_dialect.AtenViewOp.OPERATION_NAME
_RESHAPE = torch_dialect.AtenReshapeOp.OPERATION_NAME


def _attr(part, splits: Sequence[int | None]) -> ir.Attribute:
    """The ``#hir.shard`` of ``splits`` (one per mesh axis) on the plan's mesh."""
    return part.plan.grid.sharding(splits).attr()


def _local_shape(part, shape: Sequence[int], splits: Sequence[int | None]) -> list[int]:
    return part.plan.grid.sharding(splits).local_shape(shape)


# ----- sequence parallelism: nvFuser's stream-parallel form --------------------------------
def stream_gathered(part, steps: list) -> list[ir.Value]:
    """nvFuser's AG + matmul form for ``steps``, ops reading the same row-split input (q,
    k and v of one normed activation): the input ``[T, ...]`` is viewed as ``[D, T/D,
    ...]`` (split on axis 0), gathered once by a ``hir.set`` with ``stream_axis = 0`` and
    consumed by each op with ``stream_axis = 0``, one after the other; each
    ``[D, T/D, ..., N]`` output is then viewed back as ``[T, ..., N]`` (after all the ops:
    hir-p2p-pipeline builds the pipeline of the gather and its consumers at the last one).
    hir-convert-to-communication makes the set an allgather streamed along its split
    axis, which hir-p2p-pipeline pipelines (hir-lower alone runs it whole, then the ops'
    stream loops). An input split on an inner axis ``s`` (``[B, S, D]`` on 1) is
    transposed locally to lead with it, and the outputs transposed back
    (:func:`_swapped`). Returns the buffers of the ops' results."""
    first = steps[0].op
    loc, d = first.location, part.plan.grid.shape[0]
    x, lead = steps[0].spec.inputs[0], steps[0].form.lead
    x_shape, dtype = ranked_info(x)
    rows = _swapped(part, part.buffer_of(x, first), x_shape, dtype, (lead,), lead, loc)
    viewed = _rows_view(part, rows, d, loc)
    gathered = part.new_buffer(
        buffer_type(vtensor(_rows_shape(_swap(x_shape, lead), d), dtype), _attr(part, (None,))), loc
    )
    with part.in_main(loc):
        SetOp.emit(viewed, gathered).attributes[STREAM_AXIS_ATTR] = i64_attr(0)
    products = []
    for step in steps:
        op, spec = step.op, step.spec
        others = [part.read(v, r, op) for v, r in zip(spec.inputs[1:] + spec.trailing, step.reads[1:])]
        shape = _swap(shape_of(op.results[0]), lead)
        (split,) = part.plan.of(op.results[0]).splits
        product = part.new_buffer(
            buffer_type(vtensor(_rows_shape(shape, d), dtype), _attr(part, (None if split is None else split + 1,))),
            op.location,
        )
        with part.in_main(op.location):
            spec.op_class.emit(gathered, others[0], product, *others[1:], **spec.options).attributes[
                STREAM_AXIS_ATTR
            ] = i64_attr(0)
        products.append((product, shape, split, op.location))
    return [
        _swapped(part, _rows_collapsed(part, product, at), shape, dtype, (split,), lead, at)
        for product, shape, split, at in products
    ]


def _swapped(
    part, buf: ir.Value, shape: Sequence[int], dtype: str, splits: tuple, lead: int, loc: ir.Location
) -> ir.Value:
    """``buf`` (global ``shape``, placed as ``splits``) with axes 0 and ``lead`` swapped,
    by a local kernel (a transpose on each device's shard); ``buf`` itself for lead 0."""
    if lead == 0:
        return buf
    moved = tuple(None if s is None else (lead if s == 0 else 0 if s == lead else s) for s in splits)
    out = part.new_buffer(buffer_type(vtensor(_swap(shape, lead), dtype), _attr(part, moved)), loc)
    local = _local_shape(part, shape, splits)

    def body(values: list, ip: ir.InsertionPoint) -> list:
        with ip, loc:
            return [
                torch_op(_TRANSPOSE, [values[0], torch_int(0), torch_int(lead)], vtensor(_swap(local, lead), dtype))
            ]

    part.kernel([buf], [out], [vtensor(local, dtype)], body, loc)
    return out


def _rows_view(part, rows: ir.Value, d: int, loc: ir.Location) -> ir.Value:
    """``[T, ...]`` split on axis 0 viewed as ``[D, T/D, ...]`` split on axis 0 (each
    device's rows are its slice of the new axis 0)."""
    t = ir.MemRefType(rows.type)
    with part.in_main(loc):
        return AliasReshapeOp.emit(rows, _rows_shape(list(t.shape), d), _rows_groups(t.rank))


def _rows_collapsed(part, buf: ir.Value, loc: ir.Location) -> ir.Value:
    """The inverse view: ``[D, T/D, ...]`` back to ``[T, ...]`` (a split follows its axis)."""
    t = ir.MemRefType(buf.type)
    shape = [t.shape[0] * t.shape[1]] + list(t.shape[2:])
    with part.in_main(loc):
        return AliasReshapeOp.emit(buf, shape, _rows_groups(len(shape)))


# ----- partial sums -------------------------------------------------------------------------
def partial_sum(part, step) -> ir.Value:
    """A contraction over dims split on mesh axis ``k``: local products into
    ``[D, ..., N]`` split on axis 0 over ``k`` (the other mesh axes as their strategies
    say), then a sum over axis 0 into the result (allreduce or reduce-scatter along ``k``)."""
    op, spec, form = step.op, step.spec, step.form
    x, w = spec.inputs
    loc, k, grid = op.location, form.mesh_axis, part.plan.grid
    out = op.results[0]
    shape, dtype = ranked_info(out)
    d = grid.shape[k]
    # Scattered onto the rows on a 1-D mesh: nvFuser's matmul + reduce-scatter form,
    # streamed along the scatter axis (what hir-p2p-pipeline pipelines): the local
    # products as [S, D, T/S, ..., N] (stream axis 0, mesh axis 1) from x viewed as
    # [S, D, T/S, ..., K/D] and the weight as [1, D, 1.., K/D, N]; summed over axis 1.
    # Rows on an inner axis ([B, S, N] on 1) lead after a local transpose, and back.
    stream, row_axis = form.stream, form.row_axis
    shape = _swap(shape, row_axis)
    # Streamed with a 2-D weight, every axis of x but the contracted one is a row of the
    # product: they fold into one ([S, D, T/S * B.., K/D]), one GEMM per step. Left apart,
    # the axes after the tokens would be the matmul's M and the tokens a batch axis the
    # weight is broadcast over: a [1, T, D] layer's tokens as T/S GEMVs.
    fold = stream and rank_of(w) == 2 and len(shape) > 2 and DYNAMIC not in shape
    ones = [1] * (0 if fold else max(0, rank_of(x) - rank_of(w)))  # the batch dims only x has (a linear's 2-D weight)
    x_outer = _outer(
        part,
        x,
        step.reads[0],
        k,
        [1] * max(0, rank_of(w) - rank_of(x)),
        op,
        rows=d if stream else 0,
        row_axis=row_axis,
        fold=fold,
    )
    # A transposed weight ([N, K]: linear's) is used transposed; the mesh axis then
    # broadcasts against x's batch axes (size-1 axes in between).
    w_outer = _outer(part, w, step.reads[1], k, ones, op, transpose=spec.transposed_rhs, before=1 if stream else 0)
    if stream:
        rows_shape = _rows_shape(shape, d)
        summed_shape = _folded(rows_shape) if fold else rows_shape
        partial_shape, lead = [d, d] + summed_shape[1:], (1,)
    else:
        partial_shape, summed_shape = [d] + shape, shape
        lead = tuple(0 if j == k else (None if s is None else s + 1) for j, s in enumerate(form.others))
    partial = part.new_buffer(buffer_type(vtensor(partial_shape, dtype), _attr(part, lead)), loc, out)
    with part.in_main(loc):
        product = MatmulOp.emit(x_outer, w_outer, partial)
    summed = part.new_buffer(
        buffer_type(vtensor(summed_shape, dtype), _attr(part, (0,) if stream else part.plan.of(out).splits)), loc, out
    )
    with part.in_main(loc):
        reduction = ReductionOp.emit(partial, summed, "sum", [1 if stream else 0])
        if stream:
            product.attributes[STREAM_AXIS_ATTR] = reduction.attributes[STREAM_AXIS_ATTR] = i64_attr(0)
    if stream:
        if fold:  # [S, T/S * B.., N] viewed as [S, T/S, B.., N]
            with part.in_main(loc):
                summed = AliasReshapeOp.emit(
                    summed, rows_shape, [[0], list(range(1, len(rows_shape) - 1)), [len(rows_shape) - 1]]
                )
        summed = _swapped(part, _rows_collapsed(part, summed, loc), shape, dtype, (0,), row_axis, loc)
    if not spec.trailing:
        return summed
    (bias,) = spec.trailing  # bias, after the sum (added once, not once per shard)
    bias_buf = part.read(bias, step.reads[2], op)
    result = part.new_buffer(part.memref_type(out), loc, out)
    with part.in_main(loc):
        BinaryOp.emit(summed, bias_buf, result, "add")
    return result


def _outer(
    part,
    value: ir.Value,
    placement: Sharding,
    k: int,
    ones: list,
    op: ir.Operation,
    transpose: bool = False,
    before: int = 0,
    rows: int = 0,
    row_axis: int = 0,
    fold: bool = False,
) -> ir.Value:
    """``value``'s local shard (placed as ``placement``) with mesh axis ``k`` as a new axis,
    split over ``k`` (views where nothing is transposed: :func:`_outer_view`; else a local
    kernel segment: transpose, view, unsqueeze): a
    ``[1 * before, D, *ones, ...]`` buffer; with ``rows = S`` (1-D meshes) value's axis 0
    is viewed as ``[S, T/S]`` around the mesh axis: ``[S, D, T/S, ...]``, after axes 0 and
    ``row_axis`` are swapped; ``fold`` reshapes that to ``[S, D, T/S * ..., K]`` (the axes
    between the rows and the last one folded in)."""
    grid = part.plan.grid
    splits = placement.splits
    shape, dtype = ranked_info(value)
    source = part.read(value, placement, op)
    unmoved = _local_shape(part, shape, splits)
    local = unmoved
    block = _local_shape(part, shape, tuple(s if j == k else None for j, s in enumerate(splits)))
    moved = list(splits)
    if transpose or row_axis:
        swap = 1 if transpose else row_axis
        local, block = _swap(local, swap), _swap(block, swap)
        moved = [None if s is None else (swap if s == 0 else 0 if s == swap else s) for s in moved]
    if rows:  # [T, ...] -> [S, T/S, ...]: the mesh axis goes in at 1
        assert grid.rank == 1, "the row view is for 1-D meshes"
        local, block = [rows, local[0] // rows] + local[1:], [rows, block[0] // rows] + block[1:]
        if fold:
            local, block = _folded(local), _folded(block)
        lead, mesh_at = [rows, 1], 1
    else:
        lead, mesh_at = [1] * before + [1] + [1] * len(ones), before
    global_lead = list(lead)
    global_lead[mesh_at] = grid.shape[k]
    inserted = len(lead) - (1 if rows else 0)
    out_splits = [mesh_at if j == k else (None if s is None else s + inserted) for j, s in enumerate(moved)]
    out_type = buffer_type(vtensor(global_lead + (block[1:] if rows else block), dtype), _attr(part, out_splits))
    if not (transpose or row_axis):
        viewed = _outer_view(part, source, k, 0 if rows else before, 0 if rows else len(ones), rows, fold, op.location)
        if viewed is not None:
            assert viewed.type == out_type, f"{viewed.type} != {out_type}"
            return viewed
    out = part.new_buffer(out_type, op.location, value)
    local_out = lead + (local[1:] if rows else local)

    def body(values: list, ip: ir.InsertionPoint) -> list:
        with ip, op.location:
            v = values[0]
            current = list(unmoved)
            if transpose or row_axis:
                current = _swap(current, 1 if transpose else row_axis)
                v = torch_op(
                    _TRANSPOSE, [v, torch_int(0), torch_int(1 if transpose else row_axis)], vtensor(current, dtype)
                )
            if rows:
                current = local
                sizes = torch_op(LIST_CONSTRUCT, [torch_int(n) for n in current], ir.Type.parse("!torch.list<int>"))
                v = torch_op(
                    _RESHAPE if fold else _VIEW, [v, sizes], vtensor(current, dtype)
                )  # a fold after a transpose is no view
                current = [rows, 1] + current[1:]
                v = torch_op(_UNSQUEEZE, [v, torch_int(1)], vtensor(current, dtype))
            else:
                for _ in range(len(lead)):
                    current = [1] + current
                    v = torch_op(_UNSQUEEZE, [v, torch_int(0)], vtensor(current, dtype))
            assert current == local_out
            return [v]

    part.kernel([source], [out], [vtensor(unmoved, dtype)], body, op.location)
    return out


def _outer_view(
    part, source: ir.Value, k: int, before: int, ones: int, rows: int, fold: bool, loc: ir.Location
) -> ir.Value | None:
    """:func:`_outer`'s layout as views of ``source`` where no transpose is needed (no
    copy): the rows viewed as ``[S, T/S, ...]`` (and folded) by ``hir.alias_reshape``, the
    devices' shards of the axis split over mesh axis ``k`` stacked at the mesh axis's place
    (``hir.alias_stack_shards``: each device's part is its shard, unsqueezed), then
    ``before`` unit axes before it and ``ones`` after it (``hir.alias_reshape``). Aliasing
    ``source`` is safe: it is the value's buffer (or its resharded copy), written before
    and not again while the partial sum's contraction, the views' only user, reads them.
    None where a view's type rule refuses (a strided or dynamic source, a split the
    reshapes cannot carry): the kernel copies then."""
    t = ir.MemRefType(source.type)
    if DYNAMIC in t.shape:
        return None
    views = []  # (emit, its arguments after the input), each checked by its type rule first
    try:
        if rows:
            groups = _rows_groups(t.rank)
            t = reshape_type(t, _rows_shape(list(t.shape), rows), groups)
            views.append((AliasReshapeOp.emit, (list(t.shape), groups)))
            if fold and t.rank > 3:
                groups = [[0], list(range(1, t.rank - 1)), [t.rank - 1]]
                t = reshape_type(t, _folded(list(t.shape)), groups)
                views.append((AliasReshapeOp.emit, (list(t.shape), groups)))
        sharding = sharding_of(t, "input")
        axis = None if sharding is None or k >= len(sharding.splits) else sharding.splits[k]
        if axis is None:
            return None
        at = 1 if rows else 0
        t = stack_shards_type(t, axis, at)
        views.append((AliasStackShardsOp.emit, (axis, at)))
        if before or ones:
            units = [1] * before + [t.shape[0]] + [1] * ones
            groups = [list(range(len(units)))] + [[len(units) + i] for i in range(t.rank - 1)]
            t = reshape_type(t, units + list(t.shape[1:]), groups)
            views.append((AliasReshapeOp.emit, (list(t.shape), groups)))
    except VerifyError:
        return None
    buf = source
    with part.in_main(loc):
        for emit, args in views:
            buf = emit(buf, *args)
    return buf


def _swap(shape: Sequence[int], axis: int) -> list[int]:
    """``shape`` with axes 0 and ``axis`` swapped."""
    out = list(shape)
    out[0], out[axis] = out[axis], out[0]
    return out


def _rows_shape(shape: Sequence[int], d: int) -> list[int]:
    """``[T, ...]`` as ``[D, T/D, ...]``."""
    if shape[0] == DYNAMIC:
        raise HirError(
            "error: sequence parallelism over a dynamic dim is not "
            "supported: mark the sequence dim static (or split another one)"
        )
    return [d, shape[0] // d] + list(shape[1:])


def _folded(shape: Sequence[int]) -> list[int]:
    """``[S, T/S, B.., K]`` as ``[S, T/S * B.., K]``."""
    middle = 1
    for n in shape[1:-1]:
        middle *= n
    return [shape[0], middle, shape[-1]]


def _rows_groups(rank: int) -> list[list[int]]:
    """The reassociation of ``[D, T/D, ...]`` onto ``[T, ...]`` (of the given rank)."""
    return [[0, 1]] + [[i + 1] for i in range(1, rank)]
