"""The ``cuda`` communication backend: copy-engine P2P through peer buffers (torch
symmetric memory), and the handlers of ``hir.device_index`` / ``hir.shift``.

How a ``backend = "cuda"`` collective runs on GPU (every step on the *current* stream, so
the copies are ``cudaMemcpyAsync`` between devices, done by copy engines, and overlap with
kernels on other streams):

1. the rank's contribution is copied into its *peer buffer*, a symmetric-memory tensor
   that every peer has mapped (``symm_mem.empty`` + ``rendezvous``, nvFuser's
   ShareMemHandles);
2. a stream-ordered barrier (a signal kernel on the peer buffer's signal pad): no peer
   reads before its owner wrote;
3. peer-to-peer copies from the peers' buffers into the output, this rank's own part first
   (it is local: no copy from a peer);
4. a second barrier: nobody overwrites its peer buffer (the next run of the op) before every
   consumer has read it.
``hir.shift`` replaces the barriers by pairwise signals (ready: sender -> receiver, done:
receiver -> sender), so the steps of a pipelined all-gather only wait for their two peers;
the wait for "done" is deferred to the next overwrite of the buffer. When the shift's
input is (a rank-uniform view of) a ``memref.alloc {hir.symmetric}`` buffer (symmetric.py)
there is no staging copy at all: the receiver copies straight from the sender's buffer
after its "ready" signal, and the buffer's dealloc barrier guards its reuse.

Registration is cached: one peer buffer per (op, stream, local shape, dtype), allocated and
exchanged on first use (a collective rendezvous over the team: SPMD ranks reach it in the
same order) and reused by every later run. Keying on the stream makes the op safe in stream
loops: iterations on different pool streams use different buffers; the iterations that
share a stream run in order. Symmetric memory never uses multicast here (run with
NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1).

On CPU (Gloo) and for the collectives without a copy-engine version (scatter, gather,
reduce, send_recv, hir.send / hir.recv), ``backend = "cuda"`` is a preference: the op runs
through the process group as with ``nccl`` / ``gloo`` (documented fallback, not an error:
the same lowered program runs in CPU tests and on GPUs). ``hir.shift`` without CUDA is a
batched isend/irecv pair.
"""

from typing import Callable, Optional

import torch
import torch.distributed as dist
from torch_mlir import ir

from hir.core import HirError
from hir.dialect.p2p import COPIES_ATTR, SIGNAL_ATTR
from hir.interpreter.backends import symmetric
from hir.interpreter.plan import Compiler, Step, handles

ENV_FLAGS = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def _no_multicast() -> None:
    import os

    for key, value in ENV_FLAGS.items():
        os.environ.setdefault(key, value)


def enable_symmetric_memory(group) -> None:
    """Symmetric memory on ``group``, without multicast (older torch needs enabling)."""
    import torch.distributed._symmetric_memory as symm_mem

    _no_multicast()
    enable = getattr(symm_mem, "enable_symm_mem_for_group", None)
    if enable is not None and dist.get_world_size(group) > 1:
        try:
            enable(group.group_name)
        except Exception:  # pragma: no cover - newer torch needs no enabling
            pass


class StreamWork:
    """Work issued on a CUDA stream: waiting makes the current stream wait for it."""

    __slots__ = ("event",)

    def __init__(self) -> None:
        self.event = torch.cuda.Event()
        self.event.record()

    def wait(self) -> None:
        torch.cuda.current_stream().wait_event(self.event)


class DoneWork:
    """Work that already completed (CPU, or a local copy)."""

    __slots__ = ()

    def wait(self) -> None:
        pass


DONE = DoneWork()


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


def uses_copy_engines(c: Compiler, op: ir.OpView) -> bool:
    """Whether ``op`` runs on the copy-engine backend here (else the process group)."""
    if c.runtime.device.type != "cuda" or not c.has_attr(op, "backend"):
        return False
    return c.str_attr(op, "backend") == "cuda"


def group_rank(members: list[int], rank: int) -> int:
    return members.index(rank)


# ----- collectives -------------------------------------------------------------------------


