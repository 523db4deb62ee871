"""``scf.if`` in a partitioned function (``hir-convert-shard-to-hir``).

Partitioning guards an init by the device index; both branches often yield the same values,
and then the ``scf.if`` folds away (its results are those values). The other form hir
converts is shard-partition's init of a partial product (a contraction over a split dim on a
1-D grid)::

    %c = arith.cmpi eq, %i, %c0 : index              // %i the device index
    %init = scf.if %c -> (tensor<4x8xi8>) {
      scf.yield %out : tensor<4x8xi8>                // device 0 keeps the destination
    } else {
      scf.yield %zeros : tensor<4x8xi8>              // the others start from zeros
    }

whose result is a partial sum (each device's slot of the device axis), written by a kernel
segment that runs the ``scf.if``.
"""

from torch_mlir import ir
from torch_mlir.dialects import arith, scf, shard

from hir.dialect.linalg_facts import FILL_NAMED
from hir.passes.base import fail
from hir.passes.shard.registry import converts
from hir.passes.shard.state import ConversionState, is_tensor

_DEVICE_INDEX_OPS = (shard.ProcessMultiIndexOp.OPERATION_NAME, shard.ProcessLinearIndexOp.OPERATION_NAME)


@converts(scf.IfOp)
def if_(s: ConversionState, op: ir.Operation) -> None:
    """Folded away when both branches yield the same values; shard-partition's partial-product init (device 0 keeps the
    destination, the others start from zeros) is a kernel segment writing a partial sum."""
    yields = [list(region.blocks[0].operations)[-1].operation.operands for region in op.regions if region.blocks]
    ops_per_branch = [len(list(region.blocks[0].operations)) for region in op.regions if region.blocks]
    if len(yields) == 2 and ops_per_branch == [1, 1] and list(yields[0]) == list(yields[1]):
        for result, value in zip(op.results, yields[0]):  # ops of the program read the yielded value instead
            result.replace_all_uses_with(value)
        return
    if len(yields) == 2 and _partial_init(s, op, yields[0], yields[1]):
        return
    raise fail(
        op,
        "has branches that differ; hir converts an scf.if whose branches yield the same values, "
        "or the partial-product init (device 0 keeps the destination, the others start from zeros)",
    )


def _partial_init(s: ConversionState, op: ir.Operation, then: list, other: list) -> bool:
    if s.grid.rank != 1 or len(op.results) != 1 or not is_tensor(op.results[0]):
        return False
    fill = other[0].owner if isinstance(other[0], ir.OpResult) else None
    zero = fill is not None and fill.name == FILL_NAMED and s.constant_value(fill.operands[0]) == 0
    compare = op.operands[0].owner if isinstance(op.operands[0], ir.OpResult) else None
    if (
        not zero
        or compare is None
        or compare.name != arith.CmpIOp.OPERATION_NAME
        or ir.IntegerAttr(compare.attributes["predicate"]).value != 0
    ):
        return False
    sides = [v.owner.name if isinstance(v, ir.OpResult) else "" for v in compare.operands]
    if sorted(sides) != sorted(
        [
            _DEVICE_INDEX_OPS[0] if _DEVICE_INDEX_OPS[0] in sides else _DEVICE_INDEX_OPS[1],
            arith.ConstantOp.OPERATION_NAME,
        ]
    ):
        return False
    if any(s.constant_value(v) not in (None, 0) for v in compare.operands) or s.placement(then[0]) not in (
        s.grid.replicated,
        None,
    ):
        return False
    s.kernel(op, list(op.results), s.grid.placement([None], partial=[0]))
    return True
