"""Forward placement rules of ``hir-convert-shard-to-hir``: the placement of the tensor results
of a linalg / tensor op from its operands' (``placement.py`` has the vocabulary).

Per grid axis: a split operand dim indexed by a parallel loop splits the output dim of that
loop, one indexed by a reduction loop makes the output partial; transposes, broadcasts and
reshapes move the split dim; slices keep each device's block. A free operand (no data of its
own) counts as free on every axis. Uneven part boundaries follow the loop their dim is read
along.
"""

from torch_mlir import ir

from hir.dialect.linalg_facts import ADDITIVE, ELEMENTWISE_NAMED, is_elementwise, reduce_maps
from hir.dialect.sharding import PARTIAL, AxisPlacement, Sharding
from hir.passes.shard.placement import FREE, Grid, PlacementError, axis_text, placement_text


def maps_of(op: ir.Operation) -> tuple[list, list[int]] | None:
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


def infer(op: ir.Operation, operands: list[Sharding | None], grid: Grid) -> Sharding:
    """The placement of the (every) tensor result of a linalg / tensor op from its data
    operands' (None: a free operand), and the part boundaries of uneven operand dims on the
    result dims they become."""
    per_axis = [_infer_axis(op, [FREE if p is None else p.on(k) for p in operands]) for k in range(grid.rank)]
    splits = [p if isinstance(p, int) else None for p in per_axis]  # PARTIAL splits nothing
    result = grid.placement(splits, partial=[k for k, p in enumerate(per_axis) if p == PARTIAL])
    return _uneven_result(op, operands, result, grid) if any(p is not None and p.offsets for p in operands) else result


def _uneven_result(op: ir.Operation, operands: list[Sharding | None], result: Sharding, grid: Grid) -> Sharding:
    """``result`` with the boundaries of each dim it is split along: those of the operand
    dims read along the same loop (which must agree: an even and an uneven part of one loop
    hold different rows). Only ops with indexing maps carry uneven dims."""
    maps = maps_of(op)
    if maps is None:
        uneven = next(p for p in operands if p is not None and p.offsets)
        raise PlacementError(
            f"reads a value split unevenly ({placement_text(uneven)}); "
            "hir carries uneven splits through linalg ops only"
        )
    dims, _ = maps
    found: dict = {}
    for placement, operand_dims in zip(operands, dims):
        if placement is None:
            continue
        for dim in placement.splits:
            if dim is None or operand_dims[dim] is None:
                continue
            loop = operand_dims[dim]
            if loop in dims[-1]:
                found.setdefault(dims[-1].index(loop), set()).add(placement.bounds(dim))
    bounds = {}
    for dim in sorted({s for s in result.splits if s is not None}):
        cuts = found.get(dim, {None})
        if len(cuts) != 1 or None in cuts:
            raise PlacementError(
                f"has operands cut differently along its result dim {dim} "
                f"({', '.join(map(placement_text, operands))}); hir needs one uneven split per loop"
            )
        bounds[dim] = cuts.pop()
    return grid.placement(result.splits, bounds, result.partial)


def _infer_axis(op: ir.Operation, operands: list) -> AxisPlacement:
    """The placement of the (every) tensor result of a linalg / tensor op on one grid axis,
    from its operands' there (a split dim, None, PARTIAL or FREE)."""
    from torch_mlir.dialects import linalg, tensor  # lazily, as in maps_of

    known = [p for p in operands if p != FREE and p is not None]
    if not known:
        return None
    if PARTIAL in known:
        if op.name in ADDITIVE and all(p in (PARTIAL, FREE) for p in operands):
            return PARTIAL  # a sum of partial sums
        if operands[-1] == PARTIAL and PARTIAL not in operands[:-1] and maps_of(op) is not None:
            if _infer_axis(op, operands[:-1] + [FREE]) == PARTIAL:
                return PARTIAL  # a partial product accumulated into a partial init: one pending sum
        raise PlacementError(
            "reads a partial sum (a value still to be all-reduced); only shard.all_reduce / reduce_scatter may read it"
        )
    name = op.name
    axis = known[0]
    if name == linalg.TransposeOp.OPERATION_NAME:
        return list(ir.DenseI64ArrayAttr(op.attributes["permutation"])).index(axis)
    if name == linalg.BroadcastOp.OPERATION_NAME:
        added = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
        kept = [d for d in range(ir.ShapedType(op.operands[1].type).rank) if d not in added]
        return kept[axis]
    if name in (tensor.ExpandShapeOp.OPERATION_NAME, tensor.CollapseShapeOp.OPERATION_NAME):
        return _reshaped(op, axis, name == tensor.ExpandShapeOp.OPERATION_NAME)
    if name in (tensor.ExtractSliceOp.OPERATION_NAME, tensor.InsertSliceOp.OPERATION_NAME):
        if len(set(known)) != 1:  # each device slices (into) its own block: one layout
            raise PlacementError(f"slices operands placed differently ({', '.join(map(axis_text, operands))})")
        return known[0]
    maps = maps_of(op)
    if maps is None:
        raise PlacementError(
            f"has no rule for operands {', '.join(map(axis_text, operands))} (its result's placement is unknown)"
        )
    dims, reductions = maps
    out_dims = dims[-1]
    results = set()
    for placement, operand_dims in zip(operands, dims):
        if not isinstance(placement, int):
            continue
        loop = operand_dims[placement]
        if loop is None:
            raise PlacementError(f"indexes split dim {placement} by a constant")
        results.add(PARTIAL if loop in reductions else out_dims.index(loop) if loop in out_dims else None)
    if len(results) != 1:
        raise PlacementError(f"has operands split along different loops ({', '.join(map(axis_text, operands))})")
    return results.pop()


def _reshaped(op: ir.Operation, axis: int, expand: bool) -> int:
    """A split dim follows its reassociation group: to the group's first non-unit dim when
    expanding, to the group's dim when collapsing (if it is the group's first non-unit dim)."""
    groups = [[ir.IntegerAttr(d).value for d in g] for g in op.attributes["reassociation"]]
    big = ir.ShapedType(op.results[0].type if expand else op.operands[0].type).shape
    for index, group in enumerate(groups):
        first = next((d for d in group if big[d] != 1), group[0])
        if expand and index == axis:
            return first
        if not expand and axis in group:
            if axis != first:
                raise PlacementError(f"collapses split dim {axis} behind dim {first}")
            return index
    raise PlacementError(f"split dim {axis} is in no reassociation group")
