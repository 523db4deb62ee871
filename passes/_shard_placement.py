"""Placements of the tensor values of a partitioned ``shard`` program, and their hir buffer
types (used by ``hir-convert-shard-to-hir``).

After ``shard-partition`` every tensor has its local (per-device) shape and no sharding.
hir types carry the global shape and a ``#hir.shard`` placement, so the conversion
recovers each value's placement on each axis of the grid (a :class:`GridPlacement`; shown
here for a 1-D grid of n devices; on a multi-D grid each grid axis splits or sums apart, and
a dim split over several grid axes grows by their product, row-major over them):

    replicated   local L            -> memref<L, #hir.shard<mesh, -1>>
    split(a)     local L            -> memref<L with L[a] * n, #hir.shard<mesh, a>>
    partial      local L (a sum     -> memref<n x L, #hir.shard<mesh, 0>>: the pending sum over
                 over the devices)     the devices is a device axis (hir's allreduce /
                                       reduce_scatter reduce a split axis; local [1, L...])
    free         tensor.empty / fills / constants: no data of their own, cloned where used

Placements come from function arguments (``hir.split_axes`` recorded before partitioning
by ``hir-record-shard-signature``, else the needs of a collective reading the argument,
else replicated), from collectives, and forward through linalg / tensor ops by their
indexing maps: a split operand dim indexed by a parallel loop splits the output dim of that
loop, one indexed by a reduction loop makes the output partial. ``tensor.extract_slice`` /
``insert_slice`` act on each device's block and keep its placement (shard-partition pads a
block with its halos that way; the global shape of such a value is that of the devices'
blocks side by side, checked at the function boundary).
"""

import re
from dataclasses import dataclass
from math import prod
from typing import Optional

from torch_mlir import ir

from hir.dialect import Sharding
from hir.dialect.linalg_facts import ADDITIVE, ELEMENTWISE_NAMED, is_elementwise, reduce_maps

SPLIT_AXES_ATTR = "hir.split_axes"  # function argument / result attribute: #shard<axisarray[...]>
GRID_ATTR = "hir.grid"  # function attribute: the grid of its shardings (recorded before partitioning)
GLOBAL_TYPE_ATTR = "hir.global_type"  # function argument / result attribute: the unpartitioned tensor type
OFFSETS_ATTR = "hir.sharded_dims_offsets"  # function argument / result attribute: an uneven split's boundaries


class PlacementError(Exception):
    pass


@dataclass(frozen=True)
class Placement:
    kind: str  # "replicated", "split", "partial" or "free"
    axis: int = -1

    def __str__(self) -> str:
        return f"split along dim {self.axis}" if self.kind == "split" else self.kind


REPLICATED = Placement("replicated")
PARTIAL = Placement("partial")
FREE = Placement("free")


def split(axis: int) -> Placement:
    return Placement("split", axis)


