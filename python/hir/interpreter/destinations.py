"""Destination passing, decided once at plan time: which kernel segment results
become their destination buffer instead of being copied into it.

A kernel segment writes each result into a destination buffer its caller passes::

    %alloc = memref.alloc() : memref<2x8x32xf32>
    call @segment_0(%x, %w, %b, %alloc) : (...) -> ()       // caller
    bufferization.materialize_in_destination %r in restrict writable %arg3   // segment

Run literally, ``materialize_in_destination`` is a ``copy_`` of the segment's fresh result
into a buffer allocated just before: one extra write and read of every activation. When the
destination is a fresh allocation that nothing reads, views or writes before the call, the
buffer *is* the result: the alloc step is dropped, the segment returns its result tensor and
the call binds it to the alloc's slot (:class:`Bind`). Binding is not safe when the
destination is an argument, a view (a stream slice) or a symmetric buffer, is used before the
call, is passed twice, or a stream switch separates alloc and call. Then, when the result is
the fresh result of a torch op with an ``out=`` overload (``gelu.out``, ``add.out``,
``softmax.int_out``) and the destination cannot overlap another operand (another buffer's
view; not two arguments, which may be one tensor), that op writes the destination itself.
Otherwise the copy stays, as it does when the segment reads its destination or writes it with
anything but one top-level ``materialize_in_destination``, or the result comes from an op
whose aliasing the schema does not tell (a literal, a linalg op). A segment argument the
segment reads and writes back (mutated state, see :mod:`hir.frontend.inplace`) is updated by
the torch op computing its new value through that op's in-place overload
(:mod:`hir.interpreter.updates`) when no other operand of the call views the same buffer; that
op's result then counts as a view of the argument.

A result torch may return as a view of a segment input (``reshape``, ``transpose``, ``split``:
the schema's alias annotation) is bound only when the buffer is then just read by ops that
take any strides (compute ops, kernel segments; deallocation), and the buffer it views is
defined in the same block and not written from the call on. A fresh result is always bound;
unless every use takes any strides, a non-contiguous one is made contiguous (the copy it
replaces), so the buffer keeps its identity layout for views and collectives. Results that may
view one fresh tensor (a value written twice; a tensor and its transpose, both saved for a
backward) are bound as such views when no op after the call writes them.

Compute ops that do not read their output (``hir.linear``, ``hir.matmul`` without
``accumulate``, ``hir.binary``) bind a fresh allocation by the same rules: the op returns
its result (``F.linear``: one GEMM with the bias in its epilogue; no ``torch.empty`` and
``out=`` call per op, the host cost eager PyTorch does not pay).

A collective that all-reduces one block per rank binds its output to its dead input, reduced
in place (:mod:`hir.interpreter.result_in_input`). Per call, a bound result costs nothing;
CUDA graph capture records the result's own allocation, so a replay writes the buffer the
later steps read.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import func, memref

from hir.dialect import OP_CLASSES, BinaryOp, LinearOp, MatmulOp, is_view
from hir.dialect.compute import KERNEL_ATTR, ComputeOp, accumulates
from hir.dialect.irutils import runs_after, uses_through_views, written_operands
from hir.dialect.p2p import SYMMETRIC_ATTR
from hir.dialect.views import is_identity_layout
from hir.interpreter.buffers import BufferSpec, is_memref
from hir.interpreter.result_in_input import reduces_in_input, result_in_input
from hir.interpreter.segment_writes import Output, SegmentWrites, segment_outputs

_CALL = func.CallOp.OPERATION_NAME
_DEALLOC = memref.DeallocOp.OPERATION_NAME


@dataclass(frozen=True)
class Bind:
    """A destination ``index`` of ``call`` (a segment call, a compute op, a collective
    reducing in its input) that becomes its result: ``contiguous`` says whether the result
    must be made contiguous when it is not."""

    call: ir.Operation
    index: int
    contiguous: bool


def _reads_any_strides(use: ir.OpOperand, written_by) -> bool:
    """A use that reads the buffer whatever its strides, or deallocates it."""
    user = use.owner.operation
    if user.name == _DEALLOC:
        return True
    cls = OP_CLASSES.get(user.name)
    if cls is not None:
        return issubclass(cls, ComputeOp) and use.operand_number not in cls.DESTINATIONS
    if user.name == _CALL:
        written = written_by(user)
        return written is not None and use.operand_number not in written
    return False


def writes_use(use: ir.OpOperand, written_by: Callable[[ir.Operation], frozenset[int] | None]) -> bool:
    """Whether ``use``'s op writes that operand; ``written_by(call)``: what a call writes
    (None: unknown, counted as written)."""
    user = use.owner.operation
    if user.name == _DEALLOC:
        return False
    if user.name == _CALL:
        written = written_by(user)
        return written is None or use.operand_number in written
    written = written_operands(user)
    return written is None or use.operand_number in written


def view_root(value: ir.Value) -> ir.Value:
    """The buffer ``value`` is (a view of)."""
    while not isinstance(value.owner, ir.Block) and is_view(value.owner.operation):
        value = value.owner.operation.operands[0]
    return value


def _written_from(root: ir.Value, call: ir.Operation, written_by, by_call: bool = True) -> bool:
    """Whether ``root`` (or a view of it) is written by an op after ``call`` (or by ``call``)."""
    return any(
        writes_use(use, written_by)
        and ((by_call and use.owner.operation == call) or runs_after(use.owner.operation, call))
        for use in uses_through_views(root)
    )


def _alone(operands: list, index: int) -> bool:
    """Whether no other operand than ``operands[index]`` is (a view of) its buffer."""
    root = view_root(operands[index])
    return all(i == index or not is_memref(v.type) or view_root(v) != root for i, v in enumerate(operands))


def _apart(operands: list, index: int) -> bool:
    """Whether destination ``operands[index]`` cannot overlap another operand: no other
    operand views the same buffer, and they are not both (views of) arguments, which the
    caller may have passed the same tensor for."""
    root = view_root(operands[index])
    argument = isinstance(root.owner, ir.Block)
    for i, value in enumerate(operands):
        if i == index or not is_memref(value.type):
            continue
        other = view_root(value)
        if other == root or (argument and isinstance(other.owner, ir.Block)):
            return False
    return True


# Compute ops whose handler computes a bound output as a fresh torch result (``F.linear``,
# ``torch.matmul``, ``torch.add``...): none of them reads its output unless it accumulates.
_FRESH_COMPUTE = (BinaryOp, LinearOp, MatmulOp)
_FRESH = Output(frozenset())


def fresh_output(op: ir.Operation) -> int | None:
    """The destination operand of a compute op that can return its result instead of
    writing it (its class is in ``_FRESH_COMPUTE`` and it does not accumulate), else None."""
    cls = OP_CLASSES.get(op.name)
    if cls is None or not issubclass(cls, _FRESH_COMPUTE) or accumulates(op):
        return None
    (index,) = cls.DESTINATIONS
    return index


class DestinationPlanner:
    """Decides, per call of a kernel segment, which destinations are bound (the callee's
    analysis cached by name; one instance per compiled module)."""

    def __init__(self, functions: dict, spec: Callable[[ir.Value], BufferSpec]) -> None:
        self.functions = functions
        self.spec = spec  # a value's buffer on this rank (collectives: result_in_input.py)
        self._segments: dict[str, SegmentWrites | None] = {}

    def _segment(self, call: ir.Operation) -> SegmentWrites | None:
        name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
        if name not in self._segments:
            fn = self.functions.get(name)
            kernel = fn is not None and KERNEL_ATTR in fn.operation.attributes
            self._segments[name] = segment_outputs(fn.operation) if kernel and fn is not None else None
        return self._segments[name]

    def _segment_of(self, call: ir.Operation) -> SegmentWrites:
        """The writes of the kernel segment ``call`` calls (a call whose destinations were bound)."""
        segment = self._segment(call)
        assert segment is not None, f"{call.name} calls no kernel segment"
        return segment

    def producer(self, call: ir.Operation, index: int) -> ir.Value | None:
        """The torch op result written into destination ``index`` of ``call`` by its op:
        with ``out=``, or in place (:meth:`updates`)."""
        segment = self._segment_of(call)
        return segment.updates[index] if index in segment.updates else segment.outputs[index].producer

    def updates(self, call: ir.Operation, index: int) -> bool:
        """Whether destination ``index`` of ``call`` is an argument its segment reads and
        a torch op updates in place (:mod:`hir.interpreter.updates`)."""
        return index in self._segment_of(call).updates

    def written_by(self, call: ir.Operation) -> frozenset[int] | None:
        """The operands a call of a kernel segment writes; None for other callees."""
        segment = self._segment(call)
        return None if segment is None else segment.written

    def binds(self, ops: list, outs: dict) -> dict[ir.Value, Bind]:
        """The allocations of block ``ops`` that calls bind to their segment's result,
        compute ops to their fresh result (:func:`fresh_output`) and collectives to their
        input (:mod:`hir.interpreter.result_in_input`); adds
        to ``outs`` (call -> operand indices) the other destinations the segment's last op
        writes with ``out=``, and those a torch op updates in place where no other operand
        of the call views the same buffer."""
        found: dict[ir.Value, Bind] = {}
        position: dict = {}
        switches: list[int] = []
        for i, op in enumerate(ops):
            op = op.operation
            position[op] = i
            cls = OP_CLASSES.get(op.name)
            if cls is not None and cls.CHOOSES_STREAM:
                switches.append(i)

        def same_stream(alloc: Any, op: ir.Operation) -> bool:
            """Whether ``alloc`` is an op of this block that no stream switch separates
            from ``op`` (else the buffer is allocated on another stream)."""
            if isinstance(alloc, ir.Block) or alloc.operation not in position:
                return False
            start, end = position[alloc.operation], position[op]
            return not any(start < s < end for s in switches)

        for op in ops:
            call = op.operation
            if reduces_in_input(call):
                if result_in_input(call, self.spec, same_stream):
                    found[call.operands[1]] = Bind(call, 1, contiguous=False)
                continue
            index = fresh_output(call)
            if index is not None:
                dest = call.operands[index]
                bind = self._bind(call, list(call.operands), index, _FRESH) if same_stream(dest.owner, call) else None
                if bind is not None:
                    found[dest] = bind
                continue
            segment = self._segment(call) if call.name == _CALL else None
            if not segment or not (segment.outputs or segment.updates):
                continue
            operands = list(call.operands)
            for index in segment.updates:
                if _alone(operands, index):
                    outs.setdefault(call, []).append(index)
            for index, output in segment.outputs.items():
                dest = operands[index]
                bind = self._bind(call, operands, index, output) if same_stream(dest.owner, call) else None
                if bind is not None:
                    found[dest] = bind
                elif output.producer is not None and _apart(operands, index):
                    outs.setdefault(call, []).append(index)
        return found

    def _bind(self, call: ir.Operation, operands: list, index: int, output: Output) -> Bind | None:
        dest = operands[index]
        alloc = dest.owner.operation
        if (
            alloc.name != memref.AllocOp.OPERATION_NAME
            or SYMMETRIC_ATTR in alloc.attributes
            or operands.count(dest) != 1
        ):
            return None
        if not is_identity_layout(ir.MemRefType(dest.type)):
            return None
        uses = [u for u in dest.uses if u.owner.operation != call]
        if not all(runs_after(u.owner.operation, call) for u in uses):
            return None
        any_strides = all(_reads_any_strides(u, self.written_by) for u in uses)
        if output.shares and any(
            _written_from(operands[i], call, self.written_by, False) for i in output.shares | {index}
        ):
            return None  # (bound, they would be views of one tensor)
        if output.may_alias:
            if not any_strides:
                return None
            for source in output.may_alias:
                root = view_root(operands[source])
                owner = root.owner
                home = owner if isinstance(owner, ir.Block) else owner.operation.block
                if home != call.block or _written_from(root, call, self.written_by):
                    return None
        return Bind(call, index, contiguous=not any_strides)
