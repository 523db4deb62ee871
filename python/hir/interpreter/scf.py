"""Structured control flow and fills: ``scf.if`` (nvFuser's IfThenElse), ``scf.for`` with
``iter_args``, ``scf.yield`` (consumed by its parent: no step), and upstream ``linalg.fill``
on a memref (a buffer set to a host scalar, e.g. the loop index cast to a float).

Why ``linalg.fill`` and no ``hir.fill`` / ``hir.iota``: the upstream op on memrefs already
is destination-passing style and verified; an iota (0..n-1) is a kernel segment
(``torch.aten.arange`` in a ``func.func {hir.kernel}``), the one model for element-wise
compute (issue 13).

Both branches and the loop body are compiled once into step lists; at run time a branch is
one Python ``if`` and the yielded values are copied into the op's result slots."""

from typing import Optional

from torch_mlir import ir

from hir.core import HirError
from hir.interpreter.buffers import is_memref
from hir.interpreter.plan import Compiler, Step, handles, run_steps


def _region(c: Compiler, region: ir.Region, what: str, op: ir.OpView) -> tuple[list[Step], list[int]]:
    """A one-block region's steps and the slots its ``scf.yield`` yields."""
    blocks = list(region.blocks)
    if not blocks:
        return [], []
    ops = list(blocks[0].operations)
    if not ops or ops[-1].operation.name != "scf.yield":
        raise c.error(op, f"{what} must end with scf.yield")
    return c.block(ops[:-1]), c.uses(ops[-1])


@handles("scf.if", local=False)
def if_op(c: Compiler, op: ir.OpView) -> Optional[Step]:
    (cond,) = c.uses(op)
    then_steps, then_values = _region(c, op.regions[0], "the then region", op)
    else_steps, else_values = _region(c, op.regions[1], "the else region", op)
    outs = [c.define(r) for r in op.operation.results]

    def if_step(env: list) -> None:
        if env[cond]:
            run_steps(then_steps, env)
            values = then_values
        else:
            run_steps(else_steps, env)
            values = else_values
        for slot, value in zip(outs, values):
            env[slot] = env[value]

    return if_step


@handles("scf.for", local=False)
def for_op(c: Compiler, op: ir.OpView) -> Optional[Step]:
    lb, ub, st, *inits = c.uses(op)
    block = op.regions[0].blocks[0]
    iv, *carried = [c.define(arg) for arg in block.arguments]
    body, yielded = _region(c, op.regions[0], "the body", op)
    outs = [c.define(r) for r in op.operation.results]
    where = c.where(op)

    def for_step(env: list) -> None:
        step = env[st]
        if step <= 0:
            raise HirError(f"{where}: error: 'scf.for' step must be positive, got {step}")
        for slot, init in zip(carried, inits):
            env[slot] = env[init]
        for i in range(env[lb], env[ub], step):
            env[iv] = i
            run_steps(body, env)
            for slot, value in zip(carried, yielded):
                env[slot] = env[value]
        for slot, value in zip(outs, carried):
            env[slot] = env[value]

    return for_step


@handles("linalg.fill")
def fill(c: Compiler, op: ir.OpView) -> Optional[Step]:
    operands = op.operation.operands
    if len(operands) != 2 or op.operation.results or not is_memref(operands[1].type):
        raise c.error(op, "runs on a scalar and a memref buffer only (ins(%value) outs(%buffer), no tensor result)")
    value, buffer = c.uses(op)
    cast = float if c.spec(operands[1]).dtype.is_floating_point else int

    def fill_step(env: list) -> None:
        env[buffer].fill_(cast(env[value]))

    return fill_step
