"""Handlers of the comm group: communications through ``torch.distributed``, with the axis
conventions of ``hir.dialect.comm``: buffers have global shapes, each rank holds its local
shard.

Every op is issued asynchronously and leaves a :class:`Work` in its result slot; ``hir.wait``
waits on it (on GPU, NCCL's ``wait`` makes the current stream wait; the host does not block)
and then runs the op's finishing copies. Non-contiguous buffers (views) are staged: inputs
are copied to contiguous tensors before the op, outputs received into contiguous tensors and
copied back at the wait (seed 000). Ranks outside an op's team skip it (their work is None,
and waiting on it does nothing). On a multi-D mesh each rank runs the op with its own team
(line of the mesh) on the 1-D view of the buffers that line sees (``BufferSpec.project``). Team members are global ranks; torch's sub-groups order
their members by rank, so lists indexed by group rank are permuted to mesh order here.
Gloo has no reduce_scatter: it is an all_reduce whose wait keeps this rank's chunk.
``backend = "cuda"`` on GPU runs allgather, reduce_scatter, allreduce and broadcast on copy
engines through peer buffers (``backends/copy_engine.py``); elsewhere it falls back to the
process group.
"""

from dataclasses import dataclass
from typing import Callable, Optional

import torch
import torch.distributed as dist
from torch_mlir import ir

from hir.dialect import comm as comm_ops
from hir.dialect import teams as team_ops
from hir.dialect.base import DYNAMIC, get_int, get_str
from hir.dialect.context import HirError
from hir.interpreter.backends.delay import comm_delay
from hir.interpreter.backends import copy_engine
from hir.interpreter.backends.work import REDUCE_OPS, Work, contiguous_out, identity, local_reduce
from hir.interpreter.buffers import BufferSpec
from hir.interpreter.plan import UNSET, WAITED, Compiler, Step
from hir.interpreter.registry import impl, register_impls


@dataclass
class CommOp:
    """Compile-time facts shared by the collective handlers."""

    c: Compiler
    op: ir.OpView
    team: list[int]
    members: list[int]  # sorted team: index = rank in the sub-group
    group: object
    inp: int
    out: int
    in_spec: BufferSpec
    out_spec: BufferSpec

    def attr(self, name: str) -> int:
        return get_int(self.op, name)

    @property
    def root(self) -> int:
        """The root of this rank's team (a team layout has one per row)."""
        return team_ops.root_of(self.op, self.team)

    def mesh_order(self, mesh) -> list[int]:
        """For each group rank, the mesh position of that member (-1: not on the mesh)."""
        return [list(mesh).index(m) if m in mesh else -1 for m in self.members]

    def static_local(self, spec: BufferSpec, what: str) -> list[int]:
        shape = spec.local_static()
        if DYNAMIC in shape:
            raise self.c.error(self.op, f"{what} needs a static shape on rank {self.c.rank}, which holds no part of it")
        return shape


def _teams(c: Compiler, op: ir.OpView) -> list[list[int]]:
    teams = team_ops.teams_of(op)
    world = c.runtime.world_size
    outside = [d for team in teams for d in team if d >= world]
    if outside:
        shown = teams[0] if len(teams) == 1 else teams
        raise c.error(
            op,
            f"team {shown} names device(s) {outside} outside the run's {world} process(es) (ranks 0..{world - 1}); "
            f"run with --nproc {max(outside) + 1} or under torchrun",
        )
    return teams


def collective(op_class: type):
    """Register ``build`` (CommOp -> issue(env) -> Work) as the handler of ``op_class``
    (``copy_engine.BUILDERS[op_class]`` instead with backend "cuda" on GPU, unless that
    builder answers None for the op)."""
    return lambda build: _register_collective(op_class, build)


def _register_collective(op_class: type, build: Callable[[CommOp], Callable[[list], Work]]):
    @impl(op_class, local=False)
    def handler(c: Compiler, op: ir.OpView) -> Optional[Step]:
        teams = _teams(c, op)
        result = op.operation.results[0]
        team = next((t for t in teams if c.rank in t), None)
        if team is None:
            c.define(result, None)
            return None
        comm = c.runtime.comm
        group = comm.group(team)
        operands = op.operation.operands
        in_spec, out_spec = c.spec(operands[0]), c.spec(operands[1])
        if team_ops.is_multi_team(op):  # this rank's line of a multi-D mesh: its 1-D view
            mesh_axes = team_ops.team_mesh_axes(in_spec.sharding, teams)
            in_spec, out_spec = in_spec.project(c.rank, mesh_axes), out_spec.project(c.rank, mesh_axes)
        info = CommOp(c, op, team, sorted(team), group, c.use(operands[0]), c.use(operands[1]), in_spec, out_spec)
        issue = None
        if copy_engine.uses_copy_engines(c.runtime.device, op) and not in_spec.uneven:  # backend "cuda" on GPU
            build_here = copy_engine.BUILDERS.get(op_class)
            issue = build_here(info) if build_here is not None else None  # None: this one runs on the process group
        issue = issue or build(info)
        out = c.define(result)
        delay = comm_delay(c.runtime.device)
        if delay is not None:  # HIR_COMM_DELAY_CYCLES: the collective starts late, every time

            def delayed_comm_step(env: list) -> None:
                delay()
                env[out] = issue(env)

            return delayed_comm_step

        def comm_step(env: list) -> None:
            env[out] = issue(env)

        return comm_step

    return build


