"""Handlers of the streams group: pool streams by index, the current stream and
stream-to-stream synchronization (the pool itself: ``runtime.StreamPool``)."""

from torch_mlir import ir

from hir.dialect import GetCurrentStreamOp, GetStreamOp, SetCurrentStreamOp, SynchronizeOp
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.registry import impl, register_impls


@register_impls
class StreamImpls:
    @impl(GetCurrentStreamOp)
    def get_current_stream(self, c: Compiler, op: ir.OpView) -> Step | None:
        out, current = c.define(op.operation.results[0]), c.runtime.streams.current

        def get_current_step(env: list) -> None:
            env[out] = current()

        return get_current_step

    @impl(GetStreamOp)
    def get_stream(self, c: Compiler, op: ir.OpView) -> Step | None:
        (index,) = c.uses(op)
        out, get = c.define(op.operation.results[0]), c.runtime.streams.get

        def get_stream_step(env: list) -> None:
            env[out] = get(env[index])

        return get_stream_step

    @impl(SetCurrentStreamOp)
    def set_current_stream(self, c: Compiler, op: ir.OpView) -> Step | None:
        (stream,) = c.uses(op)
        set_current = c.runtime.streams.set_current

        def set_current_step(env: list) -> None:
            set_current(env[stream])

        return set_current_step

    @impl(SynchronizeOp)
    def synchronize(self, c: Compiler, op: ir.OpView) -> Step | None:
        (stream,) = c.uses(op)
        sync = c.runtime.streams.synchronize

        def synchronize_step(env: list) -> None:
            sync(env[stream])

        return synchronize_step
