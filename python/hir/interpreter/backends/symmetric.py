"""Symmetric buffers: ``memref.alloc() {hir.symmetric}`` places a buffer in torch symmetric
memory, mapped by every rank of its mesh, so a copy-engine ``hir.shift`` (backend "cuda")
reads the peer's buffer in place instead of staging a copy first (nvFuser's
ShareMemHandles on the buffer itself).

- Allocation is collective the first time (``symm_mem.empty`` + ``rendezvous`` over the
  buffer's mesh, in program order on every rank). Each alloc op keeps a pool: the dealloc
  runs a stream-ordered barrier over the mesh (every peer has passed its own dealloc, so
  its reads of our buffer are done) and gives the buffer back to the pool; the next run's
  alloc takes it without any host synchronization, which keeps warm runs capturable in a
  CUDA graph.
- Signal-pad channels: ``READY`` carries hir.shift's "this step's data is in place"
  signals, ``RELEASE`` the dealloc barrier.
- Where the attribute cannot apply (CPU, a mesh of one, a rank outside the mesh, dynamic
  shapes) the buffer is an ordinary one: the attribute is a placement preference, like
  ``backend = "cuda"``, so one lowered program runs in CPU tests and on GPUs.
"""

from typing import Optional

import torch
from torch_mlir import ir

from hir.dialect.base import DYNAMIC
from hir.dialect.p2p import SYMMETRIC_ATTR
from hir.dialect.views import VIEW_OPS
from hir.interpreter.plan import Compiler, Step

READY, RELEASE = 0, 1


class SymmetricBuffer:
    """One symmetric allocation: ``tensor`` (ours), the rendezvous ``handle``, and the
    global ranks of its group (``members[g]`` is group rank g)."""

    __slots__ = ("tensor", "handle", "members", "pool", "_peers")

    def __init__(self, tensor: torch.Tensor, handle, members: list[int], pool: "SymmetricPool") -> None:
        self.tensor, self.handle, self.members, self.pool = tensor, handle, members, pool
        self._peers: dict[int, torch.Tensor] = {}

    def peer_view(self, g: int, view: torch.Tensor) -> torch.Tensor:
        """Group rank ``g``'s copy of ``view`` (a view of our tensor): same offset and strides."""
        base = self._peers.get(g)
        if base is None:
            base = self._peers[g] = self.handle.get_buffer(g, (self.tensor.numel(),), self.tensor.dtype)
        return base.as_strided(view.shape, view.stride(), view.storage_offset())

    def release(self) -> None:
        """Dealloc: wait (on the current stream) until every peer released it too, then
        make it available to the next alloc of the same op."""
        self.handle.barrier(channel=RELEASE)
        self.pool.free.append(self)


_BY_STORAGE: dict[int, SymmetricBuffer] = {}  # storage address -> buffer (process lifetime)


def lookup(t: torch.Tensor) -> Optional[SymmetricBuffer]:
    """The symmetric buffer ``t`` is a view of, if any."""
    return _BY_STORAGE.get(t.untyped_storage().data_ptr())


class SymmetricPool:
    """The symmetric buffers of one alloc op: allocated on demand, recycled by dealloc."""

    allocations = 0  # process-wide count of rendezvous (tests check that runs recycle)

    def __init__(self, shape: list[int], dtype: torch.dtype, device: torch.device, group, members: list[int]) -> None:
        self.shape, self.dtype, self.device, self.group, self.members = shape, dtype, device, group, members
        self.free: list[SymmetricBuffer] = []

    def take(self) -> torch.Tensor:
        if self.free:
            return self.free.pop().tensor
        import torch.distributed._symmetric_memory as symm_mem

        from hir.interpreter.ops.p2p import enable_symmetric_memory

        enable_symmetric_memory(self.group)
        tensor = symm_mem.empty(self.shape, dtype=self.dtype, device=self.device)
        handle = symm_mem.rendezvous(tensor, self.group.group_name)
        _BY_STORAGE[tensor.untyped_storage().data_ptr()] = SymmetricBuffer(tensor, handle, self.members, self)
        SymmetricPool.allocations += 1
        return tensor


def alloc_step(c: Compiler, op: ir.OpView) -> Optional[Step]:
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
    pool = SymmetricPool(spec.local(spec.shape), spec.dtype, runtime.device, runtime.comm.group(members), members)
    out = c.define(result)

    def symmetric_alloc(env: list) -> None:
        env[out] = pool.take()

    return symmetric_alloc


def is_symmetric_alloc(value: ir.Value) -> bool:
    owner = value.owner
    return isinstance(owner, (ir.Operation, ir.OpView)) and owner.name == "memref.alloc" and SYMMETRIC_ATTR in owner.attributes


def release(t: torch.Tensor) -> None:
    """Dealloc of a symmetric alloc's buffer (an ordinary buffer where it fell back)."""
    buf = _BY_STORAGE.get(t.untyped_storage().data_ptr())
    if buf is not None:
        buf.release()


def uniform_source(value: ir.Value) -> bool:
    """Whether ``value`` is a symmetric alloc or a view of one selected by indices that are
    the same on every rank (no ``hir.device_index`` in them), so a peer's buffer holds its
    counterpart at the same offset."""
    while True:
        owner = value.owner
        if not isinstance(owner, (ir.Operation, ir.OpView)):
            return False
        if owner.name not in VIEW_OPS:
            return is_symmetric_alloc(value)
        if not _uniform_index(owner.operands[1]):
            return False
        value = owner.operands[0]


def _uniform_index(value: ir.Value, depth: int = 0) -> bool:
    if depth > 32:
        return False
    owner = value.owner
    if isinstance(owner, ir.Block):  # a loop induction variable: uniform if its bounds are
        parent = owner.owner
        return parent.name == "hir.for" and all(_uniform_index(v, depth + 1) for v in parent.operands)
    if owner.name == "arith.constant" or owner.name == "memref.dim":
        return True
    return owner.name.startswith("arith.") and all(_uniform_index(v, depth + 1) for v in owner.operands)
