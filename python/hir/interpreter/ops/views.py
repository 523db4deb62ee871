"""Handlers of the views group: ``hir.alias_select``, ``hir.alias_chunk``,
``hir.alias_broadcast`` (torch ``expand``), ``hir.alias_reshape`` (torch ``view``) and
``hir.alias_stack_shards`` (torch ``unsqueeze`` of the local shard), and the upstream views ``memref.subview``
(static or dynamic offsets, sizes and strides; rank-reducing), ``memref.collapse_shape`` and
``memref.expand_shape`` (torch ``view``).

Every view is a torch view of its input, recorded as an alias so deallocating the input
kills the view too. Shapes are local: on a split buffer a view must keep the split axis
whole (subview) and move it by the view's dim map (collapse / expand / alias_reshape:
:mod:`hir.dialect.view_splits`), so the local shard of the result is a
view of the local shard of the source."""

import torch
from torch_mlir import ir
from torch_mlir.dialects import memref

from hir.dialect import AliasBroadcastOp, AliasChunkOp, AliasReshapeOp, AliasSelectOp, AliasStackShardsOp
from hir.dialect.base import DYNAMIC, get_int, required_i64_array
from hir.dialect.context import HirError
from hir.dialect.view_splits import reshaped
from hir.interpreter.buffers import fmt_shape
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.registry import impl, register_impls


def _aliasing_result(c: Compiler, op: ir.OpView) -> tuple[int, int]:
    """(source slot, result slot) with the result recorded as a view of the source."""
    src = c.use(op.operation.operands[0])
    out = c.define(op.operation.results[0])
    c.add_alias(src, out)
    return src, out


def _view(c: Compiler, op: ir.OpView) -> tuple:
    """An indexed view op's (input slot, index slot, result slot aliasing the input, error
    prefix naming the op and its location, the input's name)."""
    source, index = op.operation.operands
    src, out = _aliasing_result(c, op)
    return src, c.use(index), out, f"{c.where(op)}: error: '{op.operation.name}'", c.name(source)


def _mixed(c: Compiler, op: ir.OpView, static_name: str, dynamic: list) -> list:
    """A static_* array with its DYNAMIC entries replaced by the slots of ``dynamic`` values,
    as [(is_slot, int)]."""
    values = iter(dynamic)
    out = []
    for v in required_i64_array(op, static_name):
        if v == DYNAMIC:
            value = next(values)
            constant = c.constant(value)
            out.append((False, constant) if isinstance(constant, int) else (True, c.use(value)))
        else:
            out.append((False, v))
    return out


def _dropped_axes(sizes: list, result_shape: list) -> set:
    """The extent-1 axes a rank-reducing subview drops (MLIR's rank-reduction mask, matched
    greedily: dropping either of two unit axes gives the same view)."""
    dropped, j = set(), 0
    for i, (is_slot, size) in enumerate(sizes):
        if j < len(result_shape) and (result_shape[j] == DYNAMIC if is_slot else size == result_shape[j]):
            j += 1
        else:
            dropped.add(i)
    return dropped


def _groups(op: ir.OpView) -> list[list[int]]:
    return [
        [ir.IntegerAttr(a).value for a in ir.ArrayAttr(g)]
        for g in ir.ArrayAttr(op.operation.attributes["reassociation"])
    ]


def _check_split(c: Compiler, op: ir.OpView, source: ir.Value, result: ir.Value) -> None:
    """An upstream reshape keeps ``#hir.shard``'s axis numbers, so it may view a split buffer
    only where the view's dim map leaves the split axis in place (each local shard is then
    a view of the other's); ``hir.alias_reshape`` moves it (the builder picks it)."""
    src, out = c.spec(source).sharding, c.spec(result).sharding
    if src is None or not src.is_split:
        return
    assert out is not None, "an upstream view keeps its source's memory space (the #hir.shard placement)"
    source_shape, result_shape = list(ir.MemRefType(source.type).shape), list(ir.MemRefType(result.type).shape)
    try:
        moved = reshaped(src, source_shape, result_shape, _groups(op))
    except ValueError as err:  # a split merged with an outer axis, an uneven split resized
        raise c.error(op, f"cannot view the split buffer {source.get_name()}: {err}") from None
    if moved != out:
        raise c.error(
            op,
            f"views {source_shape} placed as {src.describe()} as {result_shape}, "
            f"whose placement is then {moved.describe()}; an upstream reshape "
            f"keeps the split axis numbers ({out.describe()}): use hir.alias_reshape",
        )


