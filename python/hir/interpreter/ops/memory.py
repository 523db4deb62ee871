"""Buffers: ``memref.alloc`` / ``dealloc`` / ``dim`` / ``copy`` and the views ``hir.alias_select`` / ``hir.alias_chunk``.
``memref.alloc {hir.symmetric}`` buffers live in symmetric memory on GPUs (symmetric.py).

Buffers are typed with their global shape; a rank allocates its local shard. Deallocation
replaces the buffer (and every view of it) in its slot by a marker, so the last reference
goes away and torch's allocator really gets the memory back; a later use is reported at the
using op."""

from typing import Optional

import torch
from torch_mlir import ir

from hir.core import HirError
from hir.dialect.base import DYNAMIC
from hir.dialect.p2p import SYMMETRIC_ATTR
from hir.interpreter.backends import symmetric
from hir.interpreter.buffers import fmt_shape
from hir.interpreter.plan import DEAD, UNSET, Compiler, Step, handles


class AllocationTracker:
    """Bytes of the buffers the program allocated and has not deallocated yet, and their
    peak (``Program(..., track_memory=True).memory``). Buffers the program returns stay
    counted; program inputs are not counted. Counting happens in the alloc and dealloc
    steps, so it is exact on CPU and GPU alike."""

    def __init__(self) -> None:
        self.current = 0
        self.peak = 0
        self.allocations = 0

    def reset(self) -> None:
        self.current = self.peak = self.allocations = 0

    def add(self, t: torch.Tensor) -> None:
        self.current += t.numel() * t.element_size()
        self.allocations += 1
        if self.current > self.peak:
            self.peak = self.current

    def free(self, t: object) -> None:
        if isinstance(t, torch.Tensor):
            self.current -= t.numel() * t.element_size()


@handles("memref.alloc", "memref.alloca")
def alloc(c: Compiler, op: ir.OpView) -> Optional[Step]:
    step = symmetric.alloc_step(c, op) if c.has_attr(op, SYMMETRIC_ATTR) else None
    if step is None:
        step = _alloc(c, op)
    tracker = getattr(c.runtime, "memory", None)
    if tracker is None or step is None:
        return step
    out = c.use(op.operation.results[0])

    def tracked_alloc(env: list) -> None:
        step(env)
        tracker.add(env[out])

    return tracked_alloc


def _alloc(c: Compiler, op: ir.OpView) -> Optional[Step]:
    result = op.operation.results[0]
    spec = c.spec(result)
    dtype, device = spec.dtype, c.runtime.device
    dynamic_axes = [i for i, d in enumerate(spec.shape) if d == DYNAMIC]
    size_slots = c.uses(op)[: len(dynamic_axes)]
    out = c.define(result)
    if not dynamic_axes:
        shape = spec.local(spec.shape)

        def alloc_static(env: list) -> None:
            env[out] = torch.empty(shape, dtype=dtype, device=device)

        return alloc_static

    where, parts, split = c.where(op), spec.parts, spec.split_axis

    def alloc_dynamic(env: list) -> None:
        shape = list(spec.shape)
        for axis, slot in zip(dynamic_axes, size_slots):
            shape[axis] = env[slot]
            if shape[axis] < 0:
                raise HirError(f"{where}: error: 'memref.alloc' dynamic size of axis {axis} is negative ({shape[axis]})")
        if split is not None and shape[split] % parts:
            raise HirError(
                f"{where}: error: 'memref.alloc' axis {split} of extent {shape[split]} does not split evenly over {parts} devices"
            )
        env[out] = torch.empty(spec.local(shape), dtype=dtype, device=device)

    return alloc_dynamic


