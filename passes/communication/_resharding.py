"""nvFuser's resharding rules (isResharding, isInnerResharding, canLower and the decision
table of ConvertOpToCommunication / lower_to_communication) on hir buffers.

A :class:`Plan` lists the collectives one resharding op lowers to, as (op class, attributes).
Teams and roots follow nvFuser: Allgather/Allreduce/ReduceScatter run on the input mesh;
Scatter's root is the first sender and its team the receiver mesh plus the root; Gather and
Reduce are emitted once per receiver (each receiver is a root, the team the sender mesh plus
that root); Broadcast's root is the first sender; SendRecv pairs sender i with receiver i.
"""

from dataclasses import dataclass

from torch_mlir import ir

from hir.dialect import (
    AllgatherOp,
    AllreduceOp,
    BroadcastOp,
    ComputeOp,
    GatherOp,
    ReduceOp,
    ReduceScatterOp,
    ReductionOp,
    ScatterOp,
    SendRecvOp,
    SetOp,
)
from hir.dialect.base import VerifyError, i64_attr, required_i64_array, required_str
from hir.dialect.irutils import is_a, is_broadcast_axis, operand_axis, output_index
from hir.dialect.sharding import MultiDimMeshError, Sharding, sharding_of
from hir.dialect.teams import teams_attr
from hir.passes.base import PassFailure, fail

LOWERABLE = (SetOp, ReductionOp)  # the compute ops whose resharding lowers to collectives


@dataclass
class Plan:
    """The collectives (op class, attributes without ``backend``) replacing one op."""

    collectives: list[tuple[type, dict[str, ir.Attribute]]]


def operand_sharding(op: ir.Operation, index: int, buffer_type: ir.MemRefType | None = None) -> Sharding | None:
    """The placement of operand ``index`` of ``op`` (None: no device mesh), read from its
    type (``buffer_type`` when the caller has it); a bad one fails at the op."""
    try:
        return sharding_of(buffer_type or op.operands[index], f"operand #{index}")
    except VerifyError as err:
        raise fail(op, str(err)) from None


def _needed_split(op: ir.Operation, index: int, out_axis: int | None) -> int | None:
    """The operand axis that output split axis ``out_axis`` reads (None: replicated)."""
    if out_axis is None:
        return None
    expected = operand_axis(op, index, out_axis)
    if expected is not None and is_broadcast_axis(op, index, expected, out_axis):
        return None
    return expected


def needed_sharding(op: ir.Operation, index: int, out: Sharding) -> Sharding:
    """The placement operand ``index`` must have for ``op`` to compute its output shard
    locally: on the output's mesh, each mesh axis splitting the operand axis that the
    output's split axis there reads (replicated where it reads none)."""
    return out.renumbered(lambda axis: _needed_split(op, index, axis))


def _mismatch(op: ir.Operation, index: int, mine: Sharding | None, out: Sharding | None) -> str | None:
    """Why operand ``index``, placed as ``mine``, is placed differently from what the output
    needs (None: same)."""
    if mine is None and out is None:
        return None
    if mine is None or out is None:
        return "mixes a buffer without a device mesh with one on a mesh; give both a #hir.shard"
    if (mine.mesh, mine.mesh_shape) != (out.mesh, out.mesh_shape):
        return (
            f"moves data from mesh {list(mine.mesh)} to mesh {list(out.mesh)}"
            if mine.mesh != out.mesh
            else f"places operand #{index} on another mesh shape"
        )
    needed = needed_sharding(op, index, out)
    if mine.splits != needed.splits:
        if not mine.multi_dim:
            return f"reads operand #{index} {_placed(mine.axis)}, the output needs it {_placed(needed.axis)}"
        return (
            f"reads operand #{index} with splits {_fmt(mine.splits)} "
            f"per mesh axis, the output needs {_fmt(needed.splits)}"
        )
    return None


def _placed(axis: int | None) -> str:
    return "replicated" if axis is None else f"split along axis {axis}"


def _fmt(splits: tuple) -> list[int]:
    return [-1 if s is None else s for s in splits]


def resharding_reason(op: ir.Operation) -> str | None:
    """nvFuser's isResharding: why ``op`` moves data between devices, or None."""
    out_index = output_index(op)
    types = [operand.type for operand in op.operands]  # each read once: a type read costs a downcast
    out = operand_sharding(op, out_index, types[out_index])
    for index, buffer_type in enumerate(types):
        if index == out_index or not isinstance(buffer_type, ir.MemRefType):
            continue
        reason = _mismatch(op, index, operand_sharding(op, index, buffer_type), out)
        if reason:
            return reason
    return None


