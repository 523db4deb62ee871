"""Handler of the control group: ``hir.for`` (its body compiled once into a step list run per
index). ``hir.yield`` and ``func.return`` are block terminators the compiler consumes."""

from typing import Optional

from torch_mlir import ir

from hir.dialect import ForOp
from hir.dialect.context import HirError
from hir.interpreter.plan import Compiler, Step, runtime_error
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
            # run_steps inlined, one try for the whole loop: a stream loop runs ~10 small steps
            # an iteration, and a call plus a try per iteration is a measurable part of them.
            body_step = None
            try:
                for i in range(env[lb], env[ub], step):
                    env[iv] = i
                    for body_step in body:
                        body_step(env)
            except HirError:
                raise
            except Exception as err:
                raise runtime_error(body_step, env, err) from err

        return for_step
