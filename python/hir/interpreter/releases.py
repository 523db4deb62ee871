"""Releasing an inlined kernel segment's intermediate tensors after their last use.

An eager kernel segment is inlined into its caller's plan (:meth:`Compiler.inline`): its
torch ops' results get slots of the caller's env, which lives for the whole run. Without a
release each intermediate tensor of every segment would stay referenced until the program
returns: a training step's whole backward (every elementwise temporary of every layer, the
optimizer's per-parameter temporaries) alive at once. Buffers (memrefs) are released by
their ``memref.dealloc``; these tensor values have no such op, so the plan clears their slot
after the op that reads them last (a slot move folded into that op's step, or the next torch
call's where that op's is not one, :func:`hir.interpreter.generated.fold`: no extra Python
frame).

The analysis is per slot, not per value: a cast shares its operand's slot
(:meth:`Compiler.share`), so a slot lives until the last use of any value held in it. Slots
the segment shares with its caller (its arguments, its returned values, destinations it
writes) and constants pre-filled in the env template are never released.
"""

from collections.abc import Callable, Iterable

from torch_mlir import ir

from hir.interpreter.buffers import is_memref
from hir.interpreter.generated import Step, slot_moves_step
from hir.interpreter.steps import UNSET


def _operands(op: ir.Operation) -> Iterable[ir.Value]:
    """The operands of ``op`` and of every op nested in its regions."""
    yield from op.operands
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield from _operands(inner.operation)


def released_slots(
    ops: list, slot_of: Callable[[ir.Value], int], template: list, keep: Iterable[ir.Value]
) -> dict[int, list[int]]:
    """``{i: slots}``: the slots to clear after op ``i`` of ``ops`` (a segment body without
    its terminator, compiled: every result has a slot): each slot holding only non-buffer
    results of these ops, released after the last op reading it (or, unread, after the op
    defining it). ``keep``: values the caller
    reads (the segment's arguments and returned values), whose slots stay."""
    kept = {slot_of(v) for v in keep}
    local: dict[int, bool] = {}  # slot -> may be released
    last: dict[int, int] = {}  # slot -> the last op reading it (or defining it, if none reads it)
    for index, op in enumerate(ops):
        for result in op.operation.results:
            try:
                slot = slot_of(result)
            except KeyError:  # an op without run-time work that gave its result no slot
                continue
            releasable = not is_memref(result.type) and template[slot] is UNSET and slot not in kept
            local[slot] = local.get(slot, True) and releasable
            last.setdefault(slot, index)
    for index, op in enumerate(ops):
        for value in _operands(op.operation):
            try:
                slot = slot_of(value)
            except KeyError:  # a value of a nested region the plan never gave a slot
                continue
            if slot in local:
                if is_memref(value.type):
                    local[slot] = False  # a buffer read through the slot: its dealloc owns it
                last[slot] = index
    frees: dict[int, list[int]] = {}
    for slot, index in last.items():
        if local[slot]:
            frees.setdefault(index, []).append(slot)
    return frees


def release_step(slots: list[int]) -> Step:
    """A step (slot moves only) clearing ``slots``, to fold into a torch call's step at or
    after the last use (a later one where that op's step is not a torch call)."""
    return slot_moves_step("release", [f"env[{slot}] = None" for slot in sorted(slots)], {})
