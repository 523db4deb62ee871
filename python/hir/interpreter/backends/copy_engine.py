"""The ``cuda`` communication backend: copy-engine P2P through peer buffers (torch
symmetric memory, ``peer_buffers.py``) for allgather and broadcast, and the split copies
``hir.shift`` uses (its handler: ``ops/p2p.py``).

How a ``backend = "cuda"`` collective runs on GPU (every step on the *current* stream, so
the copies are ``cudaMemcpyAsync`` between devices, done by copy engines, and overlap with
kernels on other streams):

1. the rank's contribution is copied into its *peer buffer*, a symmetric-memory tensor
   that every peer has mapped (``symm_mem.empty`` + ``rendezvous``, nvFuser's
   ShareMemHandles);
2. a stream-ordered barrier (a signal kernel on the peer buffer's signal pad): no peer
   reads before its owner wrote;
3. peer-to-peer copies from the peers' buffers into the output, this rank's own part first
   (it is local: no copy from a peer), each peer's on a side stream of its own (forked from
   and joined back into the current stream), so the copies from different peers run at
   once on different copy engines and links instead of one after another;
4. a second barrier: nobody overwrites its peer buffer (the next run of the op) before every
   consumer has read it.
``hir.shift`` replaces the barriers by pairwise signals (ready: sender -> receiver, done:
receiver -> sender), so the steps of a pipelined all-gather only wait for their two peers;
the wait for "done" is deferred to the next overwrite of the buffer. When the shift's
input is (a rank-uniform view of) a ``memref.alloc {hir.symmetric}`` buffer (symmetric.py)
there is no staging copy at all: the receiver copies straight from the sender's buffer
after its "ready" signal, and the buffer's dealloc barrier guards its reuse.

Registration is cached (``peer_buffers.py``). Symmetric memory never uses multicast here
(run with NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1).

A small sum all-reduce (at most ``one_shot.ONE_SHOT_MAX_BYTES``, a decode step's) is not a
copy but one kernel on symmetric memory that reads every peer's part (``one_shot.py``).

On CPU (Gloo) and for the collectives without a copy-engine version (reduce_scatter, larger
allreduce, scatter, gather, reduce, send_recv, hir.send / hir.recv), ``backend = "cuda"`` is
a preference: the op runs through the process group as with ``nccl`` / ``gloo`` (documented
fallback, not an error: the same lowered program runs in CPU tests and on GPUs). A whole
reduce_scatter or large allreduce has no copy-engine version because copy engines only move data:
the sum needs a kernel reading every peer's part after a barrier, where NCCL's ring reduces
while it moves. Measured (4x H200, bf16, matmul+RS at M = 8192 / 16384, CUDA
graphs): pulling the parts, even from every peer at once, took 2.32x / 2.40x max(comm,
matmul) against 1.81x / 1.84x through NCCL. Reductions pipelined with the matmul are what
copy engines are for: hir-p2p-pipeline's shifts (1.2x). ``hir.shift`` without CUDA is a
batched isend/irecv pair.
"""

from collections.abc import Callable

import torch

from hir.dialect import AllgatherOp, AllreduceOp, BroadcastOp
from hir.dialect.base import get_str
from hir.interpreter.backends import one_shot
from hir.interpreter.backends.peer_buffers import PeerBuffers
from hir.interpreter.backends.work import StreamWork


def uses_copy_engines(device: torch.device, op) -> bool:
    """Whether ``op`` (its ``backend`` attribute) runs on copy engines on ``device``, else
    through the process group."""
    return device.type == "cuda" and get_str(op, "backend") == "cuda"


def group_rank(members: list[int], rank: int) -> int:
    return members.index(rank)


# ----- collectives -------------------------------------------------------------------------
# Each takes the compile-time facts of a collective (``collective.CommOp``) and returns
# ``issue(env) -> work``, like the process-group versions (process_group.py).


