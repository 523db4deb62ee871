"""The all-reduce pattern of hir-p2p-pipeline (async-TP's idea for the tensor-parallel form): a
contraction writing a partial sum (its output split on the reduced axis) followed by a
summing ``hir.allreduce`` runs in ``chunks`` row blocks, each block's matmul on pool stream
c and its all-reduce issued right after it from the same stream, so the all-reduce of block
c runs while block c + 1 multiplies.

Before (after hir-convert-to-communication; the partial is [D, T, N] split on axis 0)::

    "hir.matmul"(%a, %w, %partial) : (memref<2x8x4xf32, #s0>, memref<2x4x3xf32, #s0>, memref<2x8x3xf32, #s0>)
    %w = "hir.allreduce"(%partial, %out) {axis = 0, reduction = "sum", ...} ; "hir.wait"(%w)

After (chunks = 2; the rows T of the partial and the output are chunked)::

    %user = "hir.get_current_stream"() ; initial sync loop of pool streams 0 .. 1
    "hir.for"(%c0, %c2, %c1) ({ ^bb0(%c):
      %s = "hir.get_stream"(%c) ; "hir.set_current_stream"(%s)
      "hir.matmul"("hir.alias_chunk"(%a, %c) {axis = 1}, %w, "hir.alias_chunk"(%partial, %c) {axis = 1})
      %w = "hir.allreduce"(%partial_part, "hir.alias_chunk"(%out, %c) {axis = 0}) ; "hir.wait"(%w)
      "hir.set_current_stream"(%user) ; "hir.synchronize"(%s) })

The all-reduces keep the collective's backend (NCCL: its kernels run on NCCL's stream, one
after another, each after its block's matmul). The form of ``allreduce=chunked`` with a
fixed ``chunks`` > 1: by the rule of ``cost.py`` it never pays (the NCCL kernels take the
matmul's SMs), so ``chunks=auto`` and ``overlap=auto`` leave the pair whole.
"""

from torch_mlir import ir, rewrite

from hir.dialect import ForOp, GetCurrentStreamOp, GetStreamOp, SetCurrentStreamOp, SynchronizeOp, WaitOp
from hir.dialect.base import required_int, required_str
from hir.dialect.irutils import DEALLOC, index_const, output_index, stream_axis
from hir.dialect.teams import is_multi_team
from hir.passes.p2p.cost import CONTRACTIONS
from hir.passes.p2p.steps import chunk, chunk_op


def chunkable_allreduce(op: ir.Operation) -> tuple | None:
    """(producer, chunked axis of the partial) when the all-reduce ``op`` sums over one team,
    is waited on once, and its input is written only by a contraction before it in its block
    (no stream axis, nothing else reading it) and has a static axis besides the reduced one
    to chunk; else None."""
    if required_str(op, "reduction") != "sum" or is_multi_team(op):
        return None  # a device layout (one team per row) is left whole
    partial, axis = op.operands[0], required_int(op, "axis")
    users = [use.owner.operation for use in op.results[0].uses]
    if len(users) != 1 or users[0].name != WaitOp.OPERATION_NAME:
        return None
    producer = None
    for use in partial.uses:
        owner = use.owner.operation
        if owner == op or owner.name == DEALLOC:
            continue
        if (
            producer is not None
            or owner.name not in CONTRACTIONS
            or owner.operands[output_index(owner)] != partial
            or stream_axis(owner) is not None
        ):
            return None
        producer = owner
    if producer is None or not _before(producer, op):
        return None
    shape = ir.MemRefType(partial.type).shape
    rows = next((a for a in range(len(shape)) if a != axis), None)
    if rows is None or ir.ShapedType.is_dynamic_size(shape[rows]):
        return None
    return producer, rows


def build_allreduce(
    chunks: int, op: ir.Operation, producer: ir.Operation, rows: int, rewriter: rewrite.PatternRewriter
) -> None:
    """Replace the contraction ``producer``, the all-reduce ``op`` and its wait by the loop
    of ``chunks`` row blocks (module docstring)."""
    out = op.operands[1]
    out_rows = rows - (1 if required_int(op, "axis") < rows else 0)
    wait = next(use.owner.operation for use in op.results[0].uses)

    with ir.InsertionPoint(op), op.location:
        zero, one, count = index_const(0), index_const(1), index_const(chunks)
        user = GetCurrentStreamOp.emit(name="user_stream")
        _, s, end = ForOp.emit(zero, count, one, name="s")
        with ir.InsertionPoint(end):
            SetCurrentStreamOp.emit(GetStreamOp.emit(s, name="stream"))
            SynchronizeOp.emit(user)
        SetCurrentStreamOp.emit(user)
        _, c, end = ForOp.emit(zero, count, one, name="c")
        with ir.InsertionPoint(end):
            stream = GetStreamOp.emit(c, name="stream")
            SetCurrentStreamOp.emit(stream)
            block = producer.clone()
            chunk_op(block, output_index(block), rows, c, chunks, {})
            reduced = op.clone()
            reduced.operands[0] = block.operands[output_index(block)]
            reduced.operands[1] = chunk(out, c, out_rows, chunks)
            reduced.move_before(end)
            WaitOp.emit(reduced.results[0])
            SetCurrentStreamOp.emit(user)
            SynchronizeOp.emit(stream)
    rewriter.erase_op(wait)
    rewriter.erase_op(op)
    rewriter.erase_op(producer)


def _before(first: ir.Operation, second: ir.Operation) -> bool:
    """Whether ``first`` comes before ``second`` in ``second``'s block."""
    for o in second.block.operations:
        o = o.operation
        if o == first:
            return True
        if o == second:
            return False
    return False