@dataclass(frozen=True)
class GridPlacement:
    """A value's placement on the grid: one :class:`Placement` per grid axis, and the part
    boundaries of the dims split unevenly (upstream's ``sharded_dims_offsets``: every split
    dim's, or none)."""

    axes: tuple[Placement, ...]
    offsets: tuple[tuple[int, tuple[int, ...]], ...] = ()  # (tensor dim, part boundaries)

    @staticmethod
    def uniform(placement: Placement, rank: int) -> "GridPlacement":
        return GridPlacement((placement,) * rank)

    def __getitem__(self, grid_axis: int) -> Placement:
        return self.axes[grid_axis]

    def bounds(self, dim: int) -> Optional[tuple[int, ...]]:
        return next((b for d, b in self.offsets if d == dim), None)

    def with_axis(self, grid_axis: int, placement: Placement) -> "GridPlacement":
        return self.with_axes([grid_axis], placement)

    def with_axes(self, grid_axes: list[int], placement: Placement) -> "GridPlacement":
        axes = tuple(placement if k in grid_axes else p for k, p in enumerate(self.axes))
        if not self.offsets:
            return GridPlacement(axes)

        def split_by(placed: tuple, dim: int) -> list[int]:
            return [k for k, p in enumerate(placed) if p == split(dim)]

        kept = tuple((d, b) for d, b in self.offsets if split_by(axes, d))
        if any(split_by(axes, d) != split_by(self.axes, d) for d, _ in kept) or {p.axis for p in axes if p.kind == "split"} != {d for d, _ in kept}:
            raise PlacementError(f"moves the uneven split of a value {self}; hir gathers an uneven dim whole (over all its grid axes) and splits no other dim beside it")
        return GridPlacement(axes, kept)

    def split_minor_to(self, grid_axes: list[int]) -> Optional[int]:
        """A grid axis outside ``grid_axes`` that splits a dim which one of them splits, and
        is minor to one of them (None if there is none): the devices along ``grid_axes``
        then hold no contiguous block of that dim (a dim split over several grid axes is cut
        row-major over them)."""
        dims = {p.axis for k, p in enumerate(self.axes) if k in grid_axes and p.kind == "split"}
        return next((j for j, p in enumerate(self.axes) if j not in grid_axes and p.kind == "split" and p.axis in dims and j > min(grid_axes)), None)

    @property
    def kind(self) -> str:
        """"partial" when a pending sum is left on some grid axis, "free" / "replicated" when
        every axis is, else "split"."""
        kinds = {p.kind for p in self.axes}
        if "partial" in kinds:
            return "partial"
        return kinds.pop() if len(kinds) == 1 and kinds <= {"free", "replicated"} else "split"

    def __str__(self) -> str:
        text = str(self.axes[0]) if len(self.axes) == 1 else ", ".join(f"{p} on grid axis {k}" for k, p in enumerate(self.axes))
        return text + "".join(f" (dim {d} cut at {list(b)})" for d, b in self.offsets)


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

    def lines(self, grid_axes: list[int]) -> list[list[int]]:
        """The device lines along ``grid_axes`` (the teams of a collective over them)."""
        return [list(line) for line in self.sharding([None] * self.rank).lines(grid_axes)]

    def sharding(self, splits: list, offsets: Optional[dict] = None) -> Sharding:
        return Sharding.of(self.mesh, self.shape, splits, offsets)

    def buffer_type(self, local: ir.Type, placement: GridPlacement) -> ir.MemRefType:
        """The hir buffer type of a value with local tensor type ``local``: split dims grow
        by their grid axes' extents (a dim split over several grid axes by their product, the
        parts row-major as upstream's ``[[0, 1]]``); a partial sum gets a leading device axis
        split over the grid axes the sum is pending on."""
        shaped = ir.RankedTensorType(local)
        shape = list(shaped.shape)
        partial = [k for k, p in enumerate(placement.axes) if p.kind == "partial"]
        lead = 1 if partial else 0
        if partial:  # one device axis, split over every grid axis the sum is pending on
            shape = [prod(self.shape[k] for k in partial)] + shape
        splits: list = [None] * self.rank
        for k, p in enumerate(placement.axes):
            if p.kind == "split":
                if placement.bounds(p.axis) is not None:  # uneven: the local extent is '?', the global the last boundary
                    shape[p.axis + lead] = placement.bounds(p.axis)[-1]
                elif not ir.ShapedType.is_dynamic_size(shape[p.axis + lead]):  # a dynamic extent stays '?': sized at run time
                    shape[p.axis + lead] *= self.shape[k]
                splits[k] = p.axis + lead
            elif p.kind == "partial":
                splits[k] = 0
        space = self.sharding(splits, {d + lead: b for d, b in placement.offsets}).attr()
        return ir.MemRefType.get(shape, shaped.element_type, memory_space=space)


def local_shape(local: ir.Type, placement: GridPlacement) -> list[int]:
    """The shape a device's buffer has for a value of local tensor type ``local``."""
    shape = list(ir.RankedTensorType(local).shape)
    return [1] + shape if placement.kind == "partial" else shape


def axis_groups(attr: ir.Attribute) -> list[list[int]]:
    """The groups of ``#shard<axisarray[[0], [], [1, 2]]>``: per tensor dim, its grid axes."""
    return [[int(a) for a in text.replace(" ", "").split(",") if a] for text in re.findall(r"\[([^\[\]]*)\]", str(attr))]


