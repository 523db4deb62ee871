"""Handlers of the control group: ``hir.for`` (its body compiled once into a step list run per
index) and ``hir.stream_for`` (the same, each iteration on its pool stream, as
``hir-expand-stream-loops`` writes it). ``hir.yield`` and ``func.return`` are block
terminators the compiler consumes."""

from torch_mlir import ir

from hir.dialect import ForOp, StreamForOp
from hir.dialect.context import HirError
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.registry import impl, register_impls
from hir.interpreter.steps import run_steps


@register_impls
class ControlImpls:
    @impl(ForOp)
    def for_loop(self, c: Compiler, op: ir.OpView) -> Step | None:
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

    @impl(StreamForOp)
    def stream_for_loop(self, c: Compiler, op: ir.OpView) -> Step | None:
        lb, ub, st, user, *slots = c.uses(op)
        block = op.regions[0].blocks[0]
        iv, slot = c.define(block.arguments[0]), c.define(block.arguments[1])
        body = c.block(list(block.operations)[:-1])
        where = c.where(op)
        streams = c.runtime.streams
        get, set_current, synchronize = streams.get, streams.set_current, streams.synchronize
        count = slots[0] if slots else None

        def stream_for_step(env: list) -> None:
            step = env[st]
            if step <= 0:
                raise HirError(f"{where}: error: '{StreamForOp.OPERATION_NAME}' step must be positive, got {step}")
            user_stream = env[user]
            indices = range(env[lb], env[ub], step)
            for i in indices:  # every pool stream waits for the work issued before the loop
                set_current(get(i))
                synchronize(user_stream)
            for i in indices:
                env[slot] = i if count is None else i % env[count]
                stream = get(env[slot])
                set_current(stream)
                run_steps(body, env, iv, (i,))
                set_current(user_stream)
                synchronize(stream)

        return stream_for_step
