"""The stream loop of nvFuser's collective-based pipelines (seed 003) as hir-stream-lowering
builds it: the bounds, the user stream saved, and one ``hir.stream_for`` whose body the
lowered op goes into (``hir-expand-stream-loops`` later writes it as nvFuser's ``hir.for``
form); and the slices a stream-parallel op reads per iteration.

    %c0 = arith.constant 0 : index ; %c1 = arith.constant 1 : index ; %n = memref.dim %out, %c0
    %user = "hir.get_current_stream"() : () -> !hir.stream
    "hir.stream_for"(%c0, %n, %c1, %user) ({
    ^bb0(%i: index, %slot: index):
      ... slices, ops, collectives + waits ...
      "hir.yield"() : () -> ()
    }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
"""

from dataclasses import dataclass

from torch_mlir import ir

from hir.dialect import GetCurrentStreamOp, MatmulOp, StreamForOp
from hir.dialect.base import VerifyError
from hir.dialect.irutils import dim_or_const, index_const, is_broadcast_axis, operand_axis, output_index
from hir.dialect.sharding import sharding_of
from hir.passes.base import fail


@dataclass
class StreamLoop:
    """A freshly built stream loop: insert its body before ``end`` (with ``iv``)."""

    loop: ir.Operation
    iv: ir.Value
    end: ir.Operation  # the body's hir.yield
    zero: ir.Value


def build(buffer: ir.Value, axis: int, chunks: int = 0) -> StreamLoop:
    """Emit the bounds (the extent of ``buffer`` along ``axis``, or ``chunks`` when given),
    get_current_stream and an empty ``hir.stream_for`` at the current insertion point and
    location."""
    zero, one = index_const(0), index_const(1)
    extent = index_const(chunks) if chunks else dim_or_const(buffer, axis, zero)
    user = GetCurrentStreamOp.emit(name="user_stream")
    loop, iv, _, end = StreamForOp.emit(zero, extent, one, user)
    return StreamLoop(loop, iv, end, zero)


def body_ops(loop: ir.Operation) -> list[ir.Operation]:
    """The ops of ``loop``'s body without its ``hir.yield``, listed once (each listing costs
    ~0.4 us an op: callers that need them several times pass the list on)."""
    ops = [op.operation for op in loop.regions[0].blocks[0].operations]
    return ops[:-1]


def terminator(loop: ir.Operation) -> ir.Operation:
    """The ``hir.yield`` ending ``loop``'s body."""
    ops = loop.regions[0].blocks[0].operations
    return ops[len(ops) - 1].operation


# ----- stream slices (hir-stream-lowering, hir-p2p-pipeline) ------------------------------


@dataclass
class Slice:
    index: int  # operand number
    axis: int  # operand axis selected
    broadcast: bool  # read index 0 (extent-1 broadcast axis) instead of the stream index


def stream_slices(op: ir.Operation, k: int, vectors: bool = True) -> list[Slice]:
    """Which operands of ``op`` to slice for its output axis ``k``, along which axis; fails
    where slicing is not expressible. ``vectors``: a slice drops the axis (alias_select), so
    a matmul operand may become a vector (False for alias_chunk, which keeps it)."""
    out_rank = ir.MemRefType(op.operands[output_index(op)].type).rank
    if op.name == MatmulOp.OPERATION_NAME and vectors:
        batch = out_rank - 2
        rank_a, rank_b = (ir.MemRefType(op.operands[i].type).rank for i in (0, 1))
        # A slice drops the axis; torch.matmul reads a 1-D operand as a vector, which is
        # right for M with a 2-D A or 2-D B and for N with a 2-D B, and wrong otherwise (a
        # batched operand's slice would be read as a matrix).
        if (k == batch + 1 and rank_b != 2) or (k == batch and rank_a > 2 and rank_b > 2):
            axis_name = "N" if k == batch + 1 else "M"
            raise fail(
                op,
                f"has stream axis {k}, the {axis_name} axis of a matmul of ranks {rank_a} and {rank_b}; its slices "
                "would be read as matrices, not vectors (stream a batch axis, M with a 2-D A or B, or N with a 2-D B)",
            )
    slices = []
    for index, operand in enumerate(op.operands):
        if not isinstance(operand.type, ir.MemRefType):
            continue
        axis = operand_axis(op, index, k)
        if axis is None:
            continue
        try:
            sharding = sharding_of(operand, f"operand #{index}")
        except VerifyError as err:
            raise fail(op, str(err)) from None
        if sharding is not None and axis in sharding.splits:
            raise fail(
                op,
                f"has stream axis {k}, which is axis {axis} of operand #{index}, split over the "
                f"device mesh {list(sharding.mesh)}; a split axis cannot also be stream-parallel",
            )
        slices.append(Slice(index, axis, is_broadcast_axis(op, index, axis, k)))
    return slices