def allgather(o) -> Callable[[list], object]:
    """Pull every peer's shard into its chunk of the output (own chunk first, locally)."""
    axis = o.attr("axis")
    order = o.mesh_order(o.in_spec.sharding.mesh)  # group rank -> mesh position
    parts, n = len(order), len(o.members)
    me = group_rank(o.members, o.c.rank)
    bufs = PeerBuffers(o.group, o.c.runtime.device)
    inp, out = o.inp, o.out
    if not o.out_spec.held:
        raise o.c.error(o.op, "with backend \"cuda\" needs every team member to hold the output")
    steps = [(me + i) % n for i in range(n)]

    def issue(env: list) -> StreamWork:
        x, target = env[inp], env[out]
        peer = bufs.get(x.shape, x.dtype)
        peer.local.copy_(x)
        peer.handle.barrier(channel=0)
        chunks = target.chunk(parts, axis)
        for g in steps:
            chunks[order[g]].copy_(x if g == me else peer.peers[g])
        peer.handle.barrier(channel=1)
        return StreamWork()

    return issue


def _pull_reduce(o, kind: str, select: Optional[Callable]) -> Callable[[list], object]:
    """Reduce locally, publish, pull each peer's (``select``ed part of its) reduced tensor
    and reduce the pulled parts: reduce_scatter (select = our chunk) and allreduce."""
    from hir.interpreter.ops.comm import local_reduce

    fn, axis = local_reduce(kind), o.attr("axis")
    n, me = len(o.members), group_rank(o.members, o.c.rank)
    bufs = PeerBuffers(o.group, o.c.runtime.device)
    inp, out, held = o.inp, o.out, o.out_spec.held
    steps = [(me + i) % n for i in range(n)]

    def issue(env: list) -> StreamWork:
        reduced = fn(env[inp], axis)
        peer = bufs.get(reduced.shape, reduced.dtype)
        peer.local.copy_(reduced)
        peer.handle.barrier(channel=0)
        if held:
            mine = select(reduced) if select else reduced
            pulled = torch.empty((n, *mine.shape), dtype=mine.dtype, device=mine.device)
            for g in steps:
                pulled[g].copy_(mine if g == me else (select(peer.peers[g]) if select else peer.peers[g]))
            target = env[out]
            if target.is_contiguous():
                fn(pulled, 0, out=target)
            else:
                target.copy_(fn(pulled, 0))
        peer.handle.barrier(channel=1)
        return StreamWork()

    return issue


def reduce_scatter(o) -> Callable[[list], object]:
    scatter = o.attr("scatter_axis")
    scatter -= 1 if o.attr("axis") < scatter else 0
    out_mesh = o.out_spec.sharding.mesh
    parts = len(out_mesh)
    position = out_mesh.index(o.c.rank) if o.c.rank in out_mesh else 0
    return _pull_reduce(o, o.c.str_attr(o.op, "reduction"), lambda t: t.chunk(parts, scatter)[position])


def allreduce(o) -> Callable[[list], object]:
    return _pull_reduce(o, o.c.str_attr(o.op, "reduction"), None)


def broadcast(o) -> Callable[[list], object]:
    root, rank = o.attr("root"), o.c.rank
    if root not in o.members:
        raise o.c.error(o.op, "with backend \"cuda\" needs the root in the team")
    g_root = group_rank(o.members, root)
    shape = o.static_local(o.out_spec if o.out_spec.held else o.in_spec, "buffer") if rank != root else None
    bufs = PeerBuffers(o.group, o.c.runtime.device)
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


BUILDERS = {"allgather": allgather, "reduce_scatter": reduce_scatter, "allreduce": allreduce, "broadcast": broadcast}


# ----- device_index / shift -------------------------------------------------------------------


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


@handles("hir.device_index", local=False)
def device_index(c: Compiler, op: ir.OpView) -> Optional[Step]:
    mesh = c.i64_array(op, "mesh")
    c.define(op.operation.results[0], mesh.index(c.rank) if c.rank in mesh else None)
    return None


def _team_member(c: Compiler, op: ir.OpView) -> Optional[list[int]]:
    """The op's team when this rank is in it (else its token is None here)."""
    team = c.i64_array(op, "team")
    if c.rank not in team:
        c.define(op.operation.results[0], None)
        return None
    world = c.runtime.world_size
    if max(team) >= world:
        raise c.error(op, f"team {team} names devices outside the run's {world} process(es)")
    return team