def compute_resharding_reason(op: ir.Operation) -> str | None:
    """Why a compute op moves data between devices (None for one that does not, and for
    every other op): such an op needs the communication hir-convert-to-communication
    inserts. (A stream-parallel op computes the same whole as in slices: it runs as is.)"""
    return resharding_reason(op) if is_a(op, ComputeOp) else None


def _team(mesh: tuple[int, ...], extra: int) -> list[int]:
    return list(mesh) + ([extra] if extra not in mesh else [])


def unlowerable(op: ir.Operation, reason: str) -> PassFailure:
    """The error for a resharding compute op that is not one of :data:`LOWERABLE`."""
    names = " and ".join(cls.OPERATION_NAME for cls in LOWERABLE)
    return fail(
        op,
        f"is resharding ({reason}); only {names} lower to communications: "
        f"insert a {SetOp.OPERATION_NAME} to reshard its operands first",
    )


def plan(op: ir.Operation) -> Plan | None:
    """The collectives for a resharding op of :data:`LOWERABLE`, None when ``op`` does not reshard."""
    reason = resharding_reason(op)
    if reason is None:
        return None
    src, dst = operand_sharding(op, 0), operand_sharding(op, 1)
    if src is None or dst is None:
        raise fail(op, reason)
    packed = next((s for s in (src, dst) if s.packed), None)
    if packed is not None:
        raise fail(
            op,
            f"is resharding ({reason}) a packed split ({packed.describe()}); "
            "a packed buffer is computed on where it lies, never moved",
        )
    if src.multi_dim or dst.multi_dim:
        return _plan_multi_dim(op, src, dst, reason)
    for what, s in (("input", src), ("output", dst)):
        if s.axis is not None and len(s.mesh) == 1:
            raise fail(op, f"{what} is split over the one-device mesh {list(s.mesh)}; mark it replicated (axis -1)")
    if op.name == ReductionOp.OPERATION_NAME:
        return _plan_reduction(op, src, dst)
    return _plan_set(op, src, dst)


_ALONG_ONE_AXIS = (AllgatherOp, AllreduceOp, ReduceScatterOp)


def _plan_multi_dim(op: ir.Operation, src: Sharding, dst: Sharding, reason: str) -> Plan:
    """On a multi-D mesh a resharding along the mesh axes K whose splits differ is the 1-D
    decision on the lines of the mesh along K (allgather, allreduce, reduce_scatter), one
    team per line (per plane when K has several axes: a buffer axis split by all of them)."""
    if (src.mesh, src.mesh_shape) != (dst.mesh, dst.mesh_shape):
        raise fail(
            op,
            f"is resharding ({reason}) between different multi-dimensional meshes; move between meshes on 1-D meshes",
        )
    axes = required_i64_array(op, "axes") if op.name == ReductionOp.OPERATION_NAME else []

    def kept(split: int | None) -> int | None:  # a split input axis in output coordinates
        return None if split is None or split in axes else split - sum(1 for a in axes if a < split)

    differ = tuple(k for k, (a, b) in enumerate(zip(src.splits, dst.splits)) if a in axes or kept(a) != b)
    along = f"mesh axis {differ[0]}" if len(differ) == 1 else f"mesh axes {list(differ)}"
    try:  # several mesh axes at once: the lines (planes) along all of them, when they see a 1-D placement
        line_src, line_dst = src.along(src.mesh[0], differ), dst.along(dst.mesh[0], differ)
    except MultiDimMeshError as err:
        raise fail(
            op,
            f"is resharding ({reason}) along {along} of a multi-dimensional mesh, whose lines see no 1-D "
            f"placement ({err}); reshard along fewer mesh axes at a time (a {SetOp.OPERATION_NAME} each)",
        ) from None
    if op.name == ReductionOp.OPERATION_NAME:
        planned = _plan_reduction(op, line_src, line_dst)
    else:
        planned = _plan_set(op, line_src, line_dst)
    teams = teams_attr([list(line) for line in src.lines(differ)])
    collectives = []
    for collective, attrs in planned.collectives:
        if collective not in _ALONG_ONE_AXIS:
            raise fail(
                op,
                f"is resharding ({reason}) along {along} as a {collective.OPERATION_NAME}; on a "
                "multi-dimensional mesh only allgather, allreduce and reduce_scatter are inferred",
            )
        collectives.append((collective, {**attrs, "team": teams}))
    return Plan(collectives)


