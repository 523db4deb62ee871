"""Handlers of the views group (``hir.alias_select``, ``hir.alias_chunk``): torch views of
the input, recorded as aliases so deallocating the input kills them too."""

from typing import Optional

from torch_mlir import ir

from hir.dialect import AliasChunkOp, AliasSelectOp
from hir.dialect.base import get_int
from hir.dialect.context import HirError
from hir.interpreter.buffers import fmt_shape
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.registry import impl, register_impls


def _view(c: Compiler, op: ir.OpView) -> tuple:
    """A view op's (input slot, index slot, result slot aliasing the input, error prefix
    naming the op and its location, the input's name)."""
    source, index = op.operation.operands
    src, idx = c.use(source), c.use(index)
    out = c.define(op.operation.results[0])
    c.add_alias(src, out)
    return src, idx, out, f"{c.where(op)}: error: '{op.operation.name}'", source.get_name()


@register_impls
class ViewImpls:
    @impl(AliasSelectOp)
    def alias_select(self, c: Compiler, op: ir.OpView) -> Optional[Step]:
        """``input.select(axis, index)``: a view, so writes through it land in the input."""
        axis = get_int(op, "axis")
        src, idx, out, error, name = _view(c, op)

        def select_step(env: list) -> None:
            t, i = env[src], env[idx]
            if not 0 <= i < t.shape[axis]:
                raise HirError(f"{error} index {i} is out of range for axis {axis} of {name} (local shape {fmt_shape(t.shape)})")
            env[out] = t.select(axis, i)

        return select_step

    @impl(AliasChunkOp)
    def alias_chunk(self, c: Compiler, op: ir.OpView) -> Optional[Step]:
        """``input.chunk(chunks, axis)[index]`` (equal parts): a view, like alias_select's."""
        axis, chunks = get_int(op, "axis"), get_int(op, "chunks")
        src, idx, out, error, name = _view(c, op)

        def chunk_step(env: list) -> None:
            t, i = env[src], env[idx]
            extent = t.shape[axis]
            if extent % chunks or not 0 <= i < chunks:
                problem = f"index {i} is out of range for {chunks} chunks" if extent % chunks == 0 else f"axis {axis} of extent {extent} does not divide into {chunks} chunks"
                raise HirError(f"{error} {problem} of {name} (local shape {fmt_shape(t.shape)})")
            size = extent // chunks
            env[out] = t.narrow(axis, i * size, size)

        return chunk_step
