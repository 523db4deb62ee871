"""Handlers of the p2p group (``hir.device_index``, ``hir.shift``, ``hir.barrier``): pipelined
point-to-point transfers with a run-time peer. With ``backend = "cuda"`` on GPU a shift is a
copy-engine copy (from the peer's symmetric buffer in place when its input is a rank-uniform
view of a ``memref.alloc {hir.symmetric}``, else through a peer buffer with pairwise ready /
done signals; with ``transfer = "push"`` into the receiver's symmetric output, signalled after
the copy) and a barrier is stream-ordered (signal pads); elsewhere a shift is a batched
isend/irecv pair and a barrier a one-element all-reduce (see ``backends/copy_engine.py``).
"""

import torch
import torch.distributed as dist
from torch_mlir import ir
from torch_mlir.dialects import arith, memref

from hir.dialect import BarrierOp, DeviceIndexOp, ForOp, OwnBlockOp, ShiftOp, is_view
from hir.dialect.base import get_int, get_str, required_i64_array, required_int
from hir.dialect.context import HirError
from hir.dialect.p2p import COPIES_ATTR, SIGNAL_ATTR
from hir.dialect.teams import teams_of
from hir.interpreter.backends import headers, symmetric
from hir.interpreter.backends.copy_engine import split_copy, uses_copy_engines
from hir.interpreter.backends.delay import comm_delay
from hir.interpreter.backends.peer_buffers import PeerBuffers
from hir.interpreter.backends.work import DONE, StreamWork, Work, contiguous_out, received
from hir.interpreter.ops.memory import is_symmetric_alloc
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.registry import impl, register_impls


def _team_member(c: Compiler, op: ir.OpView) -> list[int] | None:
    """The op's team that holds this rank (one team, or the row holding it of a team
    layout: decided here, when the plan is compiled), else None (its token is None here)."""
    teams = teams_of(op)
    world = c.runtime.world_size
    outside = next((t for t in teams if max(t) >= world), None)
    if outside is not None:
        raise c.error(op, f"team {outside} names devices outside the run's {world} process(es)")
    team = next((t for t in teams if c.rank in t), None)
    if team is None:
        c.define(op.operation.results[0], None)
    return team