def _reshaped(t: torch.Tensor, shape: list, where: str, name: str) -> torch.Tensor:
    try:
        return t.view(shape)
    except RuntimeError as err:
        raise HirError(
            f"{where}: error: '{name}' cannot view local shape "
            f"{fmt_shape(t.shape)} as {fmt_shape(shape)} without a copy: {err}"
        ) from None


@register_impls
class ViewImpls:
    @impl(AliasSelectOp)
    def alias_select(self, c: Compiler, op: ir.OpView) -> Step | None:
        """``input.select(axis, index)``: a view, so writes through it land in the input."""
        axis = get_int(op, "axis")
        src, idx, out, error, name = _view(c, op)

        def select_step(env: list) -> None:
            t, i = env[src], env[idx]
            try:
                if i < 0:  # torch would count it from the end
                    raise IndexError
                env[out] = t.select(axis, i)
            except IndexError:  # torch's own bounds check; hir's message names the op
                raise HirError(
                    f"{error} index {i} is out of range for axis {axis} of {name} (local shape {fmt_shape(t.shape)})"
                ) from None

        return select_step

    @impl(AliasChunkOp)
    def alias_chunk(self, c: Compiler, op: ir.OpView) -> Step | None:
        """``input.chunk(chunks, axis)[index]`` (equal parts): a view, like alias_select's."""
        axis, chunks = get_int(op, "axis"), get_int(op, "chunks")
        src, idx, out, error, name = _view(c, op)

        def chunk_step(env: list) -> None:
            t, i = env[src], env[idx]
            extent = t.shape[axis]
            if extent % chunks or not 0 <= i < chunks:
                problem = (
                    f"index {i} is out of range for {chunks} chunks"
                    if extent % chunks == 0
                    else f"axis {axis} of extent {extent} does not divide into {chunks} chunks"
                )
                raise HirError(f"{error} {problem} of {name} (local shape {fmt_shape(t.shape)})")
            size = extent // chunks
            env[out] = t.narrow(axis, i * size, size)

        return chunk_step

    @impl(memref.SubViewOp)
    def subview(self, c: Compiler, op: ir.OpView) -> Step | None:
        """``as_strided`` over the source's memory: offset += sum(o_i * stride_i), stride_i *= s_i."""
        segments = list(ir.DenseI32ArrayAttr(op.operation.attributes["operandSegmentSizes"]))
        operands = list(op.operation.operands)[1:]
        n_off, n_size = segments[1], segments[2]
        offsets = _mixed(c, op, "static_offsets", operands[:n_off])
        sizes = _mixed(c, op, "static_sizes", operands[n_off : n_off + n_size])
        strides = _mixed(c, op, "static_strides", operands[n_off + n_size :])
        source = op.operation.operands[0]
        spec = c.spec(source)
        result_shape = list(ir.MemRefType(op.operation.results[0].type).shape)
        dropped = _dropped_axes(sizes, result_shape)
        split = spec.split_axis
        if split is not None:
            whole = (
                offsets[split] == (False, 0)
                and strides[split] == (False, 1)
                and sizes[split] == (False, spec.shape[split])
            )
            if not whole or any(a < split for a in dropped):
                raise c.error(
                    op,
                    f"views axis {split} of {c.name(source)}, which is split over the "
                    "device mesh; a subview must keep the split axis whole and in place",
                )
            sizes[split] = (True, None)  # the local extent, read at run time
        kept = [i for i in range(len(sizes)) if i not in dropped]
        src, out = _aliasing_result(c, op)
        where, name = f"{c.where(op)}: error: '{memref.SubViewOp.OPERATION_NAME}'", c.name(source)

        def subview_step(env: list) -> None:
            t = env[src]
            off = t.storage_offset()
            shape, stride = [], []
            for axis, ((so, o), (ss, s), (st, k)) in enumerate(zip(offsets, sizes, strides)):
                o = env[o] if so else o
                s = (t.shape[axis] if s is None else env[s]) if ss else s
                k = env[k] if st else k
                if o < 0 or s < 0 or k < 1 or (s > 0 and o + (s - 1) * k >= t.shape[axis]):
                    raise HirError(
                        f"{where} offset {o}, size {s}, stride {k} is out of bounds "
                        f"for axis {axis} of {name} (local shape {fmt_shape(t.shape)})"
                    )
                off += o * t.stride(axis)
                shape.append(s)
                stride.append(k * t.stride(axis))
            env[out] = t.as_strided([shape[i] for i in kept], [stride[i] for i in kept], off)

        return subview_step

    @impl(memref.CollapseShapeOp)
    def collapse_shape(self, c: Compiler, op: ir.OpView) -> Step | None:
        """``view`` with each group's extents multiplied (local extents: see _check_split)."""
        groups = _groups(op)
        _check_split(c, op, op.operation.operands[0], op.operation.results[0])
        src, out = _aliasing_result(c, op)
        where = c.where(op)

        def collapse_step(env: list) -> None:
            t = env[src]
            shape = []
            for axes in groups:
                n = 1
                for a in axes:
                    n *= t.shape[a]
                shape.append(n)
            env[out] = _reshaped(t, shape, where, memref.CollapseShapeOp.OPERATION_NAME)

        return collapse_step

    @impl(memref.ExpandShapeOp)
    def expand_shape(self, c: Compiler, op: ir.OpView) -> Step | None:
        """``view`` to the output shape (dynamic extents from the operands), made local."""
        result = op.operation.results[0]
        _check_split(c, op, op.operation.operands[0], result)
        sizes = _mixed(c, op, "static_output_shape", list(op.operation.operands)[1:])
        spec = c.spec(result)
        src, out = _aliasing_result(c, op)
        where = c.where(op)
        if not any(is_slot for is_slot, _ in sizes):
            shape = spec.local([v for _, v in sizes])

            def expand_static(env: list) -> None:
                env[out] = _reshaped(env[src], shape, where, memref.ExpandShapeOp.OPERATION_NAME)

            return expand_static

        def expand_dynamic(env: list) -> None:
            shape = spec.local([env[v] if is_slot else v for is_slot, v in sizes])
            env[out] = _reshaped(env[src], shape, where, memref.ExpandShapeOp.OPERATION_NAME)

        return expand_dynamic

    @impl(AliasBroadcastOp)
    def alias_broadcast(self, c: Compiler, op: ir.OpView) -> Step | None:
        """``expand``: -1 keeps an input extent, the static broadcast extents are given."""
        source, result = op.operation.operands[0], op.operation.results[0]
        in_shape, out_spec = list(ir.MemRefType(source.type).shape), c.spec(result)
        lead = len(out_spec.shape) - len(in_shape)
        local = out_spec.local_static()
        sizes = [-1 if i >= lead and in_shape[i - lead] == out_spec.shape[i] else local[i] for i in range(len(local))]
        src, out = _aliasing_result(c, op)

        def broadcast_step(env: list) -> None:
            env[out] = env[src].expand(sizes)

        return broadcast_step

    @impl(AliasReshapeOp)
    def alias_reshape(self, c: Compiler, op: ir.OpView) -> Step | None:
        """``view`` to the result's local shape (the verifier keeps each split axis
        outermost in its group, so the local shards view each other)."""
        shape = c.spec(op.operation.results[0]).local_static()
        src, out = _aliasing_result(c, op)
        where = c.where(op)

        def reshape_step(env: list) -> None:
            env[out] = _reshaped(env[src], shape, where, AliasReshapeOp.OPERATION_NAME)

        return reshape_step

    @impl(AliasStackShardsOp)
    def alias_stack_shards(self, c: Compiler, op: ir.OpView) -> Step | None:
        """``unsqueeze(at)`` of the local shard: this device's part of the stacked view is
        its shard with a unit axis for its own slot of the new device axis."""
        at = get_int(op, "at")
        src, out = _aliasing_result(c, op)

        def stack_shards_step(env: list) -> None:
            env[out] = env[src].unsqueeze(at)

        return stack_shards_step
