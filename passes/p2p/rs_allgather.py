"""The reduce-scatter + all-gather form of hir-p2p-pipeline's all-reduce pattern (async-TP's
idea for the tensor-parallel form): a contraction writing a partial sum followed by a summing
``hir.allreduce`` becomes the contraction in nvFuser's stream-parallel P2P form, its rows
(the output's M axis, the tokens) split over the team, feeding a reduce-scatter of those
rows, which the reduce-scatter pattern pipelines at once (``reduce_scatter.py``, or the
accumulating ring of ``accumulate.py``, with the pass's options: copy-engine shifts with
``backend=cuda``); then one whole ``hir.allgather`` of the scattered rows into the
all-reduce's output. A sum all-reduce is a reduce-scatter then an all-gather; only the
reduce-scatter has a contraction to hide behind, and it moves half the all-reduce's bytes.

The rows must split evenly over the team, and every buffer involved must be viewable with
them split (``hir.alias_reshape``: contiguous, static, the device split leading its axis
group); else the pair is left to the other forms (``analysis.py``).

Before (after hir-convert-to-communication; the partial [D, T, N] split on axis 0, T = 8
rows over D = 2 devices)::

    %partial = memref.alloc() : memref<2x8x3xf32, #s0>
    "hir.matmul"(%a, %w, %partial) : (memref<2x8x4xf32, #s0>, memref<2x4x3xf32, #s0>, memref<2x8x3xf32, #s0>)
    %out = memref.alloc() : memref<8x3xf32, #rep>
    %work = "hir.allreduce"(%partial, %out) {axis = 0, reduction = "sum", ...} ; "hir.wait"(%work)

The P2P form this pattern builds (the rows axis T split into [2, 4]; the weight gets a unit
axis there, broadcast over the row blocks)::

    %a_rows = "hir.alias_reshape"(%a) {reassociation = [[0], [1, 2], [3]]}      // 2x2x4x4, #s0
    %w_rows = "hir.alias_reshape"(%w) {reassociation = [[0], [1, 2], [3]]}      // 2x1x4x3, #s0
    %partial_rows = memref.alloc() : memref<2x2x4x3xf32, #s0>
    "hir.matmul"(%a_rows, %w_rows, %partial_rows) {stream_axis = 1 : i64}
    %scattered = memref.alloc() : memref<2x4x3xf32, #s0>
    %rs = "hir.reduce_scatter"(%partial_rows, %scattered)
        {axis = 0, scatter_axis = 1, stream_axis = 1, reduction = "sum", ...}
    "hir.wait"(%rs)
    %out_rows = "hir.alias_reshape"(%out) {reassociation = [[0, 1], [2]]}       // 2x4x3, replicated
    %ag = "hir.allgather"(%scattered, %out_rows) {axis = 0, ...} ; "hir.wait"(%ag)

After: the reduce-scatter, its wait and its producer replaced by their pipeline (one
``hir.shift`` per peer; test/Transforms/p2p-allreduce.mlir), the all-gather as above.

An elementwise ``hir.binary`` that alone reads the all-reduce's output, with an operand
that every rank holds whole and that is broadcast over the rows (the row-parallel linear's
bias: ``y + b``), commutes with the all-gather: it runs on the scattered rows before it (1/n
of the elements; the hand-written TP adds the bias to all of them), and the all-gather
writes its output::

    %biased = memref.alloc() : memref<2x4x3xf32, #s0>
    "hir.binary"(%scattered, %b, %biased) {kind = "add"}
    %y = memref.alloc() : memref<8x3xf32, #rep>                                 // was after the all-reduce
    %y_rows = "hir.alias_reshape"(%y) {reassociation = [[0, 1], [2]]}
    %ag = "hir.allgather"(%biased, %y_rows) {axis = 0, ...} ; "hir.wait"(%ag)
"""

from collections.abc import Callable
from dataclasses import dataclass

from torch_mlir import ir, rewrite

from hir.dialect import AliasReshapeOp, AllgatherOp, BinaryOp, MatmulOp, ReduceScatterOp, WaitOp
from hir.dialect.base import VerifyError, i64_attr, loc_name, required_i64_array, required_int, required_str
from hir.dialect.compute import STREAM_AXIS_ATTR
from hir.dialect.irutils import (
    ALLOC,
    DEALLOC,
    alloc,
    defining_op,
    is_broadcast_axis,
    operand_axis,
    output_index,
    runs_after,
    value_name,
    written_through,
)
from hir.dialect.nodes import team_backend
from hir.dialect.sharding import Sharding, sharding_of
from hir.dialect.views import reshape_type
from hir.passes.p2p.reduce_scatter import erase_if_unused


