"""Handlers of upstream structured control flow: ``scf.if`` (nvFuser's IfThenElse),
``scf.for`` with ``iter_args``, and ``scf.yield`` (consumed by its parent: no step).

Both branches and the loop body are compiled once into step lists; at run time a branch is
one Python ``if`` and the yielded values are copied into the op's result slots."""

from torch_mlir import ir
from torch_mlir.dialects import scf

from hir.dialect.context import HirError
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.registry import impl, register_impls
from hir.interpreter.steps import run_steps


def _region(c: Compiler, region: ir.Region, what: str, op: ir.OpView) -> tuple[list[Step], list[int]]:
    """A one-block region's steps and the slots its ``scf.yield`` yields."""
    blocks = list(region.blocks)
    if not blocks:
        return [], []
    ops = list(blocks[0].operations)
    if not ops or ops[-1].operation.name != scf.YieldOp.OPERATION_NAME:
        raise c.error(op, f"{what} must end with {scf.YieldOp.OPERATION_NAME}")
    return c.block(ops[:-1]), c.uses(ops[-1])


@register_impls
class ScfImpls:
    @impl(scf.IfOp, local=False)
    def if_op(self, c: Compiler, op: ir.OpView) -> Step | None:
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

    @impl(scf.ForOp, local=False)
    def for_op(self, c: Compiler, op: ir.OpView) -> Step | None:
        lb, ub, st, *inits = c.uses(op)
        block = op.regions[0].blocks[0]
        iv, *carried = [c.define(arg) for arg in block.arguments]
        body, yielded = _region(c, op.regions[0], "the body", op)
        outs = [c.define(r) for r in op.operation.results]
        where = c.where(op)

        def for_step(env: list) -> None:
            step = env[st]
            if step <= 0:
                raise HirError(f"{where}: error: '{scf.ForOp.OPERATION_NAME}' step must be positive, got {step}")
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
