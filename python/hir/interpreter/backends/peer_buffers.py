"""The peer-buffer cache of copy-engine transfers: one registered symmetric buffer per (op,
stream role, local shape, dtype), allocated and exchanged on first use (a collective
rendezvous over the team: SPMD ranks reach it in the same order) and reused by every later
run. Keying on the stream's role (its pool index, or the caller's stream:
``StreamPool.role``) makes an op safe in stream loops: iterations on different pool streams
use different buffers; the iterations that share a stream run in order. It is not keyed on
the torch stream itself: a CUDA graph's warm-up (on a side stream) and its capture (on the
capture stream) then use the buffers the first run registered, and a capture never
registers (a rendezvous under capture, three per call of the SP layer, preceded
its illegal memory access); a buffer first needed during a capture is an error, which
``graph="auto"`` answers by running eagerly."""

import torch
import torch.distributed as dist

from hir.interpreter.backends.symmetric import enable_symmetric_memory, refuse_under_capture


class PeerBuffer:
    """One registered symmetric buffer: ``local`` (ours), ``peers[g]`` (group rank g's,
    mapped here) and the handle whose signal pad carries the barriers and flags."""

    __slots__ = ("local", "peers", "handle", "pending")

    def __init__(self, shape: tuple, dtype: torch.dtype, device: torch.device, group) -> None:
        import torch.distributed._symmetric_memory as symm_mem  # CUDA symmetric memory loads only where a run uses it

        enable_symmetric_memory(group)
        name = group.group_name
        self.pending: int | None = None  # group rank whose "done" flag we still owe a wait
        self.local = symm_mem.empty(shape, dtype=dtype, device=device)
        self.handle = symm_mem.rendezvous(self.local, name)
        self.peers = [self.handle.get_buffer(g, tuple(shape), dtype) for g in range(dist.get_world_size(group))]


class PeerBuffers:
    """The cache of one op's peer buffers, keyed by :meth:`key`; ``streams`` is the run's
    ``StreamPool``."""

    registrations = 0  # process-wide count of rendezvous (tests check the cache works)

    def __init__(self, group, streams) -> None:
        self.group, self.streams, self.device = group, streams, streams.device
        self._cache: dict = {}

    def key(self, shape, dtype: torch.dtype) -> tuple:
        """(role of the current stream, local shape, dtype)."""
        return (self.streams.role(self.streams.current()), tuple(shape), dtype)

    def get(self, shape, dtype: torch.dtype) -> PeerBuffer:
        key = self.key(shape, dtype)
        buf = self._cache.get(key)
        if buf is None:
            refuse_under_capture("a copy-engine transfer's peer buffer")
            buf = self._cache[key] = PeerBuffer(tuple(shape), dtype, self.device, self.group)
            PeerBuffers.registrations += 1
        return buf
