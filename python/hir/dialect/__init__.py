"""The ``hir`` dialect: types, the sharding attribute and every op, defined on
``torch_mlir.dialects.ext`` (IRDL). Import :func:`load` to register it in a context.

Submodules group ops by concern, so an op's definition, verifier and builder live in one
class: ``stream_ops``, ``view_ops``, ``control_ops``, ``comm_ops``, ``compute_ops``.
"""

from hir.dialect.base import (
    HirDialect,
    ShardAttr,
    Sharding,
    StreamType,
    WorkType,
    load,
    sharding_of,
    local_shape,
)
from hir.dialect import streams, views, control, comm, compute, p2p  # noqa: F401  (registers ops)
from hir.dialect.streams import GetCurrentStreamOp, SetCurrentStreamOp, GetStreamOp, SynchronizeOp
from hir.dialect.views import AliasChunkOp, AliasSelectOp
from hir.dialect.control import ForOp, YieldOp
from hir.dialect.comm import (
    AllgatherOp,
    AllreduceOp,
    BroadcastOp,
    GatherOp,
    RecvOp,
    ReduceOp,
    ReduceScatterOp,
    ScatterOp,
    SendOp,
    SendRecvOp,
    WaitOp,
    COLLECTIVE_OPS,
)
from hir.dialect.p2p import BarrierOp, DeviceIndexOp, ShiftOp
from hir.dialect.compute import BinaryOp, LinearOp, MatmulOp, ReductionOp, SetOp, KERNEL_ATTR

__all__ = [name for name in dir() if not name.startswith("_")]
