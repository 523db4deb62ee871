"""The ``shard`` ops hir does not convert, and sharding annotations (``hir-convert-shard-to-hir``).

A partitioned program holds no ``shard.shard`` annotation; a ``shard.sharding`` survives
partitioning only as the static description ``shard.shard_shape`` reads, and then converts
to nothing. Everything else here is refused at the op, saying why (and, for ops hir has no
lowering for yet, listing what converts).
"""

from torch_mlir import ir
from torch_mlir.dialects import func, shard

from hir.passes.base import fail
from hir.passes.shard.registry import converts, refuses, refuses_prefix
from hir.passes.shard.state import ConversionState

_NOT_YET = "has no hir equivalent yet (converted: {converted})"
_PARTITION_FIRST = (
    "is a sharding annotation: partition the program first "
    "(sharding-propagation, shard-partition; or use the hir-from-shard pipeline)"
)


@converts(shard.ShardingOp)
def sharding(s: ConversionState, op: ir.Operation) -> None:
    """No op when only `shard.shard_shape` reads it (a static description); returned or annotating a value, refused."""
    uses = [use.owner.name for use in op.results[0].uses]
    if all(name == shard.ShardShapeOp.OPERATION_NAME for name in uses):
        return
    if func.ReturnOp.OPERATION_NAME in uses:
        raise fail(
            op,
            "is returned (a !shard.sharding result); hir functions return "
            "buffers and host scalars, whose placements live in their types",
        )
    raise fail(op, _PARTITION_FIRST)


refuses(shard.ShardOp, _PARTITION_FIRST)
refuses(shard.GetShardingOp, _NOT_YET)
# hir's rooted gather / scatter / reduce take one team: on a multi-D grid they would need a root per team, as
# hir.broadcast has.
for _op in (shard.GatherOp, shard.ScatterOp, shard.ReduceOp, shard.SendOp, shard.RecvOp):
    refuses(_op, _NOT_YET)
refuses_prefix("shard.", _NOT_YET)
