"""Placements of the tensor values of a partitioned ``shard`` program, and their hir buffer
types (the vocabulary of ``hir-convert-shard-to-hir``).

After ``shard-partition`` every tensor has its local (per-device) shape and no sharding.
hir types carry the global shape and a ``#hir.shard`` placement, so the conversion
recovers each value's placement: the dialect's :class:`~hir.dialect.sharding.Sharding` on
the grid's mesh, over the value's tensor dims, with the grid axes a sum is pending on in
``Sharding.partial``. Per grid axis a value is split along a dim, replicated or a partial
sum (shown here for a 1-D grid of n devices; on a multi-D grid each grid axis splits or
sums apart, and a dim split over several grid axes grows by their product, row-major over
them):

    replicated   local L            -> memref<L, #hir.shard<mesh, -1>>
    split(a)     local L            -> memref<L with L[a] * n, #hir.shard<mesh, a>>
    partial      local L (a sum     -> memref<n x L, #hir.shard<mesh, 0>>: the pending sum over
                 over the devices)     the devices is a device axis (Sharding.buffer_placement;
                                       hir's allreduce / reduce_scatter reduce a split axis;
                                       local [1, L...])
    free (None)  tensor.empty / fills / constants: no data of their own, cloned where used

Placements come from function arguments (``hir.split_axes`` recorded before partitioning
by ``hir-record-shard-signature``, else the needs of a collective reading the argument,
else replicated), from collectives, and forward through linalg / tensor ops
(``inference.py``). ``tensor.extract_slice`` / ``insert_slice`` act on each device's block
and keep its placement (shard-partition pads a block with its halos that way; the global
shape of such a value is that of the devices' blocks side by side, checked at the function
boundary).
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

from torch_mlir import ir

from hir.dialect.sharding import PARTIAL, AxisPlacement, Sharding

SPLIT_AXES_ATTR = "hir.split_axes"  # function argument / result attribute: #shard<axisarray[...]>
GRID_ATTR = "hir.grid"  # function attribute: the grid of its shardings (recorded before partitioning)
GLOBAL_TYPE_ATTR = "hir.global_type"  # function argument / result attribute: the unpartitioned tensor type
OFFSETS_ATTR = "hir.sharded_dims_offsets"  # function argument / result attribute: an uneven split's boundaries
FREE = "free"  # per grid axis, for placement inference only: an operand with no data of its own


class PlacementError(Exception):
    """Placement arithmetic that cannot hold; the handler's op is named in the report."""


def axis_text(placement: AxisPlacement) -> str:
    if placement is None:
        return "replicated"
    return placement if isinstance(placement, str) else f"split along dim {placement}"


def placement_text(placement: Sharding | None) -> str:
    """``split along dim 0``; ``partial on grid axis 0, replicated on grid axis 1``; ``free``."""
    if placement is None:
        return FREE
    axes = [placement.on(k) for k in range(len(placement.mesh_shape))]
    text = (
        axis_text(axes[0])
        if len(axes) == 1
        else ", ".join(f"{axis_text(p)} on grid axis {k}" for k, p in enumerate(axes))
    )
    return text + "".join(f" (dim {d} cut at {list(b)})" for d, b in placement.offsets)


def kind(placement: Sharding) -> str:
    """ "partial" when a sum is pending on some grid axis, "replicated" when no axis splits,
    else "split"."""
    if placement.partial:
        return PARTIAL
    return "split" if placement.is_split else "replicated"


def moved(placement: Sharding, grid_axes: Sequence[int], to: AxisPlacement) -> Sharding:
    """``placement`` with ``grid_axes`` set to ``to``; an uneven dim moves only whole (it is
    gathered over all its grid axes, and no other dim is split beside it)."""
    if placement.offsets:
        rank = len(placement.mesh_shape)
        before = [placement.on(k) for k in range(rank)]
        after = [to if k in grid_axes else p for k, p in enumerate(before)]

        def split_by(per_axis: list, dim: int) -> list[int]:
            return [k for k, p in enumerate(per_axis) if isinstance(p, int) and p == dim]

        kept = [d for d, _ in placement.offsets if split_by(after, d)]
        if any(split_by(after, d) != split_by(before, d) for d in kept) or {
            p for p in after if isinstance(p, int)
        } != set(kept):
            raise PlacementError(
                f"moves the uneven split of a value {placement_text(placement)}; hir gathers an "
                "uneven dim whole (over all its grid axes) and splits no other dim beside it"
            )
    return placement.with_placement(grid_axes, to)


def split_minor_to(placement: Sharding, grid_axes: Sequence[int]) -> int | None:
    """A grid axis outside ``grid_axes`` that splits a dim which one of them splits, and is
    minor to one of them (None if there is none): the devices along ``grid_axes`` then hold
    no contiguous block of that dim (a dim split over several grid axes is cut row-major
    over them)."""
    dims = {placement.splits[k] for k in grid_axes if placement.splits[k] is not None}
    return next(
        (
            j
            for j, s in enumerate(placement.splits)
            if j not in grid_axes and s is not None and s in dims and j > min(grid_axes)
        ),
        None,
    )