def _outer_blocks(t: torch.Tensor, axis: int) -> bool:
    """Whether the equal chunks of ``t`` along ``axis`` are consecutive blocks of its memory,
    in order (contiguous, every axis before ``axis`` of extent 1)."""
    return t.is_contiguous() and all(extent == 1 for extent in t.shape[:axis])


@collective(comm_ops.AllgatherOp)
def allgather(o: CommOp):
    axis = o.attr("axis")
    order = o.mesh_order(o.in_spec.sharding.mesh)
    parts = len(order)
    shape = o.static_local(o.out_spec, "output") if not o.out_spec.held else None
    group, inp, out = o.group, o.inp, o.out
    if o.in_spec.uneven:
        return _allgather_uneven(o, axis, order, shape)

    gloo = o.c.runtime.comm.is_gloo(group)
    in_order = order == list(range(parts))

    def issue(env: list) -> Work:
        x = env[inp].contiguous()
        target = env[out] if shape is None else torch.empty(shape, dtype=x.dtype, device=x.device)
        if not gloo and in_order and _outer_blocks(target, axis):
            # the parts are consecutive blocks of the output: NCCL writes them in place (the
            # list form would gather into a staging buffer and copy each part out)
            return Work(dist.all_gather_into_tensor(target.view(-1), x.view(-1), group=group, async_op=True))
        chunks = target.chunk(parts, axis)
        recv = [chunks[p] for p in order]
        staged = [t if t.is_contiguous() else torch.empty_like(t, memory_format=torch.contiguous_format) for t in recv]
        handle = dist.all_gather(staged, x, group=group, async_op=True)
        back = [(s, t) for s, t in zip(staged, recv) if s is not t]
        return Work(handle, (lambda: [t.copy_(s) for s, t in back]) if back else None)

    return issue


def _allgather_uneven(o: CommOp, axis: int, order: list[int], shape: Optional[list[int]]):
    """Parts of different extents: every member sends its part padded to the widest, and
    the wait copies each received part's rows into place (collectives move equal sizes)."""
    bounds = o.in_spec.sharding.bounds(axis)
    where = [(bounds[p], bounds[p + 1] - bounds[p]) for p in order]  # per group rank: start, extent
    widest = max(n for _, n in where)
    group, inp, out = o.group, o.inp, o.out

    def issue(env: list) -> Work:
        x = env[inp]
        padded = list(x.shape)
        padded[axis] = widest
        send = x.new_zeros(padded)
        send.narrow(axis, 0, x.shape[axis]).copy_(x)
        staged = [torch.empty_like(send) for _ in where]
        target = env[out] if shape is None else torch.empty(shape, dtype=x.dtype, device=x.device)
        handle = dist.all_gather(staged, send, group=group, async_op=True)

        def place() -> None:
            for got, (start, extent) in zip(staged, where):
                target.narrow(axis, start, extent).copy_(got.narrow(axis, 0, extent))

        return Work(handle, place)

    return issue


@collective(comm_ops.AllreduceOp)
def allreduce(o: CommOp):
    axis, kind = o.attr("axis"), get_str(o.op, "reduction")
    fn, op_ = local_reduce(kind), REDUCE_OPS[kind]
    held, group, inp, out = o.out_spec.held, o.group, o.inp, o.out

    def issue(env: list) -> Work:
        target = env[out] if held else None
        if target is None:
            buf, back = fn(env[inp], axis), None
        else:
            buf, back = contiguous_out(target)
            fn(env[inp], axis, out=buf)
        handle = dist.all_reduce(buf, op=op_, group=group, async_op=True)
        return Work(handle, (lambda: back.copy_(buf)) if back is not None else None)

    return issue


