"""Point-to-point ops with a run-time peer, for pipelined communication (nvFuser's
DeviceIdx and P2PCommunication with a Val peer, as in AllgatherP2p / AG_matmul_P2p):

    %me = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3>} : () -> index
    %w = "hir.shift"(%shard, %dst, %offset) {backend = "cuda", team = array<i64: 0, 1, 2, 3>}
        : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>,
           memref<2x8xf32, strided<[8, 1], offset: ?>, ...>, index) -> !hir.work
    "hir.wait"(%w) : (!hir.work) -> ()

``hir.device_index`` is this device's position in ``mesh`` (nvFuser's DeviceIdx).
``hir.shift`` is a paired send+recv over ``team`` (a collective permutation): the team member
at position p receives, into its local ``output``, the local ``input`` of the member at
position ``(p + offset) mod n`` and sends its own ``input`` to position ``(p - offset) mod n``.
``team`` is one team (``array<i64: ...>``) or, as for the collectives (``hir.dialect.comm``),
a device layout with one team per row (``dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>``: the
lines of a 2x2 mesh along mesh axis 1), each rank shifting within the row that holds it;
on a buffer placed on a multi-D mesh the rows must be the mesh's lines along some mesh axes.
``offset`` is a run-time index (a loop's induction variable), so one op in a stream loop
runs step j of a pipelined all-gather on every rank; offset 0 is a local copy. The input's
local data and the output must have the same number of elements. With ``backend = "cuda"``
it is a copy-engine copy from the peer's registered buffer (interpreter: ``p2p``); the
optional ``copies = k`` splits that copy into k parts issued on k streams at once, so
several copy engines share it (other backends ignore it). By default each copy-engine step
hands over with a pairwise "ready" signal (sender -> receiver); ``signal = "none"`` drops it
where the program already guarantees every source is in place on every rank (a
``hir.barrier`` after the sources were written, as hir-p2p-pipeline emits): the steps then
never wait on each other. It only applies to inputs read in place from a symmetric buffer.

``transfer = "push"`` (default ``"pull"``) turns a copy-engine step around: the sender
copies its input straight into the receiver's ``output``, which must then be a rank-uniform
view of a ``memref.alloc {hir.symmetric}`` (the same offset on every rank), and signals the
receiver *after* the copy; nothing runs before the copy (no handshake kernel on the copy
path). ``hir.wait`` of a pushed step waits for the sender's signal: the data is in this
rank's ``output``. The buffer's dealloc barrier guards its reuse. Without copy engines
(CPU, other backends) a pushed step is the same paired send+recv as a pulled one.

``hir.own_block`` views the block of a split axis this device holds (its local data, one
block per device along ``axis``) as a buffer on the mesh that is not split, so a pipeline's first step reads
the own shard in place, with no copy:

    %mine = "hir.own_block"(%A) {axis = 0 : i64}
        : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>)
        -> memref<2x8xf32, strided<[8, 1], offset: ?>, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>

``hir.barrier`` waits until every team member has reached it (stream-ordered on GPUs with
``backend = "cuda"``; a one-element all-reduce otherwise).
"""

from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import ext

from hir.dialect.base import DYNAMIC, HirOp, WorkType, i64_attr, work_type
from hir.dialect.checks import (
    check_axis,
    check_same_element_type,
    fail,
    i64_array_attr,
    int_attr,
    memref_type,
    str_attr,
)
from hir.dialect.collective import BACKENDS, checked_teams
from hir.dialect.sharding import Sharding, sharding_of
from hir.dialect.teams import team_mesh_axes
from hir.dialect.views import ViewOp

COPIES_ATTR = "copies"
SYMMETRIC_ATTR = "hir.symmetric"  # unit attribute of memref.alloc: place in symmetric memory
SIGNAL_ATTR = "signal"
SIGNALS = ("pairwise", "none")
TRANSFER_ATTR = "transfer"
TRANSFERS = ("pull", "push")


def check_devices(ids: list[int], what: str) -> None:
    if not ids or len(set(ids)) != len(ids) or min(ids) < 0:
        fail(f"{what} {ids} must hold distinct non-negative device ids")


class DeviceIndexOp(HirOp, name="device_index"):
    """This device's position in ``mesh`` (a device outside the mesh must not use it)."""

    mesh: Any
    result: ext.Result[ir.IndexType]

    def check(self) -> None:
        check_devices(i64_array_attr(self, "mesh"), "mesh")
        if not isinstance(self.result.type, ir.IndexType):
            fail("result must be of type index")

    @classmethod
    def emit(cls, mesh: list[int], *, name: str | None = None) -> ir.Value:
        return cls._create(
            results=[ir.IndexType.get()], attributes={"mesh": ir.DenseI64ArrayAttr.get(list(mesh))}, name=name
        ).result


