"""How a view moves a buffer's device split: the view's dim map, as DTensor's ``_view_ops.py``
maps placements through ``view`` / ``reshape`` / ``unsqueeze`` / ``flatten``. Read by the
view ops' verifiers (``hir.alias_reshape``), the builder (which picks ``hir.alias_reshape``
where an upstream reshape would have to renumber the split), the interpreter (an upstream
reshape of a split buffer must leave the split where it is) and the PyTorch frontend (the
placement strategy of ``aten.view``).

A split follows its axis past new or removed unit axes and through merges with the axes
inside it; it is refused only where a split axis is merged with an outer axis (a device's
part of the view would not be a view of its part of the buffer)::

    [D, K, N] on 0   -> [1, D, 1, K, N] on 1     (nvFuser's matmul_RS_through_bcast)
    [A, B, D, N] on 2 -> [A * B, D, N] on 1       (a flatten of unsplit axes)
    [D, K] on 0      -> [D * K] on 0             (the split leads the merged axes)
    [A, D] on 1      -> [A * D]                  ViewSplitError
"""

from collections.abc import Sequence
from math import prod

from hir.dialect.base import DYNAMIC
from hir.dialect.sharding import Sharding, UnevenPlacementError

Groups = Sequence[Sequence[int]] | None  # the reassociation of the higher-rank side


class ViewSplitError(ValueError):
    """A reshape merges split axis ``axis`` with an outer axis."""

    def __init__(self, axis: int, message: str) -> None:
        super().__init__(message)
        self.axis = axis


def reshaped_axis(source: Sequence[int], result: Sequence[int], axis: int, groups: Groups = None) -> int | None:
    """The axis of ``result`` a reshape of ``source`` moves split axis ``axis`` to, None
    when it is merged with an outer axis. By ``groups`` when given (any extents: the first
    non-unit axis of an expanded group; a collapsed group whose axes before ``axis`` are
    all unit axes), else by element counts (static shapes: the first result axis of extent
    above 1 whose outer axes hold as many elements as ``axis``'s outer axes)."""
    if groups is not None and len(result) > len(source):
        return next((t for t in groups[axis] if result[t] != 1), None)
    if groups is not None:
        group = next(g for g, axes in enumerate(groups) if axis in axes)
        return group if all(source[a] == 1 for a in groups[group] if a < axis) else None
    outer = prod(source[:axis])
    return next((t for t, extent in enumerate(result) if extent != 1 and prod(result[:t]) == outer), None)


def reshaped(sharding: Sharding, source: Sequence[int], result: Sequence[int], groups: Groups = None) -> Sharding:
    """``sharding`` (of a ``source``-shaped buffer) as the placement of its view ``result``:
    each split axis moved by :func:`reshaped_axis`. A ViewSplitError when one is merged with
    an outer axis; an UnevenPlacementError when an uneven split would change its extent."""
    moved = {}
    for axis in sorted({s for s in sharding.splits if s is not None}):
        target = moved[axis] = reshaped_axis(source, result, axis, groups)
        if target is None:
            raise ViewSplitError(
                axis,
                f"split axis {axis} (extent {_dim(source[axis])}) of {_dims(source)} is merged with an "
                f"outer axis in {_dims(result)}: a device's part of the view is no view of its part of "
                "the buffer (a view keeps a split axis whole, or outermost among the axes merged with it)",
            )
        bounds = sharding.bounds(axis)
        if bounds is not None and result[target] != source[axis]:
            raise UnevenPlacementError(
                f"axis {axis} is split unevenly (cut at {list(bounds)}); a view may not change its extent"
            )
    return sharding.renumbered(lambda a: moved[a])


def _dim(extent: int) -> str:
    return "?" if extent == DYNAMIC else str(extent)


def _dims(shape: Sequence[int]) -> str:
    return "[" + ", ".join(map(_dim, shape)) + "]"
