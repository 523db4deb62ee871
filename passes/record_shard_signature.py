"""``hir-record-shard-signature``: before ``shard-partition``, write the sharding of each
function argument and result into the signature, where partitioning leaves it (the pass
drops the ``shard.shard`` annotations and gives arguments their local shapes, but keeps
argument and result attributes). ``hir-convert-shard-to-hir`` reads it back to give the
buffers their global shapes and ``#hir.shard`` placements.

Before::

    func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x64xf32>) -> tensor<8x64xf32> {
      %s = shard.sharding @tp split_axes = [[], [0]] : !shard.sharding
      %w = shard.shard %w1 to %s : tensor<16x64xf32>
      ...
      %r = shard.shard %h to %s annotate_for_users : tensor<8x64xf32>
      return %r : tensor<8x64xf32>

After::

    func.func @mlp(%x: tensor<8x16xf32>,
                   %w1: tensor<16x64xf32> {hir.split_axes = #shard<axisarray[[], [0]]>})
        -> (tensor<8x64xf32> {hir.split_axes = #shard<axisarray[[], [0]]>}) {
      ...                                              // body unchanged

An argument with no ``shard.shard`` of its own gets no attribute (it reads as replicated).
"""

from dataclasses import dataclass
from typing import Optional

from torch_mlir import ir
from torch_mlir.dialects import func, shard

from hir.passes.base import ModulePass, register_pass
from hir.passes._shard_placement import SPLIT_AXES_ATTR


def _split_axes(value: ir.Value) -> Optional[ir.Attribute]:
    """The split axes of the ``shard.sharding`` that annotates ``value`` (a shard.shard result)."""
    if not isinstance(value, ir.OpResult) or value.owner.name != shard.ShardOp.OPERATION_NAME:
        return None
    sharding = value.owner.operands[1]
    if not isinstance(sharding, ir.OpResult) or sharding.owner.name != shard.ShardingOp.OPERATION_NAME:
        return None
    sharding = sharding.owner.operation
    return sharding.attributes["split_axes"]


def _with(attrs: Optional[ir.Attribute], count: int, index: int, value: ir.Attribute) -> ir.ArrayAttr:
    """``attrs`` (an array of dictionaries, or none) with ``hir.split_axes = value`` at ``index``."""
    dicts = [ir.DictAttr(a) for a in ir.ArrayAttr(attrs)] if attrs is not None else [ir.DictAttr.get({})] * count
    entries = {named.name: named.attr for named in dicts[index]}
    entries[SPLIT_AXES_ATTR] = value
    dicts[index] = ir.DictAttr.get(entries)
    return ir.ArrayAttr.get(dicts)


@register_pass
@dataclass
class RecordShardSignature(ModulePass):
    name = "hir-record-shard-signature"
    description = "Record the shardings of function arguments and results as hir.split_axes attributes (run before shard-partition)."

    def run(self, module: ir.Module) -> None:
        for op in module.body.operations:
            if op.operation.name != func.FuncOp.OPERATION_NAME or not op.regions[0].blocks:
                continue
            fn = op.operation
            block = op.regions[0].blocks[0]
            for index, arg in enumerate(block.arguments):
                mine = [u.owner for u in arg.uses if u.owner.name == shard.ShardOp.OPERATION_NAME and "annotate_for_users" not in u.owner.attributes]
                axes = _split_axes(mine[0].results[0]) if mine else None
                if axes is not None:
                    current = fn.attributes["arg_attrs"] if "arg_attrs" in fn.attributes else None
                    fn.attributes["arg_attrs"] = _with(current, len(block.arguments), index, axes)
            ret = list(block.operations)[-1].operation
            for index, value in enumerate(ret.operands):
                axes = _split_axes(value)
                if axes is not None:
                    current = fn.attributes["res_attrs"] if "res_attrs" in fn.attributes else None
                    fn.attributes["res_attrs"] = _with(current, len(ret.operands), index, axes)