def allgather(o) -> Callable[[list], object]:
    """Pull every peer's shard into its chunk of the output (own chunk first, locally)."""
    axis = o.attr("axis")
    order = o.mesh_order(o.in_spec.sharding.mesh)  # group rank -> mesh position
    parts, n = len(order), len(o.members)
    me = group_rank(o.members, o.c.rank)
    bufs = PeerBuffers(o.group, o.c.runtime.streams)
    inp, out = o.inp, o.out
    if not o.out_spec.held:
        raise o.c.error(o.op, 'with backend "cuda" needs every team member to hold the output')
    peers = [(me + i) % n for i in range(1, n)]
    side = side_streams(o.c.runtime.device, len(peers))

    def issue(env: list) -> StreamWork:
        x, target = env[inp], env[out]
        peer = bufs.get(x.shape, x.dtype)
        peer.local.copy_(x)
        peer.handle.barrier(channel=0)
        chunks = target.chunk(parts, axis)
        chunks[order[me]].copy_(x)
        concurrent_copies([(chunks[order[g]], peer.peers[g]) for g in peers], side)
        peer.handle.barrier(channel=1)
        return StreamWork()

    return issue


def broadcast(o) -> Callable[[list], object]:
    root, rank = o.root, o.c.rank
    if root not in o.members:
        raise o.c.error(o.op, 'with backend "cuda" needs the root in the team')
    g_root = group_rank(o.members, root)
    shape = o.static_local(o.out_spec if o.out_spec.held else o.in_spec, "buffer") if rank != root else None
    bufs = PeerBuffers(o.group, o.c.runtime.streams)
    inp, out, held, dtype = o.inp, o.out, o.out_spec.held, o.out_spec.dtype

    def issue(env: list) -> StreamWork:
        if rank == root:
            x = env[inp]
            peer = bufs.get(x.shape, x.dtype)
            peer.local.copy_(x)
            peer.handle.barrier(channel=0)
            if held:
                env[out].copy_(x)
        else:
            peer = bufs.get(shape, dtype)
            peer.handle.barrier(channel=0)
            if held:
                env[out].copy_(peer.peers[g_root])
        peer.handle.barrier(channel=1)
        return StreamWork()

    return issue


BUILDERS = {AllgatherOp: allgather, BroadcastOp: broadcast, AllreduceOp: one_shot.allreduce}


def side_streams(device: torch.device, count: int) -> list:
    """``count`` side streams for concurrent peer copies (made when the plan is compiled)."""
    return [torch.cuda.Stream(device) for _ in range(count)]


def concurrent_copies(copies: list, side: list) -> None:
    """Each ``target.copy_(source)`` of ``copies`` on a side stream of its own, forked from the
    current stream before any of them and joined back into it after all: copies from
    different peers run at once (one copy engine and NVLink path each)."""
    current = torch.cuda.current_stream()
    for stream in side:
        stream.wait_stream(current)
    for stream, (target, source) in zip(side, copies):
        with torch.cuda.stream(stream):
            target.copy_(source)
    for stream in side:
        current.wait_stream(stream)


def split_copy(target: torch.Tensor, source: torch.Tensor, side: list) -> None:
    """``target.copy_(source)`` in ``len(side) + 1`` parts along the outer axis: the first
    on the current stream, one on each side stream (forked from and joined back into the
    current stream), so several copy engines move one peer's data at once."""
    if not side or target.dim() == 0:
        target.copy_(source)
        return
    current = torch.cuda.current_stream()
    for stream in side:  # fork before any part is queued on the current stream
        stream.wait_stream(current)
    parts = len(side) + 1
    targets, sources = target.chunk(parts, 0), source.chunk(parts, 0)
    targets[0].copy_(sources[0])
    for stream, t, x in zip(side, targets[1:], sources[1:]):
        with torch.cuda.stream(stream):
            t.copy_(x)
    for stream in side:
        current.wait_stream(stream)
