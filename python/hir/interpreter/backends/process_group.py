"""The process-group backend: each collective through ``torch.distributed`` (NCCL on GPUs,
Gloo on CPU), with the axis conventions of ``hir.dialect.comm``: buffers have global shapes,
each rank holds its local shard.

Each builder takes a collective's compile-time facts (:class:`~hir.interpreter.backends.
collective.CommOp`) and returns ``issue(env) -> Work``: the op issued asynchronously, its
:class:`Work` waited on by ``hir.wait`` (on GPU, NCCL's ``wait`` makes the current stream
wait; the host does not block), which then runs the op's finishing copies. Non-contiguous
buffers (views) are staged: inputs are copied to contiguous tensors before the op, outputs
received into contiguous tensors and copied back at the wait (seed 000). Team members are
global ranks; torch's sub-groups order their members by rank, so lists indexed by group rank
are permuted to mesh order here. Gloo has no reduce_scatter: it is an all_reduce whose wait
keeps this rank's chunk. An all-reduce whose output is bound to its input
(``interpreter/result_in_input.py``) reduces that input in place.
"""

from collections.abc import Callable

import torch
import torch.distributed as dist
from torch.distributed.distributed_c10d import _coalescing_manager

from hir.dialect import comm as comm_ops
from hir.dialect.base import required_str
from hir.dialect.context import HirError
from hir.interpreter.backends.collective import CommOp
from hir.interpreter.backends.work import REDUCE_OPS, Work, contiguous_out, identity, local_reduce, received
from hir.interpreter.buffers import BufferSpec

# At most this many calls for a collective on an inner axis (one call a row, below); with
# more rows the list form runs instead (one staged call: per-call launches would dominate
# small rows; the bound is a guess, no run has measured where the two cross).
MAX_ROW_CALLS = 16


def _rows(t: torch.Tensor, axis: int) -> list[torch.Tensor] | None:
    """The flat rows of contiguous ``t`` over the axes before ``axis`` (one row when there are
    none), in each of which the equal chunks along ``axis`` are consecutive blocks, in order;
    None if ``t`` is not contiguous or has more than MAX_ROW_CALLS rows.

    NCCL's single-tensor collectives read / write such a row in place, so a collective on an
    inner axis (seed 003's whole form gathers [S, D, m, K] on axis 1) is one call a row on
    the same NCCL stream. The list form would copy every part into staging buffers and back:
    two extra passes over the whole tensor, which made the whole form slower than the
    chunked one (RESULTS.md, 4x H200)."""
    outer = 1
    for extent in t.shape[:axis]:
        outer *= extent
    if not t.is_contiguous() or outer > MAX_ROW_CALLS:
        return None
    return list(t.reshape(outer, -1).unbind(0)) if outer else None


def _one_launch(group: dist.ProcessGroup | None, collective: Callable, rows: list[tuple]) -> list:
    """The handles of ``collective(*row)`` (async) for every row, issued as one NCCL group
    (``ncclGroupStart`` / ``End``: torch's coalescing manager), so a collective's row calls
    cost one launch (RESULTS.md, 4x H200: four separate row calls of the whole
    reduce-scatter took it above the single sequential call)."""
    if len(rows) == 1:
        return [collective(*rows[0])]
    with _coalescing_manager(group, async_ops=True) as manager:
        for row in rows:
            collective(*row)
    return manager.works


def allgather(o: CommOp):
    axis = o.attr("axis")
    order = o.mesh_order(o.in_spec.placed.mesh)
    parts = len(order)
    shape = o.static_local(o.out_spec, "output") if not o.out_spec.held else None
    group, inp, out = o.group, o.inp, o.out
    if o.in_spec.uneven:
        return _allgather_uneven(o, axis, order, shape)

    gloo = o.c.runtime.comm.is_gloo(group)
    in_order = order == list(range(parts))

    def gather(row: torch.Tensor, send: torch.Tensor):
        return dist.all_gather_into_tensor(row, send, group=group, async_op=True)

    def issue(env: list) -> Work:
        x = env[inp].contiguous()
        o.check(x)
        target = env[out] if shape is None else torch.empty(shape, dtype=x.dtype, device=x.device)
        rows = _rows(target, axis) if not gloo and in_order else None
        if rows is not None:
            sends = x.reshape(len(rows), -1).unbind(0)
            return Work(_one_launch(group, gather, list(zip(rows, sends))))
        chunks = target.chunk(parts, axis)
        recv = [chunks[p] for p in order]
        staged = [t if t.is_contiguous() else torch.empty_like(t, memory_format=torch.contiguous_format) for t in recv]
        handle = dist.all_gather(staged, x, group=group, async_op=True)
        back = [(s, t) for s, t in zip(staged, recv) if s is not t]
        return Work(handle, (lambda: [t.copy_(s) for s, t in back]) if back else None)

    return issue


