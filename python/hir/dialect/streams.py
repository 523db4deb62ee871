"""Stream ops (nvFuser GetCurrentStream / SetCurrentStream / Stream(index) / Synchronize).

    %user = "hir.get_current_stream"() : () -> !hir.stream
    %s = "hir.get_stream"(%i) : (index) -> !hir.stream          // pool stream i % num_streams
    "hir.set_current_stream"(%s) : (!hir.stream) -> ()
    "hir.synchronize"(%user) : (!hir.stream) -> ()              // current stream waits on %user
"""


from torch_mlir import ir
from torch_mlir.dialects import ext

from hir.dialect.base import HirOp, StreamType


class GetCurrentStreamOp(HirOp, name="get_current_stream"):
    """The stream the host is issuing work on now."""

    result: ext.Result[StreamType[()]] = ext.infer_result()


class GetStreamOp(HirOp, name="get_stream"):
    """Pool stream number ``index % num_streams`` of the run."""

    index: ext.Operand[ir.IndexType]
    result: ext.Result[StreamType[()]] = ext.infer_result()


class SetCurrentStreamOp(HirOp, name="set_current_stream"):
    """Issue subsequent work on ``stream``."""

    stream: ext.Operand[StreamType]


class SynchronizeOp(HirOp, name="synchronize"):
    """The current stream waits for the work issued on ``stream`` so far; the host does
    not block."""

    stream: ext.Operand[StreamType]
