"""Handlers of the comm group: each collective runs on this rank's team through a backend,
``backends/process_group.py`` (``torch.distributed``: NCCL, Gloo) or, with ``backend =
"cuda"`` on GPU, ``backends/copy_engine.py`` (copy engines through peer buffers, for
allgather, broadcast and small all-reduces; the others fall back to the process group).
Ranks outside an op's team skip it (their work is None, and waiting on it does nothing). On
a multi-D mesh each rank runs the op with its own team (line of the mesh) on the 1-D view of
the buffers that line sees (``BufferSpec.project``). Point-to-point ``hir.send`` /
``hir.recv`` and ``hir.wait`` are here too.
"""

from collections.abc import Callable

import torch.distributed as dist
from torch_mlir import ir

from hir.dialect import comm as comm_ops
from hir.dialect import teams as team_ops
from hir.dialect.base import required_int
from hir.dialect.context import HirError
from hir.interpreter.backends import copy_engine, headers, process_group
from hir.interpreter.backends.collective import CommOp
from hir.interpreter.backends.delay import comm_delay
from hir.interpreter.backends.work import Work, contiguous_out, received
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.registry import impl, register_impls
from hir.interpreter.steps import UNSET, WAITED


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


def _register_collective(op_class: type, build: Callable[[CommOp], Callable[[list], Work]]) -> None:
    """The handler of ``op_class``: ``build`` (CommOp -> issue(env) -> Work) of the process
    group, or ``copy_engine.BUILDERS[op_class]`` with backend "cuda" on GPU unless that
    builder answers None for the op."""

    @impl(op_class, local=False)
    def handler(c: Compiler, op: ir.OpView) -> Step | None:
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
            mesh_axes = team_ops.team_mesh_axes(in_spec.placed, teams)
            assert mesh_axes is not None, "the verifier requires the teams to be lines of the input's mesh"
            in_spec, out_spec = in_spec.project(c.rank, mesh_axes), out_spec.project(c.rank, mesh_axes)
        checks = headers.for_op(
            c.where(op), op.operation.name, sorted(team), group, c.runtime.device, c.runtime.transfer_checks
        )
        info = CommOp(
            c, op, team, sorted(team), group, c.use(operands[0]), c.use(operands[1]), in_spec, out_spec, checks
        )
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


for _op_class, _build in process_group.BUILDERS.items():
    _register_collective(_op_class, _build)


def _peer(c: Compiler, op: ir.OpView) -> tuple[int, int, int]:
    peer = required_int(op, "peer")
    if peer >= c.runtime.world_size:
        raise c.error(op, f"peer {peer} is not another rank of the run (rank {c.rank} of {c.runtime.world_size})")
    _ = c.runtime.comm  # the process group must exist before the step runs
    return peer, c.use(op.operation.operands[0]), c.define(op.operation.results[0])


def _checks(c: Compiler, op: ir.OpView, peer: int) -> headers.Headers | None:
    """The header exchange of a send / recv with ``peer`` (on the world group), when on."""
    return headers.for_op(
        c.where(op),
        op.operation.name,
        sorted({c.rank, peer}),
        dist.group.WORLD,
        c.runtime.device,
        c.runtime.transfer_checks,
    )


def _to_self(c: Compiler, op: ir.OpView) -> Step:
    """A send/recv with this rank as its peer, reported when it runs: under an scf.if on
    the device index, every rank compiles the branches other ranks take."""
    message = (
        f"{c.where(op)}: error: '{op.operation.name}' peer {c.rank} is this rank; send to "
        f"or receive from another rank of the run (rank {c.rank} of {c.runtime.world_size})"
    )

    def to_self(env: list) -> None:
        raise HirError(message)

    return to_self


@register_impls
class PointToPointImpls:
    @impl(comm_ops.SendOp)
    def send(self, c: Compiler, op: ir.OpView) -> Step | None:
        peer, buf, out = _peer(c, op)
        if peer == c.rank:
            return _to_self(c, op)

        checks = _checks(c, op, peer)

        def send_step(env: list) -> None:
            x = env[buf].contiguous()
            sent = checks.send(x, peer) if checks is not None else []
            env[out] = Work(sent + [dist.isend(x, dst=peer)])

        return send_step

    @impl(comm_ops.RecvOp)
    def recv(self, c: Compiler, op: ir.OpView) -> Step | None:
        peer, buf, out = _peer(c, op)
        if peer == c.rank:
            return _to_self(c, op)

        checks, rank = _checks(c, op, peer), c.rank

        def recv_step(env: list) -> None:
            target, back = contiguous_out(env[buf])
            if checks is not None:
                checks.receive(target, peer, rank)
            handle = dist.irecv(target, src=peer)
            env[out] = received(handle, target, back)

        return recv_step

    @impl(comm_ops.WaitOp, local=False)
    def wait(self, c: Compiler, op: ir.OpView) -> Step | None:
        (work,) = c.uses(op)
        where = c.where(op)

        def wait_step(env: list) -> None:
            w = env[work]
            if w is None:  # the communication did not involve this rank
                return
            if w is WAITED:
                raise HirError(
                    f"{where}: error: '{comm_ops.WaitOp.OPERATION_NAME}' waits on work that was already waited on"
                )
            if w is UNSET:
                raise HirError(
                    f"{where}: error: '{comm_ops.WaitOp.OPERATION_NAME}' "
                    "waits on unknown work (no communication produced it)"
                )
            w.wait()
            env[work] = WAITED

        return wait_step
