"""Placements of the tensor values of a partitioned ``shard`` program, and their hir buffer
types (used by ``hir-convert-shard-to-hir``).

After ``shard-partition`` every tensor has its local (per-device) shape and no sharding.
hir types carry the global shape and a ``#hir.shard`` placement, so the conversion
recovers each value's placement on the (1-D) grid:

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
loop, one indexed by a reduction loop makes the output partial.
"""

import re
from dataclasses import dataclass
from typing import Optional

from torch_mlir import ir
from torch_mlir.dialects import linalg, tensor

from hir.dialect import Sharding
from hir.dialect.linalg_facts import ELEMENTWISE_NAMED

SPLIT_AXES_ATTR = "hir.split_axes"  # function argument / result attribute: #shard<axisarray[...]>


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
class Grid:
    """A 1-D ``shard.grid`` of ``size`` devices, devices 0 .. size-1."""

    name: str
    size: int

    @property
    def mesh(self) -> tuple[int, ...]:
        return tuple(range(self.size))

    def buffer_type(self, local: ir.Type, placement: Placement) -> ir.MemRefType:
        """The hir buffer type of a value with local tensor type ``local``."""
        shaped = ir.RankedTensorType(local)
        shape, axis = list(shaped.shape), -1
        if placement.kind == "split":
            shape[placement.axis] *= self.size
            axis = placement.axis
        elif placement.kind == "partial":
            shape, axis = [self.size] + shape, 0
        space = Sharding(self.mesh, None if axis == -1 else axis).attr()
        return ir.MemRefType.get(shape, shaped.element_type, memory_space=space)


def local_shape(local: ir.Type, placement: Placement) -> list[int]:
    """The shape a device's buffer has for a value of local tensor type ``local``."""
    shape = list(ir.RankedTensorType(local).shape)
    return [1] + shape if placement.kind == "partial" else shape


def split_axes_placement(attr: ir.Attribute, rank: int) -> Placement:
    """The placement of ``#shard<axisarray[[], [0]]>`` on a 1-D grid."""
    groups = re.findall(r"\[([^\[\]]*)\]", str(attr))
    dims = [d for d, text in enumerate(groups) if text.strip()]
    if any(text.strip() not in ("", "0") for text in groups):
        raise PlacementError(f"{attr} uses grid axes other than 0; only 1-D grids convert")
    if len(dims) > 1:
        raise PlacementError(f"{attr} splits dims {dims} over one grid axis")
    if dims and dims[0] >= rank:
        raise PlacementError(f"{attr} splits dim {dims[0]} of a rank-{rank} tensor")
    return split(dims[0]) if dims else REPLICATED


def _maps_of(op: ir.Operation) -> Optional[tuple[list, list[int]]]:
    """(indexing maps as lists of loop dims or None for constants, reduction loops) of a
    structured op whose maps are known, else None."""
    name = op.name
    if "indexing_maps" in op.attributes:
        maps = [ir.AffineMapAttr(a).value for a in op.attributes["indexing_maps"]]
        if name == linalg.GenericOp.OPERATION_NAME:
            kinds = [str(a) for a in op.attributes["iterator_types"]]
            reductions = [d for d, k in enumerate(kinds) if "reduction" in k]
        else:  # matmul / batch_matmul: the last loop is the contraction
            reductions = [maps[0].n_dims - 1]
    elif name in ELEMENTWISE_NAMED:
        rank = ir.ShapedType(op.operands[-1].type).rank
        maps, reductions = [ir.AffineMap.get_identity(rank)] * len(op.operands), []
    else:
        return None
    dims = [[e.position if isinstance(e, ir.AffineDimExpr) else None for e in m.results] for m in maps]
    return dims, reductions


def infer(op: ir.Operation, operands: list[Placement]) -> Placement:
    """The placement of the (every) tensor result of a linalg / tensor op."""
    known = [p for p in operands if p not in (FREE, REPLICATED)]
    if not known:
        return REPLICATED
    if PARTIAL in known:
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
    maps = _maps_of(op)
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
