"""The stream-loop structure of nvFuser's collective-based pipelines (seed 003), built by
hir-stream-lowering and recognised by hir-fuse-loops, so both agree on one shape:

    %user = "hir.get_current_stream"() : () -> !hir.stream
    "hir.for"(%c0, %n, %c1) ({                 // initial sync, a loop of its own so the
    ^bb0(%i: index):                           // work loop's first comm is not held back
      %s = "hir.get_stream"(%i) ; "hir.set_current_stream"(%s) ; "hir.synchronize"(%user)
      "hir.yield"() : () -> ()
    }) : (index, index, index) -> ()
    "hir.for"(%c0, %n, %c1) ({                 // work loop
    ^bb0(%i: index):
      %s = "hir.get_stream"(%i) ; "hir.set_current_stream"(%s)        // prologue
      ... slices, ops, collectives + waits ...
      "hir.set_current_stream"(%user) ; "hir.synchronize"(%s)          // epilogue
      "hir.yield"() : () -> ()
    }) : (index, index, index) -> ()
"""

from dataclasses import dataclass
from typing import Optional

from torch_mlir import ir

from hir.dialect import ForOp, GetCurrentStreamOp, GetStreamOp, MatmulOp, SetCurrentStreamOp, SynchronizeOp
from hir.dialect.base import VerifyError
from hir.dialect.irutils import defining_op, dim_or_const, index_const, is_broadcast_axis, operand_axis, output_index
from hir.dialect.sharding import sharding_of
from hir.passes.base import fail

PROLOGUE = 2  # get_stream, set_current_stream
EPILOGUE = 3  # set_current_stream(user), synchronize(pool stream), yield


@dataclass
class WorkLoop:
    """A freshly built work loop: insert its body before ``epilogue`` (with ``iv``)."""

    loop: ir.Operation
    iv: ir.Value
    epilogue: ir.Operation
    zero: ir.Value


def build(buffer: ir.Value, axis: int, chunks: int = 0) -> WorkLoop:
    """Emit the bounds (the extent of ``buffer`` along ``axis``, or ``chunks`` when given),
    get_current_stream, the initial-sync loop and an empty work loop at the current
    insertion point and location; the bounds come first so nothing sits between the last
    three."""
    zero, one = index_const(0), index_const(1)
    extent = index_const(chunks) if chunks else dim_or_const(buffer, axis, zero)
    user = GetCurrentStreamOp.emit(name="user_stream")
    _, sync_iv, sync_end = ForOp.emit(zero, extent, one, name="i")
    with ir.InsertionPoint(sync_end):
        SetCurrentStreamOp.emit(GetStreamOp.emit(sync_iv, name="stream"))
        SynchronizeOp.emit(user)
    work, iv, work_end = ForOp.emit(zero, extent, one, name="i")
    with ir.InsertionPoint(work_end):
        stream = GetStreamOp.emit(iv, name="stream")
        SetCurrentStreamOp.emit(stream)
        back = SetCurrentStreamOp.emit(user)
        SynchronizeOp.emit(stream)
    return WorkLoop(work, iv, back, zero)


@dataclass
class Group:
    """A recognised (get_current_stream, sync loop, work loop) triple."""

    user: ir.Value
    sync: ir.Operation
    work: ir.Operation


def body_ops(loop: ir.Operation) -> list[ir.Operation]:
    """The ops of ``loop``'s body, listed once (each listing costs ~0.4 us an op: callers
    that need them several times pass the list on)."""
    return [op.operation for op in loop.regions[0].blocks[0].operations]


def _prologue_stream(ops: list[ir.Operation], iv: ir.Value) -> Optional[ir.Value]:
    """The pool stream of a body starting with get_stream(iv); set_current_stream(it)."""
    if len(ops) < PROLOGUE or ops[0].name != GetStreamOp.OPERATION_NAME or ops[1].name != SetCurrentStreamOp.OPERATION_NAME:
        return None
    if ops[0].operands[0] != iv or ops[1].operands[0] != ops[0].result:
        return None
    return ops[0].result


