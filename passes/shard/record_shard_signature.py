"""``hir-record-shard-signature``: after ``sharding-propagation`` and before
``shard-partition``, write the sharding and the global type of every tensor argument and
result, and the grid of its shardings (``hir.grid``), into the signature, where partitioning leaves them (the pass drops
the ``shard.shard`` annotations and gives arguments their local shapes, but keeps argument and
result attributes). ``hir-convert-shard-to-hir`` reads them back to give the buffers their
global shapes and ``#hir.shard`` placements, and refuses a local shape that does not map
back to the recorded global one.

An argument's sharding is the one ``shard-partition`` partitions it by: that of its first
user when it is a ``shard.shard`` (``annotate_for_users`` or not); a result's is that of the
``shard.shard`` producing it. A tensor with neither is replicated (``axisarray[]``).

Before::

    func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x64xf32>) -> tensor<8x64xf32> {
      %s = shard.sharding @tp split_axes = [[], [0]] : !shard.sharding
      %w = shard.shard %w1 to %s annotate_for_users : tensor<16x64xf32>
      ...
      %r = shard.shard %h to %s : tensor<8x64xf32>
      return %r : tensor<8x64xf32>

After::

    func.func @mlp(%x: tensor<8x16xf32> {hir.global_type = tensor<8x16xf32>, hir.split_axes = #shard<axisarray[[]]>},
                   %w1: tensor<16x64xf32> {hir.global_type = tensor<16x64xf32>,
                                           hir.split_axes = #shard<axisarray[[], [0]]>})
        -> (tensor<8x64xf32> {hir.global_type = tensor<8x64xf32>, hir.split_axes = #shard<axisarray[[], [0]]>}) {
      ...                                              // body unchanged

An argument or result whose sharding has halo sizes is, after partitioning, each device's
block *with* its halos (``shard-partition`` gives it that local type). Its global type is
recorded as hir sees it: the devices' padded blocks side by side, a dim of extent E split
into n parts with halos [lo, hi] has E + n * (lo + hi) rows (an 8x16 tensor on a grid of 4
with ``halo_sizes = [2, 1]``: ``hir.global_type = tensor<20x16xf32>``, 4 blocks of 5 rows).

An uneven sharding (``sharded_dims_offsets``) is recorded beside its split axes
(``hir.sharded_dims_offsets = array<i64: 0, 1, 4, 7, 8>``; upstream's verifier refuses halos
beside offsets).

Why a function pass: what it records are facts of the whole function -- its one grid (named
by every ``shard.sharding`` op of the body, refused when they name two) and its signature
(each argument's sharding from its first user, each result's from the op producing the
returned value) -- written into the function op's own attributes (``hir.grid``,
``arg_attrs``, ``res_attrs``); the body is only read.
"""

from dataclasses import dataclass
from math import prod

from torch_mlir import ir
from torch_mlir.dialects import shard

from hir.passes.base import FunctionPass, PassFailure, register_pass
from hir.passes.shard.placement import GLOBAL_TYPE_ATTR, GRID_ATTR, OFFSETS_ATTR, SPLIT_AXES_ATTR, axis_groups

OFFSETS = "static_sharded_dims_offsets"
HALOS = "static_halo_sizes"


def _sharding_of(shard_op: ir.Operation) -> ir.Operation:
    """The ``shard.sharding`` that ``shard_op`` (a shard.shard) annotates with."""
    sharding = shard_op.operands[1]
    if not isinstance(sharding, ir.OpResult) or sharding.owner.name != shard.ShardingOp.OPERATION_NAME:
        raise PassFailure(
            "'shard.shard' op: its sharding is not a shard.sharding op; hir records static shardings only",
            shard_op.location,
        )
    op = sharding.owner.operation
    if len(op.operands):
        raise PassFailure(
            "'shard.sharding' op has dynamic halo sizes or offsets; hir converts static shardings only", op.location
        )
    return op


def _padded_type(tensor_type: ir.RankedTensorType, sharding: ir.Operation, grids: dict) -> ir.RankedTensorType:
    """``tensor_type`` as hir sees a value with ``sharding``'s halos: each split dim grows by
    its halos once per part (the devices' padded blocks side by side)."""
    halos = list(ir.DenseI64ArrayAttr(sharding.attributes[HALOS])) if HALOS in sharding.attributes else []
    if not halos:
        return tensor_type
    grid = grids[ir.FlatSymbolRefAttr(sharding.attributes["grid"]).value]
    shape = list(tensor_type.shape)
    split_dims = [(d, axes) for d, axes in enumerate(axis_groups(sharding.attributes["split_axes"])) if axes]
    for (dim, axes), lo, hi in zip(split_dims, halos[0::2], halos[1::2]):
        if not ir.ShapedType.is_dynamic_size(shape[dim]):
            shape[dim] += prod(grid[k] for k in axes) * (lo + hi)
    return ir.RankedTensorType.get(shape, tensor_type.element_type, loc=sharding.location)


