"""Handler of the control group: ``hir.for`` (its body compiled once into a step list run per
index). ``hir.yield`` and ``func.return`` are block terminators the compiler consumes."""

from typing import Optional

from torch_mlir import ir

from hir.dialect import ForOp
from hir.dialect.context import HirError
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.steps import run_steps
from hir.interpreter.registry import impl, register_impls


@register_impls
class ControlImpls:
    @impl(ForOp)
    def for_loop(self, c: Compiler, op: ir.OpView) -> Optional[Step]:
        lb, ub, st = c.uses(op)
        block = op.regions[0].blocks[0]
        iv = c.define(block.arguments[0])
        body = c.block(list(block.operations)[:-1])
        where = c.where(op)

        def for_step(env: list) -> None:
            step = env[st]
            if step <= 0:
                raise HirError(f"{where}: error: '{ForOp.OPERATION_NAME}' step must be positive, got {step}")
            run_steps(body, env, iv, range(env[lb], env[ub], step))

        return for_step