@collective(comm_ops.ReduceScatterOp)
def reduce_scatter(o: CommOp):
    axis, kind = o.attr("axis"), get_str(o.op, "reduction")
    scatter = o.attr("scatter_axis")
    scatter -= 1 if axis < scatter else 0  # the axis in the reduced tensor
    out_mesh = o.out_spec.sharding.mesh
    order, parts = o.mesh_order(out_mesh), len(out_mesh)
    fn, op_, group, inp, out = local_reduce(kind), REDUCE_OPS[kind], o.group, o.inp, o.out
    gloo = o.c.runtime.comm.is_gloo(group)
    position = out_mesh.index(o.c.rank) if o.c.rank in out_mesh else None

    in_order = order == list(range(parts))

    def issue(env: list) -> Work:
        x = env[inp]
        target = env[out] if position is not None else None
        if gloo:  # all_reduce the whole tensor (a fresh sum: reduced in place), keep our chunk at the wait
            reduced = fn(x, axis)
            handle = dist.all_reduce(reduced, op=op_, group=group, async_op=True)
            if target is None:
                return Work(handle)
            return Work(handle, lambda: target.copy_(reduced.chunk(parts, scatter)[position]))
        # NCCL only reads its input: with one block of the reduced axis here (the usual
        # split) the sum is the block itself, no copy
        reduced = x.squeeze(axis) if x.shape[axis] == 1 else fn(x, axis)
        chunks = reduced.chunk(parts, scatter)
        if in_order and reduced.is_contiguous() and _outer_blocks(reduced, scatter):
            # the parts are consecutive blocks of the input: NCCL reads them in place (the
            # list form would stage them into one buffer first)
            target = target if target is not None else torch.empty_like(chunks[0])
            buf, back = contiguous_out(target)
            handle = dist.reduce_scatter_tensor(buf.view(-1), reduced.view(-1), op=op_, group=group, async_op=True)
            return Work(handle, (lambda: back.copy_(buf)) if back is not None else None)
        sends = [chunks[p].contiguous() for p in order]
        if target is None:
            target = torch.empty_like(sends[0])
        buf, back = contiguous_out(target)
        handle = dist.reduce_scatter(buf, sends, op=op_, group=group, async_op=True)
        return Work(handle, (lambda: back.copy_(buf)) if back is not None else None)

    return issue


@collective(comm_ops.BroadcastOp)
def broadcast(o: CommOp):
    root, rank = o.root, o.c.rank
    group, inp, out, held = o.group, o.inp, o.out, o.out_spec.held
    shape = None if held or rank == root else o.static_local(o.out_spec, "output")
    where = o.c.where(o.op)

    def issue(env: list) -> Work:
        if rank == root:
            x = env[inp]
            if x is None:
                raise HirError(f"{where}: error: '{comm_ops.BroadcastOp.OPERATION_NAME}' root {root} does not hold the input")
            x = x.contiguous()
            if held:
                env[out].copy_(x)
            return Work(dist.broadcast(x, src=root, group=group, async_op=True))
        if shape is not None:  # a team member that keeps nothing still has to take part
            sink = torch.empty(shape, dtype=o.out_spec.dtype, device=o.c.runtime.device)
            return Work(dist.broadcast(sink, src=root, group=group, async_op=True))
        buf, back = contiguous_out(env[out])
        handle = dist.broadcast(buf, src=root, group=group, async_op=True)
        return Work(handle, (lambda: back.copy_(buf)) if back is not None else None)

    return issue


@collective(comm_ops.ScatterOp)
def scatter(o: CommOp):
    axis, root, rank = o.attr("axis"), o.root, o.c.rank
    out_mesh = o.out_spec.sharding.mesh
    order, parts = o.mesh_order(out_mesh), len(out_mesh)
    held = rank in out_mesh
    shape = None if held or rank == root else o.static_local(o.out_spec, "output")
    group, inp, out, device = o.group, o.inp, o.out, o.c.runtime.device

    def issue(env: list) -> Work:
        sends = None
        if rank == root:
            chunks = env[inp].chunk(parts, axis)
            sends = [chunks[p].contiguous() if p >= 0 else torch.empty_like(chunks[0]) for p in order]
        if held:
            buf, back = contiguous_out(env[out])
        else:
            buf, back = (torch.empty_like(sends[0]) if sends else torch.empty(shape, dtype=o.out_spec.dtype, device=device)), None
        handle = dist.scatter(buf, sends, src=root, group=group, async_op=True)
        return Work(handle, (lambda: back.copy_(buf)) if back is not None else None)

    return issue