# Any axis may be resharded: an inner one is gathered or scattered into strided chunks of
# the buffer (the collectives stage non-contiguous chunks: hir.interpreter.ops.comm), where
# nvFuser's isInnerResharding moves the split axis outermost first.


def _plan_reduction(op, src: Sharding, dst: Sharding) -> Plan:
    axes = required_i64_array(op, "axes")
    if len(axes) != 1:
        raise fail(
            op,
            f"is a resharding reduction over {len(axes)} axes {axes}; "
            "it must reduce exactly one axis (split the reduction)",
        )
    axis = axes[0]
    if src.axis != axis:
        raise fail(
            op,
            f"reshards while reducing axis {axis}, but the input is split along {src.axis}: the "
            f"reduced axis must be the split one (insert a {SetOp.OPERATION_NAME} to reshard first)",
        )
    common = {"axis": i64_attr(axis), "reduction": ir.StringAttr.get(required_str(op, "kind"))}
    if dst.axis is not None:
        if src.mesh != dst.mesh:
            raise fail(
                op,
                f"is a reduce-scatter across different meshes; insert a {SetOp.OPERATION_NAME} "
                "before or after the reduction to move to the other mesh",
            )
        # The output's split axis in input coordinates: step past the reduced axis.
        scatter_axis = dst.axis + (1 if axis <= dst.axis else 0)
        attrs = {**common, "scatter_axis": i64_attr(scatter_axis), "team": _mesh_attr(src.mesh)}
        return Plan([(ReduceScatterOp, attrs)])
    if src.mesh == dst.mesh:
        return Plan([(AllreduceOp, {**common, "team": _mesh_attr(src.mesh)})])
    collectives = []
    for root in dst.mesh:  # one Reduce per receiver: each receiver is a root
        team = _team(src.mesh, root)
        collectives.append((ReduceOp, {**common, "root": i64_attr(root), "team": _mesh_attr(team)}))
    return Plan(collectives)


def _plan_set(op, src: Sharding, dst: Sharding) -> Plan:
    if src.axis is not None and dst.axis is not None and src.axis != dst.axis:
        raise fail(
            op,
            f"moves the split from axis {src.axis} to axis {dst.axis} (an "
            "all-to-all), which is not lowerable; reshard through a replicated buffer",
        )
    if src.axis is None and dst.axis is not None:
        root = src.mesh[0]  # nvFuser: arbitrarily the first sender
        team = _team(dst.mesh, root)
        return Plan([(ScatterOp, {"axis": i64_attr(dst.axis), "root": i64_attr(root), "team": _mesh_attr(team)})])
    if src.axis is not None and dst.axis is None:
        if src.mesh == dst.mesh:
            return Plan([(AllgatherOp, {"axis": i64_attr(src.axis), "team": _mesh_attr(src.mesh)})])
        collectives = []
        for root in dst.mesh:  # one Gather per receiver
            team = _team(src.mesh, root)
            collectives.append(
                (GatherOp, {"axis": i64_attr(src.axis), "root": i64_attr(root), "team": _mesh_attr(team)})
            )
        return Plan(collectives)
    if src.axis is not None:  # split the same way on two meshes: shard i goes from sender i to receiver i
        if len(src.mesh) != len(dst.mesh):
            raise fail(op, f"the receiver and sender meshes have different sizes: {len(src.mesh)} vs {len(dst.mesh)}")
        pairs = list(zip(src.mesh, dst.mesh))
        local = [s for s, r in pairs if s == r]
        if local:
            raise fail(
                op,
                f"device {local[0]} would send its shard to itself; "
                f"{SendRecvOp.OPERATION_NAME} needs two distinct devices",
            )
        return Plan([(SendRecvOp, {"root": i64_attr(s), "team": _mesh_attr([s, r])}) for s, r in pairs])
    root = src.mesh[0]  # replicated on both meshes: broadcast from the first sender
    team = _team(dst.mesh, root)
    return Plan([(BroadcastOp, {"root": i64_attr(root), "team": _mesh_attr(team)})])


def _mesh_attr(devices) -> ir.Attribute:
    return ir.DenseI64ArrayAttr.get(list(devices))
