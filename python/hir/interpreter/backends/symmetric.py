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
  signals, ``RELEASE`` the dealloc barrier, ``PUSHED`` a pushed shift's "my copy into your
  buffer is done" (put after the copy on the sender's stream, awaited by the receiver's
  ``hir.wait``: :class:`PushedWork`).
- Where the attribute cannot apply (CPU, a mesh of one, a rank outside the mesh, dynamic
  shapes) the buffer is an ordinary one: the attribute is a placement preference, like
  ``backend = "cuda"``, so one lowered program runs in CPU tests and on GPUs (the alloc and
  dealloc handlers in ``ops/memory.py`` decide).
- Symmetric memory never uses multicast here (:data:`ENV_FLAGS`).
"""

import os

import torch
import torch.distributed as dist

from hir.dialect.context import HirError

READY, RELEASE, PUSHED = 0, 1, 2
ENV_FLAGS = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def refuse_under_capture(what: str) -> None:
    """Symmetric memory is registered by a collective host rendezvous (handles exchanged
    through the store, peers' memory mapped, device tables written), which a CUDA graph
    capture cannot record: the first run, eager or a graph's warm-up, registers
    everything a capture then reuses."""
    if torch.cuda.is_current_stream_capturing():
        raise HirError(
            f"error: {what} would be registered in symmetric memory during CUDA graph capture; "
            "run the program once (eagerly, or graph=True's warm-up) on the same stream roles first"
        )


def enable_symmetric_memory(group) -> None:
    """Symmetric memory on ``group``, without multicast (older torch needs enabling)."""
    import torch.distributed._symmetric_memory as symm_mem  # CUDA symmetric memory loads only where a run uses it

    for key, value in ENV_FLAGS.items():
        os.environ.setdefault(key, value)
    enable = getattr(symm_mem, "enable_symm_mem_for_group", None)
    if enable is not None and dist.get_world_size(group) > 1:
        try:
            enable(group.group_name)
        except Exception:  # pragma: no cover - newer torch needs no enabling
            pass


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


class PushedWork:
    """A pushed shift's work on the receiving side: ``wait()`` makes the current stream wait
    (no host block) until group rank ``source`` has signalled that its copy into our buffer
    is done. The signal-pad wait kernel runs on ``waiter``, after our own signal on
    ``signaller`` (which it joins: a graph capture needs every forked stream joined back),
    and the consumer's stream waits on its event. On the consumer's stream the wait kernel
    sat between two GEMMs, 5-6 us a step of the pushed all-gather's GEMM chain (RESULTS.md,
    a 4x H200 profile); an event edge costs about 2 us (end to end, the timed rows saw no
    change beyond their noise: the ranks' skew dominates)."""

    __slots__ = ("event",)

    def __init__(self, handle, source: int, signaller: torch.cuda.Stream, waiter: torch.cuda.Stream) -> None:
        waiter.wait_stream(signaller)
        with torch.cuda.stream(waiter):
            handle.wait_signal(source, PUSHED)
            self.event = torch.cuda.Event()
            self.event.record()

    def wait(self) -> None:
        torch.cuda.current_stream().wait_event(self.event)


_BY_STORAGE: dict[int, SymmetricBuffer] = {}  # storage address -> buffer (process lifetime)


def lookup(t: torch.Tensor) -> SymmetricBuffer | None:
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
        refuse_under_capture("a memref.alloc {hir.symmetric} buffer")
        import torch.distributed._symmetric_memory as symm_mem  # CUDA symmetric memory loads only where a run uses it

        enable_symmetric_memory(self.group)
        tensor = symm_mem.empty(self.shape, dtype=self.dtype, device=self.device)
        handle = symm_mem.rendezvous(tensor, self.group.group_name)
        _BY_STORAGE[tensor.untyped_storage().data_ptr()] = SymmetricBuffer(tensor, handle, self.members, self)
        SymmetricPool.allocations += 1
        return tensor


def release(t: torch.Tensor) -> None:
    """Dealloc of a symmetric alloc's buffer (an ordinary buffer where it fell back)."""
    buf = _BY_STORAGE.get(t.untyped_storage().data_ptr())
    if buf is not None:
        buf.release()