@dataclass
class RowSplit:
    """How the pair's buffers are viewed with the rows split over the team: per view,
    (operand index of the producer or None for the all-reduce's output, new shape, groups)."""

    n: int
    rows: int  # the partial's rows axis: the stream and scatter axis once split
    out_rows: int  # the all-reduce output's rows axis: the all-gather's axis
    views: list  # (producer operand index, shape, reassociation groups)
    out_view: tuple  # (shape, groups) of the all-reduce's output


def row_split(op: ir.Operation, producer: ir.Operation, rows: int) -> RowSplit | None:
    """The row split of the contraction ``producer`` + all-reduce ``op`` pair (``rows``: the
    partial's axis that ``chunkable_allreduce`` found); None where the rows are not the
    contraction's M axis, do not split evenly over the team, or a buffer cannot be viewed so."""
    partial, out = op.operands[0], op.operands[1]
    shape = list(ir.MemRefType(partial.type).shape)
    n, axis = len(required_i64_array(op, "team")), required_int(op, "axis")
    sharding = sharding_of(partial)
    if rows != len(shape) - 2 or shape[rows] % n or sharding is None or sharding.multi_dim or sharding.offsets:
        return None
    views = []
    for index, operand in enumerate(producer.operands):
        if index == output_index(producer):
            continue
        source = list(ir.MemRefType(operand.type).shape)
        at = operand_axis(producer, index, rows)
        if at is not None:
            views.append((index, *_split(source, at, n)))
        elif producer.name == MatmulOp.OPERATION_NAME and len(source) > 2:
            # a batched B: a unit axis broadcasts it over the row blocks (the new innermost batch axis)
            views.append((index, source[:-2] + [1] + source[-2:], _groups(len(source), len(source) - 2)))
    out_rows = rows - (1 if axis < rows else 0)
    out_view = _split(list(ir.MemRefType(out.type).shape), out_rows, n)
    try:
        for index, view_shape, groups in views:
            reshape_type(ir.MemRefType(producer.operands[index].type), view_shape, groups)
        reshape_type(ir.MemRefType(out.type), *out_view)
    except VerifyError:  # a strided view, a split inside a group: leave the pair to the other forms
        return None
    return RowSplit(n, rows, out_rows, views, out_view)


def build_rs_allgather(
    split: RowSplit,
    op: ir.Operation,
    producer: ir.Operation,
    backend: str,
    pass_name: str,
    pipeline: Callable[[ir.Operation, rewrite.PatternRewriter], None],
    rewriter: rewrite.PatternRewriter,
) -> None:
    """Replace ``producer``, the all-reduce ``op`` and its wait by the P2P form (module
    docstring), ``pipeline(reduce_scatter, rewriter)`` pipelining its reduce-scatter, then the
    all-gather (over copy engines where ``backend``, the pass's or the all-reduce's, says)."""
    partial, out = op.operands[0], op.operands[1]
    wait = next(use.owner.operation for use in op.results[0].uses)
    axis, rows = required_int(op, "axis"), split.rows
    sharding = sharding_of(partial)
    assert sharding is not None, "row_split found the partial placed"
    mesh = sharding.mesh
    partial_type = ir.MemRefType(partial.type)
    team = op.attributes["team"]
    consumer = rows_elementwise_consumer(op, out, split.out_rows)
    with ir.InsertionPoint(op), op.location:
        block = producer.clone()
        for index, shape, groups in split.views:
            source = block.operands[index]
            block.operands[index] = AliasReshapeOp.emit(
                source, shape, groups, name=f"{value_name(source) or 'operand'}_rows"
            )
        rows_shape, rows_groups = _split(list(partial_type.shape), rows, split.n)
        partial_rows = alloc(reshape_type(partial_type, rows_shape, rows_groups), name="partial_rows").result
        block.operands[output_index(block)] = partial_rows
        block.attributes[STREAM_AXIS_ATTR] = i64_attr(rows)
        block.move_before(op)  # after the views it reads
        reduced = axis + (1 if axis > rows else 0)
        scattered_shape = [e for a, e in enumerate(rows_shape) if a != reduced]
        scattered_type = ir.MemRefType.get(
            scattered_shape, partial_type.element_type, memory_space=Sharding(mesh, split.out_rows).attr()
        )
        scattered = alloc(scattered_type, name="scattered").result
        attrs = {
            "team": team,
            "backend": op.attributes["backend"],
            "axis": i64_attr(reduced),
            "scatter_axis": i64_attr(rows),
            "reduction": op.attributes["reduction"],
            STREAM_AXIS_ATTR: i64_attr(rows),
        }
        rs = ReduceScatterOp.emit(partial_rows, scattered, attrs, name="rs_work")
        WaitOp.emit(rs)
        gathered, target = scattered, out
        if consumer is not None:  # the bias added to the scattered rows; the all-gather writes its output
            gathered = alloc(scattered_type, name="biased").result
            bias = consumer.op.operands[consumer.other]
            with consumer.op.location:  # the moved add keeps its own location, name included
                lhs, rhs = (scattered, bias) if consumer.other == 1 else (bias, scattered)
                BinaryOp.emit(
                    lhs, rhs, gathered, required_str(consumer.op, "kind"), name=loc_name(consumer.op.location)
                )
            target = consumer.op.operands[output_index(consumer.op)]
            if op.is_before_in_block(consumer.alloc):  # allocated after the all-reduce: a copy here replaces it
                hoisted = consumer.alloc.clone()
                rewriter.replace_op(consumer.alloc, hoisted)
                target = hoisted.result
        out_rows = AliasReshapeOp.emit(target, *split.out_view, name=f"{value_name(target) or 'out'}_rows")
        gather_backend = ir.StringAttr.get(team_backend(op, team, backend, pass_name))  # no copy engines across nodes
        WaitOp.emit(
            AllgatherOp.emit(
                gathered,
                out_rows,
                {"team": team, "backend": gather_backend, "axis": i64_attr(split.out_rows)},
                name="ag_work",
            )
        )
    rewriter.erase_op(wait)
    rewriter.erase_op(op)
    rewriter.erase_op(producer)
    if consumer is not None:
        rewriter.erase_op(consumer.op)
        erase_if_unused(out, rewriter)
    erase_if_unused(partial, rewriter)
    pipeline(rs.owner.operation, rewriter)


