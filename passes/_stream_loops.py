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

from hir.dialect.control_ops import ForOp
from hir.dialect.stream_ops import GetCurrentStreamOp, GetStreamOp, SetCurrentStreamOp, SynchronizeOp
from hir.passes._ir import defining_op, dim_or_const, index_const

PROLOGUE = 2  # get_stream, set_current_stream
EPILOGUE = 3  # set_current_stream(user), synchronize(pool stream), yield


@dataclass
class WorkLoop:
    """A freshly built work loop: insert its body before ``epilogue`` (with ``iv``)."""

    loop: ir.Operation
    iv: ir.Value
    epilogue: ir.Operation
    zero: ir.Value


def build(buffer: ir.Value, axis: int, loc: ir.Location) -> WorkLoop:
    """Emit the bounds (the extent of ``buffer`` along ``axis``), get_current_stream, the
    initial-sync loop and an empty work loop at the current insertion point; the bounds come
    first so nothing sits between the last three."""
    zero, one = index_const(0), index_const(1)
    extent = dim_or_const(buffer, axis, zero)
    user = GetCurrentStreamOp(loc=loc).result
    sync = ForOp.build(zero, extent, one, loc=loc)
    with ir.InsertionPoint(sync.body.blocks[0].operations[0]):
        SetCurrentStreamOp(GetStreamOp(sync.induction_variable, loc=loc).result, loc=loc)
        SynchronizeOp(user, loc=loc)
    work = ForOp.build(zero, extent, one, loc=loc)
    iv = work.induction_variable
    terminator = work.body.blocks[0].operations[0]
    with ir.InsertionPoint(terminator):
        stream = GetStreamOp(iv, loc=loc).result
        SetCurrentStreamOp(stream, loc=loc)
        back = SetCurrentStreamOp(user, loc=loc)
        SynchronizeOp(stream, loc=loc)
    return WorkLoop(work.operation, iv, back.operation, zero)


@dataclass
class Group:
    """A recognised (get_current_stream, sync loop, work loop) triple."""

    user: ir.Value
    sync: ir.Operation
    work: ir.Operation


def _body(loop: ir.Operation) -> list[ir.Operation]:
    return [op.operation for op in loop.regions[0].blocks[0].operations]


def _operand_def(op: ir.Operation, index: int = 0) -> Optional[ir.Operation]:
    return defining_op(op.operands[index]) if len(op.operands) > index else None


def _prologue_stream(ops: list[ir.Operation], iv: ir.Value) -> Optional[ir.Value]:
    """The pool stream of a body starting with get_stream(iv); set_current_stream(it)."""
    if len(ops) < PROLOGUE or ops[0].name != "hir.get_stream" or ops[1].name != "hir.set_current_stream":
        return None
    if ops[0].operands[0] != iv or ops[1].operands[0] != ops[0].result:
        return None
    return ops[0].result


def _user_stream(value: ir.Value) -> Optional[ir.Value]:
    owner = defining_op(value)
    return value if owner is not None and owner.name == "hir.get_current_stream" else None


def match_sync(loop: ir.Operation) -> Optional[ir.Value]:
    """The user stream a sync loop synchronizes with, None if ``loop`` is not one."""
    if loop.name != "hir.for":
        return None
    ops = _body(loop)
    iv = loop.regions[0].blocks[0].arguments[0]
    if len(ops) != 4 or _prologue_stream(ops, iv) is None or ops[2].name != "hir.synchronize":
        return None
    return _user_stream(ops[2].operands[0])


def match_work(loop: ir.Operation) -> Optional[ir.Value]:
    """The user stream a work loop returns to, None if ``loop`` is not one."""
    if loop.name != "hir.for":
        return None
    ops = _body(loop)
    iv = loop.regions[0].blocks[0].arguments[0]
    stream = _prologue_stream(ops, iv)
    if stream is None or len(ops) < PROLOGUE + EPILOGUE:
        return None
    back, sync = ops[-3], ops[-2]
    if back.name != "hir.set_current_stream" or sync.name != "hir.synchronize" or sync.operands[0] != stream:
        return None
    return _user_stream(back.operands[0])


def body_ops(loop: ir.Operation) -> list[ir.Operation]:
    """The work loop's payload: its body without prologue and epilogue."""
    return _body(loop)[PROLOGUE:-EPILOGUE]


def pool_stream(loop: ir.Operation) -> ir.Value:
    return _body(loop)[0].result


def epilogue(loop: ir.Operation) -> ir.Operation:
    return _body(loop)[-EPILOGUE]
