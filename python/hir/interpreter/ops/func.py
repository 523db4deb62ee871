"""Handler of the func group (upstream): ``func.call``; a call of a kernel segment (a
``func.func {hir.kernel}``) runs its body as one unit, optionally through ``torch.compile``."""

from typing import Callable, Optional

import torch
from torch_mlir import ir
from torch_mlir.dialects import func

from hir.dialect.compute import KERNEL_ATTR, ONCE_ATTR
from hir.interpreter.ops.once import once_step
from hir.interpreter.plan import Compiler, FunctionPlan, Step
from hir.interpreter.registry import impl, register_impls


@register_impls
class FuncImpls:
    @impl(func.CallOp)
    def call(self, c: Compiler, op: ir.OpView) -> Optional[Step]:
        callee_name = ir.FlatSymbolRefAttr(op.operation.attributes["callee"]).value
        plan = c.function(callee_name, at=op)
        func = c.functions[callee_name]
        args = c.uses(op)
        outs = c.call_results(op)  # its results, then the destinations it binds
        run = plan.call
        if c.runtime.compile_kernels and KERNEL_ATTR in func.operation.attributes:
            run = compiled_unit(plan)
        if ONCE_ATTR in op.operation.attributes:  # parameter work, cached (ops/once.py)
            return once_step(run, args, outs, c.runtime.device)

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