@handles("hir.shift", local=False)
def shift(c: Compiler, op: ir.OpView) -> Optional[Step]:
    team = _team_member(c, op)
    if team is None:
        return None
    n, pos = len(team), team.index(c.rank)
    inp, out, off = c.uses(op)
    res = c.define(op.operation.results[0])
    where = c.where(op)
    comm = c.runtime.comm
    group = comm.group(team)
    cuda = uses_copy_engines(c, op)
    members = sorted(team)
    bufs = PeerBuffers(group, c.runtime.device) if cuda else None
    in_place = cuda and symmetric.uniform_source(op.operation.operands[0])
    handshake = not (c.has_attr(op, SIGNAL_ATTR) and c.str_attr(op, SIGNAL_ATTR) == "none")
    copies = c.int_attr(op, COPIES_ATTR) if c.has_attr(op, COPIES_ATTR) else 1
    side = [torch.cuda.Stream(c.runtime.device) for _ in range(copies - 1)] if cuda else []
    gloo = comm.is_gloo(group)

    def peers(env: list):
        """(input, output, source, destination), or None when the shift was a local copy."""
        offset = env[off]
        if offset is None or offset < 0:
            raise HirError(f"{where}: error: 'hir.shift' offset must be a non-negative index, got {offset}")
        x, target = env[inp], env[out]
        if x.numel() != target.numel():
            raise HirError(f"{where}: error: 'hir.shift' input holds {x.numel()} elements here, output {target.numel()}")
        src = team[(pos + offset) % n]
        if src == c.rank:
            target.copy_(x.reshape(target.shape))
            env[res] = DONE
            return None
        return x, target, src, team[(pos - offset) % n]

    def shift_cuda(env: list) -> None:
        shift = peers(env)
        if shift is None:
            return
        x, target, src, dst = shift
        sym = symmetric.lookup(x) if in_place else None
        if sym is not None and src in sym.members and dst in sym.members:
            # The input lies in a symmetric buffer at the same offset on every rank: read
            # src's copy in place. Its dealloc barrier guards the overwrite, not a flag.
            if handshake:
                sym.handle.put_signal(sym.members.index(dst), symmetric.READY)
                sym.handle.wait_signal(sym.members.index(src), symmetric.READY)
            split_copy(target, sym.peer_view(sym.members.index(src), x).reshape(target.shape), side)
            env[res] = StreamWork()
            return
        peer = bufs.get(x.shape, x.dtype)
        g_src, g_dst = members.index(src), members.index(dst)
        if peer.pending is not None:  # the last reader of our buffer must be done with it
            peer.handle.wait_signal(peer.pending, 1)
        peer.local.copy_(x)
        peer.handle.put_signal(g_dst, 0)  # ready: dst may read our buffer
        peer.handle.wait_signal(g_src, 0)  # src's buffer holds its input
        split_copy(target, peer.peers[g_src].view(target.shape), side)
        peer.handle.put_signal(g_src, 1)  # done reading src's buffer
        # dst's "done" is awaited before the next overwrite of our buffer (the next issue on
        # this stream), not here: this step's consumers need not wait for dst's copy.
        peer.pending = g_dst
        env[res] = StreamWork()

    def shift_pg(env: list) -> None:
        shift = peers(env)
        if shift is None:
            return
        x, target, src, dst = shift
        from hir.interpreter.ops.comm import Work, contiguous_out

        buf, back = contiguous_out(target)
        recv_into = buf.view(x.shape) if buf.is_contiguous() else buf
        if gloo:  # Gloo has no coalesced P2P; its sends do not block
            handles_ = [dist.isend(x.contiguous(), dst), dist.irecv(recv_into, src)]
        else:  # NCCL: grouped, or the ring of sends deadlocks
            handles_ = dist.batch_isend_irecv([dist.P2POp(dist.isend, x.contiguous(), dst), dist.P2POp(dist.irecv, recv_into, src)])
        env[res] = Work(handles_, (lambda: back.copy_(buf)) if back is not None else None)

    return shift_cuda if cuda else shift_pg


@handles("hir.barrier", local=False)
def barrier(c: Compiler, op: ir.OpView) -> Optional[Step]:
    """A stream-ordered signal-pad barrier with backend "cuda" on GPU; elsewhere a
    one-element all-reduce over the team (its wait is the barrier)."""
    team = _team_member(c, op)
    if team is None:
        return None
    res = c.define(op.operation.results[0])
    group = c.runtime.comm.group(team)
    device = c.runtime.device
    if uses_copy_engines(c, op):
        bufs = PeerBuffers(group, device)

        def barrier_cuda(env: list) -> None:
            bufs.get((1,), torch.int32).handle.barrier(channel=0)
            env[res] = StreamWork()

        return barrier_cuda
    from hir.interpreter.ops.comm import Work

    token = torch.zeros(1, device=device)

    def barrier_pg(env: list) -> None:
        env[res] = Work(dist.all_reduce(token, group=group, async_op=True))

    return barrier_pg