@handles("memref.dealloc")
def dealloc(c: Compiler, op: ir.OpView) -> Optional[Step]:
    buffer = op.operation.operands[0]
    owner = buffer.owner
    if not (isinstance(owner, (ir.Operation, ir.OpView)) and owner.name in ("memref.alloc", "memref.alloca")):
        raise c.error(
            op,
            f"deallocates an unknown buffer: {buffer.get_name()} is not the result of memref.alloc "
            "(function arguments and views belong to someone else)",
        )
    slot = c.use(buffer)
    slots = [slot] + c.aliases(slot)
    where, name = c.where(op), buffer.get_name()
    tracker = getattr(c.runtime, "memory", None)
    shared = symmetric.is_symmetric_alloc(buffer)

    def dealloc_step(env: list) -> None:
        if env[slot] is DEAD:
            raise HirError(f"{where}: error: 'memref.dealloc' buffer {name} is already deallocated")
        if shared:  # back to the op's pool once every peer is done with it
            symmetric.release(env[slot])
        if tracker is not None:
            tracker.free(env[slot])
        for s in slots:
            env[s] = DEAD

    return dealloc_step


@handles("memref.dim")
def dim(c: Compiler, op: ir.OpView) -> Optional[Step]:
    """The GLOBAL extent (types carry global shapes): a split axis counts every shard."""
    source, index = op.operation.operands
    spec = c.spec(source)
    src, result = c.use(source), op.operation.results[0]
    axis = c.constant(index)
    if axis is not UNSET:
        if not 0 <= axis < len(spec.shape):
            raise c.error(op, f"index {axis} is out of range for rank {len(spec.shape)}")
        if spec.shape[axis] != DYNAMIC:
            c.define(result, spec.shape[axis])
            return None
        out = c.define(result)
        factor = spec.parts if axis == spec.split_axis else 1

        def dim_const(env: list) -> None:
            env[out] = env[src].shape[axis] * factor

        return dim_const
    idx, where, parts, split = c.use(index), c.where(op), spec.parts, spec.split_axis
    out = c.define(result)

    def dim_dynamic(env: list) -> None:
        a = env[idx]
        if not 0 <= a < len(spec.shape):
            raise HirError(f"{where}: error: 'memref.dim' index {a} is out of range for rank {len(spec.shape)}")
        env[out] = env[src].shape[a] * (parts if a == split else 1)

    return dim_dynamic


def _view(c: Compiler, op: ir.OpView) -> tuple:
    """A view op's (input slot, index slot, result slot aliasing the input, error prefix
    naming the op and its location, the input's name)."""
    source, index = op.operation.operands
    src, idx = c.use(source), c.use(index)
    out = c.define(op.operation.results[0])
    c.add_alias(src, out)
    return src, idx, out, f"{c.where(op)}: error: '{op.operation.name}'", source.get_name()


@handles("hir.alias_select")
def alias_select(c: Compiler, op: ir.OpView) -> Optional[Step]:
    """``input.select(axis, index)``: a view, so writes through it land in the input."""
    axis = c.int_attr(op, "axis")
    src, idx, out, error, name = _view(c, op)

    def select_step(env: list) -> None:
        t, i = env[src], env[idx]
        if not 0 <= i < t.shape[axis]:
            raise HirError(f"{error} index {i} is out of range for axis {axis} of {name} (local shape {fmt_shape(t.shape)})")
        env[out] = t.select(axis, i)

    return select_step


@handles("hir.alias_chunk")
def alias_chunk(c: Compiler, op: ir.OpView) -> Optional[Step]:
    """``input.chunk(chunks, axis)[index]`` (equal parts): a view, like alias_select's."""
    axis, chunks = c.int_attr(op, "axis"), c.int_attr(op, "chunks")
    src, idx, out, error, name = _view(c, op)

    def chunk_step(env: list) -> None:
        t, i = env[src], env[idx]
        extent = t.shape[axis]
        if extent % chunks or not 0 <= i < chunks:
            problem = f"index {i} is out of range for {chunks} chunks" if extent % chunks == 0 else f"axis {axis} of extent {extent} does not divide into {chunks} chunks"
            raise HirError(f"{error} {problem} of {name} (local shape {fmt_shape(t.shape)})")
        size = extent // chunks
        env[out] = t.narrow(axis, i * size, size)

    return chunk_step
