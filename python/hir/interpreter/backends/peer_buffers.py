"""The peer-buffer cache of copy-engine transfers: one registered symmetric buffer per (op,
stream, local shape, dtype), allocated and exchanged on first use (a collective rendezvous
over the team: SPMD ranks reach it in the same order) and reused by every later run.
Keying on the stream makes an op safe in stream loops: iterations on different pool streams
use different buffers; the iterations that share a stream run in order."""

from typing import Optional

import torch
import torch.distributed as dist

from hir.interpreter.backends.symmetric import enable_symmetric_memory


class PeerBuffer:
    """One registered symmetric buffer: ``local`` (ours), ``peers[g]`` (group rank g's,
    mapped here) and the handle whose signal pad carries the barriers and flags."""

    __slots__ = ("local", "peers", "handle", "pending")

    def __init__(self, shape: tuple, dtype: torch.dtype, device: torch.device, group) -> None:
        import torch.distributed._symmetric_memory as symm_mem

        enable_symmetric_memory(group)
        name = group.group_name
        self.pending: Optional[int] = None  # group rank whose "done" flag we still owe a wait
        self.local = symm_mem.empty(shape, dtype=dtype, device=device)
        self.handle = symm_mem.rendezvous(self.local, name)
        self.peers = [self.handle.get_buffer(g, tuple(shape), dtype) for g in range(dist.get_world_size(group))]


class PeerBuffers:
    """The cache of one op's peer buffers, keyed by (current stream, local shape, dtype)."""

    registrations = 0  # process-wide count of rendezvous (tests check the cache works)

    def __init__(self, group, device: torch.device) -> None:
        self.group, self.device = group, device
        self._cache: dict = {}

    def get(self, shape, dtype: torch.dtype) -> PeerBuffer:
        key = (torch.cuda.current_stream(self.device).cuda_stream, tuple(shape), dtype)
        buf = self._cache.get(key)
        if buf is None:
            buf = self._cache[key] = PeerBuffer(tuple(shape), dtype, self.device, self.group)
            PeerBuffers.registrations += 1
        return buf