def split_axes_placement(attr: ir.Attribute, rank: int, grid: Grid, offsets: Optional[list[int]] = None) -> GridPlacement:
    """The placement of ``#shard<axisarray[[0], [1]]>`` (tensor dim d split over the grid
    axes listed in group d), with upstream's ``sharded_dims_offsets`` when given (per split
    dim in order, its parts + 1 boundaries)."""
    axes = [REPLICATED] * grid.rank
    for dim, grid_axes in enumerate(axis_groups(attr)):
        if not grid_axes:
            continue
        if dim >= rank:
            raise PlacementError(f"{attr} splits dim {dim} of a rank-{rank} tensor")
        if grid_axes != sorted(grid_axes):
            raise PlacementError(f"{attr} splits dim {dim} over grid axes {grid_axes} minor-first; hir splits a dim over grid axes in grid order")
        for k in grid_axes:  # several: major to minor, as the grid's row-major order
            if not 0 <= k < grid.rank:
                raise PlacementError(f"{attr} uses grid axis {k} of a {grid.rank}-D grid")
            if axes[k] != REPLICATED:
                raise PlacementError(f"{attr} splits dims {axes[k].axis} and {dim} over grid axis {k}")
            axes[k] = split(dim)
    placement = GridPlacement(tuple(axes))
    return placement if offsets is None else with_offsets(placement, offsets, grid, attr)


def with_offsets(placement: GridPlacement, offsets: list[int], grid: Grid, attr: ir.Attribute) -> GridPlacement:
    """``placement`` with the concatenated part boundaries ``offsets`` of its split dims."""
    parts: dict = {}
    for k, p in enumerate(placement.axes):
        if p.kind == "split":
            parts[p.axis] = parts.get(p.axis, 1) * grid.shape[k]
    rest, bounds = list(offsets), []
    for dim in sorted(parts):
        cut, rest = tuple(rest[: parts[dim] + 1]), rest[parts[dim] + 1 :]
        if len(cut) != parts[dim] + 1 or cut[0] != 0 or any(a > b for a, b in zip(cut, cut[1:])):
            raise PlacementError(f"{attr} with sharded_dims_offsets {offsets}: dim {dim} is cut into {parts[dim]} parts, which need {parts[dim] + 1} rising boundaries from 0")
        bounds.append((dim, cut))
    if rest or not bounds:
        raise PlacementError(f"{attr} with sharded_dims_offsets {offsets}: {len(rest)} boundaries more than its split dims need")
    return GridPlacement(placement.axes, tuple(bounds))


def maps_of(op: ir.Operation) -> Optional[tuple[list, list[int]]]:
    """(indexing maps as lists of loop dims or None for constants, reduction loops) of a
    structured op whose maps are known, else None."""
    from torch_mlir.dialects import linalg  # lazily: linalg's opdsl costs hir-opt ~0.1 s and numpy at start

    name = op.name
    if "indexing_maps" in op.attributes:
        maps = [ir.AffineMapAttr(a).value for a in op.attributes["indexing_maps"]]
        if name == linalg.GenericOp.OPERATION_NAME:
            kinds = [str(a) for a in op.attributes["iterator_types"]]
            reductions = [d for d, k in enumerate(kinds) if "reduction" in k]
        else:  # matmul / batch_matmul: the last loop is the contraction
            reductions = [maps[0].n_dims - 1]
    elif name == linalg.ReduceOp.OPERATION_NAME:
        maps, reductions = reduce_maps(op)
    elif name in ELEMENTWISE_NAMED:
        rank = ir.ShapedType(op.operands[-1].type).rank
        maps, reductions = [ir.AffineMap.get_identity(rank)] * len(op.operands), []
    elif is_elementwise(op):
        rank = ir.ShapedType(op.results[0].type).rank
        tensors = sum(isinstance(v.type, ir.RankedTensorType) for v in op.operands)
        maps, reductions = [ir.AffineMap.get_identity(rank)] * (tensors + 1), []
    else:
        return None
    dims = [[e.position if isinstance(e, ir.AffineDimExpr) else None for e in m.results] for m in maps]
    return dims, reductions


def infer(op: ir.Operation, operands: list[GridPlacement], rank: int) -> GridPlacement:
    """The placement of the (every) tensor result of a linalg / tensor op: the rules below
    on each grid axis (a free operand, no data of its own, counts as free on every axis),
    and the part boundaries of uneven operand dims on the result dims they become."""
    result = GridPlacement(tuple(_infer_axis(op, [p[k] for p in operands]) for k in range(rank)))
    return _uneven_result(op, operands, result) if any(p.offsets for p in operands) else result


