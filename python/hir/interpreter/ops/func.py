"""Handler of the func group (upstream): ``func.call``; a call of a kernel segment (a
``func.func {hir.kernel}``) runs its body as one unit, compiled by inductor where
``compile_kernels`` says so (:mod:`hir.interpreter.kernels`), unless it is part of a
compiled compute region (:mod:`hir.interpreter.regions`) or of parameter work (a ``hir.once``
callee, built op by op: :attr:`Compiler.eager`). An eager kernel segment is inlined:
its steps run in the caller's plan (:meth:`Compiler.inline`)."""

from torch_mlir import ir
from torch_mlir.dialects import func

from hir.dialect import WorkType
from hir.dialect.compute import KERNEL_ATTR, ONCE_ATTR
from hir.interpreter.kernels import compiled_segment, wants_compile
from hir.interpreter.ops.once import once_step
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.registry import impl, register_impls


@register_impls
class FuncImpls:
    @impl(func.CallOp)
    def call(self, c: Compiler, op: ir.OpView) -> Step | list[Step]:
        callee_name = ir.FlatSymbolRefAttr(op.operation.attributes["callee"]).value
        callee = c.functions.get(callee_name)
        runtime = c.runtime
        kernel = callee is not None and KERNEL_ATTR in callee.operation.attributes
        once = ONCE_ATTR in op.operation.attributes
        compiled = (
            callee is not None
            and kernel
            and not c.in_region
            and not c.eager
            and wants_compile(runtime.compile_kernels, runtime.device, callee.operation)
        )
        returns_work = any(isinstance(r.type, WorkType) for r in op.operation.results)
        if kernel and not once and not compiled and runtime.memory is None and not returns_work:
            # An eager kernel segment runs in the caller's env (a tracked run counts the
            # buffers the call binds in its own step; a returned work may be one the
            # program completes at exit, which the call's step records).
            return c.inline(callee_name, op)
        plan = c.function(callee_name, at=op, eager=once)  # parameter work: run once, not worth a compile
        args = c.uses(op)
        outs = c.call_results(op)  # its results, then the destinations it binds
        run = (
            compiled_segment(plan.call, f"kernel segment @{callee_name}", plan.location, runtime.kernel_compile)
            if compiled
            else plan.call
        )
        if once:  # parameter work, cached (ops/once.py)
            return once_step(run, args, outs, runtime)

        def call_step(env: list) -> None:
            results = run([env[a] for a in args])
            for slot, value in zip(outs, results):
                env[slot] = value

        return call_step
