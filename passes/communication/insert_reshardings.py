"""``hir-insert-reshardings``: every compute op whose operand is placed differently from what
its output needs gets a ``hir.set`` of that operand into a new buffer with the needed
sharding (nvFuser's insertReshardings, resharding before the op). The set is a resharding
that hir-convert-to-communication then lowers to a collective, so an op is written the way
nvFuser's fusions are: sharded inputs, the output's placement, nothing in between.

The needed placement is the output's mesh, split along the operand axis that the output's
split axis reads (replicated when the operand has no such axis or broadcasts along it). A
stream axis on the op carries over to the set along the operand axis it reads, unless that
axis is the operand's split axis. ``hir.set`` (a resharding itself) and reductions over a
split axis (an allreduce / reduce-scatter / reduce) are left to
hir-convert-to-communication; buffers without a device mesh are not touched.

One pattern per compute op kind but ``hir.set``, run by the walk driver
(``walk_and_apply_patterns``): one visit per op, nested bodies first, the root updated in
place and the new ops built before it (never revisited), no folding and no dead-code removal.

Before (AG + matmul as nvFuser writes it: A split along axis 1, the output replicated)::

    %out = memref.alloc(%d0) : memref<?x4x8x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
    "hir.matmul"(%A, %B, %out) {stream_axis = 0 : i64}
        : (memref<?x4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<16x32xf32, ...>, ...) -> ()

After::

    %out = memref.alloc(%d0) : memref<?x4x8x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
    %n = memref.dim %A, %c0 : memref<?x4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
    %A_full = memref.alloc(%n) : memref<?x4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
    "hir.set"(%A, %A_full) {stream_axis = 0 : i64} : (...) -> ()
    "hir.matmul"(%A_full, %B, %out) {stream_axis = 0 : i64} : (...) -> ()
"""

from dataclasses import dataclass

from torch_mlir import ir, rewrite

from hir.dialect import ComputeOp, ReductionOp, SetOp
from hir.dialect.base import DYNAMIC, i64_attr, required_i64_array
from hir.dialect.compute import STREAM_AXIS_ATTR
from hir.dialect.irutils import alloc, dim_or_const, op_classes, operand_axis, output_index, stream_axis
from hir.dialect.sharding import Sharding
from hir.passes.base import ModulePass, register_pass
from hir.passes.communication._resharding import needed_sharding, operand_sharding
from hir.passes.patterns import GuardedRewritePatternSet


@register_pass
@dataclass
class InsertReshardings(ModulePass):
    name = "hir-insert-reshardings"
    description = (
        "Insert a hir.set before each compute op whose operands are sharded "
        "differently from what it needs (nvFuser's insertReshardings)."
    )

    def run(self, module: ir.Module) -> None:
        patterns = GuardedRewritePatternSet(module.context)
        populate_insert_reshardings_patterns(patterns)
        patterns.walk(module)


def populate_insert_reshardings_patterns(patterns: GuardedRewritePatternSet) -> None:
    """One pattern per compute op kind but ``hir.set`` (a resharding itself, lowered whole by
    hir-convert-to-communication): a ``hir.set`` before the op for each operand sharded
    otherwise than the op needs."""
    for root in op_classes(ComputeOp):
        if root is SetOp:
            continue
        pattern = reshard_reduction_operands if root is ReductionOp else reshard_operands
        patterns.add(root, pattern)


def reshard_reduction_operands(op: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
    """``hir.reduction``: as :func:`reshard_operands`, except a reduction over the input's
    split axis, a collective of its own (allreduce / reduce-scatter / reduce)."""
    src = operand_sharding(op.operation, 0)
    if src is not None and any(s in required_i64_array(op.operation, "axes") for s in src.splits if s is not None):
        return True
    return reshard_operands(op, rewriter)


def reshard_operands(op: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
    """A compute op: each operand placed differently from what the output needs is read
    from a new buffer set from it right before the op (no match when none is); the op is
    replaced by its copy reading them."""
    op = op.operation
    out_index = output_index(op)
    out = operand_sharding(op, out_index)
    if out is None:
        return True
    resharded = {}
    for index, operand in enumerate(list(op.operands)):
        if index == out_index or not isinstance(operand.type, ir.MemRefType):
            continue
        mine = operand_sharding(op, index)
        needed = needed_sharding(op, index, out)
        if mine is None or mine == needed:
            continue
        resharded[index] = _resharded(op, index, mine, needed, rewriter.ip)
    if not resharded:
        return True
    reading = op.clone(ip=rewriter.ip)  # the op reading the new buffers, after their sets
    for index, buffer in resharded.items():
        reading.operands[index] = buffer
    rewriter.replace_op(op, reading)
    return False


def _resharded(op: ir.Operation, index: int, mine: Sharding, needed: Sharding, ip: ir.InsertionPoint) -> ir.Value:
    """A new buffer with operand ``index``'s shape placed as ``needed``, set from the
    operand at ``ip`` (right before ``op``)."""
    # The needed split axis has the output's extent there (verified divisible), or is None.
    operand = op.operands[index]
    source = ir.MemRefType(operand.type)
    k = stream_axis(op)
    with ip, op.location:
        sizes = [dim_or_const(operand, axis) for axis, extent in enumerate(source.shape) if extent == DYNAMIC]
        target = ir.MemRefType.get(source.shape, source.element_type, memory_space=needed.attr())
        buffer = alloc(target, sizes).result
        set_op = SetOp.emit(operand, buffer)
    if k is not None:
        axis = operand_axis(op, index, k)
        if axis is not None and source.shape[axis] != 1 and axis not in (*mine.splits, *needed.splits):
            set_op.attributes[STREAM_AXIS_ATTR] = i64_attr(axis)
    return buffer