def _allgather_uneven(o: CommOp, axis: int, order: list[int], shape: list[int] | None):
    """Parts of different extents: every member sends its part padded to the widest, and
    the wait copies each received part's rows into place (collectives move equal sizes)."""
    bounds = o.in_spec.placed.bounds(axis)
    assert bounds is not None, "an uneven placement gives the boundaries of every split axis"
    where = [(bounds[p], bounds[p + 1] - bounds[p]) for p in order]  # per group rank: start, extent
    widest = max(n for _, n in where)
    group, inp, out = o.group, o.inp, o.out

    def issue(env: list) -> Work:
        x = env[inp]
        padded = list(x.shape)
        padded[axis] = widest
        send = x.new_zeros(padded)
        send.narrow(axis, 0, x.shape[axis]).copy_(x)
        o.check(send)
        staged = [torch.empty_like(send) for _ in where]
        target = env[out] if shape is None else torch.empty(shape, dtype=x.dtype, device=x.device)
        handle = dist.all_gather(staged, send, group=group, async_op=True)

        def place() -> None:
            for got, (start, extent) in zip(staged, where):
                target.narrow(axis, start, extent).copy_(got.narrow(axis, 0, extent))

        return Work(handle, place)

    return issue


def allreduce(o: CommOp):
    axis, kind = o.attr("axis"), required_str(o.op, "reduction")
    fn, op_ = local_reduce(kind), REDUCE_OPS[kind]
    held, group, inp, out = o.out_spec.held, o.group, o.inp, o.out
    if o.c.bound_operands(o.op):  # the output is the dead input, reduced in place (result_in_input.py)

        def issue_in_place(env: list) -> Work:
            buf = env[out] = env[inp].squeeze(axis)
            o.check(buf)
            return Work(dist.all_reduce(buf, op=op_, group=group, async_op=True))

        return issue_in_place

    def issue(env: list) -> Work:
        target = env[out] if held else None
        if target is None:
            buf, back = fn(env[inp], axis), None
        else:
            buf, back = contiguous_out(target)
            fn(env[inp], axis, out=buf)
        o.check(buf)
        handle = dist.all_reduce(buf, op=op_, group=group, async_op=True)
        return received(handle, buf, back)

    return issue


def reduce_scatter(o: CommOp):
    axis, kind = o.attr("axis"), required_str(o.op, "reduction")
    scatter = o.attr("scatter_axis")
    scatter -= 1 if axis < scatter else 0  # the axis in the reduced tensor
    out_mesh = o.out_spec.placed.mesh
    order, parts = o.mesh_order(out_mesh), len(out_mesh)
    fn, op_, group, inp, out = local_reduce(kind), REDUCE_OPS[kind], o.group, o.inp, o.out
    gloo = o.c.runtime.comm.is_gloo(group)
    position = out_mesh.index(o.c.rank) if o.c.rank in out_mesh else None

    in_order = order == list(range(parts))

    def scatter_row(out_row: torch.Tensor, row: torch.Tensor):
        return dist.reduce_scatter_tensor(out_row, row, op=op_, group=group, async_op=True)

    def issue(env: list) -> Work:
        x = env[inp]
        target = env[out] if position is not None else None
        if gloo:  # all_reduce the whole tensor (a fresh sum: reduced in place), keep our chunk at the wait
            reduced = fn(x, axis)
            o.check(reduced)
            handle = dist.all_reduce(reduced, op=op_, group=group, async_op=True)
            if target is None:
                return Work(handle)
            return Work(handle, lambda: target.copy_(reduced.chunk(parts, scatter)[position]))
        # NCCL only reads its input: with one block of the reduced axis here (the usual
        # split) the sum is the block itself, no copy
        reduced = x.squeeze(axis) if x.shape[axis] == 1 else fn(x, axis)
        o.check(reduced)
        chunks = reduced.chunk(parts, scatter)
        rows = _rows(reduced, scatter) if in_order else None
        if rows is not None:
            target = target if target is not None else torch.empty_like(chunks[0])
            buf, back = contiguous_out(target)
            outs = buf.reshape(len(rows), -1).unbind(0)
            return received(_one_launch(group, scatter_row, list(zip(outs, rows))), buf, back)
        sends = [chunks[p].contiguous() for p in order]
        if target is None:
            target = torch.empty_like(sends[0])
        buf, back = contiguous_out(target)
        handle = dist.reduce_scatter(buf, sends, op=op_, group=group, async_op=True)
        return received(handle, buf, back)

    return issue


