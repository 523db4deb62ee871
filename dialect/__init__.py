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
from hir.dialect import stream_ops, view_ops, control_ops, comm_ops, compute_ops, p2p_ops  # noqa: F401  (registers ops)
from hir.dialect.stream_ops import GetCurrentStreamOp, SetCurrentStreamOp, GetStreamOp, SynchronizeOp
from hir.dialect.view_ops import AliasBroadcastOp, AliasChunkOp, AliasSelectOp
from hir.dialect.control_ops import ForOp, YieldOp
from hir.dialect.comm_ops import (
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
from hir.dialect.p2p_ops import BarrierOp, DeviceIndexOp, ShiftOp
from hir.dialect.compute_ops import BinaryOp, LinearOp, MatmulOp, ReductionOp, SetOp, KERNEL_ATTR

__all__ = [name for name in dir() if not name.startswith("_")]