@register_impls
class P2PImpls:
    @impl(DeviceIndexOp, local=False)
    def device_index(self, c: Compiler, op: ir.OpView) -> Step | None:
        mesh = required_i64_array(op, "mesh")
        c.define(op.operation.results[0], mesh.index(c.rank) if c.rank in mesh else None)
        return None

    @impl(ShiftOp, local=False)
    def shift(self, c: Compiler, op: ir.OpView) -> Step | None:
        team = _team_member(c, op)
        if team is None:
            return None
        n, pos = len(team), team.index(c.rank)
        inp, out, off = c.uses(op)
        res = c.define(op.operation.results[0])
        where = c.where(op)
        comm = c.runtime.comm
        group = comm.group(team)
        cuda = uses_copy_engines(c.runtime.device, op)
        members = sorted(team)
        bufs = PeerBuffers(group, c.runtime.streams) if cuda else None
        in_place = cuda and uniform_source(op.operation.operands[0])
        handshake = get_str(op, SIGNAL_ATTR) != "none"
        push = ShiftOp.transfer(op.operation) == "push"
        if cuda and push and not uniform_source(op.operation.operands[1]):
            raise c.error(
                op,
                'with transfer = "push" and backend "cuda" needs its output to be a rank-uniform view '
                "of a memref.alloc {hir.symmetric} (the sender writes the receiver's copy in place)",
            )
        copies = get_int(op, COPIES_ATTR) or 1
        side = [torch.cuda.Stream(c.runtime.device) for _ in range(copies - 1)] if cuda else []
        # a pushed shift signals on ``signaller`` and waits for its sender on ``waiter``
        # (symmetric.PushedWork), neither on the stream of the copies: high priority, so a
        # signal kernel is scheduled before the next GEMM takes the SMs
        signaller, waiter = (
            (torch.cuda.Stream(c.runtime.device, priority=-1) for _ in range(2)) if cuda and push else (None, None)
        )
        gloo = comm.is_gloo(group)
        checks = (
            None
            if cuda
            else headers.for_op(
                where, ShiftOp.OPERATION_NAME, members, group, c.runtime.device, c.runtime.transfer_checks
            )
        )
        rank = c.rank
        # HIR_COMM_DELAY_CYCLES: each copy and signal of the shift is held back (a no-op when unset)
        delay = comm_delay(c.runtime.device) or _no_delay

        def peers(env: list):
            """(input, output, source, destination), or None when the shift was a local copy."""
            offset = env[off]
            if offset is None or offset < 0:
                raise HirError(
                    f"{where}: error: '{ShiftOp.OPERATION_NAME}' offset must be a non-negative index, got {offset}"
                )
            x, target = env[inp], env[out]
            if x.numel() != target.numel():
                raise HirError(
                    f"{where}: error: '{ShiftOp.OPERATION_NAME}' input "
                    f"holds {x.numel()} elements here, output {target.numel()}"
                )
            src = team[(pos + offset) % n]
            if src == c.rank:
                target.copy_(x.reshape(target.shape))
                env[res] = DONE
                return None
            return x, target, src, team[(pos - offset) % n]

        def shift_push(env: list) -> None:
            """Copy our input into dst's output in place, then signal dst (after the copy, on
            ``signaller``: the next push on this stream does not wait for the signal kernel,
            10-15 us a step in a 4x H200 profile); the work waits for src's signal: its
            copy into ours is done."""
            assert signaller is not None and waiter is not None, "made for a push on GPU"
            shift = peers(env)
            if shift is None:
                return
            x, target, src, dst = shift
            sym = symmetric.lookup(target)
            if sym is None or src not in sym.members or dst not in sym.members:
                raise HirError(
                    f"{where}: error: '{ShiftOp.OPERATION_NAME}' with transfer = "
                    '"push": its output is not in a symmetric buffer of the team here (a '
                    "mesh of one or a dynamic shape fell back to an ordinary buffer)"
                )
            g_dst = sym.members.index(dst)
            delay()
            split_copy(sym.peer_view(g_dst, target), x.reshape(target.shape), side)
            # Two shift ops' signals to one receiver may land out of issue order. The receiver
            # takes them in order, which stays safe: k signals sent to it mean the first k
            # pushes to it on this stream are done (each signal follows its own push, and
            # the pushes run in stream order).
            signaller.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(signaller):
                delay()
                sym.handle.put_signal(g_dst, symmetric.PUSHED)
            env[res] = symmetric.PushedWork(sym.handle, sym.members.index(src), signaller, waiter)

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
                    delay()
                    sym.handle.put_signal(sym.members.index(dst), symmetric.READY)
                    sym.handle.wait_signal(sym.members.index(src), symmetric.READY)
                delay()
                split_copy(target, sym.peer_view(sym.members.index(src), x).reshape(target.shape), side)
                env[res] = StreamWork()
                return
            assert bufs is not None, "made on GPU"
            peer = bufs.get(x.shape, x.dtype)
            g_src, g_dst = members.index(src), members.index(dst)
            if peer.pending is not None:  # the last reader of our buffer must be done with it
                peer.handle.wait_signal(peer.pending, 1)
            peer.local.copy_(x)
            delay()
            peer.handle.put_signal(g_dst, 0)  # ready: dst may read our buffer
            peer.handle.wait_signal(g_src, 0)  # src's buffer holds its input
            delay()
            split_copy(target, peer.peers[g_src].view(target.shape), side)
            delay()
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
            buf, back = contiguous_out(target)
            recv_into = buf.view(x.shape) if buf.is_contiguous() else buf
            if checks is not None:
                checks.exchange(x, dst, recv_into, src, rank, gloo)
            if gloo:  # Gloo has no coalesced P2P; its sends do not block
                handles_ = [dist.isend(x.contiguous(), dst), dist.irecv(recv_into, src)]
            else:  # NCCL: grouped, or the ring of sends deadlocks
                handles_ = dist.batch_isend_irecv(
                    [dist.P2POp(dist.isend, x.contiguous(), dst), dist.P2POp(dist.irecv, recv_into, src)]
                )
            env[res] = received(handles_, buf, back)

        if not cuda:
            return shift_pg
        return shift_push if push else shift_cuda

    @impl(OwnBlockOp)
    def own_block(self, c: Compiler, op: ir.OpView) -> Step | None:
        """The local shard's only block along the split axis, as a view (no copy)."""
        axis = required_int(op, "axis")
        src, out = c.use(op.operation.operands[0]), c.define(op.operation.results[0])
        c.add_alias(src, out)
        where = c.where(op)

        def own_block_step(env: list) -> None:
            t = env[src]
            if t.shape[axis] != 1:
                raise HirError(
                    f"{where}: error: '{OwnBlockOp.OPERATION_NAME}' needs one block "
                    f"of axis {axis} on this rank, the local shard has {t.shape[axis]}"
                )
            env[out] = t.select(axis, 0)

        return own_block_step

    @impl(BarrierOp, local=False)
    def barrier(self, c: Compiler, op: ir.OpView) -> Step | None:
        """A stream-ordered signal-pad barrier with backend "cuda" on GPU; elsewhere a
        one-element all-reduce over the team (its wait is the barrier)."""
        team = _team_member(c, op)
        if team is None:
            return None
        res = c.define(op.operation.results[0])
        group = c.runtime.comm.group(team)
        device = c.runtime.device
        if uses_copy_engines(c.runtime.device, op):
            bufs = PeerBuffers(group, c.runtime.streams)

            def barrier_cuda(env: list) -> None:
                bufs.get((1,), torch.int32).handle.barrier(channel=0)
                env[res] = StreamWork()

            return barrier_cuda
        token = torch.zeros(1, device=device)

        def barrier_pg(env: list) -> None:
            env[res] = Work(dist.all_reduce(token, group=group, async_op=True))

        return barrier_pg


def _no_delay() -> None:
    pass


def uniform_source(value: ir.Value) -> bool:
    """Whether ``value`` is a symmetric alloc or a view of one whose index operands (every
    operand after the viewed buffer: a select's index, a subview's offsets; none for a
    reshape or broadcast) are the same on every rank (no ``hir.device_index`` in them), so a
    peer's buffer holds its counterpart at the same offset."""
    while True:
        owner = value.owner
        if not isinstance(owner, (ir.Operation, ir.OpView)):
            return False
        if not is_view(owner):
            return is_symmetric_alloc(value)
        operands = list(owner.operands)
        if not all(_uniform_index(v) for v in operands[1:]):
            return False
        value = operands[0]


def _uniform_index(value: ir.Value, depth: int = 0) -> bool:
    if depth > 32:
        return False
    owner = value.owner
    if isinstance(owner, ir.Block):  # a loop induction variable: uniform if its bounds are
        parent = owner.owner
        return parent.name == ForOp.OPERATION_NAME and all(_uniform_index(v, depth + 1) for v in parent.operands)
    if owner.name in _RANK_UNIFORM:
        return True
    return owner.name.startswith(_ARITH) and all(_uniform_index(v, depth + 1) for v in owner.operands)


_RANK_UNIFORM = (arith.ConstantOp.OPERATION_NAME, memref.DimOp.OPERATION_NAME)  # the same on every rank
_ARITH = "arith."  # the dialect's ops: index arithmetic of uniform values is uniform
