"""The ``shard`` collectives of a partitioned function (``hir-convert-shard-to-hir``):

    %g = shard.all_gather %x on @g grid_axes = [0] gather_axis = 0 : tensor<2x16xf32> -> tensor<8x16xf32>

becomes (the operand must be split along the gathered dim; a multi-D grid gets one team
per line of the mesh along the grid axis, or per plane along several)::

    %g = memref.alloc() : memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
    %w = "hir.allgather"(%x, %g) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1, 2, 3>}
    "hir.wait"(%w) : (!hir.work) -> ()

``all_reduce`` / ``reduce_scatter`` read a partial sum (a leading device axis); ``broadcast``
a replicated value, from one root per team. A collective that changes the element type
converts its operand first; one over data not placed as it needs (a hand-partitioned
program) copies each device's local data into a buffer placed so.
"""

from torch_mlir import ir
from torch_mlir.dialects import arith, shard, tensor

from hir.dialect import AllgatherOp, AllreduceOp, BroadcastOp, ReduceScatterOp, WaitOp, work_type
from hir.dialect.linalg_facts import ADDITIVE, is_elementwise
from hir.dialect.nodes import team_backend
from hir.dialect.sharding import PARTIAL, AxisPlacement, Sharding
from hir.dialect.teams import teams_attr
from hir.passes.base import fail
from hir.passes.shard.placement import axis_text, moved, split_minor_to
from hir.passes.shard.registry import converts
from hir.passes.shard.state import ConversionState, is_tensor

_REDUCTIONS = {"sum": "sum", "max": "max", "min": "min", "product": "prod"}
# (operand is float, result is float) -> the arith op converting tensors elementwise
# ((widen, narrow) where both are of one kind).
_CASTS = {
    (True, True): (arith.ExtFOp.OPERATION_NAME, arith.TruncFOp.OPERATION_NAME),
    (False, False): (arith.ExtSIOp.OPERATION_NAME, arith.TruncIOp.OPERATION_NAME),
    (False, True): arith.SIToFPOp.OPERATION_NAME,
    (True, False): arith.FPToSIOp.OPERATION_NAME,
}