@dataclass
class RowsConsumer:
    """The elementwise op after the all-reduce that moves onto the scattered rows: the
    ``hir.binary`` ``op``, the index of its other operand, and its output's alloc."""

    op: ir.Operation
    other: int
    alloc: ir.Operation


def rows_elementwise_consumer(op: ir.Operation, out: ir.Value, rows: int) -> RowsConsumer | None:
    """The ``hir.binary`` in ``op``'s block that alone reads the all-reduce ``op``'s output
    ``out``, when it commutes with the all-gather of ``out``'s ``rows`` axis: its other
    operand is a function argument that nothing writes (nor a view of it), whole on every
    rank, broadcast over the rows and with no axis left of them; its output (``out``'s
    type) is an alloc in the same block that nothing uses before the binary."""
    block = op.block
    users = [
        use.owner.operation for use in out.uses if use.owner.operation != op and use.owner.operation.name != DEALLOC
    ]
    if len(users) != 1 or users[0].name != BinaryOp.OPERATION_NAME or users[0].block != block:
        return None
    binary = users[0]
    reads = [i for i in (0, 1) if binary.operands[i] == out]
    result = binary.operands[output_index(binary)]
    if len(reads) != 1 or result.type != out.type:
        return None
    other = 1 - reads[0]
    operand = binary.operands[other]
    if not isinstance(operand.owner, ir.Block) or written_through(operand):
        return None
    sharding = sharding_of(operand)
    if sharding is not None and any(s is not None for s in sharding.splits):
        return None
    rank = len(ir.MemRefType(operand.type).shape)
    if rank > len(ir.MemRefType(out.type).shape) - rows:  # an axis left of the rows would meet the team axis
        return None
    axis = operand_axis(binary, other, rows)
    if axis is not None and not is_broadcast_axis(binary, other, axis, rows):
        return None
    owner = defining_op(result)
    if owner is None or owner.name != ALLOC or len(owner.operands) or owner.block != block:
        return None
    for use in result.uses:  # written by the all-gather from then on: no earlier reader or writer
        if use.owner.operation != binary and not runs_after(use.owner.operation, binary):
            return None
    return RowsConsumer(binary, other, owner)


def _split(shape: list, axis: int, n: int) -> tuple[list, list]:
    """(shape, reassociation groups) of ``shape`` with ``axis`` split into [n, extent / n]."""
    return shape[:axis] + [n, shape[axis] // n] + shape[axis + 1 :], _groups(len(shape), axis)


def _groups(rank: int, axis: int) -> list:
    """Reassociation of a rank-``rank`` shape whose ``axis`` becomes two axes."""
    return [[a] for a in range(axis)] + [[axis, axis + 1]] + [[a + 1] for a in range(axis + 1, rank)]