def _argument_sharding(arg: ir.Value) -> ir.Operation | None:
    users = [use.owner for use in arg.uses]
    return users[0] if users and users[0].name == shard.ShardOp.OPERATION_NAME else None


def _result_sharding(value: ir.Value) -> ir.Operation | None:
    if isinstance(value, ir.OpResult) and value.owner.name == shard.ShardOp.OPERATION_NAME:
        return value.owner.operation
    return None


def _signature(fn: ir.Operation, key: str, values: list, sharding_of, grids: dict) -> None:
    """Write ``hir.split_axes`` / ``hir.global_type`` into ``fn``'s ``key`` (arg_attrs or
    res_attrs) for every tensor in ``values``."""
    replicated = ir.Attribute.parse("#shard<axisarray[[]]>")
    old = (
        [ir.DictAttr(a) for a in ir.ArrayAttr(fn.attributes[key])]
        if key in fn.attributes
        else [ir.DictAttr.get({})] * len(values)
    )
    dicts = []
    for value, attrs in zip(values, old):
        entries = {named.name: named.attr for named in attrs}
        if isinstance(value.type, ir.RankedTensorType):
            shard_op = sharding_of(value)
            sharding = _sharding_of(shard_op) if shard_op is not None else None
            entries[SPLIT_AXES_ATTR] = sharding.attributes["split_axes"] if sharding is not None else replicated
            if (
                sharding is not None
                and OFFSETS in sharding.attributes
                and len(ir.DenseI64ArrayAttr(sharding.attributes[OFFSETS]))
            ):
                entries[OFFSETS_ATTR] = sharding.attributes[OFFSETS]
            global_type = _padded_type(value.type, sharding, grids) if sharding is not None else value.type
            entries[GLOBAL_TYPE_ATTR] = ir.TypeAttr.get(global_type)
        dicts.append(ir.DictAttr.get(entries))
    fn.attributes[key] = ir.ArrayAttr.get(dicts)


def _record_grid(fn: ir.Operation) -> None:
    """``hir.grid = @g`` on ``fn`` when it holds ``shard.sharding`` ops: the grid of its
    shardings (partitioning may leave no op naming it, e.g. when no value is resharded)."""
    names = [ir.FlatSymbolRefAttr(fn.attributes[GRID_ATTR]).value] if GRID_ATTR in fn.attributes else []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == shard.ShardingOp.OPERATION_NAME:
            names.append(ir.FlatSymbolRefAttr(op.attributes["grid"]).value)
        return ir.WalkResult.ADVANCE

    fn.walk(visit)
    grids = list(dict.fromkeys(names))
    if len(grids) > 1:
        fn_name = ir.StringAttr(fn.attributes["sym_name"]).value
        raise PassFailure(
            f"'func.func' op @{fn_name} shards values on the grids "
            f"@{grids[0]}, @{grids[1]}; hir converts a function on one grid",
            fn.location,
        )
    if grids:
        fn.attributes[GRID_ATTR] = ir.FlatSymbolRefAttr.get(grids[0])


@register_pass
@dataclass
class RecordShardSignature(FunctionPass):
    name = "hir-record-shard-signature"
    description = (
        "Record the shardings and global types of function arguments and "
        "results (run between sharding-propagation and shard-partition)."
    )

    def run(self, module: ir.Module) -> None:
        self.grids = {
            ir.StringAttr(op.attributes["sym_name"]).value: list(ir.DenseI64ArrayAttr(op.attributes["shape"]))
            for op in module.body.operations
            if op.operation.name == shard.GridOp.OPERATION_NAME
        }
        super().run(module)

    def run_on_function(self, fn: ir.Operation) -> None:
        if not fn.regions[0].blocks:
            return  # a declaration: no signature to record
        _record_grid(fn)
        block = fn.regions[0].blocks[0]
        _signature(fn, "arg_attrs", list(block.arguments), _argument_sharding, self.grids)
        ret = list(block.operations)[-1].operation
        _signature(fn, "res_attrs", list(ret.operands), _result_sharding, self.grids)