def _user_stream(value: ir.Value) -> Optional[ir.Value]:
    owner = defining_op(value)
    return value if owner is not None and owner.name == GetCurrentStreamOp.OPERATION_NAME else None


def classify(loop: ir.Operation, ops: Optional[list] = None) -> Optional[tuple[str, ir.Value]]:
    """("sync" | "work", user stream) for a loop of the stream structure, else None
    (``ops``: its :func:`body_ops`, when already listed)."""
    if loop.name != ForOp.OPERATION_NAME:
        return None
    ops = body_ops(loop) if ops is None else ops
    iv = loop.regions[0].blocks[0].arguments[0]
    stream = _prologue_stream(ops, iv)
    if stream is None:
        return None
    if len(ops) == 4 and ops[2].name == SynchronizeOp.OPERATION_NAME:
        user = _user_stream(ops[2].operands[0])
        return ("sync", user) if user is not None else None
    if len(ops) < PROLOGUE + EPILOGUE:
        return None
    back, sync = ops[-3], ops[-2]
    if back.name != SetCurrentStreamOp.OPERATION_NAME or sync.name != SynchronizeOp.OPERATION_NAME or sync.operands[0] != stream:
        return None
    user = _user_stream(back.operands[0])
    return ("work", user) if user is not None else None


@dataclass
class WorkBody:
    """A work loop's parts, read once."""

    iv: ir.Value
    stream: ir.Value  # the pool stream of the prologue
    payload: list  # body ops without prologue and epilogue
    epilogue: ir.Operation  # first epilogue op (set_current_stream back to the user)

    @staticmethod
    def of(loop: ir.Operation, ops: Optional[list] = None) -> "WorkBody":
        ops = body_ops(loop) if ops is None else ops
        return WorkBody(loop.regions[0].blocks[0].arguments[0], ops[0].result, ops[PROLOGUE:-EPILOGUE], ops[-EPILOGUE])


# ----- stream slices (hir-stream-lowering, hir-p2p-pipeline) ------------------------------


@dataclass
class Slice:
    index: int  # operand number
    axis: int  # operand axis selected
    broadcast: bool  # read index 0 (extent-1 broadcast axis) instead of the stream index


def stream_slices(op: ir.Operation, k: int, vectors: bool = True) -> list[Slice]:
    """Which operands of ``op`` to slice for its output axis ``k``, along which axis; fails
    where slicing is not expressible. ``vectors``: a slice drops the axis (alias_select), so
    a matmul operand may become a vector (False for alias_chunk, which keeps it)."""
    out_rank = ir.MemRefType(op.operands[output_index(op)].type).rank
    if op.name == MatmulOp.OPERATION_NAME and vectors:
        batch = out_rank - 2
        rank_a, rank_b = (ir.MemRefType(op.operands[i].type).rank for i in (0, 1))
        # A slice drops the axis; torch.matmul reads a 1-D operand as a vector, which is
        # right for M with a 2-D A or 2-D B and for N with a 2-D B, and wrong otherwise (a
        # batched operand's slice would be read as a matrix).
        if (k == batch + 1 and rank_b != 2) or (k == batch and rank_a > 2 and rank_b > 2):
            axis_name = "N" if k == batch + 1 else "M"
            raise fail(op, f"has stream axis {k}, the {axis_name} axis of a matmul of ranks {rank_a} and {rank_b}; its slices would be read as matrices, not vectors (stream a batch axis, M with a 2-D A or B, or N with a 2-D B)")
    slices = []
    for index, operand in enumerate(op.operands):
        if not isinstance(operand.type, ir.MemRefType):
            continue
        axis = operand_axis(op, index, k)
        if axis is None:
            continue
        try:
            sharding = sharding_of(operand, f"operand #{index}")
        except VerifyError as err:
            raise fail(op, str(err)) from None
        if sharding is not None and axis in sharding.splits:
            raise fail(op, f"has stream axis {k}, which is axis {axis} of operand #{index}, split over the device mesh {list(sharding.mesh)}; a split axis cannot also be stream-parallel")
        slices.append(Slice(index, axis, is_broadcast_axis(op, index, axis, k)))
    return slices
