"""A collective that reduces in its input's storage (``RESULT_IN_INPUT`` on its op class:
``hir.allreduce``), decided once at plan time.

A tensor-parallel matmul leaves each rank one block of the reduced axis, ``[1, T, N]``, and
the all-reduce sums those blocks into a fresh ``[T, N]`` buffer::

    %partial = memref.alloc() : memref<2x8x12xf32, #hir.shard<[0, 1], 0>>
    "hir.matmul"(%x, %weight, %partial)
    %out = memref.alloc() : memref<8x12xf32, #hir.shard<[0, 1], -1>>
    %work = "hir.allreduce"(%partial, %out) {axis = 0, ...}
    "hir.wait"(%work)
    memref.dealloc %partial

Run literally, the handler copies the partial into ``%out`` (the local sum over one block)
and all-reduces ``%out``: one extra write and read of the activation, and a second buffer,
where hand-written torch all-reduces the matmul's output in place. When the partial is dead
after the collective, the output allocation is bound to it instead (a
:class:`~hir.interpreter.destinations.Bind`): the alloc step is dropped and the collective
all-reduces the partial, squeezed, in place and makes it the output.

Both buffers must be fresh non-symmetric allocations of this block with the identity layout, on
the collective's stream (no stream switch since either was allocated); the output unused before
the collective; the input used before it only by hir ops of this block without results (compute
ops and copies, done with it when the collective starts: no communication, whose work could
still be reading, no kernel segment call or ``to_tensor``, which may leave an alias of it to
read later), and after it only deallocated; this rank holds both, with one block of the reduced
axis. A copy-engine collective (``backend = "cuda"``) writes its own output and is left alone.
"""

from collections.abc import Callable

from torch_mlir import ir
from torch_mlir.dialects import memref

from hir.dialect import OP_CLASSES
from hir.dialect.base import DYNAMIC, get_str, required_int
from hir.dialect.irutils import ancestor_in, runs_after, uses_through_views
from hir.dialect.p2p import SYMMETRIC_ATTR
from hir.dialect.views import is_identity_layout
from hir.interpreter.buffers import BufferSpec

_ALLOC = memref.AllocOp.OPERATION_NAME
_DEALLOC = memref.DeallocOp.OPERATION_NAME


def reduces_in_input(op: ir.Operation) -> bool:
    """Whether ``op`` is a collective whose result can take its input's storage."""
    cls = OP_CLASSES.get(op.name)
    return cls is not None and getattr(cls, "RESULT_IN_INPUT", False)


def result_in_input(op: ir.Operation, spec: Callable[[ir.Value], BufferSpec], same_stream: Callable) -> bool:
    """Whether collective ``op`` (:func:`reduces_in_input`) runs in its input's storage, its
    output bound to it (the rules in the module docstring). ``spec``: a value's buffer on
    this rank; ``same_stream(alloc, op)``: no stream switch between them in this block."""
    source, dest = op.operands[0], op.operands[1]
    if get_str(op, "backend") == "cuda" or source == dest:
        return False
    for value in (source, dest):
        owner = value.owner
        if (
            isinstance(owner, ir.Block)
            or owner.operation.name != _ALLOC
            or SYMMETRIC_ATTR in owner.operation.attributes
        ):
            return False
        if not is_identity_layout(ir.MemRefType(value.type)) or not same_stream(owner, op):
            return False
    in_spec, out_spec = spec(source), spec(dest)
    if not (in_spec.held and out_spec.held) or in_spec.uneven or out_spec.uneven:
        return False
    axis, local = required_int(op, "axis"), in_spec.local_static()
    if DYNAMIC in local or local[axis] != 1 or local[:axis] + local[axis + 1 :] != out_spec.local_static():
        return False
    if not all(u.owner.operation == op or runs_after(u.owner.operation, op) for u in dest.uses):
        return False
    return all(_harmless(use.owner.operation, op) for use in uses_through_views(source))


def _harmless(user: ir.Operation, op: ir.Operation) -> bool:
    """Whether ``user`` of the input is done with it before ``op`` writes it: ``op`` itself, a
    dealloc after it, or an hir op of its block before it without results (a compute op, a
    copy). Anything else may leave behind what still reads the input: a communication's
    work, a kernel segment's result bound as a view of it (destinations.py), a
    ``to_tensor`` sharing its slot."""
    if user == op:
        return True
    if runs_after(user, op):
        return user.name == _DEALLOC
    return ancestor_in(user, op.block) == user and user.name in OP_CLASSES and not list(user.results)