def index_attr(op: ir.Operation, name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


def i64(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


# collective op name -> the placement it needs of its operand on the grid axes it runs over
# (a split dim, PARTIAL, or None: replicated)
NEEDS = {
    shard.AllGatherOp.OPERATION_NAME: lambda op: index_attr(op, "gather_axis"),
    shard.AllReduceOp.OPERATION_NAME: lambda op: PARTIAL,
    shard.ReduceScatterOp.OPERATION_NAME: lambda op: PARTIAL,
    shard.AllSliceOp.OPERATION_NAME: lambda op: None,
    shard.BroadcastOp.OPERATION_NAME: lambda op: None,
    shard.AllToAllOp.OPERATION_NAME: lambda op: index_attr(op, "concat_axis"),
}


def needed_by(op: ir.Operation) -> AxisPlacement:
    """The placement collective ``op`` needs of its operand on the grid axes it runs over."""
    return NEEDS[op.name](op)


def needed_downstream(value: ir.Value) -> tuple[ir.Operation, AxisPlacement] | None:
    """(collective, the placement it needs) of the first collective reading ``value``, directly
    or through elementwise ops that keep that placement (only additive ones keep a partial
    sum: shard-simplify moves all_reduce(x) + all_reduce(y) to all_reduce(x + y))."""
    for use in value.uses:
        owner = use.owner
        if owner.name in NEEDS:
            return owner, needed_by(owner)
        if is_elementwise(owner) and owner.results and is_tensor(owner.results[0]):
            found = needed_downstream(owner.results[0])
            if found is not None and (found[1] != PARTIAL or owner.name in ADDITIVE):
                return found
    return None


def grid_axes(s: ConversionState, op: ir.Operation) -> list[int]:
    """The grid axes collective ``op`` runs over (axes of extent 1 take no part)."""
    axes = list(ir.DenseI16ArrayAttr(op.attributes["grid_axes"]))
    rank = s.grid.rank
    if not axes or not all(0 <= a < rank for a in axes) or len(set(axes)) != len(axes):
        raise fail(
            op,
            f"runs over grid axes {axes}; the {rank}-D grid @{s.grid.name} has axes 0 .. {rank - 1} (each listed once)",
        )
    if axes != sorted(axes):
        raise fail(
            op, f"runs over grid axes {axes} minor-first; hir runs a team over grid axes in grid order (row-major)"
        )
    return [a for a in axes if s.grid.shape[a] != 1] or axes[:1]


def grid_axis(s: ConversionState, op: ir.Operation) -> int:
    """The one grid axis ``op`` (all_slice, all_to_all) runs over."""
    axes = grid_axes(s, op)
    if len(axes) != 1:
        raise fail(op, f"runs over grid axes {axes}; hir converts {op.name} over one axis of the grid")
    return axes[0]


def collective(
    s: ConversionState,
    op: ir.Operation,
    needed: AxisPlacement,
    out: AxisPlacement,
    hir_name: str,
    attributes: dict,
    source: ir.Value | None = None,
) -> ir.Value:
    """``op`` (reading ``source``, its operand unless given) over grid axes K: the operand
    must be ``needed`` on each of K; the result is ``out`` on K and placed as the operand on
    the other grid axes. Over several grid axes one team holds each plane of the grid along K
    (row-major over K)."""
    source = op.operands[0] if source is None else source
    axes = grid_axes(s, op)
    if ir.ShapedType(s.tensor_type(source)).element_type != ir.ShapedType(op.results[0].type).element_type:
        source = converted_operand(s, op, source)
    have = s.data_placement(source)
    if any(have.on(k) != needed for k in axes) and needed is not None and not any(have.on(k) == PARTIAL for k in axes):
        source = relayout(s, source, moved(have, axes, needed))
        have = s.data_placement(source)
    wrong = next((k for k in axes if have.on(k) != needed), None)
    if wrong is not None:
        where = f" on grid axis {wrong}" if s.grid.rank > 1 else ""
        raise fail(
            op,
            f"reads {source.get_name()}, which is {axis_text(have.on(wrong))}{where}; "
            f"{op.name} needs it {axis_text(needed)}",
        )
    if needed == PARTIAL and list(have.partial) != axes:
        raise fail(
            op,
            f"sums over grid axes {axes} a value whose sum is pending on grid axes "
            f"{list(have.partial)}; hir reduces a partial sum over all its grid axes at once",
        )
    placed = moved(have, axes, out)
    for placement in (have, placed):
        minor = split_minor_to(placement, axes)
        if minor is not None:
            raise fail(
                op,
                f"runs over grid axes {axes} of a value split along dim {placement.splits[minor]} by grid "
                f"axis {minor} too, minor to them: a team along {axes} holds no contiguous block of it",
            )
    inp = s.buffer(source, op)
    lead = bool(have.partial) - bool(placed.partial)  # a partial sum's device axis comes first
    output = s.alloc(op.results[0], placed, lambda d: (inp, d + lead))  # global extents kept
    communicate(s, hir_name, axes, [inp, output], attributes)
    return output


def communicate(s: ConversionState, hir_name: str, axes: list[int], operands: list, attributes: dict) -> None:
    """The hir communication ``hir_name`` over grid axes ``axes`` and its ``hir.wait``: the
    mesh's one team on a 1-D grid, else one team per line (plane) of the grid along them."""
    team = s.team if s.grid.rank == 1 else teams_attr(s.grid.lines(axes))
    backend = ir.StringAttr.get(
        team_backend(s.fn, team, s.backend.value, "hir-convert-shard-to-hir")
    )  # no copy engines across nodes
    attributes = {**attributes, "backend": backend, "team": team}
    work = s.create(hir_name, operands=operands, results=[work_type()], attributes=attributes).result
    s.create(WaitOp.OPERATION_NAME, operands=[work])


def relayout(s: ConversionState, source: ir.Value, placement: Sharding) -> ir.Value:
    """``source``'s local data, each device's own, seen as ``placement``: a collective of a
    hand-partitioned program may gather along a dim the value is not split by, or sum a
    value that is not a partial sum (its meaning is per device: concatenate, or add, the
    devices' local tensors). A copy kernel gives the local data a buffer placed as the
    collective needs; only split and partial-sum placements are taken (each device holds
    its own part), never replicated (that would claim equal data)."""
    local = ir.RankedTensorType(s.tensor_type(source))
    shape = list(local.shape)
    copy = s.build(lambda: tensor.ExtractSliceOp(local, source, [], [], [], [0] * len(shape), shape, [1] * len(shape)))
    s.kernel(copy, [copy.result], placement)
    return copy.result


def converted_operand(s: ConversionState, op: ir.Operation, source: ir.Value) -> ir.Value:
    """A collective that changes the element type (``all_reduce ... : tensor<5xf32> ->
    tensor<5xf64>``) communicates in the result's type, as upstream's MPI lowering does:
    its operand is converted first by an elementwise kernel (``arith.extf`` and kin),
    which keeps the operand's placement (a partial sum stays one)."""
    shaped = ir.RankedTensorType(s.tensor_type(source))
    have, want = shaped.element_type, ir.ShapedType(op.results[0].type).element_type
    cast = _CASTS.get((isinstance(have, ir.FloatType), isinstance(want, ir.FloatType)))
    if (
        cast is None
        or not isinstance(have, (ir.FloatType, ir.IntegerType))
        or not isinstance(want, (ir.FloatType, ir.IntegerType))
    ):
        raise fail(
            op, f"changes the element type ({have} -> {want}); hir converts between integer and float types only"
        )
    if isinstance(cast, tuple):  # same kind: widen or narrow
        cast = cast[0] if want.width > have.width else cast[1]
    converted = s.build(
        lambda: ir.Operation.create(cast, results=[ir.RankedTensorType.get(shaped.shape, want)], operands=[source])
    )
    s.kernel(converted, [converted.result], s.data_placement(source))
    return converted.result


def reduction(op: ir.Operation) -> ir.StringAttr:
    kind = str(op.attributes["reduction"]).rstrip(">").split()[-1]
    if kind not in _REDUCTIONS:
        raise fail(op, f"reduces with '{kind}'; hir collectives reduce with {', '.join(_REDUCTIONS)}")
    return ir.StringAttr.get(_REDUCTIONS[kind])


@converts(shard.AllGatherOp)
def all_gather(s: ConversionState, op: ir.Operation) -> None:
    """`hir.allgather` + `hir.wait` over one grid axis or several (one team per line / plane of the mesh); the operand
    split along the gathered dim (an uneven one gathered whole)."""
    collective(s, op, needed_by(op), None, AllgatherOp.OPERATION_NAME, {"axis": i64(index_attr(op, "gather_axis"))})


@converts(shard.AllReduceOp)
def all_reduce(s: ConversionState, op: ir.Operation) -> None:
    """`hir.allreduce` + `hir.wait` of a partial sum (its device axis), over all the grid axes it is pending on; an
    element type change converts the operand first."""
    collective(s, op, needed_by(op), None, AllreduceOp.OPERATION_NAME, {"axis": i64(0), "reduction": reduction(op)})


@converts(shard.ReduceScatterOp)
def reduce_scatter(s: ConversionState, op: ir.Operation) -> None:
    """`hir.reduce_scatter` + `hir.wait` of a partial sum onto the scattered dim."""
    dim = index_attr(op, "scatter_dim")
    attrs = {"axis": i64(0), "scatter_axis": i64(dim + 1), "reduction": reduction(op)}
    collective(s, op, needed_by(op), dim, ReduceScatterOp.OPERATION_NAME, attrs)


@converts(shard.BroadcastOp)
def broadcast(s: ConversionState, op: ir.Operation) -> None:
    """`hir.broadcast` from a static root, one team per line / plane along its grid axes with the root at the same
    position of each (`root = array<i64: ...>`)."""
    axes = grid_axes(s, op)
    if len(op.operands) > 1:
        raise fail(op, "has a dynamic root; hir converts a static root")
    position = 0
    for k, r in zip(ir.DenseI16ArrayAttr(op.attributes["grid_axes"]), ir.DenseI64ArrayAttr(op.attributes["root"])):
        position = position * s.grid.shape[k] + r
    roots = [line[position] for line in s.grid.lines(axes)]
    root = i64(roots[0]) if s.grid.rank == 1 else ir.DenseI64ArrayAttr.get(roots)
    collective(s, op, None, None, BroadcastOp.OPERATION_NAME, {"root": root})
