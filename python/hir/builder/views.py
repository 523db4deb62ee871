"""The builder's views (mixed into :class:`hir.builder.Builder`): ``subview`` (upstream
``memref.subview``, static or dynamic, rank-reducing), ``collapse_shape`` / ``expand_shape`` /
``reshape`` (upstream reassociative reshapes; ``hir.alias_reshape`` where a split buffer's split
axis moves), ``alias_broadcast`` (``hir.alias_broadcast``) and ``alias_stack_shards``
(``hir.alias_stack_shards``). Every view is zero-copy; result types are inferred the way MLIR's
verifiers expect them, placements by the view's dim map (a split follows its axis).

    rows = b.subview(x, [i, 0], [2, 64])            # rows i, i+1 (i: an index value)
    flat = b.reshape(x, [8 * 64])                    # collapse_shape
    grid = b.reshape(flat, [8, 8, 8])                # expand_shape
    wide = b.alias_broadcast(bias, [8, 64])                # stride-0 view of a [64] bias
    stacked = b.alias_stack_shards(h, axis=1, at=0)  # [T, H] split on 1 as [D, T, H/D] split on 0
"""

from __future__ import annotations  # Tensor is named for type checking only

from collections.abc import Sequence
from math import prod
from typing import TYPE_CHECKING

from torch_mlir import ir
from torch_mlir.dialects import memref

from hir.core import HirError
from hir.dialect import AliasBroadcastOp, AliasReshapeOp, AliasStackShardsOp
from hir.dialect.base import DYNAMIC, VerifyError
from hir.dialect.view_splits import reshaped

if TYPE_CHECKING:  # what the mixin uses of the Builder it is mixed into
    from hir.builder.program import ProgramBuilder as _Builder
    from hir.builder.program import Tensor
else:
    _Builder = object

Size = int | ir.Value


def _static(values: Sequence[Size]) -> list[int]:
    return [v if isinstance(v, int) else DYNAMIC for v in values]


def _times(a: int, b: int) -> int:
    return DYNAMIC if DYNAMIC in (a, b) else a * b


def _layout(shape: list[int], strides: list[int], offset: int) -> ir.Attribute | None:
    """None (identity) for a dense row-major view at offset 0, else a strided layout."""
    dense, running = [], 1
    for extent in reversed(shape):
        dense.append(running)
        running = _times(running, extent)
    if offset == 0 and strides == dense[::-1]:
        return None
    return ir.StridedLayoutAttr.get(offset, strides)


def _typed(source: ir.MemRefType, shape: list[int], strides: list[int], offset: int) -> ir.MemRefType:
    return ir.MemRefType.get(
        shape, source.element_type, layout=_layout(shape, strides, offset), memory_space=source.memory_space
    )


def _reassociation(groups: Sequence[Sequence[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, a) for a in g]) for g in groups])