@collective(comm_ops.GatherOp)
def gather(o: CommOp):
    axis, root, rank = o.attr("axis"), o.root, o.c.rank
    in_mesh = o.in_spec.sharding.mesh
    order, parts = o.mesh_order(in_mesh), len(in_mesh)
    has_input = rank in in_mesh
    shape = None if has_input or rank == root else o.static_local(o.in_spec, "input")
    group, inp, out, device = o.group, o.inp, o.out, o.c.runtime.device

    def issue(env: list) -> Work:
        recv, back = None, []
        if rank == root:
            chunks = env[out].chunk(parts, axis)
            recv = []
            for p in order:
                if p < 0:
                    recv.append(torch.empty_like(chunks[0], memory_format=torch.contiguous_format))
                elif chunks[p].is_contiguous():
                    recv.append(chunks[p])
                else:
                    recv.append(torch.empty_like(chunks[p], memory_format=torch.contiguous_format))
                    back.append((recv[-1], chunks[p]))
        if has_input:
            send = env[inp].contiguous()
        elif recv is not None:
            send = torch.empty_like(recv[0])
        else:
            send = torch.empty(shape, dtype=o.in_spec.dtype, device=device)
        handle = dist.gather(send, recv, dst=root, group=group, async_op=True)
        return Work(handle, (lambda: [t.copy_(s) for s, t in back]) if back else None)

    return issue


@collective(comm_ops.ReduceOp)
def reduce(o: CommOp):
    axis, root, rank = o.attr("axis"), o.root, o.c.rank
    kind = get_str(o.op, "reduction")
    fn, op_ = local_reduce(kind), REDUCE_OPS[kind]
    has_input = rank in o.in_spec.sharding.mesh
    shape = None if has_input else o.static_local(o.out_spec, "output")
    fill = identity(kind, o.out_spec.dtype)
    group, inp, out, device, dtype = o.group, o.inp, o.out, o.c.runtime.device, o.out_spec.dtype

    def issue(env: list) -> Work:
        # A fresh buffer on every rank: backends may use a non-root's buffer as scratch.
        buf = fn(env[inp], axis) if has_input else torch.full(shape, fill, dtype=dtype, device=device)
        handle = dist.reduce(buf, dst=root, op=op_, group=group, async_op=True)
        target = env[out] if rank == root else None
        return Work(handle, (lambda: target.copy_(buf)) if target is not None else None)

    return issue


@collective(comm_ops.SendRecvOp)
def send_recv(o: CommOp):
    sender, receiver = o.team
    rank, inp, out = o.c.rank, o.inp, o.out
    if rank == sender:
        def issue_send(env: list) -> Work:
            return Work(dist.isend(env[inp].contiguous(), dst=receiver))

        return issue_send

    def issue_recv(env: list) -> Work:
        buf, back = contiguous_out(env[out])
        handle = dist.irecv(buf, src=sender)
        return Work(handle, (lambda: back.copy_(buf)) if back is not None else None)

    return issue_recv


def _peer(c: Compiler, op: ir.OpView) -> tuple[int, int, int]:
    peer = get_int(op, "peer")
    if peer >= c.runtime.world_size:
        raise c.error(op, f"peer {peer} is not another rank of the run (rank {c.rank} of {c.runtime.world_size})")
    c.runtime.comm  # the process group must exist before the step runs
    return peer, c.use(op.operation.operands[0]), c.define(op.operation.results[0])


def _to_self(c: Compiler, op: ir.OpView) -> Step:
    """A send/recv with this rank as its peer, reported when it runs: under an scf.if on
    the device index, every rank compiles the branches other ranks take."""
    message = f"{c.where(op)}: error: '{op.operation.name}' peer {c.rank} is this rank; send to or receive from another rank of the run (rank {c.rank} of {c.runtime.world_size})"

    def to_self(env: list) -> None:
        raise HirError(message)

    return to_self


@register_impls
class PointToPointImpls:
    @impl(comm_ops.SendOp)
    def send(self, c: Compiler, op: ir.OpView) -> Optional[Step]:
        peer, buf, out = _peer(c, op)
        if peer == c.rank:
            return _to_self(c, op)

        def send_step(env: list) -> None:
            env[out] = Work(dist.isend(env[buf].contiguous(), dst=peer))

        return send_step

    @impl(comm_ops.RecvOp)
    def recv(self, c: Compiler, op: ir.OpView) -> Optional[Step]:
        peer, buf, out = _peer(c, op)
        if peer == c.rank:
            return _to_self(c, op)

        def recv_step(env: list) -> None:
            target, back = contiguous_out(env[buf])
            handle = dist.irecv(target, src=peer)
            env[out] = Work(handle, (lambda: back.copy_(target)) if back is not None else None)

        return recv_step

    @impl(comm_ops.WaitOp, local=False)
    def wait(self, c: Compiler, op: ir.OpView) -> Optional[Step]:
        (work,) = c.uses(op)
        where = c.where(op)

        def wait_step(env: list) -> None:
            w = env[work]
            if w is None:  # the communication did not involve this rank
                return
            if w is WAITED:
                raise HirError(f"{where}: error: '{comm_ops.WaitOp.OPERATION_NAME}' waits on work that was already waited on")
            if w is UNSET:
                raise HirError(f"{where}: error: '{comm_ops.WaitOp.OPERATION_NAME}' waits on unknown work (no communication produced it)")
            w.wait()
            env[work] = WAITED

        return wait_step