class ShiftOp(HirOp, name="shift"):
    """Receive the input of team position ``(me + offset) mod n``; send ours to ``(me - offset) mod n``."""

    input: ext.Operand[ir.MemRefType]
    output: ext.Operand[ir.MemRefType]
    offset: ext.Operand[ir.IndexType]
    team: Any
    backend: ir.StringAttr
    work: ext.Result[WorkType[()]] = ext.infer_result()
    DESTINATIONS = (1,)
    TEAM_ATTR = "team"
    TRANSFER_ATTR = TRANSFER_ATTR  # "pull" (default: the receiver copies) or "push" (the sender does)

    @classmethod
    def emit(
        cls, input: ir.Value, output: ir.Value, offset: ir.Value, attributes: dict, *, name: str | None = None
    ) -> ir.Value:
        """``attributes``: team, backend and optionally copies, signal, transfer."""
        return cls._create([input, output, offset], [work_type()], attributes, name=name).result

    def check(self) -> None:
        teams = checked_teams(self)
        str_attr(self, "backend", BACKENDS)
        in_type = memref_type(self.input, "input")
        out_type = memref_type(self.output, "output")
        check_same_element_type(in_type, out_type, "input", "output")
        if len(teams) > 1:
            sharding = sharding_of(in_type, "input")
            if sharding is not None and team_mesh_axes(sharding, teams) is None:
                fail(
                    f"teams {teams} must be the lines of the input's mesh "
                    f"{sharding.describe()} along some mesh axes, each in mesh order"
                )
        copies = int_attr(self, COPIES_ATTR, required=False)
        if copies is not None and copies < 1:
            fail(f"{COPIES_ATTR} must be at least 1, got {copies}")
        if SIGNAL_ATTR in self.operation.attributes:
            str_attr(self, SIGNAL_ATTR, SIGNALS)
        if TRANSFER_ATTR in self.operation.attributes:
            str_attr(self, TRANSFER_ATTR, TRANSFERS)

    @classmethod
    def transfer(cls, op: ir.Operation) -> str:
        """The op's transfer direction: "pull" unless ``transfer = "push"``."""
        attrs = op.attributes
        return ir.StringAttr(attrs[TRANSFER_ATTR]).value if TRANSFER_ATTR in attrs else "pull"


def own_block_type(source: ir.MemRefType, axis: int) -> ir.MemRefType:
    """The view of the block of split axis ``axis`` this device holds: ``source`` without
    ``axis`` (strides kept, offset dynamic), on the same mesh but not split. The axis must be split over a 1-D mesh
    into one block per device."""
    check_axis(axis, source.rank, "axis")
    sharding = sharding_of(source, "input")
    if sharding is None or sharding.multi_dim or sharding.splits[0] != axis:
        fail(f"input must be split along axis {axis} over a 1-D device mesh")
    if source.shape[axis] != len(sharding.mesh):
        fail(
            f"axis {axis} has extent {source.shape[axis]}, not one block per device of the mesh of {len(sharding.mesh)}"
        )
    strides, _ = source.get_strides_and_offset()
    shape = [d for i, d in enumerate(source.shape) if i != axis]
    kept = [st for i, st in enumerate(strides) if i != axis]
    space = Sharding(sharding.mesh, None).attr()  # on the mesh, not split: the local data whole
    return ir.MemRefType.get(
        shape,
        source.element_type,
        layout=ir.StridedLayoutAttr.get(DYNAMIC, kept),
        memory_space=space,
        loc=ir.Location.unknown(),
    )


class OwnBlockOp(ViewOp, name="own_block"):
    """The block of split axis ``axis`` this device holds, as a view (its local data, not split)."""

    input: ext.Operand[ir.MemRefType]
    axis: ir.IntegerAttr
    result: ext.Result[ir.MemRefType]

    def check(self) -> None:
        expected = own_block_type(memref_type(self.input, "input"), int_attr(self, "axis"))
        if self.result.type != expected:
            fail(f"result type {self.result.type} does not match the own-block view type {expected}")

    @classmethod
    def emit(cls, input: ir.Value, axis: int, *, name: str | None = None) -> ir.Value:
        return cls._create(
            [input], [own_block_type(memref_type(input, "input"), axis)], {"axis": i64_attr(axis)}, name=name
        ).result


class BarrierOp(HirOp, name="barrier"):
    """Every member of ``team`` has reached this point of its current stream (a
    stream-ordered barrier with ``backend = "cuda"``: signal-pad flags, no host wait)."""

    team: Any
    backend: ir.StringAttr
    work: ext.Result[WorkType[()]] = ext.infer_result()
    TEAM_ATTR = "team"

    @classmethod
    def emit(cls, team: ir.Attribute, backend: ir.Attribute, *, name: str | None = None) -> ir.Value:
        return cls._create(results=[work_type()], attributes={"team": team, "backend": backend}, name=name).result

    def check(self) -> None:
        check_devices(i64_array_attr(self, "team"), "team")
        str_attr(self, "backend", BACKENDS)