@dataclass(frozen=True)
class Grid:
    """A ``shard.grid`` of ``shape`` devices, devices 0 .. n-1 in row-major order."""

    name: str
    shape: tuple[int, ...]

    @property
    def mesh(self) -> tuple[int, ...]:
        return tuple(range(prod(self.shape)))

    @property
    def rank(self) -> int:
        return len(self.shape)

    def placement(
        self, splits: Sequence[int | None], offsets: dict | None = None, partial: Sequence[int] = ()
    ) -> Sharding:
        """The placement with ``splits`` per grid axis (a tensor dim or None), the part
        boundaries of uneven dims and the grid axes a sum is pending on."""
        return Sharding.of(self.mesh, self.shape, splits, offsets, partial)

    @property
    def replicated(self) -> Sharding:
        return self.placement([None] * self.rank)

    def lines(self, grid_axes: list[int]) -> list[list[int]]:
        """The device lines along ``grid_axes`` (the teams of a collective over them)."""
        return [list(line) for line in self.replicated.lines(grid_axes)]

    def buffer_type(self, local: ir.Type, placement: Sharding) -> ir.MemRefType:
        """The hir buffer type of a value with local tensor type ``local``: split dims grow
        by their grid axes' extents (a dim split over several grid axes by their product, the
        parts row-major as upstream's ``[[0, 1]]``); a partial sum gets a leading device axis
        split over the grid axes the sum is pending on."""
        shaped = ir.RankedTensorType(local)
        shape = list(shaped.shape)
        for k, dim in enumerate(placement.splits):
            if dim is None:
                continue
            bounds = placement.bounds(dim)
            if bounds is not None:  # uneven: the local extent is '?', the global the last boundary
                shape[dim] = bounds[-1]
            elif not ir.ShapedType.is_dynamic_size(shape[dim]):  # a dynamic extent stays '?': sized at run time
                shape[dim] *= self.shape[k]
        if placement.partial:  # one device axis, split over every grid axis the sum is pending on
            shape = [prod(self.shape[k] for k in placement.partial)] + shape
        return ir.MemRefType.get(shape, shaped.element_type, memory_space=placement.buffer_placement().attr())


def local_shape(local: ir.Type, placement: Sharding) -> list[int]:
    """The shape a device's buffer has for a value of local tensor type ``local``."""
    shape = list(ir.RankedTensorType(local).shape)
    return [1] + shape if placement.partial else shape


def axis_groups(attr: ir.Attribute) -> list[list[int]]:
    """The groups of ``#shard<axisarray[[0], [], [1, 2]]>``: per tensor dim, its grid axes."""
    return [
        [int(a) for a in text.replace(" ", "").split(",") if a] for text in re.findall(r"\[([^\[\]]*)\]", str(attr))
    ]


def split_axes_placement(attr: ir.Attribute, rank: int, grid: Grid, offsets: list[int] | None = None) -> Sharding:
    """The placement of ``#shard<axisarray[[0], [1]]>`` (tensor dim d split over the grid
    axes listed in group d), with upstream's ``sharded_dims_offsets`` when given (per split
    dim in order, its parts + 1 boundaries)."""
    splits: list = [None] * grid.rank
    for dim, grid_axes in enumerate(axis_groups(attr)):
        if not grid_axes:
            continue
        if dim >= rank:
            raise PlacementError(f"{attr} splits dim {dim} of a rank-{rank} tensor")
        if grid_axes != sorted(grid_axes):
            raise PlacementError(
                f"{attr} splits dim {dim} over grid axes {grid_axes} "
                "minor-first; hir splits a dim over grid axes in grid order"
            )
        for k in grid_axes:  # several: major to minor, as the grid's row-major order
            if not 0 <= k < grid.rank:
                raise PlacementError(f"{attr} uses grid axis {k} of a {grid.rank}-D grid")
            if splits[k] is not None:
                raise PlacementError(f"{attr} splits dims {splits[k]} and {dim} over grid axis {k}")
            splits[k] = dim
    return grid.placement(splits) if offsets is None else _with_offsets(splits, offsets, grid, attr)


def _with_offsets(splits: list, offsets: list[int], grid: Grid, attr: ir.Attribute) -> Sharding:
    """The placement ``splits`` with the concatenated part boundaries ``offsets`` of its
    split dims."""
    parts: dict = {}
    for k, dim in enumerate(splits):
        if dim is not None:
            parts[dim] = parts.get(dim, 1) * grid.shape[k]
    rest, bounds = list(offsets), {}
    for dim in sorted(parts):
        cut, rest = tuple(rest[: parts[dim] + 1]), rest[parts[dim] + 1 :]
        if len(cut) != parts[dim] + 1 or cut[0] != 0 or any(a > b for a, b in zip(cut, cut[1:])):
            raise PlacementError(
                f"{attr} with sharded_dims_offsets {offsets}: dim {dim} is cut into "
                f"{parts[dim]} parts, which need {parts[dim] + 1} rising boundaries from 0"
            )
        bounds[dim] = cut
    if rest or not bounds:
        raise PlacementError(
            f"{attr} with sharded_dims_offsets {offsets}: {len(rest)} boundaries more than its split dims need"
        )
    return grid.placement(splits, bounds)
