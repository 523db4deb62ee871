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

from torch_mlir import ir

from hir.dialect import ComputeOp, ReductionOp, SetOp
from hir.dialect.base import DYNAMIC, get_i64_array, i64_attr
from hir.dialect.sharding import Sharding
from hir.dialect.compute import STREAM_AXIS_ATTR
from hir.passes._resharding import needed_sharding, operand_sharding
from hir.dialect.irutils import alloc, blocks_postorder, dim_or_const, func_ops, is_a, operand_axis, output_index, stream_axis
from hir.passes.base import ModulePass, register_pass


@register_pass
@dataclass
class InsertReshardings(ModulePass):
    name = "hir-insert-reshardings"
    description = "Insert a hir.set before each compute op whose operands are sharded differently from what it needs (nvFuser's insertReshardings)."

    def run(self, module: ir.Module) -> bool:
        changed = False
        for func in func_ops(module):
            for block in blocks_postorder(func):
                ops = [op.operation for op in block.operations if is_a(op.operation, ComputeOp)]
                for op in ops:
                    # hir.set is a resharding itself, lowered whole by hir-convert-to-communication.
                    if op.name != SetOp.OPERATION_NAME and not _collective_reduction(op):
                        changed |= _reshard_operands(op)
        return changed


def _collective_reduction(op: ir.Operation) -> bool:
    """A reduction over the input's split axis: a collective of its own."""
    if op.name != ReductionOp.OPERATION_NAME:
        return False
    src = operand_sharding(op, 0)
    return src is not None and any(s in get_i64_array(op, "axes") for s in src.splits if s is not None)


def _reshard_operands(op: ir.Operation) -> bool:
    """Reshard the operands of ``op`` that need it; whether any did."""
    out_index = output_index(op)
    out = operand_sharding(op, out_index)
    if out is None:
        return False
    changed = False
    for index, operand in enumerate(list(op.operands)):
        if index == out_index or not isinstance(operand.type, ir.MemRefType):
            continue
        mine = operand_sharding(op, index)
        needed = needed_sharding(op, index, out)
        if mine is None or mine == needed:
            continue
        op.operands[index] = _resharded(op, index, mine, needed)
        changed = True
    return changed


def _resharded(op: ir.Operation, index: int, mine: Sharding, needed: Sharding) -> ir.Value:
    """A new buffer with operand ``index``'s shape placed as ``needed``, set from the
    operand right before ``op``."""
    # The needed split axis has the output's extent there (verified divisible), or is None.
    operand = op.operands[index]
    source = ir.MemRefType(operand.type)
    k = stream_axis(op)
    with ir.InsertionPoint(op), op.location:
        sizes = [dim_or_const(operand, axis) for axis, extent in enumerate(source.shape) if extent == DYNAMIC]
        target = ir.MemRefType.get(source.shape, source.element_type, memory_space=needed.attr())
        buffer = alloc(target, sizes).result
        set_op = SetOp.emit(operand, buffer)
    if k is not None:
        axis = operand_axis(op, index, k)
        if axis is not None and source.shape[axis] != 1 and axis not in (*mine.splits, *needed.splits):
            set_op.attributes[STREAM_AXIS_ATTR] = i64_attr(axis)
    return buffer
