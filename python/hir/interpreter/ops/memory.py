"""Handlers of the memory group (upstream ``memref``): ``alloc`` / ``alloca`` / ``dealloc`` /
``dim`` / ``load`` (``memref.copy`` shares ``hir.set``'s handler, ops/compute.py).
``memref.alloc {hir.symmetric}`` buffers live in symmetric memory on GPUs
(``backends/symmetric.py``).

Buffers are typed with their global shape; a rank allocates its local shard. Deallocation
replaces the buffer (and every view of it) in its slot by a marker, so the last reference
goes away and torch's allocator really gets the memory back; a later use is reported at the
using op."""

import torch
from torch_mlir import ir
from torch_mlir.dialects import memref

from hir.dialect.base import DYNAMIC
from hir.dialect.context import HirError
from hir.dialect.nodes import spanning_team
from hir.dialect.p2p import SYMMETRIC_ATTR
from hir.interpreter.backends import symmetric
from hir.interpreter.generated import slot_moves_step, unique_name
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.registry import impl, register_impls
from hir.interpreter.steps import DEAD, UNSET

_ALLOCS = (memref.AllocOp.OPERATION_NAME, memref.AllocaOp.OPERATION_NAME)


@register_impls
class MemoryImpls:
    @impl(memref.AllocOp, memref.AllocaOp)
    def alloc(self, c: Compiler, op: ir.OpView) -> Step | None:
        if c.is_bound(op.operation.results[0]):  # a kernel segment's result (destinations.py)
            c.define(op.operation.results[0])
            return None
        step = _symmetric_alloc(c, op) if SYMMETRIC_ATTR in op.operation.attributes else None
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

    @impl(memref.DeallocOp)
    def dealloc(self, c: Compiler, op: ir.OpView) -> Step | None:
        buffer = op.operation.operands[0]
        owner = buffer.owner
        if not (isinstance(owner, (ir.Operation, ir.OpView)) and owner.name in _ALLOCS):
            raise c.error(
                op,
                f"deallocates an unknown buffer: {c.name(buffer)} is not the result of memref.alloc "
                "(function arguments and views belong to someone else)",
            )
        slot = c.use(buffer)
        slots = [slot] + c.aliases(slot)
        tracker = getattr(c.runtime, "memory", None)
        shared = is_symmetric_alloc(buffer)

        already = f"{c.where(op)}: error: 'memref.dealloc' buffer {c.name(buffer)} is already deallocated"

        if not shared and tracker is None and len(slots) == 1:  # the common case, in two lines
            message = unique_name("dealloc_message")
            lines = [f"if env[{slot}] is DEAD:", f"    raise HirError({message})", f"env[{slot}] = DEAD"]
            return slot_moves_step("dealloc_one", lines, {"DEAD": DEAD, "HirError": HirError, message: already})

        def dealloc_step(env: list) -> None:
            if env[slot] is DEAD:
                raise HirError(already)
            if shared:  # back to the op's pool once every peer is done with it
                symmetric.release(env[slot])
            if tracker is not None:
                tracker.free(env[slot])
            for s in slots:
                env[s] = DEAD

        return dealloc_step

    @impl(memref.CastOp)
    def cast(self, c: Compiler, op: ir.OpView) -> Step | None:
        """A cast between compatible types (MLIR's verifier checks them, memory space and
        so placement included; canonicalize makes one when it folds an allocation's dynamic
        size into a static one): the same run-time tensor."""
        c.share(op.operation.results[0], op.operation.operands[0])
        return None

    @impl(memref.LoadOp)
    def load(self, c: Compiler, op: ir.OpView) -> Step | None:
        """One element of this rank's buffer, read by the host (a Python scalar). Indices
        are local: hir-convert-shard-to-hir loads from replicated buffers only, where local
        and global indices agree."""
        source, *indices = op.operation.operands
        src, idx, out = c.use(source), [c.use(i) for i in indices], c.define(op.operation.results[0])

        def load_step(env: list) -> None:
            env[out] = env[src][tuple(env[i] for i in idx)].item()

        return load_step

    @impl(memref.DimOp)
    def dim(self, c: Compiler, op: ir.OpView) -> Step | None:
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
            factor = spec.parts(axis)

            def dim_const(env: list) -> None:
                env[out] = env[src].shape[axis] * factor

            return dim_const
        idx, where = c.use(index), c.where(op)
        parts = [spec.parts(a) for a in range(len(spec.shape))]
        out = c.define(result)

        def dim_dynamic(env: list) -> None:
            a = env[idx]
            if not 0 <= a < len(spec.shape):
                raise HirError(f"{where}: error: 'memref.dim' index {a} is out of range for rank {len(spec.shape)}")
            env[out] = env[src].shape[a] * parts[a]

        return dim_dynamic


def _alloc(c: Compiler, op: ir.OpView) -> Step | None:
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

    where = c.where(op)
    split = [(axis, spec.parts(axis)) for axis in dynamic_axes if spec.parts(axis) > 1]

    def alloc_dynamic(env: list) -> None:
        shape = list(spec.shape)
        for axis, slot in zip(dynamic_axes, size_slots):
            shape[axis] = env[slot]
            if shape[axis] < 0:
                raise HirError(
                    f"{where}: error: 'memref.alloc' dynamic size of axis {axis} is negative ({shape[axis]})"
                )
        for axis, parts in split:
            if shape[axis] % parts:
                raise HirError(
                    f"{where}: error: 'memref.alloc' axis {axis} of extent "
                    f"{shape[axis]} does not split evenly over {parts} devices"
                )
        env[out] = torch.empty(spec.local(shape), dtype=dtype, device=device)

    return alloc_dynamic


def _symmetric_alloc(c: Compiler, op: ir.OpView) -> Step | None:
    """The step of a ``memref.alloc {hir.symmetric}`` placed in symmetric memory here, or
    None when it is an ordinary buffer on this rank."""
    result = op.operation.results[0]
    spec = c.spec(result)
    if DYNAMIC in spec.shape:
        raise c.error(op, f"with {SYMMETRIC_ATTR} needs a static shape (every rank maps the same size once)")
    runtime = c.runtime
    members = sorted(spec.sharding.mesh) if spec.sharding is not None else list(range(runtime.world_size))
    if runtime.device.type != "cuda" or len(members) < 2 or c.rank not in members or max(members) >= runtime.world_size:
        return None
    if spanning_team([members], runtime.ranks_per_node) is not None:
        return None  # peers on other nodes cannot map it: an ordinary buffer (its transfers run on NCCL)
    pool = symmetric.SymmetricPool(
        spec.local(spec.shape), spec.dtype, runtime.device, runtime.comm.group(members), members
    )
    out = c.define(result)

    def symmetric_alloc(env: list) -> None:
        env[out] = pool.take()

    return symmetric_alloc


def is_symmetric_alloc(value: ir.Value) -> bool:
    owner = value.owner
    return (
        isinstance(owner, (ir.Operation, ir.OpView))
        and owner.name == memref.AllocOp.OPERATION_NAME
        and SYMMETRIC_ATTR in owner.attributes
    )