class ViewBuilder(_Builder):
    """Builder methods for views; needs the Builder's ``_at``, ``index``, ``alias_select``
    and ``Tensor``."""

    if TYPE_CHECKING:

        def alias_select(self, x: Tensor, index: int | ir.Value, axis: int) -> Tensor: ...

    def subview(
        self,
        x: Tensor,
        offsets: Sequence[Size],
        sizes: Sequence[Size],
        strides: Sequence[Size] | None = None,
        *,
        drop: Sequence[int] = (),
    ) -> Tensor:
        """``memref.subview``: ``sizes[i]`` elements from ``offsets[i]`` every ``strides[i]``
        along each axis; ``drop`` lists extent-1 axes to remove (a rank-reducing subview). On
        a split buffer, axes dropped before the split axis are taken by ``hir.alias_select``
        (which renumbers the split; an upstream subview keeps ``#hir.shard``'s numbers)."""
        strides = list(strides) if strides is not None else [1] * len(sizes)
        source = x.type
        sharding = x.sharding
        if drop and sharding is not None and any(s is not None and a < s for s in sharding.splits for a in drop):
            whole = self.subview(x, offsets, sizes, strides)
            for axis in sorted(drop, reverse=True):
                whole = self.alias_select(whole, self.index(0), axis)
            return whole
        if not len(offsets) == len(sizes) == len(strides) == source.rank:
            raise HirError(
                f"error: subview of a rank-{source.rank} buffer needs {source.rank} offsets, sizes and strides"
            )
        if any(not (isinstance(sizes[a], int) and sizes[a] == 1) for a in drop):
            raise HirError(
                "error: subview can only drop axes of static extent "
                f"1, got drop={list(drop)} with sizes {_static(sizes)}"
            )
        in_strides, in_offset = source.get_strides_and_offset()
        offset = in_offset
        for o, s in zip(_static(offsets), in_strides):
            offset = DYNAMIC if DYNAMIC in (offset, o, s) else offset + o * s
        out_strides = [_times(s, k) for s, k in zip(in_strides, _static(strides))]
        kept = [i for i in range(source.rank) if i not in drop]
        shape = [_static(sizes)[i] for i in kept]
        with self._at():
            layout = ir.StridedLayoutAttr.get(offset, [out_strides[i] for i in kept])
            result = ir.MemRefType.get(shape, source.element_type, layout=layout, memory_space=source.memory_space)
            view = memref.subview(x.value, list(offsets), list(sizes), strides, result_type=result)
        return type(x)(view, [sizes[i] for i in kept])

    def collapse_shape(self, x: Tensor, groups: Sequence[Sequence[int]]) -> Tensor:
        """``memref.collapse_shape``: each group of adjacent axes becomes one axis (on a
        split buffer whose split axis this renumbers, ``hir.alias_reshape``: see
        :meth:`_split_reshape`)."""
        source = x.type
        shape = [
            prod(source.shape[a] for a in g) if all(source.shape[a] != DYNAMIC for a in g) else DYNAMIC for g in groups
        ]
        moved = self._split_reshape(x, groups, shape)
        if moved is not None:
            return moved
        in_strides, offset = source.get_strides_and_offset()
        strides = [in_strides[g[-1]] if g else 1 for g in groups]
        sizes = []
        for g in groups:
            static = [x.sizes[a] for a in g if isinstance(x.sizes[a], int)]
            sizes.append(prod(static) if len(static) == len(g) else None)
        with self._at():
            view = memref.CollapseShapeOp(
                _typed(source, shape, strides, offset), x.value, _reassociation(groups)
            ).result
            sizes = [s if s is not None else memref.DimOp(view, self.index(i)).result for i, s in enumerate(sizes)]
        return type(x)(view, sizes)

    def expand_shape(self, x: Tensor, groups: Sequence[Sequence[int]], sizes: Sequence[Size]) -> Tensor:
        """``memref.expand_shape``: axis ``i`` of ``x`` becomes the axes ``groups[i]`` with
        extents ``sizes`` (an index value makes that extent dynamic; a split buffer as in
        :meth:`collapse_shape`)."""
        source = x.type
        moved = self._split_reshape(x, groups, _static(sizes))
        if moved is not None:
            return moved
        in_strides, offset = source.get_strides_and_offset()
        shape = _static(sizes)
        strides = [0] * len(shape)
        for axis, g in enumerate(groups):
            running = in_strides[axis]
            for a in reversed(g):
                strides[a] = running
                running = _times(running, shape[a])
        with self._at():
            dynamic = [s for s in sizes if not isinstance(s, int)]
            view = memref.ExpandShapeOp(
                _typed(source, shape, strides, offset), x.value, _reassociation(groups), dynamic, shape
            ).result
        return type(x)(view, list(sizes))

    def _split_reshape(self, x, groups: Sequence[Sequence[int]], shape: list[int]):
        """A reshape (to ``shape``) of a split buffer whose split axis the view's dim map
        moves (``[D, K, N]`` on 0 to ``[1, D, 1, K, N]`` on 1): ``hir.alias_reshape``, since
        upstream reshapes keep ``#hir.shard``'s axis numbers. None when the placement is
        unmoved (the upstream view serves); an error when a split axis is merged with an
        outer axis."""
        sharding = x.sharding
        if sharding is None or not sharding.is_split:
            return None
        try:
            if reshaped(sharding, list(x.type.shape), shape, groups) == sharding:
                return None
        except ValueError as err:
            raise HirError(f"error: reshape: {err}") from None
        if DYNAMIC in shape or DYNAMIC in x.type.shape:
            raise HirError(
                f"error: reshape: moving the split axis of {x.type} needs static extents (hir.alias_reshape)"
            )
        with self._at():
            try:
                view = AliasReshapeOp.emit(x.value, shape, [list(g) for g in groups])
            except VerifyError as err:
                raise HirError(f"error: reshape: {err}") from None
        return type(x)(view, list(shape))

    def reshape(self, x: Tensor, shape: Sequence[int]) -> Tensor:
        """A zero-copy reshape of a static buffer: one collapse_shape or expand_shape when
        the extents group that way, else a collapse to 1-D followed by an expand."""
        old, new = list(x.type.shape), list(shape)
        if DYNAMIC in old or prod(old) != prod(new):
            raise HirError(f"error: reshape needs a static buffer of the same size: {old} to {new}")
        if len(new) < len(old) and (groups := _grouping(old, new)) is not None:
            return self.collapse_shape(x, groups)
        if len(new) > len(old) and (groups := _grouping(new, old)) is not None:
            return self.expand_shape(x, groups, new)
        flat = self.collapse_shape(x, [list(range(len(old)))]) if len(old) != 1 else x
        return self.expand_shape(flat, [list(range(len(new)))], new) if len(new) != 1 else flat

    def alias_broadcast(self, x: Tensor, shape: Sequence[Size]) -> Tensor:
        """``hir.alias_broadcast``: ``x`` expanded to ``shape`` (NumPy rules, no copy); a
        broadcast extent must be an int, kept extents may repeat ``x``'s sizes."""
        lead = len(shape) - len(x.sizes)
        static = [s if isinstance(s, int) else DYNAMIC for s in shape]
        with self._at():
            try:
                view = AliasBroadcastOp.emit(x.value, static)
            except VerifyError as err:
                raise HirError(f"error: broadcast: {err}") from None
        sizes = [
            x.sizes[i - lead] if i >= lead and x.type.shape[i - lead] == static[i] else s for i, s in enumerate(shape)
        ]
        return type(x)(view, sizes)

    def alias_stack_shards(self, x: Tensor, axis: int, at: int) -> Tensor:
        """``hir.alias_stack_shards``: ``x`` (static, contiguous, ``axis`` split evenly over
        one mesh axis of extent D) as its devices' shards stacked on a new axis ``at`` split
        over that mesh axis (``[T, H]`` on 1 as ``[D, T, H / D]`` on 0); no copy."""
        with self._at():
            try:
                view = AliasStackShardsOp.emit(x.value, axis, at)
            except VerifyError as err:
                raise HirError(f"error: alias_stack_shards: {err}") from None
        return type(x)(view, list(ir.MemRefType(view.type).shape))


def _grouping(wide: list[int], narrow: list[int]) -> list[list[int]] | None:
    """Groups of adjacent ``wide`` axes whose products are ``narrow``'s extents, if any."""
    groups, axis = [], 0
    for extent in narrow:
        group, n = [], 1
        while axis < len(wide) and (n < extent or not group):
            group.append(axis)
            n *= wide[axis]
            axis += 1
        if n != extent:
            return None
        groups.append(group)
    if axis != len(wide):
        if groups and all(wide[a] == 1 for a in range(axis, len(wide))):
            groups[-1] += list(range(axis, len(wide)))
        else:
            return None
    return groups