def _uneven_result(op: ir.Operation, operands: list[GridPlacement], result: GridPlacement) -> GridPlacement:
    """``result`` with the boundaries of each dim it is split along: those of the operand
    dims read along the same loop (which must agree: an even and an uneven part of one loop
    hold different rows). Only ops with indexing maps carry uneven dims."""
    maps = maps_of(op)
    if maps is None:
        raise PlacementError(f"reads a value split unevenly ({next(p for p in operands if p.offsets)}); hir carries uneven splits through linalg ops only")
    dims, _ = maps
    found: dict = {}
    for placement, operand_dims in zip(operands, dims):
        for p in placement.axes:
            if p.kind != "split" or operand_dims[p.axis] is None:
                continue
            loop = operand_dims[p.axis]
            if loop in dims[-1]:
                found.setdefault(dims[-1].index(loop), set()).add(placement.bounds(p.axis))
    out = []
    for dim in sorted({p.axis for p in result.axes if p.kind == "split"}):
        cuts = found.get(dim, {None})
        if len(cuts) != 1 or None in cuts:
            raise PlacementError(f"has operands cut differently along its result dim {dim} ({', '.join(map(str, operands))}); hir needs one uneven split per loop")
        out.append((dim, cuts.pop()))
    return GridPlacement(result.axes, tuple(out))


def _infer_axis(op: ir.Operation, operands: list[Placement]) -> Placement:
    """The placement of the (every) tensor result of a linalg / tensor op on one grid axis."""
    from torch_mlir.dialects import linalg, tensor  # lazily, as in maps_of

    known = [p for p in operands if p not in (FREE, REPLICATED)]
    if not known:
        return REPLICATED
    if PARTIAL in known:
        if op.name in ADDITIVE and all(p in (PARTIAL, FREE) for p in operands):
            return PARTIAL  # a sum of partial sums
        if operands[-1] == PARTIAL and PARTIAL not in operands[:-1] and maps_of(op) is not None:
            if _infer_axis(op, operands[:-1] + [FREE]) == PARTIAL:
                return PARTIAL  # a partial product accumulated into a partial init: one pending sum
        raise PlacementError("reads a partial sum (a value still to be all-reduced); only shard.all_reduce / reduce_scatter may read it")
    name = op.name
    axis = known[0].axis
    if name == linalg.TransposeOp.OPERATION_NAME:
        return split(list(ir.DenseI64ArrayAttr(op.attributes["permutation"])).index(axis))
    if name == linalg.BroadcastOp.OPERATION_NAME:
        added = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
        kept = [d for d in range(ir.ShapedType(op.operands[1].type).rank) if d not in added]
        return split(kept[axis])
    if name in (tensor.ExpandShapeOp.OPERATION_NAME, tensor.CollapseShapeOp.OPERATION_NAME):
        return _reshaped(op, axis, name == tensor.ExpandShapeOp.OPERATION_NAME)
    if name in (tensor.ExtractSliceOp.OPERATION_NAME, tensor.InsertSliceOp.OPERATION_NAME):
        if len(set(known)) != 1:  # each device slices (into) its own block: one layout
            raise PlacementError(f"slices operands placed differently ({', '.join(map(str, operands))})")
        return known[0]
    maps = maps_of(op)
    if maps is None:
        raise PlacementError(f"has no rule for operands {', '.join(map(str, operands))} (its result's placement is unknown)")
    dims, reductions = maps
    out_dims = dims[-1]
    results = set()
    for placement, operand_dims in zip(operands, dims):
        if placement.kind != "split":
            continue
        loop = operand_dims[placement.axis]
        if loop is None:
            raise PlacementError(f"indexes split dim {placement.axis} by a constant")
        results.add(PARTIAL if loop in reductions else split(out_dims.index(loop)) if loop in out_dims else REPLICATED)
    if len(results) != 1:
        raise PlacementError(f"has operands split along different loops ({', '.join(map(str, operands))})")
    return results.pop()


def _reshaped(op: ir.Operation, axis: int, expand: bool) -> Placement:
    """A split dim follows its reassociation group: to the group's first non-unit dim when
    expanding, to the group's dim when collapsing (if it is the group's first non-unit dim)."""
    groups = [[ir.IntegerAttr(d).value for d in g] for g in op.attributes["reassociation"]]
    big = ir.ShapedType(op.results[0].type if expand else op.operands[0].type).shape
    for index, group in enumerate(groups):
        first = next((d for d in group if big[d] != 1), group[0])
        if expand and index == axis:
            return split(first)
        if not expand and axis in group:
            if axis != first:
                raise PlacementError(f"collapses split dim {axis} behind dim {first}")
            return split(index)
    raise PlacementError(f"split dim {axis} is in no reassociation group")
