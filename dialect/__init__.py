"""The ``hir`` dialect: types, the sharding attribute and every op, defined on
``torch_mlir.dialects.ext`` (IRDL). Import :func:`load` to register it in a context.

Submodules are the op groups (the same names in every layer: the interpreter's
``hir.interpreter.ops.<group>``, ``test/Dialect/<group>.mlir``, ``test/python/ops/test_<group>.py``):
``streams``, ``views``, ``control``, ``comm``, ``p2p``, ``compute``, ``optim``. An op's definition,
verifier, facts (see :class:`~hir.dialect.base.HirOp`) and fast builder ``emit`` live in its
class; :data:`OP_CLASSES` maps op names to classes for passes and the interpreter.
"""

# base first: it imports torch_mlir.ir without numpy (dialect/_lazy_numpy.py), which the op groups then find loaded
from hir.dialect.base import (
    OP_CLASSES,
    HirDialect,
    HirOp,
    ShardAttr,
    StreamType,
    WorkType,
    is_view,
    load,
    op_class,
    stream_type,
    work_type,
)

# isort: split
# each group's import registers its ops, in this order (docs/ops.md and hir.irdl.mlir follow it)
from hir.dialect import streams, views, control, comm, compute, p2p, optim  # isort: skip
from hir.dialect.comm import (
    COLLECTIVE_OPS,
    AllgatherOp,
    AllreduceOp,
    BroadcastOp,
    CollectiveOp,
    GatherOp,
    RecvOp,
    ReduceOp,
    ReduceScatterOp,
    ScatterOp,
    SendOp,
    SendRecvOp,
    WaitOp,
)
from hir.dialect.compute import (
    KERNEL_ATTR,
    ONCE_ATTR,
    PARAMETER_ATTR,
    WEIGHT_KEY_ATTR,
    WEIGHTS_FILE_ATTR,
    BinaryOp,
    ComputeOp,
    LinearOp,
    MatmulOp,
    ReductionOp,
    SetOp,
)
from hir.dialect.control import ForOp, StreamForOp, YieldOp
from hir.dialect.optim import AdamUpdateOp
from hir.dialect.p2p import BarrierOp, DeviceIndexOp, OwnBlockOp, ShiftOp
from hir.dialect.sharding import Sharding, local_shape, sharding_of
from hir.dialect.streams import (
    DEFAULT_NUM_STREAMS,
    HIGH_PRIORITY_ATTR,
    NUM_STREAMS_ATTR,
    GetCurrentStreamOp,
    GetStreamOp,
    SetCurrentStreamOp,
    SynchronizeOp,
    add_high_priority_stream,
    module_high_priority_streams,
    module_num_streams,
    set_module_num_streams,
)
from hir.dialect.views import AliasBroadcastOp, AliasChunkOp, AliasReshapeOp, AliasSelectOp, AliasStackShardsOp, ViewOp


def _concrete_ops(cls: type):
    for sub in cls.__subclasses__():
        if isinstance(getattr(sub, "OPERATION_NAME", None), str):
            yield sub
        yield from _concrete_ops(sub)


OP_CLASSES.update((op.OPERATION_NAME, op) for op in _concrete_ops(HirOp))

__all__ = [
    "AdamUpdateOp",
    "AliasBroadcastOp",
    "AliasChunkOp",
    "AliasReshapeOp",
    "AliasSelectOp",
    "AliasStackShardsOp",
    "AllgatherOp",
    "AllreduceOp",
    "BarrierOp",
    "BinaryOp",
    "BroadcastOp",
    "COLLECTIVE_OPS",
    "CollectiveOp",
    "ComputeOp",
    "DEFAULT_NUM_STREAMS",
    "DeviceIndexOp",
    "ForOp",
    "GatherOp",
    "GetCurrentStreamOp",
    "GetStreamOp",
    "HIGH_PRIORITY_ATTR",
    "HirDialect",
    "HirOp",
    "KERNEL_ATTR",
    "LinearOp",
    "MatmulOp",
    "NUM_STREAMS_ATTR",
    "ONCE_ATTR",
    "OP_CLASSES",
    "OwnBlockOp",
    "PARAMETER_ATTR",
    "RecvOp",
    "ReduceOp",
    "ReduceScatterOp",
    "ReductionOp",
    "ScatterOp",
    "SendOp",
    "SendRecvOp",
    "SetCurrentStreamOp",
    "SetOp",
    "ShardAttr",
    "Sharding",
    "ShiftOp",
    "StreamForOp",
    "StreamType",
    "SynchronizeOp",
    "ViewOp",
    "WEIGHTS_FILE_ATTR",
    "WEIGHT_KEY_ATTR",
    "WaitOp",
    "WorkType",
    "YieldOp",
    "add_high_priority_stream",
    "comm",
    "compute",
    "control",
    "is_view",
    "load",
    "local_shape",
    "optim",
    "module_high_priority_streams",
    "module_num_streams",
    "op_class",
    "p2p",
    "set_module_num_streams",
    "sharding_of",
    "stream_type",
    "streams",
    "views",
    "work_type",
]