def broadcast(o: CommOp):
    root, rank = o.root, o.c.rank
    group, inp, out, held = o.group, o.inp, o.out, o.out_spec.held
    shape = None if held or rank == root else o.static_local(o.out_spec, "output")
    where = o.c.where(o.op)

    def issue(env: list) -> Work:
        if rank == root:
            x = env[inp]
            if x is None:
                raise HirError(
                    f"{where}: error: '{comm_ops.BroadcastOp.OPERATION_NAME}' root {root} does not hold the input"
                )
            x = x.contiguous()
            o.check(x)
            if held:
                env[out].copy_(x)
            return Work(dist.broadcast(x, src=root, group=group, async_op=True))
        if shape is not None:  # a team member that keeps nothing still has to take part
            sink = torch.empty(shape, dtype=o.out_spec.dtype, device=o.c.runtime.device)
            o.check(sink)
            return Work(dist.broadcast(sink, src=root, group=group, async_op=True))
        buf, back = contiguous_out(env[out])
        o.check(buf)
        handle = dist.broadcast(buf, src=root, group=group, async_op=True)
        return received(handle, buf, back)

    return issue


def _rooted_layout(o: CommOp, spec: BufferSpec, what: str) -> tuple:
    """Of the split side (``spec``: scatter's output, gather's input) of a rooted collective:
    (mesh position of each group rank, the parts, whether this rank holds one, the static
    local shape a rank with no part and no root role still moves, else None)."""
    mesh = spec.placed.mesh
    here = o.c.rank in mesh
    shape = None if here or o.c.rank == o.root else o.static_local(spec, what)
    return o.mesh_order(mesh), len(mesh), here, shape


def scatter(o: CommOp):
    axis, root, rank = o.attr("axis"), o.root, o.c.rank
    order, parts, held, shape = _rooted_layout(o, o.out_spec, "output")
    group, inp, out, device = o.group, o.inp, o.out, o.c.runtime.device

    def issue(env: list) -> Work:
        sends = None
        if rank == root:
            chunks = env[inp].chunk(parts, axis)
            sends = [chunks[p].contiguous() if p >= 0 else torch.empty_like(chunks[0]) for p in order]
        if held:
            buf, back = contiguous_out(env[out])
        else:
            buf, back = (
                (torch.empty_like(sends[0]) if sends else torch.empty(shape, dtype=o.out_spec.dtype, device=device)),
                None,
            )
        o.check(buf)
        handle = dist.scatter(buf, sends, src=root, group=group, async_op=True)
        return received(handle, buf, back)

    return issue


def gather(o: CommOp):
    axis, root, rank = o.attr("axis"), o.root, o.c.rank
    order, parts, has_input, shape = _rooted_layout(o, o.in_spec, "input")
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
        o.check(send)
        handle = dist.gather(send, recv, dst=root, group=group, async_op=True)
        return Work(handle, (lambda: [t.copy_(s) for s, t in back]) if back else None)

    return issue


def reduce(o: CommOp):
    axis, root, rank = o.attr("axis"), o.root, o.c.rank
    kind = required_str(o.op, "reduction")
    fn, op_ = local_reduce(kind), REDUCE_OPS[kind]
    has_input = rank in o.in_spec.placed.mesh
    shape = None if has_input else o.static_local(o.out_spec, "output")
    fill = identity(kind, o.out_spec.dtype)
    group, inp, out, device, dtype = o.group, o.inp, o.out, o.c.runtime.device, o.out_spec.dtype

    def issue(env: list) -> Work:
        # A fresh buffer on every rank: backends may use a non-root's buffer as scratch.
        buf = fn(env[inp], axis) if shape is None else torch.full(shape, fill, dtype=dtype, device=device)
        o.check(buf)
        handle = dist.reduce(buf, dst=root, op=op_, group=group, async_op=True)
        target = env[out] if rank == root else None
        return Work(handle, (lambda: target.copy_(buf)) if target is not None else None)

    return issue


def send_recv(o: CommOp):
    sender, receiver = o.team
    rank, inp, out = o.c.rank, o.inp, o.out
    if rank == sender:

        def issue_send(env: list) -> Work:
            x = env[inp].contiguous()
            sent = o.headers.send(x, receiver) if o.headers is not None else []
            return Work(sent + [dist.isend(x, dst=receiver)])

        return issue_send

    def issue_recv(env: list) -> Work:
        buf, back = contiguous_out(env[out])
        if o.headers is not None:
            o.headers.receive(buf, sender, rank)
        handle = dist.irecv(buf, src=sender)
        return received(handle, buf, back)

    return issue_recv


BUILDERS = {
    comm_ops.AllgatherOp: allgather,
    comm_ops.AllreduceOp: allreduce,
    comm_ops.ReduceScatterOp: reduce_scatter,
    comm_ops.BroadcastOp: broadcast,
    comm_ops.ScatterOp: scatter,
    comm_ops.GatherOp: gather,
    comm_ops.ReduceOp: reduce,
    comm_ops.SendRecvOp: send_recv,
}
