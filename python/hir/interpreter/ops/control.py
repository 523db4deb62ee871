"""Control: ``hir.for`` loops and ``func.call`` (kernel segments run as one unit, optionally
through ``torch.compile``). ``hir.yield`` and ``func.return`` are block terminators that the
compiler consumes; they have no step."""

from typing import Callable, Optional

import torch
from torch_mlir import ir

from hir.core import HirError
from hir.dialect.compute import KERNEL_ATTR
from hir.interpreter.plan import Compiler, FunctionPlan, Step, handles, run_steps


@handles("hir.for")
def for_loop(c: Compiler, op: ir.OpView) -> Optional[Step]:
    lb, ub, st = c.uses(op)
    block = op.regions[0].blocks[0]
    iv = c.define(block.arguments[0])
    body = c.block(list(block.operations)[:-1])
    where = c.where(op)

    def for_step(env: list) -> None:
        step = env[st]
        if step <= 0:
            raise HirError(f"{where}: error: 'hir.for' step must be positive, got {step}")
        for i in range(env[lb], env[ub], step):
            env[iv] = i
            run_steps(body, env)

    return for_step


@handles("func.call")
def call(c: Compiler, op: ir.OpView) -> Optional[Step]:
    callee_name = ir.FlatSymbolRefAttr(op.operation.attributes["callee"]).value
    plan = c.function(callee_name, at=op)
    func = c.functions[callee_name]
    args = c.uses(op)
    outs = [c.define(r) for r in op.operation.results]
    run = plan.call
    if c.runtime.compile_kernels and KERNEL_ATTR in func.operation.attributes:
        run = compiled_unit(plan)

    def call_step(env: list) -> None:
        results = run([env[a] for a in args])
        for slot, value in zip(outs, results):
            env[slot] = value

    return call_step


def compiled_unit(plan: FunctionPlan) -> Callable[[list], list]:
    """The kernel segment as one ``torch.compile``d function. Its steps write their outputs
    in place, which torch.compile supports as input mutation."""

    def unit(*args):
        return plan.call(list(args))

    compiled = torch.compile(unit, dynamic=False)
    return lambda args: compiled(*args)
